#!/usr/bin/env bash
# Launches (make exp -> build/exp): the launch row (manifest text and hash, overrides,
# REPEAT, load, one sgemm peak), interleaved repeats, a launch interrupted by Ctrl-C and
# resumed with its own overrides, a failure on rank 1 and SIGTERM to mpirun recorded, a
# resume with a new SET warned about in the comparison, the per-variant configuration
# printed as differences, did-you-mean for an unknown experiment, any number of --set,
# --help of the tools, build/bench_gemm's two modes on a tiny step (the tables' structure, no
# timings) and its argument errors, a missing mpirun reported as an environment error, the words
# of LAUNCHER= and LAUNCHER_ARGS= reaching the launcher as given, and the pre-flight (a cuda
# variant without a device, a variant too big for this machine) refusing before any rank starts,
# with the launch recorded; exp's options that exclude each other refused naming both, and a
# refused launch leaving no database behind.
source "$(dirname "$0")/lib.sh"
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$ROOT"
DB=$TMP/runs.db
q() { sqlite3 "$DB" "$1"; }
duo_manifest "$TMP/duo.yaml" "$DB"

# ---- tools answer --help; unknown names get a suggestion; no limit on --set --------------
for tool in exp train info prepare simulate calibrate bench bench_comm bench_gemm attention_bench; do
    out=$("$BUILD/$tool" --help 2>/dev/null); rc=$?
    if [ $rc = 0 ] && grep -q "usage" <<<"$out"; then pass "${tool}_help"; else fail "${tool}_help" "exit $rc: $(head -2 <<<"$out")"; fi
done
# ---- exp's options: through the one option parser; choices that exclude each other refused ----
# Generated: every pair of options that exclude each other, in both orders (with what each needs
# beside it), exits 2 naming both, and creates no database; every option that takes one value
# given twice exits 2; the repeatable ones keep every value in order (--set: the last wins).
excl_pairs=(
    "--csv|--json" "--csv|--format=csv" "--json|--format=json" "--csv|--format=table" "--steps|--verdicts"
    "--compare|--resume" "--compare|--dry-run" "--compare|--summary" "--compare|--simulate=cpu-local" "--compare|--variant=a"
    "--compare|--repeat=2" "--compare|--measure-peak" "--compare|--allow-change=train.lr" "--compare|--launcher=mpirun"
    "--compare|--launcher-arg=-x" "--compare|--hostfile=h"
    "--resume|--summary" "--resume|--dry-run" "--summary|--dry-run" "--repeat=2|--resume" "--repeat=1|--summary"
    "--simulate=cpu-local|--resume" "--simulate=cpu-local|--summary" "--simulate=cpu-local|--repeat=2"
    "--launcher=mpirun|--summary" "--launcher-arg=-x|--summary" "--hostfile=h|--summary"
    "--launcher=mpirun|--simulate=cpu-local" "--launcher-arg=-x|--simulate=cpu-local" "--hostfile=h|--simulate=cpu-local"
    "--measure-peak|--resume" "--measure-peak|--summary" "--measure-peak|--dry-run" "--measure-peak|--simulate=cpu-local")
bad=0; tried=0
for pair in "${excl_pairs[@]}"; do
    x=${pair%%|*}; y=${pair#*|}
    for order in xy yx; do
        tried=$((tried + 1))
        if [ $order = xy ]; then args=("$x" "$y"); else args=("$y" "$x"); fi
        # what each needs beside it, so that only the pair itself is wrong
        extra=(); case "$x $y" in *--csv*|*--json*|*--format*|*--steps*|*--verdicts*) extra=(--summary) ;; esac
        out=$("$BUILD/exp" "$TMP/duo.yaml" "${args[@]}" "${extra[@]}" --set run.db="$TMP/excl/x.db" 2>&1); rc=$?
        xn=${x%%=*}; yn=${y%%=*}
        if [ $rc != 2 ] || ! grep -qE "^error: exp: ($xn and $yn|$yn and $xn) exclude each other" <<<"$out" || [ -e "$TMP/excl" ]; then
            bad=$((bad + 1)); echo "  exp ${args[*]} ${extra[*]}: exit $rc: $(head -1 <<<"$out")"
        fi
    done
