#!/usr/bin/env bash
# t_ownership.sh — who may end a run, and how it ends: TERM and
# Ctrl-C to `make exp` stop the run, record it 'interrupted', print the resume command
# and hand exp's 128+N to the shell; a second resume of a live run is refused and leaves
# the live run alone (it ends 'completed'), also when the run was killed before its first
# checkpoint (the resume trains that run again from step 0: one run, never a second).
source "$(dirname "$0")/lib.sh"
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$ROOT"
manifest() {   # NAME STEPS
cat > "$TMP/$1.yaml" <<YAML
manifest_version: 1
name: $1
version: 1
model: {linear: cola, vocab_size: 64, n_layers: 2, d_model: 32, n_heads: 4, d_ff: 64, seq_len: 16}
data: {dataset: synthetic, synthetic_tokens: 20000, cache_dir: $TMP/cache}
train: {batch_size: 2, steps: $2, warmup_steps: 1, min_lr_ratio: 1, log_every: 500, threads: 1}
run: {db: $TMP/$1.db, checkpoint_dir: $TMP/ckpt, checkpoint_every: 100, keep_last: 2}
YAML
}
# The signal cases need a run that never ends by itself before its signal, however fast the
# machine (a step here takes well under a millisecond when the machine is quiet).
manifest pc 20000000
# A signal that is lost would leave that run training for hours: end whatever of this test
# still runs after 300 s (its cases then FAIL instead of hanging the suite).
( sleep 300; proc_signal KILL "$TMP/p[cln].yaml" ) >/dev/null 2>&1 & guard=$!
trap 'kill $guard 2>/dev/null; [ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"' EXIT   # (lib.sh's trap, and the guard)
q() { sqlite3 "$TMP/pc.db" "$1"; }
wait_for() {   # FILE PATTERN: up to 60 s
    for _ in $(seq 1 240); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.25; done; return 1
}

# ---- TERM to make: the run stops, 'interrupted', the resume command, exit 143 ----------------
make --no-print-directory exp EXP="$TMP/pc.yaml" >"$TMP/m1.log" 2>&1 & mk=$!
wait_for "$TMP/m1.log" "^step   500" ; kill -TERM $mk; wait $mk; rc=$?
st=$(q "SELECT status FROM runs ORDER BY id DESC LIMIT 1")
if [ $rc = 143 ] && [ "$st" = interrupted ] && grep -q "^interrupted: resume with  build/exp $TMP/pc.yaml --resume --launch 1$" "$TMP/m1.log"; then
    pass term_to_make_stops_the_run
else fail term_to_make_stops_the_run "make exit $rc, run $st; $(tail -3 "$TMP/m1.log" | tr '\n' ' ')"; fi
sleep 1; [ -n "$(proc_pids "build/exp $TMP/pc.yaml")" ] && fail term_to_make_leaves_nothing_running "exp still running" || pass term_to_make_leaves_nothing_running

# ---- Ctrl-C (SIGINT to make's process group): the same, exit 130 ------------------------------
# (a script's background job ignores SIGINT; a terminal's make does not: undo that, own group)
/usr/bin/python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.setsid(); os.execvp(sys.argv[1], sys.argv[1:])' \
    make --no-print-directory exp EXP="$TMP/pc.yaml" RESUME=1 >"$TMP/m2.log" 2>&1 & mk=$!
wait_for "$TMP/m2.log" "^step " ; kill -INT -- -$mk; wait $mk; rc=$?
st=$(q "SELECT status FROM runs ORDER BY id DESC LIMIT 1")
[ $rc = 130 ] && [ "$st" = interrupted ] && grep -q "^interrupted: resume with" "$TMP/m2.log" && pass ctrl_c_to_make_stops_the_run \
    || fail ctrl_c_to_make_stops_the_run "make exit $rc, run $st; $(tail -3 "$TMP/m2.log" | tr '\n' ' ')"

