#!/usr/bin/python3
"""plot_losses.py [EXPERIMENT] [--db runs/boost.db] [--launch ID...] [--run ID...] [--out analysis/figures]
                [--x step|tokens|time] [--smooth N] [--logy] [--skip-simulated]

The training curves of one launch of an experiment (make figures EXP=name [LAUNCH=id]
[X=tokens|time] [SMOOTH=N]), of several launches overlaid (LAUNCH="2 3": "L2 <variant>",
files _L2+3_), or of runs named one by one (RUNS="7 9": "r7 <variant>", files _R7+9_),
each figure with a JSON sidecar of what each panel drew (<same name>.json):
  <out>/<experiment>_L<launch>_loss.png
    top:    training loss per step of each variant (its first completed run; a colour, a
            marker and a line style each, so that identical curves stay visible), validation
            losses as larger markers of the same colour;
    bottom: each variant's training loss minus its same-architecture baseline (the first
            earlier variant of its launch with the same model section: BOOST - Vanilla-TP,
            not - dense), or minus the first variant when none has its architecture (dotted,
            labelled so);
  <out>/<experiment>_L<launch>_curves.png
    loss, learning rate, gradient norm and step time of every completed run (repeats
    included, a line style each), the way TensorBoard or W&B overlay runs.
x: the optimizer step, the tokens seen, or the wall time (the sum of the steps' times);
--smooth N draws the trailing mean of N steps over the raw curve (drawn faint). Long
variant names appear as their short aliases (plot_common.variant_alias), the full names
in a key. Only completed runs are drawn (the others are printed as left out). The caption
names the model, the layout, the host and the launch. A simulated launch has no loss
(nothing was trained): refused before anything is written (exit 2; --skip-simulated, as
make figures passes it: a note and exit 0, plot_ablation.py draws its step split). Exit 2
with a clear message when the database, the experiment or the launch is missing, DB names
no run database, or FIG_DIR names a file.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_common as pc  # noqa: E402

PROG = "plot_losses"


def x_of(steps, xkey):
    """{step: x} of a run's steps for the x axis."""
    elapsed, t = {}, 0.0
    for row in steps:
        t += row["step_seconds"] or 0.0
        elapsed[row["step"]] = t
    return {row["step"]: {"step": row["step"], "tokens_seen": row["tokens_seen"], "time": elapsed[row["step"]]}[xkey]
            for row in steps}


def plot_curves(con, args, sel, xkey, xlabel):
    """Loss, learning rate, gradient norm and step time of every run of the selection."""
    import matplotlib.pyplot as plt
    series = [("loss", "training loss", False), ("lr", "learning rate", False), ("grad_norm", "gradient norm (before clipping)", True),
              ("step_seconds", "step time (ms)", True)]
    fig, axes = plt.subplots(2, 2, figsize=(13, 8.5), sharex=True)
    drawn = {key: 0 for key, _, _ in series}
    groups = list(sel.groups.items())
    for gi, (label, rs) in enumerate(groups):
        st = pc.style(gi)
        for ri, r in enumerate(rs):
            rows = con.execute("SELECT step, tokens_seen, loss, lr, grad_norm, step_seconds FROM steps WHERE run_id = ? ORDER BY step",
                               (r["id"],)).fetchall()
            xs = x_of(rows, xkey)
            for (key, _, _), a in zip(series, axes.flat):
                pts = [(xs[row["step"]], row[key] * (1e3 if key == "step_seconds" else 1)) for row in rows if row[key] is not None]
                if not pts:
                    continue
                x, y = [p[0] for p in pts], [p[1] for p in pts]
                smooth = 1 if key == "lr" else args.smooth   # (the schedule is exact: nothing to smooth)
                ys = pc.trailing_mean(y, smooth)
                if smooth > 1:
                    a.plot(x, y, color=st["color"], lw=0.7, alpha=0.25)
                name = label + (f" #{r.get('repeat_index', ri)}" if len(rs) > 1 else "") + f" (run {r['id']})"
                a.plot(x, ys, color=st["color"], linestyle=pc.LINESTYLES[ri % len(pc.LINESTYLES)], lw=1.6,
                       marker=st["marker"], markersize=4, markevery=pc.markevery(gi, len(groups), len(x)), label=name)
                drawn[key] += 1
    for (key, title, logy), a in zip(series, axes.flat):
        a.set_title(title + (f", trailing mean of {args.smooth} steps" if args.smooth > 1 and drawn[key] and key != "lr" else ""),
                    fontsize=10)
        a.grid(alpha=0.3)
        if not drawn[key]:
            a.text(0.5, 0.5, f"no {title} recorded", ha="center", va="center", transform=a.transAxes)
        elif logy or (key == "loss" and args.logy):
            a.set_yscale("log")
    for a in axes[1]:
        a.set_xlabel(xlabel)
    pc.legend(axes[0][0], fontsize=7)
    fig.suptitle(sel.title() + ": training curves")
    bottom = pc.footer(fig, sel)
    fig.tight_layout(rect=(0, bottom, 1, 0.96))
    out = pc.figure_path(args.out, sel, "curves")
    pc.save(PROG, fig, out, 110, dict(runs=[r["id"] for r in sel.runs]))
    print(f"wrote {out}")


