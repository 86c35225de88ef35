#!/usr/bin/env bash
# A run's recorded outcome and its files stay its own (generated cases):
#  1. resumes at every train.steps around the checkpoint's step C (C-1, C, C+1 and the run's
#     own) of a run that completed, one interrupted after a step, and one killed right after
#     its final checkpoint: the exit code and message, and the run's row (status, steps, the
#     loss of step C, memory, resumes) as the case expects. Nothing left to train is said so
#     and never recorded 'failed'; a train.steps below C is refused before anything changes.
#  2. step dumps: a folder holding another run's dumps (the same folder spelled five ways),
#     folders nested in and around it, stray entries of every kind at step_<N>.h5 (refused,
#     left as they were) and other names (accepted), a live run's folder, the run's own
#     folder; a resume that redoes its own dumps.
source "$(dirname "$0")/lib.sh"
export OMP_NUM_THREADS=1
W=$TMP/w
cat >"$TMP/tiny.yaml" <<YAML
manifest_version: 1
name: tiny
version: 1
model: {linear: cola, vocab_size: 256, n_layers: 2, d_model: 32, n_heads: 4, d_ff: 48, seq_len: 16, rank_attn: 8, rank_mlp: 8}
data: {dataset: kjv, cache_dir: $TMP/cache}
train: {batch_size: 4, steps: 6, lr: 3e-3, warmup_steps: 1, log_every: 3, val_every: 3, threads: 1}
run: {db: $W/runs.db, checkpoint_dir: $W/ckpt, checkpoint_every: 3}
YAML
train() { "$BUILD/train" "$TMP/tiny.yaml" "$@"; }
q() { sqlite3 "$W/runs.db" "$1"; }

