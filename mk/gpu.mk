# mk/gpu.mk — the GPU run path: the NCCL communication back end and the GPU placement
# (src/parallel/comm_nccl.c, gpu_setup.c), the node self-test, the device check and the bundle
# for a machine without the -dev packages (docs/gpu.md). Included by the Makefile; the CUDA
# kernels themselves are built by mk/cuda.mk, whose lazy answers from mk/find-gpu-libs.sh
# (CUDA_NVCC, gpu_lib) this file uses too: the NCCL back end talks to the CUDA back end's
# stream, so it is built with CUDA exactly when that back end is (CUDA=0 turns both off).
# Recursive (=) and read only by recipes and link lines, so nothing runs while the Makefile
# is parsed (see the pkg-config comment in the Makefile).
GPU_CUDA   = $(if $(CUDA_NVCC),1)

$(BUILD)/obj/parallel/comm_nccl.o $(BUILD)/obj/parallel/gpu_setup.o: \
    override CFLAGS += $(if $(GPU_CUDA),-DBOOST_CUDA -isystem $(call gpu_lib,CUDA_INC) -isystem $(call gpu_lib,NCCL_INC))
LDLIBS += $(if $(GPU_CUDA),-L$(call gpu_lib,NCCL_LIBDIR) $(call gpu_lib,NCCL_LINK))

.PHONY: gpu-libs selftest gpu-check gpu-bundle bundle-check wheel-build-check
# What the GPU build finds where (mk/find-gpu-libs.sh --report): nvcc, the toolkit, cuDNN,
# NCCL, nvrtc, the pip wheels, MPI.
gpu-libs:
	@bash mk/find-gpu-libs.sh --report

# The binaries the node self-test and the device check run, and nothing else: a GPU node
# needs no more than these to be built (or none: the bundle has them, docs/gpu.md).
GPU_CHECK_BINS := $(addprefix $(BUILD)/,train gpu_probe attention_bench nccl_bench h5compare test_backend_ops)
out_dir_arg = $(if $(value OUT_DIR),--out $(call qvar,OUT_DIR))

# The node self-test (at most five minutes): the device, the libraries, op and step parity
# against the CPU fp32 reference on one GPU; a tp 2 step over NCCL and NCCL's bus bandwidth on
# two or more; one screen of verdicts (tests/gpu/selftest.sh --help). OUT_DIR=dir keeps its files.
selftest: $(GPU_CHECK_BINS)
	@bash tests/gpu/selftest.sh $(out_dir_arg)

# The device check for a machine with one NVIDIA GPU (at most 7 minutes): sanitizers, op and
# step parity, both attentions, throughput against PyTorch, per-op JSON, bf16 curve, tp 2;
# results under OUT_DIR (default build/gpu-check; tests/gpu/gpu-check.sh --help).
gpu-check: $(GPU_CHECK_BINS)
	@bash tests/gpu/gpu-check.sh $(out_dir_arg)

# build/gpu-bundle/ and build/gpu-bundle.tar.zst: the binaries above and the researcher's
# (train, exp, prepare, info, sample), built PORTABLE=1 in build/bundle-obj, with every shared
# library but the NVIDIA driver's and the C/C++ runtime's, found through $$ORIGIN run paths, the
# MPI runtime, the self-test and the device check (tests/gpu/make-bundle.sh; docs/gpu.md).
BUNDLE_BINS := train exp prepare info sample gpu_probe attention_bench nccl_bench h5compare test_backend_ops test_comm_device
# SLIM=1: build/gpu-bundle-slim(.tar.xz), which leaves CUDA's own libraries to a node that has
# them (tens of MB instead of 1.5 GB; make-bundle.sh --slim).
gpu-bundle:
	@bash .ci/deps.sh --bundle
	@$(MAKE) --no-print-directory BUILD=build/bundle-obj PORTABLE=1 $(addprefix build/bundle-obj/,$(BUNDLE_BINS))
	@bash tests/gpu/make-bundle.sh $(if $(filter 1,$(SLIM)),--slim build/bundle-obj build/gpu-bundle-slim,build/bundle-obj build/gpu-bundle) $(BUNDLE_BINS)

# The bundle in a bare Debian 12 root (debootstrap; root; minutes, not part of make test): every
# library of every binary resolves inside the bundle, the binaries start, a CPU step on 2 ranks
# through the bundle's mpirun, the self-test and the device check stop at the missing device,
# and fail loudly with a CUDA library hidden (tests/gpu/bundle-check.sh).
bundle-check: gpu-bundle
	@bash tests/gpu/bundle-check.sh build/gpu-bundle

# The GPU build against cuDNN and NCCL from their pip wheels (pip download into a temporary
# folder, CUDNN_HOME and NCCL_HOME there; about 700 MB and a CUDA build; SKIP offline or without
# nvcc; WHEELS=dir for wheels already downloaded): tests/gpu/wheel-build.sh. Not part of make test.
wheel-build-check:
	@out=$$(bash tests/gpu/wheel-build.sh); echo "$$out"; ! echo "$$out" | grep -q '^FAIL'

# build/gpu_probe: the device, the driver and the GPU libraries, and whether this build can use
# them (tests/gpu/gpu_probe.c); build/attention_bench: boost-c's attention timed at one shape;
# build/nccl_bench: the all-reduce's bus bandwidth through the engine's collectives.
all: $(BUILD)/gpu_probe $(BUILD)/attention_bench $(BUILD)/nccl_bench
$(BUILD)/gpu_probe $(BUILD)/attention_bench $(BUILD)/nccl_bench: $(BUILD)/%: tests/gpu/%.c $(BUILD)/libboost.a $(HEADERS) $(FLAGS_STAMP)
	$(CC) $(CFLAGS) $(if $(GPU_CUDA),-DBOOST_CUDA -isystem $(call gpu_lib,CUDA_INC)) $(PKG_CFLAGS) $< $(BUILD)/libboost.a $(LDLIBS) -o $@
