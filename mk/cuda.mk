# mk/cuda.mk — the CUDA back end (src/backend/cuda/, docs/gpu.md), included at the end of
# the Makefile.
#
#   make          builds it whenever nvcc is found; the engine binaries then link cuBLASLt,
#                 cuBLAS, cudart and NCCL, and load cuDNN at run time
#   make CUDA=0   skips it: src/backend/no_cuda.c makes backend_cuda() return NULL with the
#                 reason "built without CUDA ..."
# A CUDA build defines BOOST_CUDA for every C file (no_cuda.c then compiles to nothing, and C
# code may call the functions of src/backend/cuda/cuda_backend.h under #ifdef BOOST_CUDA).
#
# Where nvcc, the toolkit's libraries, cuDNN's headers and NCCL are is decided in one place,
# mk/find-gpu-libs.sh (CUDA_HOME / CUDA_PATH, CUDNN_HOME / CUDNN_PATH, NCCL_HOME, environment
# modules, the pip wheels' nvidia/<name>/ folders; `make gpu-libs` prints what it found and
# where it looked). It is asked lazily, the first time a recipe or libboost.a's prerequisite
# list (secondary expansion, below) needs the answer — never while the Makefile is read (see
# the comment on pkg-config in the Makefile); the $(eval)s memoise it. A missing piece stops
# the build with its name, the places looked in and a hint. Switching between the two modes
# (or changing the nvcc flags or the cuDNN headers) rewrites $(CUDA_MODE), which rebuilds the
# objects and so the library.

CUDA      ?= 1
CUDA_NVCC  = $(eval CUDA_NVCC := $$(if $$(filter 0,$$(CUDA)),,$$(shell bash mk/find-gpu-libs.sh --nvcc)))$(CUDA_NVCC)
# The answer of find-gpu-libs.sh --make (NAME=value words), and one value of it
GPU_LIBS   = $(eval GPU_LIBS := $$(shell bash mk/find-gpu-libs.sh --make))$(if $(filter GPU_LIBS_ERROR=%,$(GPU_LIBS)),$(error              the GPU build stopped: see the message above (CUDA=0 builds without the GPU back end)))$(GPU_LIBS)
gpu_lib    = $(patsubst $(1)=%,%,$(filter $(1)=%,$(GPU_LIBS)))
cuda_comma    := ,
# The run path: NCCL's and cuDNN's folders (dlopen of libcudnn.so.9 searches the binary's run
# path) before the toolkit's, which may hold copies of its own: CUDNN_HOME and NCCL_HOME win.
# The bundle replaces the run path with its own (tests/gpu/make-bundle.sh).
uniq_words = $(if $(1),$(firstword $(1)) $(call uniq_words,$(filter-out $(firstword $(1)),$(1))))
gpu_rpath  = $(foreach d,$(call uniq_words,$(call gpu_lib,NCCL_LIBDIR) $(filter-out none,$(call gpu_lib,CUDNN_LIBDIR)) $(call gpu_lib,CUDA_LIBDIR)),-Wl$(cuda_comma)-rpath$(cuda_comma)$(d))

# sm_80 (A100) and sm_90 (H100/H200) machine code, plus compute_90 PTX for later GPUs.
NVCC_GENCODE := -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
                -gencode arch=compute_90,code=compute_90
NVCC_FLAGS   ?= -O3 -std=c++20 -lineinfo
# Warnings are errors in the project's CI and developer builds only (WERROR=1, docs/gpu.md):
# a researcher's newer nvcc or gcc may warn about what ours does not.
NVCC_WARN     = -Xcompiler -Wall,-Wextra $(if $(filter 1,$(WERROR)),-Werror all-warnings -Xcompiler -Werror)
NVCC_INC      = -isystem $(call gpu_lib,CUDNN_INC)

