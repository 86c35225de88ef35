#!/usr/bin/env bash
# t_gpu.sh — the GPU run path (docs/gpu.md).
#   Everywhere: build/train started without an MPI launcher and with tp·pp·dp = 1 never
#   calls MPI_Init (a preloaded MPI_Init that exits 99 proves it), and does call it under
#   a launcher or with a larger grid. The build compiles for this CPU without -Werror unless
#   asked (PORTABLE=1, WERROR=1).
#   Failure is loud, never a skip: without a GPU, build/gpu_probe says there is none (exit 1)
#   and the node self-test and the device check stop there, exit 0; with a GPU assumed present
#   (BOOST_GPU_ASSUME_DEVICE=1; here it has no driver, or the build no CUDA) the probe, the
#   self-test and the device check fail with the reason, exit non-zero; binaries that cannot
#   start (a linked library missing) make the device check fail naming the library.
#   Where a CUDA device is usable from this build: the parity checks of tests/gpu/checks.sh —
#   one step CUDA fp32 vs CPU fp32, bf16 within its bounds, one step at head dim 64 with GQA
#   (bf16 through cuDNN's attention where it loads), the BOOST switch combinations at tp 2 on
#   one GPU vs tp 1, a 200-step bf16 curve vs fp32, and cuDNN's fused attention against the
#   flash kernel (attention_bench --compare). Without a GPU each of them prints
#   "SKIP name: no NVIDIA GPU on this host (...)": skipped, never passed; with a GPU that cannot
#   be used, gpu_device_usable FAILs with the reason.
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

# ---- the build's switches: a researcher's build keeps warnings warnings and this CPU's ISA --------
flags() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u WERROR -u PORTABLE -u OPT -u CFLAGS make -n -s -C "$ROOT" BUILD="$TMP/flags" CUDA=0 "$@" "$TMP/flags/obj/core/check.o" 2>&1 | grep -oE -- '-march=[^ ]+|-Werror' | sort -u | tr '\n' ' '; }
f0=$(flags); f1=$(flags PORTABLE=1 WERROR=1)
if [ "$f0" = "-march=native " ] && [ "$f1" = "-Werror -march=x86-64-v3 " -o "$f1" = "-Werror -march=armv8.2-a " ]; then
    pass "build_flags_default_native_portable_and_werror_on_request (default: $f0; PORTABLE=1 WERROR=1: $f1)"
else fail build_flags_default_native_portable_and_werror_on_request "default '$f0', PORTABLE=1 WERROR=1 '$f1'"; fi

