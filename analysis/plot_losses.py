#!/usr/bin/python3
"""plot_losses.py EXPERIMENT [--db runs/boost.db] [--launch ID] [--out analysis/figures] [--x step|tokens|time]
                [--smooth N] [--logy] [--skip-simulated]

Loss curves of one launch of an experiment (make figures EXP=name [LAUNCH=id] [X=tokens|time]
[SMOOTH=N]) into <out>/<experiment>_L<launch>_loss.png (each launch its own file):
  top:    training loss per step of each variant (its first completed run; a colour, a
          marker and a line style each, so that identical curves stay visible), validation
          losses as larger markers of the same colour;
  bottom: each variant's training loss minus its same-architecture baseline (the first
          earlier variant with the same model section: BOOST - Vanilla-TP, not - dense),
          or minus the first variant when none has its architecture (dashed, labelled so).
x: the optimizer step, the tokens seen, or the wall time (the sum of the steps' times);
--smooth N draws the trailing mean of N steps over the raw curve (drawn faint). Long
variant names appear as their short aliases (plot_common.variant_alias), the full names
in a key. Only completed runs of the launch are drawn (the others are printed as left
out). The caption names the model, the layout, the host and the launch. A simulated
launch has no loss (nothing was trained): refused before anything is written (exit 2;
--skip-simulated, as make figures passes it: a note and exit 0, plot_ablation.py draws its
step split). Exit 2 with a clear message when the database, the experiment or the launch
is missing.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_common as pc  # noqa: E402

PROG = "plot_losses"


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

    con = pc.open_db(PROG, args.db, args.experiment)
    launch = pc.chosen_launch(PROG, con, args.experiment, args.launch)
    if pc.is_simulated(launch):
        msg = (f"launch {launch['id']} of {args.experiment} is simulated (hardware profile {launch.get('hardware')}): "
               f"nothing was trained, so there is no loss curve; its figure is the modeled step split "
               f"(plot_ablation.py, {pc.figure_path(args.out, args.experiment, launch, 'split')})")
        if args.skip_simulated:
            print(f"{PROG}: {msg}")
            return
        pc.die(PROG, msg)
    launch, runs = pc.select_runs(PROG, con, args.experiment, args.launch)
    variants = pc.by_variant(runs)
    base = pc.same_architecture_baseline(variants)
    first = next(iter(variants))
    xkey = {"tokens": "tokens_seen", "time": "time"}.get(args.x, "step")

    curves = {}
    for v, rs in variants.items():
        r = rs[0]
        st = pc.steps_of(con, r["id"])
        vals = con.execute("SELECT v.step, s.tokens_seen, v.loss FROM validation v LEFT JOIN steps s "
                           "ON s.run_id = v.run_id AND s.step = v.step WHERE v.run_id = ? ORDER BY v.step", (r["id"],)).fetchall()
        elapsed, t = {}, 0.0
        for s in st:
            t += s["step_seconds"] or 0.0
            elapsed[s["step"]] = t
        at = {"step": lambda row: row["step"], "tokens_seen": lambda row: row["tokens_seen"],
              "time": lambda row: elapsed.get(row["step"])}[xkey]
        curves[v] = dict(run=r, x=[at(s) for s in st], loss=[s["loss"] for s in st],
                         by_step={s["step"]: s["loss"] for s in st}, x_of_step={s["step"]: at(s) for s in st},
                         vx=[at(row) for row in vals], vloss=[row["loss"] for row in vals])
    if not any(c["x"] for c in curves.values()):
        pc.die(PROG, f"the runs of '{args.experiment}' logged no steps")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, dx) = plt.subplots(2, 1, figsize=(9, 8), sharex=True, gridspec_kw=dict(height_ratios=[3, 2]))
    for i, (v, c) in enumerate(curves.items()):
        s = pc.style(i)
        n = len(c["x"])
        name = pc.variant_alias(v)
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
    ax.legend(fontsize=8)
    ax.set_title(f"{args.experiment}: training loss" + (f" (launch {launch['id']})" if launch else " (latest runs)")
                 + (f", trailing mean of {args.smooth} steps" if args.smooth > 1 else ""))

    # Differences to the same-architecture baseline; only when no two variants share an
    # architecture, to the first variant instead (dotted, labelled so).
    any_same = any(base.values())
    drawn = 0
    rows = []
    for i, (v, c) in enumerate(curves.items()):
        ref = base[v] if any_same else (first if v != first else None)
        if ref is None:
            continue
        r = curves[ref]
        common = [k for k in sorted(c["by_step"]) if k in r["by_step"] and c["by_step"][k] is not None and r["by_step"][k] is not None]
        if not common:
            continue
        xs = [c["x_of_step"][k] for k in common]
        d = pc.trailing_mean([c["by_step"][k] - r["by_step"][k] for k in common], args.smooth)
        s = pc.style(i)
        same = base[v] is not None
        dx.plot(xs, d, color=s["color"], marker=s["marker"], markersize=3, markevery=pc.markevery(i, len(curves), len(xs)),
                linestyle=s["linestyle"] if same else (0, (1, 3)),
                label=f"{pc.variant_alias(v)} − {pc.variant_alias(ref)}" + ("" if same else " (other architecture)"))
        rows.append((v, ref, same, max(abs(x) for x in d)))
        drawn += 1
    dx.axhline(0, color="k", lw=0.6)
    dx.set_xlabel({"tokens_seen": "tokens seen", "time": "wall time of the steps (s)"}.get(xkey, "optimizer step"))
    dx.set_ylabel("loss difference")
    alone = pc.without_partner(variants)
    dx.set_title("difference to the same-architecture baseline" if any_same else
                 "difference to the first variant (no two variants share an architecture)", fontsize=10)
    if any_same and alone:
        dx.text(0.01, 0.02, "no other variant of the same architecture: " + ", ".join(map(pc.variant_alias, alone)),
                fontsize=7, transform=dx.transAxes)
    dx.grid(alpha=0.3)
    if drawn:
        dx.legend(fontsize=8)
    else:
        dx.text(0.5, 0.5, "one variant: nothing to compare", ha="center", va="center", transform=dx.transAxes)

    bottom = pc.footer(fig, args.experiment, launch, runs, list(curves))
    fig.tight_layout(rect=(0, bottom, 1, 1))
    os.makedirs(args.out, exist_ok=True)
    out = pc.figure_path(args.out, args.experiment, launch, "loss")
    fig.savefig(out, dpi=120)

    for v, c in curves.items():
        print(f"{pc.variant_alias(v):<{pc.ALIAS_MAX}} run {c['run']['id']:<5} {len(c['x']):6d} steps"
              + (f", final train loss {c['loss'][-1]:.4f}" if c["loss"] else "")
              + (f", last validation {c['vloss'][-1]:.4f}" if c["vloss"] else ""))
    for v, ref, same, m in rows:
        print(f"{pc.variant_alias(v):<{pc.ALIAS_MAX}} vs {pc.variant_alias(ref):<{pc.ALIAS_MAX}} max |Δloss| {m:.3g}"
              + ("" if same else "  (other architecture)"))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
