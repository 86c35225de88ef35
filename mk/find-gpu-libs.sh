#!/usr/bin/env bash
# find-gpu-libs.sh — the one place that looks for what the GPU build and the bundle need: the
# CUDA toolkit (nvcc; cudart, cuBLAS, cuBLASLt, nvrtc), cuDNN (its headers at build time; the
# library is loaded at run time), NCCL (header and library) and MPI (mpicc). mk/cuda.mk and
# mk/gpu.mk ask it through make (lazily: only a build with the CUDA back end runs it), the bundle
# (tests/gpu/make-bundle.sh) asks it where the run-time libraries are, and `make gpu-libs` prints
# its report.
#
#   find-gpu-libs.sh --nvcc              the nvcc to build with (nothing when there is none)
#   find-gpu-libs.sh --make              one line of make words NAME=value (below), or
#                                        GPU_LIBS_ERROR=1 with the reason on stderr
#   find-gpu-libs.sh --report            what was found, where, and every place it looked
#   find-gpu-libs.sh --runtime-dirs      the folders of the run-time libraries, one a line (also on a
#                                        node without nvcc: the slim bundle's env.sh asks it)
#
# Where it looks, first hit wins (a variable that is set but wrong is an error, never skipped):
#   nvcc / the toolkit  NVCC; CUDA_HOME, CUDA_PATH, CUDA_ROOT, CUDA_TOOLKIT_ROOT_DIR; environment
#                       modules' EBROOTCUDA / EBROOTCUDACORE; nvcc on PATH; /usr/local/cuda,
#                       /usr/local/cuda-*, /opt/cuda (newest first)
#   cuDNN               CUDNN_HOME, CUDNN_PATH, CUDNN_ROOT, CUDNN_DIR (each a folder with include/
#                       and lib/); EBROOTCUDNN; the toolkit; /usr/include and /usr/include/<arch>;
#                       the pip wheel nvidia-cudnn-cu13 (site-packages/nvidia/cudnn) of $PYTHON,
#                       python3, $VIRTUAL_ENV and $CONDA_PREFIX
#   NCCL                NCCL_HOME, NCCL_PATH, NCCL_ROOT, NCCL_DIR; EBROOTNCCL; the toolkit; /usr;
#                       the pip wheel nvidia-nccl-cu13 (site-packages/nvidia/nccl)
#   nvrtc (run time)    the toolkit; the pip wheels' nvidia/cuda_nvrtc/lib and nvidia/cu13/lib
#   MPI                 MPICC or mpicc on PATH; its flags from `mpicc --showme` (Open MPI) or
#                       `mpicc -show` (MPICH, Intel MPI)
#
# --make words: CUDA_ROOT CUDA_INC CUDA_LIBDIR CUDA_LINK (cudart, cuBLAS, cuBLASLt, comma-joined
# -l flags) CUDNN_INC CUDNN_LIBDIR (or "none": cuDNN is loaded from the library path at run time)
# CUDNN_VERSION NCCL_INC NCCL_LIBDIR NCCL_LINK NVRTC_LIBDIR. Paths with spaces are refused (make
# words cannot hold them).
set -uo pipefail
mode=${1:-}
case "$mode" in --nvcc|--make|--report|--runtime-dirs) ;; *)
    echo "usage: find-gpu-libs.sh --nvcc | --make | --report | --runtime-dirs" >&2; exit 2 ;; esac
arch=$(uname -m)
LOOKED=()                      # every place looked at, for the messages
looked() { LOOKED+=("$1"); }
fail() {                       # COMPONENT MESSAGE HINT
    {
        echo "error: the GPU build cannot find $1: $2"
        echo "  looked in: ${LOOKED[*]:-nowhere}"
        echo "  hint: $3"
        echo "  (make CUDA=0 builds without the GPU back end; make gpu-libs prints what is found where)"
    } >&2
    [ "$mode" = --make ] && echo "GPU_LIBS_ERROR=1"
    exit 1
}

