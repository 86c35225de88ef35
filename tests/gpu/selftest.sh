#!/usr/bin/env bash
# selftest.sh [--out DIR] [--budget SECONDS] — the node self-test: is this GPU node ready to
# train boost-c? What a researcher runs first on a new node (make selftest, or bin/selftest from
# the bundle; docs/gpu.md). At most five minutes; one screen of verdicts at the end, each
# failure with what to do.
#
#   device     build/gpu_probe: an NVIDIA GPU, its driver, the libraries (cuBLASLt, NCCL, cuDNN
#              and its engine libraries, nvrtc), a device this build's kernels run on
#   ops        every op of the CUDA back end against the CPU fp32 reference, fp32 and bf16
#              (build/test_backend_ops: the bounds of docs/gpu.md)
#   step       one optimizer step on the GPU against the CPU fp32 reference: dense, cola and svd
#              in fp32 (1e-4 of the largest value per tensor), cola at head dim 64 with GQA in
#              fp32 and bf16
#   attention  the bf16 step's attention ran on cuDNN's fused kernels (a refusal is a failure:
#              every attention and step figure would measure the slower flash kernel), and
#              cuDNN agrees with the flash kernel (attention_bench --compare)
#   tp2-nccl   (two or more GPUs) a tp 2 training step over NCCL against tp 1
#   nccl       (two or more GPUs) NCCL's all-reduce bus bandwidth over every GPU of the node
#              (build/nccl_bench, nccl-tests' busbw)
#
# No NVIDIA GPU on this host: every check is skipped, said so, exit 0 (a login node). A GPU that
# cannot be used (no driver, one too old, a missing library) or any failed check: exit 1.
# BOOST_GPU_TEST_DEVICE=cpu (tests/gpu/checks.sh) runs every section with the CPU back ends in the
# GPU's place and SELFTEST_GPUS (default 2) ranks for the multi-GPU ones: only to try this script
# where there is no GPU.
# Files under --out DIR (default build/selftest): selftest.log, probe.txt, ops.txt, the runs'
# logs, nccl.json. Nothing needs Python.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUTDIR=""; BUDGET=300
while [ $# -gt 0 ]; do
    case "$1" in
        --out) [ $# -ge 2 ] || { echo "selftest: --out needs a folder" >&2; exit 2; }; OUTDIR=$2; shift 2 ;;
        --budget) [ $# -ge 2 ] && [ "$2" -gt 0 ] 2>/dev/null || { echo "selftest: --budget needs seconds > 0" >&2; exit 2; }; BUDGET=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -u/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "selftest: unknown argument '$1' (--out DIR, --budget SECONDS)" >&2; exit 2 ;;
    esac
done
if [ -f "$ROOT/BUNDLE" ]; then . "$ROOT/env.sh"; export BUILD="$ROOT/bin"; fi   # the bundle's binaries and mpirun
OUTDIR=${OUTDIR:-$ROOT/build/selftest}
mkdir -p "$OUTDIR" || exit 2
OUTDIR=$(cd "$OUTDIR" && pwd)
source "$ROOT/tests/lib.sh"
source "$HERE/checks.sh"
exec > >(tee "$OUTDIR/selftest.log") 2>&1
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}

T0=$(date +%s)
SECTIONS=(device:20 ops:90 step:70 attention:30 tp2-nccl:50 nccl:40)
declare -A VERDICT DETAIL
# section NAME: its header, GPU_DEADLINE = now + its budget (never past the whole budget)
section() {
    local want=0 s left=$(( BUDGET - ($(date +%s) - T0) ))
    for s in "${SECTIONS[@]}"; do [ "${s%%:*}" = "$1" ] && want=${s##*:}; done
    [ "$want" -gt "$left" ] && want=$left
    export GPU_DEADLINE=$(( $(date +%s) + want ))
    SEC=$1; SEC_LOG=$TMP/sec-$1.txt; : > "$SEC_LOG"
    echo; echo "== $1 (budget ${want} s)"
}
# end NAME ADVICE: the section's verdict from its PASS/FAIL/SKIP lines, with ADVICE for a failure
end() {
    local f p s
    f=$(grep -m1 '^FAIL ' "$SEC_LOG"); p=$(grep -c '^PASS ' "$SEC_LOG"); s=$(grep -m1 '^SKIP ' "$SEC_LOG")
    if [ -n "$f" ]; then VERDICT[$SEC]=FAILED; DETAIL[$SEC]="${f#FAIL } -> $2"
    elif [ "$p" -gt 0 ]; then VERDICT[$SEC]=OK; DETAIL[$SEC]="${OK_NOTE:-$p checks passed}"
    else VERDICT[$SEC]=SKIPPED; DETAIL[$SEC]="${s#SKIP }"; fi
    OK_NOTE=""
}
run_sec() { "$@" 2>&1 | tee -a "$SEC_LOG"; }   # a check's output, kept for the verdict

verdict() {
    local s name n_ok=0 n_fail=0 n_skip=0
    for s in "${SECTIONS[@]}"; do
        case "${VERDICT[${s%%:*}]:-SKIPPED}" in OK) n_ok=$((n_ok + 1)) ;; FAILED) n_fail=$((n_fail + 1)) ;; *) n_skip=$((n_skip + 1)) ;; esac
    done
    echo
    echo "== boost-c node self-test: $n_ok passed, $n_fail failed, $n_skip skipped ($(( $(date +%s) - T0 )) s; files in $OUTDIR)"
    for s in "${SECTIONS[@]}"; do
        name=${s%%:*}
        printf '  %-10s %-8s %s\n' "$name" "${VERDICT[$name]:-SKIPPED}" "${DETAIL[$name]:-not reached (the time budget)}"
    done
    if [ "$n_fail" -gt 0 ]; then echo "selftest: FAILED (exit 1): fix the first failure above, then run it again"
    elif [ "$n_ok" -eq 0 ]; then echo "selftest: nothing tested (exit 0): ${DETAIL[device]}"
    else echo "selftest: this node is ready (exit 0)"; fi
    [ "$n_fail" -eq 0 ]
}

