#!/usr/bin/env bash
# build/sample: text from a checkpoint, which carries its run uid, variant and its tokenizer
# itself (docs/checkpoint-format.md). Greedy and seeded sampling are deterministic; the
# checkpoint copied alone into an empty folder, the data cache gone, gives the same text; the
# bf16 CPU back end loads the same file; a --tokenizer other than the embedded one (generated
# tokenizers: fewer, as many and more tokens than the model's vocabulary) is refused, the
# same file accepted; a checkpoint written before the tokenizer was embedded (made here with
# h5py and resealed) loads with a note and checks --tokenizer against the model's vocabulary;
# one written before the identity attributes asks for --tokenizer, and with it the text is
# the new file's; --logits writes the prompt's logits; the GPU back end where there is one
# (else SKIP); a damaged file is refused; bad options exit 2.
source "$(dirname "$0")/lib.sh"
export OMP_NUM_THREADS=1
cd "$ROOT"
if ! "$BUILD/train" experiments/quickstart.yaml --set train.steps=12 --set train.warmup_steps=2 --set train.val_every=0 --set data.cache_dir="$TMP/cache" \
     --set run.db="$TMP/runs.db" --set run.checkpoint_dir="$TMP/ckpt" --set run.checkpoint_every=12 >"$TMP/train.log" 2>&1; then
    fail sample_train "$(tail -3 "$TMP/train.log")"; exit 0; fi
DIR=$(ls -d "$TMP"/ckpt/quickstart.default.*); CK=$DIR/step_12.h5
uid=$(sqlite3 "$TMP/runs.db" "SELECT uid FROM runs")
S="$BUILD/sample"
# (the first run may say on stderr that it measures new GEMM shapes for this host's table)
g1=$("$S" "$DIR" --tokens 16 2>&1 | grep -v '^note: new GEMM shapes are being measured'); g2=$("$S" "$CK" --tokens 16 2>&1 | grep -v '^note: new GEMM shapes are being measured')
if [ "$g1" = "$g2" ] && grep -q "run $uid (variant default)" <<<"$g1" && grep -q "^In the beginning" <<<"$g1" &&
   grep -q "tokenizer embedded (sha256 " <<<"$g1"; then pass sample_greedy_from_the_checkpoint_alone
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

# ---- the checkpoint alone: an empty folder, the data cache moved away ---------------------
mkdir "$TMP/alone" && cp "$CK" "$TMP/alone/" && mv "$TMP/cache" "$TMP/cache.away"
a=$(cd "$TMP/alone" && "$S" step_12.h5 --tokens 16 --logits logits.json 2>&1); rc=$?
mv "$TMP/cache.away" "$TMP/cache"
if [ $rc = 0 ] && [ "$(sed -n '/^---$/,$p' <<<"$a")" = "$(sed -n '/^---$/,$p' <<<"$g1")" ]; then pass sample_copied_alone_same_text
else fail sample_copied_alone_same_text "exit $rc: $(tail -3 <<<"$a" | tr '\n' '|')"; fi
# --logits: the prompt's ids, one row of V finite logits each
if /usr/bin/python3 - "$TMP/alone/logits.json" "$CK" <<'PY' 2>"$TMP/logits.err"; then pass sample_logits_of_the_prompt; else fail sample_logits_of_the_prompt "$(tail -2 "$TMP/logits.err")"; fi
import json, math, sys
d = json.load(open(sys.argv[1]))
ids, L = d["ids"], d["logits"]
assert len(ids) == 4 and len(L) == 4 and all(len(r) == 2048 for r in L), (len(ids), len(L))
assert all(math.isfinite(x) for r in L for x in r)
PY
expect_error sample_logits_prompt_longer_than_the_window "more than the model's window" 2 \
    "$S" "$CK" --logits "$TMP/l2.json" --prompt "$(printf 'word %.0s' $(seq 200))"

