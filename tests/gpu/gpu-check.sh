#!/usr/bin/env bash
# gpu-check.sh [--out DIR] [--budget SECONDS] [--plan] — the device check: what a person with
# one NVIDIA GPU runs (make gpu-check here, or build/gpu-bundle/gpu-check.sh from the bundle
# of make gpu-bundle, docs/gpu.md). Built for a short lease: nothing is compiled, the cheap
# correctness checks come first, every section has a time budget and is skipped (said so,
# never guessed) when what is left of the whole budget (--budget, default 420 s = 7 minutes)
# is too small for it; every result is written under --out DIR (default build/gpu-check).
#
#   section    budget  what
#   machine      10 s  build/gpu_probe, nvidia-smi (GPU clocks are recorded here, around the
#                      throughput runs and at the end: DIR/clocks.csv). No NVIDIA GPU on this
#                      host: every section SKIP, exit 0. A GPU that cannot be used (no driver or
#                      one too old, a missing library, binaries that cannot start): FAIL with the
#                      reason and its fix, every later section skipped, exit 1
#   sanitizer    75 s  compute-sanitizer memcheck (the op test's attention cases), racecheck, synccheck (the
#                      flash kernel at a small shape); what the emulator cannot see
#   ops          60 s  the op table, every op CPU against CUDA fp32 and bf16 (cuDNN attention
#                      under auto), the attention cases again with the flash kernel, and the two
#                      attentions compared at T 2048, head dim 64 (GQA 32/8) and 128 (error, time)
#   step         45 s  one step's parity at head dim 64 with GQA, fp32 and bf16 vs CPU fp32
#   boost-c      80 s  tokens/s and MFU of dense and cola at boost-1b, s 2048, bf16, and every
#                      op's device time at the 1B shapes (DIR/gpu-ops.json, per-op JSON)
#   pytorch      70 s  the same step in PyTorch eager with SDPA (torch.compile only when 60 s
#                      are left after eager, its compile time excluded); causal attention at
#                      s 4096: boost-c (cuDNN and flash) vs SDPA
#   curve        50 s  200 steps bf16 vs fp32
#   tp2          30 s  two BOOST switch cases at tp 2, two ranks sharing the GPU (MPI staging)
#   summary            the throughput table against the targets of docs/gpu.md, the sections' times
#
# BOOST_GPU_TEST_DEVICE=cpu (tests/gpu/checks.sh) runs every section on the CPU, only to
# debug this script without a GPU (with TP_PRESET=tiny TP_SEQ=32 for a small shape).
# Writes DIR/gpu-check.json (every number above), DIR/gpu-ops.json, DIR/torch*.json,
# DIR/attention*.json, DIR/sanitizer-*.txt, DIR/clocks.csv, DIR/gpu-check.log (all output).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUTDIR=""; BUDGET=420; PLAN_ONLY=0
while [ $# -gt 0 ]; do
    case "$1" in
        --out) [ $# -ge 2 ] || { echo "gpu-check: --out needs a folder" >&2; exit 2; }; OUTDIR=$2; shift 2 ;;
        --budget) BUDGET=$2; shift 2 ;;
        --plan) PLAN_ONLY=1; shift ;;
        -h|--help) sed -n '2,/^set -u/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "gpu-check: unknown argument '$1' (--out DIR, --budget SECONDS, --plan)" >&2; exit 2 ;;
    esac
