#!/usr/bin/python3
"""plot_losses.py EXPERIMENT [--db runs/boost.db] [--out analysis/figures] [--x step|tokens]

Training-loss curves of one experiment from the run database (make figures EXP=name).

For the LATEST run (highest id) of each variant of EXPERIMENT it plots the training loss
per step (line) and the validation losses (markers, same colour) into
<out>/<experiment>_loss.png. Tables read (written by the engine's SQLite logger):
  runs(id, uid, experiment, variant, status, ...)
  steps(run_id, step, tokens_seen, loss, ...)
  validation(run_id, step, loss)
Exit 2 with a clear message when the database, the tables or the experiment are missing.
"""
import argparse
import os
import sqlite3
import sys


def die(msg):
    sys.stderr.write(f"plot_losses: {msg}\n")
    sys.exit(2)


def columns(con, table):
    return [r[1] for r in con.execute(f"PRAGMA table_info({table})")]


def main():
    ap = argparse.ArgumentParser(description="plot training/validation loss of an experiment")
    ap.add_argument("experiment")
    ap.add_argument("--db", default="runs/boost.db")
    ap.add_argument("--out", default="analysis/figures")
    ap.add_argument("--x", choices=["step", "tokens"], default="step",
                    help="x axis: optimizer step (default) or tokens seen")
    ap.add_argument("--logy", action="store_true", help="log-scale loss axis")
    args = ap.parse_args()

    if not os.path.exists(args.db):
        die(f"no run database at {args.db} (run an experiment first: make exp EXP={args.experiment})")
    con = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
    have = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    for t in ("runs", "steps"):
        if t not in have:
            die(f"{args.db} has no table '{t}' (tables: {', '.join(sorted(have)) or 'none'})")
    rcols = columns(con, "runs")
    for c in ("id", "experiment", "variant"):
        if c not in rcols:
            die(f"table runs lacks column '{c}' (has: {', '.join(rcols)})")

    rows = con.execute(
        "SELECT variant, MAX(id) FROM runs WHERE experiment = ? GROUP BY variant ORDER BY variant",
        (args.experiment,)).fetchall()
    if not rows:
        known = [r[0] for r in con.execute("SELECT DISTINCT experiment FROM runs ORDER BY experiment")]
        die(f"no runs of experiment '{args.experiment}' in {args.db} "
            f"(experiments there: {', '.join(map(str, known)) or 'none'})")

    scols = columns(con, "steps")
    xcol = "tokens_seen" if args.x == "tokens" and "tokens_seen" in scols else "step"
    has_val = "validation" in have

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    plotted = 0
    for i, (variant, run_id) in enumerate(rows):
        color = f"C{i % 10}"
        label = variant if variant not in (None, "") else "(default)"
        status = ""
        if "status" in rcols:
            status = con.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()[0] or ""
        pts = con.execute(f"SELECT {xcol}, loss FROM steps WHERE run_id = ? AND loss IS NOT NULL ORDER BY step",
                          (run_id,)).fetchall()
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], color=color, lw=1.2,
                    label=f"{label} (run {run_id}{', ' + status if status else ''}) train")
            plotted += 1
        if has_val:
            if xcol == "tokens_seen":
                # map validation steps to tokens through the steps table
                vpts = con.execute(
                    "SELECT s.tokens_seen, v.loss FROM validation v JOIN steps s "
                    "ON s.run_id = v.run_id AND s.step = v.step WHERE v.run_id = ? ORDER BY v.step",
                    (run_id,)).fetchall()
            else:
                vpts = con.execute("SELECT step, loss FROM validation WHERE run_id = ? ORDER BY step",
                                   (run_id,)).fetchall()
            if vpts:
                ax.plot([p[0] for p in vpts], [p[1] for p in vpts], "o--", color=color, ms=4, lw=0.8,
                        label=f"{label} validation")
                plotted += 1
        print(f"{label:<24} run {run_id:<5} {len(pts):6d} steps"
              + (f", final train loss {pts[-1][1]:.4f}" if pts else "")
              + (f", {len(vpts)} validation points, last {vpts[-1][1]:.4f}" if has_val and vpts else ""))
    if plotted == 0:
        die(f"experiment '{args.experiment}' has runs but no logged steps yet")

    ax.set_xlabel("tokens seen" if xcol == "tokens_seen" else "optimizer step")
    ax.set_ylabel("cross-entropy loss")
    if args.logy:
        ax.set_yscale("log")
    ax.set_title(f"{args.experiment}: training loss (latest run of each variant)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    os.makedirs(args.out, exist_ok=True)
    out = os.path.join(args.out, f"{args.experiment}_loss.png")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
