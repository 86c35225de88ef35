#!/usr/bin/env bash
# OpenBLAS's kernels match the CPU (src/core/env.h): a DYNAMIC_ARCH OpenBLAS older than the CPU
# loads its generic SSE3 kernels (Debian 12's 0.3.21 on an Emerald Rapids Xeon: 5x slower
# GEMMs), and the engine's binaries then set OPENBLAS_CORETYPE for themselves; the user's own
# OPENBLAS_CORETYPE is left alone; a run records which kernels it ran on.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
# The ISA rank of an OpenBLAS core name, written out here independently of src/core/env.c.
rank() {
    case "$1" in
        Cooperlake|SapphireRapids) echo 4 ;; SkylakeX) echo 3 ;; Haswell|Zen) echo 2 ;;
        Sandybridge|Bulldozer|Piledriver|Steamroller|Excavator) echo 1 ;;
        Katmai|Coppermine|Northwood|Prescott|Banias|Atom|Core2|Penryn|Dunnington|Nehalem|Opteron|Barcelona|Bobcat) echo 0 ;;
        *) echo -1 ;;
    esac
}
flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
has() { [[ "$flags" == *" $1 "* ]]; }
best=0
has avx && best=1
has avx2 && has fma && best=2
has avx512f && has avx512bw && has avx512vl && has avx512dq && best=3
[ $best = 3 ] && has avx512_bf16 && best=4
core_of_rank=(Prescott Sandybridge Haswell SkylakeX Cooperlake)   # the best kernel set of each rank
peak() { env -u OPENBLAS_CORETYPE -u BOOST_BLAS_CORE_CHOSEN "$@" "$BUILD/bench" --peak-only --threads 1; }
field() { sed -n "s/.*\"$1\": \"\{0,1\}\([A-Za-z0-9]*\).*/\1/p"; }
if [ "$(uname -m)" != x86_64 ]; then
    skip engine_blas_kernels_not_below_cpu "not x86-64 ($(uname -m)): OpenBLAS's choice is kept"
