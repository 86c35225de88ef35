#!/usr/bin/env bash
# t_comm_device.sh — the communication interface with buffers on a device back end
# (build/test_comm_device: MPI staging through host scratch, bf16 reductions, device-timing
# hooks, the NCCL switch's refusal) under mpirun on the grids 2×1×1 3×1×1 2×1×2 1×2×2
# (tp×pp×dp). The one-rank run is tests/run.sh's own (build/test_*).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
BIN=$BUILD/test_comm_device
if [ ! -x "$BIN" ]; then fail comm_device_build "$BIN not built (make $BIN)"; exit 0; fi
if ! command -v mpirun >/dev/null; then fail comm_device_mpirun "mpirun not found (Debian: openmpi-bin)"; exit 0; fi
export OMP_NUM_THREADS=1
mpi_grids comm_device "$BIN" "$(grep -c '^    RUN_ALL(' "$ROOT/tests/test_comm_device.c")" 2x1x1 3x1x1 2x1x2 1x2x2
