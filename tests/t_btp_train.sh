#!/usr/bin/env bash
# BOOST end to end through build/train (the trainer, 1F1B with several slots, DP with
# ZeRO-1, checkpoint gather/scatter and resume, the run database), every switch on (btp,
# online_rmsnorm, grouping, lowrank_ckpt), against the plain single-process run:
#   tp2, tp2×pp2 with 2 micro-batches, tp2×dp2 with ZeRO-1, tp3 and tp4 (rank 10: not
#   divisible by 3 or 4, which only BTP allows), 4 optimizer steps each;
#   a run interrupted at tp2 after its step-2 checkpoint, resumed at tp1 and at tp4.
# Tolerance (tests/t_parallel.sh's, same model scale and lr): every step's loss within
# 1e-6 + 1e-4·|loss| of the single process. Step 1 runs the same weights on the same batch
# and only the fp32 summation order differs (all-reduce partial sums, split vocabularies,
# online statistics); over 4 steps the weights stay within rounding of each other (only a
# 50-step curve needs t_parallel's looser 2e-3). Measured: at most 3.7e-7 (loss ≈ 5.5).
# MFU is not under test: a fixed --peak-gflops spares every run the sgemm measurement.
source "$(dirname "$0")/lib.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMP_NUM_THREADS=1
DB=$TMP/runs.db
cat > "$TMP/btp.yaml" <<YAML
manifest_version: 1
name: btp
version: 1
model: {linear: cola, vocab_size: 264, n_layers: 2, d_model: 48, n_heads: 12, n_kv_heads: 12, d_ff: 96, seq_len: 16, rank_attn: 10, rank_mlp: 10}
data: {dataset: kjv, cache_dir: $TMP/cache}
train: {batch_size: 4, grad_accum: 2, steps: 4, lr: 1e-2, warmup_steps: 0, threads: 1, val_every: 0, val_batches: 1, log_every: 1}
boost: {btp: true, online_rmsnorm: true, grouping: true, lowrank_ckpt: true}
run: {db: $DB, checkpoint_dir: $TMP/ckpt, checkpoint_every: 2}
YAML
OFF=(--set boost.btp=false --set boost.online_rmsnorm=false --set boost.grouping=false --set boost.lowrank_ckpt=false)
last_run() { sqlite3 "$DB" "SELECT MAX(id) FROM runs"; }
losses() { sqlite3 "$DB" "SELECT step || ' ' || printf('%.9g', loss) FROM steps WHERE run_id=$1 ORDER BY step"; }
# train NAME NP [args...]: one run; its id in $RUN (empty on failure)
train() {
    local name=$1 np=$2; shift 2
    RUN=""
    if timeout 180 mpirun -np "$np" "$BUILD/train" "$TMP/btp.yaml" --peak-gflops 100 "$@" >"$TMP/$name.log" 2>&1; then RUN=$(last_run); return 0; fi
    return 1
}
# close NAME REF_RUN RUN: every step of RUN against the reference within the tolerances above
close() {
    local res
    res=$(join <(losses "$2") <(losses "$3") | awk '
        { d = $2 - $3; if (d < 0) d = -d; tol = 1e-6 + 1e-4 * ($2 < 0 ? -$2 : $2)
          if (d > m) m = d; if (d > tol) bad = bad " step " $1 ": " $2 " vs " $3; n++ }
        END { printf "%d|%.3g|%s", n, m, bad }')
    IFS='|' read -r n maxd bad <<<"$res"
    if [ "$n" = "${4:-4}" ] && [ -z "$bad" ]; then pass "$1 (max |Δloss| $maxd)"
    else fail "$1" "$n steps compared, max |Δloss| $maxd;$bad"; fi
}

if ! train ref 1 "${OFF[@]}"; then fail btp_reference_run "$(tail -3 "$TMP/ref.log")"; exit 0; fi
REF=$RUN
for layout in "tp2 2 --set parallel.tp=2" \
              "tp2_pp2_2mb 4 --set parallel.tp=2 --set parallel.pp=2" \
              "tp2_dp2_zero1 4 --set parallel.tp=2 --set parallel.dp=2 --set parallel.zero1=true" \
              "tp3_rank10 3 --set parallel.tp=3" \
              "tp4_rank10 4 --set parallel.tp=4"; do
    set -- $layout
    name=$1 np=$2; shift 2
    if train "$name" "$np" "$@"; then close "btp_all_switches_${name}_matches_tp1" "$REF" "$RUN"
    else fail "btp_all_switches_${name}_matches_tp1" "$(grep -E 'error|fatal' "$TMP/$name.log" | head -2)"; fi
done

# ---- checkpoint at tp2 (interrupted after step 2), resume at tp1 and at tp4 -----------------
for target in "1 --set parallel.tp=1" "4 --set parallel.tp=4"; do
    set -- $target
    np=$1; shift
    BOOST_FAULT=signal=0@2:TERM timeout 180 mpirun -np 2 "$BUILD/train" "$TMP/btp.yaml" --peak-gflops 100 --set parallel.tp=2 >"$TMP/int$np.log" 2>&1
    INT=$(last_run)
    st=$(sqlite3 "$DB" "SELECT status || ' ' || (SELECT MAX(step) FROM steps WHERE run_id=$INT) FROM runs WHERE id=$INT")
    uid=$(sqlite3 "$DB" "SELECT uid FROM runs WHERE id=$INT")
    if [ "$st" != "interrupted 2" ] || ! [ -f "$TMP/ckpt/$uid/step_2.h5" ]; then
        fail "btp_tp2_checkpoint_resumed_at_tp$np" "the tp2 run did not stop at its step-2 checkpoint: '$st'"; continue
    fi
    timeout 180 mpirun -np "$np" "$BUILD/train" "$TMP/btp.yaml" --peak-gflops 100 --resume="$uid" "$@" >"$TMP/res$np.log" 2>&1
    st=$(sqlite3 "$DB" "SELECT status || ' ' || resumed_count || ' ' || tp FROM runs WHERE id=$INT")
    if [ "$st" = "completed 1 2" ] && grep -q "resumed $uid from .*step_2.h5" "$TMP/res$np.log"; then
        close "btp_tp2_checkpoint_resumed_at_tp$np" "$REF" "$INT"
    else fail "btp_tp2_checkpoint_resumed_at_tp$np" "'$st': $(grep -E 'error|fatal' "$TMP/res$np.log" | head -2)"; fi
done