done
# every option that takes one value (exp's own table), given twice
while IFS=$'\t' read -r opt kind type _; do
    [ "$kind" = value ] || continue
    tried=$((tried + 1))
    case $type in int32|int64) v=2 ;; enum) v=csv ;; *) v=x ;; esac
    out=$(BOOST_OPTIONS=values "$BUILD/exp" "$opt" "$v" "$opt=$v" 2>&1); rc=$?
    [ $rc = 2 ] && grep -q "exp $opt is given twice" <<<"$out" || { bad=$((bad + 1)); echo "  exp $opt twice: exit $rc: $(head -1 <<<"$out")"; }
done < <(BOOST_OPTIONS=list "$BUILD/exp")
for opt in set allow-change launcher launcher-arg launch run; do
    tried=$((tried + 1))
    case $opt in launch|run) a=3 b=1 ;; *) a=k=a b=k=b ;; esac
    got=$(BOOST_OPTIONS=values "$BUILD/exp" --$opt "$a" --$opt="$b" --$opt "$a" | sed -n "s/^--$opt\t//p" | tr '\037' ' ')
    [ "$got" = "$a $b $a" ] || { bad=$((bad + 1)); echo "  exp --$opt three times: '$got'"; }
done
if [ $bad -eq 0 ]; then pass "exp_options_exclusive_and_repeats ($tried generated cases)"; else fail exp_options_exclusive_and_repeats "$bad of $tried"; fi
# the last of --set k=a --set k=b is the value (the dry run prints it)
out=$("$BUILD/exp" "$TMP/duo.yaml" --dry-run --variant a --set train.lr=1e-3 --set train.lr=2e-3 2>&1)
grep -qE "train\.lr +.*0\.002" <<<"$out" && ! grep -qE "train\.lr +.*0\.001\b" <<<"$out" && pass exp_set_last_wins ||
    fail exp_set_last_wins "$(grep 'train.lr' <<<"$out" | head -2)"

# ---- a refused launch leaves no database behind ------------------------------------------------
# Generated refusals of a launch whose run.db is not there yet (a variant that records elsewhere,
# chosen or not; no launcher for a tp=2 variant; an unknown variant; a resume of nothing): exit 2,
# and neither the database nor its folder exists afterwards.
bad=0; tried=0
mkdir -p "$TMP/nolauncher"
for how in variant_db variant_db_chosen no_launcher unknown_variant resume_nothing; do
    tried=$((tried + 1))
    d=$TMP/nodb/$how; m=$TMP/nodb_m/$how/duo.yaml
    mkdir -p "$(dirname "$m")"; duo_manifest "$m" "$d/sub/runs.db"
    case $how in
        variant_db|variant_db_chosen) sed -i "s#  b: {parallel.tp: 2}#  b: {parallel.tp: 2, run.db: $d/other/b.db}#" "$m" ;;
    esac
    case $how in
        variant_db) cmd=("$BUILD/exp" "$m"); why="variant b sets run.db" ;;
        variant_db_chosen) cmd=("$BUILD/exp" "$m" --variant b); why="variant b sets run.db" ;;
        no_launcher) cmd=(env PATH="$TMP/nolauncher" "$BUILD/exp" "$m" --variant b); why="mpirun is not on PATH" ;;
        unknown_variant) cmd=("$BUILD/exp" "$m" --variant c); why="no variant 'c'" ;;
        resume_nothing) cmd=("$BUILD/exp" "$m" --resume); why="no run database there" ;;
    esac
    out=$(timeout 60 "${cmd[@]}" 2>&1); rc=$?
    if [ $rc != 2 ] || [ -e "$d" ] || ! grep -q "^error: .*$why" <<<"$out"; then bad=$((bad + 1)); echo "  $how: exit $rc$([ -e "$d" ] && echo ", left $(cd "$d" && find . -type f | tr '\n' ' ')"): $(grep '^error' <<<"$out" | head -1)"; fi
done
if [ $bad -eq 0 ]; then pass "refused_launch_creates_no_database ($tried generated refusals)"; else fail refused_launch_creates_no_database "$bad of $tried"; fi

