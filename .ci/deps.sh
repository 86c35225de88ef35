#!/usr/bin/env bash
# Installs the Debian packages boost-c needs when any is missing (as root), or prints
# the exact apt-get line (not root). PyTorch (python3-torch) is the independent reference
# of tests/t_torch_reference.sh and of `make bench`; `--bench` is kept as an alias.
# `--fuzz` (make fuzz only, never make test): clang and its libFuzzer/sanitizer runtimes.
# `--slurm` (CI; tests/t_slurm.sh SKIPs without them): slurm-wlm and munge, for the one-node Slurm
# cluster the test starts by itself. Not in the default list: Debian enables slurmctld, slurmd and
# munge as services at boot when they are installed, which no researcher's machine should get
# from `make`.
# `--bundle` (make gpu-bundle and make bundle-check only): patchelf (the bundle's run paths) and
# debootstrap (the bare Debian 12 root the bundle is checked in).
# libdnnl-dev (oneDNN): the bf16 CPU back end's GEMMs in bf16 arithmetic (AMX / AVX512-BF16).
# `--export` (CI; tests/t_export.sh skips without it): Hugging Face transformers from PyPI,
# which checks build/export's files, in a virtual environment over Debian's python3 and its
# packages (torch, numpy): build/venv-export. The version is pinned to one that runs on
# Debian 12's PyTorch 1.13 (later ones need PyTorch 2).
# `--mkl` (optional, never make or CI): Intel MKL from PyPI's `mkl` wheel (680 MB, without its
# Intel OpenMP and TBB dependencies: the engine runs MKL on libgomp) into build/venv-mkl, where
# the CPU back end loads libmkl_rt from as one more fp32 GEMM library to measure per shape
# (src/backend/cpu/gemm_libs.h); tests/test_sgemm.c tests it when present.
set -euo pipefail
TRANSFORMERS=transformers==4.46.3
MKL=mkl==2026.2.0
pkgs=(build-essential pkg-config libopenmpi-dev openmpi-bin libopenblas-dev libfyaml-dev
      libhdf5-dev hdf5-tools libsqlite3-dev sqlite3 bible-kjv
      python3-numpy python3-h5py python3-matplotlib python3-torch
      libdnnl-dev)
if [ "${1:-}" = --fuzz ]; then pkgs+=(clang libclang-rt-14-dev); fi
if [ "${1:-}" = --export ]; then pkgs+=(python3-venv); fi
export_venv() {
    local venv
    venv="$(cd "$(dirname "$0")/.." && pwd)/build/venv-export"
    "$venv/bin/python" -c "import transformers" 2>/dev/null && return 0
    echo "installing $TRANSFORMERS from PyPI into $venv (over Debian's python3, torch and numpy)"
    /usr/bin/python3 -m venv --system-site-packages "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "$TRANSFORMERS"
}
mkl_venv() {
    local venv
    venv="$(cd "$(dirname "$0")/.." && pwd)/build/venv-mkl"
    ls "$venv"/lib/libmkl_rt.so.* >/dev/null 2>&1 && return 0
    echo "installing $MKL from PyPI into $venv (no dependencies: the engine uses MKL's GNU OpenMP layer)"
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check --no-deps "$MKL"
}
if [ "${1:-}" = --mkl ]; then mkl_venv; exit 0; fi
if [ "${1:-}" = --slurm ]; then pkgs+=(slurm-wlm munge); fi
if [ "${1:-}" = --bundle ]; then pkgs+=(patchelf debootstrap); fi
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    if [ "${1:-}" = --export ]; then export_venv; fi
    exit 0
fi
if [ "$(id -u)" = 0 ]; then
    echo "installing missing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    if [ "${1:-}" = --export ]; then export_venv; fi
else
    echo "error: missing Debian packages. Run as root:" >&2
    echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
    exit 2
fi
