#!/usr/bin/env bash
# The measured half of `make bench-comm`: FullRank-TP, Vanilla-TP and BOOST (BTP + online
# RMSNorm + grouping) training the same small model on kjv at tp = 2 and tp = 4 on this
# machine (MPI over shared memory), 10 steps each; per-layer communication of layer 1 and
# the mean step time (steps 3..10) from the run database runs/bench-comm.db.
set -euo pipefail
cd "$(dirname "$0")/../.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMP_WAIT_POLICY=passive
DB=runs/bench-comm.db
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/bench-comm.yaml" <<'YAML'
model: {linear: cola, vocab_size: 2048, n_layers: 4, d_model: 128, n_heads: 4, d_ff: 344, seq_len: 128}
data: {dataset: kjv}
train: {batch_size: 8, steps: 10, warmup_steps: 2, log_every: 10, val_every: 0}
YAML
declare -A SETS=(
  [fullrank-tp]="--set model.linear=dense"
  [vanilla-tp]=""
  [boost]="--set boost.btp=true --set boost.online_rmsnorm=true --set boost.grouping=true"
)
printf '%-12s %3s %9s %13s %9s %13s %10s %10s %8s\n' scheme tp "fwd calls" "fwd elements" "bwd calls" "bwd elements" "ms/step" "comm ms" "tok/s"
for tp in 2 4; do
  for scheme in fullrank-tp vanilla-tp boost; do
    # shellcheck disable=SC2086
    mpirun -np $tp build/train "$tmp/bench-comm.yaml" --set parallel.tp=$tp --set run.db=$DB \
        --set run.checkpoint_dir="$tmp/ckpt" ${SETS[$scheme]} > "$tmp/log" 2>&1 || { tail -5 "$tmp/log"; exit 1; }
    id=$(sqlite3 $DB "SELECT max(id) FROM runs")
    f=$(sqlite3 $DB "SELECT (sum(calls)/10) || ' ' || (sum(elements)/10) FROM comm WHERE run_id=$id AND layer=1 AND phase='forward'")
    b=$(sqlite3 $DB "SELECT (sum(calls)/10) || ' ' || (sum(elements)/10) FROM comm WHERE run_id=$id AND layer=1 AND phase='backward'")
    t=$(sqlite3 $DB "SELECT printf('%.1f %.0f', avg(step_seconds)*1e3, avg(tokens_per_s)) FROM steps WHERE run_id=$id AND step > 2")
    c=$(sqlite3 $DB "SELECT printf('%.1f', sum(seconds)*1e3/8) FROM comm WHERE run_id=$id AND step > 2")
    set -- $f $b $t
    printf '%-12s %3d %9s %13s %9s %13s %10s %10s %8s\n' $scheme $tp $1 $2 $3 $4 $5 "$c" $6
  done
done
echo "(per layer and micro-batch of 8x128 tokens; comm ms = seconds inside collectives per step on rank 0, all layers)"