# ---- the pip wheels' nvidia/ folders (site-packages of the Pythons a researcher uses) ----
wheel_roots() {
    local py d
    for py in "${PYTHON:-}" python3; do
        [ -n "$py" ] && command -v "$py" >/dev/null 2>&1 || continue
        "$py" -c 'import nvidia, sys; print("\n".join(nvidia.__path__))' 2>/dev/null
    done
    for d in "${VIRTUAL_ENV:-}" "${CONDA_PREFIX:-}"; do
        [ -n "$d" ] && ls -d "$d"/lib/python3*/site-packages/nvidia 2>/dev/null
    done
}
WHEELS=$(wheel_roots | awk '!seen[$0]++')

# ---- the CUDA toolkit ------------------------------------------------------------------
find_nvcc() {   # → NVCC_FOUND (empty: none)
    local c v
    NVCC_FOUND=""
    if [ -n "${NVCC:-}" ]; then
        looked "NVCC=$NVCC"
        NVCC_FOUND=$(command -v "$NVCC" 2>/dev/null) && return 0
        fail "nvcc" "NVCC=$NVCC is not an executable" "set NVCC to nvcc's path, or unset it"
    fi
    for v in CUDA_HOME CUDA_PATH CUDA_ROOT CUDA_TOOLKIT_ROOT_DIR; do
        [ -n "${!v:-}" ] || continue
        looked "$v=${!v}"
        [ -x "${!v}/bin/nvcc" ] && { NVCC_FOUND=${!v}/bin/nvcc; return 0; }
        fail "nvcc" "$v=${!v} has no bin/nvcc" "point $v at the CUDA toolkit (the folder with bin/nvcc), or unset it"
    done
    for c in "${EBROOTCUDA:-}" "${EBROOTCUDACORE:-}"; do
        [ -n "$c" ] || continue
        looked "$c (environment module)"
        [ -x "$c/bin/nvcc" ] && { NVCC_FOUND=$c/bin/nvcc; return 0; }
    done
    looked "PATH"
    NVCC_FOUND=$(command -v nvcc 2>/dev/null) && return 0
    for c in /usr/local/cuda $(ls -d /usr/local/cuda-* 2>/dev/null | sort -rV) /opt/cuda; do
        looked "$c"
        [ -x "$c/bin/nvcc" ] && { NVCC_FOUND=$c/bin/nvcc; return 0; }
    done
    NVCC_FOUND=""
    return 1
}
if [ "$mode" = --nvcc ]; then   # (a wrong NVCC or CUDA_HOME is reported by the build's --make)
    find_nvcc 2>/dev/null >/dev/null && echo "$NVCC_FOUND"
    exit 0
fi

find_nvcc; nvcc=$NVCC_FOUND
nvcc_looked=("${LOOKED[@]}"); LOOKED=()
cuda_root=""; cuda_inc=""; cuda_libdir=""
if [ -n "$nvcc" ]; then
    cuda_root=$(cd "$(dirname "$(readlink -f "$nvcc")")/.." && pwd)
    # Debian's nvidia-cuda-toolkit puts nvcc in /usr/bin and the libraries in /usr/lib/<arch>-linux-gnu
    for d in "$cuda_root/include" "$cuda_root/targets/$arch-linux/include" "$cuda_root/targets/sbsa-linux/include"; do
        [ -f "$d/cuda_runtime.h" ] && { cuda_inc=$d; break; }
    done
    for d in "$cuda_root/lib64" "$cuda_root/lib" "$cuda_root/targets/$arch-linux/lib" "$cuda_root/targets/sbsa-linux/lib" \
             "$cuda_root/lib/$arch-linux-gnu"; do
        ls "$d"/libcublasLt.so* >/dev/null 2>&1 && { cuda_libdir=$d; break; }
    done
fi

