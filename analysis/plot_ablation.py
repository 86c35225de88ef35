#!/usr/bin/python3
"""plot_ablation.py EXPERIMENT [--db runs/boost.db] [--out analysis/figures]

The ablation figure of one experiment (make figures EXP=name): for the latest run of each
variant, four panels from the run database —
  1. step time split into communication (sum of the collectives' seconds per step, all
     groups) and the rest (compute), mean over the steps after the first;
  2. bytes moved per step, split by phase (forward / backward / recompute / optimizer /
     pipeline / other);
  3. memory per category (parameters, gradients, optimizer, activations, peak RSS);
  4. loss parity: each variant's training loss minus the first variant's, per step.
Writes <out>/<experiment>_ablation.png and prints the numbers it plotted. Exit 2 with a
clear message when the database or the experiment is missing.
"""
import argparse
import os
import sqlite3
import sys


def die(msg):
    sys.stderr.write(f"plot_ablation: {msg}\n")
    sys.exit(2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("experiment")
    ap.add_argument("--db", default="runs/boost.db")
    ap.add_argument("--out", default="analysis/figures")
    args = ap.parse_args()
    if not os.path.exists(args.db):
        die(f"no run database at {args.db} (run an experiment first: make exp EXP={args.experiment})")
    con = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
    runs = con.execute("SELECT variant, MAX(id) FROM runs WHERE experiment = ? GROUP BY variant "
                       "ORDER BY MIN(id)", (args.experiment,)).fetchall()
    if not runs:
        die(f"no runs of experiment '{args.experiment}' in {args.db}")

    phases = ["forward", "backward", "recompute", "optimizer", "pipeline", "other"]
    cats = ["parameters", "gradients", "optimizer", "activations", "peak_rss"]
    rows = []
    for variant, rid in runs:
        steps = con.execute("SELECT step, step_seconds, loss FROM steps WHERE run_id = ? ORDER BY step", (rid,)).fetchall()
        if not steps:
            continue
        comm_s = dict(con.execute("SELECT step, SUM(seconds) FROM comm WHERE run_id = ? GROUP BY step", (rid,)).fetchall())
        timed = steps[1:] if len(steps) > 1 else steps
        step_ms = 1e3 * sum(s[1] for s in timed) / len(timed)
        comm_ms = 1e3 * sum(comm_s.get(s[0], 0.0) or 0.0 for s in timed) / len(timed)
        nsteps = len(steps)
        by_phase = dict(con.execute("SELECT phase, SUM(bytes) FROM comm WHERE run_id = ? GROUP BY phase", (rid,)).fetchall())
        mem = dict(con.execute("SELECT category, bytes FROM memory WHERE run_id = ?", (rid,)).fetchall())
        rows.append(dict(variant=variant, run=rid, step_ms=step_ms, comm_ms=min(comm_ms, step_ms),
                         bytes={p: (by_phase.get(p, 0) or 0) / nsteps for p in phases},
                         mem={c: mem.get(c, 0) or 0 for c in cats},
                         loss={s[0]: s[2] for s in steps}))
    if not rows:
        die(f"the runs of '{args.experiment}' logged no steps")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["variant"] for r in rows]
    x = range(len(rows))
    fig, ax = plt.subplots(2, 2, figsize=(13, 9))
    a = ax[0][0]
    comp = [r["step_ms"] - r["comm_ms"] for r in rows]
    comm = [r["comm_ms"] for r in rows]
    a.bar(x, comp, label="compute (step − communication)")
    a.bar(x, comm, bottom=comp, label="communication")
    a.set_xticks(list(x), names, rotation=20, ha="right"); a.set_ylabel("ms per step"); a.legend(); a.set_title("step time")
    a = ax[0][1]
    bottom = [0.0] * len(rows)
    for p in phases:
        vals = [r["bytes"][p] / 2**20 for r in rows]
        if any(vals):
            a.bar(x, vals, bottom=bottom, label=p)
            bottom = [b + v for b, v in zip(bottom, vals)]
    a.set_xticks(list(x), names, rotation=20, ha="right"); a.set_ylabel("MiB per step (rank 0's view)")
    a.legend(); a.set_title("bytes moved by collectives")
    a = ax[1][0]
    w = 0.8 / len(cats)
    for j, c in enumerate(cats):
        a.bar([i + j * w for i in x], [r["mem"][c] / 2**20 for r in rows], width=w, label=c)
    a.set_xticks([i + 0.4 - w / 2 for i in x], names, rotation=20, ha="right"); a.set_ylabel("MiB (largest rank)")
    a.legend(fontsize=8); a.set_title("memory")
    a = ax[1][1]
    ref = rows[0]["loss"]
    for r in rows[1:]:
        common = sorted(set(ref) & set(r["loss"]))
        a.plot(common, [r["loss"][s] - ref[s] for s in common], label=f"{r['variant']} − {rows[0]['variant']}")
    a.axhline(0, color="k", lw=0.5); a.set_xlabel("step"); a.set_ylabel("training loss difference")
    a.set_title("loss parity"); a.legend(fontsize=8)
    fig.suptitle(f"{args.experiment}: latest run of each variant ({args.db})")
    fig.tight_layout()
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"{args.experiment}_ablation.png")
    fig.savefig(path, dpi=110)
    print(f"{'variant':28s} {'run':>5s} {'ms/step':>9s} {'comm ms':>9s} {'MiB/step':>9s} {'act MiB':>9s} {'max|Δloss|':>11s}")
    for r in rows:
        common = set(ref) & set(r["loss"])
        dl = max((abs(r["loss"][s] - ref[s]) for s in common), default=0.0)
        print(f"{r['variant']:28s} {r['run']:5d} {r['step_ms']:9.1f} {r['comm_ms']:9.2f} "
              f"{sum(r['bytes'].values()) / 2**20:9.2f} {r['mem']['activations'] / 2**20:9.1f} {dl:11.2e}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
