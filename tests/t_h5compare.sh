#!/usr/bin/env bash
# t_h5compare.sh — build/h5compare, the tensor-by-tensor comparison of two HDF5 files that the
# parity tests and the GPU checks use (no Python on the machine it runs on). Generated cases
# (h5py writes them here): per tensor, a difference just inside max|a-b| <= atol + rtol·max|b|
# passes and one just outside fails, over random shapes, scales and tolerances; a missing
# tensor, a shape mismatch and a NaN against a number fail; NaN against NaN passes; --exact
# tells -0 from 0; an unreadable file is exit 2 naming it. Then two real step dumps: a run
# against itself is bit-identical, against another seed it is not.
source "$(dirname "$0")/lib.sh"
H5C=$BUILD/h5compare
if [ ! -x "$H5C" ]; then fail h5compare_built "$H5C not built"; exit 0; fi
PY=/usr/bin/python3
if ! $PY -c 'import h5py, numpy' 2>/dev/null; then skip h5compare_generated "no h5py and numpy for $PY to write the cases"
else
    # case files: <n>_a.h5, <n>_b.h5 and the expected exit status and flags in cases.txt
    $PY - "$TMP" <<'PY'
import sys, h5py, numpy as np
out = sys.argv[1]
rng = np.random.default_rng(7)
cases = []
def write(n, a, b, want, flags):
    for name, t in (("a", a), ("b", b)):
        with h5py.File(f"{out}/{n}_{name}.h5", "w") as f:
            for k, v in t.items():
                f[k] = v
    cases.append(f"{n} {want} {flags}")
n = 0
for i in range(24):   # the tolerance's edge, both sides, random shapes, scales and tolerances
    shape = tuple(rng.integers(1, 9, size=rng.integers(1, 3)))
    scale = 10.0 ** rng.uniform(-6, 3)
    atol, rtol = 10.0 ** rng.uniform(-9, -4), 10.0 ** rng.uniform(-6, -1)
    b = (rng.standard_normal(shape) * scale).astype(np.float64)
    allowed = atol + rtol * np.abs(b).max()
    for factor, want in ((0.999, 0), (1.001, 1)):
        a = b.copy(); idx = tuple(rng.integers(0, s) for s in shape)
        a[idx] += factor * allowed * (1 if rng.random() < .5 else -1)
        write(n, {"model/w": a, "loss": np.float64(1.5)}, {"model/w": b, "loss": np.float64(1.5)}, want,
              f"--groups model,loss --atol {atol!r} --rtol {rtol!r}")
        n += 1
w = rng.standard_normal((3, 4)).astype(np.float32)
write(n, {"grads/x": w, "grads/y": w}, {"grads/x": w}, 1, "--groups grads"); n += 1            # a tensor in one file only
write(n, {"grads/x": w}, {"grads/x": w.reshape(4, 3)}, 1, "--groups grads"); n += 1            # shapes differ
nan = w.copy(); nan[1, 2] = np.nan
write(n, {"grads/x": nan}, {"grads/x": w}, 1, "--groups grads --atol 1 --rtol 1"); n += 1      # NaN vs a number
write(n, {"grads/x": nan}, {"grads/x": nan}, 0, "--groups grads --exact"); n += 1              # NaN vs NaN
z = np.zeros(4, np.float32); mz = -z
write(n, {"grads/x": mz}, {"grads/x": z}, 1, "--groups grads --exact"); n += 1                 # -0 vs 0, bit for bit
write(n, {"grads/x": mz}, {"grads/x": z}, 0, "--groups grads --atol 0 --rtol 0"); n += 1       # equal as numbers
open(f"{out}/cases.txt", "w").write("\n".join(cases) + "\n")
PY
    bad=0; total=0
    while read -r n want flags; do
        total=$((total + 1))
        out=$("$H5C" "$TMP/${n}_a.h5" "$TMP/${n}_b.h5" $flags 2>&1); rc=$?
        if [ "$rc" -ne "$want" ]; then
            bad=$((bad + 1)); [ $bad -le 3 ] && echo "  case $n ($flags): exit $rc, expected $want: $(tail -2 <<<"$out" | tr '\n' ' ')"
        fi
    done < "$TMP/cases.txt"
    if [ "$total" -ge 50 ] && [ $bad -eq 0 ]; then pass "h5compare_generated_cases ($total cases, each side of the tolerance)"
    else fail h5compare_generated_cases "$bad of $total cases gave the wrong verdict"; fi
