#!/usr/bin/env bash
# Runs every test binary (build/test_*) and every shell test (tests/t_*.sh), counts the
# PASS/FAIL/SKIP lines, and ends with the summary line "N passed, N failed" (CI reads it).
# A check that cannot run on this machine prints "SKIP name: reason": it counts as
# skipped, never as passed; the SKIP lines are printed as they come and the line before
# the summary says how many were skipped and why ("3 skipped: no GPU (...)").
set -u
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
# OpenMP threads that spin-wait starve OpenBLAS's threads on a small machine (core/env.h)
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
pass=0; fail=0; skip=0; failed_names=()
log=$(mktemp); skips=$(mktemp)
run_one() {  # $1 = label, rest = command
    local label=$1; shift
    local t0=$(date +%s.%N)
    "$@" >"$log" 2>&1; local rc=$?
    local p=$(grep -c '^PASS ' "$log"); local f=$(grep -c '^FAIL ' "$log"); local s=$(grep -c '^SKIP ' "$log")
    grep -E '^(FAIL|SKIP|  also:)' "$log"
    grep '^SKIP ' "$log" >>"$skips"
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        # crashed or exited non-zero without reporting: that is a failure too
        echo "FAIL $label: exited $rc without a FAIL line; last output:"; tail -5 "$log" | sed 's/^/    /'
        f=1
    fi
    pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
    [ "$f" -gt 0 ] && failed_names+=("$label")
    printf '%-28s %3d passed %3d failed %3d skipped  %6.1fs\n' "$label" "$p" "$f" "$s" \
        "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{print b-a}')"
}
for t in build/test_*; do
    [ -x "$t" ] || continue
    run_one "$(basename "$t")" "$t"
done
for t in tests/t_*.sh; do
    [ -f "$t" ] || continue
    run_one "$(basename "$t" .sh)" bash "$t"
done
[ ${#failed_names[@]} -gt 0 ] && echo "failing: ${failed_names[*]}"
if [ "$skip" -gt 0 ]; then
    # the distinct reasons, most frequent first: "no GPU (...) ×12; ..."
    reasons=$(sed -E 's/^SKIP [^:]*: ?//' "$skips" | sort | uniq -c | sort -rn |
              awk '{n=$1; $1=""; sub(/^ /, ""); printf "%s%s%s", (NR>1 ? "; " : ""), $0, (n>1 ? " (x" n ")" : "")}')
    echo "$skip skipped: $reasons"
fi
rm -f "$log" "$skips"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