# ---- 1. what a resume records, at every train.steps around the checkpoint's step ----------
# The run's row apart from its status: steps, the loss of step C, resumes, memory, error.
facts() {  # C
    q "SELECT (SELECT max(step) FROM steps WHERE run_id=1) || '|' ||
              COALESCE((SELECT printf('%.17g', loss) FROM steps WHERE run_id=1 AND step=$1), 'none') || '|' ||
              resumed_count || '|' || COALESCE((SELECT group_concat(category || '=' || bytes) FROM
                                               (SELECT * FROM memory WHERE run_id=1 ORDER BY category)), 'none')
       FROM runs WHERE id=1"
}
mkdir -p "$TMP/prior"
make_prior() {  # NAME, then how the run is made (env and arguments)
    local name=$1; shift
    rm -rf "$W"
    (env "$@" >"$TMP/prior-$name.log" 2>&1; exit $?) 2>/dev/null
    cp -a "$W" "$TMP/prior/$name"
}
make_prior completed "$BUILD/train" "$TMP/tiny.yaml"
make_prior interrupted BOOST_FAULT=signal=0@4:TERM "$BUILD/train" "$TMP/tiny.yaml"
make_prior killed_after_final_checkpoint BOOST_FAULT=kill_after_checkpoint=6 "$BUILD/train" "$TMP/tiny.yaml"
for prior in completed interrupted killed_after_final_checkpoint; do
    rm -rf "$W"; cp -a "$TMP/prior/$prior" "$W"
    C=$(ls "$W"/ckpt/*/ | sed -n 's/^step_\([0-9]*\)\.h5$/\1/p' | sort -n | tail -1)
    before=$(facts "$C")
    status0=$(q "SELECT status FROM runs WHERE id=1"); [ "$status0" = running ] && status0=interrupted   # (the next open marks it)
    if [ -z "$C" ] || [ -z "$before" ]; then fail "prior_$prior" "no checkpoint or row: $(tail -2 "$TMP/prior-$prior.log")"; continue; fi
    for N in $((C - 1)) $C $((C + 1)) own; do
        rm -rf "$W"; cp -a "$TMP/prior/$prior" "$W"
        name="resume_${prior}_steps_$([ $N = own ] && echo own || echo "C$(printf '%+d' $((N - C)))")"
        if [ $N = own ]; then N=6; args=(); else args=(--set train.steps=$N --allow-change train.steps); fi
        out=$(train --resume "${args[@]}" 2>&1); rc=$?
        after=$(facts "$C"); st=$(q "SELECT status || '|' || COALESCE(error, '') FROM runs WHERE id=1")
        IFS='|' read -r max_b loss_b res_b mem_b <<<"$before"
        IFS='|' read -r max_a loss_a res_a mem_a <<<"$after"
        if grep -q "did not train" <<<"$out"; then fail "$name" "a resume said the model did not train: $(grep -m1 'did not train' <<<"$out")"; continue; fi
        if [ $prior = completed ] && [ $N -le $C ]; then          # nothing to do: the row as it was
            if [ $rc = 0 ] && grep -q "already completed its $C steps: nothing to do" <<<"$out" && [ "$after" = "$before" ] &&
               [ "$st" = "completed|" ]; then pass "$name"
            else fail "$name" "exit $rc, '$st', row '$before' -> '$after': $(tail -2 <<<"$out")"; fi
        elif [ $N -lt $C ]; then                                  # refused up front: the row as it was
            hint=$(sed -n 's/^hint: \(--set train.steps=[0-9]* --allow-change train.steps\) .*/\1/p' <<<"$out")
            if [ $rc = 2 ] && grep -q "error: RESUME: train.steps=$N is below step $C of the checkpoint" <<<"$out" &&
               [ "$hint" = "--set train.steps=$C --allow-change train.steps" ] && [ "$after" = "$before" ] &&
               [ "${st%%|*}" = "$status0" ]; then pass "$name"
            else fail "$name" "exit $rc, '$st', hint '$hint', row '$before' -> '$after': $(grep -E '^(error|hint)' <<<"$out" | head -2)"; fi
            # the hint is valid: it ends the run at its checkpoint
            # shellcheck disable=SC2086
            out=$(train --resume $hint 2>&1); rc=$?
            st=$(q "SELECT status || '|' || (SELECT max(step) FROM steps WHERE run_id=1) FROM runs WHERE id=1")
            [ $rc = 0 ] && [ "$st" = "completed|$C" ] && pass "${name}_hint_is_valid" \
                || fail "${name}_hint_is_valid" "exit $rc, '$st': $(tail -2 <<<"$out")"
        elif [ $N = $C ]; then                                    # nothing left to train: the run ends at C
            if [ $rc = 0 ] && grep -q "no step is left to train" <<<"$out" && [ "$st" = "completed|" ] && [ "$max_a" = "$C" ] &&
               [ "$loss_a" = "$loss_b" ] && [ "$mem_a" = "$mem_b" ] && [ "$res_a" = $((res_b + 1)) ]; then pass "$name"
            else fail "$name" "exit $rc, '$st', row '$before' -> '$after': $(tail -2 <<<"$out")"; fi
        else                                                      # trains on to N
            if [ $rc = 0 ] && [ "$st" = "completed|" ] && [ "$max_a" = "$N" ] && [ "$loss_a" = "$loss_b" ] &&
               [ "$res_a" = $((res_b + 1)) ]; then pass "$name"
            else fail "$name" "exit $rc, '$st', row '$before' -> '$after': $(tail -2 <<<"$out")"; fi
        fi
    done
done

# ---- 2. a dump folder holds the dumps of one run -------------------------------------------
D=$TMP/d
mkdir -p "$D/p"
runs() { q "SELECT count(*) FROM runs"; }
sums() { find "$1" -maxdepth 1 -type f -name 'step_*.h5' -exec md5sum {} + | sort; }
dump_run() {  # DUMP_DIR [more arguments]: a 2-step run dumping step 1 (new database and checkpoints under $W)
    local dir=$1; shift
    train --set train.steps=2 --set run.dump_steps=1 --set run.dump_dir="$dir" "$@" 2>&1
}
rm -rf "$W"
out=$(dump_run "$D/p/A" --set run.dump_steps=1,2); rc=$?
uid_a=$(q "SELECT uid FROM runs WHERE id=1")
sum_a=$(sums "$D/p/A")
[ $rc = 0 ] && [ "$(wc -l <<<"$sum_a")" = 2 ] && pass dump_first_run || fail dump_first_run "exit $rc: $(tail -2 <<<"$out")"
mkdir -p "$D/p/A/x"; ln -s "$D/p" "$D/link"
# the same folder, however it is spelled: refused, naming the folder's run; nothing written
for spelling in "$D/p/A" "$D/p/A/" "$D/p/./A" "$D/p/A/x/.." "$D/link/A"; do
    n0=$(runs)
    out=$(dump_run "$spelling"); rc=$?
    if [ $rc = 2 ] && grep -q "^error: run.dump_dir: .*step_[12].h5 is a step dump of run $uid_a, not of run " <<<"$out" &&
       grep -q "^hint: set run.dump_dir to a folder of its own" <<<"$out" && [ "$(sums "$D/p/A")" = "$sum_a" ] && [ "$(runs)" = "$n0" ]
    then pass "dump_dir_taken_${spelling#"$D"/}"
    else fail "dump_dir_taken_${spelling#"$D"/}" "exit $rc: $(grep -E '^(error|hint)' <<<"$out" | head -2)"; fi
done
# folders nested in it and around it hold no step_<N>.h5 of another run: accepted
for nested in "$D/p/A/inner" "$D/p"; do
    out=$(dump_run "$nested"); rc=$?
    if [ $rc = 0 ] && [ -f "$nested/step_1.h5" ] && [ "$(sums "$D/p/A")" = "$sum_a" ]; then pass "dump_dir_nested_${nested#"$D"/}"
    else fail "dump_dir_nested_${nested#"$D"/}" "exit $rc: $(tail -2 <<<"$out")"; fi
done
# a step_<N>.h5 that is not this run's dump: refused by name and what it is, left as it was
ckpt_a=$(ls "$W"/ckpt/"$uid_a"/step_2.h5)
plant() {  # KIND FOLDER
    case $1 in
        text) echo 'a user file' >"$2/step_1.h5" ;;
        text_at_another_step) echo 'a user file' >"$2/step_7.h5" ;;
        empty) : >"$2/step_1.h5" ;;
        link) ln -s "$D/p/A/step_1.h5" "$2/step_1.h5" ;;
        folder) mkdir "$2/step_1.h5" ;;
        checkpoint) cp "$ckpt_a" "$2/step_2.h5" ;;
        copied_dump) cp "$D/p/A/step_2.h5" "$2/step_2.h5" ;;
    esac
}
what_of() {
    case $1 in
        text|text_at_another_step|empty) echo "a file boost-c did not write" ;; link) echo "a symbolic link" ;;
        folder) echo "a folder" ;; checkpoint) echo "a checkpoint" ;; copied_dump) echo "a step dump of run $uid_a" ;;
    esac
}
state_of() { (cd "$1" && find . -printf '%p %y %l\n' | sort; find . -type f -exec md5sum {} + | sort); }
for kind in text text_at_another_step empty link folder checkpoint copied_dump; do
    f=$D/stray_$kind; mkdir -p "$f"; plant $kind "$f"
    s0=$(state_of "$f"); n0=$(runs)
    out=$(dump_run "$f"); rc=$?
    if [ $rc = 2 ] && grep -q "^error: run.dump_dir: $f/step_[127].h5 is $(what_of $kind)" <<<"$out" &&
       [ "$(state_of "$f")" = "$s0" ] && [ "$(runs)" = "$n0" ]; then pass "dump_dir_stray_$kind"
    else fail "dump_dir_stray_$kind" "exit $rc: $(grep -E '^(error|hint)' <<<"$out" | head -2)"; fi
