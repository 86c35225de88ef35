# probe_runs.sh — sourced by tools/probe.sh: runs under hostile conditions (run identity and
# ownership, the model at resume, paths, signals and liveness, truthful completion,
# quoted output, strict values, internal errors, messages, the database's identity and
# schema, resources), through the real binaries.
# Uses probe.sh's helpers (run, record, expect_refused, expect_accepted) and its tiny
# checkpointed run ($C/tiny.yaml, $RUN, restore).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
PK="--peak-gflops 1"   # (no sgemm measurement per probe)
q1() { sqlite3 -cmd ".timeout 10000" "$@"; }

# ---- model: a resume with any other model value is refused, naming the key ------------------
for kv in model.rope_theta=100000 model.rope_theta=1000 model.norm_eps=0.0015 model.norm_eps=1e-5 model.embed_std=0.03 \
          model.only_lr_act=false model.d_model=48 model.n_layers=3 model.n_heads=2 model.d_ff=96 model.vocab_size=80 \
          model.seq_len=8 model.rank_attn=4 model.rank_mlp=4 model.linear=svd model.linear=dense model.tie_embeddings=true \
          model.n_kv_heads=2; do
    restore
    key=${kv%%=*}
    run "$B/train" "$C/tiny.yaml" --resume --allow-change train.steps --set train.steps=6 --set "$kv" $PK
    if [ $RC = 2 ] && grep -q "^error: .*step_4.h5" <<<"$OUT" && { grep -q "$key is " <<<"$OUT" || grep -qi "shape\|size\|mismatch\|expected" <<<"$OUT"; }; then
        record model "resume_with_$kv" clean "$(grep -m1 '^error: ' <<<"$OUT")"
    elif [ $RC = 0 ]; then record model "resume_with_$kv" silent "resumed with a different model"
    elif [ $RC -gt 128 ]; then record model "resume_with_$kv" crash "signal $((RC - 128))"
    else record model "resume_with_$kv" other "exit $RC: $(tail -2 <<<"$OUT")"; fi
done
restore; expect_accepted model resume_same_model_other_spelling "$B/train" "$C/tiny.yaml" --resume --allow-change train.steps --set train.steps=6 --set model.rope_theta=1e4 $PK
restore; expect_accepted model resume_same_model "$B/train" "$C/tiny.yaml" --resume --allow-change train.steps --set train.steps=6 $PK

