#!/usr/bin/env bash
# t_config.sh — configuration errors through build/info: every bad input exits 2 with a
# message naming the file, line and key; plus the good paths of the info tool.
source "$(dirname "$0")/lib.sh"
INFO=$BUILD/info
if [ ! -x "$INFO" ]; then fail t_config "no $INFO (run make first)"; exit 0; fi
cd "$ROOT"

y() { printf '%b' "$2" > "$TMP/$1.yaml"; }  # y NAME 'yaml text' -> $TMP/NAME.yaml

# ---- values and keys ------------------------------------------------------------------
y unknown 'model:\n  d_modle: 64\n'
expect_error unknown_key_suggestion "unknown.yaml:2: unknown key 'model.d_modle'; did you mean 'model.d_model'?" 2 \
    "$INFO" --config "$TMP/unknown.yaml"
y section 'modle:\n  d_model: 64\n'
expect_error unknown_section "section.yaml:1: unknown key 'modle'; did you mean 'model'?" 2 "$INFO" --config "$TMP/section.yaml"
y wrongsec 'model:\n  lr: 0.1\n'
expect_error key_in_wrong_section "unknown key 'model.lr'; did you mean 'train.lr'?" 2 "$INFO" --config "$TMP/wrongsec.yaml"
y dotted 'train.lrr: 0.1\n'
expect_error unknown_dotted_key "dotted.yaml:1: unknown key 'train.lrr'; did you mean 'train.lr'?" 2 "$INFO" --config "$TMP/dotted.yaml"
y type 'model:\n  n_layers: abc\n'
expect_error wrong_type "type.yaml:2: model.n_layers: expected an integer in [1, 65536], got 'abc'" 2 "$INFO" --config "$TMP/type.yaml"
y float_int 'train:\n  steps: 1.5\n'
expect_error float_for_integer "train.steps: expected an integer in [1, 2147483647], got '1.5'" 2 "$INFO" --config "$TMP/float_int.yaml"
y range 'train:\n  lr: -1\n'
expect_error out_of_range "range.yaml:2: train.lr: expected an fp32 number > 0, got '-1'" 2 "$INFO" --config "$TMP/range.yaml"
y valfrac 'data:\n  val_fraction: 0.5\n'
expect_error val_fraction_range "data.val_fraction: expected a number in (0, 0.5), got '0.5'" 2 "$INFO" --config "$TMP/valfrac.yaml"
y enum 'model:\n  linear: lora\n'
expect_error bad_enum "enum.yaml:2: model.linear: expected one of dense, cola, svd, lax, got 'lora'" 2 "$INFO" --config "$TMP/enum.yaml"
y bool 'model:\n  tie_embeddings: yes\n'
expect_error bad_bool "model.tie_embeddings: expected true or false; 'yes' is a boolean in YAML 1.1 and text in YAML 1.2" 2 "$INFO" --config "$TMP/bool.yaml"
y dataset 'data:\n  dataset: c4\n'
expect_error bad_dataset "data.dataset: expected one of kjv, synthetic, tinyshakespeare, text:PATH, got 'c4'" 2 \
    "$INFO" --config "$TMP/dataset.yaml"
y empty_val 'train:\n  lr:\n'
expect_error empty_value "empty_val.yaml:2: train.lr: expected an fp32 number > 0, got an empty value" 2 "$INFO" --config "$TMP/empty_val.yaml"
y mapval 'model:\n  d_model: {a: 1}\n'
expect_error mapping_for_scalar "model.d_model: expected an integer in [2, 16777216], got a mapping" 2 "$INFO" --config "$TMP/mapval.yaml"
y scalarsec 'model: 5\n'
expect_error scalar_section "'model' must be a mapping of keys" 2 "$INFO" --config "$TMP/scalarsec.yaml"
y toplist '- 1\n- 2\n'
expect_error top_level_list "expected a mapping at the top level" 2 "$INFO" --config "$TMP/toplist.yaml"

# ---- YAML syntax ------------------------------------------------------------------------
y syntax 'model:\n  d_model: 64\n  n_layers: [1, 2\ntrain:\n  lr: 1\n'
expect_error yaml_syntax "syntax.yaml:" 2 "$INFO" --config "$TMP/syntax.yaml"
expect_error yaml_syntax_text "YAML syntax error" 2 "$INFO" --config "$TMP/syntax.yaml"
y dup 'train:\n  lr: 1e-3\n  lr: 2e-3\n'
expect_error duplicate_key "dup.yaml:3: YAML syntax error: duplicate key" 2 "$INFO" --config "$TMP/dup.yaml"
expect_error missing_file "cannot open manifest '$TMP/nope.yaml'" 2 "$INFO" --config "$TMP/nope.yaml"