# ---- TERM to build/exp under make: make exits with exp's 143, not its own 2 --------------------
make --no-print-directory exp EXP="$TMP/pc.yaml" RESUME=1 >"$TMP/m3.log" 2>&1 & mk=$!
wait_for "$TMP/m3.log" "^step " ; proc_signal TERM -P $mk "build/exp" ; wait $mk; rc=$?
[ $rc = 143 ] && [ "$(q "SELECT status FROM runs ORDER BY id DESC LIMIT 1")" = interrupted ] && pass exp_exit_code_through_make \
    || fail exp_exit_code_through_make "make exit $rc; $(tail -2 "$TMP/m3.log" | tr '\n' ' ')"

# ---- a second resume of a live run: refused, and the live run ends 'completed' -----------------
# its own run of 6000 steps, interrupted at step 500: the resume has 5500 steps to train while
# the second launcher tries
manifest pl 6000
"$BUILD/exp" "$TMP/pl.yaml" >"$TMP/r0.log" 2>&1 & e0=$!
wait_for "$TMP/r0.log" "^step   500"; kill -TERM $e0; wait $e0
"$BUILD/exp" "$TMP/pl.yaml" --resume >"$TMP/r1.log" 2>&1 & first=$!
wait_for "$TMP/r1.log" "^resumed "
"$BUILD/exp" "$TMP/pl.yaml" --resume >"$TMP/r2.log" 2>&1; rc2=$?
wait $first; rc1=$?
st=$(sqlite3 "$TMP/pl.db" "SELECT status FROM runs ORDER BY id DESC LIMIT 1")
if [ $rc1 = 0 ] && [ $rc2 != 0 ] && grep -q "is live" "$TMP/r2.log" && [ "$st" = completed ] && grep -q "1 of 1 planned runs completed" "$TMP/r1.log" &&
   ! grep -q "not compared" "$TMP/r1.log"; then pass concurrent_resume_leaves_live_run_completed
else fail concurrent_resume_leaves_live_run_completed "first $rc1, second $rc2, run $st; $(grep -m1 -E 'error|not compared' "$TMP/r1.log" "$TMP/r2.log")"; fi

# ---- the same, after a kill before the run's first checkpoint: still ONE run -----------------
# (make probes once found two rows: the killed run 'interrupted' beside a new 'completed' one.)
# The TERM comes after step 1 of 6000 (BOOST_FAULT), before the checkpoint of step 100: the
# resume trains the same run again from step 0, under its row, uid and folder.
manifest pn 6000
BOOST_FAULT=signal=0@1:TERM "$BUILD/exp" "$TMP/pn.yaml" >"$TMP/n0.log" 2>&1
n0=$(sqlite3 "$TMP/pn.db" "SELECT status || '|' || (SELECT COUNT(*) FROM steps) FROM runs")
"$BUILD/exp" "$TMP/pn.yaml" --resume >"$TMP/n1.log" 2>&1 & first=$!
wait_for "$TMP/n1.log" "^resumed "
"$BUILD/exp" "$TMP/pn.yaml" --resume >"$TMP/n2.log" 2>&1; rc2=$?
wait $first; rc1=$?
runs=$(sqlite3 "$TMP/pn.db" "SELECT group_concat(status || ':' || resumed_count, ' ') FROM runs")
steps=$(sqlite3 "$TMP/pn.db" "SELECT COUNT(*) || '|' || MIN(step) || '|' || MAX(step) FROM steps WHERE run_id = 1")
if [ "$n0" = "interrupted|1" ] && [ $rc1 = 0 ] && [ $rc2 != 0 ] && grep -q "is live" "$TMP/n2.log" && [ "$runs" = "completed:1" ] &&
   [ "$steps" = "6000|1|6000" ] && grep -q "^resumed pn.default.* from step 0: it stopped at step 1 before its first checkpoint" "$TMP/n1.log" &&
   grep -q "1 of 1 planned runs completed" "$TMP/n1.log" && ! grep -q "not compared" "$TMP/n1.log"; then
    pass resume_before_first_checkpoint_keeps_one_run
else fail resume_before_first_checkpoint_keeps_one_run "killed run '$n0', first $rc1, second $rc2, runs '$runs', steps '$steps'; $(grep -m2 -E '^== |^resumed|error|not compared' "$TMP/n1.log" | tr '\n' ' ')"; fi
# (kill -STOP and kill -9 of one rank at tp 2: make probes, kind signals: tools/probe_runs.sh)
