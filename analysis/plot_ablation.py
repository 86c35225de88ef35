#!/usr/bin/python3
"""plot_ablation.py [EXPERIMENT] [--db runs/boost.db] [--launch ID...] [--run ID...] [--out analysis/figures]

The ablation figure of one launch of an experiment (make figures EXP=name [LAUNCH=id]),
from its completed runs, into <out>/<experiment>_L<launch>_ablation.png (each launch its
own file; long variant names as their aliases, the full names in a key), with a JSON
sidecar of what each panel drew (<same name>.json). Several launches (LAUNCH="2 3": one bar
per launch and variant, "L2 <variant>", file _L2+3_) or runs (RUNS="7 9": one bar per run,
"r7 <variant>", file _R7+9_) are drawn side by side. Panels, each only where it has
something to show (a single process has no collectives, a lone architecture no parity):
  1. step time: the median step time after warm-up split into communication (the
     collectives' seconds of the step, rank 0; where measured, split again into moving data
     and waiting for the last peer of the group) and the rest (compute); the error bar is the
     spread: min..max of the run medians over the repeats (REPEAT >= 2), else the 10th..90th
     percentile of the single run's steps; over each bar, whether it differs from the first
     variant of its launch beyond the runs' noise (the verdicts of build/exp --compare
     --verdicts --json, computed there, never here; runs named one by one get none; one
     verdict every bar shares, as REPEAT=1's, is said once in the title);
  2. collective calls per step by phase (rank 0), with the largest rank's total per step
     as a marker (pipeline stages other than rank 0 included: comm_ranks);
  3. bytes per step by phase: the transformer layers (solid) kept apart from layer -1
     (hatched: embedding, LM head and loss, DP gradient sync, pipeline transfers), so that
     BOOST's doubled embedding/head traffic does not hide its smaller per-layer traffic;
  4. memory: parameters, gradients, optimizer state and activations (with the working set)
     stacked (the largest rank's), and above them, up to the peak resident set (the line),
     what the process holds outside the model's buffers: shared libraries, Open MPI,
     OpenBLAS/oneDNN thread buffers, the data shards, checkpoint staging, the allocator's
     free memory (50-80 MiB on one CPU process here, whatever the model's size);
  5. loss parity: each variant's training loss minus its same-architecture baseline (the
     first earlier variant of its launch with the same model section: BOOST - Vanilla-TP,
     never - dense);
  6. a table of the numbers.
Bars whose scales differ by more than 10x (a tiny model beside a 7B one) get panels of
their own, side by side, each on its own axis. Variant names stay readable at any count
(plot_common.variant_ticks). The caption names the model, the layout, the host and the
launch. Prints the numbers it plotted. A simulated launch (make exp SIMULATE=1) gets its own
figure instead, <out>/<experiment>_L<launch>_split.png: the modeled step of each variant
split into compute, exposed communication, pipeline transfers and the pipeline bubble, and
the modeled memory of the largest rank against the device's capacity; a variant that does
not fit its device is hatched and marked in both panels (no loss, no spread: nothing was
trained). Exit 2 with a clear message when the database, the experiment or the launch is
missing, DB names no run database, or FIG_DIR names a file.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_common as pc  # noqa: E402

PROG = "plot_ablation"
MEM_PARTS = ["parameters", "gradients", "optimizer", "activations"]


def variant_numbers(con, runs):
    """The plotted numbers of one variant from its completed runs."""
    step_ms, comm_ms, wait_ms = [], [], []
    for r in runs:
        st = pc.steps_of(con, r["id"])
        t = pc.timed(st)
        comm_s = dict(con.execute("SELECT step, SUM(seconds) FROM comm WHERE run_id = ? GROUP BY step", (r["id"],)).fetchall())
        # the part of it spent waiting for the last peer of the group (NULL: not measured, e.g. NCCL)
        wait_s = dict(con.execute("SELECT step, SUM(wait_seconds) FROM comm WHERE run_id = ? GROUP BY step", (r["id"],)).fetchall())
        step_ms.append([1e3 * s["step_seconds"] for s in t if s["step_seconds"] is not None])
        comm_ms.append([1e3 * (comm_s.get(s["step"]) or 0.0) for s in t])
        if t and all(wait_s.get(s["step"]) is not None for s in t):
            wait_ms.append([1e3 * wait_s[s["step"]] for s in t])
    med, lo, hi = pc.median_and_spread(step_ms)
    cmed, _, _ = pc.median_and_spread(comm_ms)
    wmed = pc.median_and_spread(wait_ms)[0] if wait_ms and len(wait_ms) == len(runs) else None
    r = runs[0]
    nsteps = con.execute("SELECT COUNT(DISTINCT step) FROM comm WHERE run_id = ?", (r["id"],)).fetchone()[0] or 1
    calls = dict(con.execute("SELECT phase, SUM(calls) FROM comm WHERE run_id = ? GROUP BY phase", (r["id"],)).fetchall())
    layer_bytes = dict(con.execute("SELECT phase, SUM(bytes) FROM comm WHERE run_id = ? AND layer >= 0 GROUP BY phase", (r["id"],)).fetchall())
    head_bytes = dict(con.execute("SELECT phase, SUM(bytes) FROM comm WHERE run_id = ? AND layer < 0 GROUP BY phase", (r["id"],)).fetchall())
    max_rank_calls = con.execute("SELECT MAX(c) FROM (SELECT rank, AVG(calls) AS c FROM comm_ranks WHERE run_id = ? GROUP BY rank)",
                                 (r["id"],)).fetchone()[0] or 0
    mem = dict(con.execute("SELECT category, bytes FROM memory WHERE run_id = ?", (r["id"],)).fetchall())
    loss = {s["step"]: s["loss"] for s in pc.steps_of(con, r["id"])}
    comm = min(cmed, med) if med == med else 0.0
    return dict(run=r["id"], n=len(runs), step_ms=med, lo=lo, hi=hi, comm_ms=comm,
                wait_ms=min(wmed, comm) if wmed is not None and wmed == wmed else None,
                calls={p: (calls.get(p) or 0) / nsteps for p in pc.PHASES}, max_rank_calls=max_rank_calls,
                layer_bytes={p: (layer_bytes.get(p) or 0) / nsteps for p in pc.PHASES},
                head_bytes={p: (head_bytes.get(p) or 0) / nsteps for p in pc.PHASES},
                mem={c: mem.get(c) or 0 for c in MEM_PARTS + ["peak_rss"]}, loss=loss)


def fetch_verdicts(args, sel):
    """{figure label: verdict} for every variant drawn against the first variant of its launch:
    build/exp --compare --verdicts --json (src/core/stats.h; docs/database.md "Timing verdicts"),
    one call for the launches drawn. Empty, with the reason printed, where there are none."""
    exe = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "exp")
    if sel.mode == "runs" or not sel.launches:
        print("timing verdicts not drawn: runs named one by one or made by hand belong to no launch")
        return {}
    if not os.access(exe, os.X_OK):
        print(f"timing verdicts not drawn: {exe} is not built (make)")
        return {}
    import json, subprocess
    cmd = [exe, "--compare", "--db", args.db, "--verdicts", "--json"]
    for l in sel.launches:
        cmd += ["--launch", str(l["id"])]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        print(f"timing verdicts not drawn: {' '.join(cmd)} failed: {res.stderr.strip()}")
        return {}
    several = len(sel.launches) > 1
    out = {}
    for v in json.loads(res.stdout):
        for l in sel.launches:
            if v["scope"] == f"launch {l['id']}":
                alias = pc.variant_alias(v["b"])
                out[f"L{l['id']} {alias}" if several else alias] = v
                print(f"launch {l['id']}: {alias} vs {pc.variant_alias(v['a'])}: {v['text']}")
    return out


def step_time_title(verdicts):
    """The step-time panel's title: how its verdicts read, or the one verdict every bar shares."""
    import textwrap
    texts = {v["text"] for v in verdicts.values()}
    if len(verdicts) > 1 and len(texts) == 1:
        return "step time\nagainst the first variant: " + "\n".join(textwrap.wrap(texts.pop(), 60))
    if verdicts:
        return "step time\nover each bar: its verdict against the first variant (runs' medians,\nexact rank-sum test, 95 %)"
    return "step time"


