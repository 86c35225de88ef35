#!/usr/bin/python3
"""validate_cpu.py — the performance model against measurements on this machine, in layers
(docs/performance-model.md §8).

    /usr/bin/python3 analysis/validate_cpu.py [--repeat 5] [--steps 8] [--layouts tp1,tp2,pp2,dp2]
        [--recipe boost-vs-baselines] [--calibrate interleave|once|none] [--full-calibration]
        [--db runs/validation.db] [--out build/reproduction/validation_cpu | --tracked]

The domain: one pinned single-thread rank per core (OMP_NUM_THREADS=1, OpenBLAS 1 thread,
train.threads=1, Open MPI bound to cores). A layout with more ranks than cores is refused
(exit 2); --allow-oversubscribed runs it labelled OUTSIDE THE DOMAIN and leaves it out of
every target. On a 2-core machine: tp1, tp2, pp2, dp2.

One session:
  1. build/calibrate --quick --ranks 2 --threads 1 (--full-calibration: the full grid) writes the
     session's profile build/reproduction/validation-profile/cpu-local.yaml (GEMM table, attention,
     memory, op overhead, the rank share, the MPI collectives), measured now with the runs'
     one thread per rank; the tracked
     experiments/hardware/cpu-local.yaml is left alone (--calibrate none prices with it);
  2. --repeat rounds, and in each round every layout in turn (interleaved: a drift of the
     machine's state meets every layout alike). Before each layout's run: the idle state (the
     cores other processes keep busy over 0.3 s: /proc/stat's busy time less this
     session's own, the hypervisor's steal, every other process above 5 % of a core) is
     recorded — and the same other-process use during each command of the series — and with
     --calibrate interleave `build/calibrate --refresh` measures the rank share, the op
     overhead, the attention and the ops timed as themselves again into a profile for this run; then one measured launch (build/exp: every
     variant of the recipe that is not on demand, --steps steps each) and build/simulate of
     each of those variants on that profile; at tp1 also the op layer (build/simulate
     --measure-ops) of every variant;
  3. four layers, each reported on its own:
       ops          one rank's ops inside a real step: the timing back end's records against
                    the same records priced by the model (per op class and in all);
       collectives  rank 0's time inside collectives per step in the real runs (the comm table)
                    against the model's collectives of the same step (pipeline sends apart);
       steps        the step time (each run's median after warm-up) against the prediction;
                    target: median |error| <= 10 %, worst <= 20 %;
       ratios       each variant's step over the recipe's first variant at the same layout,
                    measured against predicted; target within 10 %.
     Every cell is the median over the repeats with its 95 % bootstrap interval (the statistic
     printed is the statistic computed: the median); every summary's median |error| has its own.

Waiting is counted once: the rank share (calibrate) is measured with the ranks computing
GEMMs side by side without any collective between them (compute contention only), and the
time a rank waits for a peer is in the measured α-β collectives alone (it used to be in both:
the share came from a GEMM + all-reduce loop). The share's reference is the same GEMM window in
one lone process with the same one thread, not the GEMM table: so it is at most 1 but for noise.

The machine's state: other processes' busy cores and the hypervisor's steal before every series
and during every command, recorded with the host and its CPU model, and never used to excuse a
miss (a run under load reports the model's errors under that load, and says so). The 1-minute
load average is not recorded: it still counts this session's own runs, and inside a container it
is the host's.

Writes OUT.md (the four tables with their conditions and what misses; analysis/reproduce.py puts
it into REPORT.md) and OUT.csv (one row per layer, layout, variant, item). --tracked writes the
tracked analysis/reproduction/validation_cpu.* and replaces the CPU section of
analysis/reproduction/REPORT.md with this run's (`make validate-cpu TRACKED=1`): one rerun
updates the report; without it nothing tracked is written (build/reproduction/REPORT.md's
section is replaced when that report exists). Exit 0 when every launch ran
(the targets are reported, not enforced), 1 when one failed, 2 for a layout outside the domain.
Every command and its output: runs/<OUT's name>.log.
"""
import argparse
import csv
import datetime
import json
import os
import platform
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_MEDIAN, TARGET_WORST, TARGET_RATIO = 0.10, 0.20, 0.10   # whole steps, and ratios between variants
QUIET_OTHER = 0.10  # cores: other processes (or the hypervisor's steal) above a tenth of one core, before a series or
                    # during one of its commands, mark the session as not quiet