# ---- presets and finalize checks ---------------------------------------------------------
y preset 'model:\n  preset: cola-60\n'
expect_error unknown_preset "preset.yaml:2: model.preset: unknown preset 'cola-60'; did you mean 'cola-60m'?" 2 \
    "$INFO" --config "$TMP/preset.yaml"
expect_error unknown_preset_flag "unknown preset 'gpt2'" 2 "$INFO" --preset gpt2
y heads 'model:\n  d_model: 96\n  n_heads: 5\n'
expect_error heads_divide "model.d_model = 96 is not divisible by model.n_heads = 5" 2 "$INFO" --config "$TMP/heads.yaml"
y headdim 'model:\n  d_model: 60\n  n_heads: 4\n'
expect_error head_dim_even "must be even" 2 "$INFO" --config "$TMP/headdim.yaml"
y kv 'model:\n  n_heads: 4\n  n_kv_heads: 3\n'
expect_error kv_heads_divide "model.n_heads = 4 is not a multiple of model.n_kv_heads = 3" 2 "$INFO" --config "$TMP/kv.yaml"
y dense_rank 'model:\n  linear: dense\n  rank_attn: 8\n'
expect_error rank_for_dense "model.rank_attn is set but model.linear is dense" 2 "$INFO" --config "$TMP/dense_rank.yaml"
y olr 'model:\n  linear: svd\n  only_lr_act: false\n'
expect_error only_lr_act_non_cola "model.only_lr_act applies only to model.linear: cola or lax on the cola base (this is svd)" 2 "$INFO" --config "$TMP/olr.yaml"
# LaX (docs/lax.md §2): its keys only with model.linear: lax; only_lr_act only on the cola base
y laxkey 'model:\n  linear: cola\n  lax_gate: dense\n'
expect_error lax_key_without_lax "model.lax_gate applies only to model.linear: lax (this is cola)" 2 "$INFO" --config "$TMP/laxkey.yaml"
y laxolr 'model:\n  linear: lax\n  lax_base: svd\n  only_lr_act: true\n'
expect_error only_lr_act_lax_svd "model.only_lr_act applies only to model.linear: cola or lax on the cola base (this is lax with model.lax_base: svd)" 2 "$INFO" --config "$TMP/laxolr.yaml"
expect_error lax_bad_gate "model.lax_gate: expected one of identity, dense, kron, got 'diag'" 2 "$INFO" --set model.linear=lax --set model.lax_gate=diag
y laxok 'model:\n  preset: cola-60m\n  linear: lax\n  only_lr_act: false\n'
out=$("$INFO" --config "$TMP/laxok.yaml" 2>&1)
if grep -q "42,799,168" <<<"$out" && grep -q "1.6674e+08" <<<"$out" && grep -q "LaX base cola, gate kron, norm layernorm" <<<"$out"
then pass info_lax_cola60m
else fail info_lax_cola60m "expected 42,799,168 params and 1.6674e+08 FLOPs/token (model/flops.h); got: $(echo "$out" | grep -E 'param|FLOPs|LaX' | head -4)"; fi
y warmup 'train:\n  steps: 10\n  warmup_steps: 20\n'
expect_error warmup_gt_steps "train.warmup_steps = 20 exceeds train.steps = 10" 2 "$INFO" --config "$TMP/warmup.yaml"

# ---- manifests --------------------------------------------------------------------------
y newer 'manifest_version: 2\nname: newer\n'
expect_error newer_manifest_version "newer.yaml:1: manifest_version 2 is newer than this engine supports (1); update boost-c" 2 \
    "$INFO" --config "$TMP/newer.yaml"
