#!/usr/bin/env bash
# make-bundle.sh BUILD_DIR OUT_DIR BIN... — the GPU bundle: the binaries BIN of BUILD_DIR (built
# PORTABLE=1 by `make gpu-bundle`) with every shared library they load, so that a GPU node needs
# nothing of the project's and nothing of CUDA's but its NVIDIA driver (docs/gpu.md, "The bundle").
# Writes OUT_DIR/ and OUT_DIR.tar.gz and prints what it holds.
#
#   bin/      the binaries; selftest, gpu-check and mpirun (scripts)
#   lib/      every library the binaries link (HDF5, SQLite, libfyaml, OpenBLAS, oneDNN, Open MPI,
#             cudart, cuBLAS, cuBLASLt, NCCL, and what those need) and what they load at run time:
#             cuDNN with its engine libraries, and nvrtc with its builtins (cuDNN's runtime-compiled
#             engines compile with it)
#   ompi/     Open MPI's mpirun (orterun), orted, its components and help files, relocated with
#             OPAL_PREFIX (env.sh); one node: shared memory and TCP
#   tests/    the self-test and the device check; experiments/ the manifests; analysis/ the PyTorch comparison scripts
#             (used only where the node has PyTorch); data/ a text corpus; sanitizer/ the CUDA
#             installation's compute-sanitizer when it has one; Makefile, README.md, BUNDLE
#
# Nothing depends on LD_LIBRARY_PATH: every binary carries the run path $ORIGIN/../lib (DT_RPATH,
# which also serves the libraries that have none of their own: nvrtc finds its builtins), every
# library copied from the system $ORIGIN (NVIDIA's carry their own). Left to the node, on purpose:
# glibc (it cannot be carried: the dynamic loader is the node's), libstdc++ and libgcc_s (every
# base system has them, and NVIDIA's libraries use the node's), and the NVIDIA driver (libcuda,
# which must match the kernel module). tests/gpu/bundle-ldd.sh checks exactly that, here and in a
# bare Debian 12 root (make bundle-check). BUNDLE records the versions and the oldest glibc and
# libstdc++ the binaries accept.
#
# --slim leaves CUDA's own libraries to the node too (cudart, cuBLAS, cuBLASLt, NCCL, cuDNN,
# nvrtc: 1.4 GB of the 1.5): for a node that has CUDA 13's libraries (modules, a toolkit, or the
# pip wheels), which env.sh puts on LD_LIBRARY_PATH (BOOST_CUDA_LIBS, else the folders
# mk/find-gpu-libs.sh --runtime-dirs finds there); the scripts source env.sh, a researcher
# running bin/train directly sources it first. Written as OUT_DIR.tar.xz.
set -euo pipefail
BUNDLE_SLIM=0; [ "${1:-}" = --slim ] && { BUNDLE_SLIM=1; shift; }
[ $# -ge 3 ] || { echo "usage: make-bundle.sh [--slim] BUILD_DIR OUT_DIR BIN..." >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD_DIR=$(cd "$1" && pwd)
OUT=$2; shift 2
BINS=("$@")
die() { echo "make-bundle: $*" >&2; exit 1; }
command -v patchelf >/dev/null || die "patchelf is missing (apt-get install patchelf; make gpu-bundle installs it when run as root)"
probe=$("$BUILD_DIR/gpu_probe" 2>&1 || true)   # (exit 1 without a GPU)
grep -q '^cuda build: yes' <<<"$probe" ||
    die "$BUILD_DIR has no CUDA back end (built with CUDA=0, or without nvcc): the bundle is for GPU nodes (make gpu-libs)"
# the run-time loaded libraries' folders: the one place that knows where they are
gpu_libs=$(bash "$ROOT/mk/find-gpu-libs.sh" --make) || die "the GPU libraries are not found (above)"
gpu_lib() { tr ' ' '\n' <<<"$gpu_libs" | sed -n "s/^$1=//p"; }
CUDNN_LIBDIR=$(gpu_lib CUDNN_LIBDIR); NVRTC_LIBDIR=$(gpu_lib NVRTC_LIBDIR)
if [ $BUNDLE_SLIM = 0 ]; then
    [ "$CUDNN_LIBDIR" != none ] || die "cuDNN's library (libcudnn.so.9) is not found beside its headers (set CUDNN_HOME to a folder with include/ and lib/)"
    [ "$NVRTC_LIBDIR" != none ] || die "nvrtc (libnvrtc.so.*) is not found (the CUDA toolkit's lib64, or the pip wheel nvidia-cuda-nvrtc)"
fi

rm -rf "$OUT" "$OUT.tar.gz" "$OUT.tar.xz"
mkdir -p "$OUT"/{bin,lib,tests/gpu,analysis,data}
OUT=$(cd "$OUT" && pwd)

# ---- what the node provides: glibc, the C++ runtime, the driver (the one list) ----
source "$ROOT/tests/gpu/bundle-lib.sh"
# copy_deps FILE...: every library ldd finds for them, into lib/ (ldd lists the transitive ones)
copy_deps() {
    local f line name path
    for f in "$@"; do
        while read -r line; do
            name=$(awk '{print $1}' <<<"$line"); path=$(awk '$2 == "=>" {print $3}' <<<"$line")
            [ -n "$name" ] && [ "${name#/}" = "$name" ] || continue
            node_lib "$name" && continue
            [ -n "$path" ] && [ "$path" != not ] || die "$f needs $name, which is not found here"
            [ -e "$OUT/lib/$name" ] || cp -L "$path" "$OUT/lib/$name"
        done < <(ldd "$f" | grep -v 'statically linked')
    done
}

# ---- binaries and what they link ----
for b in "${BINS[@]}"; do
    [ -x "$BUILD_DIR/$b" ] || die "$BUILD_DIR/$b is missing"
    cp "$BUILD_DIR/$b" "$OUT/bin/$b"
    strip --strip-debug "$OUT/bin/$b"
done
copy_deps "$OUT"/bin/*

# ---- what they load at run time: cuDNN and its engines, nvrtc and its builtins ----
if [ $BUNDLE_SLIM = 0 ]; then
shopt -s nullglob
for f in "$CUDNN_LIBDIR"/libcudnn*.so.[0-9] "$NVRTC_LIBDIR"/libnvrtc.so.[0-9]* "$NVRTC_LIBDIR"/libnvrtc-builtins.so.[0-9]*; do
    cp -L "$f" "$OUT/lib/$(basename "$f")"
done
shopt -u nullglob
ls "$OUT"/lib/libcudnn_engines_runtime_compiled.so.* >/dev/null 2>&1 || die "cuDNN's engine libraries are not in $CUDNN_LIBDIR"
ls "$OUT"/lib/libnvrtc-builtins.so.* >/dev/null 2>&1 || die "nvrtc's builtins library is not in $NVRTC_LIBDIR"
# the unversioned names libcudnn.so.9 and cuDNN's graph library also open
for f in "$OUT"/lib/libcudnn*.so.[0-9] "$OUT"/lib/libnvrtc.so.[0-9]*; do
    ln -sf "$(basename "$f")" "$OUT/lib/$(basename "$f" | sed -E 's/\.so\..*/.so/')"
done
copy_deps "$OUT"/lib/libcudnn*.so.[0-9] "$OUT"/lib/libnvrtc*.so.[0-9]*
fi

# ---- Open MPI's runtime, relocated with OPAL_PREFIX (one node: mpirun forks the ranks) ----
ompi_path() { ompi_info --path "$1" --parsable 2>/dev/null | sed -n "s/^path:$1://p"; }
ompi_note="none"
if command -v ompi_info >/dev/null && command -v orterun >/dev/null && [ -d "$(ompi_path pkglibdir)" ]; then
    prefix=$(ompi_path prefix); pkglib=$(ompi_path pkglibdir); pkgdata=$(ompi_path pkgdatadir); sysconf=$(ompi_path sysconfdir)
    rel_pkglib=${pkglib#"$prefix"/}; rel_pkgdata=${pkgdata#"$prefix"/}
    mkdir -p "$OUT/ompi/bin" "$OUT/ompi/$rel_pkglib" "$OUT/ompi/$rel_pkgdata" "$OUT/ompi/etc"
    cp "$(command -v orterun)" "$(command -v orted)" "$OUT/ompi/bin/"
    cp -r "$pkgdata"/. "$OUT/ompi/$rel_pkgdata"/
    [ -f "$sysconf/openmpi-mca-params.conf" ] && cp "$sysconf/openmpi-mca-params.conf" "$OUT/ompi/etc/"
    # components for one node: shared memory and TCP (no InfiniBand, UCX, libfabric or PSM: tens
    # of MB of libraries a single node does not use; across nodes, the cluster's MPI is used)
    for comp in "$pkglib"/*.so; do
        grep -qE 'libibverbs|libucp|libuct|libucs|libfabric|libpsm|librdmacm|liboshmem|libcuda\.so' <<<"$(ldd "$comp")" && continue
        cp "$comp" "$OUT/ompi/$rel_pkglib/"
    done
    # PMIx's own components (env.sh points PMIx at them)
    pmix_lib=$(ldd "$OUT/lib/libopen-pal.so.40" 2>/dev/null | awk '$1 == "libpmix.so.2" {print $3; exit}')
    pmix_dir=$(dirname "$(readlink -f "${pmix_lib:-/nonexistent}")")/pmix
    if [ -d "$pmix_dir" ]; then mkdir -p "$OUT/ompi/pmix"; cp "$pmix_dir"/*.so "$OUT/ompi/pmix/"; fi
    copy_deps "$OUT"/ompi/bin/* "$OUT/ompi/$rel_pkglib"/*.so $(ls "$OUT"/ompi/pmix/*.so 2>/dev/null)
    ompi_note="Open MPI $(ompi_info --version 2>/dev/null | head -1 | awk '{print $NF}')"
else
    echo "note: Open MPI's ompi_info/orterun not found: the bundle has no mpirun (the tp 2 checks will fail)"
fi

# ---- run paths: $ORIGIN everywhere, so nothing needs LD_LIBRARY_PATH ----
is_nvidia() { case "$(basename "$1")" in libcudnn*|libcublas*|libnccl*|libnvrtc*|libcudart*) return 0 ;; esac; return 1; }
rpath_to_lib() { echo "\$ORIGIN/$(realpath --relative-to="$(dirname "$1")" "$OUT/lib")"; }
for f in "$OUT"/bin/*; do patchelf --force-rpath --set-rpath '$ORIGIN/../lib' "$f"; done
for f in "$OUT"/lib/*.so*; do
    [ -L "$f" ] && continue
    is_nvidia "$f" && continue          # they carry their own ($ORIGIN, or need only the system)
    strip --strip-debug "$f"
    patchelf --set-rpath '$ORIGIN' "$f"
done
if [ -d "$OUT/ompi" ]; then
    for f in "$OUT"/ompi/bin/* "$OUT/ompi/$rel_pkglib"/*.so "$OUT"/ompi/pmix/*.so; do
        [ -f "$f" ] || continue
        strip --strip-debug "$f"
        patchelf --set-rpath "$(rpath_to_lib "$f")" "$f"
    done
fi

# ---- compute-sanitizer, when this CUDA installation has it (the device check's first section) ----
san_note="none (not in this CUDA installation; the device check uses the node's if it has one)"
cuda_root=$(gpu_lib CUDA_ROOT)
for d in "$cuda_root/compute-sanitizer" "$cuda_root/extras/compute-sanitizer"; do
    [ -x "$d/compute-sanitizer" ] || continue
    cp -r "$d" "$OUT/sanitizer"
    san_note="$(du -sh "$OUT/sanitizer" | cut -f1) from $d"
    break
done

# ---- the environment, the scripts, the entry points ----
cat > "$OUT/env.sh" <<'SH'
# env.sh — sourced by the bundle's mpirun and scripts: Open MPI relocated into the bundle
# (OPAL_PREFIX; one node: shared memory and TCP), the bundle's bin/ first on PATH. The libraries
# need nothing: every binary finds them through its run path ($ORIGIN/../lib).
BUNDLE=$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)
export PATH="$BUNDLE/bin:$PATH"
if [ -d "$BUNDLE/ompi" ]; then
    export OPAL_PREFIX="$BUNDLE/ompi" PMIX_MCA_mca_base_component_path="$BUNDLE/ompi/pmix"
    export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp OMPI_MCA_osc=pt2pt OMPI_MCA_plm=isolated
    # root may run it (containers); more ranks than cores (two ranks on one GPU)
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
fi
# the slim bundle: CUDA's libraries are the node's (BOOST_CUDA_LIBS=dir1:dir2 names them)
if grep -q '^slim:' "$BUNDLE/BUNDLE" 2>/dev/null && [ -z "${BOOST_BUNDLE_CUDA_LIBS:-}" ]; then
    BOOST_BUNDLE_CUDA_LIBS=${BOOST_CUDA_LIBS:-$(bash "$BUNDLE/mk/find-gpu-libs.sh" --runtime-dirs 2>/dev/null | tr '\n' ':' | sed 's/:$//')}
    export BOOST_BUNDLE_CUDA_LIBS LD_LIBRARY_PATH="$BOOST_BUNDLE_CUDA_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
SH
if [ -d "$OUT/ompi" ]; then
    cat > "$OUT/bin/mpirun" <<'SH'
#!/usr/bin/env bash
# mpirun of the boost-c GPU bundle: Open MPI's orterun relocated into the bundle (env.sh).
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/env.sh"
exec "$BUNDLE/ompi/bin/orterun" "$@"
SH
fi
for s in selftest gpu-check; do
    cat > "$OUT/bin/$s" <<SH
#!/usr/bin/env bash
# $s of the boost-c GPU bundle (tests/gpu/$s.sh --help)
exec bash "\$(cd "\$(dirname "\${BASH_SOURCE[0]}")/.." && pwd)/tests/gpu/$s.sh" "\$@"
SH
done
chmod +x "$OUT"/bin/*
cat > "$OUT/Makefile" <<'MK'
# The boost-c GPU bundle (README.md): make selftest | make gpu-check [OUT_DIR=dir]
out_arg = $(if $(value OUT_DIR),--out '$(subst ','\'',$(value OUT_DIR))')
.PHONY: selftest gpu-check
selftest:
	@bin/selftest $(out_arg)
gpu-check:
	@bin/gpu-check $(out_arg)
MK
cp "$ROOT"/tests/lib.sh "$ROOT"/tests/proc.sh "$OUT/tests/"
mkdir -p "$OUT/mk" && cp "$ROOT/mk/find-gpu-libs.sh" "$OUT/mk/"
cp "$ROOT"/tests/gpu/*.sh "$OUT/tests/gpu/"
cp "$ROOT"/analysis/torch_gpu_bench.py "$ROOT"/analysis/torch_model.py "$OUT/analysis/"
cp -r "$ROOT/experiments" "$OUT/experiments"
cp "$ROOT/docs/gpu.md" "$OUT/README.md"
if command -v bible >/dev/null 2>&1; then bible -f Gen1:1-Rev22:21 > "$OUT/data/kjv.txt" 2>/dev/null || rm -f "$OUT/data/kjv.txt"; fi

# ---- provenance: versions, and the oldest glibc and libstdc++ the binaries accept ----
max_version() {  # PREFIX: the highest symbol version PREFIX_x.y.z any ELF file of the bundle needs
    find "$OUT/bin" "$OUT/lib" "$OUT/ompi" -type f -print0 | xargs -0 objdump -T 2>/dev/null |
        grep -oE "\\b$1_[0-9][0-9.]*" | sed "s/^$1_//" | sort -uV | tail -1
}
probe=$("$OUT/bin/gpu_probe" 2>&1 || true)
libver() { sed -nE "s/^  $1 +([0-9.]+) .*/\\1/p" <<<"$probe" | head -1; }
{
    echo "boost-c GPU bundle"
    echo "commit: $(git -C "$ROOT" rev-parse HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME") for any $(uname -m) CPU of its portable level (make PORTABLE=1)"
    echo "CUDA runtime $(libver cudart), cuBLASLt $(libver cuBLASLt), cuDNN $(libver cuDNN), NCCL $(libver NCCL), nvrtc $(libver nvrtc); $ompi_note"
    echo "the node provides: the NVIDIA driver (CUDA $(libver cudart) needs 580 or newer), glibc $(max_version GLIBC) or newer, libstdc++ with GLIBCXX_$(max_version GLIBCXX)"
    [ $BUNDLE_SLIM = 1 ] && echo "slim: the node provides CUDA 13's cudart, cuBLAS, cuBLASLt, NCCL, cuDNN 9 and nvrtc too (env.sh puts them on LD_LIBRARY_PATH: BOOST_CUDA_LIBS, else mk/find-gpu-libs.sh --runtime-dirs: CUDA_HOME, /usr/local/cuda*, the pip wheels)"
    echo "compute-sanitizer: $san_note"
    echo "libraries: $(cd "$OUT/lib" && ls | tr '\n' ' ')"
} > "$OUT/BUNDLE"

bash "$ROOT/tests/gpu/bundle-ldd.sh" "$OUT" | tail -3
TAR=$OUT.tar.gz
if [ $BUNDLE_SLIM = 1 ]; then TAR=$OUT.tar.xz; XZ_OPT="-6 -T2" tar -C "$(dirname "$OUT")" -cJf "$TAR" "$(basename "$OUT")"
else tar -C "$(dirname "$OUT")" -czf "$TAR" "$(basename "$OUT")"; fi
kib() { du -sk "$1" 2>/dev/null | cut -f1; }
echo "bundle: $OUT: $(( $(kib "$OUT") / 1024 )) MiB (bin $(( $(kib "$OUT/bin") / 1024 )) MiB, lib $(( $(kib "$OUT/lib") / 1024 )) MiB in $(ls "$OUT/lib" | wc -l) files, Open MPI runtime $(( $(kib "$OUT/ompi") / 1024 )) MiB)"
echo "tarball: $TAR: $(( $(kib "$TAR") / 1024 )) MiB; on the node: tar xf $(basename "$TAR") && $(basename "$OUT")/bin/selftest"
sed -n '2,5p' "$OUT/BUNDLE"