# ---- messages: a non-finite weight or moment in a resealed checkpoint is named -------------
for what in "/model/final_norm:nan" "/model/layers/0/attn/q/A:inf" "/optimizer/v/final_norm:-1"; do
    ds=${what%%:*}; val=${what##*:}
    restore
    /usr/bin/python3 - "$RUN/step_4.h5" "$ds" "$val" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as f: off = f[sys.argv[2]].id.get_offset()
with open(sys.argv[1], "r+b") as f: f.seek(off); f.write(np.float32(float(sys.argv[3])).tobytes())
PY
    reseal "$RUN/step_4.h5"   # (the tensor's own crc32 is then wrong: fix it as an editing tool would)
    /usr/bin/python3 - "$RUN/step_4.h5" "$ds" <<'PY' 2>/dev/null
import sys, h5py, zlib
with h5py.File(sys.argv[1], "r+") as f:
    d = f[sys.argv[2]]
    if "crc32" in d.attrs: d.attrs["crc32"] = type(d.attrs["crc32"])(zlib.crc32(d[()].tobytes()))
PY
    reseal "$RUN/step_4.h5"
    run "$B/train" "$C/tiny.yaml" --resume --allow-change train.steps --set train.steps=6 $PK
    if [ $RC = 2 ] && grep -q "non-finite value\|negative value" <<<"$OUT"; then record message "nonfinite_${val}_in_checkpoint" clean "$(grep -m1 '^error: ' <<<"$OUT")"
    elif [ $RC = 2 ] && grep -q "^error: .*step_4.h5" <<<"$OUT" && ! grep -q diverged <<<"$OUT"; then record message "nonfinite_${val}_in_checkpoint" clean "$(grep -m1 '^error: ' <<<"$OUT")"
    elif [ $RC = 0 ] && grep -q "(step 2)" <<<"$OUT"; then record message "nonfinite_${val}_in_checkpoint" clean "fell back past it"
    elif grep -q "diverged" <<<"$OUT"; then record message "nonfinite_${val}_in_checkpoint" other "reported as divergence"
    else record message "nonfinite_${val}_in_checkpoint" other "exit $RC: $(tail -2 <<<"$OUT")"; fi
done
restore

# ---- paths: uids never used as paths unless plain; run folders not links; pruning by content --
for uid in '../../victim' '../x' 'a/b' '.hidden' '..' "$(printf 'x\ty')" 'r$(touch x)' 'a b' "$(head -c 300 /dev/zero | tr '\0' a)"; do
    expect_refused paths "resume_uid_${uid:0:20}" "--resume" "$B/train" "$C/tiny.yaml" "--resume=$uid" $PK
done
V=$TMP/victim; mkdir -p "$V/inner"; echo keep >"$V/step_1.h5"; echo keep >"$V/step_2.h5"
for bad in '../../victim' "../$(basename "$TMP")/victim" '/abs/path'; do
    restore
    q1 "$C/runs.db" "UPDATE runs SET uid='$bad' WHERE id=(SELECT max(id) FROM runs)"
    run "$B/train" "$C/tiny.yaml" --resume --allow-change train.steps --set train.steps=6 --set run.keep_last=1 $PK
    if [ -f "$V/step_1.h5" ] && [ -f "$V/step_2.h5" ] && [ $RC = 2 ] && grep -q "not a plain folder name" <<<"$OUT"; then record paths "db_uid_${bad:0:24}" clean "$(grep -m1 '^error: ' <<<"$OUT")"
    elif [ ! -f "$V/step_1.h5" ]; then record paths "db_uid_${bad:0:24}" unsafe "deleted a file outside checkpoints/"
    else record paths "db_uid_${bad:0:24}" other "exit $RC: $(tail -2 <<<"$OUT")"; fi
done
restore
mv "$RUN" "$RUN.real"; cp -r "$RUN.real" "$C/other_run"; ln -s "$C/other_run" "$RUN"
expect_refused paths run_folder_is_symlink "symbolic link" "$B/train" "$C/tiny.yaml" --resume --allow-change train.steps --set train.steps=6 $PK
rm "$RUN"; mv "$RUN.real" "$RUN"; rm -rf "$C/other_run"
restore; echo 'a user file' >"$RUN/step_1.h5"
run "$B/train" "$C/tiny.yaml" --resume --allow-change train.steps --set train.steps=8 --set run.keep_last=1 --set run.checkpoint_every=2 $PK
[ $RC = 0 ] && [ "$(cat "$RUN/step_1.h5")" = "a user file" ] && record paths prune_keeps_foreign_file clean "kept" || record paths prune_keeps_foreign_file unsafe "exit $RC, step_1.h5: $(head -c 40 "$RUN/step_1.h5" 2>&1)"
restore; ln -s "$V/step_2.h5" "$RUN/step_1.h5"
run "$B/train" "$C/tiny.yaml" --resume --allow-change train.steps --set train.steps=8 --set run.keep_last=1 $PK
[ -f "$V/step_2.h5" ] && [ -L "$RUN/step_1.h5" ] && record paths prune_keeps_symlink clean "kept" || record paths prune_keeps_symlink unsafe "exit $RC"
restore
OTHER=$C/ckpt/tiny.default.other; cp -r "$RUN" "$OTHER"; sum=$(md5sum <"$OTHER/step_4.h5")
for dd in "$OTHER" "$C/ckpt" "$RUN"; do
    run "$B/train" "$C/tiny.yaml" --set run.dump_dir="$dd" --set run.dump_steps=4 $PK
    if [ "$(md5sum <"$OTHER/step_4.h5")" != "$sum" ]; then record paths "dump_dir_${dd##*/}" unsafe "overwrote another run's step_4.h5"
    elif [ $RC = 2 ] && grep -q "run.dump_dir" <<<"$OUT"; then record paths "dump_dir_${dd##*/}" clean "$(grep -m1 '^error: ' <<<"$OUT")"
    else record paths "dump_dir_${dd##*/}" other "exit $RC: $(tail -2 <<<"$OUT")"; fi
done
rm -rf "$OTHER"; restore
expect_accepted paths dump_dir_outside_checkpoints "$B/train" "$C/tiny.yaml" --set run.dump_dir="$C/dumps" --set run.dump_steps=2 $PK

# ---- values: strict, where they enter ------------------------------------------------------
for k in 'model: {linear: "cola\0dense"}' 'run: {db: "/x.db\0/etc/passwd"}' 'name: "a\0b"' 'run: {checkpoint_dir: "c\0d"}' \
         'data: {dataset: "synthetic\0x"}' 'train: {lr: "1e-3\0"}' '"mo\0del": {linear: cola}' 'model: {linear: "cola\x00"}'; do
    i=$((${i:-0} + 1)); printf '%s\n' "$k" >"$M/nul$i.yaml"
    expect_refused values "escaped_nul_$i" "NUL" "$B/info" --config "$M/nul$i.yaml"
done
mkfifo "$C/db.fifo"; mkdir -p "$C/db.dir"
for db in ':memory:' 'file::memory:' "file:$C/u.db?mode=rwc" ':x' '' /dev/null /dev/zero "$C/db.fifo" "$C/db.dir"; do
    i=$((i + 1))
    expect_refused values "run_db_${db:0:24}_$i" "run.db" "$B/train" "$C/tiny.yaml" --set "run.db=$db" $PK
done
[ -e "$C/u.db" ] && record values run_db_uri_created_file silent "file:...?mode=rwc created $C/u.db"
sqlite3 "$C/other.db" "CREATE TABLE invoices(id INTEGER, total REAL); INSERT INTO invoices VALUES (1, 9.5)"
expect_refused values unrelated_sqlite_file "something else" "$B/train" "$C/tiny.yaml" --set "run.db=$C/other.db" $PK
[ "$(sqlite3 "$C/other.db" "SELECT count(*) FROM sqlite_master")" = 1 ] || record values unrelated_sqlite_file_untouched silent "schema added"
for drop in steps runs events; do
    cp "$C/pristine.db" "$C/v3.db"; sqlite3 "$C/v3.db" "DROP VIEW IF EXISTS run_summary; DROP VIEW IF EXISTS latest_runs; DROP VIEW IF EXISTS launch_summary; DROP VIEW IF EXISTS simulated_runs; PRAGMA foreign_keys=OFF; DROP TABLE $drop"
    expect_refused internal "schema_without_$drop" "has no table $drop" "$B/train" "$C/tiny.yaml" --set "run.db=$C/v3.db" $PK
done
cp "$C/pristine.db" "$C/v99.db"; sqlite3 "$C/v99.db" "PRAGMA user_version=99"
expect_refused internal schema_newer "newer than this build" "$B/train" "$C/tiny.yaml" --set "run.db=$C/v99.db" $PK
head -c 5000 /dev/urandom >"$C/garbage.db"
expect_refused internal db_garbage "garbage.db" "$B/train" "$C/tiny.yaml" --set "run.db=$C/garbage.db" $PK
# names at the documented limits: they train; past them: refused where they enter
L=$TMP/long; mkdir -p "$L"
longname() { head -c "$1" /dev/zero | tr '\0' "$2"; }
for pair in 120:127 127:127 127:1 1:127; do
    e=$(longname ${pair%%:*} e); v=$(longname ${pair##*:} v)
    cat >"$L/$e.yaml" <<YAML
manifest_version: 1
name: $e
version: 1
model: {linear: cola, vocab_size: 64, n_layers: 1, d_model: 32, n_heads: 2, d_ff: 64, seq_len: 16}
data: {dataset: synthetic, synthetic_tokens: 20000, cache_dir: $C/cache}
train: {batch_size: 2, steps: 2, warmup_steps: 1, log_every: 100, threads: 1}
run: {db: $L/l.db, checkpoint_dir: $L/ck, checkpoint_every: 1}
variants:
  $v: {train.lr: 1e-3}
YAML
    expect_accepted values "names_${pair/:/_}_train" "$B/train" "$L/$e.yaml" --variant "$v" $PK
    rm -f "$L/$e.yaml"
done
e=$(longname 128 e); printf 'manifest_version: 1\nname: %s\nversion: 1\n' "$e" >"$L/$e.yaml"
expect_refused values experiment_name_128 "at most 127" "$B/info" --config "$L/$e.yaml"
for bad in 'a$b' 'a b' "a'b" 'a;b'; do
    f="$L/$bad.yaml"; printf 'manifest_version: 1\nname: "%s"\nversion: 1\n' "${bad//\"/\\\"}" >"$f"
    expect_refused values "experiment_name_${bad}" "an experiment name" "$B/info" --config "$f"
done

# ---- messages: a read-only place for the database names it -----------------------------------
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
    mkdir -p "$C/ro"; cp "$C/pristine.db" "$C/ro/runs.db"
    OUT=$(unshare -m bash -c 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && "$2" "$3" --set run.db="$1/runs.db" --peak-gflops 1 2>&1; echo "rc=$?"' _ "$C/ro" "$B/train" "$C/tiny.yaml" 2>&1)
    grep -q '^rc=2$' <<<"$OUT" && grep -qi "read-only\|not writable" <<<"$OUT" && ! grep -q "not a run database" <<<"$OUT" &&
        record message db_read_only_mount clean "$(grep -m1 error: <<<"$OUT")" || record message db_read_only_mount other "$(tail -2 <<<"$OUT")"
    OUT=$(unshare -m bash -c 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && "$2" "$3" --set run.db="$1/new.db" --peak-gflops 1 2>&1; echo "rc=$?"' _ "$C/ro" "$B/train" "$C/tiny.yaml" 2>&1)
    grep -q '^rc=2$' <<<"$OUT" && grep -qi "read-only\|not writable" <<<"$OUT" &&
        record message db_read_only_mount_new clean "$(grep -m1 error: <<<"$OUT")" || record message db_read_only_mount_new other "$(tail -2 <<<"$OUT")"
fi

# ---- completion: never 'completed' with rows that are not where the run says ------------------
restore
# step rows lost before the newest checkpoint: the resume recomputes them
q1 "$C/runs.db" "DELETE FROM steps WHERE step = 3"
run "$B/train" "$C/tiny.yaml" --resume --allow-change train.steps --set train.steps=6 $PK
n=$(q1 "$C/runs.db" "SELECT count(DISTINCT step) FROM steps WHERE run_id=(SELECT max(id) FROM runs) AND step BETWEEN 1 AND 6")
st=$(q1 "$C/runs.db" "SELECT status FROM runs ORDER BY id DESC LIMIT 1")
if [ $RC = 0 ] && [ "$n" = 6 ] && [ "$st" = completed ] && grep -q "rows were lost" <<<"$OUT"; then record completion lost_rows_recomputed clean "resumed from step 2"
elif [ "$st" = completed ] && [ "$n" != 6 ]; then record completion lost_rows_recomputed silent "completed with $n of 6 step rows"
else record completion lost_rows_recomputed other "exit $RC, $n rows, $st"; fi
restore; q1 "$C/runs.db" "DELETE FROM steps WHERE step = 1"
run "$B/train" "$C/tiny.yaml" --resume --allow-change train.steps --set train.steps=6 $PK
st=$(q1 "$C/runs.db" "SELECT status FROM runs ORDER BY id DESC LIMIT 1")
[ $RC = 2 ] && grep -q "step rows only up to step 0" <<<"$OUT" && record completion lost_first_row_refused clean "$(grep -m1 '^error' <<<"$OUT")" ||
    { [ "$st" = completed ] && record completion lost_first_row_refused silent "completed" || record completion lost_first_row_refused other "exit $RC: $(tail -1 <<<"$OUT")"; }
# the database renamed and its WAL deleted mid-run
restore
( "$B/train" "$C/tiny.yaml" --set train.steps=3000 --set run.checkpoint_every=1000 --set "run.db=$C/w.db" $PK >"$C/w.log" 2>&1; echo "rc=$?" >>"$C/w.log" ) &
for _ in $(seq 1 120); do grep -q "^step " "$C/w.log" 2>/dev/null && break; sleep 0.25; done
mv "$C/w.db" "$C/w2.db"; rm -f "$C/w.db-wal" "$C/w.db-shm"; wait
if grep -q "completed at step .* results $C/w.db" "$C/w.log"; then record completion db_renamed_mid_run silent "reported completed into $C/w.db"
elif grep -q "moved, deleted or replaced" "$C/w.log" && ! grep -q "^rc=0$" "$C/w.log"; then record completion db_renamed_mid_run clean "$(grep -m1 'moved' "$C/w.log")"
else record completion db_renamed_mid_run other "$(tail -2 "$C/w.log")"; fi
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
    mkdir -p "$C/full"
    OUT=$(unshare -m bash -c 'mount -t tmpfs -o size=200k tmpfs "$1" && "$2" "$3" --set train.steps=3000 --set run.checkpoint_every=1000 --set run.db="$1/runs.db" --set run.checkpoint_dir="$4" --peak-gflops 1 2>&1; echo "rc=$?"; cp "$1"/runs.db* "$5"/ 2>/dev/null' _ "$C/full" "$B/train" "$C/tiny.yaml" "$C/fullck" "$C" 2>&1)
    if grep -q '^rc=0$' <<<"$OUT"; then record completion db_full_disk silent "completed on a full disk"
    else record completion db_full_disk clean "$(grep -m1 'could not be written\|error:' <<<"$OUT")"; fi
fi

# ---- the database's identity and schema: refused by name, nothing made before a refusal -------
rm -rf "$C/xdir.db"
expect_refused internal run_db_trailing_slash "names a directory" "$B/train" "$C/tiny.yaml" --set "run.db=$C/xdir.db/" $PK
[ -e "$C/xdir.db" ] && record internal run_db_trailing_slash_made_nothing silent "left $C/xdir.db behind"
ln -sf "$C/nowhere/x.db" "$C/dangling.db"
expect_refused internal run_db_dangling_link "symbolic link to nothing" "$B/train" "$C/tiny.yaml" --set "run.db=$C/dangling.db" $PK
[ -e "$C/nowhere" ] && record internal run_db_dangling_link_made_nothing unsafe "created $C/nowhere through the link"
cp "$C/pristine.db" "$C/uv.db"; sqlite3 "$C/uv.db" "PRAGMA user_version=-1"
expect_refused internal schema_user_version_minus_1 "(PRAGMA user_version) is -1" "$B/train" "$C/tiny.yaml" --set "run.db=$C/uv.db" $PK
cp "$C/pristine.db" "$C/col.db"
sqlite3 "$C/col.db" "SELECT 'DROP VIEW ' || name || ';' FROM sqlite_master WHERE type = 'view'" | sqlite3 "$C/col.db"
sqlite3 "$C/col.db" "ALTER TABLE steps DROP COLUMN mfu"
expect_refused internal schema_4_steps_without_a_column "table steps without its column mfu" "$B/train" "$C/tiny.yaml" --set "run.db=$C/col.db" $PK

# ---- completion: a run's end is a fact --------------------------------------------------------
# a run plainly broken (a loss of 2.6e31 at every step): never 'completed'
run "$B/train" "$C/tiny.yaml" --set model.embed_std=1e30 --set "run.db=$C/e.db" $PK
st=$(q1 "$C/e.db" "SELECT status FROM runs ORDER BY id DESC LIMIT 1" 2>/dev/null)
if [ $RC = 1 ] && [ "$st" = failed ] && grep -q "did not train" <<<"$OUT"; then record completion embed_std_1e30 clean "$(grep -m1 '^error: ' <<<"$OUT" | head -c 200)"
elif [ $RC = 2 ] && grep -q "^error: .*model.embed_std" <<<"$OUT"; then record completion embed_std_1e30 clean "refused: $(grep -m1 '^error: ' <<<"$OUT")"
elif [ "$st" = completed ] || [ $RC = 0 ]; then record completion embed_std_1e30 silent "recorded $st, exit $RC"
else record completion embed_std_1e30 other "exit $RC, $st: $(tail -2 <<<"$OUT")"; fi
# the database written over in place mid-run by an older copy (after its WAL went into the file)
restore; cp "$C/pristine.db" "$C/ip.db"
( "$B/train" "$C/tiny.yaml" --set train.steps=6000 --set run.checkpoint_every=1000 --set "run.db=$C/ip.db" $PK >"$C/ip.log" 2>&1; echo "rc=$?" >>"$C/ip.log" ) &
for _ in $(seq 1 240); do grep -q "^step " "$C/ip.log" 2>/dev/null && break; sleep 0.25; done
sqlite3 "$C/ip.db" "PRAGMA wal_checkpoint(PASSIVE)" >/dev/null 2>&1; cp "$C/pristine.db" "$C/ip.db"; wait
if grep -q "completed at step .* results $C/ip.db" "$C/ip.log"; then record completion db_written_over_in_place silent "reported completed into $C/ip.db"
elif grep -q "not recorded as completed\|moved, deleted or replaced" "$C/ip.log" && ! grep -q "^rc=0$" "$C/ip.log"; then
    record completion db_written_over_in_place clean "$(grep -m1 '^error: ' "$C/ip.log" | head -c 200)"
else record completion db_written_over_in_place other "$(tail -2 "$C/ip.log" | tr '\n' ' ')"; fi

# ---- resources: a memory message and exit 2, never a hang --------------------------------------
mem_probe() {   # NAME ULIMIT-KB ARGS...
    local name=$1 kb=$2; shift 2
    run bash -c 'ulimit -v "$1"; shift; exec "$@"' _ "$kb" "$B/train" "$C/tiny.yaml" --set "run.db=$C/mem.db" "$@" $PK
    if [ $RC = 124 ] || [ $RC = 137 ]; then record resources "$name" hang "no end in ${T}s"
    elif [ $RC = 2 ] && grep -q "^error: out of \(memory\|resources\)" <<<"$OUT"; then record resources "$name" clean "$(grep -m1 '^error: ' <<<"$OUT" | head -c 200)"
    elif [ $RC = 127 ] && grep -q "error while loading shared libraries" <<<"$OUT"; then
        record resources "$name" clean "the loader refused: the binary's libraries alone need more ($(head -c 120 <<<"$OUT"))"
    elif [ $RC -gt 128 ]; then record resources "$name" crash "signal $((RC - 128)): $(tail -2 <<<"$OUT")"
    else record resources "$name" other "exit $RC: $(grep -m1 -E '^(error|fatal)' <<<"$OUT" || tail -2 <<<"$OUT")"; fi
}
mem_probe ulimit_v_200000_tiny 200000
mem_probe ulimit_v_1000000_cola_350m 1000000 --set model.preset=cola-350m
# nothing made before the memory refusal: a new database path and run folder stay absent
rm -rf "$C/memnew"
run bash -c 'ulimit -v 1000000; exec "$@"' _ "$B/train" "$C/tiny.yaml" --set model.preset=cola-350m --set "run.db=$C/memnew/runs.db" --set "run.checkpoint_dir=$C/memnew/ck" $PK
[ -e "$C/memnew" ] && record resources memory_refusal_made_nothing silent "left $(ls "$C/memnew")" || record resources memory_refusal_made_nothing clean "nothing made"

# ---- ownership: launches, live runs ------------------------------------------------------
O=$TMP/own; mkdir -p "$O"
mkexp() {   # NAME DB [VARIANT-DB]
    cat >"$O/$1.yaml" <<YAML
manifest_version: 1
name: $1
version: 1
model: {linear: cola, vocab_size: 64, n_layers: 1, d_model: 32, n_heads: 2, d_ff: 64, seq_len: 16}
data: {dataset: synthetic, synthetic_tokens: 20000, cache_dir: $C/cache}
train: {batch_size: 2, steps: ${STEPS:-2}, warmup_steps: 1, log_every: 1000, threads: 1}
run: {db: $2, checkpoint_dir: $O/ck, checkpoint_every: ${CKE:-1}, keep_last: 2}
variants:
  a: {train.lr: 1e-3}
  b: {train.lr: 2e-3${3:+, run.db: $3}}
YAML
}
mkexp first "$O/shared.db"; "$B/exp" "$O/first.yaml" >/dev/null 2>&1
mkexp second "$O/own.db" "$O/shared.db"
expect_refused ownership variant_db_elsewhere "one database" "$B/exp" "$O/second.yaml"
[ "$(q1 "$O/shared.db" "SELECT count(*) FROM runs WHERE launch_id=1 AND experiment<>'first'")" = 0 ] || record ownership launch_1_untouched silent "a foreign run joined launch 1"
mkexp second "$O/shared.db"
expect_refused ownership train_joins_foreign_launch "its experiment differs" "$B/train" "$O/second.yaml" --variant a --launch 1 $PK
expect_refused ownership train_joins_missing_launch "has no launch 99" "$B/train" "$O/second.yaml" --variant a --launch 99 $PK
cp "$O/first.yaml" "$O/first.orig"; sed -i 's/steps: 2,/steps: 3,/' "$O/first.yaml"
expect_refused ownership train_joins_launch_other_text "its manifest text differs" "$B/train" "$O/first.yaml" --variant a --launch 1 $PK
mv "$O/first.orig" "$O/first.yaml"
# A launch of one variant, stopped; then two resumes at once: the second is refused, the
# variant keeps ONE run, completed. Variant a is stopped once its first checkpoint (step 500
# of 20000) exists, so its resume continues from a checkpoint; variant b after step 1
# (BOOST_FAULT), before any checkpoint, so its resume trains the same run again from step 0.
# (Stopping a at its first step line, as this probe once did, took either path by chance.)
concurrent_resume() {   # NAME VARIANT
    local v=$2 e1 r1 r2 st
    "$B/exp" "$O/live.yaml" --resume >"$O/$v.1.log" 2>&1 & e1=$!
    for _ in $(seq 1 200); do grep -q "^resumed " "$O/$v.1.log" && break; sleep 0.25; done
    "$B/exp" "$O/live.yaml" --resume >"$O/$v.2.log" 2>&1; r2=$?
    wait $e1; r1=$?
    st=$(q1 "$O/live.db" "SELECT group_concat(status, ' ') FROM (SELECT status FROM runs WHERE variant='$v' ORDER BY id)")
    if [ $r1 = 0 ] && [ "$st" = completed ] && grep -q "is live" "$O/$v.2.log"; then record ownership "$1" clean "second refused, live run completed"
    elif [ "$st" != completed ]; then record ownership "$1" silent "variant $v has runs '$st', not one completed run"
    else record ownership "$1" other "first $r1 second $r2 $st"; fi
}
STEPS=20000 CKE=500 mkexp live "$O/live.db"
"$B/exp" "$O/live.yaml" --variant a >"$O/l0.log" 2>&1 & e0=$!
for _ in $(seq 1 400); do compgen -G "$O/ck/live.a.*/step_*.h5" >/dev/null && break; sleep 0.05; done
kill -TERM $e0; wait $e0   # no sleep: a fast machine leaves the resume steps to train
concurrent_resume concurrent_resume a
BOOST_FAULT=signal=0@1:TERM "$B/exp" "$O/live.yaml" --variant b >"$O/l0b.log" 2>&1
concurrent_resume concurrent_resume_before_first_checkpoint b

# ---- signals and liveness ------------------------------------------------------------------
# steps enough that no run ends by itself within the probes' seconds on a quiet machine (a step is ~0.1 ms)
STEPS=20000000 CKE=100000 mkexp sig "$O/sig.db"
waitlog() { for _ in $(seq 1 240); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.25; done; return 1; }
make --no-print-directory exp EXP="$O/sig.yaml" VARIANT=a >"$O/s1.log" 2>&1 & mk=$!
waitlog "$O/s1.log" "^step "; sleep 1; kill -TERM $mk; wait $mk; rc=$?
st=$(q1 "$O/sig.db" "SELECT status FROM runs ORDER BY id DESC LIMIT 1")
[ $rc = 143 ] && [ "$st" = interrupted ] && grep -q "^interrupted: resume with" "$O/s1.log" && record signals term_to_make clean "143, interrupted" ||
    record signals term_to_make other "make exit $rc, run $st"
/usr/bin/python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.setsid(); os.execvp(sys.argv[1], sys.argv[1:])' \
    make --no-print-directory exp EXP="$O/sig.yaml" RESUME=1 >"$O/s2.log" 2>&1 & mk=$!
waitlog "$O/s2.log" "^resumed "; sleep 1; kill -INT -- -$mk; wait $mk; rc=$?
st=$(q1 "$O/sig.db" "SELECT status FROM runs ORDER BY id DESC LIMIT 1")
[ $rc = 130 ] && [ "$st" = interrupted ] && record signals ctrl_c_to_make clean "130, interrupted" || record signals ctrl_c_to_make other "make exit $rc, run $st"
make --no-print-directory exp EXP="$O/sig.yaml" RESUME=1 >"$O/s3.log" 2>&1 & mk=$!
waitlog "$O/s3.log" "^resumed "; sleep 1; proc_signal TERM -P $mk build/exp; wait $mk; rc=$?
[ $rc = 143 ] && record signals term_to_exp_under_make clean "make exit 143" || record signals term_to_exp_under_make other "make exit $rc"
cat >"$O/tp.yaml" <<YAML
name: tp
model: {linear: cola, vocab_size: 64, n_layers: 2, d_model: 32, n_heads: 4, d_ff: 64, seq_len: 16}
data: {dataset: synthetic, synthetic_tokens: 20000, cache_dir: $C/cache}
train: {batch_size: 2, steps: 1000000, warmup_steps: 1, min_lr_ratio: 1, log_every: 100000, threads: 1}
parallel: {tp: 2}
run: {db: $O/tp.db, checkpoint_dir: $O/tpck, checkpoint_every: 0}
YAML
STOP_SECONDS=-
for how in STOP KILL; do
    rm -rf "$O/tpck"
    timeout 300 mpirun --oversubscribe -np 2 "$B/train" "$O/tp.yaml" $PK >"$O/$how.log" 2>&1 & mp=$!
    f=; for _ in $(seq 1 240); do f=$(ls "$O"/tpck/*/.heartbeat/rank_1 2>/dev/null | tail -1); [ -n "$f" ] && break; sleep 0.25; done
    pid=$(awk '$1 == "pid" {print $2}' "$f" 2>/dev/null); sleep 1
    t0=$(date +%s.%N); kill -$how "$pid"; wait $mp; rc=$?; t1=$(date +%s.%N)
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b - a}')
    row=$(q1 "$O/tp.db" "SELECT status || '|' || error FROM runs ORDER BY id DESC LIMIT 1")
    if [ $rc = 124 ]; then record signals "kill_${how}_rank_1_tp2" hang "no end in 300 s"
    elif [[ "$row" == "failed|rank 1 of 2 (pid $pid "* ]]; then record signals "kill_${how}_rank_1_tp2" clean "${secs} s: ${row:0:120}"
    else record signals "kill_${how}_rank_1_tp2" other "after ${secs} s: $row"; fi
    [ $how = STOP ] && STOP_SECONDS=$secs
done
echo "kill -STOP of rank 1 at tp 2: ended after $STOP_SECONDS s (watchdog timeout $(( ${BOOST_LIVENESS_TIMEOUT:-30} )) s)" >>"$LOG"

# a closed output: build/train ... | head -1 stops the run as SIGPIPE would, recorded 'interrupted'
timeout -k 5 "$T" "$B/train" "$O/tp.yaml" --set parallel.tp=1 --set "run.db=$O/pipe.db" $PK 2>"$O/pipe.err" </dev/null | head -1 >/dev/null
rc=${PIPESTATUS[0]}
row=$(q1 "$O/pipe.db" "SELECT status || '|' || coalesce(error, '') FROM runs ORDER BY id DESC LIMIT 1" 2>/dev/null)
if [ "$rc" = 141 ] && [[ "$row" == interrupted\|* ]]; then record signals stdout_closed_head_1 clean "exit 141, ${row:0:100}"
elif [[ "$row" == running\|* ]]; then record signals stdout_closed_head_1 silent "exit $rc, the run left 'running'"
else record signals stdout_closed_head_1 other "exit $rc, run '${row:0:100}'"; fi

# ---- quoted output: every printed command pastes as exactly itself ----------------------------
# Folders with shell syntax in their names hold the manifest, the database and the
# checkpoints; exp's and train's printed commands (the run line, figures, query, resume)
# are each pasted into bash in an empty folder: nothing may be created there, and the
# words must be the ones meant.
paste_check() {   # NAME LINE WANT-WORD
    local name=$1 line=$2 want=$3 sand
    sand=$(mktemp -d)
    local words
    words=$(cd "$sand" && timeout 10 bash -c "w() { printf '%s\n' \"\$@\"; }; w $line" 2>&1)
    if [ -n "$(ls -A "$sand")" ]; then record quoting "$name" unsafe "pasting created $(ls -A "$sand" | head -1)"
    elif grep -qxF -- "$want" <<<"$words"; then record quoting "$name" clean "one word: $want"
    else record quoting "$name" unsafe "words: $(head -c 200 <<<"$words" | tr '\n' '|')"; fi
    rm -rf "$sand"
}
qi=0
for dname in 'a b' 'a$(touch x)b' 'a`touch x`b' "a'b" 'a"b' 'a;touch x' 'a|touch x' 'a&touch x' 'a>x' 'a*' 'a\b' '$HOME'; do
    qi=$((qi + 1)); QD=$TMP/q$qi/$dname; mkdir -p "$QD"
    cat >"$QD/quo.yaml" <<YAML
manifest_version: 1
name: quo
version: 1
model: {linear: cola, vocab_size: 64, n_layers: 1, d_model: 32, n_heads: 2, d_ff: 64, seq_len: 16}
data: {dataset: synthetic, synthetic_tokens: 20000, cache_dir: $C/cache}
train: {batch_size: 2, steps: 3, warmup_steps: 1, log_every: 1000, threads: 1}
run: {db: '${QD//\'/\'\'}/q.db', checkpoint_dir: '${QD//\'/\'\'}/ck', checkpoint_every: 1}
YAML
    OUT=$(BOOST_FAULT=signal=0@1:TERM:parent timeout "$T" "$B/exp" "$QD/quo.yaml" 2>&1)
    l_run=$(grep -m1 '^\$ ' <<<"$OUT" | sed 's/^\$ //')
    # (a figures line comes once a run of the launch completed: from the resume that finishes it)
    OUT2=$(timeout "$T" "$B/exp" "$QD/quo.yaml" --resume 2>&1)
    l_fig=$(grep -m1 '^  figures: ' <<<"$OUT2" | sed 's/^  figures: *//')
    l_q=$(grep -m1 '^  query: ' <<<"$OUT" | sed 's/^  query: *//')
    l_res=$(grep -m1 '^interrupted: resume with ' <<<"$OUT" | sed 's/^interrupted: resume with *//')
    l_tr=$(grep -m1 '^resume with: ' <<<"$OUT" | sed 's/^resume with: *//')
    [ -n "$l_run" ] && paste_check "run_line_$qi" "$l_run" "$QD/quo.yaml" || record quoting "run_line_$qi" other "no run line: $(tail -2 <<<"$OUT")"
    [ -n "$l_fig" ] && paste_check "figures_line_$qi" "$l_fig" "$QD/q.db" || record quoting "figures_line_$qi" other "no figures line"
    [ -n "$l_q" ] && paste_check "query_line_$qi" "$l_q" "$QD/q.db" || record quoting "query_line_$qi" other "no query line"
    [ -n "$l_res" ] && paste_check "exp_resume_line_$qi" "$l_res" "$QD/quo.yaml" || record quoting "exp_resume_line_$qi" other "no resume line"
    [ -n "$l_tr" ] && paste_check "train_resume_line_$qi" "$l_tr" "$QD/quo.yaml" || record quoting "train_resume_line_$qi" other "no train resume line"
done
# hints: never "rm -rf" of a folder boost-c did not make
W=$TMP/userdir; mkdir -p "$W"; cp "$P/tokenizer.bin" "$W/tokenizer.bin"; cp "$P/val.tok" "$W/val.tok"
patch "$W/tokenizer.bin" 24 '\xff\xff\xff\x00'
OUT=$(cd "$W" && "$B/prepare" --encode tokenizer.bin aa 2>&1)
grep -q "rm -rf" <<<"$OUT" && record quoting hint_tokenizer_in_user_dir unsafe "$(grep -m1 'rm -rf' <<<"$OUT")" || record quoting hint_tokenizer_in_user_dir clean "no deletion suggested"
truncate -s 10 "$W/val.tok"
OUT=$(cd "$W" && "$B/prepare" --check . 2>&1)
grep -q "rm -rf" <<<"$OUT" && record quoting hint_check_dot unsafe "$(grep -m1 'rm -rf' <<<"$OUT")" || record quoting hint_check_dot clean "no deletion suggested"
bad; truncate -s 10 "$D/bad/val.tok"; touch "$D/bad/prepared.ok" 2>/dev/null
OUT=$("$B/prepare" --check "$D/bad" 2>&1)
if grep -q "rm -rf '$(realpath "$D/bad")'\|rm -rf $(realpath "$D/bad")" <<<"$OUT" || ! grep -q "rm -rf" <<<"$OUT"; then record quoting hint_cache_entry clean "$(grep -m1 hint <<<"$OUT")"
else record quoting hint_cache_entry unsafe "$(grep -m1 'rm -rf' <<<"$OUT")"; fi
