#!/usr/bin/env bash
# probe.sh — `make probes`: hostile inputs and faults, each through the real binaries
# (build/train, build/info, build/prepare, build/test_store's checkpoint helpers), each
# outcome classified:
#   clean      refused with exit 2 and a message naming the file (or, for a damaged
#              checkpoint, skipped with a warning and the run resumed from an older one)
#   accepted   a valid input taken as such (a probe that is legal, e.g. a merge key)
#   crash      killed by a signal
#   hang       still running after PROBE_TIMEOUT seconds (default 60)
#   silent     accepted although it is wrong (a damaged checkpoint loaded, a bad file used)
#   unsafe     something a user could be harmed by: a printed command that runs more than it
#              says when pasted, a deletion hint for a folder boost-c did not make, a file
#              outside the run's own folders written or deleted
#   other      anything else (a wrong exit code, a message that names nothing)
# Prints one line per probe to BUILD/probes.log, a table per kind, and exits 1 if any
# probe crashed, hung, was silently accepted or ended otherwise. docs/reliability.md holds
# the figures of the last full run. PROBE_TRIALS (default 30) damaged-checkpoint resumes.
set -u
cd "$(dirname "$0")/.."
B=${BUILD:-build}
T=${PROBE_TIMEOUT:-60}
TRIALS=${PROBE_TRIALS:-30}
for b in train info prepare test_store exp; do [ -x "$B/$b" ] || { echo "error: $B/$b not built (make all)" >&2; exit 2; }; done
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OMP_WAIT_POLICY=passive
TMP=$(mktemp -d); trap 'chmod -R u+w "$TMP" 2>/dev/null; rm -rf "$TMP"' EXIT
LOG=$B/probes.log; : >"$LOG"
declare -A N CLEAN ACCEPTED CRASH HANG SILENT UNSAFE OTHER
KINDS=()

record() {   # KIND NAME OUTCOME DETAIL
    local k=$1
    [ -n "${N[$k]+x}" ] || { KINDS+=("$k"); N[$k]=0; CLEAN[$k]=0; ACCEPTED[$k]=0; CRASH[$k]=0; HANG[$k]=0; SILENT[$k]=0; UNSAFE[$k]=0; OTHER[$k]=0; }
    N[$k]=$((N[$k] + 1))
    case $3 in
        clean) CLEAN[$k]=$((CLEAN[$k] + 1)) ;; accepted) ACCEPTED[$k]=$((ACCEPTED[$k] + 1)) ;;
        crash) CRASH[$k]=$((CRASH[$k] + 1)) ;; hang) HANG[$k]=$((HANG[$k] + 1)) ;;
        silent) SILENT[$k]=$((SILENT[$k] + 1)) ;; unsafe) UNSAFE[$k]=$((UNSAFE[$k] + 1)) ;; *) OTHER[$k]=$((OTHER[$k] + 1)) ;;
    esac
    printf '%-10s %-44s %-8s %s\n' "$k" "$2" "$3" "$(head -c 300 <<<"$4" | tr '\n' ' ')" >>"$LOG"
    case $3 in clean|accepted) ;; *) tail -1 "$LOG" >>"$TMP/bad" ;; esac   # (listed under the table)
}

# run CMD... : sets RC and OUT (stderr+stdout), with the timeout
run() { OUT=$(timeout -k 5 "$T" "$@" 2>&1 </dev/null); RC=$?; }
# classify a probe that must be refused: exit 2 and the message names WANT (usually the file)
expect_refused() {   # KIND NAME WANT CMD...
    local k=$1 name=$2 want=$3; shift 3
    run "$@"
    if [ $RC = 124 ] || [ $RC = 137 ]; then record "$k" "$name" hang "no answer in ${T}s"
    elif [ $RC -gt 128 ]; then record "$k" "$name" crash "signal $((RC - 128)): $(tail -2 <<<"$OUT")"
    elif [ $RC = 2 ] && grep -q "^error: " <<<"$OUT" && grep -qF -- "$want" <<<"$OUT"; then record "$k" "$name" clean "$(grep -m1 '^error: ' <<<"$OUT")"
    elif [ $RC = 0 ]; then record "$k" "$name" silent "accepted: $(tail -1 <<<"$OUT")"
    else record "$k" "$name" other "exit $RC: $(tail -2 <<<"$OUT")"; fi
}
expect_accepted() {   # KIND NAME CMD...
    local k=$1 name=$2; shift 2
    run "$@"
    if [ $RC = 124 ] || [ $RC = 137 ]; then record "$k" "$name" hang "no answer in ${T}s"
    elif [ $RC -gt 128 ]; then record "$k" "$name" crash "signal $((RC - 128))"
    elif [ $RC = 0 ]; then record "$k" "$name" accepted ""
    else record "$k" "$name" other "exit $RC: $(tail -2 <<<"$OUT")"; fi
}

