#!/usr/bin/python3
"""bench_paired.py — boost-c against PyTorch, measured side by side: `make bench`.

    /usr/bin/python3 analysis/bench_paired.py [--repeat 3] [--out build/bench-paired.json]
        [--profile] [--torch-python PY] [--torch-args "--compile"] [--baseline BENCH] [--no-torch]
        -- BENCH_ARGS...

A benchmark whose two sides are not measured at the same moment cannot be quoted on a shared
machine, so the engine (build/bench) and PyTorch (analysis/torch_bench.py) run interleaved,
E P E P ..., --repeat times, with the same arguments (shape, steps, threads). Each side waits
for work the way it runs best: the engine as it sets itself up (src/core/env.h: passive, or a
short spin where its GEMMs run on OpenMP's threads), PyTorch by --torch-wait: `auto` gives it
OMP_WAIT_POLICY=passive where its BLAS is the system's (Debian's PyTorch on OpenBLAS's own
pthreads: measured 468/482 tokens/s passive against 323/300 with libgomp's default spin, CoLA-60M
on a Zen 4 guest) and libgomp's default where it is MKL on OpenMP's threads (PyPI's wheels:
504/542 against 477/445 passive, the same series). Around the
whole series it records the load average and the sgemm peak (build/bench --peak-only) before
and after. Per kind it reports the median and min-max of each engine's tokens/s and the ratio
of the medians; MFU uses the largest peak measured. With --profile the engine's per-op profile
of the real drivers follows (build/bench --profile 3, one run).

The PyTorch side runs with its best settings that the interpreter's PyTorch has (torch_bench.py:
scaled_dot_product_attention and fused AdamW from 2.x on); --torch-python picks the interpreter
(make bench TORCH_PYTHON=...: a venv with a PyTorch 2 wheel from PyPI, say) and --torch-args
adds options (TORCH_ARGS=--compile). The version and settings are printed and kept in the JSON.

--baseline BENCH adds a second engine binary (an older commit's build/bench, built in a worktree
of its own) to the same series, B E P B E P ..., so that a change is measured before and after
in one run; the table then has the baseline's tokens/s and the speed-up of this build over it
(ratio of medians), and with --profile the baseline's per-op profile follows this build's (both
without the BOOST switches table then: the before/after is about the ops). --bench PATH measures
another binary than build/bench as "this build" (a copy, so that rebuilding does not change it
during a long series).
--no-torch leaves PyTorch out (B E B E ... or E E ...: when only the before/after is wanted).
"""
import argparse
import json
import re
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = "/usr/bin/python3"


