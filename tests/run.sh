#!/usr/bin/env bash
# Runs every test binary (build/test_*) and every shell test (tests/t_*.sh), counts the
# PASS/FAIL lines, and ends with the summary line "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
# OpenMP threads that spin-wait starve OpenBLAS's threads on a small machine (core/env.h)
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
pass=0; fail=0; failed_names=()
log=$(mktemp)
run_one() {  # $1 = label, rest = command
    local label=$1; shift
    local t0=$(date +%s.%N)
    "$@" >"$log" 2>&1; local rc=$?
    local p=$(grep -c '^PASS ' "$log"); local f=$(grep -c '^FAIL ' "$log")
    grep -E '^(FAIL|  also:)' "$log"
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        # crashed or exited non-zero without reporting: that is a failure too
        echo "FAIL $label: exited $rc without a FAIL line; last output:"; tail -5 "$log" | sed 's/^/    /'
        f=1
    fi
    pass=$((pass + p)); fail=$((fail + f))
    [ "$f" -gt 0 ] && failed_names+=("$label")
    printf '%-28s %3d passed %3d failed  %6.1fs\n' "$label" "$p" "$f" "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{print b-a}')"
}
for t in build/test_*; do
    [ -x "$t" ] || continue
    run_one "$(basename "$t")" "$t"
done
for t in tests/t_*.sh; do
    [ -f "$t" ] || continue
    run_one "$(basename "$t" .sh)" bash "$t"
done
rm -f "$log"
[ ${#failed_names[@]} -gt 0 ] && echo "failing: ${failed_names[*]}"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