def draw_verdicts(a, rows, names, verdicts):
    """Each bar's verdict over it (fetch_verdicts). A verdict every bar shares (REPEAT=1: none
    possible) is written once, in the panel's title; beside more than 4 bars the verdicts
    stand upright, so that neighbours never overlap."""
    import textwrap
    shown = [(i, v) for i, v in enumerate(names) if v in verdicts]
    texts = {verdicts[v]["text"] for _, v in shown}
    if len(shown) > 1 and len(texts) == 1:
        return   # (step_time_title says it)
    upright = len(names) > 4
    tallest = 0.0
    for i, v in shown:
        top = rows[v]["hi"] if rows[v]["hi"] == rows[v]["hi"] else rows[v]["step_ms"]
        top = max(top, rows[v]["step_ms"])
        tallest = max(tallest, top)
        text = verdicts[v]["text"] if upright else "\n".join(textwrap.wrap(verdicts[v]["text"], 24))
        a.text(i, top, text, ha="center", va="bottom", rotation=90 if upright else 0, fontsize=6.5,
               color="C2" if verdicts[v]["verdict"] in ("faster", "slower") else "0.35")
    if upright and tallest > 0:   # room above the tallest bar for its upright text
        a.set_ylim(top=max(a.get_ylim()[1], 2.6 * tallest))


