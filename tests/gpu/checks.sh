# tests/gpu/checks.sh — the GPU parity checks, shared by tests/t_gpu.sh (make test) and
# tests/gpu/gpu-check.sh (make gpu-check). Source after tests/lib.sh (ROOT, BUILD, TMP,
# pass/fail/skip). Each check prints PASS/FAIL/SKIP lines and, on stdout, the numbers it
# compared. docs/gpu.md states the bounds:
#
#   gpu_step_fp32_<kind>     one optimizer step, CUDA fp32 (TF32 off: the CUDA back end's
#                            default) against the CPU fp32 reference, dense/cola/svd: the
#                            loss, every gradient and the weights, per tensor
#                            max|a-b| <= 1e-7 + 1e-4·max|b| (step dump, build/h5compare)
#   gpu_step_bf16_<kind>     the same step in bf16 (fp32 master weights) against CPU fp32:
#                            loss within 1e-2·|loss|, every gradient within 1e-1·max|g|
#                            (twice the worst the CPU bf16 back end, which rounds where the
#                            GPU kernels do, shows on these shapes: 4.4 % for svd)
#   gpu_step_gqa_hd64_<prec> one step of cola at head dim 64 with grouped-query attention
#                            (4 heads, 2 kv heads, seq 128): fp32 (the flash kernel) and
#                            bf16 (cuDNN's fused attention under train.attention auto) against
#                            CPU fp32, with the fp32 / bf16 bounds above
#   gpu_switches_tp2_<case>  the BOOST switches at tp 2, two ranks on ONE GPU (NCCL refuses
#                            that, so they go through the MPI back end with host staging):
#                            btp off, and btp on with every combination of online_rmsnorm,
#                            grouping and lowrank_ckpt, and SyncRMSNorm's bottleneck backward
#                            where it applies (13 cases: the configuration refuses the other
#                            7 of the 16 combinations, which would do nothing), each against
#                            tp 1 on the GPU: loss and gradients within 1e-6 + 1e-4·max|b|
#                            (the tolerance of the CPU parallel tests)
#   gpu_bf16_curve           200 steps of bf16 and of fp32 on the same data: the loss,
#                            averaged over each window of 10 steps after the first 20,
#                            within 2 % of fp32's
#
# BOOST_GPU_TEST_DEVICE=cpu runs the same scripts with the CPU back ends in the GPU's place
# (fp32 then equals the reference exactly; bf16 is the CPU bf16 back end, which rounds where
# the GPU kernels do): to debug the scripts without a GPU; t_gpu.sh never sets it.

GPU_DEVICE=${BOOST_GPU_TEST_DEVICE:-cuda}
MPIRUN=(mpirun --oversubscribe --allow-run-as-root)

# Time budget (make gpu-check): GPU_DEADLINE is a `date +%s` after which no new run starts
# (each one still unstarted is reported as skipped) and a running one is stopped.
gpu_time_left() {  # → seconds left (a large number without a deadline)
    if [ -z "${GPU_DEADLINE:-}" ]; then echo 100000; else echo $(( GPU_DEADLINE - $(date +%s) )); fi
}
gpu_out_of_time() {  # TEST: 0 (and a SKIP line) when the budget is spent
    if [ "$(gpu_time_left)" -le 5 ]; then skip "$1" "gpu-check's time budget for this section is spent"; return 0; fi
    return 1
}