y badname 'manifest_version: 1\nname: other\n'
expect_error name_must_match_stem "name 'other' must equal the file name stem 'badname'" 2 "$INFO" --config "$TMP/badname.yaml"
y cyc_a 'extends: cyc_b.yaml\n'
y cyc_b 'extends: cyc_a\n'
expect_error extends_cycle "extends cycle: $TMP/cyc_a.yaml -> $TMP/cyc_b.yaml -> $TMP/cyc_a.yaml" 2 "$INFO" --config "$TMP/cyc_a.yaml"
y self 'extends: self.yaml\n'
expect_error extends_self "extends cycle" 2 "$INFO" --config "$TMP/self.yaml"
y orphan 'manifest_version: 1\nextends: base/missing.yaml\n'
expect_error extends_missing "orphan.yaml:2: extends: cannot find 'base/missing.yaml'" 2 "$INFO" --config "$TMP/orphan.yaml"
y parent_bad 'model:\n  n_layers: zero\n'
y child_ok 'extends: parent_bad.yaml\n'
expect_error error_in_parent_names_parent "parent_bad.yaml:2: model.n_layers: expected an integer in [1, 65536], got 'zero'" 2 \
    "$INFO" --config "$TMP/child_ok.yaml"
y vkey 'variants:\n  a: {train.lr: 1e-3}\n  b:\n    model.d_modle: 64\n'
expect_error variant_unknown_key "vkey.yaml:4: variant 'b': unknown key 'model.d_modle'; did you mean 'model.d_model'?" 2 \
    "$INFO" --config "$TMP/vkey.yaml"
y vval 'variants:\n  fast:\n    train:\n      lr: fast\n'
expect_error variant_bad_value "vval.yaml:4: variant 'fast': train.lr: expected an fp32 number > 0, got 'fast'" 2 "$INFO" --config "$TMP/vval.yaml"
y vfin 'model:\n  rank_attn: 8\nvariants:\n  d: {model.linear: dense}\n  c: {}\n'
expect_error variant_finalize_names_variant "vfin.yaml (variant 'd'): model.rank_attn is set but model.linear is dense" 2 \
    "$INFO" --config "$TMP/vfin.yaml"
y gridkey 'variants:\n  grid:\n    train.lrr: [1, 2]\n'
expect_error grid_unknown_key "gridkey.yaml:3: variants.grid: unknown key 'train.lrr'; did you mean 'train.lr'?" 2 \
    "$INFO" --config "$TMP/gridkey.yaml"
y gridval 'variants:\n  grid:\n    train.lr: 0.1\n'
expect_error grid_needs_list "variants.grid: train.lr: expected a non-empty list of values" 2 "$INFO" --config "$TMP/gridval.yaml"
y gridmix 'variants:\n  grid:\n    train.lr: [0.1]\n  other: {}\n'
expect_error grid_and_named "use either named variants or grid, not both" 2 "$INFO" --config "$TMP/gridmix.yaml"
y gridbad 'variants:\n  grid:\n    model.linear: [dense, lora]\n'
expect_error grid_bad_value "variant 'linear=lora': model.linear: expected one of dense, cola, svd, lax, got 'lora'" 2 \
    "$INFO" --config "$TMP/gridbad.yaml"
y twovar 'variants:\n  a: {}\n  b: {}\n'
expect_error unknown_variant "no variant 'c'" 2 "$INFO" --config "$TMP/twovar.yaml" --variant c

# ---- bounded input: what is not a regular manifest is refused at once --------
y empty ''
expect_error empty_manifest_refused "empty.yaml is empty: no YAML document in it" 2 "$INFO" --config "$TMP/empty.yaml"
y comments '# nothing but a comment\n\n'
expect_error comment_only_manifest_refused "comments.yaml is empty" 2 "$INFO" --config "$TMP/comments.yaml"
y braces '{}\n'
expect_ok explicit_empty_mapping_is_defaults "$INFO" --config "$TMP/braces.yaml"
expect_error dev_zero_refused "manifest '/dev/zero' is a character device; expected a regular file" 2 timeout 10 "$INFO" --config /dev/zero
mkfifo "$TMP/fifo.yaml"
expect_error fifo_refused "fifo.yaml' is a FIFO (pipe); expected a regular file" 2 timeout 10 "$INFO" --config "$TMP/fifo.yaml"
out=$(echo 'model: {d_model: 64}' | timeout 10 "$INFO" --config /dev/stdin 2>&1 >/dev/null); rc=$?
[ $rc = 2 ] && grep -q "manifest '/dev/stdin' is a FIFO (pipe)" <<<"$out" && pass dev_stdin_pipe_refused \
    || fail dev_stdin_pipe_refused "exit $rc: $out"
