#!/usr/bin/env bash
# cuda_emu_train.sh — multi-rank training through the real train binary with
# run.device: cuda on the CPU emulator of CUDA (build/emu/train, mk/cuda.mk), against the
# CPU fp32 run on the same grid, step by step: each step's dump (loss and every gradient,
# taken before that step's update, so step 2 also checks the first update) within
# max|a-b| <= 1e-4·max|b| per tensor (exact fp32 on both: train.tf32 false; the emulator's
# GEMM and the CPU's sum in different orders).
#
# Cases: tp 2; tp 2 × pp 2; tp 2 × dp 2 with ZeRO-1; BTP with every BOOST switch at tp 2; and
# tp 1 × dp 2 with ZeRO-1, where the Megatron block's residual adds run inside the o and down
# GEMMs (cuBLASLt with C ≠ D: layer_megatron.c); sequence parallelism (docs/parallelism.md §8)
# with selective recomputation at tp 2 × pp 2 (reduce-scatters, in place among them, and
# all-gathers along the sequence on NCCL; the gains' all-reduce; the sharded pipeline message),
# and BTP with every switch and sequence parallelism (docs/boost.md §8: the packed statistic).
# Each case runs twice on the emulator: build/emu/train, whose ranks communicate through MPI
# with host staging — the path that copies each device buffer with cudaMemcpy, which the
# emulator refuses for a host pointer — and build/emu/train_nccl, whose ranks take the NCCL
# code path (comm_nccl.c) on the emulator's NCCL stand-in (emu/emu_nccl.cpp), which refuses a
# host pointer at the call as NCCL does. Both fail when a host scalar is handed to a device
# collective (docs/gpu.md, "The emulator"). The NCCL runs overlap communication (parallel.overlap
# set on here, off by default: collectives on their own streams ordered by events); the blocking form must give
# the same bits, and dropping one event wait must not give them (wrong results, or a run that fails: below, "communication off
# the compute stream"). Run by `make cuda-emu-test` (which builds build/emu/train),
# not by tests/run.sh: the emulator plays each CUDA thread with an OS thread, so a step
# takes seconds, and the whole script a few minutes on 2 cores.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
EMU_TRAIN=${EMU_TRAIN:-$BUILD/emu/train}
EMU_TRAIN_NCCL=${EMU_TRAIN_NCCL:-$BUILD/emu/train_nccl}
if [ ! -x "$EMU_TRAIN" ]; then fail cuda_emu_train_build "$EMU_TRAIN not built (make $EMU_TRAIN)"; exit 0; fi
for b in train h5compare; do
    if [ ! -x "$BUILD/$b" ]; then fail cuda_emu_train_build "$BUILD/$b not built"; exit 0; fi
