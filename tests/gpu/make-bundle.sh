#!/usr/bin/env bash
# make-bundle.sh BUILD_DIR OUT_DIR — the binaries of BUILD_DIR with the shared libraries a
# bare Debian 12 + NVIDIA driver lacks, behind wrappers that set LD_LIBRARY_PATH, plus
# Open MPI's runtime (mpirun for the one-GPU tp 2 checks), the GPU check scripts and a
# text corpus: everything make gpu-check needs on a machine that has the CUDA libraries
# and PyTorch but none of HDF5, SQLite, libfyaml, OpenBLAS or Open MPI (docs/gpu.md).
# `make gpu-bundle` calls it; it writes OUT_DIR/ and OUT_DIR.tar.xz and prints the sizes.
#
# Not bundled, found on the target at run time (env.sh): glibc, libstdc++ and libgcc_s
# (in every Debian/Ubuntu base), the NVIDIA driver (libcuda), and cuBLAS/cuBLASLt/NCCL —
# these are 54 + 542 + 218 MB as CUDA 13 ships them, far over the 64 MiB a bundle may
# take, so env.sh looks for them in CUDA_HOME, /usr/local/cuda*, and PyTorch's nvidia
# wheels (site-packages/nvidia/*/lib). The small CUDA runtime (libcudart) is bundled.
# cuDNN (libcudnn*.so.9: 493 MB as cuDNN 9.19 ships, engines_precompiled alone 245 MB) is
# not bundled either: the binaries load it at run time (dlopen, cudnn_attention.cu) from the
# same folders (PyTorch's nvidia/cudnn/lib among them) and fall back to the hand-written flash
# kernel, saying so, where it is missing. compute-sanitizer is bundled when this CUDA
# installation has it (CUDA_HOME/compute-sanitizer or bin/compute-sanitizer) and it fits.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: make-bundle.sh BUILD_DIR OUT_DIR" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD_DIR=$(cd "$1" && pwd)
OUT=$2
LIMIT_MIB=64
rm -rf "$OUT" "$OUT.tar.xz"
mkdir -p "$OUT"/{bin,lib,build,tests/gpu,analysis,data}
OUT=$(cd "$OUT" && pwd)

# ---- binaries ----
# What a GPU machine runs: training and experiments, the model facts, the checks. (The CPU
# benchmarks bench and bench_comm stay home: each binary carries the CUDA kernels.)
bins=(train exp prepare info gpu_probe attention_bench test_backend_ops test_comm_device)
for b in "${bins[@]}"; do
    [ -x "$BUILD_DIR/$b" ] || { [ "$b" = test_backend_ops ] && { echo "note: $BUILD_DIR/test_backend_ops not built (no op test in this tree)"; continue; }; echo "make-bundle: $BUILD_DIR/$b missing" >&2; exit 1; }
    cp "$BUILD_DIR/$b" "$OUT/bin/$b"
    strip --strip-debug "$OUT/bin/$b"
done

