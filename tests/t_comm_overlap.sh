#!/usr/bin/env bash
# t_comm_overlap.sh — communication off the compute stream changes no bit (docs/parallelism.md
# §9). Each case trains two steps of two micro-batches at tp 2 × dp 2 (4 ranks) twice:
# parallel.overlap true (the data-parallel reduction of each gradient bucket started in the
# last backward, the TP collectives started beside GEMMs, non-blocking MPI) and false (every
# collective completed where it is started: the blocking form). The step dumps (loss, weights,
# gradients before each update) and the checkpoint after step 2 (weights, AdamW moments) must
# be bit-identical (build/h5compare --exact), and the logs' numbers equal (losses, gradient
# norms, communication counts; timings dropped).
#
# The cases are generated: every model.linear kind (dense, cola, svd, lax) with every BOOST
# switch its tensor-parallel scheme takes (cola/svd: BTP with online RMSNorm, grouping and
# the low-rank checkpoint; dense and lax: Vanilla-TP, which the switches need BTP for), crossed
# with the two ways a bucket is reduced (all-reduce; ZeRO-1's reduce-scatter along the DP
# slices) and, for half of them, sequence parallelism (which changes the TP collectives that
# overlap: reduce-scatters in place of all-reduces), the half taken by the case's index so
# every kind meets both. One more case at pp 2 × dp 2 (the pipeline's order of final gradients).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMP_NUM_THREADS=1
PY=/usr/bin/python3
if [ ! -x "$BUILD/train" ]; then fail comm_overlap_build "$BUILD/train not built (make $BUILD/train)"; exit 0; fi
if ! command -v mpirun >/dev/null; then fail comm_overlap_mpirun "mpirun not found (Debian: openmpi-bin)"; exit 0; fi
if [ ! -x "$BUILD/h5compare" ]; then fail comm_overlap_build "$BUILD/h5compare not built (make $BUILD/h5compare)"; exit 0; fi