done
SECTIONS=(machine:10 sanitizer:75 ops:60 step:45 boost-c:80 pytorch:70 curve:50 tp2:30)
print_plan() {
    local s total=0
    echo "gpu-check plan (budget ${BUDGET} s; a section is skipped when less than its budget is left):"
    for s in "${SECTIONS[@]}"; do printf '  %-10s %4s s\n' "${s%%:*}" "${s##*:}"; total=$((total + ${s##*:})); done
    echo "  (sum of the section budgets: ${total} s; results under ${OUTDIR:-build/gpu-check})"
}
if [ $PLAN_ONLY = 1 ]; then print_plan; exit 0; fi
if [ -f "$ROOT/BUNDLE" ]; then   # inside the bundle: its binaries (their libraries beside them), its mpirun
    . "$ROOT/env.sh"
    export BUILD="$ROOT/bin"
fi
OUTDIR=${OUTDIR:-$ROOT/build/gpu-check}
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
source "$ROOT/tests/lib.sh"
source "$HERE/checks.sh"
exec > >(tee "$OUTDIR/gpu-check.log") 2>&1
# clocks TAG: one line of GPU clocks, temperature and power into DIR/clocks.csv and the log
clocks() {
    command -v nvidia-smi >/dev/null 2>&1 || return 0
    local q
    q=$(nvidia-smi --query-gpu=clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv,noheader 2>&1 | head -1)
    echo "$1, $q" >> "$OUTDIR/clocks.csv"
    echo "clocks ($1): $q"
}
print_plan

T0=$(date +%s)
declare -A SEC_S            # section → seconds taken
elapsed() { echo $(( $(date +%s) - T0 )); }
# section NAME: header; GPU_DEADLINE = now + its budget (SECTIONS); false (skip it) when less
# than that budget is left of the whole
section() {
    SEC_NAME=$1; SEC_T0=$(date +%s)
    local left=$(( BUDGET - $(elapsed) )) want=0 s
    for s in "${SECTIONS[@]}"; do [ "${s%%:*}" = "$1" ] && want=${s##*:}; done
    export GPU_DEADLINE=$(( SEC_T0 + want ))
    echo
    echo "== $1 (budget ${want} s; ${left} s of ${BUDGET} s left)"
    [ "$want" -le "$left" ]
}
section_end() {
    SEC_S[$SEC_NAME]=$(( $(date +%s) - SEC_T0 ))
    echo "-- $SEC_NAME: ${SEC_S[$SEC_NAME]} s (total $(elapsed) s)"
}
json_rows=$TMP/rows.jsonl; : > "$json_rows"
emit() { echo "$1" >> "$json_rows"; }   # one JSON object per line, merged at the end

# ---- 1 machine -----------------------------------------------------------------------
section machine
echo "gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname); $( [ -f "$ROOT/BUNDLE" ] && sed -n '1,3p' "$ROOT/BUNDLE" | tr '\n' ' ' || echo "build $BUILD, commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)")"
gpu_probe_state
probe=$GPU_PROBE_OUT
echo "$probe"
if [ "$GPU_STATE" = broken ] && [ "$GPU_DEVICE" = cuda ]; then
    echo
    fail gpu_check_device "$GPU_WHY"
    for s in "${SECTIONS[@]:1}"; do skip "gpu_check_${s%%:*}" "the GPU is not usable (FAIL gpu_check_device above)"; done
    echo "gpu-check: FAILED: the GPU is not usable (the FAIL line above); files in $OUTDIR"
    exit 1
fi
PY=python3   # the one with PyTorch (the GPU machine's first python3; Debian's here)
for p in python3 /usr/bin/python3; do
    command -v "$p" >/dev/null 2>&1 && "$p" -c 'import torch' >/dev/null 2>&1 && { PY=$p; break; }
done
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 | sed 's/^/nvidia-smi: /'
echo "tag, clocks.sm, clocks.mem, clocks.max.sm, temperature, power, throttle" > "$OUTDIR/clocks.csv"
clocks start
"$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpu", torch.cuda.is_available())' 2>/dev/null |
    sed 's/^/python: /' | grep . || echo "python: no PyTorch in $(command -v "$PY" || echo "$PY") (the pytorch section will say so)"
GPU_NAME=$(sed -nE 's/^  0: ([^,]*),.*/\1/p' <<<"$probe")
section_end
if [ "$GPU_STATE" = none ] && [ "$GPU_DEVICE" = cuda ]; then
    echo
    echo "gpu-check: nothing to measure: $GPU_WHY; every section skipped."
    for s in "${SECTIONS[@]:1}"; do skip "gpu_check_${s%%:*}" "no NVIDIA GPU on this host"; done
    exit 0
fi

# ---- 2 compute-sanitizer ------------------------------------------------------------------
find_sanitizer() {
    local c
    for c in "${COMPUTE_SANITIZER:-}" "$ROOT/sanitizer/compute-sanitizer" "$(command -v compute-sanitizer 2>/dev/null)" \
             ${CUDA_HOME:+"$CUDA_HOME/bin/compute-sanitizer"} /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda*/bin/compute-sanitizer; do
        [ -n "$c" ] && [ -x "$c" ] && { echo "$c"; return 0; }
    done
    return 1
}
sanitize() {  # TOOL SECONDS CMD...: PASS / FAIL / SKIP gpu_sanitizer_TOOL
    local tool=$1 secs=$2; shift 2
    local left=$(( GPU_DEADLINE - $(date +%s) )); [ "$secs" -gt "$left" ] && secs=$left
    if [ "$secs" -le 5 ]; then skip "gpu_sanitizer_$tool" "budget spent"; return; fi
    timeout "$secs" "$SAN" --tool "$tool" --error-exitcode 3 "$@" > "$OUTDIR/sanitizer-$tool.txt" 2>&1; local rc=$?
    tail -3 "$OUTDIR/sanitizer-$tool.txt" | sed "s/^/  $tool: /"
    if [ $rc -eq 124 ]; then skip "gpu_sanitizer_$tool" "not finished within ${secs} s (see sanitizer-$tool.txt)"
    elif [ $rc -eq 0 ] && grep -q 'ERROR SUMMARY: 0 errors' "$OUTDIR/sanitizer-$tool.txt"; then pass "gpu_sanitizer_$tool ($*)"
    else fail "gpu_sanitizer_$tool" "exit $rc: $(grep -m3 -E 'ERROR SUMMARY|Error|error' "$OUTDIR/sanitizer-$tool.txt" | tr '\n' ' ')"; fi
}
if section sanitizer; then
    if [ "$GPU_DEVICE" != cuda ]; then skip gpu_sanitizer "BOOST_GPU_TEST_DEVICE=$GPU_DEVICE"
    elif ! SAN=$(find_sanitizer); then
        for t in memcheck racecheck synccheck; do skip "gpu_sanitizer_$t" "compute-sanitizer not found (not in this CUDA installation; set COMPUTE_SANITIZER=path)"; done
    else
        echo "compute-sanitizer: $SAN ($("$SAN" --version 2>&1 | tail -1))"
        # small shapes: every op of the op test under memcheck; the flash kernel (shared memory,
        # barriers) under racecheck and synccheck
        sanitize memcheck 35 "$BUILD/test_backend_ops" --only attention
        sanitize racecheck 20 "$BUILD/attention_bench" --attention flash --shape 1 2 160 64 --kv-heads 1 --reps 1
        sanitize synccheck 15 "$BUILD/attention_bench" --attention flash --shape 1 2 160 64 --kv-heads 1 --reps 1
    fi
else skip gpu_check_sanitizer "budget spent"; fi
section_end

# ---- 3 op parity, the two attentions --------------------------------------------------------
if section ops; then
    if [ -x "$BUILD/test_backend_ops" ]; then
        timeout $(( GPU_DEADLINE - $(date +%s) - 25 )) "$BUILD/test_backend_ops" ${OPS_ARGS:---table} > "$OUTDIR/ops.txt" 2>&1; rc=$?
        cat "$OUTDIR/ops.txt"
        echo "op test: exit $rc, $(grep -c '^PASS ' "$OUTDIR/ops.txt") passed, $(grep -c '^FAIL ' "$OUTDIR/ops.txt") failed, $(grep -c '^SKIP ' "$OUTDIR/ops.txt") skipped"
        BOOST_CUDA_ATTENTION=flash timeout 10 "$BUILD/test_backend_ops" --only attention > "$OUTDIR/ops-flash.txt" 2>&1
        echo "op test, attention with the flash kernel: exit $?, $(grep -c '^PASS ' "$OUTDIR/ops-flash.txt") passed, $(grep -c '^FAIL ' "$OUTDIR/ops-flash.txt") failed"
        grep '^FAIL ' "$OUTDIR/ops-flash.txt"
    else
        skip gpu_check_ops "$BUILD/test_backend_ops not in this build"
    fi
    dev=$([ "$GPU_DEVICE" = cpu ] && echo cpu || echo cuda)
    for shape in "1 32 2048 64 8" "1 16 2048 128 16"; do
        read -r b h t d kv <<<"$shape"
        [ $(( GPU_DEADLINE - $(date +%s) )) -le 5 ] && { skip "attention_compare_T${t}_hd${d}" "budget spent"; continue; }
        timeout $(( GPU_DEADLINE - $(date +%s) )) "$BUILD/attention_bench" --device "$dev" --precision bf16 --shape $b $h $t $d \
            --kv-heads $kv --reps 5 --compare --json "$OUTDIR/attention-compare-hd$d.json" 2>&1
    done
else skip gpu_check_ops "budget spent"; fi
section_end

# ---- 4 one step at head dim 64 with GQA -----------------------------------------------------
if section step; then
    check_step_gqa_hd64 | tee "$TMP/step.txt"
else skip gpu_check_step "budget spent"; fi
section_end

# ---- 5 boost-c throughput and per-op times ------------------------------------------------------
# build/train on the 1B shape, synthetic data; stopped (SIGKILL, by its pid) once it has
# printed WARM + MEAS step lines: a 1B model's final checkpoint would take minutes.
TP_PRESET=${TP_PRESET:-boost-1b}; TP_SEQ=${TP_SEQ:-2048}; TP_BATCH=${TP_BATCH:-4}; WARM=3; MEAS=6
peak_bf16() {  # dense bf16 TFLOP/s of device 0 from gpu_probe (the datasheet table of its part,
              # cuda_peaks.c), or BOOST_GPU_PEAK_TFLOPS when set, as the trainer's MFU
    if [ -n "${BOOST_GPU_PEAK_TFLOPS:-}" ]; then echo "$BOOST_GPU_PEAK_TFLOPS"; return; fi
    local p; p=$(sed -nE 's/^  0 peak TFLOP\/s \([^)]*, dense\): bf16 ([0-9.]+),.*/\1/p' <<<"$probe")
    echo "${p:-0}"
}
boostc_run() {  # KIND → "kind ms_median tok_s flops_per_token" on stdout
    local kind=$1 log="$TMP/tp-$1.log"
    cat > "$TMP/tp.yaml" <<YAML
model: {preset: $TP_PRESET, linear: $kind, seq_len: $TP_SEQ}
data: {dataset: synthetic, cache_dir: $TMP/cache}
train: {batch_size: $TP_BATCH, steps: 1000, warmup_steps: 0, log_every: 1, val_every: 0, threads: 4}
run: {checkpoint_dir: $TMP/tp-ckpt}
YAML
    : > "$log"   # exists before the loop below reads it (the child opens it later)
    "$BUILD/train" "$TMP/tp.yaml" --no-db $(dev_args bf16) > "$log" 2>&1 &
    local pid=$!
    while kill -0 $pid 2>/dev/null; do
        [ "$(grep -c '^step ' "$log")" -ge $((WARM + MEAS)) ] && break
        [ "$(date +%s)" -ge "$GPU_DEADLINE" ] && break
        sleep 0.5
    done
    kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
    local fpt ms
    fpt=$(sed -nE 's/.*train FLOPs\/token ([0-9.e+]+).*/\1/p' "$log" | head -1)
    ms=$(sed -nE 's/^step +[0-9]+\/[0-9]+ \|.*\| +([0-9.]+) ms \|.*/\1/p' "$log" | tail -n +$((WARM + 1)) | sort -g |
         awk '{a[NR]=$1} END {if (NR) print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}')
    if [ -z "$ms" ] || [ -z "$fpt" ]; then
        echo "boost-c $kind: no timed steps ($(grep -E 'error|hint' "$log" | head -2 | tr '\n' ' ')$(tail -2 "$log" | tr '\n' ' '))" >&2
        return 1
    fi
    awk -v k="$kind" -v ms="$ms" -v f="$fpt" -v tok=$((TP_BATCH * TP_SEQ)) 'BEGIN { printf "%s %.3f %.1f %s\n", k, ms, tok / (ms / 1e3), f }'
}
PEAK=$(peak_bf16)
: > "$TMP/boostc.txt"
if section boost-c; then
    clocks before-throughput
    echo "boost-c: $TP_PRESET, batch $TP_BATCH x seq $TP_SEQ, bf16, median of $MEAS steps after $WARM (peak for MFU: ${PEAK} TFLOP/s bf16, $GPU_NAME)"
    for kind in dense cola; do
        if [ $(( GPU_DEADLINE - $(date +%s) )) -le 30 ]; then skip "gpu_check_boostc_$kind" "budget spent"; continue; fi
        if r=$(GPU_DEADLINE=$(( GPU_DEADLINE - 25 )) boostc_run $kind); then
            echo "$r" >> "$TMP/boostc.txt"
            read -r k ms toks fpt <<<"$r"
            mfu=$(awk -v t="$toks" -v f="$fpt" -v p="$PEAK" 'BEGIN { if (p > 0) printf "%.1f%%", 100 * t * f / (p * 1e12); else print "n/a" }')
            printf '  %-6s %9.2f ms/step %10.0f tok/s  MFU %s\n' "$k" "$ms" "$toks" "$mfu"
            emit "{\"section\": \"boost-c\", \"kind\": \"$k\", \"ms_per_step\": $ms, \"tokens_per_s\": $toks, \"flops_per_token\": $fpt, \"peak_tflops\": $PEAK}"
        fi
        grep -m1 '^attention: ' "$TMP/tp-$kind.log" 2>/dev/null | sed 's/^/  /'
    done
    clocks after-throughput
    if [ -x "$BUILD/test_backend_ops" ]; then
        timeout $(( GPU_DEADLINE - $(date +%s) )) "$BUILD/test_backend_ops" --json "$OUTDIR/gpu-ops.json" --sizes "${OPS_SIZES:-1b}" 2>&1 | tail -40
    else
        skip gpu_check_op_times "$BUILD/test_backend_ops not in this build"
    fi
else skip gpu_check_boostc "budget spent"; fi
section_end

# ---- 6 PyTorch eager (and torch.compile if time is left), attention vs SDPA -----------------------
if section pytorch; then
    dev=$([ "$GPU_DEVICE" = cpu ] && echo cpu || echo cuda)
    left=$(( GPU_DEADLINE - $(date +%s) ))
    PYTHONUNBUFFERED=1 timeout $(( left - 25 )) "$PY" "$ROOT/analysis/torch_gpu_bench.py" \
        --preset "$TP_PRESET" --seq "$TP_SEQ" --batch "$TP_BATCH" --precision bf16 --linears dense,cola --modes eager \
        --steps $MEAS --warmup $WARM $([ "$GPU_DEVICE" = cuda ] && echo --gemm) --device "$dev" --budget $(( left - 30 )) \
        --json "$OUTDIR/torch.json" || echo "torch_gpu_bench.py (eager): exit $?"
    for impl in cudnn flash; do
        timeout 12 "$BUILD/attention_bench" --device "$dev" --precision bf16 --shape ${ATTN_SHAPE:-2 32 4096 64} \
            --attention $([ "$dev" = cuda ] && echo $impl || echo auto) --json "$OUTDIR/attention-$impl.json" 2>&1
    done
    cp -f "$OUTDIR/attention-cudnn.json" "$OUTDIR/attention.json" 2>/dev/null
    PYTHONUNBUFFERED=1 timeout 20 "$PY" "$ROOT/analysis/torch_gpu_bench.py" --modes "" --attention \
        --attn-shape ${ATTN_SHAPE:-2 32 4096 64} --device "$dev" --precision bf16 --json "$OUTDIR/torch-attention.json" \
        || echo "torch attention: exit $?"
else skip gpu_check_pytorch "budget spent"; fi
section_end
# torch.compile: only with 60 s to spare before the later sections' budgets
rest=0; for s in curve:50 tp2:30; do rest=$((rest + ${s##*:})); done
if [ $(( BUDGET - $(elapsed) - rest )) -ge 60 ] && [ -f "$OUTDIR/torch.json" ]; then
    echo "== torch.compile ($(( BUDGET - $(elapsed) - rest )) s to spare; compile time excluded)"
    PYTHONUNBUFFERED=1 timeout $(( BUDGET - $(elapsed) - rest )) "$PY" "$ROOT/analysis/torch_gpu_bench.py" \
        --preset "$TP_PRESET" --seq "$TP_SEQ" --batch "$TP_BATCH" --precision bf16 --linears cola --modes compile \
        --steps $MEAS --warmup $WARM --device "$([ "$GPU_DEVICE" = cpu ] && echo cpu || echo cuda)" \
        --budget $(( BUDGET - $(elapsed) - rest - 10 )) --json "$OUTDIR/torch-compile.json" || echo "torch_gpu_bench.py (compile): exit $?"
else echo "torch.compile: skipped (less than 60 s to spare)"; fi

# ---- 7 bf16 curve ----------------------------------------------------------------------
if section curve; then
    check_bf16_curve | tee "$TMP/curve.txt"
else skip gpu_check_curve "budget spent"; fi
section_end

# ---- 8 two tp-2 cases on one GPU ----------------------------------------------------------
if section tp2; then
    GPU_SWITCH_CASES="${GPU_SWITCH_CASES:-btp0_orms0_grp0_lrc0 btp1_orms1_grp1_lrc1}" check_switches_tp2 | tee "$TMP/tp2.txt"
else skip gpu_check_tp2 "budget spent"; fi
section_end
clocks end

# ---- 9 summary -----------------------------------------------------------------------------
echo
echo "== summary ($TP_PRESET, batch $TP_BATCH x seq $TP_SEQ, bf16, $GPU_NAME; the targets of docs/gpu.md)"
"$PY" - "$TMP/boostc.txt" "$OUTDIR/torch.json" "$OUTDIR/attention.json" "$OUTDIR/torch-attention.json" "$PEAK" <<'PY'
import json, os, sys
bc_path, torch_path, battn_path, attn_path, peak = sys.argv[1:6]
peak = float(peak)
bc = {}
if os.path.exists(bc_path):
    for line in open(bc_path):
        k, ms, toks, fpt = line.split()
        bc[k] = {"ms": float(ms), "toks": float(toks), "fpt": float(fpt)}
tr = {}
for p in (torch_path, os.path.join(os.path.dirname(torch_path), "torch-compile.json")):
    if os.path.exists(p):
        for r in json.load(open(p)).get("results", []):
            tr[(r["kind"], r["mode"])] = r
def f(x, fmt):
    return format(x, fmt) if x is not None else "-"
print(f"{'kind':<6} {'boost-c tok/s':>13} {'MFU':>6} {'eager tok/s':>12} {'MFU':>6} {'compile tok/s':>14} {'MFU':>6} {'bc/eager':>9} {'bc/compile':>11}")
for k in ("dense", "cola"):
    b, e, c = bc.get(k), tr.get((k, "eager")), tr.get((k, "compile"))
    bm = b["toks"] * b["fpt"] / (peak * 1e12) if b and peak else None
    se = b["ms"] / e["ms_per_step"] if b and e else None
    sc = b["ms"] / c["ms_per_step"] if b and c else None
    print(f"{k:<6} {f(b and b['toks'], '13.0f')} {f(bm and 100 * bm, '5.1f')}% {f(e and e['tokens_per_s'], '12.0f')} "
          f"{f(e and e['mfu'] and 100 * e['mfu'], '5.1f')}% {f(c and c['tokens_per_s'], '14.0f')} {f(c and c['mfu'] and 100 * c['mfu'], '5.1f')}% "
          f"{f(se, '8.2f')}x {f(sc, '10.2f')}x")
print("(bc/eager, bc/compile: boost-c's step time over PyTorch's; below 1 is faster)")
def target(name, ok, detail):
    print(f"  target {name}: {'met' if ok else 'NOT met' if ok is not None else 'not measured'} ({detail})")
b, e, c = bc.get("cola"), tr.get(("cola", "eager")), tr.get(("cola", "compile"))
target("CoLA bf16 step <= 0.8x eager", b and e and b["ms"] <= 0.8 * e["ms_per_step"] if b and e else None,
       f"{b['ms'] / e['ms_per_step']:.2f}x" if b and e else "missing")
target("CoLA bf16 step <= 1.0x torch.compile", b and c and b["ms"] <= c["ms_per_step"] if b and c else None,
       f"{b['ms'] / c['ms_per_step']:.2f}x" if b and c else "missing")
d = bc.get("dense")
dm = d["toks"] * d["fpt"] / (peak * 1e12) if d and peak else None
target("dense MFU >= 50%", dm >= 0.5 if dm is not None else None, f"{100 * dm:.1f}%" if dm is not None else "missing")
fa = sd = None
if os.path.exists(battn_path):
    fa = json.load(open(battn_path)).get("ms_forward_backward")
if os.path.exists(attn_path):
    sd = json.load(open(attn_path)).get("attention", {}).get("ms_forward_backward")
impl = json.load(open(battn_path)).get("impl", "?") if os.path.exists(battn_path) else "?"
target(f"attention fwd+bwd <= 1.2x SDPA at s 4096 (boost-c's {impl})", fa <= 1.2 * sd if fa and sd else None,
       f"boost-c {fa:.3f} ms vs SDPA {sd:.3f} ms = {fa / sd:.2f}x" if fa and sd else f"boost-c {fa}, SDPA {sd}")
PY

# everything in one JSON
"$PY" - "$json_rows" "$OUTDIR" "$(elapsed)" "$GPU_NAME" <<'PY' || true
import json, os, sys
rows, outdir, total, gpu = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
out = {"gpu": gpu, "wall_s": total, "boost_c": [json.loads(l) for l in open(rows) if l.strip()]}
for name, key in (("torch.json", "pytorch"), ("torch-compile.json", "pytorch_compile"), ("torch-attention.json", "pytorch_attention"),
                  ("attention-flash.json", "attention_flash"), ("attention-compare-hd64.json", "attention_compare_hd64"),
                  ("attention-compare-hd128.json", "attention_compare_hd128"),
                  ("attention.json", "attention"), ("gpu-ops.json", "ops")):
    p = os.path.join(outdir, name)
    if os.path.exists(p):
        out[key] = json.load(open(p))
log = open(os.path.join(outdir, "gpu-check.log")).read().splitlines()
out["checks"] = [l for l in log if l.startswith(("PASS ", "FAIL ", "SKIP "))]
json.dump(out, open(os.path.join(outdir, "gpu-check.json"), "w"), indent=1)
PY
echo
echo "sections: $(for s in "${SECTIONS[@]}"; do s=${s%%:*}; printf '%s %ss  ' "$s" "${SEC_S[$s]:-skipped}"; done)"
echo "clocks:"; sed 's/^/  /' "$OUTDIR/clocks.csv" 2>/dev/null
echo "gpu-check: $(elapsed) s of the ${BUDGET} s budget; $(grep -c '^PASS ' "$OUTDIR/gpu-check.log") passed, $(grep -c '^FAIL ' "$OUTDIR/gpu-check.log") failed, $(grep -c '^SKIP ' "$OUTDIR/gpu-check.log") skipped; files in $OUTDIR"
