#!/usr/bin/python3
"""validate_cpu.py — the performance model's credential: predicted against measured step time
on this machine (issue 10, item 3; docs/performance-model.md §8).

    /usr/bin/python3 analysis/validate_cpu.py [--repeat 3] [--steps 12] [--tp 1,2,4]
        [--recipes ablation-btp,...] [--calibrate interleave|each|once|none] [--db runs/validation.db]
        [--out analysis/reproduction/validation_cpu]

In one session:
  1. build/calibrate writes experiments/hardware/cpu-local.yaml (GEMM table, attention, memory,
     op overhead, rank share and MPI collectives of this machine, measured now);
  2. for every recipe and tp, --repeat times: with --calibrate interleave (the default)
     `build/calibrate --share-only` (a few seconds: the rank share, a single process's rate
     against the table and the op overhead, measured now) into a temporary profile, one measured
     launch (build/exp: every variant that is not on demand, one run each of --steps steps) and
     one simulated launch of the same variants and overrides with that profile (build/exp
     --simulate). This machine's free capacity changes from one minute to the next — a 2-rank
     run took 45 ms a few minutes after one of 150 ms, other engineers' builds and tests share
     the 2 cores — so each measured run is predicted with the machine as it was seconds before;
     the measured and the predicted step of a variant are the medians over the repeats.
     (--calibrate each: a full calibration before every recipe and tp, all repeats in one
     launch; once: only the first; none: the profile as it is);
  3. the table: per variant the measured step time (median over the repeats of each run's
     median step after warm-up), the predicted one, the error; the median error and the worst.
     Target (issue 10): median within 20 %, none beyond 40 %.
The load average is recorded before the calibration and before and after every launch: the
machine is shared, and its load is part of every number here.

Writes OUT.csv (one row per variant and tp) and OUT.md (the table with its conditions, which
analysis/reproduce.py puts into REPORT.md). Exit 0 when every launch ran (the target is
reported, not enforced); 1 when a launch failed. Every command and its output: runs/validation_cpu.log.
"""
import argparse
import csv
import datetime
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECIPES = ["ablation-btp", "ablation-online-rmsnorm", "ablation-linear-grouping", "ablation-lowrank-ckpt",
           "boost-vs-baselines", "boost-architectures"]
TARGET_MEDIAN, TARGET_WORST = 0.10, 0.20   # issue 20: whole-step median and worst |error|


def load():
    return os.getloadavg()[0]


def run(cmd, env, log):
    t0 = time.time()
    p = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log.write(f"$ {' '.join(cmd)}\n{p.stdout}\n(exit {p.returncode}, {time.time() - t0:.0f} s)\n")
    log.flush()
    return p.returncode, p.stdout


def latest_launch(con, experiment):
    row = con.execute("SELECT id, load_avg_1m FROM launches WHERE experiment=? ORDER BY id DESC LIMIT 1", (experiment,)).fetchone()
    return row if row else (None, None)