GAP_LABEL = "rest of the process: libraries, MPI,\nBLAS threads, data, staging, allocator"


def layout(fig, n):
    """A grid spec for n panels: up to three per row."""
    ncols = min(3, n)
    nrows = (n + ncols - 1) // ncols
    return fig.add_gridspec(nrows, ncols), ncols


def cell(gs, ncols, k):
    return gs[k // ncols, k % ncols]


def plot_simulated(con, args, sel):
    """The figure of simulated launches: the modeled step split and memory per variant."""
    sims = {}
    for l in sel.launches:
        sims.update({r["run_id"]: dict(r) for r in con.execute("SELECT * FROM simulated_runs WHERE launch_id = ?", (l["id"],))})
    rows = [(label, sims[rs[0]["id"]]) for label, rs in sel.groups.items() if rs[0]["id"] in sims]
    if not rows:
        pc.die(PROG, f"{sel.title()} is simulated but has no simulation rows (simulated_runs)")
    labels = [label for label, _ in rows]
    hardware = ", ".join(sorted({l.get("hardware") or "?" for l in sel.launches}))

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(15, 7))
    gs = fig.add_gridspec(1, 2)
    parts = [("compute_seconds", "compute", "0.65"), ("comm_seconds", "exposed communication", "C3"),
             ("p2p_seconds", "pipeline transfers", "C1"), ("bubble_seconds", "pipeline bubble", "C0")]
    step_ms = [1e3 * (s["step_seconds"] or 0.0) for _, s in rows]
    fits = [bool(s["memory_fits"]) for _, s in rows]
    for a, idx in pc.scaled_panels(fig, gs[0, 0], step_ms):
        x = list(range(len(idx)))
        bottom = [0.0] * len(idx)
        for key, label, color in parts:
            vals = [1e3 * (rows[i][1][key] or 0.0) for i in idx]
            if any(vals):
                a.bar(x, vals, bottom=bottom, color=color, label=label,
                      hatch=["xx" if not fits[i] else None for i in idx], edgecolor=["k" if not fits[i] else color for i in idx],
                      lw=0.4)
                bottom = [b + v for b, v in zip(bottom, vals)]
        a.plot(x, [step_ms[i] for i in idx], "k_", ms=max(8, 200 / max(8, len(rows))), mew=2, linestyle="none", label="modeled step")
        top = max([step_ms[i] for i in idx] + bottom + [1e-9])
        for k, i in enumerate(idx):   # what does not fit is no result: say so on its bar
            if not fits[i]:
                a.text(k, step_ms[i] + 0.03 * top, "does not fit", rotation=90, ha="center", va="bottom", fontsize=7, color="C3")
        a.set_ylim(0, 1.45 * top)
        pc.variant_ticks(a, x, [labels[i] for i in idx], fontsize=8)
        pc.scale_note(a, [sel.groups[labels[i]][0] for i in idx], len(rows))
        pc.legend(a, fontsize=7, loc="upper left")
    a0 = fig.axes[0]
    a0.set_ylabel("modeled ms per step (critical pipeline stage)")
    a0.set_title(f"modeled step on {hardware}: where the time goes" + ("" if all(fits) else "\n(hatched: does not fit its device)"),
                 fontsize=10)

    gib = 2**30
    need = [(s["memory_bytes"] or 0) for _, s in rows]
    cap_all = [(s["memory_capacity"] or 0) for _, s in rows]
    first = len(fig.axes)
    for m, idx in pc.scaled_panels(fig, gs[0, 1], need):
        x = list(range(len(idx)))
        unit, div = ("MiB", 2**20) if max(need[i] for i in idx) < gib else ("GiB", gib)
        # a group far below its devices' capacity: its own scale, the capacity as a number
        small = max(need[i] for i in idx) < 0.05 * max(cap_all[i] for i in idx)
        m.bar(x, [need[i] / div for i in idx], color=["C2" if fits[i] else "C3" for i in idx],
              hatch=[None if fits[i] else "xx" for i in idx], label="modeled total, largest rank\n(red, hatched: does not fit)")
        cap = [cap_all[i] / div for i in idx]
        if not small:
            for k, c in enumerate(cap):
                m.hlines(c, k - 0.45, k + 0.45, colors="k", lw=2, label="device capacity" if k == 0 else None)
        for k, i in enumerate(idx):
            if not fits[i]:
                m.text(k, need[i] / div, f" {need[i] / gib:.1f} > {cap_all[i] / gib:.0f} GiB", rotation=90, ha="center",
                       va="bottom", fontsize=7, color="C3")
        m.set_ylim(0, 1.45 * max((cap if not small else []) + [need[i] / div for i in idx] + [1e-9]))
        m.set_ylabel(f"{unit} per device")
        if small:
            m.set_title(f"capacity {max(cap_all[i] for i in idx) / gib:.0f} GiB, off this scale", fontsize=8)
        pc.variant_ticks(m, x, [labels[i] for i in idx], fontsize=8)
        pc.scale_note(m, [sel.groups[labels[i]][0] for i in idx], len(rows))
        pc.legend(m, fontsize=7, loc="upper left")
    fig.axes[first].set_title("modeled memory against the device's capacity" +
                              (f"\n{fig.axes[first].get_title()}" if fig.axes[first].get_title() else ""), fontsize=10)

    fig.suptitle(f"{sel.title()}, SIMULATED on {hardware} (nothing trained)")
    bottom_frac = pc.footer(fig, sel)
    fig.tight_layout(rect=(0, bottom_frac, 1, 0.95))
    path = pc.figure_path(args.out, sel, "split")
    pc.save(PROG, fig, path, 110, dict(variants=labels, fits=fits))
    print(f"{'variant':<{pc.ALIAS_MAX}} {'ms/step':>9} {'compute':>9} {'comm':>9} {'p2p':>9} {'bubble':>9} {'GiB':>7} fits")
    for label, s in rows:
        print(f"{label:<{pc.ALIAS_MAX}} {1e3 * s['step_seconds']:9.3f} {1e3 * s['compute_seconds']:9.3f} "
              f"{1e3 * s['comm_seconds']:9.3f} {1e3 * s['p2p_seconds']:9.3f} {1e3 * s['bubble_seconds']:9.3f} "
              f"{(s['memory_bytes'] or 0) / gib:7.2f} {'yes' if s['memory_fits'] else 'NO'}")
    print(f"wrote {path}")


