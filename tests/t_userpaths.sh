#!/usr/bin/env bash
# Every file a tool reads or writes at a path the user gives (an option, an environment variable,
# a configuration key) is a regular file or, for an output, a new name (core/fileio.h
# file_open_regular, file_check_replace). Generated: each such path of each tool is tried as a
# FIFO, a directory, a character device and a symbolic link to nothing; each must end (a FIFO
# is never waited on: a hang is a FAIL) with exit 1 or 2 and a message naming the path. Which
# options are paths is the tools' own tables' word (path_options_each_tried below).
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
B=$BUILD
export OMP_NUM_THREADS=1
W=$TMP/w; mkdir -p "$W"
for i in $(seq 3000); do echo "in the beginning $i the word was with the quick brown fox and the lazy dog"; done >"$W/corpus.txt"
cat >"$W/tiny.yaml" <<YAML
manifest_version: 1
name: tiny
version: 1
description: a tiny synthetic run
model: {linear: cola, vocab_size: 256, n_layers: 2, d_model: 32, n_heads: 4, d_ff: 64, seq_len: 16}
data: {dataset: "text:$W/corpus.txt", cache_dir: $W/cache}
train: {batch_size: 2, steps: 2, warmup_steps: 1, min_lr_ratio: 1, log_every: 100, threads: 1}
run: {db: $W/runs.db, checkpoint_dir: $W/ck, checkpoint_every: 2}
variants:
  v: {train.lr: 3e-3}