CUDA_SRC      := $(wildcard src/backend/cuda/*.cu)
CUDA_OBJ      := $(patsubst src/%.cu,$(BUILD)/obj/%.o,$(CUDA_SRC))
CUDA_HDR      := $(wildcard src/backend/cuda/*.h src/backend/cuda/*.cuh) src/backend/backend.h \
                 src/core/check.h src/core/phase.h
CUDA_MODE     := $(BUILD)/obj/backend/cuda/.mode
CUDA_LIB_OBJ   = $(if $(CUDA_NVCC),$(CUDA_OBJ))
CUDA_LDLIBS    = $(if $(CUDA_NVCC),-L$(call gpu_lib,CUDA_LIBDIR) $(gpu_rpath) $(subst $(cuda_comma), ,$(call gpu_lib,CUDA_LINK)) -lstdc++ -ldl)
LDLIBS        += $(CUDA_LDLIBS)
override CFLAGS += $(if $(CUDA_NVCC),-DBOOST_CUDA)

# The mode stamp: rewritten only when its text changes (the recipe always runs).
$(CUDA_MODE): cuda-mode-check
	@mkdir -p $(dir $@)
	@m='$(if $(CUDA_NVCC),nvcc $(CUDA_NVCC) $(NVCC_FLAGS) $(NVCC_GENCODE) $(NVCC_INC),none)'; \
	  if [ "$$(cat $@ 2>/dev/null)" != "$$m" ]; then echo "$$m" > $@; fi
.PHONY: cuda-mode-check
cuda-mode-check:

$(BUILD)/obj/backend/cuda/%.o: src/backend/cuda/%.cu $(CUDA_HDR) $(CUDA_MODE)
	@mkdir -p $(dir $@)
	$(CUDA_NVCC) $(NVCC_FLAGS) $(NVCC_GENCODE) $(NVCC_WARN) $(NVCC_INC) -Isrc -c $< -o $@
# (The C objects' -DBOOST_CUDA is in the flags stamp of the Makefile, FLAGS_STAMP: a build switched
# between CUDA=0 and a CUDA build recompiles them, never mixing the two modes.)

.SECONDEXPANSION:
$(BUILD)/libboost.a: $$(CUDA_LIB_OBJ)

# ---- the CPU emulator of the CUDA back end (src/backend/cuda/emu/emu_cuda.h) -----------------
# `make cuda-emu-test` compiles the back end's own sources with g++ against the emulator
# (AddressSanitizer; EMU_SAN=thread for ThreadSanitizer), links them into
# build/emu/test_backend_ops_emu (tests/test_backend_ops.c, targets named emu-cuda-*) and runs
# it (about a minute on 2 cores: one OS thread per emulated CUDA thread), after the
# emulator's own checks (build/emu/test_emu_cuda) and before the multi-rank training runs of
# tests/emu/cuda_emu_train.sh (build/emu/train against build/train; a few minutes). It checks
# the back end's logic on a machine without a GPU; it says nothing about the hardware
# (emu_cuda.h lists what it models). It is not part of `make test` (tests/run.sh runs
# build/test_* only). `make cuda-emu-test EMU_SAN=thread` is the ThreadSanitizer gate.
EMU_DIR    := $(BUILD)/emu
EMU_CXX    ?= g++
EMU_SAN    ?= address
EMU_CFLAGS  = -O1 -g -std=c++20 -pthread -fsanitize=$(EMU_SAN) -fno-omit-frame-pointer \
              -Wall -Wextra -Werror -Wno-unknown-pragmas -Isrc/backend/cuda/emu/include -Isrc
EMU_HDR    := $(wildcard src/backend/cuda/emu/*.h src/backend/cuda/emu/include/*.h src/backend/cuda/emu/include/cub/*.cuh)
EMU_OBJ    := $(patsubst src/backend/cuda/%.cu,$(EMU_DIR)/%.o,$(CUDA_SRC)) $(EMU_DIR)/emu_cuda.o
# The emulator's mode stamp: changing EMU_SAN (or the compiler or its flags) rewrites it,
# which rebuilds every emulated object and so the emulated binaries.
EMU_MODE   := $(EMU_DIR)/.mode
$(EMU_MODE): cuda-mode-check
	@mkdir -p $(dir $@)
	@m='$(EMU_CXX) $(EMU_CFLAGS) | $(CC) $(CFLAGS)'; \
	  if [ "$$(cat $@ 2>/dev/null)" != "$$m" ]; then echo "$$m" > $@; fi
# ThreadSanitizer (EMU_SAN=thread): the CPU reference's OpenMP regions race in TSan's eyes
# because libgomp's barriers are not instrumented; tests/emu/tsan.supp suppresses exactly
# the reports with a libgomp frame (and nothing of the emulator or the back end).
EMU_RUN_ENV = $(if $(filter thread,$(EMU_SAN)),TSAN_OPTIONS="suppressions=$(CURDIR)/tests/emu/tsan.supp halt_on_error=1 exitcode=66 $(TSAN_OPTIONS)")

$(EMU_DIR)/%.o: src/backend/cuda/%.cu $(CUDA_HDR) $(EMU_HDR) $(EMU_MODE)
	@mkdir -p $(dir $@)
	$(EMU_CXX) $(EMU_CFLAGS) -x c++ -c $< -o $@
$(EMU_DIR)/emu_cuda.o: src/backend/cuda/emu/emu_cuda.cpp $(EMU_HDR) $(EMU_MODE)
	@mkdir -p $(dir $@)
	$(EMU_CXX) $(EMU_CFLAGS) -c $< -o $@
# The emulated objects come before libboost.a, so the archive's CUDA objects are not linked.
$(EMU_DIR)/test_backend_ops_emu: tests/test_backend_ops.c $(EMU_OBJ) $(BUILD)/libboost.a $(HEADERS) src/backend/cuda/cuda_backend.h
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -DBOOST_CUDA -DBACKEND_OPS_EMU -fsanitize=$(EMU_SAN) -Isrc $< $(EMU_OBJ) $(BUILD)/libboost.a \
	  $(PKG_LIBS) -lm -lstdc++ -pthread -o $@
# build/emu/train: the real train binary with the CUDA back end on the emulator, for the
# multi-rank runs of tests/emu/cuda_emu_train.sh (run.device: cuda against the CPU, step by
# step). The engine's C files that call CUDA are compiled against the emulator's runtime
# (C linkage: emu/emu_runtime.h); the emulator has no NCCL, so comm_nccl.c is compiled in
# its no-NCCL form and the ranks take the MPI path with host staging (gpu_setup.c says so),
# which is the path that stages device buffers through cudaMemcpy and therefore the one on
# which a host pointer in a device collective is refused by the emulator's copy check.
EMU_C_OBJ := $(EMU_DIR)/c/gpu_setup.o $(EMU_DIR)/c/comm_nccl.o
$(EMU_DIR)/c/%.o: src/parallel/%.c $(HEADERS) $(EMU_HDR) $(EMU_MODE)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -DBOOST_CUDA -DBOOST_CUDA_EMU -fsanitize=$(EMU_SAN) -Isrc/backend/cuda/emu/include -c $< -o $@
$(EMU_DIR)/train: src/tools/train.c $(EMU_OBJ) $(EMU_C_OBJ) $(BUILD)/libboost.a $(HEADERS)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -fsanitize=$(EMU_SAN) -Isrc $< $(EMU_OBJ) $(EMU_C_OBJ) $(BUILD)/libboost.a \
	  $(PKG_LIBS) -lm -lstdc++ -pthread -o $@

# build/emu/train_nccl: the same with the emulator's NCCL stand-in (emu/emu_nccl.cpp, shared
# memory between the emulated ranks): comm_nccl.c compiled in its NCCL form against the
# emulator's nccl.h and cuda_runtime.h, so the NCCL code path runs on the emulator and a host
# pointer in a device collective is refused at the call, as by NCCL (cuda_emu_train.sh runs it
# with EMU_GPU_PER_RANK=1, one emulated GPU per process, and BOOST_COMM=nccl).
EMU_NCCL_OBJ := $(EMU_DIR)/emu_nccl.o
$(EMU_DIR)/emu_nccl.o: src/backend/cuda/emu/emu_nccl.cpp $(EMU_HDR) $(EMU_MODE)
	@mkdir -p $(dir $@)
	$(EMU_CXX) $(EMU_CFLAGS) -c $< -o $@
$(EMU_DIR)/c/comm_nccl_emu_nccl.o: src/parallel/comm_nccl.c $(HEADERS) $(EMU_HDR) $(EMU_MODE)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -DBOOST_CUDA -fsanitize=$(EMU_SAN) -Isrc/backend/cuda/emu/include -c $< -o $@
$(EMU_DIR)/train_nccl: src/tools/train.c $(EMU_OBJ) $(EMU_NCCL_OBJ) $(EMU_DIR)/c/gpu_setup.o $(EMU_DIR)/c/comm_nccl_emu_nccl.o $(BUILD)/libboost.a $(HEADERS)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -fsanitize=$(EMU_SAN) -Isrc $< $(EMU_OBJ) $(EMU_NCCL_OBJ) $(EMU_DIR)/c/gpu_setup.o \
	  $(EMU_DIR)/c/comm_nccl_emu_nccl.o $(BUILD)/libboost.a $(PKG_LIBS) -lm -lstdc++ -lrt -pthread -o $@

# The emulator's own checks (tests/emu/test_emu_cuda.cpp): wrong address spaces refused,
# asynchronous work asynchronous; and its NCCL stand-in's (tests/emu/test_emu_nccl.cpp, three
# forked ranks).
$(EMU_DIR)/test_emu_cuda: tests/emu/test_emu_cuda.cpp $(EMU_DIR)/emu_cuda.o $(EMU_HDR)
	$(EMU_CXX) $(EMU_CFLAGS) $< $(EMU_DIR)/emu_cuda.o -o $@
# The GPU peak for MFU (backend_cuda_peak_gflops) on the emulated back end
$(EMU_DIR)/test_emu_peak: tests/emu/test_emu_peak.c $(EMU_OBJ) $(BUILD)/libboost.a $(HEADERS) src/backend/cuda/cuda_backend.h
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -DBOOST_CUDA -fsanitize=$(EMU_SAN) -Isrc $< $(EMU_OBJ) $(BUILD)/libboost.a \
	  $(PKG_LIBS) -lm -lstdc++ -pthread -o $@
# cuda_gemm_into (D != C, the bias epilogue, the fallback) against a double-precision loop
$(EMU_DIR)/test_emu_gemm_into.o: tests/emu/test_emu_gemm_into.cpp $(CUDA_HDR) $(EMU_HDR) $(EMU_MODE)
	$(EMU_CXX) $(EMU_CFLAGS) -c $< -o $@
$(EMU_DIR)/test_emu_gemm_into: $(EMU_DIR)/test_emu_gemm_into.o $(EMU_OBJ) $(BUILD)/libboost.a
	$(CC) $(CFLAGS) -fsanitize=$(EMU_SAN) $< $(EMU_OBJ) $(BUILD)/libboost.a $(PKG_LIBS) -lm -lstdc++ -pthread -o $@
$(EMU_DIR)/test_emu_nccl: tests/emu/test_emu_nccl.cpp $(EMU_DIR)/emu_cuda.o $(EMU_NCCL_OBJ) $(EMU_HDR)
	$(EMU_CXX) $(EMU_CFLAGS) $< $(EMU_DIR)/emu_cuda.o $(EMU_NCCL_OBJ) -lrt -o $@
.PHONY: cuda-emu-test
cuda-emu-test: $(EMU_DIR)/test_emu_cuda $(EMU_DIR)/test_emu_nccl $(EMU_DIR)/test_emu_peak $(EMU_DIR)/test_emu_gemm_into $(EMU_DIR)/test_backend_ops_emu $(EMU_DIR)/train $(EMU_DIR)/train_nccl $(BUILD)/train
	$(EMU_RUN_ENV) $(EMU_DIR)/test_emu_cuda
	$(EMU_RUN_ENV) $(EMU_DIR)/test_emu_nccl
	$(EMU_RUN_ENV) $(EMU_DIR)/test_emu_peak
	$(EMU_RUN_ENV) $(EMU_DIR)/test_emu_gemm_into
	$(EMU_RUN_ENV) $(EMU_DIR)/test_backend_ops_emu --cases
	$(EMU_RUN_ENV) bash tests/gpu/emu-attention.sh $(EMU_DIR)/test_backend_ops_emu
	@if [ "$(EMU_SAN)" = thread ]; then echo "SKIP cuda_emu_train: under ThreadSanitizer a step of the emulated train takes minutes (run without EMU_SAN=thread)"; \
	 else out=$$(bash tests/emu/cuda_emu_train.sh); echo "$$out"; ! echo "$$out" | grep -q '^FAIL'; fi