# ---- the panels of a trained launch: each draws on its axes and returns nothing --------------
def panel_step_time(a, rows, names, verdicts):
    """1. The headline: median step time split into compute and communication, the spread
    as an error bar, the timing verdicts in the top third of the axis."""
    x = list(range(len(names)))
    comp = [rows[v]["step_ms"] - rows[v]["comm_ms"] for v in names]
    comm = [rows[v]["comm_ms"] for v in names]
    a.bar(x, comp, color="0.65", label="compute (step − communication)")
    waits = [rows[v]["wait_ms"] for v in names]
    if any(comm) and all(w is not None for w in waits):   # the collectives' time: moving data, then waiting for a peer
        moving = [c - w for c, w in zip(comm, waits)]
        a.bar(x, moving, bottom=comp, color="C3", label="communication: moving data")
        a.bar(x, waits, bottom=[c + m for c, m in zip(comp, moving)], color="C3", alpha=0.4, hatch="//",
              label="communication: waiting for a peer")
    elif any(comm):
        a.bar(x, comm, bottom=comp, color="C3", label="communication")
    err = [[rows[v]["step_ms"] - rows[v]["lo"] for v in names], [rows[v]["hi"] - rows[v]["step_ms"] for v in names]]
    a.errorbar(x, [rows[v]["step_ms"] for v in names], yerr=err, fmt="none", ecolor="k", capsize=5, lw=1.2,
               label="spread (repeats min–max, else p10–p90)")
    a.set_ylim(0, 1.5 * max([rows[v]["hi"] for v in names if rows[v]["hi"] == rows[v]["hi"]] or [1]))
    pc.variant_ticks(a, x, names)
    pc.legend(a, fontsize=7, loc="upper left")
    draw_verdicts(a, rows, names, verdicts)


