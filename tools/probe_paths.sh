#!/usr/bin/env bash
# probe_paths.sh BUILD WORKDIR — the generator over the names the engine writes or deletes in a
# run's folder: a link planted at each one, and nothing outside may move.
#
# The names are not listed here: they are taken from the engine's own calls. A write, resume
# and prune cycle runs once with BOOST_TRACE_WRITES (core/outdir.h traces every mkdir, create,
# replace, remove and rmdir it makes): a run killed after its step-2 checkpoint is resumed to
# step 4 with keep_last 1 (the step-4 checkpoint written, step 2 pruned) and a step dump at
# step 3; once on one process, once at tp 2 (the heartbeats). Then, for every traced name,
# the folder is restored, a symbolic link is planted at that name (to a file outside, or to a
# folder outside holding a file, where the name was a folder) and the same cycle runs again.
# Outcomes (one line each: NAME<TAB>OUTCOME<TAB>DETAIL, then "names N"):
#   refused   exit 2 with a message naming the link      accepted  the cycle ended (0), the link
#                                                                   replaced or left alone
#   unsafe    anything outside changed (written, created, deleted)
#   crash / hang / other   a signal, no end in PROBE_TIMEOUT s, anything else
# PATHS_TP (default "1 2") chooses the cycles: tests/t_paths.sh runs the one-process one.
# The one-process cycle runs in its own pid namespace (unshare -p, as root), where train is pid
# 1, so the names holding the writer's pid (step_4.h5.tmp.<pid>) are the same in the traced
# run and in the planted ones; without it (not root) those names are left out and counted.
set -u
B=$1; W=$2
T=${PROBE_TIMEOUT:-60}
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$W"
NS=()
if [ "$(id -u)" = 0 ] && unshare -pf --mount-proc true 2>/dev/null; then NS=(unshare -pf --mount-proc); fi

manifest() {   # FILE TP
cat >"$1" <<YAML
name: $(basename "$1" .yaml)
model: {linear: cola, vocab_size: 64, n_layers: 2, d_model: 32, n_heads: 4, d_ff: 64, seq_len: 16}
data: {dataset: synthetic, synthetic_tokens: 20000, cache_dir: $W/cache}
train: {batch_size: 2, steps: 4, warmup_steps: 1, min_lr_ratio: 1, log_every: 100, threads: 1}
parallel: {tp: $2}
run: {db: $W/state/runs.db, checkpoint_dir: $W/state/ck, checkpoint_every: 2, keep_last: 1, dump_steps: "3"}
YAML
}
manifest "$W/p1.yaml" 1
manifest "$W/p2.yaml" 2
launch() {   # TP ENV... -- ARGS: the cycle's command for one process or tp 2
    local tp=$1; shift
    if [ "$tp" = 1 ]; then timeout -k 5 "$T" env "$@" "${NS[@]}" "$B/train" "$W/p1.yaml" --resume --peak-gflops 1 </dev/null
    else timeout -k 5 "$T" env "$@" mpirun --oversubscribe -np 2 "$B/train" "$W/p2.yaml" --resume --peak-gflops 1 </dev/null; fi
}
# the state before the cycle: a run stopped right after its step-2 checkpoint
prepare() {   # TP
    rm -rf "$W/state" "$W/pristine$1"; mkdir -p "$W/state"
    if [ "$1" = 1 ]; then timeout 120 env BOOST_FAULT=kill_after_checkpoint=2 "$B/train" "$W/p1.yaml" --peak-gflops 1 >"$W/prep.log" 2>&1
    else BOOST_FAULT=kill_after_checkpoint=2 timeout 120 mpirun --oversubscribe -np 2 "$B/train" "$W/p2.yaml" --peak-gflops 1 >"$W/prep.log" 2>&1 </dev/null; fi
    ls "$W"/state/ck/p$1.default.*/step_2.h5 >/dev/null 2>&1 || { echo "error: the cycle's first run failed: $(tail -3 "$W/prep.log")" >&2; exit 1; }
    sqlite3 "$W/state/runs.db" 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null
    cp -a "$W/state" "$W/pristine$1"
}
restore() { rm -rf "$W/state"; cp -a "$W/pristine$1" "$W/state"; }
# what is outside: every file's path, type, link target and checksum
snapshot() { (cd "$W/outside" && find . -printf '%p %y %l\n' | sort && find . -type f -exec md5sum {} + | sort); }

