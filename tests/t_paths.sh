#!/usr/bin/env bash
# t_paths.sh — nothing outside a run's folder moves, whatever is planted inside it: the names
# the engine writes or deletes in a write, resume and prune cycle are taken from its own traced
# calls (core/outdir.h BOOST_TRACE_WRITES), a symbolic link is planted at each in turn, and the
# cycle must end refused by name or completed, with the files outside unchanged
# (tools/probe_paths.sh; `make probes` also runs the tp 2 cycle, whose heartbeats are planted).
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
out=$(PATHS_TP=1 bash tools/probe_paths.sh "$BUILD" "$TMP/p" 2>"$TMP/err")
n=0
while IFS=$'\t' read -r name outcome detail; do
    n=$((n + 1))
    case $outcome in
        refused|accepted) pass "link_at_$name" ;;
        *) fail "link_at_$name" "$outcome: $detail" ;;
    esac
done < <(grep -P '\t' <<<"$out")
count=$(grep '^names ' <<<"$out")
left=$(sed -n 's/.*; \([0-9]*\) holding another.*/\1/p' <<<"$count")
# the cycle writes at least the checkpoint, its temporary, the dump, its temporary and the write tests
if [ -n "$count" ] && [ $((n + ${left:-0})) -ge 6 ]; then pass "names_from_the_trace ($count)"
else fail names_from_the_trace "$n names: $(tail -3 "$TMP/err")"; fi
[ "${left:-0}" -gt 0 ] && skip links_at_names_holding_the_pid "$left names hold the writer's pid, the same in the next run only in a pid namespace (unshare -p: root)"
true