echo "boost-c node self-test $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname); $( [ -f "$ROOT/BUNDLE" ] && sed -n '1,2p' "$ROOT/BUNDLE" | tr '\n' ' ' || echo "build $BUILD, commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)")"

# ---- device ---------------------------------------------------------------------------
section device
if [ "$GPU_DEVICE" = cpu ]; then
    GPU_STATE=usable; GPU_PROBE_OUT="devices: ${SELFTEST_GPUS:-2} (BOOST_GPU_TEST_DEVICE=cpu: the CPU back ends in the GPU's place)"
else gpu_probe_state; fi
echo "$GPU_PROBE_OUT" | tee "$OUTDIR/probe.txt" | sed 's/^/  /'
case $GPU_STATE in
    none)
        echo "SKIP selftest_device: $GPU_WHY" >> "$SEC_LOG"
        end device ""
        for s in "${SECTIONS[@]:1}"; do VERDICT[${s%%:*}]=SKIPPED; DETAIL[${s%%:*}]="no NVIDIA GPU on this host"; done
        verdict; exit 0 ;;
    broken)
        echo "FAIL selftest_device: $GPU_WHY" >> "$SEC_LOG"
        end device "the fix is in the reason; docs/gpu.md, \"When the self-test fails\""
        for s in "${SECTIONS[@]:1}"; do VERDICT[${s%%:*}]=SKIPPED; DETAIL[${s%%:*}]="the device is not usable (above)"; done
        verdict; exit 1 ;;
esac
N_GPUS=$(sed -nE 's/^devices: ([0-9]+).*/\1/p' <<<"$GPU_PROBE_OUT")
OK_NOTE="$(sed -nE 's/^  0: ([^,]*),.*/\1/p' <<<"$GPU_PROBE_OUT" | head -1) ×$N_GPUS; $(grep -E '^  (cuDNN|NCCL|driver) ' <<<"$GPU_PROBE_OUT" | awk '{print $1, $2}' | tr '\n' ',' | sed 's/,$//; s/,/, /g')"
echo "PASS selftest_device" >> "$SEC_LOG"
end device ""

# ---- ops --------------------------------------------------------------------------------
section ops
if [ -x "$BUILD/test_backend_ops" ]; then
    timeout $(( GPU_DEADLINE - $(date +%s) )) "$BUILD/test_backend_ops" > "$OUTDIR/ops.txt" 2>&1; rc=$?
    np=$(grep -c '^PASS ' "$OUTDIR/ops.txt"); nf=$(grep -c '^FAIL ' "$OUTDIR/ops.txt")
    grep '^FAIL ' "$OUTDIR/ops.txt" | head -5 | tee -a "$SEC_LOG"
    if [ $rc -eq 124 ]; then echo "FAIL selftest_ops: not finished within its budget ($np cases passed so far; ops.txt)" | tee -a "$SEC_LOG"
    elif [ $rc -ne 0 ] && [ "$nf" -eq 0 ]; then echo "FAIL selftest_ops: the op test exited $rc: $(tail -2 "$OUTDIR/ops.txt" | tr '\n' ' ')" | tee -a "$SEC_LOG"
    elif [ "$np" -eq 0 ]; then echo "FAIL selftest_ops: no op case ran: $(grep -m1 '^SKIP ' "$OUTDIR/ops.txt")" | tee -a "$SEC_LOG"
    else OK_NOTE="$np op cases within their bounds, CUDA fp32 and bf16 against the CPU fp32 reference"; echo "PASS selftest_ops" >> "$SEC_LOG"; fi
else echo "FAIL selftest_ops: $BUILD/test_backend_ops is missing" | tee -a "$SEC_LOG"; fi
end ops "keep $OUTDIR/ops.txt and report it with the probe's output (probe.txt); BOOST_CUDA_DEBUG=1 names a faulting kernel"

