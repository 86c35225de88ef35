#!/usr/bin/env bash
# probe_signals.sh BUILD WORKDIR — the generator over the signals: every signal of the engine's
# own table (build/train --signals: stop.c's SIGNALS, with what the engine does with each) is
# sent to a training run, and the run must end as that table says, recorded either way.
#
# Points (the signals the engine acts on get all three, the ones left at their default the first):
#   step        during a step of a long run
#   checkpoint  while a checkpoint is being written (a run that writes one every step; the
#               signal is sent once a temporary checkpoint file is seen)
#   closed      while its standard error is a pipe whose reader has gone (the messages the
#               signal makes must not kill the run)
# Expectations, by the table's action:
#   stop        exit 128+N, the run 'interrupted' naming the signal
#   checkpoint  the same, and a checkpoint of the step it stopped at
#   ignored     the run goes on; a TERM then stops it (exit 143, 'interrupted')
#   default     what the system does: a terminating signal ends the process, and the next
#               open of the database records the run 'interrupted' (its process gone) and
#               resumes it; one that stops it is continued (CONT) and a TERM then stops it;
#               one ignored by default changes nothing and a TERM then stops it
# One line per case: SIGNAL:POINT<TAB>OUTCOME<TAB>DETAIL (clean, silent, crash, hang, other),
# then "signals N cases M".
set -u
B=$1; W=$2
export OMP_NUM_THREADS=1
ulimit -c 0   # (the crashes' cores are not wanted here)
mkdir -p "$W"
cat >"$W/sig.yaml" <<YAML
name: sig
model: {linear: cola, vocab_size: 64, n_layers: 2, d_model: 32, n_heads: 4, d_ff: 64, seq_len: 16}
data: {dataset: synthetic, synthetic_tokens: 20000, cache_dir: $W/cache}
train: {batch_size: 2, steps: 20000000, warmup_steps: 1, min_lr_ratio: 1, log_every: 1000000, threads: 1}
run: {db: $W/s.db, checkpoint_dir: $W/ck, checkpoint_every: 0}
YAML
# a model whose checkpoint takes a while to write (about 30 MB), written at every step
cat >"$W/sigck.yaml" <<YAML
name: sigck
model: {linear: dense, vocab_size: 64, n_layers: 4, d_model: 256, n_heads: 4, d_ff: 512, seq_len: 16}
data: {dataset: synthetic, synthetic_tokens: 20000, cache_dir: $W/cache}
train: {batch_size: 1, steps: 20000000, warmup_steps: 1, min_lr_ratio: 1, log_every: 1000000, threads: 1}
run: {db: $W/s.db, checkpoint_dir: $W/ck, checkpoint_every: 1, keep_last: 1}
YAML
q() { sqlite3 -cmd ".timeout 10000" "$W/s.db" "$1"; }
wait_for() { for _ in $(seq 1 400); do eval "$1" && return 0; kill -0 "$pid" 2>/dev/null || return 1; sleep 0.05; done; return 1; }
ended() { for _ in $(seq 1 600); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.05; done; return 1; }

