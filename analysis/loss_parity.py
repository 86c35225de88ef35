#!/usr/bin/python3
"""loss_parity.py — the TP-vs-DP loss-parity curve of the authors' README, measured by real CPU
training (`make loss-parity`): experiments/tp-parity.yaml's small CoLA model with BOOST (BTP +
online RMSNorm + grouping), trained once with tensor parallelism (tp 2 × dp 1) and once with
data parallelism (tp 1 × dp 2), the same global batch, data and seed; both curves and their
largest difference.

    /usr/bin/python3 analysis/loss_parity.py [--steps 100] [--out build/reproduction] [--db DB]

Writes OUT/loss_parity.png, .csv (step, loss of each run) and .md (the runs, the maximum
|difference|, the host and its CPU: the loss difference is arithmetic, not timing, so no load is recorded); make reproduce includes the .md in REPORT.md when it is there.
The runs are recorded in DB (default build/reproduction/loss_parity.db, not tracked).
"""
import argparse
import csv
import datetime
import os
import platform
import sqlite3
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VARIANTS = (("tp2", "tp 2 × dp 1 (tensor parallel, BTP)"), ("dp2", "tp 1 × dp 2 (data parallel)"))


def git_commit():
    c = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       text=True).stdout.strip() or "unknown"
    d = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True).stdout.strip()
    return c + (" (with uncommitted changes)" if d else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--out", default="build/reproduction")
    ap.add_argument("--db", default=None, help="run database (default OUT/loss_parity.db)")
    a = ap.parse_args()
    out = os.path.join(ROOT, a.out)
    os.makedirs(out, exist_ok=True)
    db = a.db or os.path.join(out, "loss_parity.db")
    commit = git_commit()
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    runs = {}
    for v, _ in VARIANTS:
        cmd = ["make", "-s", "exp", "EXP=tp-parity", f"VARIANT={v}", f"SET=run.db={db} train.steps={a.steps} train.log_every=1"]
        p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode:
            sys.exit(f"loss_parity: {' '.join(cmd)} failed (exit {p.returncode}):\n{p.stdout[-2000:]}")
    con = sqlite3.connect(db)
    con.execute("PRAGMA busy_timeout = 10000")
    for v, _ in VARIANTS:
        row = con.execute("SELECT id, tp, dp, cpu_model, git_commit FROM runs WHERE experiment = 'tp-parity' AND variant = ? "
                          "AND status = 'completed' ORDER BY id DESC LIMIT 1", (v,)).fetchone()
        if not row:
            sys.exit(f"loss_parity: {db}: no completed run of tp-parity/{v}")
        steps = con.execute("SELECT step, loss FROM steps WHERE run_id = ? ORDER BY step", (row[0],)).fetchall()
        runs[v] = {"id": row[0], "tp": row[1], "dp": row[2], "cpu": row[3], "commit": row[4], "loss": dict(steps)}
    con.close()
    common = sorted(set(runs["tp2"]["loss"]) & set(runs["dp2"]["loss"]))
    if len(common) < a.steps:
        sys.exit(f"loss_parity: only {len(common)} common steps of {a.steps}")
    diff = [abs(runs["tp2"]["loss"][s] - runs["dp2"]["loss"][s]) for s in common]
    worst = max(range(len(common)), key=lambda i: diff[i])
    with open(os.path.join(out, "loss_parity.csv"), "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["step", "loss_tp2_dp1", "loss_tp1_dp2", "abs_difference"])
        for s, d in zip(common, diff):
            w.writerow([s, f"{runs['tp2']['loss'][s]:.9g}", f"{runs['dp2']['loss'][s]:.9g}", f"{d:.3g}"])
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    for (v, name), style in zip(VARIANTS, ("-", "--")):
        ax[0].plot(common, [runs[v]["loss"][s] for s in common], style, label=name)
    ax[0].set_xlabel("step")
    ax[0].set_ylabel("training loss")
    ax[0].set_title("loss: the two layouts (curves overlap)", fontsize=10)
    ax[0].legend(fontsize=8)
    ax[1].semilogy(common, [max(d, 1e-12) for d in diff], color="black")
    ax[1].set_xlabel("step")
    ax[1].set_ylabel("|loss tp2 − loss dp2| (log)")
    ax[1].set_title(f"difference: max {diff[worst]:.2e} at step {common[worst]}", fontsize=10)
    fig.suptitle("TP vs DP loss parity, measured: CoLA (tp-parity.yaml), BOOST, fp32 on this CPU", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    fig.savefig(os.path.join(out, "loss_parity.png"), dpi=110)
    plt.close(fig)
    md = [f"Commit: {commit}\n",
          f"Measured on host `{platform.node()}` ({runs['tp2']['cpu']}), {started} (`/usr/bin/python3 analysis/loss_parity.py`, "
          f"runs {runs['tp2']['id']} and {runs['dp2']['id']} in "
          f"`{os.path.relpath(db, ROOT)}`).\n",
          "![loss parity](loss_parity.png)\n",
          f"experiments/tp-parity.yaml, {a.steps} steps each, the same global batch, data and seed: "
          + "; ".join(f"{name}: loss {runs[v]['loss'][common[0]]:.4f} at step {common[0]} → {runs[v]['loss'][common[-1]]:.4f} at "
                      f"step {common[-1]}" for v, name in VARIANTS)
          + f". **Largest |difference| over the {len(common)} steps: {diff[worst]:.3g}** (step {common[worst]}; "
          f"measured, fp32 rounding of a different reduction order).\n"]
    with open(os.path.join(out, "loss_parity.md"), "w") as fh:
        fh.write("\n".join(md) + "\n")
    print(f"loss_parity: max |difference| {diff[worst]:.3g} over {len(common)} steps; wrote {a.out}/loss_parity.png, .csv, .md")


if __name__ == "__main__":
    main()
