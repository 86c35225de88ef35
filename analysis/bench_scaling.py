#!/usr/bin/python3
"""bench_scaling.py — how the engine's cost grows with the work: `make bench-scaling`.

    /usr/bin/python3 analysis/bench_scaling.py [--out analysis/figures/bench-scaling.png] [--quick]

Four sweeps of build/bench (one training step = zero grads, forward, backward, clip, AdamW;
random tokens; the same definition as `make bench`) and of build/train under MPI:
  size     tokens/s and MFU against model size: cola-60m, cola-130m, cola-350m shapes, dense
           and cola, batch 1 x seq 256;
  seq      against sequence length 256 ... 2048 (cola-60m, cola; tokens per step fixed at 2048,
           so the linear layers' work is constant and the growth is attention's): with flash
           attention the peak memory grows linearly, and the quadratic term shows in time only;
  threads  against threads 1, 2 (cola-60m, cola, batch 4 x seq 256);
  tp       against tp 1, 2, 4 (the bench-comm model: cola, BTP + online RMSNorm + grouping, on
           kjv under mpirun), with the share of the step time spent inside collectives.
Every point records the peak memory (the back end's allocations for bench; the largest rank's
peak RSS for the tp runs). Tables on stdout, one PNG with a panel per sweep, and a JSON.
Each point is one run: the sweeps show shapes (ratios between points of one sweep, measured
minutes apart), not figures to quote against another engine — `make bench` does that, paired.
"""
import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, env):
    p = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode:
        sys.exit(f"bench_scaling: {' '.join(cmd)} failed:\n{p.stdout[-3000:]}")
    return p.stdout


def bench_point(env, tmp, preset, linear, batch, seq, threads, steps):
    js = os.path.join(tmp, "p.json")
    run(["build/bench", "--preset", preset, "--linears", linear, "--batch", str(batch), "--seq", str(seq),
         "--threads", str(threads), "--steps", str(steps), "--warmup", "1", "--no-profile", "--no-switches",
         "--json", js], env)
    with open(js) as f:
        j = json.load(f)
    r = j["results"][0]
    return {"preset": preset, "linear": linear, "batch": batch, "seq": seq, "threads": threads,
            "tokens_per_s": r["tokens_per_s"], "mfu": r["mfu"], "ms_per_step": r["ms_per_step"],
            "mem_peak_gib": r["mem_peak_bytes"] / 2**30, "max_rss_gib": j["max_rss_bytes"] / 2**30,
            "peak_gflops": j["peak_gflops"], "load": os.getloadavg()[0]}


TP_MODEL = """model: {linear: cola, vocab_size: 2048, n_layers: 4, d_model: 128, n_heads: 4, d_ff: 344, seq_len: 128}
data: {dataset: kjv}
train: {batch_size: 8, steps: 8, warmup_steps: 2, log_every: 100, val_every: 0}
boost: {btp: true, online_rmsnorm: true, grouping: true}
"""


