#!/usr/bin/env bash
# build/export (docs/export.md): a checkpoint into the formats researchers evaluate with.
#   dense: Hugging Face LlamaForCausalLM, loaded by transformers (AutoModelForCausalLM,
#     AutoTokenizer) from the folder alone, whose logits match the engine's own forward pass
#     (build/sample --logits) within the float32 tolerance, untied at tp 1 and tied from a
#     tp 2 run (the checkpoint holds the gathered tensors) on a corpus whose tokenizer
#     saturates below model.vocab_size (generation suppresses the rest); its tokenizer.json gives the
#     engine's ids of a generated hostile corpus (UTF-8 of 1 to 4 bytes, runs of every
#     whitespace, punctuation, digits, words and whitespace longer than the 256-byte cap) —
#     the whole token stream the engine wrote for it — and decodes it back to the text;
#   cola, svd, lax: the documented layout, built in PyTorch by analysis/load_export.py,
#     logits within the same tolerance (Debian's python3 alone: always runs);
#   refusals: a folder that is not empty, a file as the folder, a damaged checkpoint, no
#   arguments; synthetic data exports without a tokenizer, saying so.
# generation_config.json: greedy, the trained window, the ids no text decodes to suppressed.
# The transformers checks need build/venv-export (bash .ci/deps.sh --export); SKIP without it.
source "$(dirname "$0")/lib.sh"
export OMP_NUM_THREADS=1
cd "$ROOT"
PY=/usr/bin/python3
HF=${EXPORT_PYTHON:-$ROOT/build/venv-export/bin/python}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1   # (a local folder: nothing to fetch)
if ! $PY -c "import torch, numpy" 2>/dev/null; then skip export "no torch/numpy for $PY (python3-torch)"; exit 0; fi
hf_reason=""
if ! "$HF" -c "import transformers, tokenizers" 2>/dev/null; then
    hf_reason="no transformers for $HF (bash .ci/deps.sh --export installs it into build/venv-export)"; fi
