#!/usr/bin/env bash
# fuzz.sh BUILD SECONDS HARNESS... — `make fuzz`: for each libFuzzer harness, replay its
# regressions (fuzz/regressions/<h>/), then fuzz for SECONDS from its seed corpus
# (fuzz/corpus/<h>/; new inputs go to BUILD/corpus-<h>/). Prints one line per harness and
# exits non-zero on the first crash, with the input saved as BUILD/crash-<h>-*.
set -u
B=$1 S=$2; shift 2
cd "$(dirname "$0")/.."
[[ "$S" =~ ^[0-9]+$ ]] || { echo "error: FUZZ_SECONDS must be a number of seconds, got '$S'" >&2; exit 2; }
# the engine refuses bad input by exiting, which the harness turns into a jump back (fuzz/fuzzlib.h): what
# the abandoned path allocated is not freed, so leak checking is off; ASan and UBSan are on.
export ASAN_OPTIONS=detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}
rc=0
printf '%-12s %10s %10s %8s  %s\n' harness runs "exec/s" corpus result
for h in "$@"; do
    bin=$B/fuzz_$h
    [ -x "$bin" ] || { echo "error: $bin not built" >&2; exit 2; }
    mkdir -p "$B/corpus-$h" "fuzz/regressions/$h"
    log=$B/fuzz-$h.log
    regs=(fuzz/regressions/"$h"/*)
    if [ -e "${regs[0]}" ] && ! "$bin" -detect_leaks=0 "${regs[@]}" >"$log" 2>&1; then
        printf '%-12s %10s %10s %8s  %s\n' "$h" - - - "CRASH on a regression input (see $log)"; rc=1; break
    fi
    # fork mode: jobs in child processes (fuzz/fuzzlib.h says why); stops at the first crash
    "$bin" -fork=1 -max_total_time="$S" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 -detect_leaks=0 \
        -close_fd_mask=2 -artifact_prefix="$B/crash-$h-" "$B/corpus-$h" "fuzz/corpus/$h" >"$log" 2>&1
    r=$?
    # the parent's last status line: "#N: cov: .. ft: .. corp: .. exec/s: E oom/timeout/crash: a/b/c time: ..."
    last=$(grep -E '^#[0-9]+: cov:' "$log" | tail -1)
    runs=$(sed -E 's/^#([0-9]+):.*/\1/' <<<"$last")
    eps=$(grep -oE 'exec/s:? [0-9]+' <<<"$last" | awk '{print $2}')
    bad=$(grep -oE 'oom/timeout/crash: [0-9/]+' <<<"$last" | awk '{print $2}')
    n=$(ls "$B/corpus-$h" | wc -l)
    crash=$(ls "$B"/crash-"$h"-* 2>/dev/null | head -1)
    if [ $r -eq 0 ] && [ -z "$crash" ] && [ "${bad:-0/0/0}" = 0/0/0 ]; then
        printf '%-12s %10s %10s %8s  %s\n' "$h" "${runs:-?}" "${eps:-?}" "$n" "no crash, hang or OOM in ${S}s"
    else
        printf '%-12s %10s %10s %8s  %s\n' "$h" "${runs:-?}" "${eps:-?}" "$n" "FOUND (exit $r, oom/timeout/crash ${bad:-?}): ${crash:-see $log}"
        rc=1; break
    fi
done
# the private input directories of jobs that ended without cleaning up (a crash, a timeout)
for d in /dev/shm/boost-fuzz.* /tmp/boost-fuzz.*; do
    [ -d "$d" ] && ! kill -0 "${d##*.}" 2>/dev/null && rm -rf "$d"
done
exit $rc