done
if ! command -v mpirun >/dev/null; then fail cuda_emu_train_mpirun "mpirun not found (Debian: openmpi-bin)"; exit 0; fi
export OMP_NUM_THREADS=1
# The emulated objects are built with a sanitizer: Open MPI's allocations at exit are not leaks of ours.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} TSAN_OPTIONS=${TSAN_OPTIONS:-}
cat > "$TMP/m.yaml" <<YAML
model: {linear: cola, vocab_size: 64, n_layers: 2, d_model: 32, n_heads: 4, n_kv_heads: 2, d_ff: 48, seq_len: 8, rank_attn: 8, rank_mlp: 8}
data: {dataset: synthetic, cache_dir: $TMP/cache}
train: {batch_size: 2, grad_accum: 1, steps: 2, lr: 1e-2, warmup_steps: 0, threads: 1, val_batches: 1, tf32: false}
run: {dump_steps: "1,2"}
YAML
one() {  # BIN NAME NP [--set ...]   (ONE_TIMEOUT: seconds before the run is killed, default 900)
    local bin=$1 name=$2 np=$3; shift 3
    timeout "${ONE_TIMEOUT:-900}" mpirun --oversubscribe --allow-run-as-root -np "$np" "$bin" "$TMP/m.yaml" --no-db \
        --set run.dump_dir="$TMP/$name" --set run.checkpoint_dir="$TMP/ck-$name" "$@" >"$TMP/$name.log" 2>&1
}
# The emulated run NAME-SUFFIX with BIN against the CPU run NAME-cpu; COMM is the comm back
# end its log must name (mpi: host staging; nccl: the emulator's NCCL stand-in).
compare_run() {  # NAME SUFFIX BIN COMM NP [--set ...]
    local name=$1 suf=$2 bin=$3 comm=$4 np=$5; shift 5
    local test=$name; [ "$comm" = nccl ] && test=${name/emu_cuda_train/emu_cuda_nccl_train}
    if ! one "$bin" "$name-$suf" "$np" --set run.device=cuda "$@"; then
        fail "$test" "the emulated cuda run failed: $(grep -m3 -E 'cuda emulator|error|failed' "$TMP/$name-$suf.log" | tr '\n' ' ')"; return
    fi
    if ! grep -q "comm: $comm" "$TMP/$name-$suf.log"; then fail "$test" "the emulated run did not take the $comm path"; return; fi
    local s out worst=""
    for s in 1 2; do
        if ! out=$("$BUILD/h5compare" "$TMP/$name-$suf/step_$s.h5" "$TMP/$name-cpu/step_$s.h5" \
                   --groups loss,grads --atol 0 --rtol 1e-4 2>&1); then
            fail "$test" "step $s: $(tail -3 <<<"$out" | tr '\n' ' ')"; return
        fi
        worst="$worst step $s: $(tail -1 <<<"$out" | sed 's/.*worst/worst/')"
    done
    local l1 l2
    l1=$(grep -m1 '^step *2/' "$TMP/$name-cpu.log" | awk -F'|' '{print $2}'); l2=$(grep -m1 '^step *2/' "$TMP/$name-$suf.log" | awk -F'|' '{print $2}')
    pass "$test (np $np, comm $comm; cpu${l1}, cuda${l2};$worst)"
}
case_run() {  # NAME NP [--set ...]
    local name=$1 np=$2; shift 2
    if ! one "$BUILD/train" "$name-cpu" "$np" "$@"; then fail "$name" "the CPU run failed: $(tail -2 "$TMP/$name-cpu.log" | tr '\n' ' ')"; return; fi
    compare_run "$name" cuda "$EMU_TRAIN" mpi "$np" "$@"
    # The NCCL code path (comm_nccl.c) on the emulator's stand-in: one emulated GPU per rank
    if [ -x "$EMU_TRAIN_NCCL" ]; then
        EMU_GPU_PER_RANK=1 BOOST_COMM=nccl compare_run "$name" nccl "$EMU_TRAIN_NCCL" nccl "$np" "$@" --set parallel.overlap=true
    else
        fail "${name/emu_cuda_train/emu_cuda_nccl_train}" "$EMU_TRAIN_NCCL not built (make $EMU_TRAIN_NCCL)"
    fi
}
case_run emu_cuda_train_tp2 2 --set parallel.tp=2
case_run emu_cuda_train_tp2_pp2 4 --set parallel.tp=2 --set parallel.pp=2
case_run emu_cuda_train_tp2_dp2_zero1 4 --set parallel.tp=2 --set parallel.dp=2 --set parallel.zero1=true
case_run emu_cuda_train_tp2_btp_every_switch 2 --set parallel.tp=2 --set boost.btp=true --set boost.online_rmsnorm=true \
    --set boost.grouping=true --set boost.lowrank_ckpt=true
case_run emu_cuda_train_tp1_dp2_zero1 2 --set parallel.tp=1 --set parallel.dp=2 --set parallel.zero1=true
case_run emu_cuda_train_tp2_pp2_sp_selective 4 --set parallel.tp=2 --set parallel.pp=2 --set parallel.sequence_parallel=true \
    --set boost.btp=false --set boost.selective_recompute=true
case_run emu_cuda_train_tp2_btp_sp_every_switch 2 --set parallel.tp=2 --set boost.btp=true --set boost.online_rmsnorm=true \
    --set boost.grouping=true --set boost.lowrank_ckpt=true --set parallel.sequence_parallel=true