# ---- shared libraries: every library the binaries (and Open MPI's runtime) load, except
# glibc's, the C++ runtime's and CUDA's (the target has those) ----
is_target_lib() {  # NAME → 0 if the target system provides it
    case "$1" in
        linux-vdso.so*|ld-linux*|libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libresolv.so*|libutil.so*|libanl.so*) return 0 ;;
        libstdc++.so*|libgcc_s.so*) return 0 ;;
        libcuda.so*|libcublas.so*|libcublasLt.so*|libnccl.so*|libnvidia-*|libnvrtc*|libnvJitLink*) return 0 ;;
    esac
    return 1
}
copy_deps() {  # FILE...: copy their non-target dependencies into lib/
    local f line name path
    for f in "$@"; do
        while read -r line; do
            name=$(awk '{print $1}' <<<"$line"); path=$(awk '$2 == "=>" {print $3}' <<<"$line")
            [ -n "$name" ] || continue
            name=$(basename "$name")
            is_target_lib "$name" && continue
            if [ -z "$path" ] || [ "$path" = "not" ]; then
                echo "make-bundle: $f needs $name, which is not found here" >&2; exit 1
            fi
            [ -e "$OUT/lib/$name" ] || cp -L "$path" "$OUT/lib/$name"
        done < <(ldd "$f" | grep -v 'statically linked')
    done
}
copy_deps "$OUT"/bin/*

# ---- Open MPI's runtime, relocated with OPAL_PREFIX (single node: mpirun forks the ranks) --
ompi_libdir=$(ompi_info --path libdir --parsable 2>/dev/null | sed -n 's/^path:libdir://p')
ompi_pkglib=$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed -n 's/^path:pkglibdir://p')
ompi_pkgdata=$(ompi_info --path pkgdatadir --parsable 2>/dev/null | sed -n 's/^path:pkgdatadir://p')
ompi_prefix=$(ompi_info --path prefix --parsable 2>/dev/null | sed -n 's/^path:prefix://p')
if [ -n "$ompi_pkglib" ] && [ -d "$ompi_pkglib" ] && command -v orterun >/dev/null; then
    rel_pkglib=${ompi_pkglib#"$ompi_prefix"/}; rel_libdir=${ompi_libdir#"$ompi_prefix"/}; rel_pkgdata=${ompi_pkgdata#"$ompi_prefix"/}
    mkdir -p "$OUT/ompi/bin" "$OUT/ompi/$rel_pkglib" "$OUT/ompi/$rel_libdir" "$OUT/ompi/$rel_pkgdata"
    cp "$(command -v orterun)" "$OUT/ompi/bin/orterun"
    cp "$(command -v orted)" "$OUT/ompi/bin/orted"
    cp -r "$ompi_pkgdata"/. "$OUT/ompi/$rel_pkgdata"/
    # Components for one node: shared memory and TCP, no InfiniBand/UCX/libfabric/PSM
    # (their libraries are tens of MB and a single GPU host does not use them), no OpenSHMEM.
    for comp in "$ompi_pkglib"/*.so; do
        deps=$(ldd "$comp")
        if grep -qE 'libibverbs|libucp|libuct|libucs|libfabric|libpsm|librdmacm|liboshmem|libcuda\.so' <<<"$deps"; then continue; fi
        cp "$comp" "$OUT/ompi/$rel_pkglib/"
    done
    # PMIx's own plugins (compression, resource managers), found by env.sh's component path
    pmix_lib=$(readlink -f "$(ldd "$OUT/lib/libopen-pal.so.40" "$OUT/lib/libpmix.so.2" 2>/dev/null | awk '$1 == "libpmix.so.2" {print $3; exit}')" 2>/dev/null || true)
    [ -n "$pmix_lib" ] || pmix_lib=$(readlink -f "$(ldconfig -p | awk '/libpmix.so.2 / {print $NF; exit}')" 2>/dev/null || true)
    if [ -n "$pmix_lib" ] && [ -d "$(dirname "$pmix_lib")/pmix" ]; then
        mkdir -p "$OUT/ompi/pmix"
        cp "$(dirname "$pmix_lib")"/pmix/*.so "$OUT/ompi/pmix/"
    fi
    strip --strip-debug "$OUT"/ompi/bin/* "$OUT/ompi/$rel_pkglib"/*.so
    copy_deps "$OUT"/ompi/bin/* "$OUT/ompi/$rel_pkglib"/*.so $(ls "$OUT"/ompi/pmix/*.so 2>/dev/null)
    ompi_note="Open MPI $(ompi_info --version 2>/dev/null | head -1 | awk '{print $NF}')"
else
    echo "note: Open MPI's ompi_info/orterun not found: the bundle has no mpirun (the tp 2 checks will skip)"
    ompi_note="none"
fi
strip --strip-debug "$OUT"/lib/*.so* 2>/dev/null || true

# ---- the environment and one wrapper per binary ----
cat > "$OUT/env.sh" <<'SH'
# env.sh — sourced by the wrappers in build/: the bundle's libraries first, then the
# target's CUDA libraries (cuBLAS, cuBLASLt, NCCL are not bundled), Open MPI relocated
# into the bundle. BOOST_CUDA_LIBS=dir1:dir2 names CUDA library folders explicitly.
BUNDLE=$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)
boost_cuda_dirs() {
    local d found=""
    local cands="${BOOST_CUDA_LIBS:-} ${CUDA_HOME:+$CUDA_HOME/lib64} /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib"
    for d in /usr/local/cuda-13*/lib64; do cands="$cands $d"; done
    # PyTorch's CUDA wheels: site-packages/nvidia/<package>/lib
    local py
    for py in python3 /usr/bin/python3; do
        command -v "$py" >/dev/null 2>&1 || continue
        cands="$cands $("$py" -c 'import os, nvidia
for p in nvidia.__path__:
    for d in sorted(os.listdir(p)):
        print(os.path.join(p, d, "lib"))' 2>/dev/null | tr '\n' ' ')"
        break
    done
    for d in $(echo "$cands" | tr ':' ' '); do
        [ -d "$d" ] || continue
        if [ -e "$d/libcublasLt.so.13" ] || [ -e "$d/libnccl.so.2" ] || [ -e "$d/libcublas.so.13" ] || [ -e "$d/libcudnn.so.9" ]; then
            case ":$found:" in *":$d:"*) ;; *) found="${found:+$found:}$d" ;; esac
        fi
    done
    echo "$found"
}
if [ -z "${BOOST_BUNDLE_ENV:-}" ]; then
    export BOOST_BUNDLE_ENV=1
    cuda_dirs=$(boost_cuda_dirs)
    export LD_LIBRARY_PATH="$BUNDLE/lib${cuda_dirs:+:$cuda_dirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    if [ -d "$BUNDLE/ompi" ]; then
        export OPAL_PREFIX="$BUNDLE/ompi" PMIX_MCA_mca_base_component_path="$BUNDLE/ompi/pmix"
        export PATH="$BUNDLE/build:$BUNDLE/ompi/bin:$PATH"
        # one node: shared memory and TCP only; root is allowed (the device machine runs as root)
        # (plm isolated: mpirun starts the ranks itself, no ssh needed on a single node)
        export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp OMPI_MCA_osc=pt2pt OMPI_MCA_plm=isolated
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    else
        export PATH="$BUNDLE/build:$PATH"
    fi
