#!/usr/bin/env bash
# t_data.sh — build/prepare end to end: prepare + cache, and every damaged/bad input
# gives its clear message and exit 2 (corrupt shards and tokenizers, vocabulary
# mismatch, missing files, unknown dataset, offline download, missing `bible`, bad args).
source "$(dirname "$0")/lib.sh"
P=$BUILD/prepare
C=$TMP/cache
if [ ! -x "$P" ]; then fail t_data "$P not built (run make)"; exit 1; fi

# a small corpus: Genesis 1-10 (or generated text when bible-kjv is missing)
bible -f Gen1:1-Gen10:32 >"$TMP/corpus.txt" 2>/dev/null ||
    for i in $(seq 1 2000); do echo "line $i of some text, with words and more words"; done >"$TMP/corpus.txt"

out=$("$P" --dataset "text:$TMP/corpus.txt" --vocab 300 --cache-dir "$C" --val-fraction 0.1 2>"$TMP/err")
D=$(awk '$1 == "dir" {print $2}' <<<"$out")
if [ -n "$D" ] && [ -f "$D/prepared.ok" ] && [ -f "$D/train.tok" ] && [ -f "$D/val.tok" ] && [ -f "$D/tokenizer.bin" ]; then
    pass prepare_text
else
    fail prepare_text "no prepared dir; stdout: $out; stderr: $(tail -3 "$TMP/err")"; exit 1
fi
case "$D" in "$C"/text-corpus.txt-v300-????????) pass cache_dir_name ;; *) fail cache_dir_name "$D" ;; esac

"$P" --dataset "text:$TMP/corpus.txt" --vocab 300 --cache-dir "$C" --val-fraction 0.1 >/dev/null 2>"$TMP/err"
if grep -q "using cached" "$TMP/err"; then pass cache_reused; else fail cache_reused "$(head -2 "$TMP/err")"; fi
rm "$D/prepared.ok"
"$P" --dataset "text:$TMP/corpus.txt" --vocab 300 --cache-dir "$C" --val-fraction 0.1 >/dev/null 2>"$TMP/err"
if grep -q "preparing" "$TMP/err" && [ -f "$D/prepared.ok" ]; then pass half_prepared_rebuilt; else fail half_prepared_rebuilt "$(head -2 "$TMP/err")"; fi

# a missing val.tok is rebuilt like a missing train.tok; a prepared.ok that disagrees with
# the files it describes is not believed
prep() { "$P" --dataset "text:$TMP/corpus.txt" --vocab 300 --cache-dir "$C" --val-fraction 0.1 >/dev/null 2>"$TMP/err"; }
rm "$D/val.tok"; prep
if grep -q "is not usable (.*val.tok.*): rebuilding" "$TMP/err" && [ -f "$D/val.tok" ]; then pass missing_val_rebuilt
else fail missing_val_rebuilt "$(head -2 "$TMP/err")"; fi
rm "$D/train.tok"; prep
if grep -q "is not usable (.*train.tok.*): rebuilding" "$TMP/err" && [ -f "$D/train.tok" ]; then pass missing_train_rebuilt
else fail missing_train_rebuilt "$(head -2 "$TMP/err")"; fi
sed -i 's/^train_tokens .*/train_tokens 5/' "$D/prepared.ok"; prep
if grep -q "train.tok has vocab 300 and [0-9]* tokens, prepared.ok says 300 and 5): rebuilding" "$TMP/err" && grep -q "using cached" <(prep; cat "$TMP/err")
then pass false_marker_not_believed; else fail false_marker_not_believed "$(head -2 "$TMP/err")"; fi
sed -i 's/^vocab_size .*/vocab_size 99999999999999999999/' "$D/prepared.ok"; prep
grep -q "does not parse as this entry's marker): rebuilding" "$TMP/err" && pass garbled_marker_not_believed \
    || fail garbled_marker_not_believed "$(head -2 "$TMP/err")"

expect_ok check_ok "$P" --check "$D" --seq-len 32
ids=$("$P" --encode "$D/tokenizer.bin" "In the beginning, 123 Ωmega!" 2>/dev/null)
back=$("$P" --decode "$D/tokenizer.bin" $ids 2>/dev/null)
if [ "$back" = "In the beginning, 123 Ωmega!" ]; then pass encode_decode_cli; else fail encode_decode_cli "got '$back' from ids '$ids'"; fi

# damaged copies of the prepared directory
damaged() { rm -rf "$TMP/bad"; cp -r "$D" "$TMP/bad"; }
patch_bytes() { printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }

