#!/usr/bin/env bash
# make figures as a researcher meets it (README "Figures"): a trained launch of a grid
# experiment (long variant names), then a simulated launch of it, then the trained one
# again. Each launch gets its own files (<EXP>_L<id>_<kind>.png); the simulated one its step
# split and no loss curve (plot_losses refuses before writing anything); the first launch's
# PNGs are byte-identical after the other launch's figures; every PNG opens; the aliases of
# the grid names are the same in C (the summary table) and Python (the figures); X= and
# SMOOTH= reach the loss figure. Then, from each figure's JSON sidecar (what every panel
# drew): no empty panel on a single process; the memory panel names what lies between the
# model's parts and the peak; two launches and two runs overlaid (LAUNCH="1 3", RUNS="1 2");
# a simulated launch of a tiny model beside a 7B one that does not fit: panels per scale and
# the 7B marked as not fitting; variant names readable at any count (generated counts and
# lengths: no two tick labels overlap); FIG_DIR naming a file and DB naming a text file or
# a folder refused with exit 2; nothing on stderr from any figure.
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
if [ -z "$bad" ] && [ "$n" -eq 7 ]; then pass "figures_every_png_opens ($n)"; else fail figures_every_png_opens "$n files; $bad"; fi

# ---- the sidecars: no empty panel, nothing on stderr --------------------------------------
side() { /usr/bin/python3 - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(eval(sys.argv[2], {}, dict(d=d, p=d["panels"])))
PY
}
cat >"$TMP/solo.yaml" <<YAML
manifest_version: 1
name: solo
version: 1
description: one process, one variant
extends: $ROOT/experiments/base/tiny.yaml
train: {steps: 4, val_every: 2, warmup_steps: 1, log_every: 1}
YAML
if "$BUILD/exp" "$TMP/solo.yaml" "${SETS[@]}" >"$TMP/solo.log" 2>&1 &&
   make -s --no-print-directory figures EXP=solo DB="$DB" FIG_DIR="$FIG" >"$TMP/f5.log" 2>"$TMP/f5.err"; then
    L=$(sqlite3 "$DB" "SELECT MAX(id) FROM launches")
    e=$(for k in loss curves ablation; do side "$FIG/solo_L${L}_$k.json" "[x['title'] for x in p if x['empty']]"; done | tr -d '\n')
    [ "$e" = "[][][]" ] && [ ! -s "$TMP/f5.err" ] && pass "figures_single_process_no_empty_panel_no_warning" ||
        fail figures_single_process_no_empty_panel_no_warning "empty: $e; stderr: $(head -3 "$TMP/f5.err")"
    m=$(side "$FIG/solo_L${L}_ablation.json" "[x for x in p if x['title'].startswith('memory')][0]")
    grep -q "rest of the process" <<<"$m" && grep -qE "'[0-9]+ MiB'" <<<"$m" && pass figures_memory_gap_named ||
        fail figures_memory_gap_named "$m"
else fail figures_single_process "$(tail -3 "$TMP/solo.log" "$TMP/f5.err" 2>/dev/null)"; fi

# ---- two launches, two runs overlaid ------------------------------------------------------
# (the grid's launch 1, four variants, and a second launch of the single-process one)
"$BUILD/exp" "$TMP/solo.yaml" "${SETS[@]}" >"$TMP/solo2.log" 2>&1 || fail figures_second_launch "$(tail -3 "$TMP/solo2.log")"
L3=$(sqlite3 "$DB" "SELECT MAX(id) FROM launches WHERE experiment = 'solo'")
make -s --no-print-directory figures LAUNCH="1 $L3" DB="$DB" FIG_DIR="$FIG" >"$TMP/f6.log" 2>"$TMP/f6.err"; rc=$?
v=$(side "$FIG/gridfig+solo_L1+${L3}_ablation.json" "[x.split()[0] for x in d['variants']]")
c=$(side "$FIG/gridfig+solo_L1+${L3}_curves.json" "[(x['title'].split(',')[0], x['lines']) for x in p]")
if [ $rc = 0 ] && [ ! -s "$TMP/f6.err" ] && [ "$v" = "['L1', 'L1', 'L1', 'L1', 'L$L3']" ] &&
   [ "$c" = "[('training loss', 5), ('learning rate', 5), ('gradient norm (before clipping)', 5), ('step time (ms)', 5)]" ]