# The state of this host's GPU, from build/gpu_probe (tests/gpu/gpu_probe.c): GPU_STATE is
#   usable   a device this build can train on
#   none     no NVIDIA GPU on this host: the GPU checks have nothing to test and skip
#   broken   a GPU is present but cannot be used (no driver or one too old, a missing library,
#            a build without CUDA), or the probe itself cannot start (a library it is linked
#            with is missing: the loader names it): a failure, never a skip
# GPU_WHY the reason with its fix; GPU_PROBE_OUT the probe's whole report.
gpu_probe_state() {
    local rc lib
    GPU_STATE=broken; GPU_WHY=""; GPU_PROBE_OUT=""
    if [ ! -x "$BUILD/gpu_probe" ]; then GPU_WHY="$BUILD/gpu_probe is not built (make $BUILD/gpu_probe)"; return; fi
    GPU_PROBE_OUT=$("$BUILD/gpu_probe" 2>&1); rc=$?
    local said; said=$(sed -n 's/^usable: no: //p' <<<"$GPU_PROBE_OUT")
    if [ $rc -eq 0 ] && grep -q '^usable: yes' <<<"$GPU_PROBE_OUT"; then GPU_STATE=usable
    elif [ $rc -eq 1 ] && [ -n "$said" ]; then GPU_STATE=none; GPU_WHY=$said
    elif [ $rc -eq 2 ] && [ -n "$said" ]; then GPU_WHY=$said
    else   # the probe did not get to say: the dynamic loader stopped it, or it crashed
        lib=$(sed -nE 's/.*error while loading shared libraries: ([^:]+):.*/\1/p' <<<"$GPU_PROBE_OUT" | head -1)
        if [ -n "$lib" ]; then
            GPU_WHY="the binaries cannot start: $lib is missing (the loader: $(head -1 <<<"$GPU_PROBE_OUT")). From the bundle: keep its lib/ beside bin/ (unpack it whole; nothing needs LD_LIBRARY_PATH); from a build: the library moved since it was built (make gpu-libs shows what is found where; rebuild)"
        elif grep -q "version .* not found" <<<"$GPU_PROBE_OUT"; then
            GPU_WHY="the binaries cannot start: this system's C or C++ runtime is older than they need ($(grep -m1 'version .* not found' <<<"$GPU_PROBE_OUT")); the bundle's BUNDLE file names the oldest glibc and libstdc++ it accepts: build it on a system no newer than the nodes'"
        else
            GPU_WHY="$BUILD/gpu_probe failed (exit $rc): $(tail -2 <<<"$GPU_PROBE_OUT" | tr '\n' ' ')"
        fi
    fi
}

# The --set arguments that put a run on the device under test in a precision (the
# reference runs take the defaults: the CPU in fp32). fp32 on the device is exact fp32
# (train.tf32 false): TF32 GEMMs would miss the 1e-4 parity bound by design.
dev_args() {  # PRECISION
    echo "--set run.device=$GPU_DEVICE --set train.precision=$1 --set train.tf32=false"
}

# A tiny configuration (the CPU parallel tests' shape): 2 layers, d 32, one optimizer step
# of 2 micro-batches, a step dump at step 1.
gpu_tiny_cfg() {  # KIND FILE
    cat > "$2" <<YAML
model: {linear: $1, vocab_size: 256, n_layers: 2, d_model: 32, n_heads: 4, n_kv_heads: 4, d_ff: 48, seq_len: 16}
data: {dataset: synthetic, cache_dir: $TMP/cache}
train: {batch_size: 4, grad_accum: 2, steps: 1, lr: 1e-2, warmup_steps: 0, threads: 1, val_batches: 1}
run: {dump_steps: "1"}
YAML
    [ "$1" != dense ] && sed -i 's/seq_len: 16}/seq_len: 16, rank_attn: 8, rank_mlp: 8}/' "$2"
    return 0
}

# gpu_train NAME NP CFG [--set ...]: one run, dump and checkpoints under $TMP/NAME, log $TMP/NAME.log.
gpu_train() {
    local name=$1 np=$2 cfg=$3; shift 3
    local launch=() limit
    [ "$np" -gt 1 ] && launch=("${MPIRUN[@]}" -np "$np")
    limit=$(gpu_time_left); [ "$limit" -gt 300 ] && limit=300; [ "$limit" -lt 1 ] && limit=1
    timeout "$limit" "${launch[@]}" "$BUILD/train" "$cfg" --no-db --set run.dump_dir="$TMP/$name/dump" \
        --set run.checkpoint_dir="$TMP/$name/ckpt" "$@" >"$TMP/$name.log" 2>&1
    GPU_RC=$?
    return $GPU_RC
}
gpu_run_failed() {  # TEST NAME: a FAIL line, or a SKIP line when the budget stopped the run
    if [ "${GPU_RC:-0}" -eq 124 ] && [ -n "${GPU_DEADLINE:-}" ] && [ "$(gpu_time_left)" -le 5 ]; then
        skip "$1" "run $2 stopped at gpu-check's time budget"; return
    fi
    fail "$1" "run $2 failed (exit ${GPU_RC:-?}): $(grep -E 'error|hint|failed' "$TMP/$2.log" | head -3 | tr '\n' ' ')$(tail -2 "$TMP/$2.log" | tr '\n' ' ')"
}

