#!/usr/bin/env bash
# t_comm_location.sh — the location of a collective's buffer is part of the call:
# no collective in src/ passes host memory through a device-bound entry point (comm.h: the
# comm_host_* forms take host memory, the others the memory comm_set_device names — the GPU
# on a cuda run). tests/comm_location.py flags a device-bound call whose buffer is, by its
# look in its file, host memory (&x, a local array, a host allocation, a literal).
# Exempt: src/parallel/comm*.c (the interface itself) and src/tools/calibrate.c (its MPI
# worker measures collectives on host buffers of a Comm that never calls comm_set_device).
# The runtime counterpart: tests/emu/cuda_emu_train.sh (the emulator refuses a host pointer in
# a device copy).
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
PY=/usr/bin/python3
files=$(grep -rlE '\bcomm_[a-z_]+\(' src --include=*.c --include=*.h --include=*.cu | grep -vE '^src/parallel/comm[^/]*\.c$|^src/tools/calibrate\.c$' | sort)
out=$($PY tests/comm_location.py $files 2>&1); rc=$?
if [ $rc -eq 0 ]; then pass "no_host_buffer_in_a_device_collective ($(tail -1 <<<"$out"))"
else fail no_host_buffer_in_a_device_collective "$(head -n -1 <<<"$out" | head -8 | tr '\n' ' ')"; fi

# The check can fail: the defects the review found (the loss sum, the squared norm, the
# per-rank table, the memory maxima, the checkpoint blocks) are each flagged.
cat > "$TMP/probe.c" <<'C'
double step(Comm *c, Optimizer *o, int W) {
    double loss_sum = run(), ss = norm();
    comm_all_reduce(c, GROUP_PP, &loss_sum, 1, DTYPE_F64, OP_SUM, PHASE_OTHER, -1);
    comm_all_reduce(o->comm, GROUP_TP, &ss, 1, DTYPE_F64, OP_SUM,
                       PHASE_OPTIMIZER, -1);
    double mem[5] = {0};
    comm_all_reduce(c, GROUP_WORLD, mem, 5, DTYPE_F64, OP_MAX, PHASE_OTHER, -1);
    double *per_rank = xcalloc((size_t)W * 5, sizeof(double));
    comm_all_reduce(c, GROUP_WORLD, per_rank, (size_t)W * 5, DTYPE_F64, OP_SUM, PHASE_OTHER, -1);
    float *buf = peer == 0 ? NULL : xmalloc(64);
    comm_recv(c, GROUP_WORLD, buf, 16, DTYPE_F32, 1, 100, PHASE_OTHER, -1);
    comm_all_reduce(c, GROUP_TP, mdl->grads, n, DTYPE_F32, OP_SUM, PHASE_OPTIMIZER, -1);
    comm_host_all_reduce(c, GROUP_DP, &loss_sum, 1, DTYPE_F64, OP_SUM, PHASE_OTHER, -1);
    return loss_sum;
}
C
out=$($PY tests/comm_location.py "$TMP/probe.c" 2>&1); rc=$?
n=$(grep -c 'use comm_host_' <<<"$out")
if [ $rc -eq 1 ] && [ "$n" -eq 5 ] && grep -q 'device-bound calls: 6 (flagged: 5); host calls: 1' <<<"$out"; then
    pass "location_check_flags_the_review_defects (5 of 5 flagged, the device buffer and the host call not)"
else fail location_check_flags_the_review_defects "exit $rc, $n flagged: $(tr '\n' ' ' <<<"$out")"; fi
