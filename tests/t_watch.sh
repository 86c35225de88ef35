#!/usr/bin/env bash
# make watch (build/watch): the runs of a launch while it trains, from the database, read-only.
# A launch of two variants x REPEAT=2 runs in the background; while its first run trains,
# watch shows that run `running` at its step, the others `pending`, and an ETA for the whole
# launch; after the launch, watch (without --once) returns by itself and shows every run
# completed, each with the median step time the table of make exp prints. The launch is not
# disturbed (it completes, every step recorded).
source "$(dirname "$0")/lib.sh"
export OMP_NUM_THREADS=1
cd "$ROOT"
DB=$TMP/boost.db
cat >"$TMP/duo.yaml" <<YAML
manifest_version: 1
name: duo
version: 1
extends: $ROOT/experiments/base/tiny.yaml
train: {steps: 40, val_every: 0, warmup_steps: 1, log_every: 10}
variants: {a: {}, b: {train.lr: 1e-3}}
YAML
"$BUILD/exp" "$TMP/duo.yaml" --repeat 2 --set data.cache_dir="$TMP/cache" --set run.db="$DB" \
    --set run.checkpoint_dir="$TMP/ckpt" --set run.flush_every=1 >"$TMP/exp.log" 2>&1 &
launcher=$!
for _ in $(seq 1 1200); do
    [ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM steps" 2>/dev/null)" -ge 3 ] 2>/dev/null && break
    sleep 0.1
done
out=$("$BUILD/watch" "$TMP/duo.yaml" --db "$DB" --once 2>&1); rc=$?
if [ $rc = 0 ] && grep -qE '^a +0 running +[0-9]+/40 ' <<<"$out" && grep -qE '^b +1 pending +0/40 ' <<<"$out" &&
   grep -q "0 of 4 runs finished; ETA of the launch" <<<"$out"; then pass watch_a_running_launch
else fail watch_a_running_launch "exit $rc: $(tr '\n' '|' <<<"$out" | head -c 400)"; fi
out=$(timeout 600 "$BUILD/watch" "$TMP/duo.yaml" --db "$DB" --every 0.5 2>&1 | tail -2); rc=$?
wait $launcher; lrc=$?
if [ $rc = 0 ] && [ $lrc = 0 ] && grep -q "4 of 4 runs finished; the launch is completed" <<<"$out"; then pass watch_returns_when_the_launch_ends
else fail watch_returns_when_the_launch_ends "watch exit $rc, launch exit $lrc: $out"; fi
# one statistic: watch's median ms of each run is run_summary's median_ms_per_step (what the
# table of make exp prints and the README queries)
shown=$("$BUILD/watch" "$TMP/duo.yaml" --db "$DB" --once | awk '$3 == "completed" {print $6}' | tr '\n' ' ')
stored=$(sqlite3 "$DB" "SELECT printf('%.1f', median_ms_per_step) FROM run_summary ORDER BY run_id" | tr '\n' ' ')
[ -n "$shown" ] && [ "$shown" = "$stored" ] && pass "watch_shows_the_tables_median ($shown)" ||
    fail watch_shows_the_tables_median "watch '$shown', run_summary '$stored'"
n=$(sqlite3 "$DB" "SELECT COUNT(*) FROM steps")
[ "$n" = 160 ] && pass "watch_disturbs_nothing (160 steps recorded)" || fail watch_disturbs_nothing "$n steps recorded, expected 160"
expect_error watch_unknown_launch "no launch 99" 2 "$BUILD/watch" --db "$DB" --launch 99 --once
expect_error watch_no_database "no run database there" 2 "$BUILD/watch" --db "$TMP/none.db" --once