expect_error directory_refused "is a directory; expected a regular file" 2 "$INFO" --config "$TMP"
head -c $((1024 * 1024 + 1)) /dev/zero | tr '\0' '#' > "$TMP/huge.yaml"
expect_error oversized_manifest_refused "is 1048577 bytes; the limit is 1048576 bytes" 2 "$INFO" --config "$TMP/huge.yaml"
# a 600-byte alias bomb once grew to 22 GB: now a clear error, in bounded memory
{ echo 'a: &a ["x","x","x","x","x","x","x","x","x"]'; p=a
  for n in b c d e f g h i; do echo "$n: &$n [*$p,*$p,*$p,*$p,*$p,*$p,*$p,*$p,*$p]"; p=$n; done; } > "$TMP/bomb.yaml"
# (3 GB of address space: a CUDA build maps ~1 GB of cuBLAS/NCCL libraries at start, and
# OpenBLAS then spins on its thread buffers at exit when mmap fails; the bomb grew to 22 GB)
expect_error alias_bomb_refused "expands to more than 100000 YAML nodes" 2 bash -c 'ulimit -v 3000000; exec "$@"' _ "$INFO" --config "$TMP/bomb.yaml"
y badalias 'train: *nope\n'
# invalid UTF-8 after a directive made libfyaml loop forever (found by fuzz/fuzz_manifest.c)
y badutf8 'model: {d_model: 64}\n%?\xd3\xdf\n'
expect_error invalid_utf8_refused "badutf8.yaml:2: not valid UTF-8 (byte 0xd3 at column 3)" 2 timeout 10 "$INFO" --config "$TMP/badutf8.yaml"
expect_error unknown_alias "badalias.yaml:1:" 2 "$INFO" --config "$TMP/badalias.yaml"

# ---- limits of values and sizes ------------------------------------------------------------
long=$(printf 'v%.0s' $(seq 1 130))
y longvar "variants:\n  $long: {}\n  short: {}\n"
expect_error variant_name_too_long "variants: a variant name must have 1 to 127 characters (this one has 130)" 2 \
    "$INFO" --config "$TMP/longvar.yaml"
expect_error rank_above_d_model "model.rank_attn = 200 exceeds model.d_model = 128: a low-rank factorisation needs r <= d_model" 2 \
    "$INFO" --set model.d_model=128 --set model.rank_attn=200
expect_error threads_upper_bound "train.threads: expected an integer in [0, 1024], got '5000'" 2 "$INFO" --set train.threads=5000
expect_error tokens_per_batch_overflow "train.batch_size * model.seq_len = 65536 * 65536 exceeds the limit of 2147483647" 2 \
    "$INFO" --set train.batch_size=65536 --set model.seq_len=65536
expect_error dimension_limit "model.vocab_size: expected an integer in [2, 16777216], got '2000000000'" 2 "$INFO" --set model.vocab_size=2000000000
expect_error run_tokens_overflow "overflows a 64-bit count" 2 \
    "$INFO" --set train.steps=2000000000 --set train.grad_accum=2000000000 --set train.batch_size=1000
expect_error parameter_limit "the model has more than 1099511627776 parameters" 2 \
    "$INFO" --linear dense --set model.n_layers=60000 --set model.d_model=1000000 --set model.n_heads=1 --set model.d_ff=1000000
expect_error synthetic_tokens_limit "data.synthetic_tokens: expected an integer in [1, 17179869184], got '99999999999999'" 2 \
    "$INFO" --set data.synthetic_tokens=99999999999999

# ---- values at the type they are used at: the instances of the reliability round ----------
# (tests/test_config.c generates the classes over every key; these are the cases as reported)
expect_error beta2_rounds_to_1 "train.beta2: 0.9999999999 rounds to 1 in fp32, the precision it is used at; expected an fp32 number in [0, 1) (at most 0.99999994)" 2 \
    "$INFO" --set train.beta2=0.9999999999
expect_error beta1_rounds_to_1 "train.beta1: 0.9999999999 rounds to 1 in fp32" 2 "$INFO" --set train.beta1=0.9999999999
expect_error dump_step_past_2_64 "run.dump_steps: step 99999999999999999999 is too large: a step number is a 32-bit integer" 2 \
    "$INFO" --set run.dump_steps=99999999999999999999
expect_error dump_step_beyond_steps "run.dump_steps lists step 1000, beyond train.steps = 3: it would never be dumped" 2 \
    "$INFO" --set train.steps=3 --set train.warmup_steps=0 --set run.dump_steps=1000