def main():
    ap = argparse.ArgumentParser(description="loss curves of a launch, with differences to the same-architecture baseline")
    pc.add_arguments(ap)
    ap.add_argument("--x", choices=["step", "tokens", "time"], default="step",
                    help="x axis: optimizer step (default), tokens seen, or wall time in seconds")
    ap.add_argument("--smooth", type=int, default=1, help="trailing mean over N steps (the raw curve faint behind it)")
    ap.add_argument("--logy", action="store_true", help="log-scale loss axis")
    ap.add_argument("--skip-simulated", action="store_true", help="a simulated launch: a note and exit 0 (make figures)")
    args = ap.parse_args()
    if args.smooth < 1:
        pc.die(PROG, f"--smooth {args.smooth}: expected a number of steps >= 1 (make figures SMOOTH=N)")

    pc.check_out(PROG, args.out)
    con = pc.open_db(PROG, args.db, args.experiment)
    if not args.run:
        chosen = [pc.chosen_launch(PROG, con, args.experiment, l) for l in (args.launch or [None])]
        if chosen and all(pc.is_simulated(l) for l in chosen if l) and any(chosen):
            ids = ", ".join(str(l["id"]) for l in chosen if l)
            msg = (f"launch {ids} of {chosen[0]['experiment']} is simulated (hardware profile {chosen[0].get('hardware')}): "
                   f"nothing was trained, so there is no loss curve; its figure is the modeled step split (plot_ablation.py)")
            if args.skip_simulated:
                print(f"{PROG}: {msg}")
                return
            pc.die(PROG, msg)
    sel = pc.select(PROG, con, args, simulated=False if args.launch and len(args.launch) > 1 else None)
    variants = sel.groups
    base = pc.same_architecture_baseline(variants)
    first = next(iter(variants))
    xkey = {"tokens": "tokens_seen", "time": "time"}.get(args.x, "step")

    curves = {}
    for v, rs in variants.items():
        r = rs[0]
        st = pc.steps_of(con, r["id"])
        vals = con.execute("SELECT step, loss FROM validation WHERE run_id = ? ORDER BY step", (r["id"],)).fetchall()
        xs = x_of(st, xkey)
        curves[v] = dict(run=r, x=[xs[s["step"]] for s in st], loss=[s["loss"] for s in st],
                         by_step={s["step"]: s["loss"] for s in st}, x_of_step=xs,
                         vx=[xs[row["step"]] for row in vals if row["step"] in xs],
                         vloss=[row["loss"] for row in vals if row["step"] in xs])
    if not any(c["x"] for c in curves.values()):
        pc.die(PROG, f"the runs of '{args.experiment}' logged no steps")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Differences to the same-architecture baseline; only when no two variants share an
    # architecture, to the first variant instead (dotted, labelled so). No pair: no panel.
    any_same = any(base.values())
    diffs, rows = [], []
    for i, (v, c) in enumerate(curves.items()):
        ref = base[v] if any_same else (first if v != first else None)
        if ref is None:
            continue
        r = curves[ref]
        common = [k for k in sorted(c["by_step"]) if k in r["by_step"] and c["by_step"][k] is not None and r["by_step"][k] is not None]
        if not common:
            continue
        d = pc.trailing_mean([c["by_step"][k] - r["by_step"][k] for k in common], args.smooth)
        diffs.append((i, v, ref, [c["x_of_step"][k] for k in common], d))
        rows.append((v, ref, base[v] is not None, max(abs(x) for x in d)))
    xlabel = {"tokens_seen": "tokens seen", "time": "wall time of the steps (s)"}.get(xkey, "optimizer step")
    if diffs:
        fig, (ax, dx) = plt.subplots(2, 1, figsize=(9, 8), sharex=True, gridspec_kw=dict(height_ratios=[3, 2]))
    else:
        fig, ax = plt.subplots(1, 1, figsize=(9, 5.5))
        ax.set_xlabel(xlabel)
    for i, (v, c) in enumerate(curves.items()):
        s = pc.style(i)
        n = len(c["x"])
        name = v
        y = pc.trailing_mean(c["loss"], args.smooth)
        if args.smooth > 1:
            ax.plot(c["x"], c["loss"], color=s["color"], lw=0.8, alpha=0.3)
        ax.plot(c["x"], y, color=s["color"], linestyle=s["linestyle"], marker=s["marker"], markersize=5,
                markevery=pc.markevery(i, len(curves), n), lw=2.4 - 1.6 * i / max(1, len(curves) - 1),
                label=f"{name} (run {c['run']['id']})")
        if c["vx"]:
            ax.plot(c["vx"], c["vloss"], linestyle="none", marker=s["marker"], markersize=8, markerfacecolor="none",
                    color=s["color"], label=f"{name} validation")
    ax.set_ylabel("cross-entropy loss")
    if args.logy:
        ax.set_yscale("log")
    ax.grid(alpha=0.3)
    pc.legend(ax, fontsize=8)
    ax.set_title(f"{sel.title()}: training loss" + (f", trailing mean of {args.smooth} steps" if args.smooth > 1 else ""))

    if diffs:
        for i, v, ref, xs, d in diffs:
            s = pc.style(i)
            same = base[v] is not None
            dx.plot(xs, d, color=s["color"], marker=s["marker"], markersize=3, markevery=pc.markevery(i, len(curves), len(xs)),
                    linestyle=s["linestyle"] if same else (0, (1, 3)),
                    label=f"{v} − {ref}" + ("" if same else " (other architecture)"))
        dx.axhline(0, color="k", lw=0.6)
        dx.set_xlabel(xlabel)
        dx.set_ylabel("loss difference")
        alone = pc.without_partner(variants)
        dx.set_title("difference to the same-architecture baseline" if any_same else
                     "difference to the first variant (no two variants share an architecture)", fontsize=10)
        if any_same and alone:
            dx.text(0.01, 0.02, "no other variant of the same architecture: " + ", ".join(alone),
                    fontsize=7, transform=dx.transAxes)
        dx.grid(alpha=0.3)
        dx.legend(fontsize=8)

    bottom = pc.footer(fig, sel)
    fig.tight_layout(rect=(0, bottom, 1, 1))
    out = pc.figure_path(args.out, sel, "loss")
    pc.save(PROG, fig, out, 120, dict(variants=list(curves)))

    for v, c in curves.items():
        print(f"{v:<{pc.ALIAS_MAX}} run {c['run']['id']:<5} {len(c['x']):6d} steps"
              + (f", final train loss {c['loss'][-1]:.4f}" if c["loss"] else "")
              + (f", last validation {c['vloss'][-1]:.4f}" if c["vloss"] else ""))
    for v, ref, same, m in rows:
        print(f"{v:<{pc.ALIAS_MAX}} vs {ref:<{pc.ALIAS_MAX}} max |Δloss| {m:.3g}"
              + ("" if same else "  (other architecture)"))
    print(f"wrote {out}")
    plot_curves(con, args, sel, xkey, xlabel)


if __name__ == "__main__":
    main()