# ---- manifests and configuration (build/info --config: the parser build/train uses) ------
M=$TMP/m; mkdir -p "$M"
y() { printf '%b' "$2" >"$M/$1.yaml"; }
mkfifo "$M/fifo.yaml"
expect_refused manifest dev_zero "/dev/zero" "$B/info" --config /dev/zero
expect_refused manifest fifo "fifo.yaml" "$B/info" --config "$M/fifo.yaml"
OUT=$(echo 'model: {d_model: 64}' | timeout -k 5 "$T" "$B/info" --config /dev/stdin 2>&1 >/dev/null); RC=$?
[ $RC = 2 ] && grep -q "/dev/stdin" <<<"$OUT" && record manifest dev_stdin_pipe clean "$OUT" || record manifest dev_stdin_pipe other "exit $RC: $OUT"
expect_refused manifest directory "$M" "$B/info" --config "$M"
expect_refused manifest missing "nope.yaml" "$B/info" --config "$M/nope.yaml"
y empty ''; expect_refused manifest empty "empty.yaml" "$B/info" --config "$M/empty.yaml"
y comments '# a comment\n\n# another\n'; expect_refused manifest comments_only "comments.yaml" "$B/info" --config "$M/comments.yaml"
head -c $((1024 * 1024 + 1)) /dev/zero | tr '\0' '#' >"$M/huge.yaml"; expect_refused manifest oversized "huge.yaml" "$B/info" --config "$M/huge.yaml"
{ echo 'a: &a ["x","x","x","x","x","x","x","x","x"]'; p=a
  for n in b c d e f g h i; do echo "$n: &$n [*$p,*$p,*$p,*$p,*$p,*$p,*$p,*$p,*$p]"; p=$n; done; } >"$M/bomb.yaml"
expect_refused manifest alias_bomb_600_bytes "bomb.yaml" bash -c 'ulimit -v 3000000; exec "$@"' _ "$B/info" --config "$M/bomb.yaml"
{ echo 'a: &a [x,x]'; p=a; for i in $(seq 1 40); do echo "b$i: &b$i [*$p,*$p]"; p=b$i; done; } >"$M/bomb2.yaml"
expect_refused manifest alias_bomb_binary_40_levels "bomb2.yaml" bash -c 'ulimit -v 3000000; exec "$@"' _ "$B/info" --config "$M/bomb2.yaml"
python3 -c "print('model: ' + '['*100000 + ']'*100000)" >"$M/deep.yaml"; expect_refused manifest nesting_100000 "deep.yaml" "$B/info" --config "$M/deep.yaml"
y dirutf8 '%?\xd3\xdf\n'; expect_refused manifest directive_invalid_utf8 "dirutf8.yaml" "$B/info" --config "$M/dirutf8.yaml"
y utf8 'model: {linear: "\xff\xfe"}\n'; expect_refused manifest invalid_utf8_value "utf8.yaml" "$B/info" --config "$M/utf8.yaml"
y nul 'model: {linear: "a\x00b"}\n'; expect_refused manifest nul_byte "nul.yaml" "$B/info" --config "$M/nul.yaml"
y undef 'train: *nowhere\n'; expect_refused manifest undefined_alias "undef.yaml" "$B/info" --config "$M/undef.yaml"
y selfalias 'a: &x [*x]\n'; expect_refused manifest self_alias "selfalias.yaml" "$B/info" --config "$M/selfalias.yaml"
y mergebad 'train: {<<: 5}\n'; expect_refused manifest merge_of_a_scalar "mergebad.yaml" "$B/info" --config "$M/mergebad.yaml"
y aliasvar 'train: &b {lr: 0.002}\nvariants: {v: {train: *b}}\n'; expect_accepted manifest alias_in_variant "$B/info" --config "$M/aliasvar.yaml"
y mergeok 'train: &t {lr: 0.002, steps: 30, warmup_steps: 3}\nvariants: {v: {train: {<<: *t, steps: 40}}}\n'
expect_accepted manifest merge_key "$B/info" --config "$M/mergeok.yaml"
for len in 127 128 200 255 256 300; do
    y "var$len" "variants:\n  $(printf 'v%.0s' $(seq 1 $len)): {}\n  other: {}\n"
    if [ $len -le 127 ]; then expect_accepted manifest "variant_name_$len" "$B/info" --config "$M/var$len.yaml" --variant other
    else expect_refused manifest "variant_name_$len" "var$len.yaml" "$B/info" --config "$M/var$len.yaml"; fi