expect_error checkpoint_every_too_large "run.checkpoint_every: 99999999999 is too large: the engine holds it in a 32-bit integer (at most 2147483647)" 2 \
    "$INFO" --set run.checkpoint_every=99999999999
expect_error embed_std_1e300 "model.embed_std: expected an fp32 number in (0, 1], got '1e300'" 2 "$INFO" --set model.embed_std=1e300
expect_error embed_std_1e30 "model.embed_std: expected an fp32 number in (0, 1], got '1e30'" 2 "$INFO" --set model.embed_std=1e30
expect_error rope_theta_1e300 "model.rope_theta: 1e300 is too large for fp32, the precision it is used at (at most 3.4028235e+38)" 2 \
    "$INFO" --set model.rope_theta=1e300
expect_error lr_rounds_to_0 "train.lr: 1e-50 rounds to 0 in fp32" 2 "$INFO" --set train.lr=1e-50
expect_error hex_float_refused "train.lr: expected an fp32 number > 0, got '0x1p-10' (a hexadecimal float: YAML has none" 2 \
    "$INFO" --set train.lr=0x1p-10
expect_error float_literal_not_an_integer "train.steps: expected an integer in [1, 2147483647], got '2.0000000001e6'" 2 \
    "$INFO" --set train.steps=2.0000000001e6