damaged; truncate -s -1 "$TMP/bad/train.tok"
expect_error shard_truncated "(truncated or padded)" 2 "$P" --check "$TMP/bad"
# a cache entry boost-c made (prepared.ok): deleting it is suggested, by its absolute path
expect_error shard_truncated_hint "hint: this shard: the cache entry is damaged or from another version; delete it (rm -rf $(realpath "$TMP/bad"))" 2 "$P" --check "$TMP/bad"
# any other folder: never a deletion (a hint once suggested "rm -rf .")
rm -f "$TMP/bad/prepared.ok"
out=$(cd "$TMP/bad" && "$P" --check . 2>&1); rc=$?
[ $rc = 2 ] && ! grep -q "rm -rf" <<<"$out" && grep -q "replace it with a good copy" <<<"$out" && pass shard_hint_never_deletes_a_user_folder \
    || fail shard_hint_never_deletes_a_user_folder "exit $rc: $(grep hint <<<"$out")"
damaged; truncate -s 10 "$TMP/bad/val.tok"
expect_error shard_shorter_than_header "shorter than the 64-byte header" 2 "$P" --check "$TMP/bad"
damaged; patch_bytes "$TMP/bad/train.tok" 0 'BOOSTXXX'
expect_error shard_wrong_magic 'magic is "BOOSTXXX", expected "BOOSTTOK"' 2 "$P" --check "$TMP/bad"
damaged; patch_bytes "$TMP/bad/train.tok" 8 '\002'
expect_error shard_wrong_version "shard format version 2, expected 1" 2 "$P" --check "$TMP/bad"
damaged; patch_bytes "$TMP/bad/train.tok" 24 '\004'
expect_error shard_wrong_width "token width 4 bytes, expected 2" 2 "$P" --check "$TMP/bad"
damaged; patch_bytes "$TMP/bad/val.tok" 70 '\377\377'
expect_error shard_token_out_of_range "token 65535 at position 3 is out of range" 2 "$P" --check "$TMP/bad"

# vocabulary mismatch: a shard from a 320-token tokenizer next to the 300-token one
out=$("$P" --dataset "text:$TMP/corpus.txt" --vocab 320 --cache-dir "$C" --val-fraction 0.1 2>/dev/null)
D320=$(awk '$1 == "dir" {print $2}' <<<"$out")
damaged; cp "$D320/train.tok" "$TMP/bad/train.tok"
expect_error vocab_mismatch "vocabulary mismatch: shard $TMP/bad/train.tok has vocab 320, tokenizer $TMP/bad/tokenizer.bin has 300" 2 "$P" --check "$TMP/bad"
expect_error vocab_exceeds_model "has vocab 300 but model.vocab_size is 299" 2 "$P" --check "$D" --model-vocab 299
expect_error seq_len_too_long "too short for one training window" 2 "$P" --check "$D" --seq-len 1000000

# damaged tokenizers
damaged; truncate -s -4 "$TMP/bad/tokenizer.bin"
expect_error tokenizer_truncated "tokenizer.bin: file is" 2 "$P" --check "$TMP/bad"
expect_error tokenizer_hint "to rebuild it" 2 "$P" --check "$TMP/bad"
damaged; patch_bytes "$TMP/bad/tokenizer.bin" 0 'GPT2BPE!'
expect_error tokenizer_wrong_magic 'expected "BOOSTBPE"' 2 "$P" --encode "$TMP/bad/tokenizer.bin" "hi"
damaged; patch_bytes "$TMP/bad/tokenizer.bin" 8 '\007'
expect_error tokenizer_wrong_version "tokenizer format version 7, expected 1" 2 "$P" --check "$TMP/bad"
damaged; patch_bytes "$TMP/bad/tokenizer.bin" 20 '\000\001\000\000'
expect_error tokenizer_bad_merge "merge 0 = (256, " 2 "$P" --check "$TMP/bad"
expect_error decode_out_of_range "outside the tokenizer's vocabulary" 2 "$P" --decode "$D/tokenizer.bin" 300

# a text: corpus that is not valid UTF-8 is warned about, whatever breaks the rule (core/utf8.h:
# overlong forms, surrogates, past U+10FFFF, stray or cut sequences); valid multi-byte text is not
for seq in 'c0af' 'e080af' 'eda080' 'edbfbf' 'f4908080' 'f5' '80' 'c3' 'e282' 'c3a9' 'f09f9982' 'e282ac'; do
    { cat "$TMP/corpus.txt"; printf "$(sed 's/../\\x&/g' <<<"$seq")"; } >"$TMP/u8-$seq.txt"
    err=$("$P" --dataset "text:$TMP/u8-$seq.txt" --vocab 300 --cache-dir "$TMP/u8cache" --val-fraction 0.1 2>&1 >/dev/null)
    case "$seq" in c3a9|f09f9982|e282ac) want=no ;; *) want=yes ;; esac
    got=no; grep -q "is not valid UTF-8" <<<"$err" && got=yes
    [ "$got" = "$want" ] && pass "utf8_warning_$seq" || fail "utf8_warning_$seq" "warning: $got, expected $want ($err)"
