#!/usr/bin/env bash
# End-to-end training properties on the real corpus (kjv): the loss falls; the same seed
# gives bit-identical losses; a run killed at any moment resumes from its last complete
# checkpoint and continues bit-identically; resuming with a changed model is refused;
# the experiment runner's dry run, variant selection and manifest-change refusal.
source "$(dirname "$0")/lib.sh"
export OMP_NUM_THREADS=2
cat > "$TMP/small.yaml" <<YAML
manifest_version: 1
name: small
version: 1
model: {linear: cola, vocab_size: 512, n_layers: 2, d_model: 64, n_heads: 4, d_ff: 128, seq_len: 64}
data: {dataset: kjv, cache_dir: $TMP/cache}
train: {batch_size: 8, steps: 60, lr: 5e-3, warmup_steps: 5, log_every: 10, val_every: 30}
run: {db: $TMP/runs.db, checkpoint_dir: $TMP/ckpt}
YAML
losses() { sqlite3 "$TMP/runs.db" "SELECT printf('%d %.17g', step, loss) FROM steps WHERE run_id=$1 ORDER BY step"; }
last_run() { sqlite3 "$TMP/runs.db" "SELECT max(id) FROM runs"; }

# ---- the loss falls, and the same seed gives bit-identical losses ---------------------
"$BUILD/train" "$TMP/small.yaml" >"$TMP/a.log" 2>&1 || fail train_runs "$(tail -3 "$TMP/a.log")"
ra=$(last_run)
"$BUILD/train" "$TMP/small.yaml" >"$TMP/b.log" 2>&1
rb=$(last_run)
first=$(losses $ra | head -1 | cut -d' ' -f2); last=$(losses $ra | tail -1 | cut -d' ' -f2)
if awk -v a="$first" -v b="$last" 'BEGIN{exit !(b < a - 1.0)}'; then pass loss_falls_on_kjv
else fail loss_falls_on_kjv "loss $first -> $last over 60 steps"; fi
if [ -n "$(losses $ra)" ] && [ "$(losses $ra)" = "$(losses $rb)" ]; then pass same_seed_bit_identical
else fail same_seed_bit_identical "two runs with seed 42 differ"; fi
val=$(sqlite3 "$TMP/runs.db" "SELECT count(*) FROM validation WHERE run_id=$ra")
[ "$val" = 2 ] && pass validation_logged || fail validation_logged "$val validation rows (expected 2)"
st=$(sqlite3 "$TMP/runs.db" "SELECT status FROM runs WHERE id=$ra")
[ "$st" = completed ] && pass run_completed || fail run_completed "status $st"

# ---- kill -9 right after a checkpoint, resume: bit-identical continuation ---------------
# BOOST_FAULT=kill_after_checkpoint=20 makes the trainer SIGKILL itself right after the
# step-20 checkpoint became final (deterministic: no timing). The step's metrics were
# written before the checkpoint's rename, so none is lost (issue: rename-then-flush).
"$BUILD/train" "$TMP/small.yaml" --set run.checkpoint_every=20 --set run.keep_last=5 >"$TMP/c.log" 2>&1
rc_ref=$(last_run)      # uninterrupted reference with the same checkpoint cadence
(BOOST_FAULT=kill_after_checkpoint=20 "$BUILD/train" "$TMP/small.yaml" --set run.checkpoint_every=20 --set run.keep_last=5 >"$TMP/d.log" 2>&1; exit $?) 2>/dev/null
krc=$?
rk=$(last_run)
killed_at=$(sqlite3 "$TMP/runs.db" "SELECT COALESCE(max(step),0) FROM steps WHERE run_id=$rk")
if [ "$krc" = 137 ] && [ "$killed_at" = 20 ]; then pass killed_after_checkpoint_keeps_its_metrics
else fail killed_after_checkpoint_keeps_its_metrics "exit $krc, last logged step $killed_at (expected 137 and 20)"; fi
"$BUILD/train" "$TMP/small.yaml" --resume >"$TMP/e.log" 2>&1
resumed_from=$(grep -o 'step [0-9]*)' "$TMP/e.log" | tr -dc 0-9)
st=$(sqlite3 "$TMP/runs.db" "SELECT status || ' ' || resumed_count FROM runs WHERE id=$rk")
interrupted=$(sqlite3 "$TMP/runs.db" "SELECT count(*) FROM events WHERE run_id=$rk AND kind='interrupted'")
# (--resume alone: the run's stored overrides, checkpoint_every=20 keep_last=5, apply again)
if [ "$(losses $rk)" = "$(losses $rc_ref)" ] && [ "$st" = "completed 1" ] && [ "$interrupted" = 1 ] && [ "$resumed_from" = 20 ]; then
    pass resume_after_kill_bit_identical