cases=0 nsig=0
while IFS=$'\t' read -r name action why; do
    [ -n "$name" ] || continue
    nsig=$((nsig + 1))
    sig=$name; [ "$name" = "RTMIN..RTMAX" ] && sig=RTMIN+3
    num=$(kill -l "$sig" 2>/dev/null) || { echo -e "$name:-\tother\tthis shell does not know it"; continue; }
    points="step"; [ "$action" != default ] && points="step checkpoint closed"
    for point in $points; do
        cases=$((cases + 1))
        label="$name:$point"
        yaml=$W/sig.yaml; [ $point = checkpoint ] && yaml=$W/sigck.yaml
        rm -f "$W/out" "$W/err"
        if [ $point = closed ]; then
            mkfifo "$W/fifo.$cases"; ( exec 3<"$W/fifo.$cases"; sleep 0.1 ) &   # (a reader that goes away)
            "$B/train" "$yaml" --peak-gflops 1 >"$W/out" 2>"$W/fifo.$cases" & pid=$!
        else
            "$B/train" "$yaml" --peak-gflops 1 >"$W/out" 2>"$W/err" & pid=$!
        fi
        id_before=$(q "SELECT coalesce(max(id), 0) FROM runs" 2>/dev/null); id_before=${id_before:-0}
        if [ $point = checkpoint ]; then wait_for 'compgen -G "$W/ck/sigck.*/step_*.h5.tmp.*" >/dev/null'
        else wait_for '[ "$(q "SELECT count(*) FROM steps WHERE run_id > $id_before" 2>/dev/null || echo 0)" -gt 0 ]'; fi
        [ $point = closed ] && sleep 0.3   # (the reader of its stderr has gone by now)
        kill -s "$sig" $pid 2>/dev/null
        case $action:$name in
            ignored:*|default:CONT|default:CHLD|default:URG|default:WINCH) sleep 1; kill -0 $pid 2>/dev/null && follow=ignored || follow=died; kill -TERM $pid 2>/dev/null ;;
            default:STOP|default:TSTP|default:TTIN|default:TTOU) sleep 1; follow=stopped; kill -CONT $pid; sleep 0.3; kill -TERM $pid 2>/dev/null ;;
            *) follow=- ;;
        esac
        if ! ended $pid; then kill -KILL $pid 2>/dev/null; wait $pid 2>/dev/null; echo -e "$label\thang\tno end 30 s after $sig"; continue; fi
        wait $pid; rc=$?
        rm -f "$W/fifo.$cases"
        run=$(q "SELECT max(id) FROM runs")
        row=$(q "SELECT status || '|' || coalesce(error, '') FROM runs WHERE id = $run")
        last=$(q "SELECT coalesce(max(step), 0) FROM steps WHERE run_id = $run")
        case $action in
            stop|checkpoint)
                ck=yes; [ $action = checkpoint ] && { compgen -G "$W/ck/*/step_$last.h5" >/dev/null || ck=no; }
                if [ $rc = $((128 + num)) ] && [[ "$row" == interrupted\|* ]] && [ $ck = yes ]; then echo -e "$label\tclean\texit $rc, ${row:0:90}"
                elif [[ "$row" == running\|* ]] || [ $ck = no ]; then echo -e "$label\tsilent\texit $rc, run '${row:0:60}', checkpoint of step $last: $ck"
                else echo -e "$label\tother\texit $rc, run '${row:0:90}'"; fi ;;
            ignored)
                if [ "$follow" = ignored ] && [ $rc = 143 ] && [[ "$row" == interrupted\|Terminated* ]]; then echo -e "$label\tclean\tignored; then TERM: exit 143, interrupted"
                else echo -e "$label\tother\t$follow, exit $rc, run '${row:0:90}'"; fi ;;
            default)
                if [ "$follow" != - ]; then
                    if [ $rc = 143 ] && [[ "$row" == interrupted\|* ]]; then echo -e "$label\tclean\t$follow; then TERM: exit 143, interrupted"
                    else echo -e "$label\tother\t$follow, exit $rc, run '${row:0:90}'"; fi
                elif [ $rc = $((128 + num)) ] || [ $rc = $((128 + num + 128)) ]; then
                    # ended by the system: recorded when the database is next opened, then resumed
                    out=$("$B/train" "$W/sig.yaml" --resume --set train.steps=$((last + 1)) --allow-change train.steps --peak-gflops 1 2>&1); rrc=$?
                    ev=$(q "SELECT count(*) FROM events WHERE run_id = $run AND kind = 'interrupted' AND detail LIKE '%is gone%'")
                    if [ "$ev" -ge 1 ] && [ $rrc = 0 ]; then echo -e "$label\tclean\tended by the system (exit $rc); recorded at the next open and resumed"
                    elif [ "$ev" = 0 ]; then echo -e "$label\tsilent\tended (exit $rc), never recorded: $(tail -1 <<<"$out")"
                    else echo -e "$label\tother\tended (exit $rc), the resume: exit $rrc $(tail -1 <<<"$out")"; fi
                else echo -e "$label\tother\texit $rc, run '${row:0:90}'"; fi ;;
        esac
        # the long runs are never finished: each case leaves its run ended
        [ "$(q "SELECT status FROM runs WHERE id = $run")" = running ] && q "UPDATE runs SET status='interrupted' WHERE id = $run" >/dev/null
        rm -rf "$W/ck"
    done
done < <("$B/train" --signals)
echo "signals $nsig cases $cases (taken from build/train --signals)"
