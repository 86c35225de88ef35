# boost-c — build, test, run experiments.  `make help` lists the targets.
#
# Sources are discovered by wildcard: every src/<concern>/*.c and src/<concern>/<part>/*.c
# (the back ends: src/backend/cpu/) is part of the engine library, every src/tools/<name>.c is a binary build/<name>, every tests/test_<x>.c
# is a test binary build/test_<x>. Adding a file needs no Makefile edit.

CC       := mpicc
# The CPU the binaries are built for: this machine's (-march=native) unless they are meant to be
# copied. PORTABLE=1 (the bundle, a login node building for compute nodes of another CPU
# generation) targets x86-64-v3 (AVX2 + FMA: Haswell, Zen 1 and later) or armv8.2-a; the
# GEMMs are unaffected (OpenBLAS and oneDNN pick their kernels at run time), the CPU attention
# uses its AVX2 kernels (the AVX-512 ones are compiled in only for an AVX-512 target).
PORTABLE ?= 0
portable_march = $(if $(filter aarch64 arm64,$(shell uname -m)),armv8.2-a,x86-64-v3)
OPT      ?= -O3 -march=$(if $(filter 1,$(PORTABLE)),$(portable_march),native)
# Warnings are errors in the project's own CI and developer builds (WERROR=1: .ci/run sets it,
# a developer exports it), never in a researcher's build, whose newer compiler may warn about
# what ours does not (docs/architecture.md).
WERROR   ?= 0
CFLAGS   ?= $(OPT) -std=c11 -D_GNU_SOURCE -fopenmp -fno-math-errno -Wall -Wextra -Wno-unused-parameter -g
override CFLAGS += $(if $(filter 1,$(WERROR)),-Werror)
# pkg-config is asked lazily, the first time a recipe needs it: by then $(DEPS_STAMP) has
# installed the packages (a ':=' here ran before the install on a fresh machine and the
# first build failed with "hdf5.h: No such file"). The $(eval) memoises the answer.
PKG_MODULES := openblas libfyaml sqlite3 hdf5
PKG_CFLAGS = $(eval PKG_CFLAGS := $$(shell pkg-config --cflags $(PKG_MODULES)))$(PKG_CFLAGS)
# oneDNN (libdnnl-dev; Debian ships no .pc for it): the CPU back end's bf16 GEMMs.
PKG_LIBS   = $(eval PKG_LIBS := $$(shell pkg-config --libs $(PKG_MODULES)) -ldnnl)$(PKG_LIBS)
LDLIBS   = $(PKG_LIBS) -lm
BUILD    := build
PYTHON   := /usr/bin/python3