done
# other names are not step dumps' and stay untouched
f=$D/other_names; mkdir -p "$f"
for name in notes.txt step_x.h5 step_1.h5.bak step_1.h5.tmp.1 my_step_1.h5 step_.h5; do echo keep >"$f/$name"; done
s0=$(state_of "$f")
out=$(dump_run "$f"); rc=$?
not_the_dump() { grep -v -e '^\./step_1\.h5 ' -e ' \./step_1\.h5$'; }
[ $rc = 0 ] && [ -f "$f/step_1.h5" ] && [ "$(state_of "$f" | not_the_dump)" = "$(not_the_dump <<<"$s0")" ] \
    && pass dump_dir_other_names_accepted || fail dump_dir_other_names_accepted "exit $rc: $(tail -2 <<<"$out")"
# a live run's dump folder (no dump in it yet): refused while it lives
train --set train.steps=100000 --set run.flush_every=1 --set run.dump_steps=99999 --set run.dump_dir="$D/live" >"$TMP/live.log" 2>&1 &
live=$!
for _ in $(seq 1 600); do
    [ "$(q "SELECT count(*) FROM runs r WHERE pid=$live AND status='running' AND EXISTS (SELECT 1 FROM steps WHERE run_id=r.id)")" = 1 ] && break
    sleep 0.1
done
out=$(dump_run "$D/live"); rc=$?
kill -TERM $live; wait $live
[ $rc = 2 ] && grep -q "^error: run.dump_dir: $D/live is in use: another live run" <<<"$out" && [ ! -e "$D/live/step_1.h5" ] \
    && pass dump_dir_of_a_live_run || fail dump_dir_of_a_live_run "exit $rc: $(grep -E '^(error|hint)' <<<"$out" | head -2)"
# a resume redoes its own dumps; the run's own folder (its checkpoints' names) is refused
rm -rf "$W"
(BOOST_FAULT=signal=0@3:TERM "$BUILD/train" "$TMP/tiny.yaml" --set train.steps=4 --set run.checkpoint_every=2 \
    --set run.dump_steps=1,3 --set run.dump_dir="$D/own" >"$TMP/own.log" 2>&1)
uid=$(q "SELECT uid FROM runs WHERE id=1")
expect_error dump_dir_is_the_runs_own_folder "is the run's own folder" 2 train --resume --set run.dump_dir="$W/ckpt/$uid"
out=$(train --resume 2>&1); rc=$?
st=$(q "SELECT status FROM runs WHERE id=1")
[ $rc = 0 ] && [ "$st" = completed ] && [ -f "$D/own/step_3.h5" ] && grep -q "resumed .* (step 2)" <<<"$out" \
    && pass dump_resume_redoes_its_own || fail dump_resume_redoes_its_own "exit $rc, '$st': $(tail -2 <<<"$out")"
