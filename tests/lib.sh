# tests/lib.sh — helpers for shell tests (tests/t_*.sh). Each check prints
# "PASS name", "FAIL name: reason" or, when it cannot run on this machine (no GPU, say),
# "SKIP name: reason"; tests/run.sh counts them (a skip is never a pass).
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
TMP=$(mktemp -d)
trap '[ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"' EXIT
source "$ROOT/tests/proc.sh"   # proc_pids, proc_signal: pgrep/pkill without procps

# Every sqlite3 query of the tests waits for a lock instead of failing at once: run databases
# are in WAL mode, and two readers opening one right after its writer closed (join <(...)
# <(...)) can meet the first one's WAL recovery and get "database is locked" with the CLI's
# default busy timeout of 0.
sqlite3() { command sqlite3 -cmd ".timeout 10000" "$@"; }

# duo_manifest FILE DB: a two-variant experiment "duo" (a: one process; b: tp 2), a tiny CoLA
# model on the KJV text, 6 steps, recording into DB, checkpoints and data under $TMP.
duo_manifest() {
    cat >"$1" <<YAML
manifest_version: 1
name: duo
version: 1
description: a single-process and a tp=2 variant
model: {linear: cola, vocab_size: 256, n_layers: 2, d_model: 32, n_heads: 4, d_ff: 48, seq_len: 16, rank_attn: 8, rank_mlp: 8}
data: {dataset: kjv, cache_dir: $TMP/cache}
train: {batch_size: 4, steps: 6, lr: 3e-3, warmup_steps: 1, log_every: 3, val_every: 3, threads: 1}
run: {db: $2, checkpoint_dir: $TMP/ckpt, checkpoint_every: 3}
variants:
  a: {train.lr: 3e-3}
  b: {parallel.tp: 2}
YAML
}

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
skip() { echo "SKIP $1: $2"; }

# expect_error NAME "substring of stderr" EXPECTED_EXIT command...
# The command must exit with EXPECTED_EXIT and print the substring on stderr.
expect_error() {
    local name=$1 want=$2 code=$3; shift 3
    local out rc
    out=$("$@" 2>&1 >/dev/null); rc=$?
    if [ "$rc" -ne "$code" ]; then fail "$name" "exit $rc, expected $code; stderr: $(echo "$out" | head -3)"; return; fi
    if ! grep -qF -- "$want" <<<"$out"; then fail "$name" "stderr lacks '$want'; got: $(echo "$out" | head -3)"; return; fi
    pass "$name"
}

# expect_ok NAME command...  — exit 0
expect_ok() {
    local name=$1; shift
    local out
    if out=$("$@" 2>&1); then pass "$name"; else fail "$name" "exit $?: $(echo "$out" | tail -3)"; fi
}

# mpi_grids LABEL BIN N_TESTS GRID...: run BIN under mpirun once per grid "AxBxC" (its
# factors are BIN's arguments, their product the number of ranks); rank 0 of BIN prints a
# PASS/FAIL line per test (mpitestlib.h). One line per grid here: PASS when BIN exits 0
# with N_TESTS passes and no failure, else FAIL with the failing tests and ranks' details.
mpi_grids() {
    local label=$1 bin=$2 n_tests=$3; shift 3
    local grid np rc npass nfail
    for grid in "$@"; do
        np=1; for f in ${grid//x/ }; do np=$((np * f)); done
        # timeout: a deadlocked exchange must fail the test, not hang the suite
        timeout 120 mpirun --oversubscribe --allow-run-as-root -np "$np" "$bin" ${grid//x/ } >"$TMP/out" 2>"$TMP/err"; rc=$?
        npass=$(grep -c '^PASS ' "$TMP/out"); nfail=$(grep -c '^FAIL ' "$TMP/out")
        if [ "$rc" -eq 0 ] && [ "$nfail" -eq 0 ] && [ "$npass" -eq "$n_tests" ]; then
            pass "${label}_grid_${grid} ($npass tests on $np ranks)"
        else
            fail "${label}_grid_${grid}" "exit $rc, $npass/$n_tests passed, $nfail failed"
            grep '^FAIL ' "$TMP/out" | sed 's/^FAIL /  also: /'
            grep -E '^  rank |fatal|error|Segmentation' "$TMP/err" | head -8 | sed 's/^ */  also: /'
        fi
        # MPI_GRIDS_VERBOSE=1: the binary's own stderr (e.g. test_btp's per-case collective counts)
        if [ -n "${MPI_GRIDS_VERBOSE:-}" ]; then cat "$TMP/err" >&2; fi
    done
}
