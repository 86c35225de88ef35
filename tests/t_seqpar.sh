#!/usr/bin/env bash
# t_seqpar.sh — sequence parallelism (parallel.sequence_parallel, docs/parallelism.md §8) and
# selective recomputation (boost.selective_recompute, docs/boost.md §4) end to end, where the
# model-level parity and exact per-layer collectives of tests/test_btp.c and the step-dump parity
# of tests/t_parallel.sh leave off:
#   - every refusal, with its message and exit 2, and a hint that is itself accepted: generated
#     over (tp, seq_len) for the divisibility rule, and each combination that does nothing;
#   - the collectives a real training run records (per layer, the embedding and head, the norm
#     gains' all-reduce once per step, the pipeline message of the sharded residual);
#   - resume across a change of sequence parallelism: the checkpoint holds full tensors, so the
#     state is restored bit for bit either way, and the next step matches the unchanged run
#     within the layouts' tolerance;
#   - the memory report against the measured peak: the dry report's activations equal the
#     back end's allocations exactly, and the peak resident set falls by the report's saving
#     within one [N, d] message (MPI's temporary of a collective, which the report does not
#     count) + 1 MiB (allocator and page slack), stated before the first measurement. The peak
#     of one run moves by up to ~2 MiB from run to run (MPI's and the allocator's pages, outside
#     the engine's buffers), so each layout runs three times, interleaved, and the medians are
#     compared.
source "$(dirname "$0")/lib.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMP_NUM_THREADS=1
INFO=$BUILD/info TRAIN=$BUILD/train
PY=/usr/bin/python3
CMP="$BUILD/h5compare"
for b in "$INFO" "$TRAIN"; do [ -x "$b" ] || { fail seqpar_build "$b not built (run make)"; exit 0; }; done
command -v mpirun >/dev/null || { fail seqpar_mpirun "mpirun not found (Debian: openmpi-bin)"; exit 0; }

cfg() {  # NAME LINEAR -> $TMP/NAME.yaml, the tiny model of t_parallel.sh
    cat > "$TMP/$1.yaml" <<YAML
model: {linear: $2, vocab_size: 256, n_layers: 2, d_model: 32, n_heads: 4, n_kv_heads: 4, d_ff: 48, seq_len: 16}
data: {dataset: kjv, cache_dir: $TMP/cache}
train: {batch_size: 4, grad_accum: 2, steps: 1, lr: 1e-2, warmup_steps: 0, threads: 1, val_batches: 1}
YAML
}
cfg dense dense
cfg cola cola

# ---- refusals ------------------------------------------------------------------------------
# The divisibility rule, generated: every (tp, seq_len) with tp 2..4 and seq_len tp-1 .. 3tp+1
# is refused exactly when tp does not divide seq_len, and then the value the hint names is
# accepted.
bad=0; n=0
for tp in 2 3 4; do
    for ((T = tp - 1; T <= 3 * tp + 1; T++)); do
        n=$((n + 1))
        out=$("$INFO" --config "$TMP/dense.yaml" --set parallel.tp=$tp --set model.seq_len=$T \
              --set parallel.sequence_parallel=true 2>&1 >/dev/null); rc=$?
        if [ $((T % tp)) -eq 0 ]; then
            [ $rc -eq 0 ] || { bad=$((bad + 1)); echo "  tp $tp seq_len $T refused: $out" >&2; }
            continue
        fi
        want="parallel.sequence_parallel needs model.seq_len = $T divisible by parallel.tp = $tp"
        hint=$(sed -n 's/.*model.seq_len to a multiple of [0-9]* (e.g. \([0-9]*\)).*/\1/p' <<<"$out")
        if [ $rc -ne 2 ] || ! grep -qF "$want" <<<"$out" || [ -z "$hint" ] ||
           ! "$INFO" --config "$TMP/dense.yaml" --set parallel.tp=$tp --set model.seq_len=$hint \
               --set parallel.sequence_parallel=true >/dev/null 2>&1; then
            bad=$((bad + 1)); echo "  tp $tp seq_len $T: exit $rc, hint '$hint': $out" >&2
        fi
    done
done
if [ $bad -eq 0 ]; then pass "seq_len_divisible_by_tp_generated ($n cases)"
else fail seq_len_divisible_by_tp_generated "$bad of $n cases wrong (details on stderr)"; fi