total=0 left_out=0
for tp in ${PATHS_TP:-1 2}; do
    prepare $tp
    RUN=$(ls -d "$W"/state/ck/p$tp.default.* | tail -1); RUN=${RUN#"$W/state/ck/"}
    # the traced cycle: the names, relative to the checkpoint root (run folder, dumps, heartbeats)
    rm -f "$W/trace"
    launch $tp BOOST_TRACE_WRITES="$W/trace" >"$W/traced.log" 2>&1 || { echo "error: the traced cycle failed: $(tail -3 "$W/traced.log")" >&2; exit 1; }
    pid=$(awk '$1 == "create" && $2 ~ /\.write-test\./ {sub(/.*\.write-test\./, "", $2); print $2; exit}' "$W/trace")
    names=$(awk -v root="$W/state/ck/" -F'\t' 'index($2, root) == 1 {print $1 "\t" substr($2, length(root) + 1)}' "$W/trace" | sort -u -k2)
    while IFS=$'\t' read -r op name; do
        [ -n "$name" ] || continue
        # a name holding the writer's pid is the same in the next run only in a pid namespace
        if [[ "$name" =~ \.$pid$|\.$pid/ ]] && { [ "$tp" = 2 ] || [ ${#NS[@]} = 0 ]; }; then left_out=$((left_out + 1)); continue; fi
        total=$((total + 1))
        restore $tp
        rm -rf "$W/outside"; mkdir -p "$W/outside/dir"; echo outside >"$W/outside/file"; echo outside >"$W/outside/dir/rank_0"
        cp "$W/pristine$tp/ck/$RUN/step_2.h5" "$W/outside/step_2.h5"
        at="$W/state/ck/$name"
        mkdir -p "$(dirname "$at")"; rm -rf "$at"
        case $op in
            mkdir|rmdir) target="$W/outside/dir" ;;
            remove) target="$W/outside/step_2.h5" ;;   # a checkpoint-looking file outside: pruning must not follow
            *) target="$W/outside/file" ;;
        esac
        ln -s "$target" "$at"
        before=$(snapshot)
        out=$(launch $tp 2>&1); rc=$?
        after=$(snapshot)
        label="tp$tp:$op:${name/#"$RUN"/<run>}"
        if [ "$before" != "$after" ]; then echo -e "$label\tunsafe\toutside changed: $(diff <(echo "$before") <(echo "$after") | head -3 | tr '\n' ' ')"
        elif [ $rc = 124 ] || [ $rc = 137 ]; then echo -e "$label\thang\tno end in ${T}s"
        elif [ $rc -gt 128 ]; then echo -e "$label\tcrash\tsignal $((rc - 128)): $(tail -2 <<<"$out" | tr '\n' ' ')"
        elif [ $rc = 2 ] && grep -q "^error: .*$(basename "$name")" <<<"$out"; then echo -e "$label\trefused\t$(grep -m1 '^error: ' <<<"$out" | head -c 200)"
        elif [ $rc = 0 ] || { [ "$tp" = 2 ] && grep -q "exit code: 2\|Exit code:    2" <<<"$out" && grep -q "^error: .*$(basename "$name")" <<<"$out"; }; then
            if [ $rc = 0 ]; then echo -e "$label\taccepted\tthe cycle completed; the link: $( [ -L "$at" ] && echo left alone || echo replaced)"
            else echo -e "$label\trefused\t$(grep -m1 '^error: ' <<<"$out" | head -c 200)"; fi
        else echo -e "$label\tother\texit $rc: $(grep -m1 '^error: ' <<<"$out" || tail -2 <<<"$out" | tr '\n' ' ')"; fi
    done <<<"$names"
done
echo "names $total (taken from the engine's traced writes; $left_out holding another process's pid left out)"