done
y gridbig "variants:\n  grid: {train.lr: [$(seq -s, 1 70)], train.seed: [$(seq -s, 1 70)]}\n"
expect_refused manifest grid_4900_variants "gridbig.yaml" "$B/info" --config "$M/gridbig.yaml"
y dup 'model:\n  d_model: 64\n  d_model: 32\n'; expect_refused manifest duplicate_key "dup.yaml" "$B/info" --config "$M/dup.yaml"
y cyc_a 'extends: cyc_b.yaml\n'; y cyc_b 'extends: cyc_a.yaml\n'; expect_refused manifest extends_cycle "cyc_a.yaml" "$B/info" --config "$M/cyc_a.yaml"
y extzero 'extends: /dev/zero\n'; expect_refused manifest extends_dev_zero "extzero.yaml" "$B/info" --config "$M/extzero.yaml"
y extfifo "extends: $M/fifo.yaml\n"; expect_refused manifest extends_fifo "extfifo.yaml" "$B/info" --config "$M/extfifo.yaml"
y complexkey '? [a, b]\n: 1\n'; expect_refused manifest complex_key "complexkey.yaml" "$B/info" --config "$M/complexkey.yaml"
y toplist '- a\n- b\n'; expect_refused manifest top_level_list "toplist.yaml" "$B/info" --config "$M/toplist.yaml"
for kv in "model.rank_attn=200" "train.threads=5000" "model.vocab_size=2000000000" "model.seq_len=99999999" \
          "train.batch_size=2147483647" "train.steps=-1" "train.lr=nan" "train.lr=inf" "train.lr=1e400" "model.norm_eps=0" \
          "train.seed=-1" "train.seed=18446744073709551616" "model.n_layers=99999999999" "data.synthetic_tokens=99999999999999" \
          "data.val_fraction=0.5" "model.n_heads=0" "model.d_model=100000000" "train.warmup_steps=1000" "run.keep_last=0" \
          "run.dump_steps=1,,2" "data.dataset=text:" "model.preset=cola-60" "parallel.tp=0"; do
    expect_refused config "set_${kv%%=*}=${kv#*=}" "${kv%%=*}" "$B/info" --set model.d_model=128 --set "$kv"
done
expect_refused config tokens_per_batch_overflow "train.batch_size * model.seq_len" "$B/info" --set train.batch_size=65536 --set model.seq_len=65536
expect_refused config run_tokens_overflow "overflows a 64-bit count" "$B/info" --set train.steps=2000000000 --set train.grad_accum=2000000000 --set train.batch_size=1000
expect_refused config parameters_over_limit "parameters" "$B/info" --linear dense --set model.n_layers=60000 --set model.d_model=1000000 --set model.n_heads=1 --set model.d_ff=1000000
expect_refused config attention_buffer_over_limit "attention probabilities" "$B/info" --set train.batch_size=1 --set model.seq_len=1048576 --set model.n_heads=2 --set model.d_model=128
for f in "$M/bomb.yaml" "$M/fifo.yaml" /dev/zero "$M/empty.yaml"; do
    expect_refused train "train_$(basename "$f")" "$(basename "$f")" "$B/train" "$f" --no-db