def panel_calls(a, rows, names, phase_colors):
    """2. Collective calls per step by phase (rank 0), the largest rank's total as a marker."""
    x = list(range(len(names)))
    bottom = [0.0] * len(names)
    for p in pc.PHASES:
        vals = [rows[v]["calls"][p] for v in names]
        if any(vals):
            a.bar(x, vals, bottom=bottom, color=phase_colors[p], label=p)
            bottom = [b + c for b, c in zip(bottom, vals)]
    a.plot(x, [rows[v]["max_rank_calls"] for v in names], "kx", ms=9, mew=2, linestyle="none", label="largest rank, all phases")
    a.set_ylim(0, 1.3 * max([max(b, rows[v]["max_rank_calls"]) for b, v in zip(bottom, names)] or [1]) or 1)
    pc.variant_ticks(a, x, names)
    pc.legend(a, fontsize=7, loc="upper left", ncol=2)


def panel_bytes(a, rows, names, phase_colors):
    """3. Bytes per step: transformer layers (solid) beside layer -1 (hatched)."""
    x = list(range(len(names)))
    w = 0.38
    for k, (key, hatch, label) in enumerate((("layer_bytes", None, "transformer layers"), ("head_bytes", "//", "layer −1"))):
        bottom = [0.0] * len(names)
        for p in pc.PHASES:
            vals = [rows[v][key][p] / 2**20 for v in names]
            if any(vals):
                a.bar([i + (k - 0.5) * w for i in x], vals, width=w, bottom=bottom, color=phase_colors[p], hatch=hatch,
                      edgecolor="k" if hatch else None, lw=0.3, label=f"{p} ({label})")
                bottom = [b + c for b, c in zip(bottom, vals)]
    pc.variant_ticks(a, x, names)
    tallest = max([sum(rows[v][k].values()) for v in names for k in ("layer_bytes", "head_bytes")] or [0]) / 2**20
    a.set_ylim(0, 1.35 * tallest or 1)
    pc.legend(a, fontsize=6, ncol=2, loc="upper left")