# link_flag DIR NAME → -lNAME when DIR has libNAME.so, else -l:libNAME.so.<n> (the wheels ship
# only the versioned file)
link_flag() {
    if [ -e "$1/lib$2.so" ]; then echo "-l$2"; return 0; fi
    local f; f=$(ls "$1"/lib"$2".so.[0-9]* 2>/dev/null | sort -V | head -1)
    [ -n "$f" ] && { echo "-l:$(basename "$f")"; return 0; }
    return 1
}
# first_dir_with FILE DIR... → R_DIR, the first DIR holding FILE (a glob); each is noted as looked at
first_dir_with() {
    local pat=$1 d; shift
    R_DIR=""
    for d in "$@"; do
        [ -n "$d" ] || continue
        looked "$d"
        compgen -G "$d/$pat" >/dev/null && { R_DIR=$d; return 0; }
    done
    return 1
}
libdir_of() {   # ROOT FILEGLOB → ROOT's library folder holding it
    local d
    for d in "$1/lib64" "$1/lib" "$1/lib/$arch-linux-gnu"; do compgen -G "$d/$2" >/dev/null && { echo "$d"; return 0; }; done
    return 1
}
# from_vars COMPONENT HEADER LIBGLOB VAR... → R_INC, R_LIB (or none) from the first variable that
# is set; a set variable without the header is an error (the researcher pointed at it on purpose)
from_vars() {
    local comp=$1 hdr=$2 lib=$3 v d root; shift 3
    for v in "$@"; do
        [ -n "${!v:-}" ] || continue
        looked "$v=${!v}"
        root=${!v}; R_INC=""
        for d in "$root/include" "$root"; do [ -f "$d/$hdr" ] && { R_INC=$d; break; }; done
        [ -n "$R_INC" ] || fail "$comp" "$v=$root has no include/$hdr" "point $v at the folder that holds include/$hdr and lib/ (for the pip wheel: .../site-packages/nvidia/${comp,,}), or unset it"
        R_LIB=$(libdir_of "$root" "$lib") || R_LIB=none
        return 0
    done
    return 1
}

# find_component NAME HEADER LIBGLOB EBROOT WHEEL VAR... → R_INC, R_LIB ("" when not found;
# R_LIB "none" for a header without its library): the variables first (from_vars), then the
# environment module's root, the toolkit, the system's folders and the pip wheel nvidia/WHEEL
find_component() {
    local name=$1 hdr=$2 lib=$3 ebroot=$4 wheel=$5 w; shift 5
    if from_vars "$name" "$hdr" "$lib" "$@"; then return 0; fi
    local cands=()
    [ -n "$ebroot" ] && cands+=("$ebroot/include")
    [ -n "$cuda_inc" ] && cands+=("$cuda_inc")
    cands+=(/usr/include "/usr/include/$arch-linux-gnu")
    while read -r w; do [ -n "$w" ] && cands+=("$w/$wheel/include"); done <<<"$WHEELS"
    R_INC=""; R_LIB=""
    first_dir_with "$hdr" "${cands[@]}" || return 1
    R_INC=$R_DIR
    R_LIB=$(libdir_of "$(dirname "$R_INC")" "$lib") || R_LIB=""
    [ -z "$R_LIB" ] && [ "$R_INC" = "$cuda_inc" ] && compgen -G "$cuda_libdir/$lib" >/dev/null && R_LIB=$cuda_libdir
    [ -z "$R_LIB" ] && compgen -G "/usr/lib/$arch-linux-gnu/$lib" >/dev/null && R_LIB=/usr/lib/$arch-linux-gnu
    R_LIB=${R_LIB:-none}
    return 0
}

# ---- cuDNN (headers at build time; libcudnn.so.9 at run time) -------------------------------
find_component cuDNN cudnn_graph.h 'libcudnn.so*' "${EBROOTCUDNN:-}" cudnn CUDNN_HOME CUDNN_PATH CUDNN_ROOT CUDNN_DIR
cudnn_inc=$R_INC; cudnn_libdir=${R_LIB:-none}
cudnn_version=""
if [ -n "$cudnn_inc" ]; then
    vf=$cudnn_inc/cudnn_version.h
    [ -f "$vf" ] && cudnn_version=$(awk '/#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) / {v[$2]=$3} END {if (v["CUDNN_MAJOR"] != "") print v["CUDNN_MAJOR"] "." v["CUDNN_MINOR"] "." v["CUDNN_PATCHLEVEL"]}' "$vf")