# Each combination that would do nothing or cannot be cut: message, exit 2, and the hint's
# first suggestion accepted.
refuse() {  # NAME "message part" "the hint's fix (--set list)" sets...
    local name=$1 want=$2 fix=$3; shift 3
    local sets=() fsets=()
    for s in "$@"; do sets+=(--set "$s"); done
    expect_error "$name" "$want" 2 "$INFO" --config "$TMP/cola.yaml" "${sets[@]}"
    for s in $fix; do fsets+=(--set "$s"); done
    expect_ok "${name}_hint_accepted" "$INFO" --config "$TMP/cola.yaml" "${sets[@]}" "${fsets[@]}"
}
refuse refuse_selective_full "boost.selective_recompute replays the attention core only; boost.full_recompute already recomputes it" \
    "boost.full_recompute=false" boost.selective_recompute=true boost.full_recompute=true
refuse refuse_selective_lowrank "boost.selective_recompute replays the attention core only; boost.lowrank_ckpt already recomputes it" \
    "boost.lowrank_ckpt=false" boost.selective_recompute=true boost.btp=true boost.lowrank_ckpt=true
cfg lax lax
expect_error refuse_sp_btp_lax "parallel.sequence_parallel with boost.btp is not implemented for model.linear lax" 2 \
    "$INFO" --config "$TMP/lax.yaml" --set parallel.tp=2 --set parallel.sequence_parallel=true --set boost.btp=true
expect_ok refuse_sp_btp_lax_hint_accepted "$INFO" --config "$TMP/lax.yaml" --set parallel.tp=2 --set boost.btp=true \
    --set parallel.sequence_parallel=false


