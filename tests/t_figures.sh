#!/usr/bin/env bash
# make figures as a researcher meets it (README "Figures", issue 21): a trained launch of a
# grid experiment (long variant names), then a simulated launch of it, then the trained one
# again. Each launch gets its own files (<EXP>_L<id>_<kind>.png); the simulated one its step
# split and no loss curve (plot_losses refuses before writing anything); the first launch's
# PNGs are byte-identical after the other launch's figures; every PNG opens; the aliases of
# the grid names are the same in C (the summary table) and Python (the figures); X= and
# SMOOTH= reach the loss figure.
source "$(dirname "$0")/lib.sh"
export OMP_NUM_THREADS=1
cd "$ROOT"
if ! /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then skip figures "no matplotlib for /usr/bin/python3"; exit 0; fi
DB=$TMP/boost.db FIG=$TMP/figs
cat >"$TMP/gridfig.yaml" <<YAML
manifest_version: 1
name: gridfig
version: 1
description: a grid with long variant names
extends: $ROOT/experiments/base/tiny.yaml
train: {steps: 4, val_every: 2, warmup_steps: 1, log_every: 1}
variants: {grid: {model.linear: [cola, svd], train.weight_decay: [0.0, 0.1]}}
YAML
SETS=(--set data.cache_dir="$TMP/cache" --set run.db="$DB" --set run.checkpoint_dir="$TMP/ckpt")
if ! "$BUILD/exp" "$TMP/gridfig.yaml" "${SETS[@]}" >"$TMP/train.log" 2>&1; then fail figures_trained_launch "$(tail -3 "$TMP/train.log")"; exit 0; fi
figs() { make -s --no-print-directory figures EXP=gridfig DB="$DB" FIG_DIR="$FIG" "$@"; }

# ---- the trained launch: its own files, aliases as in the summary table -----------------
figs LAUNCH=1 >"$TMP/f1.log" 2>&1; rc=$?
if [ "$rc" -eq 0 ] && [ -s "$FIG/gridfig_L1_loss.png" ] && [ -s "$FIG/gridfig_L1_ablation.png" ]; then pass figures_files_carry_the_launch
else fail figures_files_carry_the_launch "exit $rc; $(ls "$FIG" 2>&1 | tr '\n' ' '); $(tail -2 "$TMP/f1.log")"; fi
c_alias=$(awk '$2 == "=" && $3 == "linear=cola,weight_decay=0.0" {print $1}' "$TMP/train.log")
py_alias=$(/usr/bin/python3 -c "import sys; sys.path.insert(0, 'analysis'); import plot_common as pc; print(pc.variant_alias('linear=cola,weight_decay=0.0'))")
if [ -n "$c_alias" ] && [ "$c_alias" = "$py_alias" ] && grep -q "^$py_alias " "$TMP/f1.log"; then pass "figures_aliases_match_the_table ($c_alias)"
else fail figures_aliases_match_the_table "C '$c_alias', Python '$py_alias'"; fi
# checkpoint folders (the run uids) carry the alias, not the long name
if ls "$TMP/ckpt" | grep -q "^gridfig\.$py_alias\." && ! ls "$TMP/ckpt" | grep -q "weight_decay"; then pass figures_checkpoint_folders_use_the_alias
else fail figures_checkpoint_folders_use_the_alias "$(ls "$TMP/ckpt" | tr '\n' ' ')"; fi
sum1=$(md5sum "$FIG"/gridfig_L1_*.png)

# ---- a simulated launch: its own figure kind, no loss curve, nothing else touched -------
if ! "$BUILD/exp" "$TMP/gridfig.yaml" --simulate a100-80gb-node4 --set run.db="$DB" >"$TMP/sim.log" 2>&1; then
    fail figures_simulated_launch "$(tail -3 "$TMP/sim.log")"; exit 0; fi
figs LAUNCH=2 >"$TMP/f2.log" 2>&1; rc=$?
if [ "$rc" -eq 0 ] && [ -s "$FIG/gridfig_L2_split.png" ] && [ ! -e "$FIG/gridfig_L2_loss.png" ] &&
   [ ! -e "$FIG/gridfig_L2_ablation.png" ] && grep -q "is simulated" "$TMP/f2.log"; then pass figures_simulated_launch_gets_its_split
else fail figures_simulated_launch_gets_its_split "exit $rc; $(ls "$FIG" | tr '\n' ' '); $(tail -2 "$TMP/f2.log")"; fi
expect_error figures_loss_of_a_simulated_launch_refused "nothing was trained" 2 \
    /usr/bin/python3 analysis/plot_losses.py gridfig --db "$DB" --out "$TMP/none" --launch 2
if [ ! -e "$TMP/none" ]; then pass figures_refusal_writes_nothing; else fail figures_refusal_writes_nothing "$(ls "$TMP/none")"; fi

# ---- the trained launch again: its files unchanged ---------------------------------------
if [ "$(md5sum "$FIG"/gridfig_L1_*.png)" = "$sum1" ]; then pass figures_first_launch_untouched_by_the_second
else fail figures_first_launch_untouched_by_the_second "checksums changed"; fi
figs LAUNCH=1 >"$TMP/f3.log" 2>&1; rc=$?
if [ "$rc" -eq 0 ] && [ "$(md5sum "$FIG"/gridfig_L1_*.png)" = "$sum1" ]; then pass figures_trained_again_identical
else fail figures_trained_again_identical "exit $rc: $(tail -2 "$TMP/f3.log")"; fi

# ---- X= and SMOOTH= reach the loss figure; every PNG opens ---------------------------------
figs LAUNCH=1 FIG_DIR="$TMP/figs_time" X=time SMOOTH=2 >"$TMP/f4.log" 2>&1; rc=$?
if [ "$rc" -eq 0 ] && [ -s "$TMP/figs_time/gridfig_L1_loss.png" ] && ! cmp -s "$TMP/figs_time/gridfig_L1_loss.png" "$FIG/gridfig_L1_loss.png"
then pass figures_x_and_smooth_pass_through; else fail figures_x_and_smooth_pass_through "exit $rc: $(tail -2 "$TMP/f4.log")"; fi
expect_error figures_bad_smooth "expected a number of steps" 2 \
    /usr/bin/python3 analysis/plot_losses.py gridfig --db "$DB" --out "$TMP/none" --launch 1 --smooth 0
bad=$(/usr/bin/python3 - "$FIG" "$TMP/figs_time" <<'PY'
import glob, sys
import matplotlib.image as mi
for d in sys.argv[1:]:
    for p in sorted(glob.glob(d + "/*.png")):
        a = mi.imread(p)
        if a.ndim != 3 or a.shape[0] < 300 or a.shape[1] < 300:
            print(p, a.shape)
PY
)
n=$(ls "$FIG"/*.png "$TMP/figs_time"/*.png | wc -l)
if [ -z "$bad" ] && [ "$n" -eq 5 ]; then pass "figures_every_png_opens ($n)"; else fail figures_every_png_opens "$n files; $bad"; fi
