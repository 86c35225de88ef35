#!/usr/bin/env bash
# The run database as a user meets it (docs/database.md, README "Querying results"):
# after a quickstart launch (and one at tp = 2 for the communication queries), every query
# printed in README.md and docs/database.md runs and returns rows; the schema printed in
# docs/database.md is the one a new database gets; the comparison table of a chosen launch;
# a database locked by another process for seconds while a run trains loses nothing and
# stops nothing; run.db paths and experiment paths across every length limit (refused, naming the
# length and the limit, before anything is created).
source "$(dirname "$0")/lib.sh"
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$ROOT"
DB=$TMP/boost.db
SHRINK=(--set train.steps=6 --set train.val_every=3 --set train.warmup_steps=1 --set train.log_every=3
        --set data.cache_dir="$TMP/cache" --set run.db="$DB" --set run.checkpoint_dir="$TMP/ckpt")

if ! "$BUILD/exp" quickstart "${SHRINK[@]}" >"$TMP/q1.log" 2>&1; then fail quickstart_launch "$(tail -3 "$TMP/q1.log")"; exit 0; fi
if ! "$BUILD/exp" quickstart "${SHRINK[@]}" --set parallel.tp=2 >"$TMP/q2.log" 2>&1; then fail quickstart_tp2_launch "$(tail -3 "$TMP/q2.log")"; exit 0; fi
pass quickstart_launches
# a simulated launch (runs of kind `simulated`) for the queries of simulated runs
if ! "$BUILD/exp" ablation-btp --simulate cpu-local "${SHRINK[@]}" >"$TMP/s1.log" 2>&1; then fail simulated_launch "$(tail -3 "$TMP/s1.log")"; exit 0; fi

# ---- README: the sqlite3 commands of "Querying results" --------------------------------
# Each command runs with the test's database; a command that prints nothing fails.
awk '/^## Querying results/ {on=1} on && /^```sh/ {inb=1; next} inb && /^```/ {exit} inb {print}' README.md >"$TMP/readme.sh"
n=$(grep -c '^sqlite3' "$TMP/readme.sh")
{
    echo 'sqlite3() { local out; out=$(command sqlite3 "$@" 2>&1); if [ -z "$out" ] || grep -q "^Error\|^Parse error" <<<"$out"; then echo "NO ROWS: ${*: -1}"; fi; }'
    sed "s#runs/boost.db#$DB#g" "$TMP/readme.sh"
} >"$TMP/readme-run.sh"
out=$(bash "$TMP/readme-run.sh" 2>&1)
if [ "$n" -ge 4 ] && ! grep -q "NO ROWS" <<<"$out"; then pass "readme_queries_return_rows ($n)"
else fail readme_queries_return_rows "$n commands; $(grep -A2 'NO ROWS' <<<"$out" | head -4 | tr '\n' ' ')"; fi

# ---- docs/database.md: every ```sql block after "## Example queries" -------------------
awk '/^## Example queries/ {on=1} on && /^```sql/ {inb=1; next} inb && /^```/ {inb=0; print "-- end"; next} inb {print}' \
    docs/database.md >"$TMP/queries.sql"
nq=0; bad=""
stmt=""
while IFS= read -r line; do
    [ "$line" = "-- end" ] && continue
    stmt+="$line"$'\n'
    if [[ "$line" =~ \;[[:space:]]*$ ]]; then
        nq=$((nq + 1))
        res=$(sqlite3 "$DB" "$stmt" 2>&1)
        if [ -z "$res" ] || grep -q "^Error\|^Parse error" <<<"$res"; then bad+="[$(head -c 120 <<<"$stmt" | tr '\n' ' ')... -> ${res:-no rows}] "; fi
        stmt=""
    fi
done <"$TMP/queries.sql"
if [ "$nq" -ge 10 ] && [ -z "$bad" ]; then pass "docs_database_queries_return_rows ($nq)"
else fail docs_database_queries_return_rows "$nq queries; $bad"; fi

