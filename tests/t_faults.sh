#!/usr/bin/env bash
# t_faults.sh — the engine under damaged files, hostile input, signals and limits, through
# the real binaries: a damaged newest checkpoint makes resume fall back to the newest good
# one, saying so, and the continued run is bit-identical to an uninterrupted one; pruning
# survives a bad old file; a run stopped before its first checkpoint resumes as the same run
# from step 0; a scheduler's warning (USR1) writes a checkpoint at the stop and the resume is
# bit-identical; a closed standard output stops the run 'interrupted'; a run whose loss is
# implausible is never 'completed'; an address-space limit is a memory refusal, never a hang.
# (tools/probe.sh runs the wider probe set.)
source "$(dirname "$0")/lib.sh"
export OMP_NUM_THREADS=1
PY=/usr/bin/python3
cat > "$TMP/tiny.yaml" <<YAML
name: tiny
model: {linear: cola, vocab_size: 64, n_layers: 1, d_model: 32, n_heads: 2, d_ff: 64, seq_len: 16}
data: {dataset: synthetic, synthetic_tokens: 20000, cache_dir: $TMP/cache}
train: {batch_size: 2, steps: 6, warmup_steps: 1, min_lr_ratio: 1, log_every: 1, threads: 1}
run: {db: $TMP/runs.db, checkpoint_dir: $TMP/ckpt, checkpoint_every: 2, keep_last: 5}
YAML
losses() { sqlite3 "$TMP/runs.db" "SELECT printf('%d %.17g', step, loss) FROM steps WHERE run_id=$1 ORDER BY step"; }
last_run() { sqlite3 "$TMP/runs.db" "SELECT max(id) FROM runs"; }
# overwrite 256 bytes of a tensor's data in an HDF5 file
damage() { $PY - "$1" "$2" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f: off = f[sys.argv[2]].id.get_offset()
with open(sys.argv[1], "r+b") as f: f.seek(off + 8); f.write(bytes([0x5a]) * 256)
PY
}

# ---- a damaged newest checkpoint: resume falls back, saying so ---------------------------
# (min_lr_ratio 1: a constant learning rate after warm-up, so a 6-step run continued to 8
# steps is the same computation as an 8-step run)
"$BUILD/train" "$TMP/tiny.yaml" --set train.steps=8 >"$TMP/ref.log" 2>&1 || fail fallback_reference_run "$(tail -3 "$TMP/ref.log")"
ref=$(last_run)
"$BUILD/train" "$TMP/tiny.yaml" >"$TMP/a.log" 2>&1 || fail fallback_first_run "$(tail -3 "$TMP/a.log")"
run=$(last_run)
dir=$(ls -d "$TMP"/ckpt/tiny.default.* | tail -1)
damage "$dir/step_6.h5" /model/layers/0/attn/q/A
# (a longer run: --allow-change train.steps, with the schedule constant here)
"$BUILD/train" "$TMP/tiny.yaml" --resume --set train.steps=8 --allow-change train.steps >"$TMP/b.log" 2>"$TMP/b.err"; rc=$?
if [ $rc = 0 ] && grep -q "warning: skipping checkpoint $dir/step_6.h5: damaged: its bytes do not match the file checksum" "$TMP/b.err" &&
   grep -q "falling back to $dir/step_4.h5 (step 4), the newest checkpoint that verifies" "$TMP/b.err" &&
   grep -q "from $dir/step_4.h5 (step 4)" "$TMP/b.log"; then
    pass resume_falls_back_past_damaged_checkpoint
else fail resume_falls_back_past_damaged_checkpoint "exit $rc: $(cat "$TMP/b.err" | head -5)"; fi
if [ -n "$(losses $run)" ] && [ "$(losses $run)" = "$(losses $ref)" ]; then pass fallback_resume_bit_identical
else fail fallback_resume_bit_identical "$(diff <(losses $run) <(losses $ref) | head -4 | tr '\n' ' ')"; fi