# build/bench_gemm, both modes on a tiny step: the header (CPU, threads, load before and
# after), one row per distinct GEMM with every column, the totals; timings are not asserted
gemm_table() {   # NAME CELLS LINE COLUMN ARGS...: CELLS cells per table line; a mode's own line and column
    local name=$1 cells=$2 line=$3 column=$4; shift 4
    local out rc n rows bad
    out=$("$BUILD/bench_gemm" --preset tiny --seq 16 --batch 2 --threads 1 --reps 1 "$@" 2>&1); rc=$?
    n=$(sed -n 's/.* | \([0-9]*\) distinct GEMMs of one step.*/\1/p' <<<"$out")
    rows=$(grep -cE '^\| +(forward|backward|recompute|optimizer|pipeline|other) ' <<<"$out")
    bad=$(grep '^|' <<<"$out" | awk -F'|' -v c=$((cells + 2)) 'NF != c' | wc -l)
    if [ $rc = 0 ] && grep -qE '^bench_gemm \| .* \| .+, 1 threads \| preset tiny, linear cola, batch 2 x seq 16 = 32 tokens' <<<"$out" &&
       grep -qE '^load before: [0-9.]+ ' <<<"$out" && grep -qE '^load after: [0-9.]+ ' <<<"$out" && grep -qE "$line" <<<"$out" &&
       grep -qE "^\\|.*\\| +$column \\|" <<<"$out" &&
       [ -n "$n" ] && [ "$n" -gt 0 ] && [ "$rows" = "$n" ] && [ "$bad" = 0 ] && [ "$(grep -c '^total' <<<"$out")" = 1 ]; then
        pass "$name"
    else fail "$name" "exit $rc, $n distinct GEMMs, $rows rows, $bad lines without $cells cells: $(head -3 <<<"$out" | tr '\n' ' ')"; fi
}
gemm_table bench_gemm_fp32_table 19 '^fp32 GEMMs: (oneDNN|OpenBLAS|BLIS|MKL|per shape,) ' '%ref'
gemm_table bench_gemm_bf16_table 18 '^bf16 path taken by auto: ' 'max rel err' --bf16
expect_error bench_gemm_unknown_argument "bench_gemm: unknown option '--bogus'" 2 "$BUILD/bench_gemm" --bogus
expect_error bench_gemm_malformed_value "bench_gemm --reps: expected an integer in [1, 1000000], got 'x'" 2 "$BUILD/bench_gemm" --reps x
expect_error bench_gemm_hint "hint: bench_gemm --help lists the options" 2 "$BUILD/bench_gemm" --seq
# a comma list of integers with a value twice is refused before any measurement, whichever tool
# and option reads it (config/options.c opt_int_list), at a generated place in the list
for spec in "bench_attention seq 1 4096" "bench_attention batch 1 64" "calibrate ranks 2 16"; do
    read -r tool opt lo hi <<<"$spec"
    for trial in 1 2; do
        n=$((2 + RANDOM % 2)); vals=(); v=$lo   # with the repeat at most 4: every list option takes that many
        for ((i = 0; i < n; i++)); do vals+=("$v"); v=$((v + 1 + RANDOM % 3)); [ $v -gt "$hi" ] && v=$hi; done
        dup=${vals[$((RANDOM % n))]}; at=$((RANDOM % (n + 1)))
        full=$( (IFS=,; a=("${vals[@]:0:$at}" "$dup" "${vals[@]:$at}"); echo "${a[*]}") )
        expect_error "${tool}_${opt}_listed_twice_$trial" "listed twice" 2 timeout 20 "$BUILD/$tool" --$opt "$full"
    done
