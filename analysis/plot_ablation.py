#!/usr/bin/python3
"""plot_ablation.py EXPERIMENT [--db runs/boost.db] [--launch ID] [--out analysis/figures]

The ablation figure of one launch of an experiment (make figures EXP=name [LAUNCH=id]),
from its completed runs, into <out>/<experiment>_L<launch>_ablation.png (each launch its
own file; long variant names as their aliases, the full names in a key):
  1. step time: the median step time after warm-up split into communication (the
     collectives' seconds of the step, rank 0) and the rest (compute); the error bar is the
     spread: min..max of the run medians over the repeats (REPEAT >= 2), else the 10th..90th
     percentile of the single run's steps; over each bar, whether it differs from the first
     variant beyond the runs' noise (the verdicts of build/exp --compare --verdicts --json);
  2. collective calls per step by phase (rank 0), with the largest rank's total per step
     as a marker (pipeline stages other than rank 0 included: comm_ranks);
  3. bytes per step by phase: the transformer layers (solid) kept apart from layer -1
     (hatched: embedding, LM head and loss, DP gradient sync, pipeline transfers), so that
     BOOST's doubled embedding/head traffic does not hide its smaller per-layer traffic;
  4. memory: parameters, gradients, optimizer state and activations stacked (the largest
     rank's), the peak resident set as a line over the bar;
  5. loss parity: each variant's training loss minus its same-architecture baseline (the
     first earlier variant with the same model section: BOOST - Vanilla-TP, never - dense).
The caption names the model, the layout, the host and the launch. Prints the numbers it
plotted. A simulated launch (make exp SIMULATE=1) gets its own figure instead,
<out>/<experiment>_L<launch>_split.png: the modeled step of each variant split into compute,
exposed communication, pipeline transfers and the pipeline bubble, and the modeled memory of
the largest rank against the device's capacity (no loss, no spread: nothing was trained). Exit 2 with a clear message when the database, the experiment or the launch is missing.
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
    step_ms, comm_ms = [], []
    for r in runs:
        st = pc.steps_of(con, r["id"])
        t = pc.timed(st)
        comm_s = dict(con.execute("SELECT step, SUM(seconds) FROM comm WHERE run_id = ? GROUP BY step", (r["id"],)).fetchall())
        step_ms.append([1e3 * s["step_seconds"] for s in t if s["step_seconds"] is not None])
        comm_ms.append([1e3 * (comm_s.get(s["step"]) or 0.0) for s in t])
    med, lo, hi = pc.median_and_spread(step_ms)
    cmed, _, _ = pc.median_and_spread(comm_ms)
    r = runs[0]
    nsteps = con.execute("SELECT COUNT(DISTINCT step) FROM comm WHERE run_id = ?", (r["id"],)).fetchone()[0] or 1
    calls = dict(con.execute("SELECT phase, SUM(calls) FROM comm WHERE run_id = ? GROUP BY phase", (r["id"],)).fetchall())
    layer_bytes = dict(con.execute("SELECT phase, SUM(bytes) FROM comm WHERE run_id = ? AND layer >= 0 GROUP BY phase", (r["id"],)).fetchall())
    head_bytes = dict(con.execute("SELECT phase, SUM(bytes) FROM comm WHERE run_id = ? AND layer < 0 GROUP BY phase", (r["id"],)).fetchall())
    max_rank_calls = con.execute("SELECT MAX(c) FROM (SELECT rank, AVG(calls) AS c FROM comm_ranks WHERE run_id = ? GROUP BY rank)",
                                 (r["id"],)).fetchone()[0] or 0
    mem = dict(con.execute("SELECT category, bytes FROM memory WHERE run_id = ?", (r["id"],)).fetchall())
    loss = {s["step"]: s["loss"] for s in pc.steps_of(con, r["id"])}
    return dict(run=r["id"], n=len(runs), step_ms=med, lo=lo, hi=hi, comm_ms=min(cmed, med) if med == med else 0.0,
                calls={p: (calls.get(p) or 0) / nsteps for p in pc.PHASES}, max_rank_calls=max_rank_calls,
                layer_bytes={p: (layer_bytes.get(p) or 0) / nsteps for p in pc.PHASES},
                head_bytes={p: (head_bytes.get(p) or 0) / nsteps for p in pc.PHASES},
                mem={c: mem.get(c) or 0 for c in MEM_PARTS + ["peak_rss"]}, loss=loss)


def draw_verdicts(ax, args, launch, names, tops):
    """Whether each variant's step time differs from the first variant's beyond the runs' noise,
    written over its bar: the verdicts of build/exp --compare --verdicts --json (computed there,
    src/core/stats.h, never here; docs/database.md "Timing verdicts")."""
    exe = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "exp")
    if launch is None or not os.access(exe, os.X_OK):
        print("timing verdicts not drawn: " + ("runs without a launch" if launch is None else f"{exe} is not built (make)"))
        return
    import json, subprocess, textwrap
    cmd = [exe, "--compare", "--launch", str(launch["id"]), "--db", args.db, "--verdicts", "--json"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        print(f"timing verdicts not drawn: {' '.join(cmd)} failed: {res.stderr.strip()}")
        return
    for v in json.loads(res.stdout):
        if v["scope"] == f"launch {launch['id']}" and v["b"] in names:
            i = names.index(v["b"])
            ax.text(i, tops[i], "\n".join(textwrap.wrap(v["text"], 24)), ha="center", va="bottom", fontsize=6.5,
                    color="C2" if v["verdict"] in ("faster", "slower") else "0.35")
            print(f"{pc.variant_alias(v['b'])} vs {pc.variant_alias(v['a'])}: {v['text']}")
    ax.set_title(f"step time; each bar against {pc.variant_alias(names[0])}: runs' medians, exact test, 95 %", fontsize=9)


def plot_simulated(con, args):
    """The figure of a simulated launch: the modeled step split and memory per variant."""
    launch, runs = pc.select_runs(PROG, con, args.experiment, args.launch)
    sims = {r["run_id"]: dict(r) for r in con.execute("SELECT * FROM simulated_runs WHERE launch_id = ?", (launch["id"],))}
    rows = [(r["variant"], sims[r["id"]]) for r in runs if r["id"] in sims]
    if not rows:
        pc.die(PROG, f"launch {launch['id']} is simulated but has no simulation rows (simulated_runs)")
    names = [v for v, _ in rows]
    labels = [pc.variant_alias(v) for v in names]
    x = list(range(len(rows)))

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, m) = plt.subplots(1, 2, figsize=(14, 6.5))
    parts = [("compute_seconds", "compute", "0.65"), ("comm_seconds", "exposed communication", "C3"),
             ("p2p_seconds", "pipeline transfers", "C1"), ("bubble_seconds", "pipeline bubble", "C0")]
    bottom = [0.0] * len(rows)
    for key, label, color in parts:
        vals = [1e3 * (s[key] or 0.0) for _, s in rows]
        if any(vals):
            a.bar(x, vals, bottom=bottom, color=color, label=label)
            bottom = [b + v for b, v in zip(bottom, vals)]
    a.plot(x, [1e3 * s["step_seconds"] for _, s in rows], "k_", ms=30, mew=2, linestyle="none", label="modeled step")
    a.set_xticks(x, labels, rotation=20, ha="right")
    a.set_ylabel("modeled ms per step (critical pipeline stage)")
    a.set_ylim(0, 1.3 * max([1e3 * s["step_seconds"] for _, s in rows] + bottom) or 1)
    a.set_title(f"modeled step on {launch.get('hardware')}: where the time goes")
    a.legend(fontsize=8, loc="upper left")

    gib = 2**30
    need = [(s["memory_bytes"] or 0) for _, s in rows]
    # a model far below the device's capacity: its own scale in MiB, the capacity as a number
    small = max(need) < 0.05 * max((s["memory_capacity"] or 0) for _, s in rows)
    unit, div = ("MiB", 2**20) if max(need) < gib else ("GiB", gib)
    m.bar(x, [b / div for b in need], color=["C2" if s["memory_fits"] else "C3" for _, s in rows],
          label="modeled total of the largest rank (red: does not fit)")
    cap = [(s["memory_capacity"] or 0) / div for _, s in rows]
    if not small:
        for i, c in enumerate(cap):
            m.hlines(c, i - 0.45, i + 0.45, colors="k", lw=2, label="device capacity" if i == 0 else None)
    m.set_xticks(x, labels, rotation=20, ha="right")
    m.set_ylabel(f"{unit} per device")
    m.set_ylim(0, 1.3 * max((cap if not small else []) + [b / div for b in need]) or 1)
    m.set_title("modeled memory against the device's capacity" if not small else
                f"modeled memory (capacity {max(cap) * div / gib:.0f} GiB per device, off this scale)")
    m.legend(fontsize=8, loc="upper left")

    fig.suptitle(f"{args.experiment}: launch {launch['id']}, SIMULATED on {launch.get('hardware')} (nothing trained)")
    bottom_frac = pc.footer(fig, args.experiment, launch, runs, names)
    fig.tight_layout(rect=(0, bottom_frac, 1, 0.95))
    os.makedirs(args.out, exist_ok=True)
    path = pc.figure_path(args.out, args.experiment, launch, "split")
    fig.savefig(path, dpi=110)
    print(f"{'variant':<{pc.ALIAS_MAX}} {'ms/step':>9} {'compute':>9} {'comm':>9} {'p2p':>9} {'bubble':>9} {'GiB':>7} fits")
    for (v, s), label in zip(rows, labels):
        print(f"{label:<{pc.ALIAS_MAX}} {1e3 * s['step_seconds']:9.3f} {1e3 * s['compute_seconds']:9.3f} "
              f"{1e3 * s['comm_seconds']:9.3f} {1e3 * s['p2p_seconds']:9.3f} {1e3 * s['bubble_seconds']:9.3f} "
              f"{(s['memory_bytes'] or 0) / gib:7.2f} {'yes' if s['memory_fits'] else 'NO'}")
    print(f"wrote {path}")


def main():
    ap = argparse.ArgumentParser(description="ablation panels of a launch: time, calls, bytes, memory, loss parity")
    pc.add_arguments(ap)
    args = ap.parse_args()
    con = pc.open_db(PROG, args.db, args.experiment)
    if pc.is_simulated(pc.chosen_launch(PROG, con, args.experiment, args.launch)):
        return plot_simulated(con, args)
    launch, runs = pc.select_runs(PROG, con, args.experiment, args.launch)
    variants = pc.by_variant(runs)
    base = pc.same_architecture_baseline(variants)
    rows = {v: variant_numbers(con, rs) for v, rs in variants.items()}
    names = list(rows)
    labels = [pc.variant_alias(v) for v in names]
    x = list(range(len(names)))

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(17, 10))
    phase_colors = {p: f"C{i}" for i, p in enumerate(pc.PHASES)}

    # 1. step time with spread
    a = axes[0][0]
    comp = [rows[v]["step_ms"] - rows[v]["comm_ms"] for v in names]
    comm = [rows[v]["comm_ms"] for v in names]
    a.bar(x, comp, color="0.65", label="compute (step − communication)")
    a.bar(x, comm, bottom=comp, color="C3", label="communication")
    err = [[rows[v]["step_ms"] - rows[v]["lo"] for v in names], [rows[v]["hi"] - rows[v]["step_ms"] for v in names]]
    a.errorbar(x, [rows[v]["step_ms"] for v in names], yerr=err, fmt="none", ecolor="k", capsize=5, lw=1.2,
               label="spread (repeats min–max, else p10–p90)")
    a.set_xticks(x, labels, rotation=20, ha="right"); a.set_ylabel("median ms per step after warm-up")
    a.set_ylim(0, 1.35 * max([rows[v]["hi"] for v in names if rows[v]["hi"] == rows[v]["hi"]] or [1]))
    a.set_title("step time"); a.legend(fontsize=7, loc="upper left")
    draw_verdicts(a, args, launch, names, [max(rows[v]["hi"], rows[v]["step_ms"]) if rows[v]["hi"] == rows[v]["hi"] else rows[v]["step_ms"] for v in names])

    # 2. collective calls per step
    a = axes[0][1]
    bottom = [0.0] * len(names)
    for p in pc.PHASES:
        vals = [rows[v]["calls"][p] for v in names]
        if any(vals):
            a.bar(x, vals, bottom=bottom, color=phase_colors[p], label=p)
            bottom = [b + c for b, c in zip(bottom, vals)]
    a.plot(x, [rows[v]["max_rank_calls"] for v in names], "kx", ms=9, mew=2, linestyle="none", label="largest rank, all phases")
    a.set_xticks(x, labels, rotation=20, ha="right"); a.set_ylabel("collective calls per step (rank 0)")
    a.set_ylim(0, 1.3 * max([max(b, rows[v]["max_rank_calls"]) for b, v in zip(bottom, names)] or [1]) or 1)
    a.set_title("collective calls"); a.legend(fontsize=7, loc="upper left", ncol=2)

    # 3. bytes per step: transformer layers vs layer -1
    a = axes[0][2]
    w = 0.38
    for k, (key, hatch, label) in enumerate((("layer_bytes", None, "transformer layers"), ("head_bytes", "//", "layer −1"))):
        bottom = [0.0] * len(names)
        for p in pc.PHASES:
            vals = [rows[v][key][p] / 2**20 for v in names]
            if any(vals):
                a.bar([i + (k - 0.5) * w for i in x], vals, width=w, bottom=bottom, color=phase_colors[p], hatch=hatch,
                      edgecolor="k" if hatch else None, lw=0.3, label=f"{p} ({label})")
                bottom = [b + c for b, c in zip(bottom, vals)]
    a.set_xticks([i + d for i in x for d in (-w / 2, w / 2)], ["layers", "−1"] * len(names), fontsize=7)
    for i, v in enumerate(labels):   # the variant under its pair of bars (turned when they would touch)
        a.text(i, -0.09, v, ha="right" if len(names) > 3 else "center", va="top", fontsize=8,
               rotation=20 if len(names) > 3 else 0, transform=a.get_xaxis_transform())
    a.set_ylabel("MiB per step (rank 0)")
    tallest = max([sum(rows[v][k].values()) for v in names for k in ("layer_bytes", "head_bytes")] or [0]) / 2**20
    a.set_ylim(0, 1.35 * tallest or 1)
    a.set_title("bytes moved: transformer layers (solid)\nlayer −1: embedding, head, sync (hatched)", fontsize=9)
    a.legend(fontsize=6, ncol=2)

    # 4. memory: parts stacked, peak as a line
    a = axes[1][0]
    bottom = [0.0] * len(names)
    for j, c in enumerate(MEM_PARTS):
        vals = [rows[v]["mem"][c] / 2**20 for v in names]
        a.bar(x, vals, bottom=bottom, color=f"C{j}", label=c)
        bottom = [b + c2 for b, c2 in zip(bottom, vals)]
    for i, v in enumerate(names):
        peak = rows[v]["mem"]["peak_rss"] / 2**20
        a.hlines(peak, i - 0.45, i + 0.45, colors="k", lw=2, label="peak resident set" if i == 0 else None)
    a.set_xticks(x, labels, rotation=20, ha="right"); a.set_ylabel("MiB (largest rank)")
    a.set_ylim(0, 1.3 * max(max(rows[v]["mem"]["peak_rss"] for v in names), max(bottom)) / 2**20 or 1)
    a.set_title("memory: parts stacked, peak as a line"); a.legend(fontsize=7, loc="upper left", ncol=3)

    # 5. loss parity against the same-architecture baseline
    a = axes[1][1]
    parity = []
    for i, v in enumerate(names):
        ref = base[v]
        if ref is None:
            continue
        mine, theirs = rows[v]["loss"], rows[ref]["loss"]
        common = [s for s in sorted(mine) if s in theirs and mine[s] is not None and theirs[s] is not None]
        if not common:
            continue
        s = pc.style(i)
        d = [mine[k] - theirs[k] for k in common]
        a.plot(common, d, color=s["color"], marker=s["marker"], linestyle=s["linestyle"], markersize=3,
               markevery=pc.markevery(i, len(names), len(common)), label=f"{pc.variant_alias(v)} − {pc.variant_alias(ref)}")
        parity.append((v, ref, max(abs(t) for t in d)))
    a.axhline(0, color="k", lw=0.5)
    a.set_xlabel("step"); a.set_ylabel("training loss difference")
    a.set_title("loss parity against the same-architecture baseline")
    if parity:
        a.legend(fontsize=8)
    else:
        a.text(0.5, 0.5, "no two variants share an architecture", ha="center", va="center", transform=a.transAxes)
    alone = pc.without_partner(variants)
    if alone and len(alone) < len(names):
        a.text(0.01, 0.01, "no other variant of the same architecture: " + ", ".join(map(pc.variant_alias, alone)),
               fontsize=7, transform=a.transAxes)

    axes[1][2].axis("off")
    lines = [f"{'variant':<{pc.ALIAS_MAX}} {'runs':>4} {'ms/step':>9} {'spread':>15} {'calls':>6} {'MiB lay':>8} {'MiB −1':>7}"]
    for v in names:
        r = rows[v]
        lines.append(f"{pc.variant_alias(v):<{pc.ALIAS_MAX}} {r['n']:>4} {r['step_ms']:9.1f} {r['lo']:7.1f}–{r['hi']:<7.1f} "
                     f"{sum(r['calls'].values()):6.0f} {sum(r['layer_bytes'].values()) / 2**20:8.2f} "
                     f"{sum(r['head_bytes'].values()) / 2**20:7.2f}")
    axes[1][2].text(0, 1, "\n".join(lines), family="monospace", fontsize=7, va="top")

    title = f"{args.experiment}: " + (f"launch {launch['id']}" if launch else "latest run of each variant")
    fig.suptitle(title)
    bottom = pc.footer(fig, args.experiment, launch, runs, names)
    fig.tight_layout(rect=(0, bottom, 1, 0.97))
    os.makedirs(args.out, exist_ok=True)
    path = pc.figure_path(args.out, args.experiment, launch, "ablation")
    fig.savefig(path, dpi=110)
    print("\n".join(lines))
    for v, ref, m in parity:
        print(f"{pc.variant_alias(v)} vs {pc.variant_alias(ref)}: max |Δloss| {m:.3g}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
