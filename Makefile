# boost-c — build, test, run experiments.  `make help` lists the targets.
#
# Sources are discovered by wildcard: every src/<concern>/*.c is part of the engine
# library, every src/tools/<name>.c is a binary build/<name>, every tests/test_<x>.c
# is a test binary build/test_<x>. Adding a file needs no Makefile edit.

CC       := mpicc
OPT      ?= -O3 -march=native
CFLAGS   ?= $(OPT) -std=c11 -D_GNU_SOURCE -fopenmp -Wall -Wextra -Wno-unused-parameter -g
PKG_CFLAGS := $(shell pkg-config --cflags openblas libfyaml sqlite3 hdf5 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs openblas libfyaml sqlite3 hdf5 2>/dev/null)
LDLIBS   := $(PKG_LIBS) -lm
BUILD    := build
PYTHON   := /usr/bin/python3

LIB_SRC  := $(filter-out src/tools/%,$(wildcard src/*/*.c))
LIB_OBJ  := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(LIB_SRC))
TOOLS    := $(patsubst src/tools/%.c,$(BUILD)/%,$(wildcard src/tools/*.c))
TESTS    := $(patsubst tests/%.c,$(BUILD)/%,$(wildcard tests/test_*.c))
HEADERS  := $(wildcard src/*/*.h) $(wildcard tests/*.h)
DEPS_STAMP := $(BUILD)/.deps-ok

EXP      ?= quickstart

.PHONY: all deps test exp info bench help clean
all: $(TOOLS) $(TESTS)

help:
	@echo "make deps            install missing Debian packages (as root) or print the apt-get line"
	@echo "make                 build the engine, tools and tests into build/"
	@echo "make test            build and run the whole test suite"
	@echo "make exp EXP=name    run experiments/<name>.yaml (default: quickstart)"
	@echo "make info PRESET=cola-60m LINEAR=cola   parameter count and FLOPs per token"
	@echo "make bench           dense vs CoLA tokens/s and MFU at the CoLA-60M shape (CPU), vs PyTorch"
	@echo "make bench-comm      per-layer TP communication: 7B by accounting, small model measured"
	@echo "make figures EXP=x   loss curves and ablation panels of experiment x (analysis/figures/)"
	@echo "make docs-keys       regenerate the key table in docs/configuration.md"

# Packages are checked (dpkg) on every build; installed only if something is missing.
$(DEPS_STAMP): .ci/deps.sh
	@bash .ci/deps.sh
	@mkdir -p $(BUILD) && touch $@
deps:
	@bash .ci/deps.sh

$(BUILD)/obj/%.o: src/%.c $(HEADERS) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -c $< -o $@

# The run registry records the exact compiler flags of the build.
BUILD_FLAGS := $(strip $(CFLAGS))
$(BUILD)/obj/store/db.o: CFLAGS += -DBOOST_CFLAGS='"$(BUILD_FLAGS)"'


$(BUILD)/libboost.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/%: src/tools/%.c $(BUILD)/libboost.a $(HEADERS)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) $< $(BUILD)/libboost.a $(LDLIBS) -o $@

$(BUILD)/test_%: tests/test_%.c $(BUILD)/libboost.a $(HEADERS)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -Isrc $< $(BUILD)/libboost.a $(LDLIBS) -o $@

test: all
	@bash tests/run.sh

# make exp EXP=name [VARIANT=v] [RESUME=1] [DRY_RUN=1] [SET="k=v k2=v2"]
exp: all
	@OMP_WAIT_POLICY=passive $(BUILD)/exp $(EXP) $(if $(VARIANT),--variant $(VARIANT)) \
	  $(if $(filter 1,$(RESUME)),--resume) $(if $(filter 1,$(DRY_RUN)),--dry-run) \
	  $(foreach s,$(SET),--set $(s))

info: all
	$(BUILD)/info $(if $(PRESET),--preset $(PRESET)) $(if $(LINEAR),--linear $(LINEAR)) $(ARGS)

# Throughput: build/bench (C engine) then the same step in PyTorch, side by side.
# BENCH_ARGS is passed to both (docs/benchmarks.md). Both run with passive OpenMP waiting,
# the engine's own setting (src/core/env.h) and PyTorch's best on this machine.
BENCH_ARGS ?= --preset cola-60m --seq 256 --batch 4 --steps 6 --warmup 2
bench: $(BUILD)/bench
	@bash .ci/deps.sh --bench
	OMP_WAIT_POLICY=passive $(BUILD)/bench $(BENCH_ARGS) --json $(BUILD)/bench.json
	OMP_WAIT_POLICY=passive $(PYTHON) analysis/torch_bench.py $(BENCH_ARGS) --compare $(BUILD)/bench.json

# Figures of EXP from runs/boost.db: loss curves of the latest run of each variant, and the
# ablation panels (step time compute/communication, bytes moved, memory, loss parity).
.PHONY: figures bench-comm docs-keys
figures:
	$(PYTHON) analysis/plot_losses.py $(EXP) --db runs/boost.db --out analysis/figures
	$(PYTHON) analysis/plot_ablation.py $(EXP) --db runs/boost.db --out analysis/figures

# Per-layer TP communication of FullRank-TP, Vanilla-TP and BTP: at the paper's 7B shape by
# accounting (no math), then measured on a small model at tp = 2 and 4 (docs/benchmarks.md).
bench-comm: all
	$(BUILD)/bench_comm $(BENCH_COMM_ARGS)
	@bash src/tools/bench_comm_measured.sh

# Regenerate the key table of docs/configuration.md from the schema.
docs-keys: all
	@awk -v keys="$$($(BUILD)/info --keys-markdown)" \
	  '/<!-- keys:begin/ {print; print keys; skip=1; next} /<!-- keys:end/ {skip=0} !skip' \
	  docs/configuration.md > $(BUILD)/configuration.md && mv $(BUILD)/configuration.md docs/configuration.md

clean:
	rm -rf $(BUILD)