# ---- reading a damaged checkpoint directly: refused by name, exit 2 ---------------------
damage "$dir/step_8.h5" /optimizer/v/embed_tokens
out=$("$BUILD/test_store" --verify "$dir/step_8.h5" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "^damaged: its bytes do not match the file checksum" <<<"$out" && pass damaged_checkpoint_detected \
    || fail damaged_checkpoint_detected "exit $rc: $out"

# ---- all checkpoints damaged: resume says so and stops -----------------------------------
for s in 2 4 6 8; do [ -f "$dir/step_$s.h5" ] && damage "$dir/step_$s.h5" /model/final_norm; done
expect_error resume_with_no_good_checkpoint "has no checkpoint that verifies" 2 \
    "$BUILD/train" "$TMP/tiny.yaml" --resume --set train.steps=10

# ---- a run stopped before its first checkpoint: the resume trains it again as the same run --
# (TERM after step 1; the first checkpoint is step 2's. Its own database and folder.) The run
# keeps its one row, its losses are those of a run never stopped; once it has recorded
# checkpoints, a resume that finds none (moved, deleted) is refused, its rows kept.
S=(--set "run.db=$TMP/s.db" --set "run.checkpoint_dir=$TMP/ckpt3")
BOOST_FAULT=signal=0@1:TERM "$BUILD/train" "$TMP/tiny.yaml" "${S[@]}" >"$TMP/s0.log" 2>&1; rc0=$?
"$BUILD/train" "$TMP/tiny.yaml" "${S[@]}" --resume >"$TMP/s1.log" 2>&1; rc=$?
runs=$(sqlite3 "$TMP/s.db" "SELECT group_concat(id || ':' || status || ':' || resumed_count, ' ') FROM runs")
got=$(sqlite3 "$TMP/s.db" "SELECT printf('%d %.17g', step, loss) FROM steps WHERE run_id=1 ORDER BY step")
if [ $rc0 = 143 ] && [ $rc = 0 ] && [ "$runs" = "1:completed:1" ] && [ "$got" = "$(losses $ref | head -6)" ] &&
   grep -q "^resumed tiny.default.* from step 0: it stopped at step 1 before its first checkpoint" "$TMP/s1.log"; then
    pass resume_before_first_checkpoint_same_run
else fail resume_before_first_checkpoint_same_run "exits $rc0 $rc, runs '$runs', $(wc -l <<<"$got") step rows; $(grep -m1 -E '^resumed|^run |error' "$TMP/s1.log")"; fi
rm -f "$TMP"/ckpt3/*/step_*.h5
expect_error resume_with_checkpoints_gone "its checkpoints were moved or deleted" 2 \
    "$BUILD/train" "$TMP/tiny.yaml" "${S[@]}" --resume --set train.steps=8
[ "$(sqlite3 "$TMP/s.db" "SELECT status || ' ' || COUNT(*) FROM runs JOIN steps ON run_id = runs.id")" = "completed 6" ] &&
    pass checkpoints_gone_rows_kept || fail checkpoints_gone_rows_kept "$(sqlite3 "$TMP/s.db" "SELECT status, resumed_count FROM runs")"
BOOST_FAULT=signal=0@1:TERM "$BUILD/train" "$TMP/tiny.yaml" "${S[@]}" >/dev/null 2>&1
expect_error restart_with_other_model_refused "model.d_model is 32 in its recorded configuration and 48 now" 2 \
    "$BUILD/train" "$TMP/tiny.yaml" "${S[@]}" --resume --set model.d_model=48

# ---- a checkpoint of another run in this run's folder is never resumed from ----------------
# (run A killed after its step-4 checkpoint; run B, the same model, to step 6; B's step_6.h5
# copied into A's folder: A resumes from its own step 4 and ends as an uninterrupted run)
O=(--set "run.db=$TMP/o.db" --set "run.checkpoint_dir=$TMP/ckpt4")
(BOOST_FAULT=kill_after_checkpoint=4 "$BUILD/train" "$TMP/tiny.yaml" "${O[@]}" >/dev/null 2>&1; exit $?) 2>/dev/null
ua=$(sqlite3 "$TMP/o.db" "SELECT uid FROM runs WHERE id=1")
"$BUILD/train" "$TMP/tiny.yaml" "${O[@]}" >/dev/null 2>&1
ub=$(sqlite3 "$TMP/o.db" "SELECT uid FROM runs WHERE id=2")
cp "$TMP/ckpt4/$ub/step_6.h5" "$TMP/ckpt4/$ua/"
"$BUILD/train" "$TMP/tiny.yaml" "${O[@]}" --resume="$ua" >"$TMP/o.log" 2>&1; rc=$?
got=$(sqlite3 "$TMP/o.db" "SELECT printf('%d %.17g', step, loss) FROM steps WHERE run_id=1 ORDER BY step")
if [ $rc = 0 ] && grep -q "skipping checkpoint $TMP/ckpt4/$ua/step_6.h5: it belongs to run $ub (its run_uid), not to run $ua" "$TMP/o.log" &&
   grep -q "resumed $ua from $TMP/ckpt4/$ua/step_4.h5 (step 4)" "$TMP/o.log" &&
   [ "$got" = "$(sqlite3 "$TMP/o.db" "SELECT printf('%d %.17g', step, loss) FROM steps WHERE run_id=2 ORDER BY step")" ]; then
    pass checkpoint_of_another_run_skipped
else fail checkpoint_of_another_run_skipped "exit $rc: $(grep -E 'skipping|resumed|error' "$TMP/o.log" | head -3)"; fi

# ---- a resume that changes the run's meaning: refused unless allowed, then recorded --------
(BOOST_FAULT=kill_after_checkpoint=4 "$BUILD/train" "$TMP/tiny.yaml" "${O[@]}" >/dev/null 2>&1; exit $?) 2>/dev/null
uc=$(sqlite3 "$TMP/o.db" "SELECT uid FROM runs WHERE id=3")
for kv in train.lr=2e-3:schedule train.seed=7:seed train.batch_size=4:batch data.synthetic_tokens=30000:data \
          train.beta2=0.99:optimizer train.precision=bf16:numerics; do
    set_kv=${kv%:*}; cls=${kv##*:}
    expect_error "resume_change_refused_${set_kv%%=*}" "1 change of the run's meaning since the checkpoint: ${set_kv%%=*} ($cls)" 2 \
        "$BUILD/train" "$TMP/tiny.yaml" "${O[@]}" --resume="$uc" --set "$set_kv"
done
"$BUILD/train" "$TMP/tiny.yaml" "${O[@]}" --resume="$uc" --set train.lr=2e-3 --allow-change train.lr --set train.log_every=2 \
    >"$TMP/oc.log" 2>&1; rc=$?
ev=$(sqlite3 "$TMP/o.db" "SELECT detail FROM events WHERE run_id=3 AND kind='warning'")
if [ $rc = 0 ] && grep -q "train.log_every .* (recording: accepted" "$TMP/oc.log" && grep -q "train.lr .*allowed by --allow-change" "$TMP/oc.log" &&
   grep -q "allowed by --allow-change: train.lr 0.003 -> 0.002 (schedule)" <<<"$ev"; then pass resume_change_allowed_and_recorded
else fail resume_change_allowed_and_recorded "exit $rc, event '$ev': $(grep -E 'resume|error' "$TMP/oc.log" | head -4)"; fi

# ---- pruning does not die on a bad old file or one it cannot delete ---------------------
"$BUILD/train" "$TMP/tiny.yaml" --set run.checkpoint_dir="$TMP/ckpt2" >"$TMP/c.log" 2>&1
d2=$(ls -d "$TMP"/ckpt2/tiny.default.* | tail -1)
head -c 3000 /dev/urandom > "$d2/step_1.h5"          # garbage under a checkpoint's name
mkdir "$d2/step_3.h5"                                # a name that cannot be unlinked
"$BUILD/train" "$TMP/tiny.yaml" --set run.checkpoint_dir="$TMP/ckpt2" --resume --set train.steps=8 --allow-change train.steps \
    --set run.keep_last=1 >"$TMP/d.log" 2>"$TMP/d.err"; rc=$?
# (garbage under a checkpoint's name is not a boost-c file: left alone, with a warning)
if [ $rc = 0 ] && [ "$(ls "$d2" | tr '\n' ' ')" = "step_1.h5 step_3.h5 step_8.h5 " ] && grep -q "$d2/step_1.h5 is named like a checkpoint but is not one" "$TMP/d.err" &&
   grep -q "is named like a checkpoint but is not one written by boost-c" "$TMP/d.err"; then
    pass prune_survives_bad_old_files
else fail prune_survives_bad_old_files "exit $rc, left: $(ls "$d2" | tr '\n' ' '); $(tail -2 "$TMP/d.err")"; fi

# ---- the manifest given to build/train: refused at once unless a bounded regular file ----
expect_error train_dev_zero "manifest '/dev/zero' is a character device" 2 timeout 20 "$BUILD/train" /dev/zero --no-db
mkfifo "$TMP/fifo.yaml"
expect_error train_fifo "is a FIFO (pipe)" 2 timeout 20 "$BUILD/train" "$TMP/fifo.yaml" --no-db
out=$(echo 'train: {steps: 1}' | timeout 20 "$BUILD/train" /dev/stdin --no-db 2>&1 >/dev/null); rc=$?
[ $rc = 2 ] && grep -q "manifest '/dev/stdin' is a FIFO (pipe)" <<<"$out" && pass train_dev_stdin || fail train_dev_stdin "exit $rc: $out"
: > "$TMP/empty.yaml"
expect_error train_empty_manifest "empty.yaml is empty" 2 timeout 20 "$BUILD/train" "$TMP/empty.yaml" --no-db

# ---- a scheduler's warning (USR1): a checkpoint at the stop, and a bit-identical resume ----
# (step 3 is no checkpoint step of checkpoint_every 2: the warning writes it)
W=(--set "run.db=$TMP/w.db" --set "run.checkpoint_dir=$TMP/ckw" --set train.steps=8)
BOOST_FAULT=signal=0@3:USR1 "$BUILD/train" "$TMP/tiny.yaml" "${W[@]}" >"$TMP/w0.log" 2>&1; rc0=$?
st=$(sqlite3 "$TMP/w.db" "SELECT status FROM runs")
ck=$(ls "$TMP"/ckw/*/ | tr '\n' ' ')
"$BUILD/train" "$TMP/tiny.yaml" "${W[@]}" --resume >"$TMP/w1.log" 2>&1; rc1=$?
got=$(sqlite3 "$TMP/w.db" "SELECT printf('%d %.17g', step, loss) FROM steps WHERE run_id=1 ORDER BY step")
if [ $rc0 = 138 ] && [ "$st" = interrupted ] && [[ "$ck" == *step_3.h5* ]] && [ $rc1 = 0 ] && grep -q "(step 3)" "$TMP/w1.log" &&
   [ "$got" = "$(losses $ref)" ]; then pass usr1_checkpoints_and_resumes_bit_exact