train() {   # train NAME [mpirun -np 2 --] ARGS...: a few steps of the tiny shape, one checkpoint at the end
    local name=$1; shift
    local pre=()
    if [ "$1" = tp2 ]; then pre=(timeout 300 mpirun --allow-run-as-root --oversubscribe -np 2); shift; fi
    "${pre[@]}" "$BUILD/train" experiments/base/tiny.yaml --set model.vocab_size=300 --set train.steps=3 \
        --set train.warmup_steps=1 --set train.val_every=0 --set data.cache_dir="$TMP/cache" --set run.db="$TMP/runs.db" \
        --set run.checkpoint_dir="$TMP/ckpt/$name" --set run.checkpoint_every=3 "$@" >"$TMP/train_$name.log" 2>&1 ||
        { fail "export_train_$name" "$(tail -3 "$TMP/train_$name.log")"; return 1; }
}
PROMPT="And God said, Let there be light"
worst() { local d=${1##*max |difference| }; echo "max |difference| ${d%% *}"; }   # from load_export's last line

# ---- dense: Hugging Face LlamaForCausalLM --------------------------------------------------
$PY - "$TMP/hostile.txt" <<'PY'
import random, sys
rnd = random.Random(1)
pools = [
    (0.45, ["the", "And", "LORD", "été", "naïve", "中文字", "Ωμέγα", "🙂ok", "x", "ab", "abab"]),
    (0.15, [",", ".", ";;", "!?", "--", "\"", "'", "(", ")", "{}", "\x01", "@#", "\\"]),
    (0.25, [" ", "  ", "   ", "\t", "\n", "\r\n", " \n ", "\n\n", " \t ", "\x0b", "\x0c", " " * 300, "\t" * 260]),
    (0.08, ["0", "42", "2024", "1" * 300]),
    (0.07, ["a" * 300, "é" * 140, "b" * 255 + "é" * 3, "c" * 254 + "🙂" * 2, "w" * 256]),
]
out = []
for _ in range(6000):
    r, acc = rnd.random(), 0
    for p, pool in pools:
        acc += p
        if r < acc:
            out.append(rnd.choice(pool)); break
open(sys.argv[1], "w", encoding="utf-8", newline="").write("".join(out))
PY
# a corpus too small for its vocabulary: BPE saturates below model.vocab_size
for i in $(seq 40); do echo "In the beginning God created the heaven and the earth. And the earth was without form."; done >"$TMP/small.txt"
if train dense --set model.linear=dense --set model.vocab_size=700 --set data.dataset="text:$TMP/hostile.txt" &&
   train dense_tied tp2 --set model.linear=dense --set model.tie_embeddings=true --set parallel.tp=2 \
       --set model.vocab_size=400 --set data.dataset="text:$TMP/small.txt"; then
    for name in dense dense_tied; do
        out=$("$BUILD/export" "$TMP/ckpt/$name/"*/ "$TMP/x_$name" 2>&1); rc=$?
        files=$(ls "$TMP/x_$name" 2>/dev/null | tr '\n' ' ')
        if [ $rc = 0 ] && [ "$files" = "config.json generation_config.json model.safetensors tokenizer.bin tokenizer.json tokenizer_config.json " ] &&
           grep -q "Hugging Face LlamaForCausalLM" <<<"$out"; then pass "export_${name}_writes_hf_files"
        else fail "export_${name}_writes_hf_files" "exit $rc: $files $(tail -2 <<<"$out")"; fi
        # generation settings: greedy over the trained window, the ids past the tokenizer's
        # vocabulary suppressed (none when the tokenizer fills model.vocab_size)
        r=$($PY - "$TMP/x_$name" <<'PY' 2>&1
import json, struct, sys
d = sys.argv[1]
g, c = json.load(open(d + "/generation_config.json")), json.load(open(d + "/config.json"))
tv = struct.unpack("<I", open(d + "/tokenizer.bin", "rb").read()[12:16])[0]
assert g["do_sample"] is False and g["max_length"] == c["max_position_embeddings"], g
assert g.get("suppress_tokens", []) == list(range(tv, c["vocab_size"])), (tv, c["vocab_size"], g.get("suppress_tokens", [])[:3])
print(f"tokenizer {tv}, model {c['vocab_size']}")
PY
        ) && pass "export_${name}_generation_config ($r)" || fail "export_${name}_generation_config" "$r"
        # the engine's logits of the prompt, from the run's own folder
        "$BUILD/sample" "$TMP/ckpt/$name/"*/ --prompt "$PROMPT" --tokens 1 --logits "$TMP/logits_$name.json" >/dev/null 2>&1
        # the PyTorch reference model, from the export folder alone (Debian's python3)
        mv "$TMP/x_$name" "$TMP/alone_$name"
        r=$($PY analysis/load_export.py "$TMP/alone_$name" --check-logits "$TMP/logits_$name.json" 2>&1) &&
            pass "export_${name}_reference_logits ($(worst "$r"))" || fail "export_${name}_reference_logits" "$(tail -2 <<<"$r")"
        if [ -n "$hf_reason" ]; then skip "export_${name}_transformers_logits" "$hf_reason"; continue; fi
        r=$("$HF" analysis/load_export.py "$TMP/alone_$name" --check-logits "$TMP/logits_$name.json" --transformers 2>&1)
        if [ $? = 0 ] && grep -q "LlamaForCausalLM from" <<<"$r" && grep -q "the engine's .* ids of the prompt" <<<"$r"; then
            pass "export_${name}_transformers_logits ($(worst "$r"))"
        else fail "export_${name}_transformers_logits" "$(tail -3 <<<"$r" | tr '\n' '|')"; fi
    done
    # the hostile corpus: Hugging Face's ids of the whole text are the engine's token stream
    if [ -n "$hf_reason" ]; then skip export_tokenizer_json_encodes_as_the_engine "$hf_reason"
    else
        r=$("$HF" - "$TMP/alone_dense/tokenizer.json" "$TMP/hostile.txt" "$TMP"/cache/text-*/ <<'PY' 2>&1
import sys, numpy as np
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1])
text = open(sys.argv[2], encoding="utf-8", newline="").read()
shard = lambda p: np.frombuffer(open(p, "rb").read()[64:], dtype="<u2").tolist()
eng = shard(sys.argv[3] + "/train.tok") + shard(sys.argv[3] + "/val.tok")
hf = tok.encode(text).ids
if hf != eng:
    i = next((i for i, (a, b) in enumerate(zip(hf, eng)) if a != b), min(len(hf), len(eng)))
    sys.exit(f"{len(hf)} ids vs the engine's {len(eng)}; first difference at {i}: {hf[i:i + 4]} vs {eng[i:i + 4]}")
assert tok.decode(hf) == text, "decode(encode(text)) != text"
print(f"{len(eng)} tokens of {len(text.encode())} bytes")
PY
        ) && pass "export_tokenizer_json_encodes_as_the_engine ($r)" || fail export_tokenizer_json_encodes_as_the_engine "$r"
    fi
fi

