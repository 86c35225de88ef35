#!/usr/bin/env bash
# build/sample: text from a checkpoint, which carries its run uid, variant and tokenizer
# (docs/checkpoint-format.md). Greedy and seeded sampling are deterministic; the bf16 CPU
# back end loads the same file; a checkpoint written before the identity attributes (made
# here by removing them with h5py and resealing) still loads and verifies, and sample then
# asks for --tokenizer; with it, the text is the new file's; the GPU back end where there
# is one (else SKIP); a damaged file is refused; bad options exit 2.
source "$(dirname "$0")/lib.sh"
export OMP_NUM_THREADS=1
cd "$ROOT"
if ! "$BUILD/train" experiments/quickstart.yaml --set train.steps=12 --set train.warmup_steps=2 --set train.val_every=0 --set data.cache_dir="$TMP/cache" \
     --set run.db="$TMP/runs.db" --set run.checkpoint_dir="$TMP/ckpt" --set run.checkpoint_every=12 >"$TMP/train.log" 2>&1; then
    fail sample_train "$(tail -3 "$TMP/train.log")"; exit 0; fi
DIR=$(ls -d "$TMP"/ckpt/quickstart.default.*); CK=$DIR/step_12.h5
uid=$(sqlite3 "$TMP/runs.db" "SELECT uid FROM runs")
S="$BUILD/sample"
g1=$("$S" "$DIR" --tokens 16 2>&1); g2=$("$S" "$CK" --tokens 16 2>&1)
if [ "$g1" = "$g2" ] && grep -q "run $uid (variant default)" <<<"$g1" && grep -q "^In the beginning" <<<"$g1" &&
   grep -q "tokenizer $TMP/cache/kjv-" <<<"$g1"; then pass sample_greedy_from_the_checkpoint_alone
else fail sample_greedy_from_the_checkpoint_alone "$(tr '\n' '|' <<<"$g1" | head -c 300)"; fi
t1=$("$S" "$CK" --temperature 1 --seed 5 --prompt "And God said" 2>&1); t2=$("$S" "$CK" --temperature 1 --seed 5 --prompt "And God said" 2>&1)
t3=$("$S" "$CK" --temperature 1 --seed 6 --prompt "And God said" 2>&1)
if [ "$t1" = "$t2" ] && [ "$t1" != "$t3" ] && grep -q "^And God said" <<<"$t1"; then pass sample_temperature_seeded
else fail sample_temperature_seeded "$(tr '\n' '|' <<<"$t1" | head -c 200)"; fi
b=$("$S" "$CK" --precision bf16 --tokens 8 2>&1); rc=$?
[ $rc = 0 ] && grep -q "on cpu in bf16" <<<"$b" && grep -q "^In the beginning" <<<"$b" && pass sample_bf16_back_end ||
    fail sample_bf16_back_end "exit $rc: $(tail -2 <<<"$b")"
if reason=$("$BUILD/gpu_probe" --reason 2>&1); then
    c=$("$S" "$CK" --device cuda --tokens 16 2>&1); rc=$?
    # the same greedy text as the CPU's fp32 reference is not required (other kernels), a text is
    [ $rc = 0 ] && grep -q "^In the beginning" <<<"$c" && pass sample_cuda_back_end || fail sample_cuda_back_end "exit $rc: $(tail -2 <<<"$c")"
else
    skip sample_cuda_back_end "${reason:-no usable GPU}"
fi

# ---- an older checkpoint: no run_uid, variant, tokenizer -----------------------------------
if /usr/bin/python3 -c "import h5py" 2>/dev/null; then
    cp "$CK" "$TMP/old.h5"
    /usr/bin/python3 - "$TMP/old.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    for a in ("run_uid", "variant", "tokenizer", "identity_crc32"):
        del f.attrs[a]
PY
    "$BUILD/test_store" --reseal "$TMP/old.h5" 12 >/dev/null 2>&1
    v=$("$BUILD/test_store" --verify "$TMP/old.h5" 2>&1)
    [ "$v" = ok ] && pass sample_older_checkpoint_verifies || fail sample_older_checkpoint_verifies "$v"
    expect_error sample_older_checkpoint_asks_for_the_tokenizer "names no tokenizer" 2 "$S" "$TMP/old.h5"
    tokfile=$(ls "$TMP"/cache/kjv-*/tokenizer.bin)
    o=$("$S" "$TMP/old.h5" --tokens 16 --tokenizer "$tokfile" 2>&1)
    if [ "$(sed -n '/^---$/,$p' <<<"$o")" = "$(sed -n '/^---$/,$p' <<<"$g1")" ]; then pass sample_older_checkpoint_same_text
    else fail sample_older_checkpoint_same_text "$(tail -2 <<<"$o")"; fi
else
    skip sample_older_checkpoint "/usr/bin/python3 has no h5py"
fi

# ---- bad input ---------------------------------------------------------------------------
head -c 4000 "$CK" >"$TMP/cut.h5"
expect_error sample_damaged_refused "truncated" 2 "$S" "$TMP/cut.h5"
expect_error sample_missing_file "no such file or folder" 2 "$S" "$TMP/none.h5"
expect_error sample_bad_temperature "sample --temperature: expected a number in [0, 100], got '-1'" 2 "$S" "$CK" --temperature -1
expect_error sample_bad_device "sample --device: expected one of cpu, cuda, got 'tpu'" 2 "$S" "$CK" --device tpu
expect_ok sample_help "$S" --help