done

# ---- data files (build/prepare, the same readers training uses) --------------------------
D=$TMP/d; mkdir -p "$D"
for i in $(seq 1 300); do echo "line $i: In the beginning God created the heaven and the earth."; done >"$D/corpus.txt"
"$B/prepare" --dataset "text:$D/corpus.txt" --vocab 300 --cache-dir "$D/cache" --val-fraction 0.1 >"$D/out" 2>&1
P=$(awk '$1 == "dir" {print $2}' "$D/out")
mkfifo "$D/fifo"
expect_refused data tokenizer_dev_zero "/dev/zero" "$B/prepare" --encode /dev/zero hi
expect_refused data tokenizer_fifo "fifo" "$B/prepare" --encode "$D/fifo" hi
expect_refused data corpus_dev_zero "/dev/zero" "$B/prepare" --dataset text:/dev/zero --vocab 300 --cache-dir "$D/c2"
expect_refused data corpus_fifo "fifo" "$B/prepare" --dataset "text:$D/fifo" --vocab 300 --cache-dir "$D/c2"
expect_refused data corpus_directory "$D" "$B/prepare" --dataset "text:$D" --vocab 300 --cache-dir "$D/c2"
: >"$D/empty.txt"; expect_refused data corpus_empty "empty.txt" "$B/prepare" --dataset "text:$D/empty.txt" --vocab 300 --cache-dir "$D/c2"
bad() { rm -rf "$D/bad"; cp -r "$P" "$D/bad"; }
patch() { printf '%b' "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }
bad; truncate -s -1 "$D/bad/train.tok"; expect_refused data shard_truncated "train.tok" "$B/prepare" --check "$D/bad"
bad; truncate -s 10 "$D/bad/val.tok"; expect_refused data shard_shorter_than_header "val.tok" "$B/prepare" --check "$D/bad"
bad; patch "$D/bad/train.tok" 0 'XXXX'; expect_refused data shard_bad_magic "train.tok" "$B/prepare" --check "$D/bad"
bad; patch "$D/bad/train.tok" 16 '\xff\xff\xff\xff\xff\xff\xff\x7f'; expect_refused data shard_count_overflow "train.tok" "$B/prepare" --check "$D/bad"
bad; patch "$D/bad/train.tok" 12 '\x00\x00\x00\x00'; expect_refused data shard_vocab_zero "train.tok" "$B/prepare" --check "$D/bad"
bad; patch "$D/bad/train.tok" 100 '\xff\xff'; expect_refused data shard_token_out_of_range "train.tok" "$B/prepare" --check "$D/bad"
bad; rm "$D/bad/train.tok"; mkfifo "$D/bad/train.tok"; expect_refused data shard_fifo "train.tok" "$B/prepare" --check "$D/bad"
bad; rm "$D/bad/train.tok"; ln -s /dev/zero "$D/bad/train.tok"; expect_refused data shard_dev_zero "train.tok" "$B/prepare" --check "$D/bad"
bad; truncate -s -8 "$D/bad/tokenizer.bin"; expect_refused data tokenizer_truncated "tokenizer.bin" "$B/prepare" --check "$D/bad"
bad; patch "$D/bad/tokenizer.bin" 24 '\xff\xff\xff\x00'; expect_refused data tokenizer_forward_reference "tokenizer.bin" "$B/prepare" --check "$D/bad"
bad; patch "$D/bad/tokenizer.bin" 12 '\xff\xff\xff\x7f'; expect_refused data tokenizer_vocab_mismatch "tokenizer.bin" "$B/prepare" --check "$D/bad"
# cache entries that are not what prepared.ok says: rebuilt (clean = the next run rebuilds and then uses it)
prep() { "$B/prepare" --dataset "text:$D/corpus.txt" --vocab 300 --cache-dir "$D/cache" --val-fraction 0.1 2>&1; }
for probe in missing_val missing_train missing_tokenizer false_counts false_vocab garbled_marker; do
    case $probe in
        missing_val) rm -f "$P/val.tok" ;; missing_train) rm -f "$P/train.tok" ;; missing_tokenizer) rm -f "$P/tokenizer.bin" ;;
        false_counts) sed -i 's/^train_tokens .*/train_tokens 5/' "$P/prepared.ok" ;;
        false_vocab) sed -i 's/^vocab_size .*/vocab_size 299/' "$P/prepared.ok" ;;
        garbled_marker) printf 'vocab_size -3\n' >"$P/prepared.ok" ;;
    esac
    OUT=$(timeout "$T" bash -c "$(declare -f prep); B=$B D=$D prep"); RC=$?
    if [ $RC = 0 ] && grep -q "is not usable" <<<"$OUT" && grep -q "using cached" <<<"$(prep)" &&
       "$B/prepare" --check "$P" >/dev/null 2>&1; then record cache "$probe" clean "rebuilt"
    else record cache "$probe" other "exit $RC: $(tail -2 <<<"$OUT")"; fi
