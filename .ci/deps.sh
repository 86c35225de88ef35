#!/usr/bin/env bash
# Installs the Debian packages boost-c needs when any is missing (as root), or prints
# the exact apt-get line (not root). PyTorch (python3-torch) is the independent reference
# of tests/t_torch_reference.sh and of `make bench`; `--bench` is kept as an alias.
# `--fuzz` (make fuzz only, never make test): clang and its libFuzzer/sanitizer runtimes.
# `--bundle` (make gpu-bundle and make bundle-check only): patchelf (the bundle's run paths) and
# debootstrap (the bare Debian 12 root the bundle is checked in).
# libdnnl-dev (oneDNN): the bf16 CPU back end's GEMMs in bf16 arithmetic (AMX / AVX512-BF16).
set -euo pipefail
pkgs=(build-essential pkg-config libopenmpi-dev openmpi-bin libopenblas-dev libfyaml-dev
      libhdf5-dev hdf5-tools libsqlite3-dev sqlite3 bible-kjv
      python3-numpy python3-h5py python3-matplotlib python3-torch
      libdnnl-dev)
if [ "${1:-}" = --fuzz ]; then pkgs+=(clang libclang-rt-14-dev); fi
if [ "${1:-}" = --bundle ]; then pkgs+=(patchelf debootstrap); fi
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ]; then
    echo "installing missing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
    echo "error: missing Debian packages. Run as root:" >&2
    echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
    exit 2
fi