# ---- one step against the CPU reference ---------------------------------------------------
section step
run_sec check_step_fp32
run_sec check_step_gqa_hd64
cp "$TMP"/gqa-*.log "$TMP"/gpu32-*.log "$OUTDIR/" 2>/dev/null
end step "a training step on the GPU differs from the CPU reference beyond its bound: keep $OUTDIR and report it; train.attention: flash shows whether the attention is the cause"

# ---- attention: cuDNN ran, and agrees with the flash kernel ----------------------------------
section attention
if [ "$GPU_DEVICE" = cpu ]; then
    echo "SKIP selftest_attention_cudnn: BOOST_GPU_TEST_DEVICE=cpu (no cuDNN on the CPU)" >> "$SEC_LOG"
elif [ -f "$TMP/gqa-bf16.log" ]; then
    line=$(grep -m1 '^attention: forward' "$TMP/gqa-bf16.log")
    if grep -q 'cuDNN .* fused attention' <<<"$line"; then
        echo "PASS selftest_attention_cudnn (${line#attention: })" >> "$SEC_LOG"; OK_NOTE="bf16 attention on ${line##*: }"
    else
        echo "FAIL selftest_attention_cudnn: the bf16 step's attention took the flash kernel (${line#attention: })" | tee -a "$SEC_LOG"
    fi
else echo "SKIP selftest_attention_cudnn: the bf16 step did not run" >> "$SEC_LOG"; fi
[ "$GPU_DEVICE" = cuda ] && "$BUILD/attention_bench" --shape 1 8 512 64 --kv-heads 2 --reps 2 --compare 2>&1 | grep -E '^(PASS|FAIL|SKIP|attention)' | tee -a "$SEC_LOG"
end attention "cuDNN refused or failed: the reason is on the line; a cuDNN 9 from 9.10.2 on with its engine libraries and nvrtc beside it (the bundle carries them) serves this graph; train.attention: flash runs without cuDNN, slower"

# ---- two or more GPUs: tp 2 over NCCL, NCCL's bus bandwidth -----------------------------------
if [ "${N_GPUS:-0}" -lt 2 ]; then
    for s in tp2-nccl nccl; do VERDICT[$s]=SKIPPED; DETAIL[$s]="one GPU on this node (these need two or more)"; done
else
    section tp2-nccl
    gpu_tiny_cfg cola "$TMP/nccl.yaml"
    if ! gpu_train nccl-tp1 1 "$TMP/nccl.yaml" $(dev_args fp32); then run_sec gpu_run_failed selftest_tp2_nccl nccl-tp1
    elif ! { [ "$GPU_DEVICE" = cuda ] && export BOOST_COMM=nccl; gpu_train nccl-tp2 2 "$TMP/nccl.yaml" $(dev_args fp32) --set parallel.tp=2; }; then
        unset BOOST_COMM
        run_sec gpu_run_failed selftest_tp2_nccl nccl-tp2
    else
        unset BOOST_COMM
        grep -m1 '^gpu: ' "$TMP/nccl-tp2.log" | sed 's/^/  /'
        run_sec gpu_compare selftest_tp2_nccl "$TMP/nccl-tp2/dump/step_1.h5" "$TMP/nccl-tp1/dump/step_1.h5" grads,loss 1e-6 1e-4
    fi
    cp "$TMP"/nccl-tp*.log "$OUTDIR/" 2>/dev/null
    end tp2-nccl "set NCCL_DEBUG=INFO and run again: its lines in $OUTDIR/nccl-tp2.log say which transport failed"

    section nccl
    nccl_args=(--require-nccl); [ "$GPU_DEVICE" = cpu ] && nccl_args=(--device cpu --sizes 1M,16M)
    timeout $(( GPU_DEADLINE - $(date +%s) )) "${MPIRUN[@]}" -np "$N_GPUS" "$BUILD/nccl_bench" "${nccl_args[@]}" --json "$OUTDIR/nccl.json" \
        > "$OUTDIR/nccl.txt" 2>&1; rc=$?
    sed 's/^/  /' "$OUTDIR/nccl.txt" | grep -v '^  \(PASS\|FAIL\|SKIP\)'
    grep -E '^(PASS|FAIL|SKIP)' "$OUTDIR/nccl.txt" >> "$SEC_LOG"
    [ $rc -ne 0 ] && ! grep -q '^FAIL ' "$OUTDIR/nccl.txt" && echo "FAIL selftest_nccl: nccl_bench exited $rc: $(tail -2 "$OUTDIR/nccl.txt" | tr '\n' ' ')" >> "$SEC_LOG"
    OK_NOTE="all-reduce busbw $(sed -nE 's/^busbw: ([0-9.]+ GB\/s).*/\1/p' "$OUTDIR/nccl.txt") over $N_GPUS GPUs (nccl-tests' definition; nccl.txt)"
    end nccl "set NCCL_DEBUG=INFO and run again (nccl.txt); a bus bandwidth far below the node's NVLink or PCIe rate points at its topology (nvidia-smi topo -m)"
fi

verdict