# compare NAME A B GROUPS ATOL RTOL: one PASS/FAIL line with build/h5compare's summary.
gpu_compare() {
    local name=$1 a=$2 b=$3 groups=$4 atol=$5 rtol=$6 out
    out=$("$BUILD/h5compare" "$a" "$b" --groups "$groups" --atol "$atol" --rtol "$rtol" 2>&1)
    local rc=$?
    if [ $rc -eq 0 ]; then pass "$name ($(tail -1 <<<"$out"))"
    else fail "$name" "$(tail -4 <<<"$out" | tr '\n' ';')"; fi
}

check_step_fp32() {
    local kind
    for kind in dense cola svd; do
        gpu_out_of_time gpu_step_fp32_$kind && continue
        gpu_tiny_cfg $kind "$TMP/$kind.yaml"
        if ! gpu_train cpu-$kind 1 "$TMP/$kind.yaml"; then gpu_run_failed gpu_step_fp32_$kind cpu-$kind; continue; fi
        if ! gpu_train gpu32-$kind 1 "$TMP/$kind.yaml" $(dev_args fp32); then gpu_run_failed gpu_step_fp32_$kind gpu32-$kind; continue; fi
        gpu_compare gpu_step_fp32_$kind "$TMP/gpu32-$kind/dump/step_1.h5" "$TMP/cpu-$kind/dump/step_1.h5" model,grads,loss 1e-7 1e-4
    done
}

check_step_gqa_hd64() {
    local prec
    cat > "$TMP/gqa.yaml" <<YAML
model: {linear: cola, vocab_size: 256, n_layers: 2, d_model: 256, n_heads: 4, n_kv_heads: 2, d_ff: 512, seq_len: 128, rank_attn: 32, rank_mlp: 32}
data: {dataset: synthetic, cache_dir: $TMP/cache}
train: {batch_size: 2, grad_accum: 1, steps: 1, lr: 1e-2, warmup_steps: 0, threads: 4, val_batches: 1}
run: {dump_steps: "1"}
YAML
    if [ "$(gpu_time_left)" -le 5 ]; then gpu_out_of_time gpu_step_gqa_hd64_fp32; gpu_out_of_time gpu_step_gqa_hd64_bf16; return; fi
    if ! gpu_train gqa-cpu 1 "$TMP/gqa.yaml"; then gpu_run_failed gpu_step_gqa_hd64 gqa-cpu; return; fi
    local r="$TMP/gqa-cpu/dump/step_1.h5"
    for prec in fp32 bf16; do
        gpu_out_of_time gpu_step_gqa_hd64_$prec && continue
        if ! gpu_train gqa-$prec 1 "$TMP/gqa.yaml" $(dev_args $prec); then gpu_run_failed gpu_step_gqa_hd64_$prec gqa-$prec; continue; fi
        grep '^attention: ' "$TMP/gqa-$prec.log" | sed 's/^/  /'
        if [ $prec = fp32 ]; then gpu_compare gpu_step_gqa_hd64_fp32 "$TMP/gqa-fp32/dump/step_1.h5" "$r" model,grads,loss 1e-7 1e-4
        else
            gpu_compare gpu_step_gqa_hd64_bf16_loss "$TMP/gqa-bf16/dump/step_1.h5" "$r" loss 0 1e-2
            gpu_compare gpu_step_gqa_hd64_bf16_grads "$TMP/gqa-bf16/dump/step_1.h5" "$r" grads 1e-7 1e-1
        fi
    done
}