# ---- the low-rank kinds: the documented layout and analysis/load_export.py -----------------
for kind in cola svd lax; do
    train "$kind" --set model.linear=$kind || continue
    "$BUILD/export" "$TMP/ckpt/$kind/"*/ "$TMP/x_$kind" >"$TMP/export_$kind.log" 2>&1 || { fail "export_$kind" "$(tail -2 "$TMP/export_$kind.log")"; continue; }
    "$BUILD/sample" "$TMP/ckpt/$kind/"*/ --prompt "$PROMPT" --tokens 1 --logits "$TMP/logits_$kind.json" >/dev/null 2>&1
    # the safetensors names and shapes are the checkpoint's /model datasets, values equal
    r=$($PY - "$TMP/x_$kind" "$TMP/ckpt/$kind/"*/step_3.h5 <<'PY' 2>&1
import sys, h5py, numpy as np
sys.path.insert(0, "analysis")
import load_export
t = load_export.read_safetensors(sys.argv[1] + "/model.safetensors")
with h5py.File(sys.argv[2], "r") as f:
    names = []
    f["model"].visit(lambda n: names.append("model/" + n) if isinstance(f["model/" + n], h5py.Dataset) else None)
    assert sorted(names) == sorted(t), (sorted(set(names) ^ set(t)))[:4]
    for n in names:
        assert np.array_equal(f[n][()], t[n]), n
print(len(names))
PY
    ) && pass "export_${kind}_layout_is_the_checkpoint_tensors ($r tensors)" || fail "export_${kind}_layout_is_the_checkpoint_tensors" "$(tail -2 <<<"$r")"
    r=$($PY analysis/load_export.py "$TMP/x_$kind" --check-logits "$TMP/logits_$kind.json" 2>&1) &&
        pass "export_${kind}_reference_logits ($(worst "$r"))" || fail "export_${kind}_reference_logits" "$(tail -2 <<<"$r")"
done

# ---- refusals and a checkpoint without a tokenizer ---------------------------------------------
CK=$(ls "$TMP"/ckpt/cola/*/step_3.h5)
expect_error export_folder_not_empty "is not empty" 2 "$BUILD/export" "$CK" "$TMP/x_cola"
touch "$TMP/afile"
expect_error export_folder_is_a_file "is a file, not a folder" 2 "$BUILD/export" "$CK" "$TMP/afile"
head -c 3000 "$CK" >"$TMP/cut.h5"
expect_error export_damaged_checkpoint "truncated" 2 "$BUILD/export" "$TMP/cut.h5" "$TMP/x_cut"
[ ! -e "$TMP/x_cut" ] && pass export_refusal_writes_nothing || fail export_refusal_writes_nothing "$(ls "$TMP/x_cut")"
expect_error export_no_arguments "no checkpoint given" 2 "$BUILD/export"
if train synthetic --set model.linear=svd --set data.dataset=synthetic; then
    out=$("$BUILD/export" "$TMP/ckpt/synthetic/"*/ "$TMP/x_synthetic" 2>&1); rc=$?
    [ $rc = 0 ] && grep -q "no tokenizer: the checkpoint holds none (synthetic data)" <<<"$out" && [ ! -e "$TMP/x_synthetic/tokenizer.json" ] &&
        pass export_synthetic_data_has_no_tokenizer || fail export_synthetic_data_has_no_tokenizer "exit $rc: $out"
fi
# a tokenizer that makes one string two ways (merges (ab)c and a(bc)): Hugging Face's BPE
# cannot hold it, so no tokenizer.json, and the export says which tokens collide
cp "$CK" "$TMP/twoways.h5"
$PY - "$TMP/twoways.h5" <<'PY'
import hashlib, struct, sys, zlib, h5py, numpy as np
merges = [(97, 98), (98, 99), (256, 99), (97, 257)]           # ab, bc, abc, abc
tok = b"BOOSTBPE" + struct.pack("<III", 1, 256 + len(merges), len(merges)) + b"".join(struct.pack("<II", *m) for m in merges)
with h5py.File(sys.argv[1], "r+") as f:
    del f["tokenizer/bpe"]
    d = f.create_dataset("tokenizer/bpe", data=np.frombuffer(tok, dtype=np.uint8))
    d.attrs.create("crc32", zlib.crc32(tok), dtype=np.uint32)
    f["tokenizer"].attrs["sha256"] = np.bytes_(hashlib.sha256(tok).hexdigest().encode())
PY
"$BUILD/test_store" --reseal "$TMP/twoways.h5" 3 >/dev/null 2>&1
out=$("$BUILD/export" "$TMP/twoways.h5" "$TMP/x_twoways" 2>&1); rc=$?
[ $rc = 0 ] && grep -q "no tokenizer.json: tokens 258 and 259 are the same 3 bytes" <<<"$out" && [ -s "$TMP/x_twoways/tokenizer.bin" ] &&
    [ ! -e "$TMP/x_twoways/tokenizer.json" ] && pass export_tokenizer_hf_cannot_hold_refused ||
    fail export_tokenizer_hf_cannot_hold_refused "exit $rc: $out"
expect_ok export_help "$BUILD/export" --help