done

# ---- checkpoints -----------------------------------------------------------------------
C=$TMP/c; mkdir -p "$C"
cat >"$C/tiny.yaml" <<YAML
name: tiny
model: {linear: cola, vocab_size: 64, n_layers: 2, d_model: 32, n_heads: 4, d_ff: 64, seq_len: 16}
data: {dataset: synthetic, synthetic_tokens: 20000, cache_dir: $C/cache}
train: {batch_size: 2, steps: 4, warmup_steps: 1, min_lr_ratio: 1, log_every: 100, threads: 1}
run: {db: $C/runs.db, checkpoint_dir: $C/ckpt, checkpoint_every: 2, keep_last: 5}
YAML
"$B/train" "$C/tiny.yaml" >"$C/first.log" 2>&1 || { echo "error: the probe run failed: $(tail -3 "$C/first.log")" >&2; exit 1; }
RUN=$(ls -d "$C"/ckpt/tiny.default.* | tail -1)
sqlite3 "$C/runs.db" 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null   # (the database is in WAL mode: all of it into runs.db)
cp -r "$C/ckpt" "$C/ckpt.pristine"; cp "$C/runs.db" "$C/pristine.db"
GOOD=$RUN/step_4.h5
SIZE=$(stat -c %s "$GOOD")
restore() { rm -rf "$C/ckpt" "$C/runs.db"*; cp -r "$C/ckpt.pristine" "$C/ckpt"; cp "$C/pristine.db" "$C/runs.db"; }
# damage step_4 with DAMAGE (a command on the file), resume to 6 steps: it must fall back to step 2
resume_probe() {   # NAME DAMAGE-COMMAND...
    local name=$1; shift
    restore
    "$@" "$RUN/step_4.h5"
    if [ -f "$RUN/step_4.h5" ] && cmp -s "$RUN/step_4.h5" "$C/ckpt.pristine/$(basename "$RUN")/step_4.h5"; then record checkpoint "$name" accepted "(damage changed no byte)"; return; fi
    run "$B/train" "$C/tiny.yaml" --resume --allow-change train.steps --set train.steps=6
    if [ $RC = 124 ] || [ $RC = 137 ]; then record checkpoint "$name" hang ""
    elif [ $RC -gt 128 ]; then record checkpoint "$name" crash "signal $((RC - 128)): $(tail -2 <<<"$OUT")"
    elif [ $RC = 0 ] && grep -q "skipping checkpoint $RUN/step_4.h5" <<<"$OUT" && grep -q "(step 2)" <<<"$OUT"; then
        record checkpoint "$name" clean "$(grep -m1 'skipping checkpoint' <<<"$OUT")"
    elif [ $RC = 0 ]; then record checkpoint "$name" silent "resumed from the damaged file: $(grep -m1 resumed <<<"$OUT")"
    elif [ $RC = 2 ] && grep -q "^error: .*$RUN/step_4.h5" <<<"$OUT"; then   # (e.g. a directory in its place: it cannot be rewritten)
        record checkpoint "$name" clean "$(grep -m1 '^error: ' <<<"$OUT")"
    else record checkpoint "$name" other "exit $RC: $(tail -2 <<<"$OUT")"; fi
}
blocks() {   # FILE: 1-3 random 256-byte blocks of random bytes at random offsets
    local f=$1 k
    for k in $(seq 1 $((RANDOM % 3 + 1))); do
        head -c 256 /dev/urandom | dd of="$f" bs=1 seek=$(( (RANDOM * 32768 + RANDOM) % (SIZE - 256) )) conv=notrunc status=none
    done
}
for i in $(seq 1 "$TRIALS"); do resume_probe "random_256_byte_blocks_$i" blocks; done
for cut in 100 511 512 4096 $((SIZE / 2)) $((SIZE - 1)); do resume_probe "truncated_to_$cut" truncate -s "$cut"; done
resume_probe zeroed_superblock bash -c 'dd if=/dev/zero of="$1" bs=1 seek=512 count=64 conv=notrunc status=none' _
resume_probe zeroed_checksum_block bash -c 'dd if=/dev/zero of="$1" bs=1 count=512 conv=notrunc status=none' _
resume_probe appended_bytes bash -c 'echo extra >>"$1"' _
resume_probe replaced_by_garbage bash -c 'head -c 30000 /dev/urandom >"$1"' _
resume_probe replaced_by_directory bash -c 'rm "$1"; mkdir "$1"' _
resume_probe replaced_by_fifo bash -c 'rm "$1"; mkfifo "$1"' _
# damage behind a valid checksum block (a tool that edits and reseals): HDF5 and the inner checks
reseal() { "$B/test_store" --reseal "$1" 4 >/dev/null 2>&1; }
hdr() {   # FILE OBJECT: file offset of the object's header (HDF5 addresses start after the user block)
    /usr/bin/python3 -c 'import sys, h5py
f = h5py.File(sys.argv[1], "r"); print(h5py.h5o.get_info(f[sys.argv[2]].id).addr + f.userblock_size)' "$1" "$2"
}
export -f hdr reseal; export B
for obj in /model/layers/0/attn/q/A /optimizer/v/embed_tokens /model /optimizer; do
        resume_probe "resealed_object_header_${obj//\//_}" bash -c 'off=$(hdr "$2" "$1"); dd if=/dev/urandom of="$2" bs=1 seek=$((off + 6)) count=40 conv=notrunc status=none; reseal "$2"' _ "$obj"