LIB_SRC  := $(filter-out src/tools/%,$(wildcard src/*/*.c src/*/*/*.c))
LIB_OBJ  := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(LIB_SRC))
TOOLS    := $(patsubst src/tools/%.c,$(BUILD)/%,$(wildcard src/tools/*.c))
TESTS    := $(patsubst tests/%.c,$(BUILD)/%,$(wildcard tests/test_*.c))
HEADERS  := $(wildcard src/*/*.h src/*/*/*.h) $(wildcard tests/*.h)
DEPS_STAMP := $(BUILD)/.deps-ok
FLAGS_STAMP := $(BUILD)/obj/.flags   # (below: what it holds)

EXP      ?= quickstart

# `make` alone builds everything (mk/gpu.mk, included first, defines targets of its own).
.DEFAULT_GOAL := all

# The GPU run path: NCCL back end, placement, gpu-check, gpu-bundle (mk/gpu.mk).
include mk/gpu.mk

# User variables (EXP, VARIANT, SET, ...) reach the shell as single-quoted words of their
# RAW text ($(value ...): make does not expand them either), so no value can run a
# command: `make exp 'EXP=$$(touch x)'` names an experiment called "$$(touch x)".
shq  = '$(subst ','\'',$(1))'
qvar = $(call shq,$(value $(1)))
# A switch variable (RESUME=1, STEPS=1, ...): 1 turns it on, 0 or unset leaves it off, and
# anything else stops make with the variable named, never a silently ignored value.
flag = $(if $(filter-out 0 1,$(value $(1))),$(error $(1)=$(value $(1)): expected 1 or 0 (or leave it unset)),$(filter 1,$(value $(1))))

# The one check of the user variables, before any recipe (and so any shell) sees them: a
# line break cannot be quoted into one recipe line (make would cut the command there and
# the shell report a syntax error), so a variable holding one stops make here, naming it.
define nl


endef
USER_VARS := EXP VARIANT SET REPEAT LAUNCH RESUME DRY_RUN SUMMARY MEASURE_PEAK SIMULATE HARDWARE \
             LAUNCHER LAUNCHER_ARGS HOSTFILE ALLOW_CHANGE RUNS DB FORMAT STEPS VERDICTS ONCE FIG_DIR X SMOOTH PRESET LINEAR \
             ARGS BENCH_ARGS TORCH_PYTHON TORCH_ARGS BENCH_COMM_ARGS BENCH_ATTENTION_ARGS TRACKED
$(foreach v,$(USER_VARS),$(if $(findstring $(nl),$(value $(v))),$(error $(v)='$(subst $(nl),\n,$(value $(v)))' \
  holds a line break; each make variable is one line (words separated by spaces), e.g. make exp EXP=quickstart \
  LAUNCHER="srun --mpi=pmix")))

.PHONY: all deps test exp info bench help clean
all: $(TOOLS) $(TESTS)

help:
	@echo "make deps            install missing Debian packages (as root) or print the apt-get line"
	@echo "make                 build the engine, tools and tests into build/"
	@echo "make test            build and run the whole test suite"
	@echo "make exp EXP=name    run experiments/<name>.yaml as one launch (default: quickstart);"
	@echo "                     VARIANT=v  SET=\"k=v ...\"  REPEAT=n (interleaved repeats)  DRY_RUN=1"
	@echo "make exp EXP=name RESUME=1 [LAUNCH=id] [ALLOW_CHANGE=\"key ...\"]   continue a launch (interrupted or failed"
	@echo "                     runs); ALLOW_CHANGE: keys whose change of a run's meaning the resume may make"
	@echo "make exp EXP=name SUMMARY=1 [LAUNCH=id]  the comparison table of a launch (default: the latest)"
	@echo "make exp EXP=name SIMULATE=1 [HARDWARE=profile]  every variant priced by build/simulate (default"
	@echo "                     profile a100-80gb-node4; cpu-local prices fp32 runs on this machine)"
	@echo "make exp ... MEASURE_PEAK=1   measure this machine's sgemm peak again (default: the stored one, host_peaks)"
	@echo "make exp ... LAUNCHER=\"srun --mpi=pmix\" LAUNCHER_ARGS=\"...\" HOSTFILE=hosts   how multi-rank runs start (default:"
	@echo "                     srun inside a Slurm allocation, else mpirun; --oversubscribe only beyond the slots)"
	@echo "make info PRESET=cola-60m LINEAR=cola   parameter count and FLOPs per token"
	@echo "make bench           dense vs CoLA tokens/s and MFU at the CoLA-60M shape (CPU), paired with PyTorch (REPEAT=3;"
	@echo "                     TORCH_PYTHON=venv/bin/python [TORCH_ARGS=--compile]: a PyTorch 2 venv as the peer)"
	@echo "make bench-bf16      CPU bf16 vs fp32: the step's GEMMs per shape, then the CoLA step interleaved (REPEAT=3)"
	@echo "make bench-scaling   tokens/s, MFU and memory against size, sequence length, threads and tp"
	@echo "make bench-comm      per-layer TP communication: 7B by accounting, small model measured"
	@echo "make bench-attention CPU attention forward/backward GFLOP/s and % of the sgemm peak, s 256-2048, hd 64"
	@echo "make figures EXP=x [LAUNCH=id] [X=step|tokens|time] [SMOOTH=n]   loss curves, training curves and ablation"
	@echo "                     panels of a launch of x: analysis/figures/<x>_L<id>_*.png (a simulated launch: its step"
	@echo "                     split); LAUNCH=\"2 3\" or RUNS=\"7 9\": several launches or runs overlaid"
	@echo "make compare [LAUNCH=\"5 6\"] [RUNS=\"7 9\"] [FORMAT=csv|json] [STEPS=1|VERDICTS=1]   launches or runs side by"
	@echo "                     side, the configuration keys that differ as columns, and whether each variant's step time"
	@echo "                     differs beyond the runs' noise (default: the latest two launches of EXP)"
	@echo "make watch [EXP=x | LAUNCH=id] [ONCE=1]   every run of a running launch: step, loss, ETA of the launch"
	@echo "build/sample CHECKPOINT [--prompt TEXT] [--temperature T]   text from a checkpoint (build/sample --help)"
	@echo "make reproduce [HARDWARE=profile] [TRACKED=1]   the paper's figures and tables from the performance model,"
	@echo "                     with bands: build/reproduction/REPORT.md, PNG + CSV (TRACKED=1: analysis/reproduction)"
	@echo "make loss-parity     TP vs DP loss curves by real CPU training (build/reproduction/loss_parity.*, ~3 min)"
	@echo "make validate-cpu [REPEAT=n] [TRACKED=1]   predicted vs measured step times, one pinned rank per core (TRACKED=1:"
	@echo "                     analysis/reproduction/validation_cpu.* and REPORT.md's CPU section from this run)"
	@echo "make selftest [OUT_DIR=dir]   the node self-test on a GPU machine, at most 5 minutes (docs/gpu.md)"
	@echo "make gpu-check [OUT_DIR=dir]  the device check with throughput figures, at most 7 minutes (docs/gpu.md)"
	@echo "make gpu-libs        where the GPU build finds CUDA, cuDNN, NCCL, nvrtc and MPI"
	@echo "make gpu-bundle      everything a GPU node needs but its driver: build/gpu-bundle(.tar.gz) (docs/gpu.md)"
	@echo "make bundle-check    the bundle in a bare Debian 12 root (root, debootstrap; minutes)"
	@echo "make wheel-build-check   the GPU build against cuDNN and NCCL from their pip wheels (downloads ~700 MB)"
	@echo "make ... WERROR=1    warnings as errors (CI and developers); PORTABLE=1: binaries for any x86-64-v3 CPU"
	@echo "make docs-keys       regenerate the key table in docs/configuration.md"
	@echo "make test-asan       unit tests and a tp=2 BTP run built with ASan+UBSan (build-asan/)"
	@echo "make fuzz            libFuzzer harnesses, FUZZ_SECONDS each (default 60; needs clang)"
	@echo "make probes          the hostile-input and fault probes of docs/reliability.md"
	@echo "make fresh-check     the README's two commands on a bare Debian 12 root (root, debootstrap)"
	@echo "make clean           remove build/ (runs/, checkpoints/ and analysis/figures/ are kept)"

# Packages are checked (dpkg) on every build; installed only if something is missing.
$(DEPS_STAMP): .ci/deps.sh
	@bash .ci/deps.sh
	@mkdir -p $(BUILD) && touch $@
deps:
	@bash .ci/deps.sh

# The flags stamp: the compiler, its flags and the libraries of this build folder, rewritten only
# when that text changes (the recipe always runs). Every C object and binary depends on it, so a
# folder built again with other flags (WERROR=1, PORTABLE=1, OPT=..., CUDA=0 against a CUDA
# build's -DBOOST_CUDA) recompiles everything: an object of the other flags is never kept.
$(FLAGS_STAMP): flags-check | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	@f=$(call shq,$(CC) $(CFLAGS) $(PKG_CFLAGS) $(LDLIBS)); \
	  if [ "$$(cat $@ 2>/dev/null)" != "$$f" ]; then printf '%s\n' "$$f" > $@; fi
.PHONY: flags-check
flags-check:

$(BUILD)/obj/%.o: src/%.c $(HEADERS) $(FLAGS_STAMP) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -c $< -o $@

# The run registry records the exact compiler flags of the build.
BUILD_FLAGS := $(strip $(CFLAGS))
$(BUILD)/obj/store/host.o: CFLAGS += -DBOOST_CFLAGS='"$(BUILD_FLAGS)"'


$(BUILD)/libboost.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/%: src/tools/%.c $(BUILD)/libboost.a $(HEADERS) $(FLAGS_STAMP)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) $< $(BUILD)/libboost.a $(LDLIBS) -o $@

$(BUILD)/test_%: tests/test_%.c $(BUILD)/libboost.a $(HEADERS) $(FLAGS_STAMP)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -Isrc $< $(BUILD)/libboost.a $(LDLIBS) -o $@

test: all
	@bash tests/run.sh

# make exp EXP=name [VARIANT=v] [SET="k=v k2=v2"] [REPEAT=n] [DRY_RUN=1]   a new launch
#          EXP=name SIMULATE=1 [HARDWARE=profile] [VARIANT=v] [SET=...]   every variant (on-demand
#                   ones too) priced by build/simulate on experiments/hardware/<profile>.yaml
#                   (default a100-80gb-node4) instead of trained: runs of kind `simulated`
#          EXP=name RESUME=1 [LAUNCH=id] [SET=...] [ALLOW_CHANGE="key ..."]   continue a launch (the latest
#                   by default); ALLOW_CHANGE: keys a resumed run may change although that changes its meaning
#          EXP=name SUMMARY=1 [LAUNCH=id]            the comparison table of a launch
#          ... LAUNCHER="srun --mpi=pmix" LAUNCHER_ARGS="--map-by ppr:4:node -x NCCL_DEBUG" HOSTFILE=hosts
#                   how the ranks start (each word its own argument, no shell; default: srun inside
#                   a Slurm allocation, else mpirun)
# exec: make's child is exp itself, so TERM to make (which make passes to its child) stops
# the run as TERM to build/exp does; exp then hands make the signal, so the shell sees exp's
# 128+N (make would turn any exit code into its own 2).
exp: all
	@export BOOST_EXP_UNDER_MAKE=1; exec $(BUILD)/exp $(call qvar,EXP) $(if $(value VARIANT),--variant $(call qvar,VARIANT)) \
	  $(if $(call flag,RESUME),--resume) $(if $(call flag,DRY_RUN),--dry-run) \
	  $(if $(call flag,SUMMARY),--summary) $(if $(call flag,MEASURE_PEAK),--measure-peak) \
	  $(if $(call flag,SIMULATE),--simulate $(if $(value HARDWARE),$(call qvar,HARDWARE),a100-80gb-node4)) \
	  $(if $(value REPEAT),--repeat $(call qvar,REPEAT)) $(if $(value LAUNCH),--launch $(call qvar,LAUNCH)) \
	  $(foreach s,$(value SET),--set $(call shq,$(s))) $(foreach k,$(value ALLOW_CHANGE),--allow-change $(call shq,$(k))) \
	  $(foreach w,$(value LAUNCHER),--launcher $(call shq,$(w))) $(foreach w,$(value LAUNCHER_ARGS),--launcher-arg $(call shq,$(w))) \
	  $(if $(value HOSTFILE),--hostfile $(call qvar,HOSTFILE))

info: all
	$(BUILD)/info $(if $(value PRESET),--preset $(call qvar,PRESET)) $(if $(value LINEAR),--linear $(call qvar,LINEAR)) $(foreach a,$(value ARGS),$(call shq,$(a)))

# Throughput: build/bench (C engine) and the same step in PyTorch, interleaved E P E P ...
# REPEAT times (medians, min-max, ratio of medians, load and sgemm peak before and after),
# then the engine's per-op profile. BENCH_ARGS is passed to both (docs/benchmarks.md). Both
# run with passive OpenMP waiting, the engine's own setting (src/core/env.h) and PyTorch's
# best on this machine. TORCH_PYTHON=path picks the Python whose PyTorch is measured (a venv
# with PyTorch 2 from PyPI: scaled_dot_product_attention, fused AdamW, MKL), TORCH_ARGS adds
# torch_bench.py options (TORCH_ARGS=--compile).
BENCH_ARGS ?= --preset cola-60m --seq 256 --batch 4 --steps 6 --warmup 2
# REPEAT (default 3 here; `make exp` runs once unless it is set) is passed as raw text.
bench_repeat = $(if $(value REPEAT),$(call qvar,REPEAT),3)
bench: $(BUILD)/bench
	@bash .ci/deps.sh --bench
	$(PYTHON) analysis/bench_paired.py --repeat $(bench_repeat) --profile $(if $(value TORCH_PYTHON),--torch-python $(call qvar,TORCH_PYTHON)) $(if $(value TORCH_ARGS),--torch-args $(call qvar,TORCH_ARGS)) -- $(foreach a,$(value BENCH_ARGS),$(call shq,$(a)))

# CPU bf16 against fp32 (docs/cpu-bf16.md): the step's GEMMs per shape (build/bench_gemm --bf16),
# then the CoLA step at both precisions interleaved fp32 bf16 ... REPEAT times (REPEAT <= 8)
# in one process, one table. BENCH_ARGS is passed to build/bench.
.PHONY: bench-bf16
bench-bf16: $(BUILD)/bench $(BUILD)/bench_gemm
	$(BUILD)/bench_gemm --bf16
	@n=$(bench_repeat); list=; for i in $$(seq "$$n"); do list="$$list$${list:+,}fp32,bf16"; done; \
	  echo "$(BUILD)/bench --linears cola --no-profile --no-switches --precision $$list $(value BENCH_ARGS)"; \
	  $(BUILD)/bench --linears cola --no-profile --no-switches --precision "$$list" $(foreach a,$(value BENCH_ARGS),$(call shq,$(a)))

# How cost grows with the work: size, sequence length, threads, tp (docs/benchmarks.md).
bench-scaling: all
	$(PYTHON) analysis/bench_scaling.py

# Figures of EXP from runs/boost.db, from the runs of one launch (the latest, or LAUNCH=id),
# into analysis/figures/<EXP>_L<launch>_<kind>.png (each launch its own files): loss curves
# with their differences and the training curves (loss, lr, grad norm, step time; X=step|
# tokens|time, SMOOTH=N steps), and the ablation panels (step time compute/comm with spread,
# collective calls, bytes per layer and embedding/head, memory, loss parity); a simulated
# launch: its modeled step split and memory (_split.png), no loss.
.PHONY: figures bench-comm bench-scaling docs-keys reproduce validate-cpu loss-parity
# What a figure shows: EXP's latest launch, LAUNCH="2 3" (one or several launches; EXP may
# be left out) or RUNS="7 9" (runs named one by one); DB=, FIG_DIR= (exit 2 when a file).
fig_select = $(if $(or $(filter command line environment,$(origin EXP)),$(if $(or $(value LAUNCH),$(value RUNS)),,1)),$(call qvar,EXP)) \
  --db $(if $(value DB),$(call qvar,DB),runs/boost.db) --out $(if $(value FIG_DIR),$(call qvar,FIG_DIR),analysis/figures) \
  $(foreach l,$(value LAUNCH),--launch $(call shq,$(l))) $(foreach r,$(value RUNS),--run $(call shq,$(r)))
figures:
	$(PYTHON) analysis/plot_losses.py $(fig_select) --skip-simulated $(if $(value X),--x $(call qvar,X)) $(if $(value SMOOTH),--smooth $(call qvar,SMOOTH))
	$(PYTHON) analysis/plot_ablation.py $(fig_select)

# Several launches or runs side by side (build/exp --compare): LAUNCH="5 6", RUNS="7 9", or
# neither: the latest two launches of EXP; FORMAT=csv|json exports, STEPS=1 the step series
# (CSV unless FORMAT=json), VERDICTS=1 only the timing verdicts; DB=path another run database
# (default: EXP's run.db).
.PHONY: compare
compare: $(BUILD)/exp
	@$(BUILD)/exp --compare $(if $(or $(value LAUNCH),$(value RUNS)),,$(call qvar,EXP)) \
	  $(foreach l,$(value LAUNCH),--launch $(call shq,$(l))) $(foreach r,$(value RUNS),--run $(call shq,$(r))) \
	  $(if $(value DB),--db $(call qvar,DB)) $(if $(value FORMAT),--format $(call qvar,FORMAT)) \
	  $(if $(call flag,STEPS),--steps) $(if $(call flag,VERDICTS),--verdicts)

# The runs of a launch while it trains (build/watch): step, loss, ETA of the whole launch,
# from the database, read-only. EXP=name (its latest launch) or LAUNCH=id; DB=path; ONCE=1.
.PHONY: watch
watch: $(BUILD)/watch
	@$(BUILD)/watch $(if $(value LAUNCH),,$(call qvar,EXP)) $(if $(value LAUNCH),--launch $(call qvar,LAUNCH)) \
	  $(if $(value DB),--db $(call qvar,DB)) $(if $(call flag,ONCE),--once)

# Per-layer TP communication of FullRank-TP, Vanilla-TP and BTP: at the paper's 7B shape by
# accounting (no math), then measured on a small model at tp = 2 and 4, the schemes
# interleaved REPEAT times (docs/benchmarks.md).
bench-comm: all
	$(BUILD)/bench_comm $(foreach a,$(value BENCH_COMM_ARGS),$(call shq,$(a)))
	$(PYTHON) analysis/bench_comm_measured.py --repeat $(bench_repeat)

# The CPU fp32 attention kernels: forward and backward GFLOP/s and % of the sgemm peak of the
# same run at s 256-2048, head dim 64 (BENCH_ATTENTION_ARGS: build/bench_attention --help).
.PHONY: bench-attention
bench-attention: $(BUILD)/bench_attention
	$(BUILD)/bench_attention $(foreach a,$(value BENCH_ATTENTION_ARGS),$(call shq,$(a)))

# The BOOST paper's figures and tables from the performance model (build/simulate on the paper
# recipes, HARDWARE= another profile), the exact accounting and the CPU validation table when
# it exists: PNG + CSV per figure and REPORT.md in build/reproduction (not tracked; TRACKED=1
# writes the tracked copy analysis/reproduction), bands over the profile's chosen constants.
reproduce: all
	$(PYTHON) analysis/reproduce.py $(if $(value HARDWARE),--hardware $(call qvar,HARDWARE)) $(if $(call flag,TRACKED),--tracked)

# The model's credential: predicted vs measured step time of every ablation recipe at tp 1 and
# 2 (one pinned single-thread rank per core) on this machine, calibrated in the same session (REPEAT=n).
validate-cpu: all
	$(PYTHON) analysis/validate_cpu.py $(if $(value REPEAT),--repeat $(call qvar,REPEAT)) $(if $(filter 1,$(value TRACKED)),--tracked)

# The TP-vs-DP loss-parity curve measured by real CPU training (tp-parity.yaml: tp 2 x dp 1
# against tp 1 x dp 2): build/reproduction/loss_parity.png/.csv/.md, which make reproduce includes.
loss-parity: all
	$(PYTHON) analysis/loss_parity.py

# Regenerate the key table of docs/configuration.md from the schema.
docs-keys: all
	@awk -v keys="$$($(BUILD)/info --keys-markdown)" \
	  '/<!-- keys:begin/ {print; print keys; skip=1; next} /<!-- keys:end/ {skip=0} !skip' \
	  docs/configuration.md > $(BUILD)/configuration.md && mv $(BUILD)/configuration.md docs/configuration.md

clean:
	rm -rf $(BUILD)

include mk/cuda.mk   # the CUDA back end: built when nvcc is found, CUDA=0 skips it

# ==== hardening: sanitizers, fuzzing, a fresh machine ===========================================
# Not part of `make test` or of the default build. docs/reliability.md says what they prove.
.PHONY: test-asan fuzz fresh-check probes

# make test-asan: the engine, tools and tests with AddressSanitizer + UndefinedBehaviorSanitizer
# in build-asan/ (without the CUDA back end: it cannot run here, and `make cuda-emu-test` runs its
# sources under ASan on the CPU), then the C unit tests and a tp=2 BTP training run (every switch
# on) under them.
ASAN_BUILD := build-asan
ASAN_OPT := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined -Wno-maybe-uninitialized
test-asan:
	@$(MAKE) --no-print-directory BUILD=$(ASAN_BUILD) OPT='$(ASAN_OPT)' CUDA=0 all
	@bash tools/test-asan.sh $(ASAN_BUILD)

# make fuzz [FUZZ_SECONDS=60] [FUZZERS="manifest shard tokenizer checkpoint"]: libFuzzer
# harnesses (fuzz/) built with clang + ASan/UBSan into build-fuzz/, each replaying its seed
# corpus and regressions and then searching for FUZZ_SECONDS. A crash stops with the input
# saved as build-fuzz/crash-<harness>-*: add it to fuzz/regressions/<harness>/ with the fix.
FUZZ_SECONDS ?= 60
FUZZERS ?= manifest shard tokenizer checkpoint
FUZZ_BUILD := build-fuzz
FUZZ_SRC := $(wildcard src/core/*.c src/config/*.c src/data/*.c) src/store/checkpoint.c src/store/util.c \
            src/model/state.c src/model/params.c src/model/kind.c $(wildcard src/model/kind_*.c) \
            src/model/linear.c src/model/walk.c src/model/flops.c src/model/scratch.c \
            src/backend/ops.c src/backend/backend.c $(wildcard src/parallel/comm*.c) src/parallel/grid.c
FUZZ_OBJ := $(patsubst src/%.c,$(FUZZ_BUILD)/obj/%.o,$(FUZZ_SRC))
FUZZ_CFLAGS := -g -O1 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Wno-unknown-pragmas \
               -fsanitize=address,undefined -fno-sanitize-recover=undefined
# (the parameter table's kinds include parallel/comm.h, hence MPI's headers and library)
FUZZ_PKG_CFLAGS = $(eval FUZZ_PKG_CFLAGS := $$(shell pkg-config --cflags hdf5 libfyaml) $$(shell mpicc --showme:compile))$(FUZZ_PKG_CFLAGS)
FUZZ_PKG_LIBS = $(eval FUZZ_PKG_LIBS := $$(shell pkg-config --libs hdf5 libfyaml) $$(shell mpicc --showme:link))$(FUZZ_PKG_LIBS)

$(FUZZ_BUILD)/.deps-ok: .ci/deps.sh
	@bash .ci/deps.sh --fuzz
	@mkdir -p $(FUZZ_BUILD) && touch $@
.SECONDARY: $(FUZZ_OBJ)
$(FUZZ_BUILD)/obj/%.o: src/%.c $(HEADERS) | $(FUZZ_BUILD)/.deps-ok
	@mkdir -p $(dir $@)
	@echo "clang (fuzz) $<"
	@clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(FUZZ_PKG_CFLAGS) -c $< -o $@
$(FUZZ_BUILD)/fuzz_%: fuzz/fuzz_%.c fuzz/fuzzlib.h $(FUZZ_OBJ) $(HEADERS)
	@echo "clang (fuzz) $@"
	@clang $(FUZZ_CFLAGS) -fsanitize=fuzzer $(FUZZ_PKG_CFLAGS) $< $(FUZZ_OBJ) $(FUZZ_PKG_LIBS) -lm -o $@
fuzz: $(patsubst %,$(FUZZ_BUILD)/fuzz_%,$(FUZZERS))
	@bash tools/fuzz.sh $(FUZZ_BUILD) $(call qvar,FUZZ_SECONDS) $(foreach f,$(FUZZERS),$(call shq,$(f)))

# make fresh-check: the README's two commands in a bare Debian 12 root (debootstrap, as root;
# 5-10 minutes). Run it before submitting any change to the build or the dependencies.
fresh-check:
	@bash tools/fresh-check.sh

# make probes: the hostile inputs and faults of docs/reliability.md, through the real binaries.
probes: all
	@bash tools/probe.sh
