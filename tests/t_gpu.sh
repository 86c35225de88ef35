#!/usr/bin/env bash
# t_gpu.sh — the GPU run path (docs/gpu.md).
#   Everywhere: build/train started without an MPI launcher and with tp·pp·dp = 1 never
#   calls MPI_Init (a preloaded MPI_Init that exits 99 proves it), and does call it under
#   a launcher or with a larger grid.
#   Where a CUDA device is usable from this build (build/gpu_probe): the parity checks of
#   tests/gpu/checks.sh — one step CUDA fp32 vs CPU fp32, bf16 within its bounds, one step at
#   head dim 64 with GQA (bf16 through cuDNN's attention where it loads), the BOOST
#   switch combinations at tp 2 on one GPU vs tp 1, a 200-step bf16 curve vs fp32, and cuDNN's
#   fused attention against the flash kernel (attention_bench --compare).
#   Elsewhere each of them prints "SKIP name: no GPU (<why>)": skipped, never passed.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$ROOT/tests/gpu/checks.sh"
export OMP_NUM_THREADS=1

# ---- no MPI without a launcher ----------------------------------------------------------
if [ ! -x "$BUILD/train" ]; then fail gpu_train_built "$BUILD/train not built"; exit 0; fi
if ! command -v cc >/dev/null 2>&1; then
    skip train_without_launcher_skips_mpi_init "no C compiler to build the MPI_Init trap"
else
    cat > "$TMP/trap.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
int MPI_Init(int *argc, char ***argv) { (void)argc; (void)argv; fprintf(stderr, "trap: MPI_Init called\n"); exit(99); }
int MPI_Init_thread(int *argc, char ***argv, int req, int *prov) { (void)req; (void)prov; return MPI_Init(argc, argv); }
C
    cc -shared -fPIC -o "$TMP/trap.so" "$TMP/trap.c"
    gpu_tiny_cfg cola "$TMP/nompi.yaml"
    sed -i '/^run:/d' "$TMP/nompi.yaml"
    # the launchers' variables removed, whatever environment the suite runs in
    clean_env=(env -u OMPI_COMM_WORLD_SIZE -u OMPI_COMM_WORLD_RANK -u PMIX_RANK -u PMI_RANK -u PMI_SIZE -u MV2_COMM_WORLD_RANK)
    "${clean_env[@]}" LD_PRELOAD="$TMP/trap.so" "$BUILD/train" "$TMP/nompi.yaml" --no-db >"$TMP/nompi.log" 2>&1; rc=$?
    if [ $rc -eq 0 ] && grep -q '^step     1/1 | loss' "$TMP/nompi.log" && ! grep -q 'trap:' "$TMP/nompi.log"; then
        pass train_without_launcher_skips_mpi_init
    else fail train_without_launcher_skips_mpi_init "exit $rc: $(tail -2 "$TMP/nompi.log" | tr '\n' ' ')"; fi
    "${clean_env[@]}" LD_PRELOAD="$TMP/trap.so" "$BUILD/train" "$TMP/nompi.yaml" --no-db --set parallel.tp=2 >"$TMP/tp2.log" 2>&1; rc=$?
    if [ $rc -eq 99 ] && grep -q 'trap: MPI_Init called' "$TMP/tp2.log"; then pass train_grid_of_two_initialises_mpi
    else fail train_grid_of_two_initialises_mpi "exit $rc (expected the trap's 99): $(tail -2 "$TMP/tp2.log" | tr '\n' ' ')"; fi
    "${clean_env[@]}" OMPI_COMM_WORLD_SIZE=1 LD_PRELOAD="$TMP/trap.so" "$BUILD/train" "$TMP/nompi.yaml" --no-db >"$TMP/l.log" 2>&1; rc=$?
    if [ $rc -eq 99 ]; then pass train_under_launcher_initialises_mpi
    else fail train_under_launcher_initialises_mpi "exit $rc (expected the trap's 99): $(tail -2 "$TMP/l.log" | tr '\n' ' ')"; fi
fi

# ---- the GPU checks --------------------------------------------------------------------
gpu_check_names() {
    local k m
    for k in dense cola svd; do echo gpu_step_fp32_$k; done
    for k in dense cola svd; do echo gpu_step_bf16_${k}_loss; echo gpu_step_bf16_${k}_grads; done
    echo gpu_step_gqa_hd64_fp32; echo gpu_step_gqa_hd64_bf16_loss; echo gpu_step_gqa_hd64_bf16_grads
    for m in $(gpu_switch_cases); do echo "gpu_switches_tp2_$m"; done
    echo gpu_bf16_curve
    echo attention_compare_T256_hd64; echo attention_compare_T256_hd128
}
if [ "$GPU_DEVICE" = cuda ]; then
    reason=""
    if [ ! -x "$BUILD/gpu_probe" ]; then reason="$BUILD/gpu_probe not built"
    elif ! reason=$("$BUILD/gpu_probe" --reason 2>&1); then reason=${reason:-gpu_probe failed}
    else reason=""; fi
    if [ -n "$reason" ]; then
        for t in $(gpu_check_names); do skip "$t" "no GPU ($reason)"; done
        exit 0
    fi
fi
if ! GPU_PY=$(gpu_python); then fail gpu_python "no python3 with h5py and numpy for analysis/compare_h5.py"; exit 0; fi
# cuDNN's fused attention against the flash kernel (attention_bench --compare): SKIP with the
# reason where cuDNN does not load or refuses
for d in 64 128; do
    "$BUILD/attention_bench" --shape 1 4 256 $d --kv-heads 2 --reps 1 --compare 2>&1 | grep -E '^(PASS|FAIL|SKIP|attention)'
done
check_step_fp32
check_step_bf16
check_step_gqa_hd64
check_switches_tp2
check_bf16_curve