# ---- a --tokenizer other than the embedded one: generated tokenizers of several sizes ------
tokfile=$(ls "$TMP"/cache/kjv-*/tokenizer.bin)
/usr/bin/python3 - "$TMP/gen" <<'PY'
import os, random, struct, sys
os.makedirs(sys.argv[1])
rnd = random.Random(7)
for merges in (0, 100, 2048 - 256, 2048 - 256 + 1, 5000):   # vocab 256, 356, 2048 (the model's), 2049, 5256
    seen, rows = set(), []
    while len(rows) < merges:
        a, b = rnd.randrange(256), rnd.randrange(256)       # byte pairs: every token 2 bytes, all distinct
        if (a, b) not in seen:
            seen.add((a, b)); rows.append((a, b))
    with open(f"{sys.argv[1]}/v{256 + merges}.bin", "wb") as f:
        f.write(b"BOOSTBPE" + struct.pack("<III", 1, 256 + merges, merges) + b"".join(struct.pack("<II", *r) for r in rows))
PY
bad=""
for t in "$TMP"/gen/v*.bin; do
    out=$("$S" "$CK" --tokens 2 --tokenizer "$t" 2>&1); rc=$?
    [ $rc = 2 ] && grep -q "is not the tokenizer .* was trained with" <<<"$out" || bad+=" $(basename "$t"): exit $rc $(tail -1 <<<"$out")"
done
[ -z "$bad" ] && pass "sample_foreign_tokenizer_refused ($(ls "$TMP"/gen | wc -l) generated)" || fail sample_foreign_tokenizer_refused "$bad"
s=$("$S" "$CK" --tokens 16 --tokenizer "$tokfile" 2>&1); rc=$?
if [ $rc = 0 ] && [ "$(sed -n '/^---$/,$p' <<<"$s")" = "$(sed -n '/^---$/,$p' <<<"$g1")" ]; then pass sample_same_tokenizer_accepted
else fail sample_same_tokenizer_accepted "exit $rc: $(tail -2 <<<"$s" | tr '\n' '|')"; fi

# ---- an older checkpoint: no run_uid, variant, tokenizer -----------------------------------
if /usr/bin/python3 -c "import h5py" 2>/dev/null; then
    cp "$CK" "$TMP/old.h5"; cp "$CK" "$TMP/named.h5"
    /usr/bin/python3 - "$TMP/old.h5" "$TMP/named.h5" <<'PY'
import sys, h5py
for path, attrs in ((sys.argv[1], ("run_uid", "variant", "tokenizer", "identity_crc32")), (sys.argv[2], ())):
    with h5py.File(path, "r+") as f:
        del f["tokenizer"]
        for a in attrs:
            del f.attrs[a]
PY
    "$BUILD/test_store" --reseal "$TMP/old.h5" 12 >/dev/null 2>&1
    "$BUILD/test_store" --reseal "$TMP/named.h5" 12 >/dev/null 2>&1
    # before the tokenizer was embedded: the path it names, with a note; --tokenizer checked
    # against the model's vocabulary (the generated ones above 2048 refused, the others taken)
    n=$("$S" "$TMP/named.h5" --tokens 16 2>&1); rc=$?
    if [ $rc = 0 ] && grep -q "note: .*written before checkpoints embedded their tokenizer" <<<"$n" &&
       [ "$(sed -n '/^---$/,$p' <<<"$n")" = "$(sed -n '/^---$/,$p' <<<"$g1")" ]; then pass sample_unembedded_checkpoint_uses_the_named_tokenizer
    else fail sample_unembedded_checkpoint_uses_the_named_tokenizer "exit $rc: $(tail -2 <<<"$n" | tr '\n' '|')"; fi
    bad=""
    for t in "$TMP"/gen/v*.bin; do
        v=$(basename "$t" .bin); v=${v#v}
        "$S" "$TMP/named.h5" --tokens 2 --tokenizer "$t" >"$TMP/o" 2>&1; rc=$?
        if [ "$v" -gt 2048 ]; then [ $rc = 2 ] && grep -q "more than the model's vocabulary (2048)" "$TMP/o" || bad+=" v$v: exit $rc"
        else [ $rc = 0 ] || bad+=" v$v: exit $rc $(tail -1 "$TMP/o")"; fi
    done
    [ -z "$bad" ] && pass sample_unembedded_tokenizer_checked_against_the_vocabulary || fail sample_unembedded_tokenizer_checked_against_the_vocabulary "$bad"
    v=$("$BUILD/test_store" --verify "$TMP/old.h5" 2>&1)
    [ "$v" = ok ] && pass sample_older_checkpoint_verifies || fail sample_older_checkpoint_verifies "$v"
    expect_error sample_older_checkpoint_asks_for_the_tokenizer "holds no tokenizer" 2 "$S" "$TMP/old.h5"
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
