#!/usr/bin/env bash
# Bit-identity of two builds of the engine (a restructuring changes no number).
#
#   tools/dump_identity.sh record BUILD OUT    run the reference cases with BUILD/train into OUT
#   tools/dump_identity.sh compare OUT_A OUT_B  every dataset bit for bit, logs' counts equal
#
# The cases: dense, cola, svd at tp 2 with every BOOST switch (btp, online_rmsnorm, grouping,
# lowrank_ckpt), cola with SyncRMSNorm's bottleneck backward, lax (Vanilla-TP: the switches need
# BTP) on both bases and two gate/norm choices at tp 2 and tp2 x pp2, cola at tp2 x pp2 with full
# recompute, and dense/cola at dp 2 with ZeRO-1: two optimizer steps of two micro-
# batches each. Each case keeps its step dumps of steps 1 and 2 (loss, weights, gradients), its
# checkpoint after step 2 (weights, AdamW moments) and its log. `compare` runs
# build/h5compare --exact over every group of every file and compares the log lines
# that carry numbers (losses, communication counts) after dropping timings and paths.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMP_NUM_THREADS=1

cases() {  # name np linear extra --set ...
    cat <<'EOF'
dense_tp2 2 dense
cola_tp2_boost 2 cola boost.btp=true boost.online_rmsnorm=true boost.grouping=true boost.lowrank_ckpt=true
svd_tp2_boost 2 svd boost.btp=true boost.online_rmsnorm=true boost.grouping=true boost.lowrank_ckpt=true
cola_tp2_btp_sync 2 cola boost.btp=true boost.sync_norm_backward=bottleneck
lax_cola_tp2pp2 4 lax model.lax_base=cola parallel.pp=2
lax_svd_tp2 2 lax model.lax_base=svd model.lax_gate=dense model.lax_norm=none
cola_tp2pp2_recompute 4 cola parallel.pp=2 boost.full_recompute=true
cola_dp2_zero1 2 cola parallel.tp=1 parallel.dp=2 parallel.zero1=true
dense_dp2_zero1 2 dense parallel.tp=1 parallel.dp=2 parallel.zero1=true
EOF
}

record() {
    local build=$1 out=$2
    [ -x "$build/train" ] || { echo "error: $build/train is not an executable (build it: make -j2 all)" >&2; exit 2; }
    mkdir -p "$out"
    local fails=0
    while read -r name np linear extra; do
        local d="$out/$name" sets=()
        mkdir -p "$d"
        cat > "$d/cfg.yaml" <<YAML
model: {linear: $linear, vocab_size: 256, n_layers: 2, d_model: 32, n_heads: 4, n_kv_heads: 4, d_ff: 48, seq_len: 16, rank_attn: 8, rank_mlp: 8}
data: {dataset: kjv, cache_dir: $out/cache}
train: {batch_size: 4, grad_accum: 2, steps: 2, lr: 1e-2, warmup_steps: 0, threads: 1, val_batches: 1}
run: {dump_steps: "1,2"}
YAML
        [ "$linear" = dense ] && sed -i 's/, rank_attn: 8, rank_mlp: 8//' "$d/cfg.yaml"
        sets=(--set parallel.tp=2)
        for kv in $extra; do sets+=(--set "$kv"); done
        if ! timeout 300 mpirun -np "$np" "$build/train" "$d/cfg.yaml" --no-db "${sets[@]}" \
                --set run.dump_dir="$d/dump" --set run.checkpoint_dir="$d/ckpt" </dev/null >"$d/log" 2>&1; then
            echo "FAIL $name: the run failed: $(tail -2 "$d/log")"; fails=$((fails + 1)); continue
        fi
        echo "recorded $name"
    done < <(cases)
    return $((fails > 0))
}

numbers_of() {  # what must not change: the configuration echo (paths dropped), each step's loss
    # and gradient norm, validation losses, communication counts; no timings, FLOP or MFU figures
    # (a change of the FLOP convention may move FLOPs/token; nothing else may);
    # seconds ("0.02s", the tokenizer's and the cache's) are timings too
    sed -E -e 's/\b[0-9]+(\.[0-9]+)?s\b/Ns/g' -e 's/^step +([0-9]+)\/([0-9]+) \| (loss [0-9.]+) \| lr ([^|]+)\| (norm +[0-9.]+) .*/step \1 of \2 \3 lr \4 \5/' "$1" |
        grep -v -E '/|^run |^overrides:'
}

compare() {
    local a=$1 b=$2 bad=0 n=0
    while read -r name _; do
        for f in "$a/$name"/dump/*.h5 "$a/$name"/ckpt/*/*.h5; do
            [ -e "$f" ] || { echo "MISSING $name: no files under $a/$name"; bad=$((bad + 1)); continue; }
            local rel=${f#"$a/$name/"} g
            local fb
            fb=$(ls "$b/$name"/${rel%%/*}/${rel#*/} 2>/dev/null || true)
            [ "${rel%%/*}" = ckpt ] && fb=$(ls "$b/$name"/ckpt/*/"$(basename "$f")" 2>/dev/null)
            [ -n "$fb" ] || { echo "MISSING $name: $rel not in $b"; bad=$((bad + 1)); continue; }
            g=model,grads,loss; [ "${rel%%/*}" = ckpt ] && g=model,optimizer
            if out=$("$ROOT/build/h5compare" "$f" "$fb" --groups "$g" --exact 2>&1); then n=$((n + 1))
            else echo "DIFFER $name $rel: $(echo "$out" | tail -3)"; bad=$((bad + 1)); fi
        done
        if ! diff <(numbers_of "$a/$name/log") <(numbers_of "$b/$name/log") >/dev/null; then
            echo "DIFFER $name log:"; diff <(numbers_of "$a/$name/log") <(numbers_of "$b/$name/log") | head -6
            bad=$((bad + 1))
        fi
    done < <(cases)
    echo "dump_identity: $n files bit-identical, $bad differences"
    [ $bad -eq 0 ]
}

case "${1:-}" in
    record) [ $# -eq 3 ] || { echo "usage: $0 record BUILD OUT" >&2; exit 2; }; record "$2" "$3" ;;
    compare) [ $# -eq 3 ] || { echo "usage: $0 compare OUT_A OUT_B" >&2; exit 2; }; compare "$2" "$3" ;;
    *) echo "usage: $0 record BUILD OUT | compare OUT_A OUT_B" >&2; exit 2 ;;
esac