# ---- docs/database.md: the make compare commands of "Comparing launches and exporting" --------
# Each runs against the test's database (launch 1: quickstart, launch 2: tp = 2) and must exit 0
# with output; the first shows parallel.tp, the key the two launches differ on, as a column.
awk '/^## Comparing launches/ {on=1} on && /^```sh/ {inb=1; next} inb && /^```/ {exit} inb {print}' docs/database.md |
    sed 's/ *#.*$//' >"$TMP/compare.sh"
nc=0; bad=""; first=""
while IFS= read -r cmd; do
    [ -z "$cmd" ] && continue
    nc=$((nc + 1))
    case "$cmd" in
        "make compare"*) out=$(eval "make -s --no-print-directory ${cmd#make } DB='$DB'" 2>&1) ;;
        "build/exp "*) out=$(eval "$BUILD/${cmd#build/} --set run.db='$DB'" 2>&1) ;;
        *) out="unknown command"; false ;;
    esac
    rc=$?
    [ -z "$first" ] && first=$out
    if [ $rc -ne 0 ] || [ -z "$out" ]; then bad+="[$cmd -> exit $rc: $(head -2 <<<"$out" | tr '\n' ' ')] "; fi
done <"$TMP/compare.sh"
if [ "$nc" -ge 4 ] && [ -z "$bad" ] && head -1 <<<"$first" | grep -q "parallel.tp"; then pass "docs_compare_commands_run ($nc)"
else fail docs_compare_commands_run "$nc commands; $bad $(head -2 <<<"$first")"; fi
csv=$("$BUILD/exp" --compare --db "$DB" --launch 1 --launch 2 --csv)
if [ "$(wc -l <<<"$csv")" = 3 ] && [ "$(awk -F, 'NR == 2 {print $6}' <<<"$csv")" = 1 ] &&
   [ "$(awk -F, 'NR == 3 {print $6}' <<<"$csv")" = 2 ]; then pass compare_csv_rows_and_keys
else fail compare_csv_rows_and_keys "$(head -3 <<<"$csv")"; fi
# each run counts once, and every run, format and switch given is one there is: never ignored
r1=$(sqlite3 "$DB" "SELECT min(id) FROM runs WHERE launch_id = 1")
expect_error compare_run_named_twice "run $r1 is compared twice" 2 make -s --no-print-directory compare RUNS="$r1 $r1" DB="$DB"
expect_error compare_run_also_in_a_launch "run $r1 is compared twice" 2 "$BUILD/exp" --compare --db "$DB" --launch 1 --run "$r1"
expect_error compare_unknown_run "no run 999 in $DB" 2 "$BUILD/exp" --compare --db "$DB" --run 999
expect_error compare_unknown_format "exp --format: expected one of table, csv, json, got 'xml'" 2 \
    make -s --no-print-directory compare LAUNCH=1 FORMAT=xml DB="$DB"
expect_error compare_switch_not_0_or_1 "STEPS=yes: expected 1 or 0 (or leave it unset)" 2 \
    make -s --no-print-directory compare LAUNCH=1 FORMAT=csv STEPS=yes DB="$DB"
# the view equals the printed table: median ms/step of launch 2's run as printed and as stored
printed=$("$BUILD/exp" quickstart --summary --launch 2 --set run.db="$DB" | awk '$1 == "default" {print $6}')
stored=$(sqlite3 "$DB" "SELECT printf('%.1f', median_ms_per_step) FROM run_summary WHERE launch_id = 2")
[ -n "$printed" ] && [ "$printed" = "$stored" ] && pass "run_summary_median_is_the_table ($printed ms)" ||
    fail run_summary_median_is_the_table "printed '$printed', view '$stored'"