fi
SH
for b in "$OUT"/bin/*; do
    name=$(basename "$b")
    cat > "$OUT/build/$name" <<SH
#!/usr/bin/env bash
# $name from the boost-c GPU bundle: sets the library path (env.sh), then runs bin/$name.
. "\$(cd "\$(dirname "\${BASH_SOURCE[0]}")/.." && pwd)/env.sh"
exec "\$BUNDLE/bin/$name" "\$@"
SH
    chmod +x "$OUT/build/$name"
done
if [ -d "$OUT/ompi" ]; then
    cat > "$OUT/build/mpirun" <<'SH'
#!/usr/bin/env bash
# mpirun from the boost-c GPU bundle (Open MPI relocated with OPAL_PREFIX).
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/env.sh"
exec "$BUNDLE/ompi/bin/orterun" "$@"
SH
    chmod +x "$OUT/build/mpirun"
fi

# ---- compute-sanitizer, when this CUDA installation has it (the device check's first section) ----
san_dir=""
for d in "${CUDA_HOME:-/usr/local/cuda}/compute-sanitizer" /usr/local/cuda/compute-sanitizer; do
    [ -x "$d/compute-sanitizer" ] && { san_dir=$d; break; }
done
if [ -n "$san_dir" ]; then
    cp -r "$san_dir" "$OUT/sanitizer"
    san_note="$(du -sh "$OUT/sanitizer" | cut -f1) from $san_dir"
else
    san_note="none (not in this CUDA installation; the device check uses the GPU machine's if it has one)"
    echo "note: no compute-sanitizer in ${CUDA_HOME:-/usr/local/cuda}: not bundled"
fi

# ---- scripts, data, provenance ----
cp "$ROOT"/tests/lib.sh "$OUT/tests/"
cp "$ROOT"/tests/gpu/*.sh "$OUT/tests/gpu/"
cat > "$OUT/gpu-check.sh" <<'SH'
#!/usr/bin/env bash
# The device check from the unpacked bundle: bash gpu-check.sh --out DIR (docs/gpu.md).
exec bash "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/tests/gpu/gpu-check.sh" "$@"
SH
chmod +x "$OUT/gpu-check.sh"
cp "$ROOT"/analysis/compare_h5.py "$ROOT"/analysis/torch_gpu_bench.py "$ROOT"/analysis/torch_model.py "$OUT/analysis/" 2>/dev/null || true
cp "$ROOT/docs/gpu.md" "$OUT/README.md" 2>/dev/null || true
if command -v bible >/dev/null 2>&1; then bible -f Gen1:1-Rev22:21 > "$OUT/data/kjv.txt" 2>/dev/null || rm -f "$OUT/data/kjv.txt"; fi
{
    echo "boost-c GPU bundle"
    echo "commit: $(git -C "$ROOT" rev-parse HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME")"
    echo "cuda build: $("$OUT/build/gpu_probe" 2>/dev/null | sed -n 's/^cuda build: //p')"
    echo "mpi runtime: $ompi_note"
    echo "compute-sanitizer: $san_note"
    echo "cuDNN: not bundled; loaded at run time from the target (env.sh's folders), else the flash kernel"
    echo "libraries: $(ls "$OUT/lib" | tr '\n' ' ')"
} > "$OUT/BUNDLE"

# The tarball is what travels to a GPU machine (at most 64 MiB with the working tree);
# unpacked, OpenBLAS alone is 36 MB (every CPU's kernels), so the folder is larger. xz with
# a 64 MiB window: every binary links the same CUDA kernels (fatbins of several MB), which
# the window stores once.
XZ_OPT=-9e tar -C "$(dirname "$OUT")" -cJf "$OUT.tar.xz" "$(basename "$OUT")"
dir_kib=$(du -sk "$OUT" | cut -f1); tar_kib=$(du -k "$OUT.tar.xz" | cut -f1)
kib() { du -sk "$1" 2>/dev/null | cut -f1; }
echo "bundle: $OUT: $((dir_kib / 1024)) MiB unpacked (bin $(kib "$OUT/bin") KiB, lib $(kib "$OUT/lib") KiB in $(ls "$OUT/lib" | wc -l) libraries of which OpenBLAS $(kib "$OUT/lib/libopenblas.so.0") KiB, Open MPI runtime $(kib "$OUT/ompi") KiB, data $(kib "$OUT/data") KiB)"
echo "tarball: $OUT.tar.xz: $tar_kib KiB ($((tar_kib / 1024)) MiB; limit $LIMIT_MIB MiB)"
if [ "$tar_kib" -gt $((LIMIT_MIB * 1024)) ]; then echo "make-bundle: the tarball is over $LIMIT_MIB MiB" >&2; exit 1; fi