# ---- communication off the compute stream (parallel.overlap, docs/gpu.md "Overlap") ----
# The NCCL runs above overlap (parallel.overlap=true): the data-parallel reduction of each gradient
# bucket and the started TP collectives run on each communicator's own stream, ordered by
# events. Here: (1) the same run with parallel.overlap false (every collective on the compute
# stream) is bit-identical to the overlapped one; (2) with one of those events' waits dropped
# (BOOST_OVERLAP_DROP_DEPENDENCY=producer: the communication stream no longer waits for the
# compute stream before a started call, comm_nccl.c) the results go wrong — the emulator runs
# each stream on its own worker thread, so the reduction reads gradients the backward has not
# finished — which shows the dependency is real and that check (1) and the runs above would
# see one missing.
overlap_identical() {  # NAME (a case_run name whose nccl run exists) NP [--set ...]
    local name=$1 np=$2; shift 2
    local test=${name/emu_cuda_train/emu_cuda_nccl_overlap_bit_identical} s out n=0
    if [ ! -f "$TMP/$name-nccl/step_2.h5" ]; then fail "$test" "the overlapped NCCL run $name-nccl has no dumps"; return; fi
    if ! EMU_GPU_PER_RANK=1 BOOST_COMM=nccl one "$EMU_TRAIN_NCCL" "$name-blocking" "$np" --set run.device=cuda \
            --set parallel.overlap=false "$@"; then
        fail "$test" "the blocking run failed: $(grep -m3 -E 'cuda emulator|error|failed' "$TMP/$name-blocking.log" | tr '\n' ' ')"; return
    fi
    for s in 1 2; do
        if ! out=$("$BUILD/h5compare" "$TMP/$name-nccl/step_$s.h5" "$TMP/$name-blocking/step_$s.h5" \
                   --groups loss,grads,model --exact 2>&1); then
            fail "$test" "step $s: $(tail -3 <<<"$out" | tr '\n' ' ')"; return
        fi
        n=$((n + 1))
    done
    pass "$test (np $np: $n step dumps bit-identical, parallel.overlap true vs false)"
}
overlap_identical emu_cuda_train_tp2_dp2_zero1 4 --set parallel.tp=2 --set parallel.dp=2 --set parallel.zero1=true
# Without the wait, the reduction reads gradients the backward is still writing: a race, whose
# outcome is not fixed — wrong gradients, or a run that fails or never ends (a rank that reads a
# buffer mid-write and dies, a step that waits forever: both seen on 2 cores). Each of these shows
# that the wait is what makes the bits right; the one outcome that fails the test is a run whose
# gradients all match the CPU's although nothing ordered the reduction after the backward.
dropped_dependency() {  # NAME NP [--set ...]: the CPU run NAME-cpu exists
    local name=$1 np=$2; shift 2
    local test=emu_cuda_nccl_overlap_dropped_dependency_goes_wrong s out bad="" rc
    ONE_TIMEOUT=300 EMU_GPU_PER_RANK=1 BOOST_COMM=nccl BOOST_OVERLAP_DROP_DEPENDENCY=producer \
        one "$EMU_TRAIN_NCCL" "$name-dropped" "$np" --set run.device=cuda "$@" --set parallel.overlap=true; rc=$?
    if ! grep -q "BOOST_OVERLAP_DROP_DEPENDENCY=producer" "$TMP/$name-dropped.log"; then
        fail "$test" "the run did not say it dropped the dependency (exit $rc)"; return
    fi
    if [ $rc -ne 0 ]; then
        pass "$test (the communication stream not waiting for the compute: the run $([ $rc -eq 124 ] && echo "did not end in 300 s" \
             || echo "failed, exit $rc"): $(grep -m1 -E 'cuda emulator|error|died|Sanitizer' "$TMP/$name-dropped.log" | cut -c1-120))"; return
    fi
    for s in 1 2; do
        if ! out=$("$BUILD/h5compare" "$TMP/$name-dropped/step_$s.h5" "$TMP/$name-cpu/step_$s.h5" \
                   --groups loss,grads --atol 0 --rtol 1e-4 2>&1); then bad="$bad step $s: $(tail -1 <<<"$out" | cut -c1-160)"; fi
    done
    if [ -n "$bad" ]; then pass "$test (the communication stream not waiting for the compute: wrong results as it must;$bad)"
    else fail "$test" "every gradient within tolerance of the CPU run although the reduction did not wait for the backward"; fi
}
dropped_dependency emu_cuda_train_tp2_dp2_zero1 4 --set parallel.tp=2 --set parallel.dp=2 --set parallel.zero1=true