# ---- the collectives of a training run (rank 0, step 1: K = 2 micro-batches) ---------------
K=2; BS=64; D=32; FF=48; L=2
run_db() {  # NAME NP CONFIG sets... -> $TMP/NAME.db
    local name=$1 np=$2 c=$3; shift 3
    timeout 120 mpirun -np $np "$TRAIN" "$TMP/$c.yaml" --set parallel.sequence_parallel=true "$@" \
        --set run.db="$TMP/$name.db" --set run.checkpoint_dir="$TMP/ck-$name" >"$TMP/$name.log" 2>&1
}
cell() {  # DB KIND PHASE LAYER -> "calls elements" (0 0 when absent)
    sqlite3 "$1" "SELECT ifnull(sum(calls),0) || ' ' || ifnull(sum(elements),0) FROM comm WHERE step=1 AND grp='tp'
                  AND kind='$2' AND phase='$3' AND layer=$4"
}
check_cells() {  # NAME DB then KIND PHASE LAYER "calls elements" ...
    local name=$1 db=$2 bad=""; shift 2
    while [ $# -ge 4 ]; do
        local got; got=$(cell "$db" "$1" "$2" "$3")
        [ "$got" = "$4" ] || bad="$bad $1/$2/layer $3: '$got' not '$4';"
        shift 4
    done
    if [ -z "$bad" ]; then pass "$name"; else fail "$name" "$bad"; fi
}
if run_db sp_dense 2 dense --set parallel.tp=2; then
    # per layer: forward 2 all-gathers + 2 reduce-scatters of b·s·d, no all-reduce; backward 4 + 2
    # layer -1: embedding reduce-scatter (forward) and all-gather (backward); the head's
    # all-gather forward and again backward, its input gradient reduce-scattered; 3 loss
    # all-reduces of b·s; once per step in the optimizer phase the norm gains' gradients, (2L + 1)·d,
    # beside the global gradient norm's squared sum (1 element, with or without sequence parallelism)
    check_cells fullrank_sp_collectives "$TMP/sp_dense.db" \
        all_gather forward 1 "$((2*K)) $((2*K*BS*D))"  reduce_scatter forward 1 "$((2*K)) $((2*K*BS*D))" \
        all_gather backward 1 "$((4*K)) $((4*K*BS*D))" reduce_scatter backward 1 "$((2*K)) $((2*K*BS*D))" \
        all_reduce forward 1 "0 0" all_reduce backward 1 "0 0" \
        reduce_scatter forward -1 "$K $((K*BS*D))" all_gather forward -1 "$K $((K*BS*D))" \
        all_gather backward -1 "$((2*K)) $((2*K*BS*D))" reduce_scatter backward -1 "$K $((K*BS*D))" \
        all_reduce forward -1 "$((3*K)) $((3*K*BS))" all_reduce backward -1 "0 0" \
        all_reduce optimizer -1 "2 $(((2*L+1)*D + 1))"
else fail fullrank_sp_run "$(tail -3 "$TMP/sp_dense.log")"; fi
if run_db sp_cola 2 cola --set parallel.tp=2 --set boost.selective_recompute=true; then
    # Vanilla-TP keeps its 5 inner all-reduces forward (q, k, v, gate, up) and 2 backward (the
    # A_down and A_o input gradients); the selective replay adds no collective
    check_cells vanilla_sp_selective_collectives "$TMP/sp_cola.db" \
        all_reduce forward 1 "$((5*K)) $((K*BS*(3*D+2*FF)))" all_reduce backward 1 "$((2*K)) $((K*BS*(D+FF)))" \
        all_gather forward 1 "$((2*K)) $((2*K*BS*D))" reduce_scatter backward 1 "$((2*K)) $((2*K*BS*D))" \
        all_reduce recompute 1 "0 0" all_gather recompute 1 "0 0"
else fail vanilla_sp_run "$(tail -3 "$TMP/sp_cola.log")"; fi
if run_db sp_pipe 4 cola --set parallel.tp=2 --set parallel.pp=2; then
    # stage 0 sends its tokens of the residual: b·s·d/tp per micro-batch, and receives as much
    got=$(sqlite3 "$TMP/sp_pipe.db" "SELECT group_concat(kind || ' ' || elements, ', ') FROM
          (SELECT kind, sum(elements) AS elements FROM comm WHERE step=1 AND phase='pipeline' GROUP BY kind ORDER BY kind)")
    if [ "$got" = "recv $((K*BS*D/2)), send $((K*BS*D/2))" ]; then pass pipeline_message_is_the_token_shard
    else fail pipeline_message_is_the_token_shard "stage 0 pipeline: '$got', expected recv/send $((K*BS*D/2)) each"; fi
else fail sp_pipeline_run "$(tail -3 "$TMP/sp_pipe.log")"; fi

# ---- resume across a change of sequence parallelism ------------------------------------------
# A: tp 2 with (or without) sequence parallelism, a checkpoint after step 1; B: A resumed for
# step 2 with the switch flipped. B's step-2 dump holds the weights it loaded: bit for bit A's
# checkpoint. Its gradients equal those of C, A's layout run straight to step 2 (dump), within
# t_parallel.sh's tolerance (the two layouts sum the same terms in another order).
resume_flip() {  # FROM TO (true/false)
    local from=$1 to=$2 name="resume_sp_${1}_to_${2}" d="$TMP/res-$1"
    mkdir -p "$d"
    timeout 120 mpirun -np 2 "$TRAIN" "$TMP/cola.yaml" --set parallel.tp=2 --set parallel.sequence_parallel=$from \
        --set run.db="$d/a.db" --set run.checkpoint_dir="$d/ck" --set run.checkpoint_every=1 >"$d/a.log" 2>&1 &&
    timeout 120 mpirun -np 2 "$TRAIN" "$TMP/cola.yaml" --resume --set parallel.tp=2 --set parallel.sequence_parallel=$to \
        --set train.steps=2 --allow-change train.steps --set run.dump_steps=2 --set run.dump_dir="$d/dump-b" --set run.db="$d/a.db" \
        --set run.checkpoint_dir="$d/ck" >"$d/b.log" 2>&1 &&
    timeout 120 mpirun -np 2 "$TRAIN" "$TMP/cola.yaml" --set parallel.tp=2 --set parallel.sequence_parallel=$from \
        --set train.steps=2 --set run.dump_steps=2 --set run.dump_dir="$d/dump-c" --no-db \
        --set run.checkpoint_dir="$d/ck-c" >"$d/c.log" 2>&1
    if [ $? -ne 0 ]; then fail "$name" "a run failed: $(tail -2 "$d"/*.log)"; return; fi
    local saved; saved=$(ls "$d"/ck/*/step_1.h5 | head -1)
    if ! grep -q "resumed" "$d/b.log"; then fail "$name" "B did not resume: $(tail -2 "$d/b.log")"; return; fi
    if ! $CMP "$d/dump-b/step_2.h5" "$saved" --groups model --exact >"$d/exact.cmp" 2>&1; then
        fail "$name" "loaded weights differ from the checkpoint: $(tail -2 "$d/exact.cmp")"; return; fi
    local r; r=$($CMP "$d/dump-b/step_2.h5" "$d/dump-c/step_2.h5" --groups grads,loss --atol 1e-6 --rtol 1e-4 2>&1)
    if grep -q " 0 beyond" <<<"$r"; then pass "$name"; else fail "$name" "step 2 differs: $(tail -3 <<<"$r")"; fi
}
resume_flip true false
resume_flip false true

# ---- the memory report against the measured peak -----------------------------------------------
# A model whose activations dominate: dense, 4 layers, d 256, b 4, s 256, tp 2 (N·d = 1 MiB fp32)
cat > "$TMP/mem.yaml" <<YAML
model: {linear: dense, vocab_size: 256, n_layers: 4, d_model: 256, n_heads: 4, d_ff: 512, seq_len: 256}
data: {dataset: kjv, cache_dir: $TMP/cache}
train: {batch_size: 4, grad_accum: 1, steps: 1, lr: 1e-3, warmup_steps: 0, threads: 1, val_batches: 1}
parallel: {tp: 2}
YAML
report_acts() {  # sp -> the dry report's activations + working set of the run, bytes (simulate's JSON)
    (cd "$ROOT" && "$BUILD/simulate" "$TMP/mem.yaml" --hardware cpu-local --set parallel.sequence_parallel=$1 \
        --json "$TMP/mem-$1.json" >/dev/null 2>&1) &&
    $PY -c "import json,sys; m = json.load(open(sys.argv[1]))['stages'][0]['memory_bytes']; print(m['activations'] + m['working'])" \
        "$TMP/mem-$1.json"
}
mem_run() {  # sp i (OpenBLAS for every GEMM: the report counts the engine's buffers, not a GEMM
             # library's workspace, which differs by library and the per-shape choice differs by layout)
    BOOST_CPU_GEMM=openblas timeout 180 mpirun -x BOOST_CPU_GEMM -np 2 "$TRAIN" "$TMP/mem.yaml" --set parallel.sequence_parallel=$1 \
        --set run.db="$TMP/mem-$1-$2.db" --set run.checkpoint_dir="$TMP/ck-mem" >"$TMP/mem-$1-$2.log" 2>&1
}
mem() { sqlite3 "$TMP/mem-$1-$3.db" "SELECT bytes FROM memory WHERE category='$2'"; }
median3() { printf '%s\n' "$@" | sort -n | sed -n 2p; }
if mem_run false 1 && mem_run true 1 && mem_run false 2 && mem_run true 2 && mem_run false 3 && mem_run true 3; then
    a0=$(mem false activations 1) a1=$(mem true activations 1)
    p0=$(median3 $(mem false peak_rss 1) $(mem false peak_rss 2) $(mem false peak_rss 3))
    p1=$(median3 $(mem true peak_rss 1) $(mem true peak_rss 2) $(mem true peak_rss 3))
    same=1; for i in 2 3; do [ "$(mem false activations $i)" = "$a0" ] && [ "$(mem true activations $i)" = "$a1" ] || same=0; done
    r0=$(report_acts false) r1=$(report_acts true)
    saved=$((a0 - a1)) fell=$((p0 - p1)) slack=$((256 * 4 * 256 * 4 + 1048576))
    echo "  activations+working: report $r0 -> $r1 B, run $a0 -> $a1 B (saving $saved); median peak RSS $p0 -> $p1 B (fell $fell)" >&2
    if [ "$same" = 1 ] && [ "$r0" = "$a0" ] && [ "$r1" = "$a1" ] && [ "$saved" -gt 0 ] && [ $((fell - saved)) -le $slack ] &&
       [ $((saved - fell)) -le $slack ]; then
        pass memory_report_matches_measured_peak
    else fail memory_report_matches_measured_peak "report $r0 -> $r1, run $a0 -> $a1 (saving $saved; the same in every run: $same), median peak RSS fell $fell (allowed ±$slack)"; fi
else fail memory_runs "$(tail -2 "$TMP"/mem-*.log)"; fi