def run(cmd, env):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as e:
        sys.exit(f"bench_paired: cannot run {cmd[0]}: {e.strerror}")
    if p.returncode != 0:
        sys.exit(f"bench_paired: {' '.join(cmd)} failed (exit {p.returncode}):\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return p.stdout, time.time() - t0


def peak_json(env, threads, bench="build/bench"):
    """build/bench --peak-only's answer: the sgemm peak and the BLAS kernels it ran on."""
    out, _ = run([bench, "--peak-only"] + (["--threads", str(threads)] if threads else []), env)
    js = json.loads(out)
    # The engine sets OPENBLAS_CORETYPE for itself when the system OpenBLAS does not know this
    # CPU (src/core/env.h: its generic SSE3 kernels run 5x slower on an Emerald Rapids Xeon).
    # The whole series then runs with the same kernels, so that the peer linked to the same
    # OpenBLAS (Debian's PyTorch) and a baseline binary from before the fix are not measured
    # on the slow ones.
    if js.get("blas_core_forced") and "OPENBLAS_CORETYPE" not in env:
        env["OPENBLAS_CORETYPE"] = js["blas_core"]
    return js


def first_peak(env, threads, bench, keep_blas_core):
    """The series' first peak, and the OPENBLAS_CORETYPE it unset (or None). A value from the
    environment that names kernels for less ISA than the CPU has (a profile pinning "Haswell" on
    an AVX-512 machine: half the sgemm) would measure both sides, and Debian's PyTorch above all,
    on kernels slower than the CPU runs: the series unsets it (unless --keep-blas-core), says so,
    and measures the peak again without it."""
    js = peak_json(env, threads, bench)
    if keep_blas_core or not js.get("blas_core_user_below_best"):
        return js["peak_gflops"], None
    print(f"bench_paired: OPENBLAS_CORETYPE={env['OPENBLAS_CORETYPE']} from the environment is below this CPU's "
          f"best OpenBLAS kernels ({js.get('blas_core_best')}): unset for this series, on both sides "
          f"(--keep-blas-core keeps it)", flush=True)
    dropped = env.pop("OPENBLAS_CORETYPE")
    return peak_json(env, threads, bench)["peak_gflops"], dropped


def torch_wait_policy(choice, python):
    """(OMP_WAIT_POLICY value or None for libgomp's default, a description) for the PyTorch runs."""
    if choice == "auto":
        code = "import sys; sys.path.insert(0, 'analysis'); import torch_bench; print(torch_bench.blas_info())"
        out, _ = run([python, "-c", code], dict(os.environ))
        blas = out.strip().splitlines()[-1] if out.strip() else "?"
        choice = "passive" if blas == "the system libblas.so.3" else "default"
        why = f"auto, BLAS {blas}"
    else:
        why = "--torch-wait"
    return (("passive", f"OMP_WAIT_POLICY=passive ({why})") if choice == "passive"
            else (None, f"libgomp's default spin ({why})"))


def torch_env(env, wait):
    e = {k: v for k, v in env.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    if wait[0]:
        e["OMP_WAIT_POLICY"] = wait[0]
    return e


def arg_value(args, name, default):
    return args[args.index(name) + 1] if name in args else default


# The CPU engine's targets (docs/benchmarks.md), judged on the paired medians (one series, one machine state): CoLA fp32
# end to end at >= 70 % of the measured sgemm peak, >= 2.0x PyTorch 1.x and >= 1.4x PyTorch 2.x
# with torch.compile; from the --profile run, everything but GEMMs <= 15 % of the CoLA step.
def print_targets(rows, peer):
    by = {r["kind"]: r for r in rows}
    lines = []
    r = by.get("cola")
    if r is not None:
        m = r["engine_mfu_median"]
        lines.append(f"  cola MFU {100 * m:.1f}% of the measured sgemm peak (target >= 70%): {'met' if m >= 0.70 else 'MISSED'}")
        if r["ratio_of_medians"] is not None:
            major = str(peer.get("torch", "?")).split(".")[0]
            compiled = bool(peer.get("settings", {}).get("compile"))
            goal = 2.0 if major == "1" else 1.4 if compiled else None
            what = f"PyTorch {peer.get('torch', '?')}{' + torch.compile' if compiled else ''}"
            if goal is None:
                lines.append(f"  cola {r['ratio_of_medians']:.2f}x {what}: no target (PyTorch 2.x is judged with --torch-args=--compile)")
            else:
                lines.append(f"  cola {r['ratio_of_medians']:.2f}x {what}, ratio of medians (target >= {goal:.1f}x): "
                             f"{'met' if r['ratio_of_medians'] >= goal else 'MISSED'}")
    if lines:
        print("\ntargets (docs/benchmarks.md, on the medians above):")
        print("\n".join(lines))


def print_share_target(prof):
    """The CoLA profile's line 'all GEMMs: X ms = Y% of the profiled step': the rest <= 15 %."""
    mt = re.search(r"all GEMMs: [0-9.]+ ms = ([0-9.]+)% of the profiled step", prof)
    if mt:
        rest = 100 - float(mt.group(1))
        print(f"target: everything but GEMMs {rest:.1f}% of the profiled CoLA step (target <= 15%): "
              f"{'met' if rest <= 15 else 'MISSED'}")


def without_options(args, names):
    """args less each option in names and its value (--name V or --name=V): the tools refuse an
    option given twice, and the profile run sets its own."""
    out, skip = [], False
    for x in args:
        if skip:
            skip = False
            continue
        if x in names:
            skip = True
            continue
        if any(x.startswith(n + "=") for n in names):
            continue
        out.append(x)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default="build/bench-paired.json")
    ap.add_argument("--profile", action="store_true", help="also print the engine's per-op profile (one run)")
    ap.add_argument("--torch-python", default=PY, help="the Python whose PyTorch is measured (default %(default)s)")
    ap.add_argument("--torch-args", default="", help="extra torch_bench.py options, e.g. --compile")
    ap.add_argument("--baseline", default=None, help="a second build/bench (before a change), interleaved in the series")
    ap.add_argument("--bench", default="build/bench", help="the engine binary measured as this build (default %(default)s)")
    ap.add_argument("--no-torch", action="store_true", help="leave PyTorch out of the series")
    ap.add_argument("--torch-wait", choices=("auto", "passive", "default"), default="auto",
                    help="PyTorch's OpenMP waiting: passive, libgomp's default, or auto (passive where its BLAS "
                         "is the system's OpenBLAS, the default for MKL; default %(default)s)")
    ap.add_argument("--keep-blas-core", action="store_true",
                    help="keep an OPENBLAS_CORETYPE from the environment that is below the CPU's best OpenBLAS "
                         "kernels (by default the series unsets it for both sides)")
    ap.add_argument("bench_args", nargs="*", help="arguments for both build/bench and torch_bench.py")
    a = ap.parse_args()
    if a.repeat < 1:
        sys.exit("bench_paired: --repeat must be >= 1")
    for exe in [a.bench] + ([a.baseline] if a.baseline else []):
        if not os.access(os.path.join(ROOT, exe), os.X_OK):
            sys.exit(f"bench_paired: {exe}: not an executable file (make build/bench)")
    if a.baseline is not None and not os.access(a.baseline, os.X_OK):
        sys.exit(f"bench_paired: --baseline {a.baseline}: not an executable file (build it first: "
                 f"git worktree add DIR COMMIT && make -C DIR build/bench)")
    env = dict(os.environ)   # the engine's: it sets its own waiting (src/core/env.h) unless the user did
    threads = int(arg_value(a.bench_args, "--threads", 0)) or os.cpu_count()
    bargs = [x for x in a.bench_args]
    targs = [x for x in a.bench_args if x != "--threads"]
    if "--threads" in a.bench_args:   # torch_bench takes --threads too; keep one copy
        i = a.bench_args.index("--threads")
        targs = a.bench_args[:i] + a.bench_args[i + 2:]
    targs += ["--threads", str(threads)] + a.torch_args.split()

    torch_wait = None if a.no_torch else torch_wait_policy(a.torch_wait, a.torch_python)
    load0 = os.getloadavg()
    peak0, dropped_core = first_peak(env, threads, a.bench, a.keep_blas_core)
    tmp = tempfile.mkdtemp(prefix="bench-paired.")
    eng, tor, base = {}, {}, {}
    order = []
    peer = {}
    eng_wait = "?"
    who_all = (("baseline",) if a.baseline else ()) + ("boost-c",) + (() if a.no_torch else ("pytorch",))
    for r in range(a.repeat):
        for who in who_all:
            js = os.path.join(tmp, f"{who}-{r}.json")
            if who == "pytorch":
                cmd = [a.torch_python, "analysis/torch_bench.py"] + targs + ["--json", js]
            else:
                exe = a.baseline if who == "baseline" else a.bench
                cmd = [exe] + bargs + ["--no-profile", "--no-switches", "--json", js]
            _, secs = run(cmd, torch_env(env, torch_wait) if who == "pytorch" else env)
            order.append(f"{who}#{r + 1} {secs:.0f}s (load {os.getloadavg()[0]:.1f})")
            with open(js) as f:
                res = json.load(f)
            if who == "pytorch":
                peer = res
            elif who == "boost-c":   # the waiting the engine set itself up with, as its JSON says
                eng_wait = (f"OMP_WAIT_POLICY={res.get('omp_wait_policy') or '(unset)'} "
                            f"GOMP_SPINCOUNT={res.get('gomp_spincount') or '(unset)'}")
            for x in res["results"]:
                {"boost-c": eng, "pytorch": tor, "baseline": base}[who].setdefault(x["kind"], []).append(x)
            print(f"  {order[-1]}", file=sys.stderr, flush=True)
    peak1 = peak_json(env, threads, a.bench)["peak_gflops"]
    load1 = os.getloadavg()
    pk = max(peak0, peak1)

    def med(xs):
        return statistics.median(xs)

    rows = []
    for kind in eng:
        e = [x["tokens_per_s"] for x in eng[kind]]
        t = [x["tokens_per_s"] for x in tor.get(kind, [])]
        bs = [x["tokens_per_s"] for x in base.get(kind, [])]
        fpt = eng[kind][0]["flops_per_token"]
        rows.append({"kind": kind, "engine_tokens_per_s": e, "pytorch_tokens_per_s": t,
                     "baseline_tokens_per_s": bs, "baseline_median": med(bs) if bs else None,
                     "speedup_over_baseline": med(e) / med(bs) if bs else None,
                     "engine_median": med(e), "pytorch_median": med(t) if t else None,
                     "ratio_of_medians": med(e) / med(t) if t else None,
                     "engine_mfu_median": med(e) * fpt / (pk * 1e9),
                     "engine_ms_median": med([x["ms_per_step"] for x in eng[kind]]),
                     "mem_peak_bytes": eng[kind][0].get("mem_peak_bytes")})
    shape = " ".join(a.bench_args)
    st = peer.get("settings", {})
    peer_desc = (f"PyTorch {peer.get('torch', '?')} ({a.torch_python}; BLAS {peer.get('blas', '?')}; attention "
                 f"{st.get('attention', '?')}; AdamW {st.get('adamw', '?')}; torch.compile {'yes' if st.get('compile') else 'no'})")
    letters = "".join({"baseline": "B ", "boost-c": "E ", "pytorch": "P "}[w] for w in who_all).strip()
    core = (f", OPENBLAS_CORETYPE={env['OPENBLAS_CORETYPE']}" if "OPENBLAS_CORETYPE" in env else
            f", OPENBLAS_CORETYPE={dropped_core} of the environment unset (below the CPU's best)" if dropped_core else "")
    waits = f"boost-c waiting: {eng_wait}" + ("" if a.no_torch else f"; PyTorch: {torch_wait[1]}")
    print(f"\nboost-c vs PyTorch, interleaved {letters} x {a.repeat} | {shape} | {threads} threads | {waits}{core}")
    if a.baseline:
        print(f"baseline (B): {a.baseline}")
    print(peer_desc if not a.no_torch else "PyTorch: not measured (--no-torch)")
    print(f"load average before {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}, after {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f} | "
          f"sgemm peak before {peak0:.1f}, after {peak1:.1f} GFLOP/s (MFU uses {pk:.1f})")
    print("\n| kind | boost-c tokens/s median (min–max) | PyTorch tokens/s median (min–max) | ratio of medians | boost-c MFU | boost-c ms/step |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        e, t = r["engine_tokens_per_s"], r["pytorch_tokens_per_s"]
        ts = f"{r['pytorch_median']:.0f} ({min(t):.0f}–{max(t):.0f})" if t else "-"
        ratio = f"{r['ratio_of_medians']:.2f}x" if t else "-"
        print(f"| {r['kind']} | {r['engine_median']:.0f} ({min(e):.0f}–{max(e):.0f}) | {ts} | {ratio} | "
              f"{100 * r['engine_mfu_median']:.1f}% | {r['engine_ms_median']:.0f} |")
    if a.baseline:
        print("\n| kind | baseline tokens/s median (min–max) | this build tokens/s median (min–max) | speed-up (ratio of medians) |")
        print("|---|---|---|---|")
        for r in rows:
            bs, e = r["baseline_tokens_per_s"], r["engine_tokens_per_s"]
            if bs:
                print(f"| {r['kind']} | {r['baseline_median']:.0f} ({min(bs):.0f}–{max(bs):.0f}) | "
                      f"{r['engine_median']:.0f} ({min(e):.0f}–{max(e):.0f}) | {r['speedup_over_baseline']:.2f}x |")
    out = {"args": a.bench_args, "repeat": a.repeat, "baseline": a.baseline, "threads": threads, "peer": peer_desc, "load_before": load0, "load_after": load1,
           "peak_before": peak0, "peak_after": peak1, "order": order, "rows": rows, "waiting": waits,
           "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    os.makedirs(os.path.dirname(os.path.join(ROOT, a.out)), exist_ok=True)
    with open(os.path.join(ROOT, a.out), "w") as f:
        json.dump(out, f, indent=1)
    print_targets(rows, peer)
    print(f"\nwrote {a.out}")
    if a.profile:
        for exe in [a.bench] + ([a.baseline] if a.baseline else []):
            prof, _ = run([exe] + without_options(bargs, ("--steps", "--warmup")) + ["--steps", "1", "--warmup", "1", "--profile", "3"]
                          + (["--no-switches"] if a.baseline else []), env)
            # the fp32 GEMM library of each shape the profile run ran (sgemm.h), then the profiles
            c = prof.find("fp32 GEMM library per shape")
            i = prof.find("per-op time")
            if c >= 0 and i > c:
                print(f"\n[{exe}] " + prof[c:i].rstrip())
            prof = prof[i:] if i >= 0 else prof
            # the profile run's own target lines judge one unpaired step: the paired medians above do
            j = prof.find("\ntargets:")
            print(f"\n[{exe}] " + (prof[:j + 1] if j >= 0 else prof))
            if exe == a.bench:
                k = prof.find("per-op time, cola")
                if k >= 0: print_share_target(prof[k:])


if __name__ == "__main__":
    main()