else
    fail resume_after_kill_bit_identical "killed after step $killed_at, resumed from $resumed_from, status '$st', interrupted events $interrupted; $(diff <(losses $rk) <(losses $rc_ref) | head -4 | tr '\n' ' ')"
fi
grep -q 'overrides (stored with the run, then new ones): run.checkpoint_every=20 run.keep_last=5' "$TMP/e.log" &&
    [ "$(ls "$TMP"/ckpt/small.default.*/step_40.h5 2>/dev/null | wc -l)" -ge 2 ] \
    && pass resume_uses_stored_overrides || fail resume_uses_stored_overrides "$(grep overrides "$TMP/e.log")"
# resuming a completed run does nothing and says so (exit 0)
out=$("$BUILD/train" "$TMP/small.yaml" --resume 2>&1); rc=$?
if [ $rc = 0 ] && grep -q "already completed its 60 steps: nothing to do" <<<"$out" &&
   [ "$(sqlite3 "$TMP/runs.db" "SELECT resumed_count FROM runs WHERE id=$rk")" = 1 ]; then pass resume_completed_is_noop
else fail resume_completed_is_noop "exit $rc: $(tail -2 <<<"$out")"; fi
# a changed model is refused; a changed step count (the schedule: a change of the run's
# meaning) only with --allow-change train.steps, and the choice is recorded
expect_error resume_changed_model_refused "resuming with a different model is refused" 2 \
    "$BUILD/train" "$TMP/small.yaml" --resume --set model.rank_attn=8 --set train.steps=70
expect_error resume_more_steps_needs_allow "1 change of the run's meaning since the checkpoint: train.steps (schedule)" 2 \
    "$BUILD/train" "$TMP/small.yaml" --resume --set train.steps=62 --set run.checkpoint_every=20
expect_ok resume_more_steps_allowed "$BUILD/train" "$TMP/small.yaml" --resume --set train.steps=62 --set run.checkpoint_every=20 \
    --allow-change train.steps
ev=$(sqlite3 "$TMP/runs.db" "SELECT count(*) FROM events WHERE run_id=$rk AND kind='config_change'")
[ "$ev" -ge 1 ] && pass config_change_recorded || fail config_change_recorded "no config_change event"
ev=$(sqlite3 "$TMP/runs.db" "SELECT detail FROM events WHERE run_id=$rk AND kind='warning' ORDER BY id DESC LIMIT 1")
grep -q "allowed by --allow-change: train.steps 60 -> 62 (schedule)" <<<"$ev" && pass allowed_change_recorded \
    || fail allowed_change_recorded "last warning event: '$ev'"

# ---- how a run ends: signal, lock, divergence, unwritable output --------------------------
# SIGTERM (here sent by the run to itself after step 6, BOOST_FAULT) stops it after that
# step: 'interrupted', its due checkpoint written, and the printed command resumes it.
BOOST_FAULT=signal=0@6:TERM "$BUILD/train" "$TMP/small.yaml" --set train.steps=12 --set run.checkpoint_every=3 >"$TMP/s.log" 2>&1
rc=$?; rs=$(last_run)
st=$(sqlite3 "$TMP/runs.db" "SELECT status || ' ' || (SELECT max(step) FROM steps WHERE run_id=$rs) FROM runs WHERE id=$rs")
hint=$(grep -m1 -o 'resume with: .*' "$TMP/s.log" | sed 's/^resume with: //')
if [ $rc = 143 ] && [ "$st" = "interrupted 6" ] && grep -q -- "--resume=small.default" <<<"$hint"; then pass sigterm_records_interrupted_with_hint
else fail sigterm_records_interrupted_with_hint "exit $rc, '$st', hint '$hint'"; fi
(cd "$ROOT" && eval "$hint") >"$TMP/s2.log" 2>&1
st=$(sqlite3 "$TMP/runs.db" "SELECT status || ' ' || resumed_count || ' ' || (SELECT max(step) FROM steps WHERE run_id=$rs) FROM runs WHERE id=$rs")
[ "$st" = "completed 1 12" ] && pass printed_resume_command_resumes || fail printed_resume_command_resumes "'$st': $(tail -2 "$TMP/s2.log")"
# one owner per run: a live run cannot be resumed by a second process
"$BUILD/train" "$TMP/small.yaml" --set train.steps=100000 --set run.flush_every=1 >"$TMP/live.log" 2>&1 &
live=$!
for _ in $(seq 1 600); do
    [ "$(sqlite3 "$TMP/runs.db" "SELECT count(*) FROM runs r WHERE pid=$live AND status='running' AND EXISTS (SELECT 1 FROM steps WHERE run_id=r.id)")" = 1 ] && break
    sleep 0.1
