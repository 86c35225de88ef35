#!/usr/bin/env bash
# t_lax_reference.sh — the LaX (latent crossing) reference, before the C engine has it:
# analysis/lax_selftest.py checks, in float64, the hand-written crossing ops (analysis/lax_ops.py,
# the equations of docs/lax.md) against autograd of analysis/torch_model.py, the whole LaX
# model against finite differences, docs/lax.md's parameter and FLOP formulas against the
# reference model (numel) and the torch profiler (matmul FLOPs), the worked numbers table of
# docs/lax.md, and analysis/verify_dump.py on LaX step dumps. A few seconds.
# Needs /usr/bin/python3 with python3-torch (and python3-h5py for the dump checks).
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
cd "$ROOT"
if ! $PY -c 'import torch' 2>/dev/null; then
    echo "SKIP lax reference: torch not installed (apt-get install python3-torch python3-h5py)"
    exit 0
fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
# lax_selftest.py prints one PASS/FAIL line per check and exits 1 on any failure; a crash
# (exit != 0 without a FAIL line) is reported by tests/run.sh.
$PY analysis/lax_selftest.py