def timed_median(con, run_id):
    """The run's median step time after warm-up (the first max(1, last/10) steps; a run of one
    step — a simulated one — has none), as make exp's table computes it."""
    rows = con.execute("SELECT step, step_seconds FROM steps WHERE run_id=? AND step_seconds > 0 ORDER BY step", (run_id,)).fetchall()
    if not rows:
        return None
    if len(rows) == 1:
        return rows[0][1]
    warm = max(1, rows[-1][0] // 10)
    t = [s for k, s in rows if k > warm]
    return statistics.median(t) if t else None


def comm_ms(con, run_id):
    r = con.execute("SELECT SUM(seconds) * 1000.0 / COUNT(DISTINCT step) FROM comm WHERE run_id=?", (run_id,)).fetchone()
    return r[0] if r and r[0] is not None else 0.0


def launch_rows(con, launch):
    """variant -> (median over completed runs of each run's median step, median comm ms, n runs)"""
    out = {}
    for variant, in con.execute("SELECT DISTINCT variant FROM runs WHERE launch_id=? ORDER BY id", (launch,)).fetchall():
        ids = [r[0] for r in con.execute("SELECT id FROM runs WHERE launch_id=? AND variant=? AND status='completed'",
                                         (launch, variant)).fetchall()]
        meds = [m for m in (timed_median(con, i) for i in ids) if m is not None]
        comms = [comm_ms(con, i) for i in ids]
        if meds:
            out[variant] = (statistics.median(meds), statistics.median(comms), len(meds), min(meds), max(meds))
    return out


def idle_state():
    """The machine before a series: the 1-minute load and the processes (not this one's) using
    more than 5 % of a core, as ps sees them."""
    p = subprocess.run(["ps", "-eo", "pid,pcpu,comm", "--sort=-pcpu"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    busy = []
    for line in p.stdout.splitlines()[1:]:
        f = line.split(None, 2)
        if len(f) == 3 and f[0] != str(os.getpid()):
            try:
                if float(f[1]) > 5:
                    busy.append(f"{f[2]} {float(f[1]):.0f}%")
            except ValueError:
                pass
    return f"load {os.getloadavg()[0]:.2f}, busy: {', '.join(busy[:5]) if busy else 'none'}"


def ci95(xs):
    """95 % confidence interval of the mean of the repeats (Student t), or None below 2."""
    n = len(xs)
    if n < 2:
        return None
    t = {2: 12.71, 3: 4.30, 4: 3.18, 5: 2.78, 6: 2.57, 7: 2.45, 8: 2.36, 9: 2.31, 10: 2.26}.get(n, 2.0)
    mu, sd = statistics.mean(xs), statistics.stdev(xs)
    return mu - t * sd / n ** 0.5, mu + t * sd / n ** 0.5


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5, help="interleaved repeats per variant (>= 5 for the confidence intervals)")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--tp", default="1,2", help="tp sizes; each rank is pinned to its own core with one thread, so at most "
                    "as many ranks as cores (the validated domain)")
    ap.add_argument("--allow-oversubscribed", action="store_true",
                    help="also run layouts with more ranks than cores, labelled OUTSIDE THE DOMAIN and left out of the target")
    ap.add_argument("--recipes", default=",".join(RECIPES))
    ap.add_argument("--calibrate", choices=["interleave", "each", "once", "none"], default="interleave",
                    help="the share before every repeat (interleave), a full calibration before every recipe and tp "
                         "(each), only at the start (once), or never: experiments/hardware/cpu-local.yaml as it is (none)")
    ap.add_argument("--db", default="runs/validation.db")
    ap.add_argument("--out", default="build/reproduction/validation_cpu",
                    help="OUT.md and OUT.csv (default build/reproduction/validation_cpu: not tracked, where "
                         "make reproduce looks first)")
    a = ap.parse_args()
    # one pinned single-thread rank per core: the model prices one rank per device, and a rank
    # that shares its core with another (or whose threads do) measures the scheduler, not the step
    env = dict(os.environ, OMP_WAIT_POLICY="passive", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               OMPI_MCA_hwloc_base_binding_policy="core")
    ncores = os.cpu_count() or 1
    tps = [int(x) for x in a.tp.split(",")]
    outside = [tp for tp in tps if tp > ncores]
    if outside and not a.allow_oversubscribed:
        sys.exit(f"validate_cpu: tp {', '.join(map(str, outside))} would put more ranks than this machine's {ncores} cores; "
                 f"the validated domain is one pinned single-thread rank per core (hint: --tp 1,2 here, or "
                 f"--allow-oversubscribed to run them labelled outside the domain)")
    if a.repeat < 5:
        print(f"validate_cpu: --repeat {a.repeat} < 5: the confidence intervals are wide or undefined", flush=True)
    os.makedirs(os.path.dirname(os.path.join(ROOT, a.out)) or ".", exist_ok=True)
    logpath = os.path.join(ROOT, "runs", os.path.basename(a.out) + ".log")   # runs/: not committed
    log = open(logpath, "w")
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    # the commit the measurement ran at (REPORT.md stamps its validation section with it)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True).stdout.strip() or "unknown"
    if subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, stdout=subprocess.PIPE,
                      stderr=subprocess.DEVNULL, text=True).stdout.strip():
        commit += " (with uncommitted changes)"
    host = platform.node()
    ncpu = os.cpu_count()
    loads = {"start": load()}
    print(f"validate_cpu: {started}, host {host}, {ncpu} cores, load average {loads['start']:.2f}; log {logpath}")
    def calibrate(out_path):
        rc, out = run(["build/calibrate", "--out", out_path], env, log)
        if rc:
            sys.exit(f"validate_cpu: build/calibrate failed (exit {rc}); see {logpath}")
        share = {}
        for line in out.splitlines():
            if "rank share" in line or "op overhead" in line or "load average after" in line or "fit error" in line:
                print("   " + line.strip())
            if "rank share:" in line:
                share[int(line.split("rank share:")[1].split()[0])] = float(line.rsplit(":", 1)[1])
        return share
    share0 = {}
    if a.calibrate != "none":
        print("1. build/calibrate (about a minute) ...", flush=True)
        share0 = calibrate("experiments/hardware/cpu-local.yaml")
    with open(os.path.join(ROOT, "experiments/hardware/cpu-local.yaml")) as f:
        profile_head = [l[2:].rstrip().split(" (other processes")[0]
                        for l in f.readlines()[:8] if l.startswith("# measured") or l.startswith("# load")]
    tmp = tempfile.mkdtemp(prefix="validate-cpu.")
    if a.calibrate in ("each", "interleave"):
        print(f"2. per recipe and tp: {'build/calibrate --share-only before each of' if a.calibrate == 'interleave' else 'build/calibrate,'} "
              f"{a.repeat} measured runs per variant, the simulation", flush=True)
    db = os.path.join(ROOT, a.db)
    rows, failures = [], 0
    for recipe in a.recipes.split(","):
        for tp in tps:
            idle = idle_state()   # recorded before each series: load and the other busy processes
            print(f"   {recipe} tp {tp}: before the series: {idle}", flush=True)
            sets = ["--set", f"parallel.tp={tp}", "--set", "train.threads=1", "--set", f"train.steps={a.steps}", "--set", "train.val_every=0",
                    "--set", f"run.db={db}", "--set", f"run.checkpoint_dir={tmp}/ckpt"]
            rounds = a.repeat if a.calibrate == "interleave" else 1
            meas, sim, shares = {}, {}, []
            l0 = load()
            if a.calibrate == "each":
                os.makedirs(f"{tmp}/{recipe}-tp{tp}", exist_ok=True)
                print(f"   {recipe} tp {tp}: build/calibrate ...", flush=True)
                share = calibrate(f"{tmp}/{recipe}-tp{tp}/cpu-local.yaml")
                shares.append(share.get(tp, 1.0) if tp > 1 else 1.0)
            for r in range(rounds):
                profile = "cpu-local"
                if a.calibrate == "each":
                    profile = f"{tmp}/{recipe}-tp{tp}/cpu-local.yaml"
                elif a.calibrate == "interleave":
                    d = f"{tmp}/{recipe}-tp{tp}-{r}"
                    os.makedirs(d, exist_ok=True)
                    profile = f"{d}/cpu-local.yaml"
                    rc, out = run(["build/calibrate", "--share-only", "cpu-local", "--out", profile], env, log)
                    if rc:
                        sys.exit(f"validate_cpu: build/calibrate --share-only failed (exit {rc}); see {logpath}")
                    for line in out.splitlines():
                        if tp == 1 and "1 process" in line or tp > 1 and f"share: {tp} ranks" in line:
                            shares.append(float(line.rsplit(":", 1)[1]))
                rep = ["--repeat", str(a.repeat)] if a.calibrate != "interleave" else []
                rc_m, _ = run(["build/exp", recipe] + rep + sets, env, log)
                con = sqlite3.connect(db)
                lm, _ = latest_launch(con, recipe)
                rc_s, _ = run(["build/exp", recipe, "--simulate", profile] + sets, env, log)
                con = sqlite3.connect(db)
                ls, _ = latest_launch(con, recipe)
                if rc_m or rc_s:
                    failures += 1
                    print(f"   {recipe} tp {tp}: a launch failed (measured exit {rc_m}, simulated exit {rc_s}); see {logpath}")
                for v, (m, mc, n, lo, hi) in (launch_rows(con, lm) if lm else {}).items():
                    meas.setdefault(v, []).extend([(m, mc, n, lo, hi)])
                for v, (p, pc, _, _, _) in (launch_rows(con, ls) if ls and ls != lm else {}).items():
                    sim.setdefault(v, []).append((p, pc))
                con.close()
            l1 = load()
            share = statistics.median(shares) if shares else (share0.get(tp, 1.0) if tp > 1 else 1.0)
            for v, ms in meas.items():
                if v not in sim:
                    continue
                m = statistics.median(x[0] for x in ms)
                mc = statistics.median(x[1] for x in ms)
                n = sum(x[2] for x in ms)
                lo, hi = min(x[3] for x in ms), max(x[4] for x in ms)
                p = statistics.median(x[0] for x in sim[v])
                pc = statistics.median(x[1] for x in sim[v])
                err = (p - m) / m
                ci = ci95([x[0] for x in ms])
                rows.append(dict(recipe=recipe, tp=tp, variant=v, runs=n, measured_ms=1e3 * m, measured_lo_ms=1e3 * lo,
                                 ci_lo_ms=1e3 * ci[0] if ci else None, ci_hi_ms=1e3 * ci[1] if ci else None, idle=idle,
                                 domain="outside (oversubscribed)" if tp > ncores else "inside",
                                 measured_hi_ms=1e3 * hi, predicted_ms=1e3 * p, error=err, measured_comm_ms=mc,
                                 predicted_comm_ms=pc, load_before=l0, load_after=l1, rank_share=share))
                print(f"   {recipe:26s} tp {tp} {v:16s} measured {1e3 * m:8.1f} ms ({n} runs, {1e3 * lo:.1f}-{1e3 * hi:.1f})  "
                      f"predicted {1e3 * p:8.1f} ms  error {100 * err:+6.1f}%   comm {mc:6.1f} vs {pc:6.1f} ms  share {share:.3f}  "
                      f"load {l0:.2f}->{l1:.2f}", flush=True)
    loads["end"] = load()
    inside = [r for r in rows if r["domain"] == "inside"]   # the target is judged inside the domain only
    errs = sorted(abs(r["error"]) for r in inside)
    med = statistics.median(errs) if errs else float("nan")
    worst = max(inside, key=lambda r: abs(r["error"])) if inside else None
    # ratios between the variants of one recipe at one tp: each against the recipe's first variant
    ratios = []
    for (rec, tp) in sorted({(r["recipe"], r["tp"]) for r in inside}):
        grp = [r for r in inside if r["recipe"] == rec and r["tp"] == tp]
        for r in grp[1:]:
            mr, pr = r["measured_ms"] / grp[0]["measured_ms"], r["predicted_ms"] / grp[0]["predicted_ms"]
            ratios.append((rec, tp, f"{r['variant']} / {grp[0]['variant']}", mr, pr, pr / mr - 1))
    with open(os.path.join(ROOT, a.out + ".csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()) if rows else ["recipe"], lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    verdict = ("met" if med <= TARGET_MEDIAN and worst and abs(worst["error"]) <= TARGET_WORST else "NOT met") if rows else "not measured"
    lines = [f"Commit: {commit}\n",
             f"Measured on host `{host}` ({ncpu} cores), {started}; load average {loads['start']:.2f} at the start, "
             f"{loads['end']:.2f} at the end (per launch below). Profile `cpu-local` "
             f"{'as it is, NOT recalibrated in this session (--calibrate none)' if a.calibrate == 'none' else 'calibrated in the same session'} "
             f"({'; '.join(profile_head)})"
             f"{'; before every measured run `build/calibrate --share-only` measured the machine again (the rank share column: the median over the repeats of the share at that tp, for tp 1 a single process against the table)' if a.calibrate == 'interleave' else ', and again right before every recipe and tp (the rank share column: what that calibration measured)' if a.calibrate == 'each' else ''}. "
             f"Each variant: {a.repeat} runs of {a.steps} steps interleaved (make exp REPEAT), "
             f"the median over the runs of each run's median step after warm-up; predicted: build/simulate on cpu-local "
             f"(`make exp SIMULATE=1 HARDWARE=cpu-local`). comm: rank 0's time inside collectives per step (measured: "
             f"mostly waiting for a descheduled peer on this machine) and the model's (the collectives alone; the waiting is "
             f"in the rank share).",
             "",
             f"Domain: one pinned single-thread rank per core ({ncores} cores here: OMP_NUM_THREADS=1, Open MPI binding to "
             f"cores); layouts with more ranks than cores are labelled outside and left out of the target. The machine "
             f"before each series (load, other busy processes) is in the last column.",
             "",
             "| recipe | tp | variant | measured ms (min-max; 95 % CI of the mean) | predicted ms | error | comm ms measured / modeled | rank share | load | domain | before the series |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ci = f"; {r['ci_lo_ms']:.1f}-{r['ci_hi_ms']:.1f}" if r.get("ci_lo_ms") is not None else ""
        lines.append(f"| {r['recipe']} | {r['tp']} | {r['variant']} | {r['measured_ms']:.1f} ({r['measured_lo_ms']:.1f}-"
                     f"{r['measured_hi_ms']:.1f}{ci}) | {r['predicted_ms']:.1f} | {100 * r['error']:+.1f}% | "
                     f"{r['measured_comm_ms']:.1f} / {r['predicted_comm_ms']:.1f} | {r['rank_share']:.3f} | "
                     f"{r['load_before']:.2f}-{r['load_after']:.2f} | {r['domain']} | {r['idle']} |")
    if ratios:
        lines += ["", "Ratios between variants at fixed tp (measured against predicted; target within 10 %):", "",
                  "| recipe | tp | ratio | measured | predicted | error |", "|---|---|---|---|---|---|"]
        lines += [f"| {rec} | {tp} | {name} | {mr:.3f} | {pr:.3f} | {100 * e:+.1f}% |" for rec, tp, name, mr, pr, e in ratios]
        re_ = sorted(abs(x[5]) for x in ratios)
        lines.append(f"\nRatios: median |error| {100 * statistics.median(re_):.1f}%, worst {100 * re_[-1]:.1f}% — "
                     f"{'within' if re_[-1] <= 0.10 else 'NOT within'} 10 %.")
    for tp in sorted({r["tp"] for r in rows}):
        e = sorted(abs(r["error"]) for r in rows if r["tp"] == tp)
        lines.append(f"\ntp {tp}: median |error| {100 * statistics.median(e):.1f}%, worst {100 * e[-1]:.1f}% ({len(e)} variants)")
    if worst:
        lines.append(f"\n**All {len(rows)} variants: median |error| {100 * med:.1f}%, worst {100 * abs(worst['error']):.1f}% "
                     f"({worst['recipe']} tp {worst['tp']} {worst['variant']}), inside the domain. Target: median within "
                     f"{100 * TARGET_MEDIAN:.0f} %, none beyond {100 * TARGET_WORST:.0f} % — {verdict}.** Not yet validated "
                     f"layer by layer (op by op inside a step, collectives alone): whole steps and ratios only.")
    with open(os.path.join(ROOT, a.out + ".md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n" + "\n".join(lines[6:]))
    print(f"\nwrote {a.out}.csv, {a.out}.md; the runs are in {a.db}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