done
for ds in /model/layers/1/mlp/up/B /optimizer/m/final_norm; do   # one tensor's data, resealed: its own crc32 catches it
    resume_probe "resealed_tensor_data_${ds//\//_}" bash -c 'off=$(/usr/bin/python3 -c "import sys, h5py; print(h5py.File(sys.argv[1], \"r\")[sys.argv[2]].id.get_offset())" "$2" "$1"); printf "\x7f\x7f\x7f\x7f" | dd of="$2" bs=1 seek=$((off + 4)) conv=notrunc status=none; reseal "$2"' _ "$ds"
done
# direct reads of damaged files (checkpoint_read, exit 2 expected)
restore
cp "$GOOD" "$C/x.h5"; truncate -s $((SIZE / 3)) "$C/x.h5"
expect_refused checkpoint read_truncated "x.h5" "$B/test_store" --read-checkpoint "$C/x.h5" cola
# writes: a full file system (RLIMIT_FSIZE), an unwritable directory
mkdir -p "$C/w"
expect_refused write full_disk_rlimit "cannot write checkpoint" bash -c 'trap "" XFSZ; ulimit -f 24; exec "$@"' _ "$B/test_store" --write-checkpoint "$C/w/step_3.h5"
[ -z "$(ls "$C/w")" ] || record write full_disk_leftovers other "left: $(ls "$C/w")"
: >"$C/notadir"
expect_refused write checkpoint_dir_is_a_file "notadir" "$B/test_store" --write-checkpoint "$C/notadir/step_3.h5"
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
    OUT=$(unshare -m bash -c 'mount -t tmpfs -o size=128k tmpfs "$1" && "$2" --write-checkpoint "$1/step_3.h5" 2>&1; echo "rc=$?"; ls "$1"' _ "$C/w" "$B/test_store" 2>&1)
    grep -q '^rc=2$' <<<"$OUT" && grep -q "No space left on device" <<<"$OUT" && [ "$(tail -1 <<<"$OUT")" = "rc=2" ] &&
        record write full_tmpfs clean "$(grep -m1 error: <<<"$OUT")" || record write full_tmpfs other "$OUT"