else
    out=$(peak) || fail engine_blas_kernels_not_below_cpu "build/bench --peak-only failed: $out"
    core=$(field blas_core <<<"$out")
    r=$(rank "$core")
    if [ "$r" = -1 ]; then pass "engine_blas_kernels_not_below_cpu (core $core: newer than the table, OpenBLAS's own choice)"
    elif [ "$r" -ge "$best" ]; then pass "engine_blas_kernels_not_below_cpu (core $core, rank $r, CPU rank $best; forced $(field blas_core_forced <<<"$out"))"
    else fail engine_blas_kernels_not_below_cpu "OpenBLAS runs $core (ISA rank $r) on a CPU of rank $best: $out"; fi
    # an empty OPENBLAS_CORETYPE is no choice (OpenBLAS ignores it too): the same kernels
    core=$(field blas_core <<<"$(peak OPENBLAS_CORETYPE=)")
    r=$(rank "$core")
    if [ "$r" = -1 ] || [ "$r" -ge "$best" ]; then pass "empty_coretype_is_no_choice (core $core)"
    else fail empty_coretype_is_no_choice "OPENBLAS_CORETYPE= gave $core (ISA rank $r) on a CPU of rank $best"; fi
    if [ $best -ge 2 ]; then
        out=$(peak OPENBLAS_CORETYPE=Haswell)
        if [ "$(field blas_core <<<"$out")" = Haswell ] && [ "$(field blas_core_forced <<<"$out")" = false ]; then
            pass user_coretype_left_alone
        else fail user_coretype_left_alone "OPENBLAS_CORETYPE=Haswell gave: $out"; fi
    else skip user_coretype_left_alone "the CPU has no AVX2: Haswell's kernels cannot run here"; fi
    # A user's OPENBLAS_CORETYPE below the CPU's best is kept, and said: one name per rank up to
    # the CPU's (kernels above it cannot run here), and a name the table does not know.
    bad=""; n=0
    for name in Prescott Sandybridge Haswell SkylakeX Cooperlake NoSuchCore; do
        r=$(rank "$name"); [ "$r" -gt "$best" ] && continue
        out=$(peak OPENBLAS_CORETYPE=$name); n=$((n + 1))
        want=false; [ "$r" -ge 0 ] && [ "$r" -lt "$best" ] && want=true
        got=$(field blas_core_user_below_best <<<"$out"); b=$(field blas_core_best <<<"$out")
        [ "$got" = "$want" ] || bad="$bad $name: below_best $got, expected $want;"
        [ "$best" -ge 1 ] && [ "$(rank "$b")" != "$best" ] && bad="$bad $name: blas_core_best '$b' is not of rank $best;"
    done
    if [ -z "$bad" ]; then pass "user_coretype_below_best_said ($n names, CPU rank $best)"
    else fail user_coretype_below_best_said "$bad"; fi
    # ... and make bench's pairing unsets it for both sides (analysis/bench_paired.py)
    if [ $best -ge 2 ]; then
        out=$(OPENBLAS_CORETYPE=Sandybridge python3 -c "
import os, sys; sys.path.insert(0, 'analysis'); import bench_paired as b
env = dict(os.environ); d = b.first_peak(env, 1, '$BUILD/bench', False)[1]
env2 = dict(os.environ, OPENBLAS_CORETYPE='${core_of_rank[$best]}')
env3 = dict(os.environ)
print('dropped', d, 'OPENBLAS_CORETYPE' in env, b.first_peak(env2, 1, '$BUILD/bench', False)[1],
      b.first_peak(env3, 1, '$BUILD/bench', True)[1], env3['OPENBLAS_CORETYPE'])" 2>&1)
        if [[ "$out" == *"dropped Sandybridge False None None Sandybridge" ]]; then pass bench_pairing_drops_weak_coretype
        else fail bench_pairing_drops_weak_coretype "$out"; fi
    else skip bench_pairing_drops_weak_coretype "the CPU has no AVX2: nothing is below its best"; fi
fi
# ... and a run's record names the kernels (runs.library_versions' openblas entry)
cat > "$TMP/blascore.yaml" <<YAML
manifest_version: 1
name: blascore
version: 1
model: {linear: cola, vocab_size: 256, n_layers: 1, d_model: 32, n_heads: 2, d_ff: 64, seq_len: 16}
data: {dataset: synthetic}
train: {batch_size: 2, steps: 2, warmup_steps: 1, log_every: 1}
run: {db: $TMP/runs.db, checkpoint_dir: $TMP/ckpt}
YAML
if env -u OPENBLAS_CORETYPE -u BOOST_BLAS_CORE_CHOSEN "$BUILD/train" "$TMP/blascore.yaml" >"$TMP/t.log" 2>&1; then
    lib=$(sqlite3 "$TMP/runs.db" "SELECT json_extract(library_versions, '\$.openblas') FROM runs ORDER BY id DESC LIMIT 1")
    if [[ "$lib" == *" core "* ]]; then pass "run_records_blas_core ($lib)"
    else fail run_records_blas_core "runs.library_versions' openblas: '$lib'"; fi
else fail run_records_blas_core "train failed: $(tail -3 "$TMP/t.log")"; fi
if [ "$(uname -m)" = x86_64 ] && [ $best -ge 2 ]; then
    if OPENBLAS_CORETYPE=Sandybridge "$BUILD/train" "$TMP/blascore.yaml" --set train.seed=5 >"$TMP/t.log" 2>&1; then
        lib=$(sqlite3 "$TMP/runs.db" "SELECT json_extract(library_versions, '\$.openblas') FROM runs ORDER BY id DESC LIMIT 1")
        if [[ "$lib" == *"core Sandybridge (OPENBLAS_CORETYPE set by the user, below this CPU's best: "* ]]; then
            pass "run_records_user_core_below_best ($lib)"
        else fail run_records_user_core_below_best "runs.library_versions' openblas: '$lib'"; fi
    else fail run_records_user_core_below_best "train failed: $(tail -3 "$TMP/t.log")"; fi
else skip run_records_user_core_below_best "not x86-64 with AVX2: nothing is below the CPU's best"; fi

# OpenMP's waiting (src/core/env.h): passive where OpenBLAS's pthreads run the GEMMs (a
# spinning OpenMP thread takes their core), a short spin (GOMP_SPINCOUNT) where oneDNN runs
# them on OpenMP's own threads; either variable set by the user leaves both alone.
waiting() { env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT "$@" "$BUILD/bench" --peak-only --threads 1; }
out=$(waiting BOOST_CPU_GEMM=openblas)
if [ "$(field omp_wait_policy <<<"$out")" = passive ] && [ -z "$(field gomp_spincount <<<"$out")" ]; then
    pass openmp_passive_beside_openblas
else fail openmp_passive_beside_openblas "BOOST_CPU_GEMM=openblas: $out"; fi
out=$(waiting BOOST_CPU_GEMM=onednn)
if [ -z "$(field omp_wait_policy <<<"$out")" ] && [ "$(field gomp_spincount <<<"$out")" = 10000 ]; then
    pass openmp_short_spin_beside_onednn
else fail openmp_short_spin_beside_onednn "BOOST_CPU_GEMM=onednn: $out"; fi
out=$(waiting BOOST_CPU_GEMM=onednn OMP_WAIT_POLICY=active)
o2=$(waiting BOOST_CPU_GEMM=openblas GOMP_SPINCOUNT=500)
if [ "$(field omp_wait_policy <<<"$out")" = active ] && [ -z "$(field gomp_spincount <<<"$out")" ] &&
   [ -z "$(field omp_wait_policy <<<"$o2")" ] && [ "$(field gomp_spincount <<<"$o2")" = 500 ]; then
    pass user_openmp_waiting_left_alone
else fail user_openmp_waiting_left_alone "OMP_WAIT_POLICY=active: $out; GOMP_SPINCOUNT=500: $o2"; fi
# a bad BOOST_CPU_GEMM is still the first GEMM's clear error, not the set-up's
out=$(waiting BOOST_CPU_GEMM=fastest 2>&1); rc=$?
if [ $rc = 2 ] && [[ "$out" == *"BOOST_CPU_GEMM is 'fastest'"* ]]; then pass bad_cpu_gemm_after_setup
else fail bad_cpu_gemm_after_setup "rc $rc: $out"; fi
if [ -f "$TMP/runs.db" ]; then
    w=$(sqlite3 "$TMP/runs.db" "SELECT json_extract(library_versions, '\$.openmp') FROM runs ORDER BY id DESC LIMIT 1")
    if [[ "$w" == "OMP_WAIT_POLICY="*" GOMP_SPINCOUNT="* ]]; then pass "run_records_openmp_waiting ($w)"
    else fail run_records_openmp_waiting "runs.library_versions' openmp: '$w'"; fi
else fail run_records_openmp_waiting "no runs.db from the run above"; fi

# The per-shape choice (src/backend/cpu/sgemm.h) in a run: auto measures the run's shapes into
# the host's table (BOOST_CPU_GEMM_CACHE) and the run's record names the table; a second run
# measures nothing; table:PATH forces the same table and its record says so.
mkdir -p "$TMP/two"
sed -e "s|runs.db|runs2.db|" -e "s|ckpt}|ckpt2}|" "$TMP/blascore.yaml" > "$TMP/two/blascore.yaml"
gemm_of() { sqlite3 "$TMP/runs2.db" "SELECT json_extract(library_versions, '\$.gemm') FROM runs ORDER BY id DESC LIMIT 1"; }
tab="$TMP/choices.tsv"
if BOOST_CPU_GEMM_CACHE="$tab" "$BUILD/train" "$TMP/two/blascore.yaml" >"$TMP/t2.log" 2>&1; then
    n1=$(grep -vc '^#' "$tab" 2>/dev/null); g=$(gemm_of)
    if [ "${n1:-0}" -ge 4 ] && [[ "$g" == *"per shape"*"$tab"* ]]; then pass "run_measures_into_host_table ($n1 shapes)"
    else fail run_measures_into_host_table "$n1 lines in $tab; gemm: '$g'"; fi
    BOOST_CPU_GEMM_CACHE="$tab" "$BUILD/train" "$TMP/two/blascore.yaml" --set train.seed=2 >"$TMP/t3.log" 2>&1 || true
    BOOST_CPU_GEMM="table:$tab" "$BUILD/train" "$TMP/two/blascore.yaml" --set train.seed=3 >"$TMP/t4.log" 2>&1; rc=$?
    n2=$(grep -vc '^#' "$tab"); g=$(gemm_of)
    if [ "$n2" = "$n1" ] && [ $rc = 0 ] && [[ "$g" == "per shape from $tab"* ]]; then pass "table_read_back_and_forced"
    else fail table_read_back_and_forced "lines $n1 -> $n2, forced run rc $rc, gemm: '$g'"; fi
else fail run_measures_into_host_table "train failed: $(tail -3 "$TMP/t2.log")"; fi