YAML
# a checkpoint for the tools that read one
timeout 120 "$B/train" "$W/tiny.yaml" --peak-gflops 1 >"$W/train.log" 2>&1 || { fail userpaths_setup "$(tail -3 "$W/train.log")"; exit 0; }
CK=$(ls "$W"/ck/*/step_2.h5 | head -1)
SIM=("$B/simulate" experiments/ablation-btp.yaml --variant btp --hardware cpu-local --set "run.db=$W/sim.db")

# Each case: a label, then the command with @P@ where the path goes (env assignments first).
cases=(
  "simulate --json|${SIM[*]} --json @P@"
  "simulate --ops-csv|$B/simulate $W/tiny.yaml --hardware cpu-local --measure-ops 1 --ops-csv @P@"
  "simulate --hardware|$B/simulate $W/tiny.yaml --hardware @P@"
  "simulate manifest|$B/simulate @P@ --hardware cpu-local"
  "simulate run.db|${SIM[*]} --set run.db=@P@ --record"
  "BOOST_CPU_GEMM_CACHE|env BOOST_CPU_GEMM_CACHE=@P@ $B/train $W/tiny.yaml --no-db --peak-gflops 1 --set run.checkpoint_every=0"
  "BOOST_CPU_GEMM=table:|env BOOST_CPU_GEMM=table:@P@ $B/train $W/tiny.yaml --no-db --peak-gflops 1 --set run.checkpoint_every=0"
  "train manifest|$B/train @P@ --peak-gflops 1"
  "train run.db|$B/train $W/tiny.yaml --peak-gflops 1 --set run.db=@P@"
  "train run.db --resume|$B/train $W/tiny.yaml --peak-gflops 1 --resume --set run.db=@P@"
  "bench --json|$B/bench --preset tiny --steps 1 --warmup 0 --linears dense --no-profile --no-switches --json @P@"
  "calibrate --out|$B/calibrate --quick --out @P@"
  "calibrate --refresh|$B/calibrate --refresh @P@ --out $W/prof.yaml"
  "sample --logits|$B/sample $CK --prompt ab --tokens 1 --logits @P@"
  "sample checkpoint|$B/sample @P@ --prompt ab --tokens 1"
  "sample --tokenizer|$B/sample $CK --prompt ab --tokens 1 --tokenizer @P@"
  "export checkpoint|$B/export @P@ $W/out"
  "h5compare|$B/h5compare @P@ $CK"
  "info --config|$B/info --config @P@"
  "watch --db|$B/watch $W/tiny.yaml --db @P@ --once"
  "exp --db --compare|$B/exp --compare --db @P@"
  "exp --simulate|$B/exp $W/tiny.yaml --simulate @P@"
  "exp --hostfile|$B/exp $W/tiny.yaml --hostfile @P@ --dry-run"
  "prepare --dataset text:|$B/prepare --dataset text:@P@ --vocab 64"
  "train data.dataset text:|$B/train $W/tiny.yaml --peak-gflops 1 --set data.dataset=text:@P@"
)
# folders the user names: each a directory or a new name (core/outdir.h), never another kind
folders=(
  "run.checkpoint_dir|$B/train $W/tiny.yaml --peak-gflops 1 --set run.checkpoint_dir=@P@"
  "run.dump_dir|$B/train $W/tiny.yaml --peak-gflops 1 --set run.dump_steps=1 --set run.dump_dir=@P@"
  "data.cache_dir|$B/train $W/tiny.yaml --peak-gflops 1 --set data.cache_dir=@P@"
  "export folder|$B/export $CK @P@"
  "prepare --cache-dir|$B/prepare --dataset text:$W/corpus.txt --vocab 256 --cache-dir @P@"
  "prepare --check|$B/prepare --check @P@"
)
# The option tables say which options are paths (config/options.h OPT_PATH_ROW; BOOST_OPTIONS=list
# marks them), the schema which keys are (CKF_PATH): each must have a case above, labelled "TOOL
# --NAME" or naming the key, and every other string option and key is named here as not a path, so
# that a new one is decided either way.
not_paths=" bench --preset|bench --linears|bench --set|bench --switches|bench --precision|bench_attention --batch|
bench_attention --isa|bench_attention --seq|bench_comm --preset|bench_gemm --preset|bench_gemm --linear|bench_gemm --set|
calibrate --ranks|exp --variant|exp --set|exp --allow-change|exp --launcher|exp --launcher-arg|h5compare --groups|
info --preset|info --linear|info --set|info --variant|sample --prompt|simulate --variant|simulate --gemm|
simulate --precision|simulate --attention-kernel|simulate --host|simulate --unfused|simulate --set|train --variant|
train --set|train --resume|train --allow-change|"
labels="|$(printf '%s|' "${cases[@]%%|*}" "${folders[@]%%|*}")"
undecided=() uncovered=() n_path=0
for src in src/tools/*.c; do
    tool=$(basename "$src" .c)
    [ -x "$B/$tool" ] || { undecided+=("$tool: not built"); continue; }
    rows=$(BOOST_OPTIONS=list "$B/$tool" --help 2>/dev/null) || continue   # no option table (export)
    # name, type and the path mark (columns 1, 3 and 8; empty columns kept: awk, not read's IFS)
    while read -r name type path; do
        [ "$type" = string ] || continue
        if [ "$path" = path ]; then
            n_path=$((n_path + 1))
            [[ $labels == *"|$tool $name|"* || $labels == *"|$tool $name "* ]] || uncovered+=("$tool $name")
        elif [[ $not_paths != *"$tool $name|"* ]]; then undecided+=("$tool $name")
        fi
    done < <(awk -F'\t' '{ print $1, $3, ($8 == "" ? "-" : $8) }' <<<"$rows")
done
# ... and the same for the configuration's keys (CKF_PATH, "path" in info --keys-tsv): a case whose
# label names the key, and the other string keys named here as not paths
not_path_keys=" model.preset run.dump_steps "
n_key=0
while read -r key type path; do
    [ "$type" = string ] || continue
    if [ "$path" = path ]; then
        n_key=$((n_key + 1))
        [[ " ${labels//|/ } " == *" $key "* ]] || uncovered+=("$key")
    elif [[ $not_path_keys != *" $key "* ]]; then undecided+=("$key")
    fi
done < <("$B/info" --keys-tsv | awk -F'\t' '{ print $1, $2, ($10 == "" ? "-" : $10) }')
if [ ${#uncovered[@]} = 0 ] && [ ${#undecided[@]} = 0 ] && [ $n_path -gt 0 ] && [ $n_key -gt 0 ]; then
    pass "path_options_each_tried ($n_path path options in the tables and $n_key path keys of the schema, each with a case)"
else fail path_options_each_tried "path options without a case: ${uncovered[*]:-none}; string options neither marked a path nor named as not one: ${undecided[*]:-none}"; fi

mkfifo "$W/fifo"; mkdir -p "$W/dir"; ln -s "$W/nothing-here" "$W/dangling"
kinds=("fifo|$W/fifo" "directory|$W/dir" "char device|/dev/null" "dangling link|$W/dangling")
n=0 bad=()
for c in "${cases[@]}" "${folders[@]/#/folder:}"; do
    label=${c%%|*} cmd=${c#*|}
    for k in "${kinds[@]}"; do
        kind=${k%%|*} p=${k#*|}
        [[ $label == folder:* && $kind == directory ]] && continue
        n=$((n + 1))
        out=$(timeout -k 5 30 ${cmd//@P@/$p} 2>&1 </dev/null); rc=$?
        if [ $rc = 124 ] || [ $rc = 137 ]; then bad+=("$label ($kind): hang")
        elif [ $rc != 1 ] && [ $rc != 2 ]; then bad+=("$label ($kind): exit $rc: $(grep -m1 'error' <<<"$out" | head -c 200)")
        elif ! grep -q "error.*$p" <<<"$out"; then bad+=("$label ($kind): exit $rc, no error naming $p: $(grep -m1 'error' <<<"$out" | head -c 200)")
        fi
        [ -p "$W/fifo" ] && [ -d "$W/dir" ] && [ -L "$W/dangling" ] && [ ! -e "$W/nothing-here" ] ||
            { bad+=("$label ($kind): the planted path was changed"); rm -rf "$W/fifo" "$W/dir" "$W/dangling" "$W/nothing-here";
              mkfifo "$W/fifo"; mkdir -p "$W/dir"; ln -s "$W/nothing-here" "$W/dangling"; }
    done
done
if [ ${#bad[@]} = 0 ]; then pass "user_paths_not_regular_refused ($n cases: ${#cases[@]} files x ${#kinds[@]} kinds, ${#folders[@]} folders x 3)"
else fail user_paths_not_regular_refused "${#bad[@]} of $n: $(printf '%s; ' "${bad[@]}")"; fi