else fail usr1_checkpoints_and_resumes_bit_exact "exits $rc0 $rc1, run $st, checkpoints: $ck; $(grep -m1 -E 'resumed|error' "$TMP/w1.log")"; fi

# ---- a closed standard output (| head -1): the run stops 'interrupted', exit 141 -------------
P=(--set "run.db=$TMP/p.db" --set "run.checkpoint_dir=$TMP/ckp" --set train.steps=100000000 --set run.checkpoint_every=0)
timeout -k 5 120 "$BUILD/train" "$TMP/tiny.yaml" "${P[@]}" 2>"$TMP/p.err" | head -1 >/dev/null; rc=${PIPESTATUS[0]}
row=$(sqlite3 "$TMP/p.db" "SELECT status || '|' || error FROM runs")
[ "$rc" = 141 ] && [[ "$row" == "interrupted|Broken pipe: the standard output of rank 0"* ]] && pass closed_stdout_interrupts \
    || fail closed_stdout_interrupts "exit $rc, run '$row'"

# ---- a plainly broken run (a loss near 9 x ln V at every step: the largest embedding scale,
# d_model 256, a learning rate that changes nothing) is never 'completed' ---------------------
"$BUILD/train" "$TMP/tiny.yaml" --set "run.db=$TMP/e.db" --set "run.checkpoint_dir=$TMP/cke" --set model.embed_std=1 \
    --set model.d_model=256 --set model.d_ff=512 --set train.lr=1e-9 \
    >"$TMP/e.log" 2>&1; rc=$?
