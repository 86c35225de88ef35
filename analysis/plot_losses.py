#!/usr/bin/python3
"""plot_losses.py EXPERIMENT [--db runs/boost.db] [--launch ID] [--out analysis/figures] [--x step|tokens] [--logy]

Loss curves of one launch of an experiment (make figures EXP=name [LAUNCH=id]) into
<out>/<experiment>_loss.png:
  top:    training loss per step of each variant (its first completed run; a colour, a
          marker and a line style each, so that identical curves stay visible), validation
          losses as larger markers of the same colour;
  bottom: each variant's training loss minus its same-architecture baseline (the first
          earlier variant with the same model section: BOOST - Vanilla-TP, not - dense),
          or minus the first variant when none has its architecture (dashed, labelled so).
Only completed runs of the launch are drawn (the others are printed as left out). The
caption names the model, the layout, the host and the launch. Exit 2 with a clear
message when the database, the experiment or the launch is missing.
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
    ap.add_argument("--x", choices=["step", "tokens"], default="step", help="x axis: optimizer step (default) or tokens seen")
    ap.add_argument("--logy", action="store_true", help="log-scale loss axis")
    args = ap.parse_args()

    con = pc.open_db(PROG, args.db, args.experiment)
    launch, runs = pc.select_runs(PROG, con, args.experiment, args.launch)
    variants = pc.by_variant(runs)
    base = pc.same_architecture_baseline(variants)
    first = next(iter(variants))
    xkey = "tokens_seen" if args.x == "tokens" else "step"

    curves = {}
    for v, rs in variants.items():
        r = rs[0]
        st = pc.steps_of(con, r["id"])
        vals = con.execute("SELECT v.step, s.tokens_seen, v.loss FROM validation v LEFT JOIN steps s "
                           "ON s.run_id = v.run_id AND s.step = v.step WHERE v.run_id = ? ORDER BY v.step", (r["id"],)).fetchall()
        curves[v] = dict(run=r, x=[s[xkey] for s in st], loss=[s["loss"] for s in st],
                         by_step={s["step"]: s["loss"] for s in st},
                         vx=[(row["step"] if xkey == "step" else row["tokens_seen"]) for row in vals],
                         vloss=[row["loss"] for row in vals])
    if not any(c["x"] for c in curves.values()):
        pc.die(PROG, f"the runs of '{args.experiment}' logged no steps")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, dx) = plt.subplots(2, 1, figsize=(9, 8), sharex=True, gridspec_kw=dict(height_ratios=[3, 2]))
    for i, (v, c) in enumerate(curves.items()):
        s = pc.style(i)
        n = len(c["x"])
        ax.plot(c["x"], c["loss"], color=s["color"], linestyle=s["linestyle"], marker=s["marker"], markersize=5,
                markevery=pc.markevery(i, len(curves), n), lw=2.4 - 1.6 * i / max(1, len(curves) - 1),
                label=f"{v} (run {c['run']['id']})")
        if c["vx"]:
            ax.plot(c["vx"], c["vloss"], linestyle="none", marker=s["marker"], markersize=8, markerfacecolor="none",
                    color=s["color"], label=f"{v} validation")
    ax.set_ylabel("cross-entropy loss")
    if args.logy:
        ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"{args.experiment}: training loss" + (f" (launch {launch['id']})" if launch else " (latest runs)"))

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
        xs = common if xkey == "step" else [c["x"][sorted(c["by_step"]).index(k)] for k in common]
        d = [c["by_step"][k] - r["by_step"][k] for k in common]
        s = pc.style(i)
        same = base[v] is not None
        dx.plot(xs, d, color=s["color"], marker=s["marker"], markersize=3, markevery=pc.markevery(i, len(curves), len(xs)),
                linestyle=s["linestyle"] if same else (0, (1, 3)),
                label=f"{v} − {ref}" + ("" if same else " (other architecture)"))
        rows.append((v, ref, same, max(abs(x) for x in d)))
        drawn += 1
    dx.axhline(0, color="k", lw=0.6)
    dx.set_xlabel("tokens seen" if xkey == "tokens_seen" else "optimizer step")
    dx.set_ylabel("loss difference")
    alone = pc.without_partner(variants)
    dx.set_title("difference to the same-architecture baseline" if any_same else
                 "difference to the first variant (no two variants share an architecture)", fontsize=10)
    if any_same and alone:
        dx.text(0.01, 0.02, "no other variant of the same architecture: " + ", ".join(alone), fontsize=7, transform=dx.transAxes)
    dx.grid(alpha=0.3)
    if drawn:
        dx.legend(fontsize=8)
    else:
        dx.text(0.5, 0.5, "one variant: nothing to compare", ha="center", va="center", transform=dx.transAxes)

    fig.text(0.01, 0.005, pc.caption(args.experiment, launch, runs), fontsize=7, wrap=True, va="bottom")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    os.makedirs(args.out, exist_ok=True)
    out = os.path.join(args.out, f"{args.experiment}_loss.png")
    fig.savefig(out, dpi=120)

    for v, c in curves.items():
        print(f"{v:<28} run {c['run']['id']:<5} {len(c['x']):6d} steps"
              + (f", final train loss {c['loss'][-1]:.4f}" if c["loss"] else "")
              + (f", last validation {c['vloss'][-1]:.4f}" if c["vloss"] else ""))
    for v, ref, same, m in rows:
        print(f"{v:<28} vs {ref:<24} max |Δloss| {m:.3g}" + ("" if same else "  (other architecture)"))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