fi
# an unreadable file: exit 2 naming it
head -c 300 /dev/urandom > "$TMP/junk.h5"
expect_error h5compare_unreadable_file "junk.h5" 2 "$H5C" "$TMP/junk.h5" "$TMP/junk.h5"
expect_error h5compare_bad_tolerance "h5compare --rtol" 2 "$H5C" a.h5 b.h5 --rtol x

# real step dumps: a run against itself, and against another seed
cat > "$TMP/m.yaml" <<YAML
model: {linear: cola, vocab_size: 256, n_layers: 2, d_model: 32, n_heads: 4, n_kv_heads: 4, d_ff: 48, seq_len: 16, rank_attn: 8, rank_mlp: 8}
data: {dataset: synthetic, cache_dir: $TMP/cache}
train: {batch_size: 4, steps: 1, warmup_steps: 0, threads: 1, val_batches: 1}
run: {dump_steps: "1"}
YAML
for r in a b c; do
    seed=1; [ $r = c ] && seed=2
    OMP_NUM_THREADS=1 "$BUILD/train" "$TMP/m.yaml" --no-db --set train.seed=$seed --set run.dump_dir="$TMP/d$r" \
        --set run.checkpoint_dir="$TMP/ck$r" >"$TMP/$r.log" 2>&1 || fail h5compare_dumps "run $r failed: $(tail -2 "$TMP/$r.log" | tr '\n' ' ')"
done
out=$("$H5C" "$TMP/da/step_1.h5" "$TMP/db/step_1.h5" --exact 2>&1); rc=$?
n=$(sed -nE 's/^([0-9]+) tensors compared.*/\1/p' <<<"$out")
if [ $rc -eq 0 ] && [ "${n:-0}" -gt 10 ]; then pass "h5compare_same_run_bit_identical ($n tensors)"; else fail h5compare_same_run_bit_identical "exit $rc: $out"; fi
out=$("$H5C" "$TMP/da/step_1.h5" "$TMP/dc/step_1.h5" 2>&1); rc=$?
if [ $rc -eq 1 ] && grep -q 'beyond tolerance' <<<"$out" && ! grep -q ' 0 beyond' <<<"$out"; then pass h5compare_other_seed_differs
else fail h5compare_other_seed_differs "exit $rc: $(tail -2 <<<"$out")"; fi
# A comparison that compared nothing is no pass, whatever spelling names nothing (exit 2); a
# tolerance that would pass any difference is refused; a FIFO is refused, not waited on.
A=$TMP/da/step_1.h5; C=$TMP/dc/step_1.h5
bad=0; tried=0
for g in bogus grad '/nothing' 'bogus,other' 'model2' 'Model'; do
    tried=$((tried + 1))
    out=$("$H5C" "$A" "$C" --groups "$g" 2>&1); rc=$?
    [ $rc -eq 2 ] && grep -q "nothing to compare" <<<"$out" || { bad=$((bad + 1)); echo "  --groups '$g': exit $rc: $(tail -1 <<<"$out")"; }
done
for g in '' ',,' ',model' 'model,' 'model,,loss'; do
    tried=$((tried + 1))
    out=$("$H5C" "$A" "$C" --groups "$g" 2>&1); rc=$?
    [ $rc -eq 2 ] && grep -q "empty group name" <<<"$out" || { bad=$((bad + 1)); echo "  --groups '$g': exit $rc: $(tail -1 <<<"$out")"; }
done
for t in inf .inf 1e400 nan -1; do
    for o in --atol --rtol; do
        tried=$((tried + 1))
        out=$("$H5C" "$A" "$C" $o "$t" 2>&1); rc=$?
        [ $rc -eq 2 ] && grep -q "h5compare $o" <<<"$out" || { bad=$((bad + 1)); echo "  $o '$t': exit $rc: $(tail -1 <<<"$out")"; }
    done
done
mkfifo "$TMP/fifo"
for pair in "$TMP/fifo $A" "$A $TMP/fifo" "$TMP $A"; do
    tried=$((tried + 1))
    out=$(timeout 20 "$H5C" $pair 2>&1); rc=$?
    [ $rc -eq 2 ] && grep -q "not a regular file" <<<"$out" || { bad=$((bad + 1)); echo "  $pair: exit $rc: $(tail -1 <<<"$out")"; }
done
if [ $bad -eq 0 ]; then pass "h5compare_refuses_what_compares_nothing ($tried cases)"; else fail h5compare_refuses_what_compares_nothing "$bad of $tried"; fi