done

# bad datasets and arguments
expect_error missing_text_file "cannot open corpus '$TMP/nope.txt'" 2 "$P" --dataset "text:$TMP/nope.txt" --vocab 300 --cache-dir "$C"
: >"$TMP/empty.txt"
expect_error empty_text_file "is empty" 2 "$P" --dataset "text:$TMP/empty.txt" --vocab 300 --cache-dir "$C"
expect_error unknown_dataset "prepare --dataset: expected one of kjv, synthetic, tinyshakespeare, text:PATH, got 'wikitext'" 2 "$P" --dataset wikitext --vocab 300 --cache-dir "$C"
expect_error unknown_dataset_hint "hint: prepare --help lists the options" 2 "$P" --dataset wikitext --vocab 300 --cache-dir "$C"
# (a fresh machine has neither curl nor wget: the message says so instead; make fresh-check)
if command -v curl >/dev/null || command -v wget >/dev/null; then why="no network?"; else why="neither curl nor wget is installed"; fi
expect_error tinyshakespeare_offline "could not download tinyshakespeare from http://127.0.0.1:9/input.txt ($why)" 2 \
    env BOOST_TINYSHAKESPEARE_URL=http://127.0.0.1:9/input.txt "$P" --dataset tinyshakespeare --vocab 300 --cache-dir "$TMP/c2"
expect_error tinyshakespeare_offline_hint "put the file at $TMP/c2/downloads/tinyshakespeare.txt, or use data.dataset: text:PATH" 2 \
    env BOOST_TINYSHAKESPEARE_URL=http://127.0.0.1:9/input.txt "$P" --dataset tinyshakespeare --vocab 300 --cache-dir "$TMP/c2"
mkdir -p "$TMP/emptybin"
expect_error kjv_without_bible "apt-get install bible-kjv" 2 env PATH="$TMP/emptybin" "$P" --dataset kjv --vocab 300 --cache-dir "$C"
expect_error vocab_too_small "expected 256.." 2 "$P" --dataset "text:$TMP/corpus.txt" --vocab 100 --cache-dir "$C"
expect_error vocab_not_a_number "prepare --vocab: expected an integer in [2, 16777216], got 'lots'" 2 "$P" --dataset kjv --vocab lots
expect_error val_fraction_range "prepare --val-fraction: expected a number in (0, 0.5), got '1.5'" 2 "$P" --dataset "text:$TMP/corpus.txt" --vocab 300 --val-fraction 1.5 --cache-dir "$C"
expect_error unknown_option "prepare: unknown option '--vocabulary'" 2 "$P" --dataset kjv --vocabulary 300
expect_error no_arguments "usage:" 2 "$P"

# what is not a regular file is refused at once, never read without end or waited on
mkfifo "$TMP/fifo"
expect_error tokenizer_from_dev_zero "tokenizer '/dev/zero' is a character device; expected a regular file" 2 \
    timeout 10 "$P" --encode /dev/zero "hi"
expect_error tokenizer_from_fifo "is a FIFO (pipe); expected a regular file" 2 timeout 10 "$P" --encode "$TMP/fifo" "hi"
expect_error corpus_from_dev_zero "corpus '/dev/zero' is a character device" 2 \
    timeout 10 "$P" --dataset text:/dev/zero --vocab 300 --cache-dir "$C"
expect_error corpus_from_fifo "corpus '$TMP/fifo' is a FIFO (pipe)" 2 timeout 10 "$P" --dataset "text:$TMP/fifo" --vocab 300 --cache-dir "$C"
damaged; rm "$TMP/bad/train.tok"; mkfifo "$TMP/bad/train.tok"
expect_error shard_fifo_refused "train.tok: not a regular file" 2 timeout 10 "$P" --check "$TMP/bad"

# synthetic: no tokenizer, 32-bit tokens for a 70000-token vocabulary
out=$("$P" --dataset synthetic --vocab 70000 --synthetic-tokens 20000 --cache-dir "$C" 2>/dev/null)
DS=$(awk '$1 == "dir" {print $2}' <<<"$out")
if [ -n "$DS" ] && [ ! -e "$DS/tokenizer.bin" ] && [ "$(stat -c %s "$DS/train.tok")" = $((64 + 4 * 19000)) ]; then
    pass synthetic_32bit
else
    fail synthetic_32bit "dir '$DS'; $out"
fi
expect_ok synthetic_check "$P" --check "$DS" --model-vocab 70000