check_step_bf16() {
    local kind
    for kind in dense cola svd; do
        if [ "$(gpu_time_left)" -le 5 ]; then gpu_out_of_time gpu_step_bf16_${kind}_loss; gpu_out_of_time gpu_step_bf16_${kind}_grads; continue; fi
        [ -f "$TMP/cpu-$kind/dump/step_1.h5" ] || { gpu_tiny_cfg $kind "$TMP/$kind.yaml"; gpu_train cpu-$kind 1 "$TMP/$kind.yaml"; }
        if ! gpu_train gpu16-$kind 1 "$TMP/$kind.yaml" $(dev_args bf16); then gpu_run_failed gpu_step_bf16_$kind gpu16-$kind; continue; fi
        local d="$TMP/gpu16-$kind/dump/step_1.h5" r="$TMP/cpu-$kind/dump/step_1.h5"
        gpu_compare gpu_step_bf16_${kind}_loss "$d" "$r" loss 0 1e-2
        gpu_compare gpu_step_bf16_${kind}_grads "$d" "$r" grads 1e-7 1e-1
    done
}

# The switch configurations a manifest accepts at tp 2 (config refuses the 7 of the 16
# combinations that turn on online_rmsnorm, grouping or lowrank_ckpt without btp: they
# would do nothing, the model ignores them; test_btp runs all 16 at the model level), plus
# SyncRMSNorm's second backward form where it applies: 13 runs, each name saying its switches.
# GPU_SWITCH_CASES (space-separated names) restricts them (make gpu-check runs two).
gpu_switch_cases() {
    local m btp orms grp lrc
    if [ -n "${GPU_SWITCH_CASES:-}" ]; then echo $GPU_SWITCH_CASES | tr ' ' '\n'; return; fi
    echo "btp0_orms0_grp0_lrc0"
    for m in $(seq 0 7); do
        orms=$(( m & 1 )); grp=$(( (m >> 1) & 1 )); lrc=$(( (m >> 2) & 1 ))
        echo "btp1_orms${orms}_grp${grp}_lrc${lrc}"
        [ "$orms" = 0 ] && echo "btp1_orms0_grp${grp}_lrc${lrc}_syncbwd"
    done
}
gpu_switch_args() {  # CASE → the --set arguments
    local c=$1 tf
    tf() { [ "$1" = 1 ] && echo true || echo false; }
    echo "--set boost.btp=$(tf "${c:3:1}") --set boost.online_rmsnorm=$(tf "${c:9:1}")" \
         "--set boost.grouping=$(tf "${c:14:1}") --set boost.lowrank_ckpt=$(tf "${c:19:1}")" \
         "$([ "${c%_syncbwd}" != "$c" ] && echo --set boost.sync_norm_backward=bottleneck)"
}

check_switches_tp2() {
    if ! command -v mpirun >/dev/null 2>&1; then
        local c
        for c in $(gpu_switch_cases); do
            skip "gpu_switches_tp2_$c" "mpirun not found (the bundle's build/ has one; or apt-get install openmpi-bin)"
        done
        return
    fi
    gpu_tiny_cfg cola "$TMP/sw.yaml"
    if ! gpu_train sw-tp1 1 "$TMP/sw.yaml" $(dev_args fp32); then gpu_run_failed gpu_switches_tp2 sw-tp1; return; fi
    local c name
    for c in $(gpu_switch_cases); do
        name="gpu_switches_tp2_$c"
        gpu_out_of_time "$name" && continue
        if ! gpu_train "sw-$c" 2 "$TMP/sw.yaml" $(dev_args fp32) --set parallel.tp=2 $(gpu_switch_args "$c"); then
            gpu_run_failed "$name" "sw-$c"; continue
        fi
        gpu_compare "$name" "$TMP/sw-$c/dump/step_1.h5" "$TMP/sw-tp1/dump/step_1.h5" grads,loss 1e-6 1e-4
    done
}

