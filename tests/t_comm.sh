#!/usr/bin/env bash
# t_comm.sh — the comm/grid/schedule tests (build/test_comm) under mpirun on the grids
# 1×1×1 2×1×1 4×1×1 2×2×1 2×1×2 1×2×2 (tp×pp×dp), plus a world size that does not match
# the grid (exit 2 and a clear message). Rank 0 prints one PASS/FAIL line per test (the AND
# over all ranks); this script prints one line per grid. BUILD=<dir> in the environment
# picks another build folder (lib.sh).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
BIN=$BUILD/test_comm
if [ ! -x "$BIN" ]; then fail comm_build "$BIN not built (make $BIN)"; exit 0; fi
if ! command -v mpirun >/dev/null; then fail comm_mpirun "mpirun not found (Debian: openmpi-bin)"; exit 0; fi

# --oversubscribe: 4 ranks on a 2-core machine; --allow-run-as-root: containers run as root.
MPIRUN=(mpirun --oversubscribe --allow-run-as-root)
mpi_grids comm "$BIN" "$(grep -c '^    RUN_ALL(' "$ROOT/tests/test_comm.c")" 1x1x1 2x1x1 4x1x1 2x2x1 2x1x2 1x2x2

# tp·pp·dp = 4 on 3 ranks: exit 2 (mpirun passes the ranks' code on), the message once.
expect_error comm_world_size_mismatch "the process grid tp×pp×dp = 2×1×2 = 4 needs 4 ranks, but mpirun started 3" 2 \
    timeout 60 "${MPIRUN[@]}" -np 3 "$BIN" 2 1 2
timeout 60 "${MPIRUN[@]}" -np 3 "$BIN" 2 1 2 >/dev/null 2>"$TMP/err"
n=$(grep -c '^error: ' "$TMP/err")
if [ "$n" -eq 1 ] && grep -q '^hint: launch tp·pp·dp ranks: mpirun -np 4' "$TMP/err"; then pass comm_world_size_message_once
else fail comm_world_size_message_once "$n error lines; stderr: $(head -3 "$TMP/err")"; fi