then pass figures_two_launches_overlaid; else fail figures_two_launches_overlaid "exit $rc; $v; $c; $(head -2 "$TMP/f6.err")"; fi
figs RUNS="1 2" >"$TMP/f7.log" 2>"$TMP/f7.err"; rc=$?
v=$(side "$FIG/gridfig_R1+2_loss.json" "d['variants']")
[ $rc = 0 ] && [ ! -s "$TMP/f7.err" ] && [ "$v" = "['r1 l=cola,wd=0.0', 'r2 l=cola,wd=0.1']" ] && pass figures_runs_overlaid ||
    fail figures_runs_overlaid "exit $rc; $v; $(head -2 "$TMP/f7.err")"

# ---- a simulated tiny model beside a 7B one that does not fit -------------------------------
cat >"$TMP/scales.yaml" <<YAML
manifest_version: 1
name: scales
version: 1
description: two scales in one launch
extends: $ROOT/experiments/base/tiny.yaml
variants:
  tiny: {}
  big: {model.preset: boost-7b, data.dataset: synthetic, run.on_demand: true}
YAML
if "$BUILD/exp" "$TMP/scales.yaml" --simulate a100-80gb-node4 --set run.db="$DB" >"$TMP/sim2.log" 2>&1; then
    make -s --no-print-directory figures EXP=scales DB="$DB" FIG_DIR="$FIG" >"$TMP/f8.log" 2>"$TMP/f8.err"; rc=$?
    L=$(sqlite3 "$DB" "SELECT MAX(id) FROM launches")
    j="$FIG/scales_L${L}_split.json"
    r=$(side "$j" "(d['fits'], len(p), sum('does not fit' in ' '.join(x['texts']) for x in p), sorted({x['xlabel'] for x in p}))")
    [ $rc = 0 ] && [ ! -s "$TMP/f8.err" ] && [ "$r" = "([True, False], 4, 1, ['models L2 d64', 'models L32 d4096'])" ] &&
        pass figures_scales_apart_and_not_fitting_marked || fail figures_scales_apart_and_not_fitting_marked "exit $rc; $r; $(head -2 "$TMP/f8.err")"
else fail figures_simulated_scales "$(tail -3 "$TMP/sim2.log")"; fi

# ---- tick labels at any count: generated counts and name lengths, no two overlap -----------
r=$(/usr/bin/python3 - <<'PY' 2>&1
import random, sys
sys.path.insert(0, "analysis")
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import plot_common as pc
rnd, bad, cases = random.Random(3), [], 0
for n in (1, 2, 3, 5, 8, 12, 17, 25, 40, 70):
    for width in (4.5, 7.0, 14.0):
        names = ["".join(rnd.choice("abcdefgh-~0123") for _ in range(rnd.randint(1, 20))) for _ in range(n)]
        fig, ax = plt.subplots(figsize=(width, 5))
        ax.bar(range(n), [1] * n)
        pc.variant_ticks(ax, list(range(n)), names)
        fig.tight_layout()
        fig.canvas.draw()
        r = fig.canvas.get_renderer()
        boxes = [t.get_window_extent(r) for t in ax.get_xticklabels() if t.get_text()]
        fw, fh = fig.bbox.width, fig.bbox.height
        over = [i for i in range(len(boxes) - 1) if boxes[i].overlaps(boxes[i + 1])]
        outside = [i for i, b in enumerate(boxes) if b.x0 < -1 or b.x1 > fw + 1 or b.y0 < -1]
        if over or outside:
            bad.append(f"n={n} width={width}: overlapping {over[:3]} outside {outside[:3]}")
        cases += 1
        plt.close(fig)
print("; ".join(bad) if bad else f"ok {cases}")
PY
)
[ "${r%% *}" = ok ] && pass "figures_tick_labels_never_overlap (${r#ok } generated cases)" || fail figures_tick_labels_never_overlap "$r"

# ---- refusals: exit 2 with a message, no traceback ------------------------------------------
touch "$TMP/afile"; printf 'not a database\n' >"$TMP/text.db"
for k in "FIG_DIR=$TMP/afile|is a file, not a folder" "DB=$TMP/text.db|is not an SQLite database" "DB=$TMP|is not a file"; do
    out=$(make -s --no-print-directory figures EXP=gridfig DB="$DB" FIG_DIR="$FIG" "${k%%|*}" 2>&1 >/dev/null)
    rc=$(/usr/bin/python3 analysis/plot_losses.py gridfig --db "$DB" --out "$FIG" --"$(tr 'A-Z_' 'a-z-' <<<"${k%%=*}" | sed 's/fig-dir/out/')" "$(cut -d= -f2 <<<"${k%%|*}")" >/dev/null 2>&1; echo $?)
    if grep -q "${k#*|}" <<<"$out" && ! grep -q Traceback <<<"$out" && [ "$rc" = 2 ]; then pass "figures_refuses_${k%%=*} (${k#*|})"
    else fail "figures_refuses_${k%%=*}" "exit $rc: $(head -3 <<<"$out")"; fi
done