def tp_point(env, tmp, tp):
    cfg = os.path.join(tmp, "tp.yaml")
    with open(cfg, "w") as f:
        f.write(TP_MODEL)
    db = os.path.join(tmp, "tp.db")
    run(["mpirun", "-np", str(tp), "build/train", cfg, "--set", f"parallel.tp={tp}", "--set", f"run.db={db}",
         "--set", f"run.checkpoint_dir={tmp}/ckpt"], env)
    con = sqlite3.connect(db)
    rid = con.execute("SELECT max(id) FROM runs").fetchone()[0]
    ms, tps = con.execute("SELECT avg(step_seconds)*1e3, avg(tokens_per_s) FROM steps WHERE run_id=? AND step > 2", (rid,)).fetchone()
    # tp 1 communicates nothing: no comm rows, SUM is NULL
    comm = (con.execute("SELECT sum(seconds)*1e3 FROM comm WHERE run_id=? AND step > 2", (rid,)).fetchone()[0] or 0.0) / 6
    # of which waiting for the other ranks to arrive (comm.wait_seconds, docs/database.md): the rest moved data
    wait = (con.execute("SELECT sum(wait_seconds)*1e3 FROM comm WHERE run_id=? AND step > 2", (rid,)).fetchone()[0] or 0.0) / 6
    rss = con.execute("SELECT bytes FROM memory WHERE run_id=? AND category='peak_rss'", (rid,)).fetchone()
    con.close()
    return {"tp": tp, "ms_per_step": ms, "tokens_per_s": tps, "comm_ms": comm, "comm_share": comm / ms, "comm_wait_ms": wait,
            "max_rss_gib": (rss[0] if rss else 0) / 2**30, "load": os.getloadavg()[0]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="analysis/figures/bench-scaling.png")
    ap.add_argument("--quick", action="store_true", help="fewer points (a smoke test of the command)")
    a = ap.parse_args()
    env = dict(os.environ, OMP_WAIT_POLICY="passive", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    tmp = tempfile.mkdtemp(prefix="bench-scaling.")
    t0, load0 = time.time(), os.getloadavg()
    out = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "load_before": load0}
    presets = ["cola-60m"] if a.quick else ["cola-60m", "cola-130m", "cola-350m"]
    out["size"] = [bench_point(env, tmp, p, k, 1, 256, 0, 2) for p in presets for k in ("dense", "cola")]
    seqs = [256, 512] if a.quick else [256, 512, 1024, 2048]
    out["seq"] = [bench_point(env, tmp, "cola-60m", "cola", max(1, 2048 // s), s, 0, 2) for s in seqs]
    out["threads"] = [bench_point(env, tmp, "cola-60m", "cola", 4, 256, t, 2) for t in (1, 2)]
    out["tp"] = [tp_point(env, tmp, tp) for tp in ((1, 2) if a.quick else (1, 2, 4))]
    out["load_after"] = os.getloadavg()
    out["seconds"] = time.time() - t0

    print(f"bench-scaling {out['date']} | load average before {load0[0]:.2f}, after {out['load_after'][0]:.2f} | "
          f"{out['seconds']:.0f} s | one run per point")
    print("\nmodel size (batch 1 x seq 256)")
    print("| preset | kind | tokens/s | MFU | ms/step | peak alloc GiB | max RSS GiB | load |")
    print("|---|---|---|---|---|---|---|---|")
    for p in out["size"]:
        print(f"| {p['preset']} | {p['linear']} | {p['tokens_per_s']:.0f} | {100 * p['mfu']:.1f}% | {p['ms_per_step']:.0f} | "
              f"{p['mem_peak_gib']:.2f} | {p['max_rss_gib']:.2f} | {p['load']:.1f} |")
    print("\nsequence length (cola-60m, cola, 2048 tokens per step)")
    print("| seq | batch | tokens/s | MFU | ms/step | peak alloc GiB | load |")
    print("|---|---|---|---|---|---|---|")
    for p in out["seq"]:
        print(f"| {p['seq']} | {p['batch']} | {p['tokens_per_s']:.0f} | {100 * p['mfu']:.1f}% | {p['ms_per_step']:.0f} | "
              f"{p['mem_peak_gib']:.3f} | {p['load']:.1f} |")
    print("\nthreads (cola-60m, cola, 4 x 256)")
    print("| threads | tokens/s | MFU (vs the peak at that thread count) | ms/step | peak alloc GiB | load |")
    print("|---|---|---|---|---|---|")
    for p in out["threads"]:
        print(f"| {p['threads']} | {p['tokens_per_s']:.0f} | {100 * p['mfu']:.1f}% | {p['ms_per_step']:.0f} | "
              f"{p['mem_peak_gib']:.2f} | {p['load']:.1f} |")
    print("\ntensor parallelism (BOOST, small cola model on kjv, 8 x 128 tokens; mpirun, 2 cores)")
    print("| tp | ms/step | tokens/s | comm ms/step | of which waiting | share in collectives | moving data | max RSS GiB/rank | load |")
    print("|---|---|---|---|---|---|---|---|---|")
    for p in out["tp"]:
        print(f"| {p['tp']} | {p['ms_per_step']:.1f} | {p['tokens_per_s']:.0f} | {p['comm_ms']:.1f} | {p['comm_wait_ms']:.1f} | "
              f"{100 * p['comm_share']:.0f}% | {100 * (p['comm_ms'] - p['comm_wait_ms']) / p['ms_per_step']:.0f}% | "
              f"{p['max_rss_gib']:.2f} | {p['load']:.1f} |")
    print("(waiting: rank 0's time in collectives until the group's last rank arrived; the rest moved data)")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(2, 2, figsize=(12, 8))
    for k, m in (("dense", "o-"), ("cola", "s--")):
        pts = [p for p in out["size"] if p["linear"] == k]
        ax[0][0].plot([p["preset"] for p in pts], [p["tokens_per_s"] for p in pts], m, label=f"{k} tokens/s")
    ax2 = ax[0][0].twinx()
    for k, m in (("dense", "o:"), ("cola", "s:")):
        pts = [p for p in out["size"] if p["linear"] == k]
        ax2.plot([p["preset"] for p in pts], [100 * p["mfu"] for p in pts], m, alpha=0.5, label=f"{k} MFU %")
    ax[0][0].set_title("model size (batch 1 x 256)"); ax[0][0].set_ylabel("tokens/s"); ax2.set_ylabel("MFU %")
    ax[0][0].legend(loc="upper left"); ax2.legend(loc="upper right")
    s = out["seq"]
    ax[0][1].plot([p["seq"] for p in s], [p["ms_per_step"] for p in s], "o-", label="ms/step (2048 tokens)")
    axm = ax[0][1].twinx()
    axm.plot([p["seq"] for p in s], [1024 * p["mem_peak_gib"] for p in s], "s--", color="C1", label="peak alloc MiB")
    ax[0][1].set_xscale("log", base=2); ax[0][1].set_title("sequence length (cola-60m)")
    ax[0][1].legend(loc="upper left"); axm.legend(loc="lower right"); axm.set_ylabel("MiB")
    t = out["threads"]
    ax[1][0].bar([str(p["threads"]) for p in t], [p["tokens_per_s"] for p in t])
    ax[1][0].set_title("threads (cola-60m, 4 x 256)"); ax[1][0].set_ylabel("tokens/s"); ax[1][0].set_xlabel("threads")
    tp = out["tp"]
    comp = [p["ms_per_step"] - p["comm_ms"] for p in tp]
    ax[1][1].bar([str(p["tp"]) for p in tp], comp, label="outside collectives")
    moving = [p["comm_ms"] - p["comm_wait_ms"] for p in tp]
    ax[1][1].bar([str(p["tp"]) for p in tp], moving, bottom=comp, label="in collectives: moving data")
    ax[1][1].bar([str(p["tp"]) for p in tp], [p["comm_wait_ms"] for p in tp], bottom=[c + m for c, m in zip(comp, moving)],
                 label="in collectives: waiting for the other ranks")
    ax[1][1].set_title("tp (BOOST, small model, mpirun on 2 cores)"); ax[1][1].set_ylabel("ms/step"); ax[1][1].legend()
    fig.suptitle(f"boost-c cost scaling on this CPU — {out['date']}, load {load0[0]:.1f}→{out['load_after'][0]:.1f}, one run per point")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.join(ROOT, a.out)), exist_ok=True)
    fig.savefig(os.path.join(ROOT, a.out), dpi=110)
    with open(os.path.join(ROOT, os.path.splitext(a.out)[0] + ".json"), "w") as f:
        json.dump(out, f, indent=1)
    print(f"\nwrote {a.out} and its .json")


if __name__ == "__main__":
    main()
