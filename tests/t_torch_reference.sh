#!/usr/bin/env bash
# t_torch_reference.sh — the C engine against an independent PyTorch float64 reference
# (analysis/torch_model.py + analysis/verify_dump.py).
#
# 1. verify_dump.py itself: step dumps written by the torch model (fp32) for dense, cola,
#    svd and a tied + GQA cola variant must pass; the same dump with one gradient entry
#    perturbed by 1% of the tensor's scale must fail (exit 1) and name that tensor.
# 2. The engine: tiny trainings (dense, cola, svd, cola tied + GQA 4:2, LaX in three forms,
#    grad_accum 2) with step dumps at step 1 (initial weights) and step 3 (after two AdamW
#    updates), each
#    checked by verify_dump.py: loss and every gradient tensor within the fp32-vs-float64
#    tolerances documented there.
# Needs /usr/bin/python3 with python3-torch and python3-h5py; without them it prints
# "SKIP ..." lines only (the runner counts PASS/FAIL lines).
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
cd "$ROOT"
if ! $PY -c 'import torch, h5py, numpy' 2>/dev/null; then
    echo "SKIP torch not installed (apt-get install python3-torch python3-h5py)"
    exit 0
fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}

# ---- 1. verify_dump.py on dumps written by the torch model itself --------------------
cat >"$TMP/mkdump.py" <<'EOF'
import sys
import torch
sys.path.insert(0, "analysis")
from torch_model import BoostModel, ModelConfig
from verify_dump import write_reference_dump
out, linear, tied, kv, corrupt = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
cfg = ModelConfig(linear=linear, vocab_size=97, n_layers=2, d_model=32, n_heads=4, n_kv_heads=kv, d_ff=48,
                  rank_attn=8, rank_mlp=12, seq_len=16, tie_embeddings=bool(tied), only_lr_act=linear == "cola")
model = BoostModel(cfg, dtype=torch.float32, seed=1)
gen = torch.Generator().manual_seed(2)
x = torch.randint(0, 97, (3, 16), generator=gen)
y = torch.randint(0, 97, (3, 16), generator=gen)
write_reference_dump(out, model, x, y, corrupt)
EOF
for spec in "dense 0 4" "cola 0 4" "svd 0 4" "cola 1 2"; do
    set -- $spec
    name="verify_dump_selfcheck_$1$([ "$2" = 1 ] && echo _tied_gqa)"
    if ! out=$($PY "$TMP/mkdump.py" "$TMP/self_$1_$2.h5" "$1" "$2" "$3" none 2>&1); then
        fail "$name" "could not write the torch dump: $(echo "$out" | tail -2)"; continue
    fi
    expect_ok "$name" $PY analysis/verify_dump.py --quiet "$TMP/self_$1_$2.h5"
done
bad=model/layers/1/attn/k/B
$PY "$TMP/mkdump.py" "$TMP/bad.h5" svd 0 2 "$bad" >/dev/null 2>&1
out=$($PY analysis/verify_dump.py --quiet "$TMP/bad.h5" 2>&1); rc=$?
if [ $rc -eq 1 ] && grep -q "$bad .*FAIL" <<<"$out"; then pass verify_dump_detects_corrupt_gradient
else fail verify_dump_detects_corrupt_gradient "exit $rc; output: $(echo "$out" | tail -3)"; fi

# ---- 2. the engine's step dumps ---------------------------------------------------------
BIN=${TEST_BUILD:-$BUILD}     # TEST_BUILD: another build folder (make BUILD=...)
TRAIN=$BIN/train
if [ ! -x "$TRAIN" ] || [ ! -x "$BIN/info" ]; then
    fail engine_step_dumps "build/train or build/info not built (run make)"; exit 0
fi
keys=$("$BIN/info" --keys-markdown 2>/dev/null)
if ! grep -q 'dump_steps' <<<"$keys"; then
    echo "SKIP engine step dumps: no *.dump_steps key in 'info --keys-markdown' yet"
    exit 0
fi
# the section that holds dump_steps/dump_dir (run.dump_steps expected)
dsec=$(grep -o '[a-z_]*\.dump_steps' <<<"$keys" | head -1); dsec=${dsec%.dump_steps}

cat >"$TMP/ref.yaml" <<EOF
model:
  preset: tiny
data:
  dataset: synthetic
  synthetic_tokens: 20000
  cache_dir: $TMP/cache
train:
  steps: 3
  warmup_steps: 1
  batch_size: 2
  grad_accum: 2
  lr: 0.01
  log_every: 1
  val_batches: 1
  threads: 2
EOF
# keep the run registry and checkpoints out of the repository (runs/)
runsets=()
grep -q '`run\.db`' <<<"$keys" && runsets+=(--set "run.db=$TMP/boost.db")
grep -q '`run\.checkpoint_dir`' <<<"$keys" && runsets+=(--set "run.checkpoint_dir=$TMP/ckpt")
# name | overrides
variants=(
    "dense|model.linear=dense"
    "cola|model.linear=cola"
    "svd|model.linear=svd"
    "cola_tied_gqa_silu|model.linear=cola model.tie_embeddings=true model.only_lr_act=false model.n_heads=4 model.n_kv_heads=2"
    # LaX (docs/lax.md §9): the defaults (cola base, kron gate, LayerNorm), the svd base with the
    # dense gate, and the bare crossing (identity gate, no norm)
    "lax|model.linear=lax"
    "lax_svd_dense|model.linear=lax model.lax_base=svd model.lax_gate=dense"
    "lax_identity_none|model.linear=lax model.lax_gate=identity model.lax_norm=none"
)
for v in "${variants[@]}"; do
    name=${v%%|*}; sets=${v#*|}
    dir=$TMP/dump_$name
    args=()
    for s in $sets; do args+=(--set "$s"); done
    if ! out=$("$TRAIN" "$TMP/ref.yaml" "${runsets[@]}" "${args[@]}" --set "$dsec.dump_steps=1,3" --set "$dsec.dump_dir=$dir" 2>&1); then
        fail "engine_dump_$name" "train exited non-zero: $(echo "$out" | tail -3)"; continue
    fi
    dumps=$(find "$dir" -name '*.h5' 2>/dev/null | sort)
    n=$(echo "$dumps" | grep -c . || true)
    if [ "$n" -ne 2 ]; then fail "engine_dump_$name" "expected 2 dump files in $dir, found $n"; continue; fi
    for d in $dumps; do
        step=$(basename "$d" .h5)
        if out=$($PY analysis/verify_dump.py --quiet "$d" 2>&1); then pass "torch_reference_${name}_$step"
        else fail "torch_reference_${name}_$step" "$(echo "$out" | grep -E 'FAIL|loss' | head -4 | tr '\n' ';')"; fi
    done
done