done
expect_error exp_did_you_mean "did you mean 'quickstart'?" 2 "$BUILD/exp" quickstrat
sets=(); for i in $(seq 1 80); do sets+=(--set "train.log_every=$i"); done
out=$("$BUILD/exp" quickstart --dry-run "${sets[@]}" 2>&1); rc=$?
if [ $rc = 0 ] && [ "$(grep -o -- '--set train.log_every' <<<"$out" | wc -l)" = 80 ]; then pass exp_80_set_options
else fail exp_80_set_options "exit $rc: $(tail -2 <<<"$out")"; fi
# the first variant's whole configuration, then only what differs
out=$("$BUILD/exp" "$TMP/duo.yaml" --dry-run 2>&1)
if [ "$(grep -c '^model.d_model ' <<<"$out")" = 1 ] && grep -q '^configuration: as a except' <<<"$out" &&
   grep -qE '^  parallel\.tp +2 +\(a: 1\)' <<<"$out" && [ "$(grep -c '^  ' <<<"$out")" -le 3 ]; then pass config_dump_shows_differences
else fail config_dump_shows_differences "$(grep -A3 'configuration:' <<<"$out" | head -4 | tr '\n' ' ')"; fi

# ---- REPEAT=2: one launch, interleaved runs, one peak ---------------------------------------
out=$("$BUILD/exp" "$TMP/duo.yaml" --repeat 2 --set train.seed=7 2>&1); rc=$?
order=$(q "SELECT group_concat(variant || repeat_index, ' ') FROM (SELECT variant, repeat_index FROM runs WHERE launch_id=1 ORDER BY id)")
row=$(q "SELECT repeat || '|' || overrides || '|' || (load_avg_1m IS NOT NULL) || '|' || (peak_gflops > 0) || '|' || status FROM launches WHERE id=1")
text_ok=$([ "$(q "SELECT manifest_text = CAST(readfile('$TMP/duo.yaml') AS TEXT) FROM launches WHERE id=1")" = 1 ] && echo yes)
sha_ok=$([ "$(q "SELECT manifest_sha256 FROM launches WHERE id=1")" = "$(sha256sum "$TMP/duo.yaml" | cut -d' ' -f1)" ] && echo yes)
peaks=$(q "SELECT COUNT(DISTINCT r.peak_gflops = l.peak_gflops) || (MIN(r.peak_gflops = l.peak_gflops)) FROM runs r JOIN launches l ON l.id = r.launch_id WHERE l.id=1")
if [ $rc = 0 ] && [ "$order" = "a0 b0 a1 b1" ] && [ "$row" = '2|["train.seed=7"]|1|1|completed' ] && [ "$text_ok" = yes ] &&
   [ "$sha_ok" = yes ] && [ "$peaks" = 11 ]; then pass repeat_interleaved_one_launch_one_peak
else fail repeat_interleaved_one_launch_one_peak "exit $rc, order '$order', launch '$row', text $text_ok, sha $sha_ok, peaks '$peaks'"; fi
if grep -qE '^a +2/2 +6 ' <<<"$out" && grep -qE '^b +2/2 +6 .* runs ' <<<"$out" && grep -q 'make figures\|plot_losses.py duo' <<<"$out" &&
   grep -q 'runs (runs.id):  1 2 3 4' <<<"$out"; then pass repeat_table_median_spread_and_pointers
else fail repeat_table_median_spread_and_pointers "$(grep -E '^(a|b) ' <<<"$out" | tr '\n' ' ')"; fi

# a launch prints a few lines of the configuration, and a command that prints all of it
cmd=$(sed -n 's/^  the whole configuration: //p' <<<"$out" | head -1)
full=$(eval "$cmd" 2>&1)
if [ -n "$cmd" ] && ! grep -q '^model.d_model ' <<<"$out" && [ "$(grep -c '^configuration: cola, 2 layers, d_model 32' <<<"$out")" = 1 ] &&
   [ "$(grep -c '^model.d_model  *32$' <<<"$full")" = 1 ] && grep -q '^train.seed  *7$' <<<"$full"; then pass launch_prints_a_short_configuration
else fail launch_prints_a_short_configuration "command '$cmd': $(head -2 <<<"$full" | tr '\n' ' ')"; fi