fi
cudnn_looked=("${LOOKED[@]}"); LOOKED=()

# ---- NCCL -------------------------------------------------------------------------------
find_component NCCL nccl.h 'libnccl.so*' "${EBROOTNCCL:-}" nccl NCCL_HOME NCCL_PATH NCCL_ROOT NCCL_DIR
nccl_inc=$R_INC; nccl_libdir=$R_LIB
[ "$nccl_libdir" = none ] && nccl_libdir=""
nccl_looked=("${LOOKED[@]}"); LOOKED=()

# ---- nvrtc (cuDNN's runtime-compiled engines load it) -----------------------------------------
cands=("$cuda_libdir")
while read -r w; do [ -n "$w" ] && cands+=("$w/cuda_nvrtc/lib" "$w/cu13/lib"); done <<<"$WHEELS"
first_dir_with 'libnvrtc.so.[0-9]*' "${cands[@]}"; nvrtc_libdir=$R_DIR
nvrtc_looked=("${LOOKED[@]}"); LOOKED=()

# ---- MPI ----------------------------------------------------------------------------------
mpicc=$(command -v "${MPICC:-mpicc}" 2>/dev/null || true)
mpi_flags=""
if [ -n "$mpicc" ]; then
    mpi_flags=$("$mpicc" --showme 2>/dev/null || "$mpicc" -show 2>/dev/null || true)
fi

case "$mode" in
--report)
    say() { printf '  %-10s %s\n' "$1" "$2"; }
    echo "GPU build: what mk/find-gpu-libs.sh finds (the first hit of each list wins)"
    say "nvcc" "${nvcc:-NOT FOUND (NVCC, CUDA_HOME, CUDA_PATH, CUDA_ROOT, EBROOTCUDA, PATH, /usr/local/cuda*, /opt/cuda)}"
    [ -n "$nvcc" ] && say "" "$("$nvcc" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/CUDA \1/p')"
    say "toolkit" "include ${cuda_inc:-NOT FOUND}, libraries ${cuda_libdir:-NOT FOUND (libcublasLt.so*)}"
    if [ -n "$cudnn_inc" ]; then say "cuDNN" "headers $cudnn_inc${cudnn_version:+ (cuDNN $cudnn_version)}, library $cudnn_libdir"
    else say "cuDNN" "NOT FOUND (cudnn_graph.h)"; fi
    say "" "looked in: ${cudnn_looked[*]}"
    if [ -n "$nccl_inc" ]; then say "NCCL" "header $nccl_inc, library ${nccl_libdir:-NOT FOUND (libnccl.so*)}"
    else say "NCCL" "NOT FOUND (nccl.h)"; fi
    say "" "looked in: ${nccl_looked[*]}"
    say "nvrtc" "${nvrtc_libdir:-NOT FOUND} (cuDNN's runtime-compiled engines load it)"
    say "" "looked in: ${nvrtc_looked[*]}"
    say "pip wheels" "$(echo $WHEELS | sed 's/^$/none (no importable nvidia package)/')"
    say "MPI" "${mpicc:-NOT FOUND (MPICC, mpicc on PATH)}${mpi_flags:+: $mpi_flags}"
    exit 0 ;;
--runtime-dirs)
    # A node without the toolkit (no nvcc) may still have its libraries: CUDA_HOME's, the
    # versioned folders', the pip wheels' (nvidia/cu13/lib, nvidia/cublas/lib, ...), LD_LIBRARY_PATH's
    extra=()
    if [ -z "$cuda_libdir" ]; then
        for d in ${CUDA_HOME:+"$CUDA_HOME/lib64"} ${CUDA_PATH:+"$CUDA_PATH/lib64"} /usr/local/cuda/lib64 /usr/local/cuda-*/lib64 \
                 $(echo "${LD_LIBRARY_PATH:-}" | tr ':' ' '); do
            compgen -G "$d/libcublasLt.so.*" >/dev/null && { extra+=("$d"); break; }
        done
        while read -r w; do
            [ -n "$w" ] || continue
            for d in "$w/cu13/lib" "$w/cublas/lib" "$w/cuda_runtime/lib" "$w/cuda_nvrtc/lib"; do
                compgen -G "$d/lib*.so.*" >/dev/null && extra+=("$d")
            done
        done <<<"$WHEELS"
    fi
    for d in "$cuda_libdir" "${extra[@]}" "$cudnn_libdir" "$nccl_libdir" "$nvrtc_libdir"; do
        [ -n "$d" ] && [ "$d" != none ] && echo "$d"
    done | awk '!seen[$0]++'
    exit 0 ;;
