# bundle-lib.sh — sourced by make-bundle.sh and bundle-ldd.sh: what the GPU bundle leaves to the
# node, the one list. system_lib NAME → 0 when the node provides the library NAME:
#   glibc            ld-linux*.so.*, libc, libm, libpthread, libdl, librt, libresolv, libutil, libanl
#                    (and the kernel's linux-vdso): the dynamic loader is the node's, so its C library is
#   the C++ runtime  libstdc++.so.6, libgcc_s.so.1: every base system has them, and NVIDIA's
#                    libraries use the node's (one copy per process)
#   the driver       libcuda.so.1, libnvidia-*.so.*: they must match the node's kernel module
system_lib() {
    case "$1" in
        linux-vdso.so*|ld-linux*.so*|libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*|libutil.so.*|libanl.so.*) return 0 ;;
        libstdc++.so.*|libgcc_s.so.*) return 0 ;;
        libcuda.so.*|libnvidia-*.so*) return 0 ;;
    esac
    return 1
}
# The slim bundle (make gpu-bundle SLIM=1) leaves CUDA's own libraries to the node as well: cudart,
# cuBLAS, cuBLASLt, NCCL, cuDNN and nvrtc, found at run time by its env.sh.
cuda_lib() { case "$1" in libcudart.so*|libcublas*.so*|libnccl.so*|libcudnn*.so*|libnvrtc*.so*) return 0 ;; esac; return 1; }
node_lib() { system_lib "$1" || { [ "${BUNDLE_SLIM:-0}" = 1 ] && cuda_lib "$1"; }; }