# ---- Ctrl-C: the run records 'interrupted', the launch stops, RESUME=1 finishes it --------
# (BOOST_FAULT sends SIGINT to the process group after step 4 of the first run: what a
# terminal's Ctrl-C does to make, exp and train)
BOOST_FAULT=signal=0@4:INT:group setsid "$BUILD/exp" "$TMP/duo.yaml" --repeat 2 --set train.lr=2e-3 >"$TMP/int.log" 2>&1; rc=$?
L=$(q "SELECT MAX(id) FROM launches")
st=$(q "SELECT status FROM launches WHERE id=$L")
runs=$(q "SELECT group_concat(variant || ':' || status, ' ') FROM runs WHERE launch_id=$L")
if [ $rc = 130 ] && [ "$st" = interrupted ] && [ "$runs" = "a:interrupted" ] &&
   grep -q "interrupted: resume with .*--resume --launch $L" "$TMP/int.log"; then pass ctrl_c_interrupts_the_launch
else fail ctrl_c_interrupts_the_launch "exit $rc, launch '$st', runs '$runs'"; fi
# the table of a launch without a completed run says so in words (no "spread: -.")
if grep -q "spread: none (no completed run has timed steps)" "$TMP/int.log" && ! grep -q "spread: -" "$TMP/int.log"
then pass interrupted_table_says_no_spread; else fail interrupted_table_says_no_spread "$(grep 'spread' "$TMP/int.log")"; fi
"$BUILD/exp" "$TMP/duo.yaml" --resume >"$TMP/res.log" 2>&1; rc=$?
runs=$(q "SELECT group_concat(variant || repeat_index || ':' || status || ':' || resumed_count, ' ') FROM runs WHERE launch_id=$L")
ov=$(q "SELECT COUNT(*) FROM runs WHERE launch_id=$L AND overrides = '[\"train.lr=2e-3\"]'")
if [ $rc = 0 ] && [ "$runs" = "a0:completed:1 b0:completed:0 a1:completed:0 b1:completed:0" ] && [ "$ov" = 4 ] &&
   grep -q "resumed duo.a" "$TMP/res.log"; then pass resume_finishes_the_launch_with_its_overrides
else fail resume_finishes_the_launch_with_its_overrides "exit $rc, runs '$runs', runs with the launch's overrides $ov"; fi
out=$("$BUILD/exp" "$TMP/duo.yaml" --resume --launch "$L" 2>&1); rc=$?
if [ $rc = 0 ] && [ "$(grep -c 'already completed its 6 steps: nothing to do' <<<"$out")" = 4 ]; then pass resume_of_completed_launch_is_noop
else fail resume_of_completed_launch_is_noop "exit $rc: $(grep '==' <<<"$out" | head -2)"; fi

# ---- a resume with a new SET: the comparison warns about the differing key -----------------
# (a longer run stretches the schedule: a change of the run's meaning, allowed explicitly)
out=$("$BUILD/exp" "$TMP/duo.yaml" --resume --launch 1 --variant a --set train.steps=9 --allow-change train.steps 2>&1); rc=$?
if [ $rc = 0 ] && grep -q "warning: the compared runs differ on train.steps beyond their variants' overrides" <<<"$out"; then
    pass comparison_warns_about_keys_beyond_overrides
else fail comparison_warns_about_keys_beyond_overrides "exit $rc: $(grep -iE 'warning|error' <<<"$out" | head -3)"; fi

# ---- a failure on rank 1, SIGTERM to mpirun: both recorded ---------------------------------
BOOST_FAULT=fail=1@2 "$BUILD/exp" "$TMP/duo.yaml" --variant b >"$TMP/f.log" 2>&1; rc=$?
L=$(q "SELECT MAX(id) FROM launches")
row=$(q "SELECT r.status || '|' || r.error || '|' || l.status FROM runs r JOIN launches l ON l.id = r.launch_id WHERE l.id=$L")
if [ $rc = 1 ] && [[ "$row" == "failed|rank 1: "*"injected failure (BOOST_FAULT) after step 2|failed" ]] &&
   grep -q "not compared: run .* (b, repeat_index 0) is failed at step" "$TMP/f.log"; then pass rank1_failure_recorded