fi

# ---- runs under hostile conditions: ownership, the model at resume, paths, signals and liveness, completion, quoting, values, the database, resources
source tests/proc.sh   # proc_pids, proc_signal (no procps needed)
source tools/probe_runs.sh

# ---- generated from the schema, the tools' option tables and the Makefile -------------------
# tools/probe_keys.py: every key of build/info --keys-tsv (type and precision boundaries,
# overflow, NaN/inf, each spelling twice in one mapping); tools/probe_options.py: every option
# of every tool's table (BOOST_OPTIONS=list) and every switch variable of the Makefile. A new
# key, option or switch is probed without a line here; "silent" for them: the value used (read
# back: build/info --json, BOOST_OPTIONS=values) is not the value given at its type.
: >"$TMP/generated.counts"
for gen in "tools/probe_keys.py $B $TMP/generated" "tools/probe_options.py $B"; do
    while IFS=$'\t' read -r k name outcome detail; do record "$k" "$name" "$outcome" "$detail"
    done < <(timeout -k 5 600 /usr/bin/python3 $gen 2>>"$TMP/generated.counts")
done

# ---- generated: a link at every name the engine writes, every signal of its table ------------
# The cases are not listed here: tools/probe_paths.sh takes the names from the engine's traced
# writes (BOOST_TRACE_WRITES), tools/probe_signals.sh the signals from build/train --signals.
GEN_COUNTS=""
generated() {   # KIND SCRIPT
    local k=$1 script=$2 name outcome detail
    bash "$script" "$B" "$TMP/$k" >"$TMP/$k.out" 2>"$TMP/$k.err"
    while IFS=$'\t' read -r name outcome detail; do
        [ "$outcome" = refused ] && outcome=clean
        record "$k" "$name" "$outcome" "$detail"
    done < <(grep -P '\t' "$TMP/$k.out")
    local count; count=$(grep -v -P '\t' "$TMP/$k.out" | tail -1)
    [ -n "$count" ] || record "$k" generator other "$(tail -2 "$TMP/$k.err")"
    GEN_COUNTS+="  $k: $count"$'\n'
    echo "$k: $count" >>"$LOG"
}
generated gen-paths tools/probe_paths.sh
generated gen-signals tools/probe_signals.sh

# ---- the table ----------------------------------------------------------------------------
printf '\n%-11s %6s %6s %9s %6s %6s %7s %7s %6s\n' kind tried clean accepted crash hang silent unsafe other
tot=(0 0 0 0 0 0 0 0)
for k in "${KINDS[@]}"; do
    printf '%-11s %6d %6d %9d %6d %6d %7d %7d %6d\n' "$k" "${N[$k]}" "${CLEAN[$k]}" "${ACCEPTED[$k]}" "${CRASH[$k]}" "${HANG[$k]}" "${SILENT[$k]}" "${UNSAFE[$k]}" "${OTHER[$k]}"
    tot=($((tot[0] + N[$k])) $((tot[1] + CLEAN[$k])) $((tot[2] + ACCEPTED[$k])) $((tot[3] + CRASH[$k])) $((tot[4] + HANG[$k])) $((tot[5] + SILENT[$k])) $((tot[6] + UNSAFE[$k])) $((tot[7] + OTHER[$k])))
done
printf '%-11s %6d %6d %9d %6d %6d %7d %7d %6d\n' total "${tot[@]}"
sed 's/^/  /' "$TMP/generated.counts"
echo "(one line per probe: $LOG)"
printf 'generated:\n%s' "$GEN_COUNTS"
[ -f "$TMP/bad" ] && sed 's/^/  /' "$TMP/bad"
grep -m1 'kill -STOP' "$LOG"
[ "${tot[3]}" = 0 ] && [ "${tot[4]}" = 0 ] && [ "${tot[5]}" = 0 ] && [ "${tot[6]}" = 0 ] && [ "${tot[7]}" = 0 ]
