#!/usr/bin/env bash
# t_comm_device.sh — the communication interface with buffers on a device back end
# (build/test_comm_device: MPI staging through host scratch, bf16 reductions, device-timing
# hooks, the NCCL switch's refusal) under mpirun on the grids 2×1×1 3×1×1 2×1×2 1×2×2
# (tp×pp×dp). The one-rank run is tests/run.sh's own (build/test_*).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
BIN=$BUILD/test_comm_device
if [ ! -x "$BIN" ]; then fail comm_device_build "$BIN not built (make $BIN)"; exit 0; fi
if ! command -v mpirun >/dev/null; then fail comm_device_mpirun "mpirun not found (Debian: openmpi-bin)"; exit 0; fi
export OMP_NUM_THREADS=1
mpi_grids comm_device "$BIN" "$(grep -c '^    RUN_ALL(' "$ROOT/tests/test_comm_device.c")" 2x1x1 3x1x1 2x1x2 1x2x2

# ---- bf16 collectives end to end (the CPU bf16 back end at tp 2 reduces through the
# user-defined bf16 MPI_Ops): one step's loss and gradients at tp 2, plain and with the
# BOOST switches, against the fp32 single process within the bounds of the GPU bf16 check
# (tests/gpu/checks.sh: loss 1e-2·|loss|, each gradient 1e-1·max|g|). bf16 at tp 1 is held
# to the same bounds, so that a failure points at the collectives, not at bf16 itself.
cat > "$TMP/b16.yaml" <<YAML
model: {linear: cola, vocab_size: 256, n_layers: 2, d_model: 32, n_heads: 4, n_kv_heads: 4, d_ff: 48, seq_len: 16, rank_attn: 8, rank_mlp: 8}
data: {dataset: synthetic, cache_dir: $TMP/cache}
train: {batch_size: 4, grad_accum: 2, steps: 1, lr: 1e-2, warmup_steps: 0, threads: 1, val_batches: 1}
run: {dump_steps: "1"}
YAML
b16_run() {  # NAME NP [--set ...]
    local name=$1 np=$2; shift 2
    timeout 120 mpirun --oversubscribe --allow-run-as-root -np "$np" "$BUILD/train" "$TMP/b16.yaml" --no-db \
        --set run.dump_dir="$TMP/$name" --set run.checkpoint_dir="$TMP/ck-$name" "$@" >"$TMP/$name.log" 2>&1
}
if b16_run f32 1 && b16_run b16tp1 1 --set train.precision=bf16; then
    if "$BUILD/h5compare" "$TMP/b16tp1/step_1.h5" "$TMP/f32/step_1.h5" --groups loss --atol 0 --rtol 1e-2 >/dev/null 2>&1 &&
       g=$("$BUILD/h5compare" "$TMP/b16tp1/step_1.h5" "$TMP/f32/step_1.h5" --groups grads --atol 0 --rtol 1e-1 2>&1); then
        pass "bf16_tp1_within_bounds_of_fp32 ($(tail -1 <<<"$g" | sed 's/.*worst/worst/'))"
    else fail bf16_tp1_within_bounds_of_fp32 "$(tail -3 <<<"$g" | tr '\n' ' ')"; fi
    for case in "tp2" "tp2_boost --set boost.btp=true --set boost.online_rmsnorm=true --set boost.grouping=true"; do
        set -- $case; name=bf16_$1_within_bounds_of_fp32; shift
        if ! b16_run "$name" 2 --set train.precision=bf16 --set parallel.tp=2 "$@"; then
            fail "$name" "run failed: $(tail -2 "$TMP/$name.log" | tr '\n' ' ')"; continue
        fi
        l=$("$BUILD/h5compare" "$TMP/$name/step_1.h5" "$TMP/f32/step_1.h5" --groups loss --atol 0 --rtol 1e-2 2>&1)
        lr=$?
        g=$("$BUILD/h5compare" "$TMP/$name/step_1.h5" "$TMP/f32/step_1.h5" --groups grads --atol 0 --rtol 1e-1 2>&1)
        gr=$?
        g1=$("$BUILD/h5compare" "$TMP/b16tp1/step_1.h5" "$TMP/f32/step_1.h5" --groups grads --atol 0 --rtol 1e-1 2>&1 | tail -1)
        if [ $lr -eq 0 ] && [ $gr -eq 0 ]; then pass "$name (grads: $(tail -1 <<<"$g" | sed 's/.*worst/worst/'); bf16 tp 1: $(sed 's/.*worst/worst/' <<<"$g1"))"
        else fail "$name" "loss: $(tail -1 <<<"$l"); grads: $(tail -3 <<<"$g" | tr '\n' ' ')"; fi
    done
else
    fail bf16_tp2_within_bounds_of_fp32 "reference runs failed: $(tail -2 "$TMP/f32.log" "$TMP/b16tp1.log" | tr '\n' ' ')"
fi