# ---- one spelling of every key per file, generated over the schema (build/info --keys-tsv) ---
# Each key given twice in one mapping, dotted then nested, is refused naming both lines: in a
# file and in a variant's overrides. A variant setting what its file set is not a duplicate.
n=0; bad=""
while IFS= read -r line; do
    key=$(cut -f1 <<<"$line"); def=$(cut -f6 <<<"$line")   # (fields may be empty: cut, not read's IFS)
    sec=${key%%.*}; leaf=${key#*.}; v=${def:-'""'}
    printf '%s: %s\n%s:\n  %s: %s\n' "$key" "$v" "$sec" "$leaf" "$v" >"$TMP/dupkey.yaml"
    out=$("$INFO" --config "$TMP/dupkey.yaml" 2>&1); rc=$?
    [ $rc = 2 ] && grep -qF "dupkey.yaml:3: $key is given twice in one mapping: as '$key: ...' at line 1 and as '$sec: {$leaf: ...}' at line 3" <<<"$out" ||
        bad+="[$key file: $rc $(head -1 <<<"$out")] "
    printf 'variants:\n  v:\n    %s:\n      %s: %s\n    %s: %s\n' "$sec" "$leaf" "$v" "$key" "$v" >"$TMP/dupvar.yaml"
    out=$("$INFO" --config "$TMP/dupvar.yaml" 2>&1); rc=$?
    [ $rc = 2 ] && grep -qF "variant 'v': $key is given twice in one mapping" <<<"$out" || bad+="[$key variant: $rc $(head -1 <<<"$out")] "
    n=$((n + 1))
done < <("$INFO" --keys-tsv)
[ "$n" -ge 50 ] && [ -z "$bad" ] && pass "duplicate_key_in_every_spelling ($n keys)" || fail duplicate_key_in_every_spelling "$n keys; $bad"
y varover 'train:\n  lr: 1e-3\nvariants:\n  v: {train.lr: 2e-3}\n'
expect_ok variant_may_set_its_files_key "$INFO" --config "$TMP/varover.yaml"
y twodocs 'train: {lr: 1e-3}\n---\ntrain: {lr: 5}\n'
expect_error second_yaml_document "twodocs.yaml:2: a second YAML document ('---'); a manifest is one document" 2 \
    "$INFO" --config "$TMP/twodocs.yaml"
y nonascii 'variants:\n  caf\xc3\xa9: {}\n'
expect_error non_ascii_variant_name_shown_whole "variants: name 'café' holds 'é' (U+00E9)" 2 "$INFO" --config "$TMP/nonascii.yaml"
y ctlname "variants:\n  \"a\\tb\": {}\n"
expect_error control_character_in_name_escaped "variants: name 'a\\x09b' holds control character U+0009" 2 "$INFO" --config "$TMP/ctlname.yaml"

# ---- --set and the command line -----------------------------------------------------------
expect_error set_bad_value "--set train.lr=abc: train.lr: expected an fp32 number > 0, got 'abc'" 2 "$INFO" --set train.lr=abc
expect_error set_unknown_key "--set train.lrr=1: unknown key 'train.lrr'; did you mean 'train.lr'?" 2 "$INFO" --set train.lrr=1
expect_error set_no_equals "--set expects KEY=VALUE, got 'train.lr'" 2 "$INFO" --set train.lr
expect_error set_on_manifest "--set model.n_layers=0: model.n_layers: expected an integer in [1, 65536], got '0'" 2 \
    "$INFO" --config experiments/quickstart.yaml --set model.n_layers=0
expect_error bad_linear_flag "model.linear: expected one of dense, cola, svd, lax, got 'lora'" 2 "$INFO" --linear lora
expect_error unknown_argument "info: unknown option '--bogus'" 2 "$INFO" --bogus

# ---- good paths -------------------------------------------------------------------------
out=$("$INFO" --preset cola-60m --linear cola 2>&1)
if grep -q "42,770,944" <<<"$out" && grep -q "1.6564e+08" <<<"$out"; then pass info_cola60m
else fail info_cola60m "expected 42,770,944 params and 1.6564e+08 FLOPs/token; got: $(echo "$out" | grep -E 'param|FLOPs' | head -3)"; fi
out=$("$INFO" --preset cola-60m --linear dense 2>&1)
if grep -q "58,073,600" <<<"$out"; then pass info_cola60m_dense; else fail info_cola60m_dense "$(echo "$out" | grep param)"; fi
all=$("$INFO" --all 2>&1)
nd=$(grep -cE '^[a-z0-9-]+ +dense ' <<<"$all"); nc=$(grep -cE '^[a-z0-9-]+ +cola ' <<<"$all"); ns=$(grep -cE '^[a-z0-9-]+ +svd ' <<<"$all")
nl=$(grep -cE '^[a-z0-9-]+ +lax ' <<<"$all")
[ "$nd" -ge 12 ] && [ "$nd" -eq "$nc" ] && [ "$nd" -eq "$ns" ] && [ "$nd" -eq "$nl" ] && pass info_all || fail info_all "rows dense $nd cola $nc svd $ns lax $nl"
expect_ok quickstart_loads "$INFO" --config experiments/quickstart.yaml
for f in experiments/*.yaml experiments/*/*.yaml; do
    [ -f "$f" ] || continue
    case "$f" in experiments/hardware/*) continue ;; esac   # hardware profiles, not manifests (test_sim)
    expect_ok "manifest_ok_$(basename "$f" .yaml)" "$INFO" --config "$f"
done
y grid3 'variants:\n  grid:\n    model.linear: [dense, cola]\n    train.lr: [0.001, 0.003]\n'
out=$("$INFO" --config "$TMP/grid3.yaml" 2>&1)
if [ "$(grep -c '^== linear=' <<<"$out")" -eq 4 ] && grep -q '^== linear=cola,lr=0.003 ==' <<<"$out"; then pass grid_variants_listed
else fail grid_variants_listed "$(grep '^==' <<<"$out" | tr '\n' ' ')"; fi
json=$("$INFO" --preset tiny --json)
if /usr/bin/python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["model"]["preset"]=="tiny" and d["train"]["seed"]==42' "$json" 2>/dev/null
then pass config_json_parses; else fail config_json_parses "$json"; fi
# docs/configuration.md carries the generated key table verbatim
if [ -f docs/configuration.md ]; then
    doc=$(sed -n '/<!-- keys:begin/,/<!-- keys:end/p' docs/configuration.md | sed '1d;$d')
    if [ "$doc" == "$("$INFO" --keys-markdown)" ]; then pass docs_keys_in_sync
    else fail docs_keys_in_sync "docs/configuration.md differs from 'build/info --keys-markdown'; regenerate it"; fi
else fail docs_keys_in_sync "docs/configuration.md missing"; fi

# ---- names that would be hidden folders, and a manifest's own keys inside a variant ----------
# Generated: every leading-dot spelling as an experiment name (file and name: agree) and as a
# variant name; every meta key of the manifest (read from src/config/manifest.c) inside a
# variant. Each exits 2 naming the file, the line and the rule; a meta key's message never
# suggests the key itself.
bad=0; tried=0
for nm in . .. ... .x .hidden .-a '.@b'; do
    tried=$((tried + 1))
    d="$TMP/dot$tried"; mkdir -p "$d"
    printf 'manifest_version: 1\nname: "%s"\n' "$nm" > "$d/$nm.yaml"
    out=$("$INFO" --config "$d/$nm.yaml" 2>&1); rc=$?
    [ $rc -eq 2 ] && grep -q "$nm.yaml:2: name '.*' begins with '.'" <<<"$out" || { bad=$((bad + 1)); echo "  name '$nm': exit $rc: $(head -1 <<<"$out")"; }
    tried=$((tried + 1))
    printf 'manifest_version: 1\nvariants:\n  "%s": {train.lr: 1e-3}\n' "$nm" > "$TMP/dotv.yaml"
    out=$("$INFO" --config "$TMP/dotv.yaml" 2>&1); rc=$?
    [ $rc -eq 2 ] && grep -q "dotv.yaml:3: variants: name '.*' begins with '.'" <<<"$out" || { bad=$((bad + 1)); echo "  variant '$nm': exit $rc: $(head -1 <<<"$out")"; }
done
metas=$(sed -nE 's/^static const char \*const META_KEYS\[\] = \{(.*), NULL\};/\1/p' src/config/manifest.c | tr -d '" ' | tr ',' ' ')
[ -n "$metas" ] || { bad=$((bad + 1)); echo "  META_KEYS not found in src/config/manifest.c"; }
for k in $metas; do
    tried=$((tried + 1))
    printf 'manifest_version: 1\nvariants:\n  a:\n    %s: x\n' "$k" > "$TMP/metav.yaml"
    out=$("$INFO" --config "$TMP/metav.yaml" 2>&1); rc=$?
    if [ $rc -ne 2 ] || ! grep -q "metav.yaml:4: variant 'a': '$k' is a key of the manifest itself" <<<"$out" || grep -q "did you mean '$k'" <<<"$out"; then
        bad=$((bad + 1)); echo "  '$k' in a variant: exit $rc: $(head -1 <<<"$out")"
    fi
done
if [ $bad -eq 0 ]; then pass "names_and_meta_keys_refused ($tried generated cases)"; else fail names_and_meta_keys_refused "$bad of $tried"; fi

# ---- one scalar rule: the engine and analysis/yaml12.py read every spelling alike ---------
# (generated: ~17,000 spellings of int, uint64, fp32, fp64, bool, enum and string keys; either
# both refuse or both give the same typed value. tests/config_scalars.py says how.)
if python3 -c 'import yaml' 2>/dev/null; then
    python3 tests/config_scalars.py "$BUILD"
else
    skip config_scalars_agree "no PyYAML for python3 (analysis/yaml12.py needs it)"
fi

# ---- a key that came into a variant from another one is named where it is written ----------
# Generated: a mapping anchored inside variant a (a's own train: or model: section) merged
# into variant b (<<: *t or <<: [*t]) where its keys are no keys at b's top level, with 0..2
# variants before a and 0..1 between a and b. The message's line is in a's mapping: it must
# name variant a, as merged into b, never b alone.
bad=0; tried=0
for kv in "train lr 1e-3" "train seed 3" "model d_model 64" "data val_fraction 0.1"; do
    read -r sec key val <<<"$kv"
    for before in 0 1 2; do
        for between in 0 1; do
            for form in '*t' '[*t]'; do
                tried=$((tried + 1))
                { printf 'manifest_version: 1\nname: merge\nvariants:\n'
                  for i in $(seq 1 $before); do printf '  pre%d: {train.seed: %d}\n' "$i" "$i"; done
                  printf '  a:\n    %s: &t\n      %s: %s\n' "$sec" "$key" "$val"
                  for i in $(seq 1 $between); do printf '  mid%d: {train.seed: 9}\n' "$i"; done
                  printf '  b:\n    <<: %s\n    train.log_every: 2\n' "$form"; } > "$TMP/merge.yaml"
                out=$("$INFO" --config "$TMP/merge.yaml" 2>&1); rc=$?
                line=$(grep -n "^      $key: $val" "$TMP/merge.yaml" | cut -d: -f1)
                if [ $rc -ne 2 ] || ! grep -q "merge.yaml:$line: variant 'a' (merged into variant 'b'): unknown key '$key'" <<<"$out"; then
                    bad=$((bad + 1)); echo "  $sec.$key merged by <<: $form ($before before, $between between): exit $rc: $(head -1 <<<"$out")"
                fi
            done
        done
    done
done
if [ $bad -eq 0 ]; then pass "merged_key_names_its_variant ($tried generated manifests)"; else fail merged_key_names_its_variant "$bad of $tried"; fi