TOP_OPS = 6         # the op layer's table of the ops off by the most
BOOT = 2000         # bootstrap resamples of a median (a fixed seed: the same data give the same interval)


# ---- pure helpers (tests/t_sim.sh checks them) ------------------------------------------------

def parse_layout(name):
    """'tp2' -> (2, 1, 1); 'pp2' -> (1, 2, 1); 'dp2' -> (1, 1, 2); 'tp2pp2' -> (2, 2, 1); 'tp1' -> (1, 1, 1)."""
    if not re.fullmatch(r"((tp|pp|dp)[1-9][0-9]*)+", name):
        raise ValueError(f"layout '{name}': expected tpN, ppN, dpN or a combination such as tp2pp2")
    d = {"tp": 1, "pp": 1, "dp": 1}
    for k, n in re.findall(r"(tp|pp|dp)([0-9]+)", name):
        d[k] = int(n)
    return d["tp"], d["pp"], d["dp"]


def in_domain(layout, cores):
    """One pinned single-thread rank per core: at most `cores` ranks."""
    tp, pp, dp = parse_layout(layout)
    return tp * pp * dp <= cores


def median_ci(xs, level=0.95, n_boot=BOOT, seed=20):
    """The percentile-bootstrap interval of the median of xs (the statistic the tables print), or
    None below 2 values. Deterministic: a fixed seed."""
    import random
    n = len(xs)
    if n < 2:
        return None
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choice(xs) for _ in range(n)) for _ in range(n_boot))
    lo = meds[int((1 - level) / 2 * n_boot)]
    hi = meds[min(n_boot - 1, int((1 + level) / 2 * n_boot))]
    return lo, hi


def summary(errors):
    """(median |error|, worst |error|) of a list of relative errors, or (nan, nan)."""
    a = sorted(abs(e) for e in errors)
    return (statistics.median(a), a[-1]) if a else (float("nan"), float("nan"))


def summary_ci(errors):
    """The bootstrap interval of the median |error| (None below 2 errors)."""
    return median_ci([abs(e) for e in errors])


def ci_text(errors):
    """' (95 % bootstrap interval a–b %)' of the median |error| of a list, or '' below 2 errors."""
    ci = summary_ci(errors)
    return f" (95 % bootstrap interval {100 * ci[0]:.1f}–{100 * ci[1]:.1f} %)" if ci else ""


def cell(xs):
    """'median (lo-hi)' of a list of seconds, in ms, with the median's 95 % bootstrap interval when defined."""
    m = statistics.median(xs)
    ci = median_ci(xs)
    return f"{1e3 * m:.2f}" + (f" ({1e3 * ci[0]:.2f}-{1e3 * ci[1]:.2f})" if ci else "")