# JSON keeps the configuration's types: parallel.tp is the number 2, not the string "2"
json=$("$BUILD/exp" --compare --db "$DB" --launch 1 --launch 2 --json)
grep -q '"parallel.tp": 2,\? \?' <<<"$json" && ! grep -q '"parallel.tp": "' <<<"$json" && pass compare_json_config_values_typed ||
    fail compare_json_config_values_typed "$(grep -o '"config": {[^}]*}' <<<"$json" | head -2 | tr '\n' ' ')"
# STEPS=1 alone: the step series as CSV (no usage text)
out=$(make -s --no-print-directory compare RUNS="1 2" STEPS=1 DB="$DB" 2>&1); rc=$?
[ $rc = 0 ] && [ "$(head -1 <<<"$out" | cut -d, -f1-4)" = "run_id,launch_id,variant,step" ] && [ "$(wc -l <<<"$out")" = 13 ] &&
    pass compare_steps_alone_is_csv || fail compare_steps_alone_is_csv "exit $rc: $(head -3 <<<"$out" | tr '\n' ' ')"
# the verdicts: one launch against the other, one run each: too few runs, said in JSON and text
v=$("$BUILD/exp" --compare --db "$DB" --launch 1 --launch 2 --verdicts --json)
vt=$("$BUILD/exp" --compare --db "$DB" --launch 1 --launch 2 | tail -2)
if grep -q '"scope": "launch 2 against launch 1"' <<<"$v" && grep -q '"verdict": "too few runs"' <<<"$v" &&
   grep -q '"n_a": 1, "n_b": 1, "min_runs": 4' <<<"$v" && grep -q "launch 2 against launch 1: default: 1 and 1 run: no verdict possible" <<<"$vt"