# ---- which attention ran for each shape, and why: said once per shape, kept in the run's record ----
# A bf16 run on the emulated back end (no cuDNN in the emulator's build): each direction's shape
# is said once on stderr and stored as an event of kind 'backend'; a second step (the same
# shapes) adds nothing.
attention_record() {
    local name=emu_cuda_attention_path_recorded db=$TMP/att.db rc rows said
    timeout 600 "$EMU_TRAIN" "$TMP/m.yaml" --set run.db="$db" --set run.checkpoint_dir="$TMP/ck-att" --set run.dump_dir="$TMP/att-dump" \
        --set run.device=cuda --set train.precision=bf16 >"$TMP/att.log" 2>&1 </dev/null; rc=$?
    rows=$(sqlite3 "$db" "SELECT step || ': ' || detail FROM events WHERE kind = 'backend' ORDER BY id" 2>&1)
    said=$(grep -c '^attention: ' "$TMP/att.log")
    if [ $rc -eq 0 ] && [ "$(wc -l <<<"$rows")" -eq 2 ] && [ "$said" -eq 2 ] \
       && grep -q '^1: attention forward B 2 T 8 H 4 Hkv 2 hd 8: the flash kernel: this build has no cuDNN' <<<"$rows" \
       && grep -q '^1: attention backward B 2 T 8 H 4 Hkv 2 hd 8: the flash kernel: this build has no cuDNN' <<<"$rows"; then
        pass "$name ($(tr '\n' ';' <<<"$rows"))"
    else fail "$name" "exit $rc, $said lines on stderr, events: $(tr '\n' ';' <<<"$rows") $(tail -2 "$TMP/att.log" | tr '\n' ' ')"; fi
}
attention_record

# ---- NCCL failures end the run, recorded 'failed' with the reason, never a hang ----
# The emulator's NCCL stand-in injects the fault (EMU_NCCL_FAULT, emu/emu_nccl.cpp) into world
# rank 1's 40th NCCL operation (in the first training steps): `hang` — the collective never
# completes, the process stays alive (its heartbeat too, so the liveness watchdog cannot see it);
# `error` — its communicator fails asynchronously. comm_nccl.c polls every host wait on the
# stream (its own and the CUDA back end's: Backend.set_wait) for the communicators'
# asynchronous errors and for an NCCL call running longer than BOOST_NCCL_TIMEOUT_S (20 s here:
# well above a collective's legitimate wait for a slower emulated peer), aborts them
# (ncclCommAbort) and dies with the reason, which the run loop records as the run's `failed`
# message. The `timeout 600` only catches a regression (a hang); the seconds are reported.
nccl_fault() {  # NAME FAULT REGEX (the recorded message must match it)
    local name=$1 fault=$2 want=$3 db=$TMP/$1.db t0=$SECONDS rc
    if [ ! -x "$EMU_TRAIN_NCCL" ]; then fail "$name" "$EMU_TRAIN_NCCL not built (make $EMU_TRAIN_NCCL)"; return; fi
    EMU_GPU_PER_RANK=1 BOOST_COMM=nccl BOOST_NCCL_TIMEOUT_S=20 EMU_NCCL_FAULT=$fault \
        timeout 600 mpirun --oversubscribe --allow-run-as-root -np 2 "$EMU_TRAIN_NCCL" "$TMP/m.yaml" --set run.db="$db" \
        --set run.checkpoint_dir="$TMP/ck-$name" --set train.steps=6 --set parallel.tp=2 \
        --set run.device=cuda >"$TMP/$name.log" 2>&1 </dev/null
    rc=$?
    local secs=$((SECONDS - t0))
    if [ $rc = 124 ]; then fail "$name" "the run hung: killed by timeout after $secs s"; return; fi
    if [ $rc = 0 ]; then fail "$name" "the run completed although rank 1's NCCL operation was made to $fault"; return; fi
    if ! grep -q "EMU_NCCL_FAULT: world rank 1's operation" "$TMP/$name.log"; then   # (failed for another reason)
        fail "$name" "exit $rc before the fault was injected: $(grep -m3 -E 'fatal|error' "$TMP/$name.log" | tr '\n' ' ')"; return
    fi
    local row; row=$(sqlite3 "$db" "SELECT status || '|' || coalesce(error, '') FROM runs ORDER BY id DESC LIMIT 1" 2>&1)
    if [[ "$row" == failed\|* ]] && grep -qE "$want" <<<"${row#failed|}"; then
        pass "$name (exit $rc after $secs s; recorded: ${row:0:240})"
    else fail "$name" "exit $rc, run row '$row': $(grep -m3 -E 'fatal|error|emulator' "$TMP/$name.log" | tr '\n' ' ')"; fi
}
nccl_fault emu_cuda_nccl_peer_hang_fails_run "hang:1@40" \
    'comm \(nccl\): rank [01]: an NCCL .* has been running for [0-9]+ s without completing|comm \(nccl\): the (tp|world) communicator failed \(seen while waiting'
nccl_fault emu_cuda_nccl_async_error_fails_run "error:1@40" \
    'comm \(nccl\): the (tp|world) communicator failed \(seen while waiting for .*(injected fault|aborted)'