row=$(sqlite3 "$TMP/e.db" "SELECT status || '|' || error FROM runs")
[ $rc = 1 ] && [[ "$row" == "failed|not completed: the loss of its last step (6) is "* ]] && grep -q "ln(vocab 64)" <<<"$row" &&
    grep -q "failed at step 6" "$TMP/e.log" && pass implausible_loss_not_completed || fail implausible_loss_not_completed "exit $rc, run '$row'"

# ---- an address-space limit: a memory refusal (exit 2), never a hang -------------------------
# The smallest of these limits under which the binary loads at all (a CUDA build's libraries
# alone map about a gigabyte): too small for OpenBLAS's buffers, which it would retry forever.
rc=127
for kb in 200000 400000 800000 900000 1000000 1100000 1200000; do
    out=$(bash -c 'ulimit -v "$1"; shift; exec timeout -k 5 60 "$@"' _ "$kb" "$BUILD/train" "$TMP/tiny.yaml" \
          --set "run.db=$TMP/m.db" --set "run.checkpoint_dir=$TMP/ckm" 2>&1); rc=$?
    [ $rc = 127 ] && grep -q "error while loading shared libraries" <<<"$out" && continue
    # A CUDA build: cuBLASLt's own initializer (run by the loader before main, so before any
    # code of this project) crashes when its allocations fail; the next limit is tried.
    [ $rc -gt 128 ] && [ -z "$out" ] && ldd "$BUILD/train" | grep -q libcublasLt && rc=127 && continue
    break
done
if [ $rc = 127 ]; then skip address_space_limit_refused "the binary does not load (or its CUDA libraries' initializers crash before main) under 1.2 GB of address space"
elif [ $rc = 0 ] && grep -q "completed at step 6" <<<"$out"; then
    skip address_space_limit_refused "the smallest limit under which it loads ($kb KiB) is room enough to train"
elif [ $rc = 2 ] && grep -q "^error: out of \(memory\|resources\)" <<<"$out" && [ ! -e "$TMP/m.db" ] && [ ! -e "$TMP/ckm" ]; then
    pass "address_space_limit_refused (ulimit -v $kb)"
else fail address_space_limit_refused "ulimit -v $kb: exit $rc (124: a hang): $(grep -m1 -E '^(error|fatal)' <<<"$out" || tail -1 <<<"$out")"; fi