then pass compare_verdicts_too_few_runs; else fail compare_verdicts_too_few_runs "$v / $vt"; fi
# waiting apart from moving data: every collective of the tp = 2 run has its wait, 0 <= wait <= seconds
w=$(sqlite3 "$DB" "SELECT COUNT(*), SUM(wait_seconds IS NULL), SUM(wait_seconds < 0 OR wait_seconds > seconds + 1e-9) FROM comm
                   WHERE run_id = (SELECT id FROM runs WHERE launch_id = 2) AND kind NOT IN ('send', 'recv')")
[ "${w%%|*}" -gt 0 ] && [ "${w#*|}" = "0|0" ] && pass "comm_wait_measured_and_bounded ($w)" || fail comm_wait_measured_and_bounded "rows|null|out of bounds: $w"
# the peak's load and note: a note exactly when the load was above a quarter of the cores; a run carries its launch's
cores=$(nproc)
p=$(sqlite3 "$DB" "SELECT SUM((l.peak_note IS NULL) = (l.peak_load_1m IS NOT NULL AND l.peak_load_1m <= 0.25 * $cores)),
                   SUM(r.peak_note IS l.peak_note AND r.peak_load_1m IS l.peak_load_1m), COUNT(*)
                   FROM runs r JOIN launches l ON l.id = r.launch_id WHERE l.kind = 'measured'")
[ "${p##*|}" -ge 2 ] && [ "$p" = "${p##*|}|${p##*|}|${p##*|}" ] && pass "peak_note_follows_the_load ($p)" || fail peak_note_follows_the_load "$p"
bools=$(sqlite3 "$DB" "SELECT DISTINCT value FROM config_diff WHERE key LIKE 'boost.%' ORDER BY value")
[ "$bools" = $'false\ntrue' ] && pass config_diff_booleans_as_in_the_manifest || fail config_diff_booleans_as_in_the_manifest "'$bools'"

# ---- the printed schema is the real one ------------------------------------------------
awk '/^## Schema/ {on=1} on && /^```sql/ {inb=1; next} inb && /^```/ {exit} inb {print}' docs/database.md >"$TMP/doc-schema.sql"
sqlite3 "$DB" .schema >"$TMP/real-schema.sql"
if diff -q <(tr -s ' \n' ' ' <"$TMP/doc-schema.sql") <(tr -s ' \n' ' ' <"$TMP/real-schema.sql") >/dev/null; then pass docs_schema_is_the_real_one
else fail docs_schema_is_the_real_one "$(diff "$TMP/doc-schema.sql" "$TMP/real-schema.sql" | head -4 | tr '\n' ' ')"; fi

# ---- the comparison table of a chosen launch -------------------------------------------
out=$("$BUILD/exp" quickstart --summary --launch 1 --set run.db="$DB" 2>&1)
out2=$("$BUILD/exp" quickstart --summary --set run.db="$DB" 2>&1)
if grep -q "quickstart — launch 1 " <<<"$out" && grep -q "quickstart — launch 2 " <<<"$out2" &&
   grep -qE '^default +1/1 +6 ' <<<"$out2"; then pass summary_of_a_chosen_launch
else fail summary_of_a_chosen_launch "$(head -3 <<<"$out") / $(head -3 <<<"$out2")"; fi
expect_error summary_unknown_launch "no launch 99" 2 "$BUILD/exp" quickstart --summary --launch 99 --set run.db="$DB"

# ---- a database locked by another process while a run trains ----------------------------
# The lock is taken once the run has logged steps and held for 4 s; the run keeps training,
# its rows wait in memory, and it ends completed with every step recorded.
"$BUILD/train" experiments/quickstart.yaml "${SHRINK[@]}" --set train.steps=120 --set train.val_every=0 \
    --set run.flush_every=1 --set model.n_layers=2 --set model.d_model=64 --set model.d_ff=128 \
    --set model.rank_attn=16 --set model.rank_mlp=16 >"$TMP/busy.log" 2>&1 &
trainer=$!
for _ in $(seq 1 600); do
    [ "$(sqlite3 "$DB" "SELECT count(*) FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.pid = $trainer" 2>/dev/null)" -ge 2 ] 2>/dev/null && break
    sleep 0.05
done
(echo "BEGIN IMMEDIATE;"; sleep 4; echo "COMMIT;") | sqlite3 "$DB" &
locker=$!
wait $trainer; rc=$?
wait $locker
row=$(sqlite3 "$DB" "SELECT r.status || ' ' || COUNT(s.step) || ' ' || MAX(s.step) FROM runs r JOIN steps s ON s.run_id = r.id WHERE r.pid = $trainer")
if [ $rc = 0 ] && [ "$row" = "completed 120 120" ]; then
    if grep -q "database is locked" "$TMP/busy.log"; then pass locked_database_loses_nothing
    else pass "locked_database_loses_nothing (the run ended before the lock: nothing to wait for)"; fi
else fail locked_database_loses_nothing "exit $rc, '$row': $(grep -E 'warning|error' "$TMP/busy.log" | head -3)"; fi

# ---- runs made by hand: the summary without a launch holds measured runs only ------------------
# One run trained by hand (build/train, no launch), then the same experiment priced by
# build/simulate --record on every shipped GPU profile (runs of kind `simulated`, each newer
# than the trained one): the summary of runs made by hand still shows the trained run's step.
HDB=$TMP/hand.db
if "$BUILD/train" experiments/quickstart.yaml "${SHRINK[@]}" --set run.db="$HDB" >"$TMP/hand.log" 2>&1; then
    bad=0; tried=0
    want=$(sqlite3 "$HDB" "SELECT COUNT(*) FROM runs WHERE kind = 'measured'")
    for hw in experiments/hardware/*.yaml; do
        h=$(basename "$hw" .yaml)
        [ "$h" = cpu-local ] && continue
        tried=$((tried + 1))
        "$BUILD/simulate" experiments/quickstart.yaml --hardware "$h" --record --set run.db="$HDB" >"$TMP/hsim.log" 2>&1 ||
            { bad=$((bad + 1)); echo "  simulate on $h: $(tail -1 "$TMP/hsim.log")"; continue; }
        out=$("$BUILD/exp" quickstart --summary --set run.db="$HDB" 2>&1)
        row=$(awk '$1 == "default"' <<<"$out")
        meas=$(sqlite3 "$HDB" "SELECT CAST(ROUND(tokens_per_s) AS INTEGER) FROM run_summary WHERE kind = 'measured'")
        sim=$(sqlite3 "$HDB" "SELECT CAST(ROUND(tokens_per_s) AS INTEGER) FROM run_summary WHERE kind = 'simulated' ORDER BY run_id DESC LIMIT 1")
        { grep -qw -- "$meas" <<<"$row" && ! grep -qw -- "$sim" <<<"$row"; } ||
            { bad=$((bad + 1)); echo "  after a simulated run on $h ($sim tokens/s): the row '$row', the trained run's $meas tokens/s"; }
    done
    if [ "$want" = 1 ] && [ $tried -ge 3 ] && [ $bad -eq 0 ]; then pass "summary_by_hand_measured_only ($tried simulated runs added)"
    else fail summary_by_hand_measured_only "$bad of $tried (measured runs: $want)"; fi
else fail summary_by_hand_measured_only "build/train failed: $(tail -2 "$TMP/hand.log")"; fi

# ---- reading commands leave no database behind --------------------------------------------------
# --summary and --compare on a database that is not there (a missing folder or file, an empty
# file, a directory, a FIFO): exit 2 naming it, and nothing created or written.
bad=0; tried=0
mkdir -p "$TMP/rd/dir"; : > "$TMP/rd/empty.db"; mkfifo "$TMP/rd/fifo.db"
for p in "$TMP/rd/typo/x.db" "$TMP/rd/none.db" "$TMP/rd/empty.db" "$TMP/rd/dir" "$TMP/rd/fifo.db"; do
    for how in summary summary_csv compare_launch compare_name; do
        tried=$((tried + 1))
        before=$(cd "$TMP/rd" && find . -printf '%p %s\n' | sort)
        case $how in
            summary) cmd=("$BUILD/exp" quickstart --summary --set run.db="$p") ;;
            summary_csv) cmd=("$BUILD/exp" quickstart --summary --csv --set run.db="$p") ;;
            compare_launch) cmd=("$BUILD/exp" --compare --db "$p" --launch 1) ;;
            compare_name) cmd=("$BUILD/exp" --compare quickstart --db "$p") ;;
        esac
        out=$(timeout 30 "${cmd[@]}" 2>&1); rc=$?
        after=$(cd "$TMP/rd" && find . -printf '%p %s\n' | sort)
        if [ $rc -ne 2 ] || ! grep -q "no run database there" <<<"$out" || [ "$before" != "$after" ]; then
            bad=$((bad + 1)); echo "  $how on $p: exit $rc: $(head -1 <<<"$out")$([ "$before" != "$after" ] && echo '; files changed')"
        fi
    done
done
if [ $bad -eq 0 ]; then pass "reading_commands_create_no_database ($tried cases)"; else fail reading_commands_create_no_database "$bad of $tried"; fi

# ---- run.db paths across the length limits: taken whole, or refused before anything is created --
# SQLite opens a database whose absolute path (from the working folder) leaves room for its
# -journal file in 512 bytes: 504; a folder or file name holds NAME_MAX (255) bytes. Generated:
# absolute and relative paths at each limit -1, 0, +1 and lengths between 500 and 5000 (those
# above 1023 meet the key's own limit), and names of 254..256 bytes. Each one either records a
# run there, or exits 2 naming run.db (its length) with nothing created; never SQLite's "unable
# to open database file" after folders were made.
LIMIT=504
HW=$ROOT/experiments/hardware/a100-80gb-node4.yaml
path_of_len() {   # BASE LEN: BASE/ddd.../x.db of LEN bytes, a folder every 200 bytes
    local p=$1/ n=$2
    while [ ${#p} -lt $((n - 5)) ]; do p=${p}d; [ $(( ${#p} % 200 )) = 0 ] && p=$p/; done
    while [ ${#p} -lt $((n - 4)) ]; do p=${p}e; done
    printf '%s' "${p}x.db"
}
bad=0; tried=0
mkdir -p "$TMP/len"
for rel in 0 1; do
    for L in $((LIMIT - 1)) $LIMIT $((LIMIT + 1)) 500 511 512 513 700 1022 1023 1024 1025 2000 4095 4096 4097 5000; do
        tried=$((tried + 1))
        top=$TMP/len/t$tried
        p=$(path_of_len "$top" "$L")
        abs=$L
        if [ $rel = 1 ]; then p=${p#"$TMP/len/"}; abs=$(( ${#TMP} + 5 + ${#p} )); fi   # from $TMP/len
        out=$(cd "$TMP/len" && timeout 30 "$BUILD/simulate" "$ROOT/experiments/quickstart.yaml" --hardware "$HW" --record \
              --set run.db="$p" 2>&1); rc=$?
        if [ $abs -le $LIMIT ]; then
            [ $rc = 0 ] && (cd "$TMP/len" && [ -s "$p" ]) || { bad=$((bad + 1)); echo "  $abs bytes ($([ $rel = 1 ] && echo relative || echo absolute)): exit $rc: $(grep error: <<<"$out" | cut -c1-200)"; }
        elif [ $rc != 2 ] || ! grep -q "^error: .*run.db" <<<"$out" || [ -e "$top" ] || grep -q "unable to open" <<<"$out" ||
             { [ ${#p} -lt 1024 ] && ! grep -q "is ${#p} bytes long, $abs as the absolute path" <<<"$out"; }; then
            bad=$((bad + 1)); echo "  $abs bytes ($([ $rel = 1 ] && echo relative || echo absolute)): exit $rc, $([ -e "$top" ] && echo 'folders left behind, ')$(grep error: <<<"$out" | cut -c1-200)"
        fi
        rm -rf "$top"
    done
done
for n in 254 255 256 300; do
    tried=$((tried + 1))
    top=$TMP/len/n$n
    name=$(printf 'n%.0s' $(seq "$n"))
    out=$(timeout 30 "$BUILD/simulate" experiments/quickstart.yaml --hardware "$HW" --record --set run.db="$top/$name/x.db" 2>&1); rc=$?
    if [ $n -le 255 ]; then [ $rc = 0 ] || { bad=$((bad + 1)); echo "  a name of $n bytes: exit $rc: $(grep error: <<<"$out" | cut -c1-200)"; }
    elif [ $rc != 2 ] || ! grep -q "a folder or file name of $n bytes" <<<"$out" || [ -e "$top" ]; then
        bad=$((bad + 1)); echo "  a name of $n bytes: exit $rc$([ -e "$top" ] && echo ', folders left behind'): $(grep error: <<<"$out" | cut -c1-200)"
    fi
    rm -rf "$top"
done
if [ $bad -eq 0 ]; then pass "run_db_path_lengths ($tried generated paths)"; else fail run_db_path_lengths "$bad of $tried"; fi
# the same class in the tools' own path buffers: an experiment path of any length to exp and
# watch is taken or refused as input (exit 2, its length), never an internal error, never cut short
bad=0; tried=0
for L in 1000 1023 1024 1025 1100 4096 5000; do
    p=$(path_of_len "$TMP/len/e" "$L"); p=${p%x.db}x.yaml
    for tool in "exp" "watch --once"; do
        tried=$((tried + 1))
        out=$(timeout 30 "$BUILD"/$tool "$p" 2>&1); rc=$?
        [ $rc = 2 ] && grep -q "^error: " <<<"$out" && ! grep -q "^fatal" <<<"$out" ||
            { bad=$((bad + 1)); echo "  $tool on a $L-byte path: exit $rc: $(head -1 <<<"$out" | cut -c1-200)"; }
    done
done
if [ $bad -eq 0 ]; then pass "long_experiment_paths_refused_as_input ($tried generated paths)"; else fail long_experiment_paths_refused_as_input "$bad of $tried"; fi