def cpu_model():
    """The CPU's model name (/proc/cpuinfo), or the platform's processor string."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


# ---- the machine and the run database --------------------------------------------------------

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_counters():
    """(busy, steal) CPU seconds of the whole machine since boot (/proc/stat's first line: busy =
    user + nice + system + irq + softirq, guest time being inside user; steal = time the hypervisor
    gave this guest's vCPUs to others), and this process's own CPU seconds with its waited-for
    children's (os.times: every command it ran, their descendants included, once each returned)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]] + [0] * 8
    t = os.times()
    return ((v[0] + v[1] + v[2] + v[5] + v[6]) / CLK_TCK, v[7] / CLK_TCK,
            t.user + t.system + t.children_user + t.children_system)


def other_cpu(c0, c1, wall):
    """Cores that other processes kept busy between two cpu_counters() readings, and the steal:
    the machine's busy seconds less this process's and its children's, over the wall seconds."""
    return max(0.0, (c1[0] - c0[0]) - (c1[2] - c0[2])) / wall, (c1[1] - c0[1]) / wall


def proc_cpu():
    """{pid: (name, CPU seconds)} of every process now (/proc/PID/stat utime + stime)."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
        except OSError:
            continue
        name, rest = st[st.index("(") + 1:st.rindex(")")], st[st.rindex(")") + 2:].split()
        out[int(d)] = (name, (int(rest[11]) + int(rest[12])) / CLK_TCK)
    return out


def idle_state(window=1.0):
    """The machine before a series, judged by what other processes do now, not by the load
    average (which still counts this script's own runs of the last minutes): over `window`
    seconds, the cores other processes kept busy (cpu_counters), the steal, and the processes
    (not this one, summed per command name) that used more than 5 % of a core in the window
    (one that started and ended inside the window is in the first number only)."""
    p0, c0, t0 = proc_cpu(), cpu_counters(), time.time()
    time.sleep(window)
    p1, c1 = proc_cpu(), cpu_counters()
    wall = time.time() - t0
    other, steal = other_cpu(c0, c1, wall)
    by_name = {}   # per command name (a build's many cc1 alike); a process new in the window: all its time
    for pid, (name, cpu) in p1.items():
        if pid != os.getpid():
            by_name[name] = by_name.get(name, 0.0) + (cpu - p0[pid][1] if pid in p0 else cpu) / wall
    busy = [f"{name} {100 * x:.0f}%" for x, name in sorted(((x, n) for n, x in by_name.items()), reverse=True) if x > 0.05]
    return other, steal, ", ".join(busy[:5]) if busy else "none"


def latest_launch(con, experiment):
    row = con.execute("SELECT id FROM launches WHERE experiment=? ORDER BY id DESC LIMIT 1", (experiment,)).fetchone()
    return row[0] if row else None


def timed_steps(con, run_id):
    """{step: seconds} of the run's timed steps: after the warm-up (the first max(1, last/10) steps;
    a simulated run has one step, kept)."""
    rows = con.execute("SELECT step, step_seconds FROM steps WHERE run_id=? AND step_seconds > 0 ORDER BY step", (run_id,)).fetchall()
    if len(rows) <= 1:
        return dict(rows)
    warm = max(1, rows[-1][0] // 10)
    return {k: s for k, s in rows if k > warm}


def timed_median(con, run_id):
    """The run's median step after warm-up (timed_steps), or None."""
    t = timed_steps(con, run_id)
    return statistics.median(t.values()) if t else None


def comm_s(con, run_id, p2p, steps):
    """The median over `steps` (the run's timed steps: the step times' own, so the warm-up step's
    first calls, which set up Open MPI's shared-memory connections, are left out of both) of the
    seconds per step in collectives (p2p False) or in pipeline sends and receives (True)."""
    op = "IN" if p2p else "NOT IN"
    per = dict(con.execute(f"SELECT step, SUM(seconds) FROM comm WHERE run_id=? AND kind {op} ('send','recv') GROUP BY step",
                           (run_id,)).fetchall())
    return statistics.median(per.get(k) or 0.0 for k in steps) if steps else 0.0


def launch_rows(con, launch):
    """variant -> (step s, collectives s per step, p2p s per step) of the launch's completed run."""
    out = {}
    for rid, variant in con.execute("SELECT id, variant FROM runs WHERE launch_id=? AND status='completed' ORDER BY id", (launch,)):
        t = timed_steps(con, rid)
        if t:
            out[variant] = (statistics.median(t.values()), comm_s(con, rid, False, t), comm_s(con, rid, True, t))
    return out


def read_ops_csv(path):
    """{'gemm': (measured s, modeled s, dry modeled s), ..., 'all ops': (...), 'op:NAME': (...)}
    per step, from simulate --ops-csv: per op class, in all and per op name; measured and modeled
    are the CPU back end's records, dry the dry back end's records of the same steps (what the
    simulation prices)."""
    cls = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["op"].startswith("("):
                continue
            x = (float(r["measured_s"]), float(r["modeled_s"]), float(r["dry_modeled_s"]))
            for k in (r["class"], "all ops", f"op:{r['op']}"):
                a = cls.setdefault(k, [0.0, 0.0, 0.0])
                for i in range(3):
                    a[i] += x[i]
    return {k: tuple(v) for k, v in cls.items()}


# ---- the session -----------------------------------------------------------------------------

def calibration_in_step(out):
    """build/calibrate's 5b. table as printed (its header and every rank count's rows: the indented lines
    after it): the in-step terms of the profile the validation prices with, each beside the passes it is
    the median of."""
    lines = []
    for line in out.splitlines():
        if lines and not line[:1].isspace():   # a blank or unindented line: the next part of the output
            break
        if lines or line.startswith("5b. "):
            lines.append(line.rstrip())
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5, help="interleaved rounds (>= 5 for the confidence intervals)")
    ap.add_argument("--steps", type=int, default=8, help="training steps of each measured run")
    ap.add_argument("--op-steps", type=int, default=2, help="timed steps of the op layer (after one warm-up step)")
    ap.add_argument("--layouts", default="tp1,tp2,pp2,dp2")
    ap.add_argument("--allow-oversubscribed", action="store_true",
                    help="also run layouts with more ranks than cores, labelled OUTSIDE THE DOMAIN, out of every target")
    ap.add_argument("--recipe", default="boost-vs-baselines", help="the experiment whose variants are compared (ratios: "
                    "against its first variant)")
    ap.add_argument("--calibrate", choices=["interleave", "once", "none"], default="interleave",
                    help="the share and the kernels again before every run (interleave), only the calibration at the start (once), or "
                         "experiments/hardware/cpu-local.yaml as it is (none)")
    ap.add_argument("--full-calibration", action="store_true", help="the full GEMM grid (about twice as long) instead of --quick")
    ap.add_argument("--db", default="runs/validation.db")
    ap.add_argument("--out", default="build/reproduction/validation_cpu")
    ap.add_argument("--tracked", action="store_true", help="write analysis/reproduction/validation_cpu.* and replace REPORT.md's "
                    "CPU section there with this run's")
    a = ap.parse_args()
    if a.tracked:
        a.out = "analysis/reproduction/validation_cpu"
    ncores = len(os.sched_getaffinity(0))   # the cores this process may use (a cgroup or taskset may allow fewer)
    try:
        layouts = [x.strip() for x in a.layouts.split(",") if x.strip()]
        outside = [x for x in layouts if not in_domain(x, ncores)]
    except ValueError as e:
        print(f"validate_cpu: {e}", file=sys.stderr)
        return 2
    if outside and not a.allow_oversubscribed:
        print(f"validate_cpu: layout {', '.join(outside)} puts more ranks than this machine's {ncores} cores: outside the "
              f"validated domain (one pinned single-thread rank per core); hint: --layouts tp1,tp2,pp2,dp2 on 2 cores, or "
              f"--allow-oversubscribed to run it labelled outside the domain", file=sys.stderr)
        return 2
    if a.repeat < 5:
        print(f"validate_cpu: --repeat {a.repeat} < 5: the confidence intervals are wide or undefined", flush=True)
    env = dict(os.environ, OMP_WAIT_POLICY="passive", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               OMPI_MCA_hwloc_base_binding_policy="core")
    os.makedirs(os.path.dirname(os.path.join(ROOT, a.out)) or ".", exist_ok=True)
    os.makedirs(os.path.join(ROOT, "runs"), exist_ok=True)
    logpath = os.path.join(ROOT, "runs", os.path.basename(a.out) + ".log")   # runs/: not committed
    log = open(logpath, "w")
    t_start = time.time()

    during = []   # (other cores, steal cores) during each command since the last idle check

    def run(cmd):
        c0, t0 = cpu_counters(), time.time()
        p = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        wall = time.time() - t0
        other, steal = other_cpu(c0, cpu_counters(), wall)
        during.append((other, steal))
        log.write(f"$ {' '.join(cmd)}\n{p.stdout}\n(exit {p.returncode}, {wall:.1f} s; other processes {other:.2f} cores, "
                  f"steal {steal:.2f})\n")
        log.flush()
        return p.returncode, p.stdout

    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True).stdout.strip() or "unknown"
    if subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, stdout=subprocess.PIPE,
                      stderr=subprocess.DEVNULL, text=True).stdout.strip():
        commit += " (with uncommitted changes)"
    host = platform.node()
    other0, steal0, busy0 = idle_state()
    print(f"validate_cpu: {started}, host {host}, {ncores} cores, other processes {other0:.2f} cores, steal {steal0:.2f} "
          f"(busy: {busy0}); log {logpath}", flush=True)
    # the session's profile: under build/ (its name is its stem: cpu-local; a generated file is no
    # part of the tracked tree, --tracked or not), the tracked experiments/hardware/cpu-local.yaml
    # left alone; --calibrate none prices with the tracked one
    base_profile = "experiments/hardware/cpu-local.yaml"
    in_step_table = []
    if a.calibrate != "none":
        base_profile = os.path.join("build", "reproduction", "validation-profile", "cpu-local.yaml")
        os.makedirs(os.path.join(ROOT, os.path.dirname(base_profile)), exist_ok=True)
        print(f"1. build/calibrate{'' if a.full_calibration else ' --quick'} --ranks 2 --threads 1 -> {base_profile} ...", flush=True)
        rc, out = run(["build/calibrate", "--out", base_profile, "--ranks", "2", "--threads", "1"] +
                      ([] if a.full_calibration else ["--quick"]))
        if rc:
            print(f"validate_cpu: build/calibrate failed (exit {rc}); see {logpath}", file=sys.stderr)
            return 1
        for line in out.splitlines():
            if "rank share" in line or "op overhead" in line:
                print("   " + line.strip(), flush=True)
        in_step_table = calibration_in_step(out)
    with open(os.path.join(ROOT, base_profile)) as f:
        profile_head = [l[2:].rstrip() for l in f.readlines()[:8] if l.startswith("# measured")]
    calib_during = during[-1] if during else None
    tmp = tempfile.mkdtemp(prefix="validate-cpu.")
    db = os.path.join(ROOT, a.db)
    manifest = f"experiments/{a.recipe}.yaml"
    # per (layout, variant): lists over the rounds
    meas, pred, ops, idle, failures = {}, {}, {}, [], 0
    variants_of = {}
    print(f"2. {a.repeat} rounds over {', '.join(layouts)} (idle state, "
          f"{'share and kernels again, ' if a.calibrate == 'interleave' else ''}measured launch, the simulations; op layer at tp1)", flush=True)
    for r in range(a.repeat):
        for lay in layouts:
            tp, pp, dp = parse_layout(lay)
            other, steal, busy = idle_state(0.3)
            during.clear()
            profile = os.path.join(ROOT, base_profile)
            if a.calibrate == "interleave":
                profile = f"{tmp}/{lay}-{r}/cpu-local.yaml"
                os.makedirs(os.path.dirname(profile), exist_ok=True)
                rc, _ = run(["build/calibrate", "--refresh", os.path.join(ROOT, base_profile), "--out", profile, "--ranks", "2",
                             "--threads", "1"])
                if rc:
                    print(f"validate_cpu: build/calibrate --refresh failed (exit {rc}); see {logpath}", file=sys.stderr)
                    return 1
            sets = []
            for kv in (f"parallel.tp={tp}", f"parallel.pp={pp}", f"parallel.dp={dp}", "train.threads=1", f"train.steps={a.steps}",
                       "train.val_every=0", f"run.db={db}", f"run.checkpoint_dir={tmp}/ckpt"):
                sets += ["--set", kv]
            rc_m, _ = run(["build/exp", a.recipe] + sets)
            con = sqlite3.connect(db)
            lm = latest_launch(con, a.recipe)
            mrows = launch_rows(con, lm) if lm else {}
            con.close()
            # the prediction of every measured variant: build/simulate on this run's profile (the
            # recipe's on-demand paper-scale variants are not measured, so not simulated either)
            prows, rc_s = {}, 0
            for v in mrows:
                jp = f"{tmp}/sim-{lay}-{v}-{r}.json"
                rc, _ = run(["build/simulate", manifest, "--variant", v, "--hardware", profile, "--json", jp] + sets)
                if rc:
                    rc_s = rc
                    continue
                with open(jp) as f:
                    rep = json.load(f)
                st0 = rep["stages"][0]   # rank 0's stage, as the measured comm table is rank 0's
                prows[v] = (rep["step"]["seconds"], st0["comm_s"], st0["xfer_s"])
            if rc_m or rc_s or not mrows:
                failures += 1
                print(f"   round {r + 1} {lay}: a run failed (measured exit {rc_m}, simulated exit {rc_s}); see {logpath}", flush=True)
            variants_of.setdefault(lay, [v for v in mrows if v in prows])
            for v in mrows:
                if v in prows:
                    meas.setdefault((lay, v), []).append(mrows[v])
                    pred.setdefault((lay, v), []).append(prows[v])
            if (tp, pp, dp) == (1, 1, 1):
                for v in variants_of[lay]:
                    csvp = f"{tmp}/ops-{v}-{r}.csv"
                    rc, _ = run(["build/simulate", manifest, "--variant", v, "--hardware", profile, "--measure-ops", str(a.op_steps),
                                 "--ops-csv", csvp] + sets)
                    if rc:
                        failures += 1
                        print(f"   round {r + 1} {lay} {v}: the op layer failed (exit {rc}); see {logpath}", flush=True)
                    else:
                        for k, mp in read_ops_csv(csvp).items():
                            ops.setdefault((v, k), []).append(mp)
            # the commands' own timings are measurements too (the share, the launch, the op layer)
            idle.append((r, lay, other, steal, busy, max(x[0] for x in during), max(x[1] for x in during)))
            print(f"   round {r + 1}/{a.repeat} {lay}: other processes {other:.2f} cores before (busy: {busy}), up to "
                  f"{idle[-1][5]:.2f} during; " +
                  "; ".join(f"{v} {1e3 * mrows[v][0]:.1f} vs {1e3 * prows[v][0]:.1f} ms" for v in variants_of[lay] if v in mrows and v in prows),
                  flush=True)
    other1, steal1, busy1 = idle_state()
    elapsed = time.time() - t_start
    dom = {lay: "inside" if in_domain(lay, ncores) else "OUTSIDE THE DOMAIN" for lay in layouts}
    csv_rows = []

    # ---- layer 1: ops
    L = [f"Commit: {commit}\n",
         f"Measured on host `{host}` ({cpu_model()}, {ncores} cores), {started}, in {elapsed / 60:.1f} min; other processes kept "
         f"{other0:.2f} cores busy at the start (busy: {busy0}), {other1:.2f} at the end"
         f"{f', {calib_during[0]:.2f} during the calibration' if calib_during else ''}. Profile `cpu-local` "
         f"{'as tracked, NOT recalibrated (--calibrate none)' if a.calibrate == 'none' else f'calibrated in the same session ({base_profile})'} "
         f"({'; '.join(profile_head)})"
         f"{'; its rank share, op overhead, attention and op rates measured again before every run (build/calibrate --refresh)' if a.calibrate == 'interleave' else ''}. "
         f"Recipe `{a.recipe}`, {a.repeat} interleaved rounds over the layouts {', '.join(layouts)}, {a.steps} steps per run. "
         f"Cells: median over the rounds (its 95 % bootstrap interval), ms.",
         "",
         f"Domain: one pinned single-thread rank per core ({ncores} cores: OMP_NUM_THREADS=1, OpenBLAS 1 thread, "
         f"train.threads=1, Open MPI bound to cores). Waiting for a peer is counted once: in the measured collectives, not in "
         f"the rank share (calibrated with ranks computing side by side, no collective between them).",
         "",
         "### Layer 1: ops inside a real step (tp1)",
         "",
         f"`build/simulate --measure-ops {a.op_steps}`: the step runs on the CPU back end with the timing wrapper; each "
         "recorded op is priced by the model's tracer. Measured and modeled are the same op records of the same steps. "
         "Trace gap: the dry back end's records of those steps (what the simulation prices) against the CPU back end's, "
         "both priced; not zero where the two back ends issue other ops (build/simulate --measure-ops names them).",
         "",
         "| variant | op class | measured ms/step | modeled ms/step | error | trace gap |", "|---|---|---|---|---|---|"]
    op_err = []
    for (v, k), xs in sorted(((vk, xs) for vk, xs in ops.items() if not vk[1].startswith("op:")),
                             key=lambda kv: (kv[0][0], kv[0][1] == "all ops", kv[0][1])):
        m, p, d = [x[0] for x in xs], [x[1] for x in xs], [x[2] for x in xs]
        e = statistics.median(p) / statistics.median(m) - 1
        gap = statistics.median(d) / statistics.median(p) - 1
        if k == "all ops":
            op_err.append(e)
        L.append(f"| {v} | {k} | {cell(m)} | {cell(p)} | {100 * e:+.1f}% | {100 * gap:+.2f}% |")
        csv_rows.append(dict(layer="ops", layout="tp1", variant=v, item=k, measured_ms=1e3 * statistics.median(m),
                             modeled_ms=1e3 * statistics.median(p), error=e, domain="inside"))
    med, worst = summary(op_err)
    L.append(f"\nOps, all classes per variant: median |error| {100 * med:.1f}%{ci_text(op_err)}, worst {100 * worst:.1f}%." if op_err else
             "\nOps: not measured (no tp1 layout).")
    # where the miss is: per variant, the ops whose modeled time is off by the most milliseconds
    by_op = {}
    for (v, k), xs in ops.items():
        if k.startswith("op:"):
            m, p = statistics.median(x[0] for x in xs), statistics.median(x[1] for x in xs)
            by_op.setdefault(v, []).append((abs(p - m), k[3:], m, p))
    if by_op:
        L += ["", f"The {TOP_OPS} ops off by the most per step (medians over the rounds; every op's row: the log):", "",
              "| variant | op | measured ms/step | modeled ms/step | modeled − measured | error |", "|---|---|---|---|---|---|"]
        for v in sorted(by_op):
            for _, name, m, p in sorted(by_op[v], reverse=True)[:TOP_OPS]:
                L.append(f"| {v} | {name} | {1e3 * m:.3f} | {1e3 * p:.3f} | {1e3 * (p - m):+.3f} | "
                         f"{100 * (p / m - 1) if m > 0 else float('inf'):+.0f}% |")
                csv_rows.append(dict(layer="op", layout="tp1", variant=v, item=name, measured_ms=1e3 * m, modeled_ms=1e3 * p,
                                     error=p / m - 1 if m > 0 else float("inf"), domain="inside"))

    # ---- layer 2: collectives
    L += ["", "### Layer 2: collectives inside the real steps", "",
          "Rank 0's seconds inside collectives per step (the run's comm table: the median over the same timed steps as the "
          "step times, the warm-up step and its first calls left out) against the model's collectives of the same step; "
          "pipeline sends and receives apart (the measured ones include waiting for the other stage's compute, which the "
          "model puts in the bubble). Measured, a collective's time includes waiting for a peer that is still computing.", "",
          "| layout | variant | collectives measured | modeled | error | p2p measured | p2p modeled | domain |", "|---|---|---|---|---|---|---|---|"]
    coll_err = []
    for (lay, v), ms in meas.items():
        ps = pred[(lay, v)]
        mc, pc = [x[1] for x in ms], [x[1] for x in ps]
        if statistics.median(mc) <= 0 and statistics.median(pc) <= 0:
            continue   # no collectives in this layout (tp1)
        e = statistics.median(pc) / statistics.median(mc) - 1 if statistics.median(mc) > 0 else float("inf")
        if dom[lay] == "inside":
            coll_err.append(e)
        L.append(f"| {lay} | {v} | {cell(mc)} | {cell(pc)} | {100 * e:+.1f}% | {cell([x[2] for x in ms])} | "
                 f"{cell([x[2] for x in ps])} | {dom[lay]} |")
        csv_rows.append(dict(layer="collectives", layout=lay, variant=v, item="collectives", measured_ms=1e3 * statistics.median(mc),
                             modeled_ms=1e3 * statistics.median(pc), error=e, domain=dom[lay]))
    med, worst = summary(coll_err)
    L.append(f"\nCollectives (inside the domain): median |error| {100 * med:.1f}%{ci_text(coll_err)}, worst {100 * worst:.1f}%." if coll_err else
             "\nCollectives: none measured.")
    if in_step_table:
        L += ["", "The in-step terms these collectives are priced with, as this session's calibration printed them (build/calibrate "
              "5b., a configuration not validated; docs/performance-model.md §15–§18):", "", "```"] + in_step_table + ["```"]

    # ---- layer 3: whole steps
    L += ["", "### Layer 3: whole steps", "",
          "| layout | variant | measured ms | predicted ms | error | domain |", "|---|---|---|---|---|---|"]
    step_err = []
    for (lay, v), ms in meas.items():
        m, p = [x[0] for x in ms], [x[0] for x in pred[(lay, v)]]
        e = statistics.median(p) / statistics.median(m) - 1
        if dom[lay] == "inside":
            step_err.append(e)
        L.append(f"| {lay} | {v} | {cell(m)} | {cell(p)} | {100 * e:+.1f}% | {dom[lay]} |")
        csv_rows.append(dict(layer="steps", layout=lay, variant=v, item="step", measured_ms=1e3 * statistics.median(m),
                             modeled_ms=1e3 * statistics.median(p), error=e, domain=dom[lay]))
    med, worst = summary(step_err)
    verdict = "met" if step_err and med <= TARGET_MEDIAN and worst <= TARGET_WORST else "NOT met" if step_err else "not measured"
    L.append(f"\n**Whole steps (inside the domain): median |error| {100 * med:.1f}%{ci_text(step_err)}, worst {100 * worst:.1f}%, "
             f"{sum(e > 0 for e in step_err)} predicted slow and {sum(e < 0 for e in step_err)} fast. Target: median "
             f"within {100 * TARGET_MEDIAN:.0f} %, none beyond {100 * TARGET_WORST:.0f} % — {verdict}.**")
    worst_before = max([x[2] for x in idle] + [other0])
    worst_during = max([x[5] for x in idle] + ([calib_during[0]] if calib_during else []))
    worst_steal = max([x[3] for x in idle] + [x[6] for x in idle] + [steal0] + ([calib_during[1]] if calib_during else []))
    # the machine's state is recorded, never used to excuse a miss: the errors above are the model's under it
    L.append(f"\nThe machine during the run (recorded, not used to judge): other processes kept up to {worst_before:.2f} cores "
             f"busy before a series and {worst_during:.2f} during one of its commands, the hypervisor's steal up to "
             f"{worst_steal:.2f} cores ({'above' if max(worst_before, worst_during, worst_steal) > QUIET_OTHER else 'within'} "
             f"the {QUIET_OTHER:.2f} of a quiet machine; /proc/stat's busy time less this session's own processes'; every "
             f"series: the last table).")

    # ---- layer 4: ratios between variants at a fixed layout
    L += ["", "### Layer 4: ratios between variants at a fixed layout", "",
          "| layout | ratio | measured | predicted | error | domain |", "|---|---|---|---|---|---|"]
    ratio_err = []
    for lay in layouts:
        vs = variants_of.get(lay, [])
        for v in vs[1:]:
            # the ratio of each round's pair (the two variants ran back to back in one launch)
            mr = [x[0] / y[0] for x, y in zip(meas[(lay, v)], meas[(lay, vs[0])])]
            pr = [x[0] / y[0] for x, y in zip(pred[(lay, v)], pred[(lay, vs[0])])]
            e = statistics.median(pr) / statistics.median(mr) - 1
            if dom[lay] == "inside":
                ratio_err.append(e)
            ci = median_ci(mr)
            L.append(f"| {lay} | {v} / {vs[0]} | {statistics.median(mr):.3f}{f' ({ci[0]:.3f}-{ci[1]:.3f})' if ci else ''} | "
                     f"{statistics.median(pr):.3f} | {100 * e:+.1f}% | {dom[lay]} |")
            csv_rows.append(dict(layer="ratios", layout=lay, variant=v, item=f"{v} / {vs[0]}", measured_ms=statistics.median(mr),
                                 modeled_ms=statistics.median(pr), error=e, domain=dom[lay]))
    med, worst = summary(ratio_err)
    L.append(f"\nRatios (inside the domain): median |error| {100 * med:.1f}%{ci_text(ratio_err)}, worst {100 * worst:.1f}% — "
             f"{'within' if ratio_err and worst <= TARGET_RATIO else 'NOT within'} {100 * TARGET_RATIO:.0f} %." if ratio_err else
             "\nRatios: none (one variant).")

    L += ["", "### The machine around each series", "",
          "Cores kept busy by other processes (/proc/stat's busy time less this session's own processes', over a 0.3 s "
          "window before the series and over each of its commands), the hypervisor's steal, and the other processes above "
          "5 % of a core in the window before.", "",
          "| round | layout | other cores before | steal before | other busy processes | other cores during (max) | steal during (max) |",
          "|---|---|---|---|---|---|---|"]
    L += [f"| {r + 1} | {lay} | {o:.2f} | {st:.2f} | {busy} | {od:.2f} | {sd:.2f} |" for r, lay, o, st, busy, od, sd in idle]
    with open(os.path.join(ROOT, a.out + ".md"), "w") as f:
        f.write("\n".join(L) + "\n")
    with open(os.path.join(ROOT, a.out + ".csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["layer", "layout", "variant", "item", "measured_ms", "modeled_ms", "error", "domain"],
                           lineterminator="\n")
        w.writeheader()
        for row in csv_rows:
            w.writerow({k: (f"{x:.6g}" if isinstance(x, float) else x) for k, x in row.items()})
    print("\n" + "\n".join(L[2:]))
    print(f"\nwrote {a.out}.md, {a.out}.csv in {elapsed / 60:.1f} min; the runs are in {a.db}")
    import reproduce   # the report's CPU section from this run (reproduce.py imports this module's targets: imported here)
    rep = reproduce.replace_cpu_section(os.path.dirname(os.path.join(ROOT, a.out)), os.path.join(ROOT, a.out + ".md"))
    print(f"replaced the CPU section of {os.path.relpath(rep, ROOT)} with this run's" if rep else
          "no REPORT.md beside it: make reproduce includes this run when it writes one")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
