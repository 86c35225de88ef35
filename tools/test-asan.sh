#!/usr/bin/env bash
# test-asan.sh BUILD — `make test-asan`: the C unit tests and a tp=2 BTP training run, every
# binary built with AddressSanitizer + UndefinedBehaviorSanitizer (BUILD = build-asan).
# Clean means: each test passes, each run exits 0, and no sanitizer report appears
# (leak checks on; tools/sanitizers/lsan.supp lists the only exceptions: memory that Open
# MPI, HDF5 and the UBSan runtime keep until exit). Ends with "N passed, N failed".
set -u
B=${1:-build-asan}
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} OMP_WAIT_POLICY=passive
export ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0:check_initialization_order=1:strict_string_checks=1
export LSAN_OPTIONS=suppressions=$PWD/tools/sanitizers/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
REPORT='ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|SUMMARY: UndefinedBehaviorSanitizer'
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
pass=0; fail=0
check() {   # NAME LOG RC: PASS when rc is 0 and the log holds no sanitizer report
    local name=$1 log=$2 rc=$3
    if [ "$rc" -eq 0 ] && ! grep -qE "$REPORT" "$log"; then echo "PASS $name"; pass=$((pass + 1)); return; fi
    echo "FAIL $name: exit $rc; $(grep -m1 -E "$REPORT|^FAIL" "$log" || tail -1 "$log")"
    grep -A12 -m1 -E "$REPORT" "$log" | sed 's/^/    /'
    fail=$((fail + 1))
}

for t in "$B"/test_*; do
    [ -x "$t" ] || continue
    log=$TMP/$(basename "$t").log
    if [ "$(basename "$t")" = test_fuzz_corpus ]; then
        # the fuzz harnesses jump back from the engine's exits (fuzz/fuzzlib.h) and abandon what
        # those paths allocated: no leak check there, everything else on
        ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 "$t" >"$log" 2>&1; rc=$?
    else
        "$t" >"$log" 2>&1; rc=$?
    fi
    [ "$(grep -c '^FAIL' "$log")" -gt 0 ] && { [ "$rc" = 0 ] && rc=1; }
    check "asan_$(basename "$t")" "$log" "$rc"
done

MPIRUN=(mpirun --oversubscribe -np 2 -x ASAN_OPTIONS -x LSAN_OPTIONS -x UBSAN_OPTIONS -x OMP_NUM_THREADS -x OMP_WAIT_POLICY)
[ "$(id -u)" = 0 ] && MPIRUN+=(--allow-run-as-root)
SETS=(--set data.cache_dir="$TMP/cache" --set run.db="$TMP/runs.db" --set run.checkpoint_dir="$TMP/ckpt")
for v in lowrank-ckpt full-recompute; do
    log=$TMP/train-$v.log
    "${MPIRUN[@]}" "$B/train" tools/sanitizers/tp2-btp.yaml --variant "$v" "${SETS[@]}" >"$log" 2>&1; rc=$?
    grep -q 'step     4/4' "$log" || { [ "$rc" = 0 ] && rc=1; }
    check "asan_train_tp2_btp_$v" "$log" "$rc"
done
# the resume path (checkpoint read, scatter) under the sanitizers, 2 more steps
log=$TMP/train-resume.log
"${MPIRUN[@]}" "$B/train" tools/sanitizers/tp2-btp.yaml --variant lowrank-ckpt "${SETS[@]}" --resume --allow-change train.steps --set train.steps=6 \
    >"$log" 2>&1; rc=$?
grep -q 'resumed .* (step 4)' "$log" && grep -q 'step     6/6' "$log" || { [ "$rc" = 0 ] && rc=1; }
check asan_train_tp2_btp_resume "$log" "$rc"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