esac

# --make: every piece the build needs, or the first that is missing
[ -n "$nvcc" ] || { LOOKED=("${nvcc_looked[@]}"); fail "nvcc" "no CUDA toolkit" "set CUDA_HOME to the toolkit (module load cuda; or apt-get install nvidia-cuda-toolkit)"; }
[ -n "$cuda_inc" ] || { LOOKED=("$cuda_root"); fail "the CUDA headers" "no cuda_runtime.h beside $nvcc" "set CUDA_HOME to a complete toolkit"; }
[ -n "$cuda_libdir" ] || { LOOKED=("$cuda_root/lib64" "$cuda_root/lib" "$cuda_root/targets/$arch-linux/lib"); fail "cuBLASLt" "no libcublasLt.so* in the toolkit at $cuda_root" "set CUDA_HOME to a toolkit with cuBLAS (module load cuda)"; }
[ -n "$cudnn_inc" ] || { LOOKED=("${cudnn_looked[@]}"); fail "cuDNN's headers (cudnn_graph.h)" "not found" "CUDNN_HOME=<folder with include/cudnn_graph.h> (module load cudnn; or pip install nvidia-cudnn-cu13 and CUDNN_HOME=\$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__))'))"; }
[ -n "$nccl_inc" ] || { LOOKED=("${nccl_looked[@]}"); fail "NCCL (nccl.h)" "not found" "NCCL_HOME=<folder with include/nccl.h and lib/libnccl.so.2> (module load nccl; or pip install nvidia-nccl-cu13 and NCCL_HOME=\$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))'))"; }
[ -n "$nccl_libdir" ] || { LOOKED=("$(dirname "$nccl_inc")"); fail "NCCL's library" "nccl.h is in $nccl_inc but no libnccl.so* beside it" "set NCCL_HOME to a folder with include/nccl.h and lib/libnccl.so.2"; }
nccl_link=$(link_flag "$nccl_libdir" nccl) || { LOOKED=("$nccl_libdir"); fail "NCCL's library" "no libnccl.so* in $nccl_libdir" "set NCCL_HOME"; }
cuda_link=""
for l in cublasLt cublas cudart; do
    f=$(link_flag "$cuda_libdir" "$l") || { LOOKED=("$cuda_libdir"); fail "lib$l" "not in $cuda_libdir" "set CUDA_HOME to a complete toolkit"; }
    cuda_link="$cuda_link${cuda_link:+,}$f"
done
for p in "$cuda_root" "$cuda_inc" "$cuda_libdir" "$cudnn_inc" "$cudnn_libdir" "$nccl_inc" "$nccl_libdir" "$nvrtc_libdir"; do
    case "$p" in *" "*) LOOKED=("$p"); fail "a usable path" "'$p' contains a space" "install or link it under a path without spaces" ;; esac
done
echo "CUDA_ROOT=$cuda_root CUDA_INC=$cuda_inc CUDA_LIBDIR=$cuda_libdir CUDA_LINK=$cuda_link" \
     "CUDNN_INC=$cudnn_inc CUDNN_LIBDIR=$cudnn_libdir CUDNN_VERSION=${cudnn_version:-unknown}" \
     "NCCL_INC=$nccl_inc NCCL_LIBDIR=$nccl_libdir NCCL_LINK=$nccl_link NVRTC_LIBDIR=${nvrtc_libdir:-none}"