else fail rank1_failure_recorded "exit $rc, '$row'"; fi
BOOST_FAULT=signal=1@2:TERM:parent "$BUILD/exp" "$TMP/duo.yaml" --variant b >"$TMP/t.log" 2>&1; rc=$?
row=$(q "SELECT status || '|' || error FROM runs WHERE id = (SELECT MAX(id) FROM runs)")
if [ $rc != 0 ] && [[ "$row" == "interrupted|Terminated received by rank "*"resume with: make exp"* || "$row" == "interrupted|Terminated received by rank "*"--resume --launch"* ]]; then
    pass sigterm_to_mpirun_recorded
else fail sigterm_to_mpirun_recorded "exit $rc, '$row'"; fi

BOOST_FAULT=signal=1@2:TERM "$BUILD/exp" "$TMP/duo.yaml" --variant b >"$TMP/t1.log" 2>&1; rc=$?
row=$(q "SELECT status || '|' || error FROM runs WHERE id = (SELECT MAX(id) FROM runs)")
if [ $rc != 0 ] && [[ "$row" == "interrupted|Terminated received by rank 1 of 2"* ]]; then pass sigterm_to_rank1_recorded
else fail sigterm_to_rank1_recorded "exit $rc, '$row'"; fi
# a launch whose run stopped before its first checkpoint: the resume trains that run again
# from step 0 as the same run (its row, resumed once), never a second run beside it
BOOST_FAULT=signal=0@1:INT:group setsid "$BUILD/exp" "$TMP/duo.yaml" --variant a >"$TMP/n.log" 2>&1
L=$(q "SELECT MAX(id) FROM launches")
"$BUILD/exp" "$TMP/duo.yaml" --resume >"$TMP/n2.log" 2>&1; rc=$?
runs=$(q "SELECT group_concat(status || ':' || resumed_count, ' ') FROM (SELECT * FROM runs WHERE launch_id=$L ORDER BY id)")
if [ $rc = 0 ] && [ "$runs" = "completed:1" ] && grep -q "^resumed duo.a.* from step 0: it stopped at step 1 before its first checkpoint" "$TMP/n2.log" &&
   ! grep -q "not compared" "$TMP/n2.log"; then pass resume_restarts_run_without_checkpoint_as_same_run
else fail resume_restarts_run_without_checkpoint_as_same_run "exit $rc, runs '$runs'; $(grep -m2 -E '^== |^resumed|not compared' "$TMP/n2.log" | tr '\n' ' ')"; fi

# ---- a missing mpirun is the environment's fault: exit 2 before anything runs --------------
n0=$(q "SELECT COUNT(*) FROM runs")
mkdir -p "$TMP/bin"; ln -sf "$(command -v sqlite3)" "$TMP/bin/sqlite3"
expect_error exp_without_mpirun "mpirun is not on PATH" 2 env PATH="$TMP/bin" "$BUILD/exp" "$TMP/duo.yaml" --variant b
[ "$(q "SELECT COUNT(*) FROM runs")" = "$n0" ] && pass exp_without_mpirun_runs_nothing || fail exp_without_mpirun_runs_nothing "a run was recorded"