done
expect_error live_run_cannot_be_resumed "is live: another process holds its lock" 2 "$BUILD/train" "$TMP/small.yaml" --resume
kill -TERM $live; wait $live
st=$(sqlite3 "$TMP/runs.db" "SELECT status FROM runs WHERE pid=$live")
[ "$st" = interrupted ] && pass live_run_unharmed_then_interrupted || fail live_run_unharmed_then_interrupted "status '$st'"
# a run whose loss climbs far above its start is 'diverged' (exit 3), not 'completed'
"$BUILD/train" "$TMP/small.yaml" --set train.lr=3 --set train.warmup_steps=0 --set train.steps=20 >"$TMP/dv.log" 2>&1
rc=$?; st=$(sqlite3 "$TMP/runs.db" "SELECT status FROM runs WHERE id=$(last_run)")
if [ $rc = 3 ] && [ "$st" = diverged ] && grep -q "training diverged" "$TMP/dv.log"; then pass diverged_run_recorded
else fail diverged_run_recorded "exit $rc, status '$st'"; fi
# unwritable output directories stop the run before step 1
touch "$TMP/afile"
n0=$(sqlite3 "$TMP/runs.db" "SELECT count(*) FROM runs")
expect_error unwritable_checkpoint_dir "run.checkpoint_dir: cannot create $TMP/afile" 2 \
    "$BUILD/train" "$TMP/small.yaml" --set run.checkpoint_dir="$TMP/afile/ck"
expect_error unwritable_dump_dir "run.dump_dir: cannot create $TMP/afile" 2 \
    "$BUILD/train" "$TMP/small.yaml" --set run.dump_steps=1 --set run.dump_dir="$TMP/afile/dumps"
[ "$(sqlite3 "$TMP/runs.db" "SELECT count(*) FROM runs")" = "$n0" ] && pass unwritable_dirs_record_nothing \
    || fail unwritable_dirs_record_nothing "a run row was created"
out=$("$BUILD/train" --help 2>&1) && grep -q '^usage: train' <<<"$out" && pass train_help || fail train_help "$out"

# ---- experiment runner -------------------------------------------------------------------
mkdir -p "$TMP/exps"
cat > "$TMP/exps/grid.yaml" <<YAML
manifest_version: 1
name: grid
version: 1
description: two variants
extends: $TMP/small.yaml
train: {steps: 3, warmup_steps: 1, log_every: 1, val_every: 0}
variants:
  grid: {model.linear: [cola, svd]}
YAML
sed -i '/^name: small/d; /^version: 1$/d; /^manifest_version/d' "$TMP/small.yaml"
out=$("$BUILD/exp" "$TMP/exps/grid.yaml" --dry-run 2>&1)
if grep -q '== variant linear=cola' <<<"$out" && grep -q '== variant linear=svd' <<<"$out" && ! [ -f "$TMP/exps/none" ] &&
   [ "$(sqlite3 "$TMP/runs.db" "SELECT count(*) FROM runs WHERE experiment='grid'")" = 0 ]; then pass exp_dry_run_runs_nothing
else fail exp_dry_run_runs_nothing "$(echo "$out" | head -3)"; fi
out=$("$BUILD/exp" "$TMP/exps/grid.yaml" --variant linear=svd 2>&1)
if grep -q 'linear=svd *1/1 *3 ' <<<"$out" && [ "$(sqlite3 "$TMP/runs.db" "SELECT count(*) FROM runs WHERE experiment='grid'")" = 1 ]
then pass exp_one_variant_and_table; else fail exp_one_variant_and_table "$(echo "$out" | tail -3)"; fi
sed -i 's/steps: 3,/steps: 4,/' "$TMP/exps/grid.yaml"
expect_error exp_edited_manifest_refused "bump \`version:\`" 2 "$BUILD/exp" "$TMP/exps/grid.yaml"
sed -i 's/^version: 1/version: 2/' "$TMP/exps/grid.yaml"
expect_ok exp_bumped_version_runs "$BUILD/exp" "$TMP/exps/grid.yaml" --variant linear=cola
expect_error exp_unknown_variant "linear=dense" 2 "$BUILD/exp" "$TMP/exps/grid.yaml" --variant linear=dense
expect_error exp_unknown_experiment "no experiment 'nope'" 2 "$BUILD/exp" nope

# ---- bad inputs through the train binary -------------------------------------------------
printf 'model: {d_model: 64\n' >"$TMP/bad.yaml"
expect_error train_bad_yaml "bad.yaml" 2 "$BUILD/train" "$TMP/bad.yaml" --no-db
expect_error train_unknown_option "unknown option '--bogus'" 2 "$BUILD/train" "$TMP/small.yaml" --bogus
shard=$(ls "$TMP"/cache/*/train.tok | head -1)
cp -r "$(dirname "$shard")" "$TMP/cache-bad"
truncate -s 100 "$TMP/cache-bad/train.tok"
expect_error train_truncated_shard "train.tok" 2 "$BUILD/prepare" --check "$TMP/cache-bad"
