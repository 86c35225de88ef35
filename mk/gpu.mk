# mk/gpu.mk — the GPU run path: the NCCL communication back end and the GPU placement
# (src/parallel/comm_nccl.c, gpu_setup.c), the GPU checks and the bundle for a machine
# without the -dev packages (docs/gpu.md). Included by the Makefile; the CUDA kernels
# themselves are built by mk/cuda.mk.
#
# The NCCL back end talks to the CUDA back end's stream, so it is built with CUDA exactly
# when that back end is: mk/cuda.mk's nvcc detection (CUDA_NVCC) where that file is part of
# the build, else nvcc at $(NVCC) with the back end's sources present; CUDA=0 turns it off.
# Recursive (=) and read only by recipes and link lines, so nothing runs while the
# Makefile is parsed (see the pkg-config comment in the Makefile).
CUDA_HOME ?= /usr/local/cuda
NVCC      ?= $(CUDA_HOME)/bin/nvcc
GPU_CUDA   = $(if $(filter 0,$(CUDA)),,$(if $(wildcard src/backend/cuda/*.cu),$(if $(CUDA_NVCC)$(wildcard $(NVCC)),1)))
# How the CUDA runtime is linked (shared; mk/cuda.mk links the same).
CUDA_RT_LIBS ?= -lcudart

$(BUILD)/obj/parallel/comm_nccl.o $(BUILD)/obj/parallel/gpu_setup.o: \
    override CFLAGS += $(if $(GPU_CUDA),-DBOOST_CUDA -isystem $(CUDA_HOME)/include)
LDLIBS += $(if $(GPU_CUDA),-L$(CUDA_HOME)/lib64 -Wl$(comma)-rpath$(comma)$(CUDA_HOME)/lib64 -lnccl $(CUDA_RT_LIBS))
comma := ,

.PHONY: gpu-check gpu-bundle gpu-bundle-check
# The device check for a machine with one NVIDIA GPU (at most 7 minutes): sanitizers, op and
# step parity, both attentions, throughput against PyTorch, per-op JSON, bf16 curve, tp 2; from a build
# here or from a bundle (tests/gpu/gpu-check.sh --help).
gpu-check: all
	@bash tests/gpu/gpu-check.sh

# build/gpu-bundle/ and build/gpu-bundle.tar.xz: the binaries, built for a portable x86-64
# (no -march=native), with the shared libraries a bare Debian 12 + NVIDIA driver lacks,
# behind a wrapper that sets LD_LIBRARY_PATH (tests/gpu/make-bundle.sh).
GPU_BUNDLE_OPT ?= -O3 -march=x86-64-v3
gpu-bundle:
	@$(MAKE) --no-print-directory BUILD=build/bundle-obj OPT='$(GPU_BUNDLE_OPT)' all
	@bash tests/gpu/make-bundle.sh build/bundle-obj build/gpu-bundle

# Proof that the bundle starts in a debootstrap chroot without the -dev packages (root).
gpu-bundle-check: gpu-bundle
	@bash tests/gpu/bundle-check.sh build/gpu-bundle

# build/gpu_probe: is a CUDA device usable from this build (tests/gpu/gpu_probe.c)?
# build/attention_bench: boost-c's flash attention timed at one shape (tests/gpu/attention_bench.c).
all: $(BUILD)/gpu_probe $(BUILD)/attention_bench
$(BUILD)/gpu_probe $(BUILD)/attention_bench: $(BUILD)/%: tests/gpu/%.c $(BUILD)/libboost.a $(HEADERS)
	$(CC) $(CFLAGS) $(if $(GPU_CUDA),-DBOOST_CUDA) $(PKG_CFLAGS) $< $(BUILD)/libboost.a $(LDLIBS) -o $@