def panel_memory(a, rows, names):
    """4. Memory: the model's parts stacked, the rest of the process up to the peak resident
    set hatched above them (what it is: GAP_LABEL), the peak as a line."""
    x = list(range(len(names)))
    bottom = [0.0] * len(names)
    for j, c in enumerate(MEM_PARTS):
        vals = [rows[v]["mem"][c] / 2**20 for v in names]
        a.bar(x, vals, bottom=bottom, color=f"C{j}", label=c + (" + working set" if c == "activations" else ""))
        bottom = [b + c2 for b, c2 in zip(bottom, vals)]
    peaks = [rows[v]["mem"]["peak_rss"] / 2**20 for v in names]
    gaps = [max(0.0, p - b) for p, b in zip(peaks, bottom)]
    if any(gaps):
        a.bar(x, gaps, bottom=bottom, color="0.9", hatch="..", edgecolor="0.5", lw=0.3, label=GAP_LABEL)
        for i, (g, b) in enumerate(zip(gaps, bottom)):
            if g > 0:
                a.text(i, b + g / 2, f"{g:.0f} MiB", ha="center", va="center", fontsize=7,
                       bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none"))
    for i, p in enumerate(peaks):
        a.hlines(p, i - 0.45, i + 0.45, colors="k", lw=2, label="peak resident set" if i == 0 else None)
    a.set_ylim(0, 1.45 * max(peaks + bottom + [1e-9]))
    pc.variant_ticks(a, x, names)
    pc.legend(a, fontsize=6, loc="upper left", ncol=2)


def panel_parity(a, rows, names, base, parity):
    """5. Each variant's training loss minus its same-architecture baseline."""
    for i, v in enumerate(names):
        ref = base[v]
        mine, theirs = rows[v]["loss"], rows[ref]["loss"]
        common = [s for s in sorted(mine) if s in theirs and mine[s] is not None and theirs[s] is not None]
        if not common:
            continue
        s = pc.style(i)
        d = [mine[k] - theirs[k] for k in common]
        a.plot(common, d, color=s["color"], marker=s["marker"], linestyle=s["linestyle"], markersize=3,
               markevery=pc.markevery(i, len(names), len(common)), label=f"{v} − {ref}")
        parity.append((v, ref, max(abs(t) for t in d)))
    a.axhline(0, color="k", lw=0.5)
    a.set_xlabel("step"); a.set_ylabel("training loss difference")
    pc.legend(a, fontsize=8)


def main():
    ap = argparse.ArgumentParser(description="ablation panels of a launch: time, calls, bytes, memory, loss parity")
    pc.add_arguments(ap)
    args = ap.parse_args()
    pc.check_out(PROG, args.out)
    con = pc.open_db(PROG, args.db, args.experiment)
    if args.run:
        sel = pc.select(PROG, con, args)
    else:
        firsts = [pc.chosen_launch(PROG, con, args.experiment, l) for l in (args.launch or [None])]
        kinds = {pc.is_simulated(l) for l in firsts if l}
        if len(kinds) > 1:
            pc.die(PROG, f"launches {', '.join(str(l['id']) for l in firsts)} mix trained and simulated ones: draw them apart")
        sel = pc.select(PROG, con, args)
        if sel.launches and all(pc.is_simulated(l) for l in sel.launches):
            return plot_simulated(con, args, sel)
    rows = {v: variant_numbers(con, rs) for v, rs in sel.groups.items()}
    names = list(rows)
    base = pc.same_architecture_baseline(sel.groups)
    verdicts = fetch_verdicts(args, sel)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    phase_colors = {p: f"C{i}" for i, p in enumerate(pc.PHASES)}
    has_calls = any(sum(rows[v]["calls"].values()) or rows[v]["max_rank_calls"] for v in names)
    has_bytes = any(sum(rows[v]["layer_bytes"].values()) + sum(rows[v]["head_bytes"].values()) for v in names)
    has_mem = any(rows[v]["mem"]["peak_rss"] or sum(rows[v]["mem"][c] for c in MEM_PARTS) for v in names)
    has_parity = any(base[v] is not None for v in names)
    # (title, function of (axes, names), the values that decide its scale groups)
    panels = [(step_time_title(verdicts), lambda a, ns: panel_step_time(a, rows, ns, verdicts), "median ms per step after warm-up",
               [rows[v]["step_ms"] for v in names])]
    if has_calls:
        panels.append(("collective calls", lambda a, ns: panel_calls(a, rows, ns, phase_colors), "collective calls per step (rank 0)",
                       [max(sum(rows[v]["calls"].values()), rows[v]["max_rank_calls"]) for v in names]))
    if has_bytes:
        panels.append(("bytes moved: transformer layers (solid)\nlayer −1: embedding, head, sync (hatched)",
                       lambda a, ns: panel_bytes(a, rows, ns, phase_colors), "MiB per step (rank 0)",
                       [max(sum(rows[v]["layer_bytes"].values()), sum(rows[v]["head_bytes"].values())) for v in names]))
    if has_mem:
        panels.append(("memory: the model's parts stacked, the rest of the process\nup to the peak resident set (line)",
                       lambda a, ns: panel_memory(a, rows, ns), "MiB (largest rank)",
                       [rows[v]["mem"]["peak_rss"] for v in names]))
    n = len(panels) + (1 if has_parity else 0) + 1   # + the table
    ncols = min(3, n)
    fig = plt.figure(figsize=(5.8 * ncols, 5.2 * ((n + ncols - 1) // ncols) + 0.8))
    gs, ncols = layout(fig, n)
    for k, (title, draw, ylabel, values) in enumerate(panels):
        subs = pc.scaled_panels(fig, cell(gs, ncols, k), values)
        for j, (a, idx) in enumerate(subs):
            draw(a, [names[i] for i in idx])
            pc.scale_note(a, [sel.groups[names[i]][0] for i in idx], len(names))
            if j == 0:
                a.set_ylabel(ylabel)
                a.set_title(title, fontsize=10 if "\n" in title else 12)
    k = len(panels)
    parity = []
    if has_parity:
        a = fig.add_subplot(cell(gs, ncols, k))
        panel_parity(a, rows, [v for v in names if base[v] is not None], base, parity)
        a.set_title("loss parity against the same-architecture baseline")
        alone = pc.without_partner(sel.groups)
        if alone and len(alone) < len(names):
            a.text(0.01, 0.01, "no other variant of the same architecture: " + ", ".join(alone), fontsize=7, transform=a.transAxes)
        k += 1
    a = fig.add_subplot(cell(gs, ncols, k))
    a.axis("off")
    width = max([pc.ALIAS_MAX] + [len(v) for v in names])
    lines = [f"{'variant':<{width}} {'runs':>4} {'ms/step':>9} {'spread':>15} {'calls':>6} {'MiB lay':>8} {'MiB −1':>7}"]
    for v in names:
        r = rows[v]
        lines.append(f"{v:<{width}} {r['n']:>4} {r['step_ms']:9.1f} {r['lo']:7.1f}–{r['hi']:<7.1f} "
                     f"{sum(r['calls'].values()):6.0f} {sum(r['layer_bytes'].values()) / 2**20:8.2f} "
                     f"{sum(r['head_bytes'].values()) / 2**20:7.2f}")
    notes = []
    if not has_calls:
        notes.append("no collectives: one process (tp = pp = dp = 1)")
    if not has_parity:
        notes.append("no loss parity: no two variants share an architecture" if len(names) > 1 else "no loss parity: one variant")
    a.text(0, 1, "\n".join(lines + [""] + notes), family="monospace", fontsize=7, va="top")
    a.set_title("the numbers", fontsize=10)

    fig.suptitle(sel.title())
    bottom = pc.footer(fig, sel)
    fig.tight_layout(rect=(0, bottom, 1, 0.97))
    path = pc.figure_path(args.out, sel, "ablation")
    pc.save(PROG, fig, path, 110, dict(variants=names))
    print("\n".join(lines))
    for v, ref, m in parity:
        print(f"{v} vs {ref}: max |Δloss| {m:.3g}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