# The text for the curve: BOOST_GPU_TEXT, the bundle's data/kjv.txt, or Debian's bible-kjv.
gpu_curve_text() {
    if [ -n "${BOOST_GPU_TEXT:-}" ] && [ -s "$BOOST_GPU_TEXT" ]; then echo "$BOOST_GPU_TEXT"; return 0; fi
    if [ -s "$ROOT/data/kjv.txt" ]; then echo "$ROOT/data/kjv.txt"; return 0; fi
    if command -v bible >/dev/null 2>&1; then
        bible -f Gen1:1-Rev22:21 > "$TMP/kjv.txt" 2>/dev/null && [ -s "$TMP/kjv.txt" ] && { echo "$TMP/kjv.txt"; return 0; }
    fi
    return 1
}

# losses FILE → "step loss" lines from a train log
gpu_losses() { sed -nE 's/^step +([0-9]+)\/[0-9]+ \| loss ([0-9.eE+-]+) .*/\1 \2/p' "$1"; }

check_bf16_curve() {
    local text
    gpu_out_of_time gpu_bf16_curve && return
    if ! text=$(gpu_curve_text); then skip gpu_bf16_curve "no text corpus (set BOOST_GPU_TEXT, or install bible-kjv)"; return; fi
    cat > "$TMP/curve.yaml" <<YAML
model: {linear: cola, vocab_size: 1024, n_layers: 4, d_model: 256, n_heads: 4, n_kv_heads: 4, d_ff: 688, seq_len: 128, rank_attn: 64, rank_mlp: 64}
data: {dataset: "text:$text", cache_dir: $TMP/cache}
train: {batch_size: 16, steps: 200, lr: 3e-3, warmup_steps: 20, log_every: 1, val_every: 0, val_batches: 1, threads: 4}
YAML
    if ! gpu_train curve32 1 "$TMP/curve.yaml" $(dev_args fp32); then gpu_run_failed gpu_bf16_curve curve32; return; fi
    if ! gpu_train curve16 1 "$TMP/curve.yaml" $(dev_args bf16); then gpu_run_failed gpu_bf16_curve curve16; return; fi
    gpu_losses "$TMP/curve32.log" > "$TMP/l32"; gpu_losses "$TMP/curve16.log" > "$TMP/l16"
    # windows of 10 steps after step 20: mean loss, relative difference; the table and the worst
    local verdict
    verdict=$(join "$TMP/l32" "$TMP/l16" | awk '
        $1 > 20 { w = int(($1 - 21) / 10); s32[w] += $2; s16[w] += $3; n[w]++; if (w > W) W = w }
        END {
            if (!(0 in n)) { print "NODATA"; exit }
            printf "  %-12s %10s %10s %8s\n", "steps", "fp32", "bf16", "diff";
            worst = 0
            for (w = 0; w <= W; w++) {
                a = s32[w] / n[w]; b = s16[w] / n[w]; d = (b - a) / a; if (d < 0) d = -d
                if (d > worst) worst = d
                if (w % 2 == 0 || w == W) printf "  %4d-%-7d %10.4f %10.4f %7.2f%%\n", 21 + 10*w, 20 + 10*w + n[w], a, b, 100*d
            }
            printf "WORST %.4f %d\n", worst, W + 1
        }')
    grep -v '^WORST\|^NODATA' <<<"$verdict"
    local worst windows
    read -r _ worst windows < <(grep '^WORST' <<<"$verdict")
    if [ -z "$worst" ]; then fail gpu_bf16_curve "no step lines to compare ($(wc -l < "$TMP/l32") fp32, $(wc -l < "$TMP/l16") bf16)"; return; fi
    if [ "$windows" -lt 18 ]; then fail gpu_bf16_curve "only $windows windows of 10 steps (expected 18)"; return; fi
    if awk -v w="$worst" 'BEGIN { exit !(w <= 0.02) }'; then pass "gpu_bf16_curve (worst window $(awk -v w="$worst" 'BEGIN{printf "%.2f", 100*w}')% of fp32, limit 2%)"
    else fail gpu_bf16_curve "a 10-step window of bf16 is $(awk -v w="$worst" 'BEGIN{printf "%.2f", 100*w}')% off fp32 (limit 2%)"; fi
}