switches_of() {  # the BOOST switches a linear kind takes (as --set arguments)
    case $1 in
        cola|svd) echo "--set boost.btp=true --set boost.online_rmsnorm=true --set boost.grouping=true --set boost.lowrank_ckpt=true" ;;
        *) echo "--set boost.btp=false" ;;
    esac
}
cfg() {  # KIND -> $TMP/KIND.yaml
    cat > "$TMP/$1.yaml" <<YAML
model: {linear: $1, vocab_size: 256, n_layers: 2, d_model: 32, n_heads: 4, n_kv_heads: 4, d_ff: 48, seq_len: 16, rank_attn: 8, rank_mlp: 8}
data: {dataset: kjv, cache_dir: $TMP/cache}
train: {batch_size: 4, grad_accum: 2, steps: 2, lr: 1e-2, warmup_steps: 0, threads: 1, val_batches: 1}
run: {dump_steps: "1,2"}
YAML
    [ "$1" = dense ] && sed -i 's/, rank_attn: 8, rank_mlp: 8//' "$TMP/$1.yaml"
}
run() {  # NAME KIND OVERLAP [--set ...] (the grid among them: 4 ranks)
    local name=$1 kind=$2 ov=$3; shift 3
    local d="$TMP/$name-$ov"
    timeout 300 mpirun -np 4 "$BUILD/train" "$TMP/$kind.yaml" --no-db \
        --set parallel.overlap="$ov" --set run.dump_dir="$d/dump" --set run.checkpoint_dir="$d/ckpt" "$@" \
        </dev/null >"$d.log" 2>&1
}
numbers_of() {  # losses, norms, counts: the log without timings, paths and the switch itself
    sed -E -e 's/\b[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?[mun]?s\b/Ns/g' \
        -e 's/^step +([0-9]+)\/([0-9]+) \| (loss [0-9.]+) \| lr ([^|]+)\| (norm +[0-9.]+) .*/step \1 of \2 \3 lr \4 \5/' "$1" |
        grep -v -E '/|^run |^overrides:|^(data|bpe): |overlap|tok/s|MFU|elapsed'
}
compare_case() {  # NAME: overlap true against false
    local name=$1 a="$TMP/$1-true" b="$TMP/$1-false" f fb rel g out n=0
    for f in "$b"/dump/*.h5 "$b"/ckpt/*/*.h5; do
        [ -e "$f" ] || { echo "no files under $b"; return 1; }
        rel=${f#"$b/"}
        if [ "${rel%%/*}" = ckpt ]; then fb=$(ls "$a"/ckpt/*/"$(basename "$f")" 2>/dev/null); g=model,optimizer
        else fb="$a/$rel"; g=model,grads,loss; fi
        [ -e "$fb" ] || { echo "$rel missing with overlap"; return 1; }
        out=$("$BUILD/h5compare" "$fb" "$f" --groups "$g" --exact 2>&1) || { echo "$rel: $(tail -3 <<<"$out" | tr '\n' ' ')"; return 1; }
        n=$((n + 1))
    done
    if ! diff <(numbers_of "$a.log") <(numbers_of "$b.log") >"$TMP/$name.diff"; then
        echo "the logs' numbers differ: $(head -6 "$TMP/$name.diff" | tr '\n' ' ')"; return 1
    fi
    echo "$n files"
}

overlap_pair() {  # NAME KIND [--set ...]: the run with overlap against the blocking one
    local name=$1 kind=$2 ov r; shift 2
    local test="comm_overlap_bit_identical_$name"
    for ov in true false; do
        if ! run "$name" "$kind" "$ov" "$@"; then
            fail "$test" "the run with parallel.overlap $ov failed: $(tail -2 "$TMP/$name-$ov.log" | tr '\n' ' ')"; return
        fi
    done
    if r=$(compare_case "$name"); then pass "$test ($r bit-identical, logs' numbers equal)"
    else fail "$test" "$r"; fi
}
i=0
for kind in dense cola svd lax; do
    cfg "$kind"
    for reduce in allreduce zero1; do
        sets=($(switches_of "$kind"))
        name="${kind}_$reduce"
        [ $reduce = zero1 ] && sets+=(--set parallel.zero1=true)
        if [ $(((i + ${#kind}) % 2)) = 1 ]; then
            sets+=(--set parallel.sequence_parallel=true); name="${name}_sp"
        fi
        i=$((i + 1))
        overlap_pair "${name}_tp2_dp2" "$kind" --set parallel.tp=2 --set parallel.dp=2 "${sets[@]}"
    done
done
# and in pipeline order: the buckets start in each stage's last backward action of the 1F1B
# schedule (cola, BTP with every switch, ZeRO-1 at pp 2 × dp 2)
overlap_pair cola_zero1_pp2_dp2 cola --set parallel.pp=2 --set parallel.dp=2 --set parallel.zero1=true $(switches_of cola)

# ---- the performance model prices the overlap the engine does, no more ----------------------
# build/simulate on the dry trace, parallel.overlap true against false, over generated grids
# (tp 1|2 × dp 2|4, ZeRO-1 off|on, BTP off|on, the recipe's small model and the paper's 7B on
# 4-GPU A100 nodes). The exposed data-parallel reduction (the optimizer phase's DP seconds) with
# overlap: never above the blocking one, never below the blocking one less the last
# micro-batch's backward (the only time its buckets run beside: they start as that backward
# finishes each layer and are waited for before clipping), and below the blocking one in some
# case (the overlap is priced at all).
if [ -x "$BUILD/simulate" ]; then
    : > "$TMP/sim.tsv"
    ok=1
    for preset in recipe boost-7b; do
        for tp in 1 2; do for dp in 2 4; do for z in false true; do for btp in false true; do
            sets=(--set parallel.tp=$tp --set parallel.dp=$dp --set parallel.zero1=$z --set boost.btp=$btp)
            [ $preset = recipe ] || sets+=(--set model.preset=$preset --set data.dataset=synthetic --set train.batch_size=8)
            for ov in true false; do
                if ! "$BUILD/simulate" "$ROOT/experiments/ablation-btp.yaml" --variant btp --hardware a100-80gb-node4 \
                        "${sets[@]}" --set parallel.overlap=$ov --json "$TMP/sim-$ov.json" >"$TMP/sim.log" 2>&1; then
                    fail comm_overlap_sim_exposed_dp "simulate ${sets[*]} overlap $ov failed: $(tail -2 "$TMP/sim.log" | tr '\n' ' ')"; ok=0; break 5
                fi
            done
            $PY - "$TMP/sim-true.json" "$TMP/sim-false.json" "$preset ${sets[*]}" >>"$TMP/sim.tsv" <<'PY'
import json, sys
on, off = (json.load(open(p)) for p in sys.argv[1:3])
for a, b in zip(on["stages"], off["stages"]):
    print(f'{a["comm_group_s"]["optimizer"]["dp"]!r}\t{b["comm_group_s"]["optimizer"]["dp"]!r}\t'
          f'{b["backward_s_per_micro_batch"]!r}\t{sys.argv[3]}')
PY
        done; done; done; done
    done
    [ -n "${SHOW_SIM:-}" ] && cat "$TMP/sim.tsv"
    if [ $ok = 1 ]; then
        r=$($PY - "$TMP/sim.tsv" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
bad, less = [], 0
for on, off, bwd, case in rows:
    on, off, bwd = float(on), float(off), float(bwd)
    if on > off * (1 + 1e-12) + 1e-15: bad.append(f"{case}: exposed {on:.3g} s above the blocking {off:.3g} s")
    if on < off - bwd - 1e-12: bad.append(f"{case}: exposed {on:.3g} s below blocking {off:.3g} s less the backward {bwd:.3g} s")
    less += on < off * 0.99
if not rows: bad.append("no cases")
if less == 0: bad.append("overlap hides nothing of the DP reduction in any case")
print(("ok " if not bad else "bad ") + f"{len(rows)} cases, {less} with less exposed" + ("" if not bad else ": " + "; ".join(bad[:3])))
PY
)
        [ "${r%% *}" = ok ] && pass "comm_overlap_sim_exposed_dp (${r#ok })" || fail comm_overlap_sim_exposed_dp "${r#bad }"
    fi
else fail comm_overlap_sim_build "$BUILD/simulate not built"; fi