# ---- failure is loud: the probe, the self-test and the device check ------------------------------
gpu_probe_state
if [ "$GPU_DEVICE" = cuda ] && [ "$GPU_STATE" = none ]; then
    if grep -q 'usable: no: no NVIDIA GPU on this host' <<<"$GPU_PROBE_OUT"; then pass gpu_probe_says_no_gpu
    else fail gpu_probe_says_no_gpu "$(tail -2 <<<"$GPU_PROBE_OUT" | tr '\n' ' ')"; fi
    out=$(BOOST_GPU_ASSUME_DEVICE=1 "$BUILD/gpu_probe" 2>&1); rc=$?
    reason=$(sed -n 's/^usable: no: //p' <<<"$out")
    if [ $rc -eq 2 ] && grep -qE 'driver|built without CUDA' <<<"$reason"; then pass "gpu_probe_fails_with_an_assumed_gpu ($reason)"
    else fail gpu_probe_fails_with_an_assumed_gpu "exit $rc (expected 2): $(tail -2 <<<"$out" | tr '\n' ' ')"; fi
    bash "$ROOT/tests/gpu/selftest.sh" --out "$TMP/st" >"$TMP/st.log" 2>&1; rc=$?
    if [ $rc -eq 0 ] && grep -q 'selftest: nothing tested (exit 0): .*no NVIDIA GPU on this host' "$TMP/st.log" \
       && [ "$(grep -c '^  [a-z0-9-]* *SKIPPED' "$TMP/st.log")" -eq 6 ]; then pass selftest_stops_at_no_gpu
    else fail selftest_stops_at_no_gpu "exit $rc: $(tail -3 "$TMP/st.log" | tr '\n' ' ')"; fi
    BOOST_GPU_ASSUME_DEVICE=1 bash "$ROOT/tests/gpu/selftest.sh" --out "$TMP/st2" >"$TMP/st2.log" 2>&1; rc=$?
    if [ $rc -eq 1 ] && grep -qE '^  device +FAILED +selftest_device: .*(driver|built without CUDA)' "$TMP/st2.log"; then pass selftest_fails_with_an_assumed_gpu
    else fail selftest_fails_with_an_assumed_gpu "exit $rc (expected 1): $(tail -8 "$TMP/st2.log" | tr '\n' ' ')"; fi
    bash "$ROOT/tests/gpu/gpu-check.sh" --out "$TMP/gc" >"$TMP/gc.log" 2>&1; rc=$?
    if [ $rc -eq 0 ] && grep -q 'nothing to measure: no NVIDIA GPU on this host' "$TMP/gc.log"; then pass gpu_check_stops_at_no_gpu
    else fail gpu_check_stops_at_no_gpu "exit $rc: $(tail -3 "$TMP/gc.log" | tr '\n' ' ')"; fi
    BOOST_GPU_ASSUME_DEVICE=1 bash "$ROOT/tests/gpu/gpu-check.sh" --out "$TMP/gc2" >"$TMP/gc2.log" 2>&1; rc=$?
    if [ $rc -eq 1 ] && grep -qE '^FAIL gpu_check_device: .*(driver|built without CUDA)' "$TMP/gc2.log"; then pass gpu_check_fails_with_an_assumed_gpu
    else fail gpu_check_fails_with_an_assumed_gpu "exit $rc (expected 1): $(grep -m2 -E '^(FAIL|gpu-check)' "$TMP/gc2.log" | tr '\n' ' ')"; fi
    # binaries that cannot start: a probe linked with a library that is gone (the bundle's real
    # case, libcublasLt hidden in a bare root, is make bundle-check's)
    if command -v cc >/dev/null 2>&1; then
        mkdir -p "$TMP/gone" "$TMP/fakebuild"
        echo 'int gone(void) { return 0; }' > "$TMP/gone.c"
        echo 'int gone(void); int main(void) { return gone(); }' > "$TMP/probe.c"
        cc -shared -fPIC -Wl,-soname,libboost_gone.so.1 -o "$TMP/gone/libboost_gone.so.1" "$TMP/gone.c" &&
            cc -o "$TMP/fakebuild/gpu_probe" "$TMP/probe.c" "$TMP/gone/libboost_gone.so.1" -Wl,-rpath,"$TMP/gone" &&
            rm "$TMP/gone/libboost_gone.so.1"
        BUILD="$TMP/fakebuild" bash "$ROOT/tests/gpu/gpu-check.sh" --out "$TMP/gc3" >"$TMP/gc3.log" 2>&1; rc=$?
        if [ $rc -eq 1 ] && grep -q '^FAIL gpu_check_device: the binaries cannot start: libboost_gone.so.1 is missing' "$TMP/gc3.log"; then
            pass gpu_check_fails_when_binaries_cannot_start
        else fail gpu_check_fails_when_binaries_cannot_start "exit $rc (expected 1): $(grep -m2 -E '^(FAIL|gpu-check)' "$TMP/gc3.log" | tr '\n' ' ')"; fi
    else skip gpu_check_fails_when_binaries_cannot_start "no C compiler to build a binary whose library is gone"; fi
else
    skip gpu_failure_paths "a GPU is present: the failure paths are tried where there is none"
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
    case $GPU_STATE in
        none) for t in $(gpu_check_names); do skip "$t" "$GPU_WHY"; done; exit 0 ;;
        broken) fail gpu_device_usable "$GPU_WHY"; exit 0 ;;
    esac
fi
[ -x "$BUILD/h5compare" ] || { fail gpu_h5compare "$BUILD/h5compare not built"; exit 0; }
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
