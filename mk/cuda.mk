# mk/cuda.mk — the CUDA back end (src/backend/cuda/, docs/gpu.md), included at the end of
# the Makefile.
#
#   make          builds it whenever nvcc is found: $(NVCC) if set, else $(CUDA_HOME)/bin/nvcc,
#                 else nvcc on PATH; the engine binaries then link cuBLASLt, cuBLAS and cudart
#   make CUDA=0   skips it: src/backend/no_cuda.c makes backend_cuda() return NULL with the
#                 reason "built without CUDA ..."
# A CUDA build defines BOOST_CUDA for every C file (no_cuda.c then compiles to nothing, and C
# code may call the functions of src/backend/cuda/cuda_backend.h under #ifdef BOOST_CUDA).
#
# nvcc is looked for lazily, the first time a recipe or libboost.a's prerequisite list
# (secondary expansion, below) needs the answer — never while the Makefile is read (see the
# comment on pkg-config in the Makefile); the $(eval) memoises it. Switching between the two
# modes (or changing the nvcc flags) rewrites $(CUDA_MODE), which rebuilds the objects and
# so the library.

CUDA_HOME ?= /usr/local/cuda
CUDA      ?= 1
CUDA_NVCC  = $(eval CUDA_NVCC := $$(if $$(filter 0,$$(CUDA)),,$$(firstword $$(shell command -v $$(or $$(NVCC),$$(CUDA_HOME)/bin/nvcc) nvcc 2>/dev/null))))$(CUDA_NVCC)

# sm_80 (A100) and sm_90 (H100/H200) machine code, plus compute_90 PTX for later GPUs.
NVCC_GENCODE := -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
                -gencode arch=compute_90,code=compute_90
NVCC_FLAGS   ?= -O3 -std=c++20 -lineinfo
NVCC_WERROR  := -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror

CUDA_SRC      := $(wildcard src/backend/cuda/*.cu)
CUDA_OBJ      := $(patsubst src/%.cu,$(BUILD)/obj/%.o,$(CUDA_SRC))
CUDA_HDR      := $(wildcard src/backend/cuda/*.h src/backend/cuda/*.cuh) src/backend/backend.h \
                 src/core/check.h src/core/phase.h
CUDA_MODE     := $(BUILD)/obj/backend/cuda/.mode
CUDA_LIB_OBJ   = $(if $(CUDA_NVCC),$(CUDA_OBJ))
cuda_comma    := ,
CUDA_LDLIBS    = $(if $(CUDA_NVCC),-L$(CUDA_HOME)/lib64 -Wl$(cuda_comma)-rpath$(cuda_comma)$(CUDA_HOME)/lib64 -lcublasLt -lcublas -lcudart -lstdc++)
LDLIBS        += $(CUDA_LDLIBS)
override CFLAGS += $(if $(CUDA_NVCC),-DBOOST_CUDA)

# The mode stamp: rewritten only when its text changes (the recipe always runs).
$(CUDA_MODE): cuda-mode-check
	@mkdir -p $(dir $@)
	@m='$(if $(CUDA_NVCC),nvcc $(CUDA_NVCC) $(NVCC_FLAGS) $(NVCC_GENCODE),none)'; \
	  if [ "$$(cat $@ 2>/dev/null)" != "$$m" ]; then echo "$$m" > $@; fi
.PHONY: cuda-mode-check
cuda-mode-check:

$(BUILD)/obj/backend/cuda/%.o: src/backend/cuda/%.cu $(CUDA_HDR) $(CUDA_MODE)
	@mkdir -p $(dir $@)
	$(CUDA_NVCC) $(NVCC_FLAGS) $(NVCC_GENCODE) $(NVCC_WERROR) -Isrc -c $< -o $@
# Objects whose content depends on BOOST_CUDA
$(BUILD)/obj/backend/no_cuda.o $(BUILD)/test_backend_ops: $(CUDA_MODE)

.SECONDEXPANSION:
$(BUILD)/libboost.a: $$(CUDA_LIB_OBJ)

# ---- the CPU emulator of the CUDA back end (src/backend/cuda/emu/emu_cuda.h) -----------------
# `make cuda-emu-test` compiles the back end's own sources with g++ against the emulator
# (AddressSanitizer; EMU_SAN=thread for ThreadSanitizer), links them into
# build/emu/test_backend_ops_emu (tests/test_backend_ops.c, targets named emu-cuda-*) and runs
# it (about a minute on 2 cores: one OS thread per emulated CUDA thread). It checks the back
# end's logic on a machine without a GPU; it says nothing about the hardware (emu_cuda.h lists
# what it models). It is not part of `make test` (tests/run.sh runs build/test_* only).
EMU_DIR    := $(BUILD)/emu
EMU_CXX    ?= g++
EMU_SAN    ?= address
EMU_CFLAGS  = -O1 -g -std=c++20 -pthread -fsanitize=$(EMU_SAN) -fno-omit-frame-pointer \
              -Wall -Wextra -Werror -Wno-unknown-pragmas -Isrc/backend/cuda/emu/include -Isrc
EMU_HDR    := $(wildcard src/backend/cuda/emu/*.h src/backend/cuda/emu/include/*.h src/backend/cuda/emu/include/cub/*.cuh)
EMU_OBJ    := $(patsubst src/backend/cuda/%.cu,$(EMU_DIR)/%.o,$(CUDA_SRC)) $(EMU_DIR)/emu_cuda.o

$(EMU_DIR)/%.o: src/backend/cuda/%.cu $(CUDA_HDR) $(EMU_HDR)
	@mkdir -p $(dir $@)
	$(EMU_CXX) $(EMU_CFLAGS) -x c++ -c $< -o $@
$(EMU_DIR)/emu_cuda.o: src/backend/cuda/emu/emu_cuda.cpp $(EMU_HDR)
	@mkdir -p $(dir $@)
	$(EMU_CXX) $(EMU_CFLAGS) -c $< -o $@
# The emulated objects come before libboost.a, so the archive's CUDA objects are not linked.
$(EMU_DIR)/test_backend_ops_emu: tests/test_backend_ops.c $(EMU_OBJ) $(BUILD)/libboost.a $(HEADERS) src/backend/cuda/cuda_backend.h
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -DBOOST_CUDA -DBACKEND_OPS_EMU -fsanitize=$(EMU_SAN) -Isrc $< $(EMU_OBJ) $(BUILD)/libboost.a \
	  $(PKG_LIBS) -lm -lstdc++ -pthread -o $@
.PHONY: cuda-emu-test
cuda-emu-test: $(EMU_DIR)/test_backend_ops_emu
	$(EMU_DIR)/test_backend_ops_emu --cases
	bash tests/gpu/emu-attention.sh $(EMU_DIR)/test_backend_ops_emu
