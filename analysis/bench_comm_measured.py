#!/usr/bin/python3
"""bench_comm_measured.py — the measured half of `make bench-comm`.

    /usr/bin/python3 analysis/bench_comm_measured.py [--repeat 3] [--tp 2,4] [--steps 10]

FullRank-TP, Vanilla-TP and BOOST (BTP + online RMSNorm + grouping), each also with sequence
parallelism (docs/parallelism.md §8, docs/boost.md §8), train the same small model on kjv at each
tp on this machine (MPI over shared memory). The schemes run interleaved (F V B F+SP V+SP B+SP
F V ...) --repeat times, so that a change of load hits all of them alike; the load
average is recorded before and after. Per scheme and tp: the per-layer communication of layer 1
(exact, from the run database), and the median with min-max over the repeats of the step time
(steps after the 2nd) and of the time inside collectives per step (rank 0).
"""
import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = """model: {linear: cola, vocab_size: 2048, n_layers: 4, d_model: 128, n_heads: 4, d_ff: 344, seq_len: 128}
data: {dataset: kjv}
train: {batch_size: 8, steps: STEPS, warmup_steps: 2, log_every: 100, val_every: 0}
"""
SCHEMES = {
    "fullrank-tp": ["--set", "model.linear=dense"],
    "vanilla-tp": [],
    "boost": ["--set", "boost.btp=true", "--set", "boost.online_rmsnorm=true", "--set", "boost.grouping=true"],
}
SP = ["--set", "parallel.sequence_parallel=true"]
SCHEMES.update({f"{k}+sp": v + SP for k, v in list(SCHEMES.items())})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tp", default="2,4")
    ap.add_argument("--steps", type=int, default=10)
    a = ap.parse_args()
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", OMP_WAIT_POLICY="passive")
    tmp = tempfile.mkdtemp(prefix="bench-comm.")
    cfg = os.path.join(tmp, "bench-comm.yaml")
    with open(cfg, "w") as f:
        f.write(MODEL.replace("STEPS", str(a.steps)))
    db = os.path.join(ROOT, "runs", "bench-comm.db")
    load0 = os.getloadavg()
    res = {}
    for tp in [int(x) for x in a.tp.split(",")]:
        for r in range(a.repeat):
            for scheme, sets in SCHEMES.items():
                cmd = ["mpirun", "-np", str(tp), "build/train", cfg, "--set", f"parallel.tp={tp}", "--set", f"run.db={db}",
                       "--set", f"run.checkpoint_dir={tmp}/ckpt"] + sets
                p = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                if p.returncode:
                    sys.exit(f"bench_comm_measured: {' '.join(cmd)} failed:\n{p.stdout[-3000:]}")
                con = sqlite3.connect(db)
                rid = con.execute("SELECT max(id) FROM runs").fetchone()[0]
                q = lambda sql: con.execute(sql, (rid,)).fetchone()
                fwd = q("SELECT sum(calls), sum(elements) FROM comm WHERE run_id=? AND layer=1 AND phase='forward'")
                bwd = q("SELECT sum(calls), sum(elements) FROM comm WHERE run_id=? AND layer=1 AND phase='backward'")
                ms = q("SELECT avg(step_seconds)*1e3, avg(tokens_per_s) FROM steps WHERE run_id=? AND step > 2")
                cms = q("SELECT sum(seconds)*1e3 FROM comm WHERE run_id=? AND step > 2")[0] / max(a.steps - 2, 1)
                con.close()
                e = res.setdefault((scheme, tp), {"fwd": (fwd[0] // a.steps, fwd[1] // a.steps),
                                                   "bwd": (bwd[0] // a.steps, bwd[1] // a.steps), "ms": [], "comm": []})
                e["ms"].append(ms[0]); e["comm"].append(cms)
                print(f"  {scheme} tp {tp} #{r + 1}: {ms[0]:.1f} ms/step (load {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
    load1 = os.getloadavg()
    print(f"\nmeasured on this machine, interleaved x {a.repeat}; load average before {load0[0]:.2f}, after {load1[0]:.2f}")
    print(f"{'scheme':<15} {'tp':>3} {'fwd calls':>9} {'fwd elements':>13} {'bwd calls':>9} {'bwd elements':>13} "
          f"{'ms/step median (min-max)':>26} {'comm ms median (min-max)':>26}")
    for (scheme, tp), e in res.items():
        m, c = e["ms"], e["comm"]
        print(f"{scheme:<15} {tp:>3} {e['fwd'][0]:>9} {e['fwd'][1]:>13} {e['bwd'][0]:>9} {e['bwd'][1]:>13} "
              f"{statistics.median(m):>10.1f} ({min(m):.1f}-{max(m):.1f}) {statistics.median(c):>10.1f} ({min(c):.1f}-{max(c):.1f})")
    print("(per layer and micro-batch of 8x128 tokens; comm ms = seconds inside collectives per step on rank 0, all layers)")


if __name__ == "__main__":
    main()
