#!/usr/bin/env bash
# t_btp.sh — bottleneck-aware TP and the BOOST techniques (build/test_btp, docs/boost.md)
# under mpirun on the grids 1×1 2×1 4×1 2×2 (tp×pp): loss and every gradient equal the
# single-process model for cola, svd and LaX (both bases) and all 16 switch combinations,
# plus full_recompute, LaX's gate/norm forms, GQA, the SiLU gate and tied embeddings; exact
# per-layer collectives (LaX: Vanilla-TP's all-gathers, none more under BTP, none in the
# low-rank recompute) and pipeline message sizes; the activation-memory formulas. Rank 0 prints one PASS/FAIL line per test (the AND over
# all ranks); this script prints one line per grid. MPI_GRIDS_VERBOSE=1 also prints each case's
# layer-0 all-reduce calls/elements and the worst tolerance ratio (on stderr).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
BIN=$BUILD/test_btp
if [ ! -x "$BIN" ]; then fail btp_build "$BIN not built (make $BIN)"; exit 0; fi
if ! command -v mpirun >/dev/null; then fail btp_mpirun "mpirun not found (Debian: openmpi-bin)"; exit 0; fi
export OMP_NUM_THREADS=1   # 4 ranks on 2 cores: one thread each
mpi_grids btp "$BIN" "$(grep -c '^    RUN_ALL(' "$ROOT/tests/test_btp.c")" 1x1 2x1 4x1 2x2