# ---- LAUNCHER= through make: every word reaches the launcher as given (no shell) ---------------
# A launcher that records its argument vector, then starts the ranks with mpirun.
cat > "$TMP/bin/wrap" <<'SH'
#!/bin/sh
printf '%s\n' "$@" > "$WRAP_LOG"
np=; while [ $# -gt 0 ]; do case "$1" in -np) np=$2; shift 2;; */train) break;; *) shift;; esac; done
exec mpirun --oversubscribe -np "$np" "$@"
SH
chmod +x "$TMP/bin/wrap"
out=$(WRAP_LOG=$TMP/wrap.log make -s exp "EXP=$TMP/duo.yaml" VARIANT=b "LAUNCHER=$TMP/bin/wrap --flag" \
      "LAUNCHER_ARGS=--tag \$(touch $TMP/hit) ;x" 2>&1); rc=$?
L=$(q "SELECT MAX(id) FROM launches")
want=$(printf '%s\n' -np 2 --flag --tag "\$(touch" "$TMP/hit)" ";x" "$ROOT/build/train")
got=$(sed -n '1,/\/train$/p' "$TMP/wrap.log" 2>/dev/null)
row=$(q "SELECT l.launcher || '|' || r.status FROM launches l JOIN runs r ON r.launch_id = l.id WHERE l.id = $L")
if [ $rc = 0 ] && [ "$got" = "$want" ] && [ "$row" = "$TMP/bin/wrap --flag --tag \$(touch $TMP/hit) ;x|completed" ] &&
   [ ! -e "$TMP/hit" ] && grep -q "^launcher: $TMP/bin/wrap --flag" <<<"$out"; then pass make_exp_launcher_words_as_given
else fail make_exp_launcher_words_as_given "exit $rc, launch '$row', argv: $(tr '\n' ' ' <<<"$got")"; fi

# ---- the pre-flight: refused before any rank starts, in one message, recorded ----------------
preflight() {   # NAME EXPECTED-TEXT ARGS...: exit 2, one message, the launch recorded 'failed' with it, no run
    local name=$1 expect=$2; shift 2
    local n0; n0=$(q "SELECT COUNT(*) FROM runs")
    out=$("$BUILD/exp" "$@" 2>&1); rc=$?
    local L; L=$(q "SELECT MAX(id) FROM launches")
    local row; row=$(q "SELECT status || '|' || error FROM launches WHERE id = $L")
    if [ $rc = 2 ] && [ "$(grep -c "^error: " <<<"$out")" = 1 ] && grep -q "$expect" <<<"$out" && [[ "$row" == "failed|"*"$expect"* ]] &&
       [ "$(q "SELECT COUNT(*) FROM runs")" = "$n0" ] && ! grep -q "make figures" <<<"$out" && ! grep -qi "mpirun\|MPI_ABORT" <<<"$(grep -v '^launcher:' <<<"$out")"; then
        pass "$name"
    else fail "$name" "exit $rc, launch '$row': $(tail -3 <<<"$out" | tr '\n' ' ')"; fi
}
if "$BUILD/gpu_probe" >/dev/null 2>&1; then
    echo "SKIP preflight_cuda_without_device: a CUDA device is usable here"
else
    preflight preflight_cuda_without_device "has no usable CUDA device" "$TMP/duo.yaml" --variant b --set run.device=cuda
fi
avail_gib=$(awk '/MemAvailable/ {print int($2 / 1048576)}' /proc/meminfo)
if [ "${avail_gib:-0}" -lt 100 ]; then   # the paper's 7B at tp 4 needs about 150 GiB per rank in fp32
    preflight preflight_variant_too_big "GiB available per rank (MemAvailable" boost-vs-baselines \
        --variant paper-7b-boost --set "run.db=$DB"
else echo "SKIP preflight_variant_too_big: this machine has $avail_gib GiB available, enough for the 7B variant"; fi

# ---- figures of a launch: completed runs only, the others named --------------------------
PY=/usr/bin/python3
if $PY -c "import matplotlib" 2>/dev/null; then
    BOOST_FAULT=fail=1@2 "$BUILD/exp" "$TMP/duo.yaml" >"$TMP/fig.log" 2>&1   # a launch of a completed a and a failed b
    L=$(q "SELECT MAX(id) FROM launches")
    out=$($PY analysis/plot_losses.py duo --db "$DB" --launch "$L" --out "$TMP/fig" 2>&1 && $PY analysis/plot_ablation.py duo --db "$DB" --launch 1 --out "$TMP/fig" 2>&1); rc=$?
    if [ $rc = 0 ] && [ -s "$TMP/fig/duo_L${L}_loss.png" ] && [ -s "$TMP/fig/duo_L1_ablation.png" ] &&
       grep -q "left out: run .* (b, repeat_index 0) is failed" <<<"$out" && grep -q "b vs a: max |Δloss|" <<<"$out"; then pass figures_of_a_launch
    else fail figures_of_a_launch "exit $rc: $(tail -3 <<<"$out")"; fi
    expect_error figures_unknown_launch "no launch 99" 2 $PY analysis/plot_losses.py duo --db "$DB" --launch 99 --out "$TMP/fig"
else
    echo "SKIP figures_of_a_launch: /usr/bin/python3 has no matplotlib (bash .ci/deps.sh --bench)"
fi
