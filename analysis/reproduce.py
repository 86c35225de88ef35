#!/usr/bin/python3
"""reproduce.py — `make reproduce`: the BOOST paper's figures and tables from the performance
model (build/simulate on the real drivers' traces), the exact accounting of the drivers, and
whatever was measured, each cell labelled, next to the paper's numbers.

    /usr/bin/python3 analysis/reproduce.py [--hardware a100-80gb-node4] [--out analysis/reproduction]

Writes into OUT: fig1.png/.csv (per-layer compute and communication, 7B tp 4), fig5.png and
fig5.csv (s/iteration 1B-30B, and the architectures at 7B), fig6.png/.csv (GEMM utilisation of
the Vanilla-TP and BTP shapes), fig7.png/.csv (per-layer volume and time), tab2.csv (grouping),
tab3.csv (checkpointing efficiency), rmsnorm.csv (online RMSNorm, op level), ladder.csv (the
technique ladder), and REPORT.md with every table, the issue's target checked, and what misses
and why. The paper's numbers come from analysis/reproduction/paper_numbers.yaml only.

Labels: `exact` = counted by the drivers in accounting mode (no time model); `modeled (P)` =
build/simulate on hardware profile P; `measured (host, date)` = a run on a machine. Nothing
here is fitted to the paper's timings: the profile's numbers are vendor specifications and
published measurements (experiments/hardware/*.yaml, docs/performance-model.md).
"""
import argparse
import csv
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import yaml12  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = [("1B", "1b", 1, 1, 1), ("3B", "3b", 2, 2, 1), ("7B", "7b", 4, 4, 1), ("13B", "13b", 8, 4, 2), ("30B", "30b", 16, 4, 4)]
SCHEMES = [("fullrank-tp", "fullrank", "FullRank-TP"), ("vanilla-tp", "vanilla", "Vanilla-TP"), ("boost", "boost", "BOOST")]
ARCHS = ["svd", "cola", "lax"]
FIG5_TOL, FIG1_TOL = 0.15, 0.25


# ---- inputs ---------------------------------------------------------------------------------
def load_paper():
    with open(os.path.join(ROOT, "analysis/reproduction/paper_numbers.yaml")) as f:
        doc = yaml12.load(f)
    return {n["id"]: n for n in doc["numbers"]}, doc


class Model:
    """build/simulate, cached: one JSON report per (manifest, variant, overrides)."""

    def __init__(self, hardware, tmp):
        self.hw, self.tmp, self.cache, self.n = hardware, tmp, {}, 0

    def run(self, manifest, variant, sets=()):
        key = (manifest, variant, tuple(sets))
        if key in self.cache:
            return self.cache[key]
        self.n += 1
        out = os.path.join(self.tmp, f"sim{self.n}.json")
        cmd = ["build/simulate", f"experiments/{manifest}.yaml", "--variant", variant, "--hardware", self.hw, "--json", out]
        for s in sets:
            cmd += ["--set", s]
        p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode:
            sys.exit(f"reproduce: {' '.join(cmd)} failed (exit {p.returncode}):\n{p.stdout[-2000:]}")
        with open(out) as f:
            self.cache[key] = json.load(f)
        return self.cache[key]

    def gemm(self, M, N, K, count=1):
        p = subprocess.run(["build/simulate", "--hardware", self.hw, "--gemm", f"{M},{N},{K},{count}"], cwd=ROOT,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode:
            sys.exit(f"reproduce: build/simulate --gemm failed:\n{p.stdout}")
        return json.loads(p.stdout)


def layer_events(rep, phase="forward"):
    return [e for e in rep["layer_trace"]["events"] if e["phase"] == phase]


def layer_split(rep, phase="forward"):
    """[compute, communication] seconds of one layer and micro-batch (the traced layer)."""
    lt = rep["layer_trace"]
    st = rep["stages"][lt["stage"]]
    for l in st["layers"]:
        if l["layer"] == lt["layer"]:
            return l[phase]
    raise KeyError("traced layer not in its stage")


def tp_comm_forward(rep):
    ev = [e for e in layer_events(rep) if e["type"] == "comm" and e["group"] == "tp"]
    return sum(e["bytes"] for e in ev), sum(e["seconds"] for e in ev), len(ev)


def mem_acts(rep):
    m = rep["stages"][0]["memory_bytes"]
    return m["activations"] + m["working"]


# ---- formatting -----------------------------------------------------------------------------
def ratio(a, b):
    return a / b if a is not None and b not in (None, 0) else None


def f(x, d=3):
    return "—" if x is None else f"{x:.{d}f}"


def dev(r):
    return "—" if r is None else f"{100 * (r - 1):+.1f}%"


def md_table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def write_csv(path, head, rows):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")  # Unix lines: head, grep and sqlite3 .import read them as written
        w.writerow(head)
        for r in rows:
            w.writerow(["" if c is None else (f"{c:.6g}" if isinstance(c, float) else c) for c in r])


def git_commit():
    p = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    d = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return (p.stdout.strip() or "unknown") + (" (uncommitted changes)" if d.stdout.strip() else "")


# ---- the figures and tables -------------------------------------------------------------------
def fig5(m, paper, out, plt, label):
    rows, left = [], {}
    for size, key, gpus, tp, pp in SIZES:
        for variant, pkey, _ in SCHEMES:
            r = m.run("paper-weak-scaling", f"{key}-{variant}")
            left[(size, variant)] = r["step"]["seconds"]
            rows.append([size, "cola", variant, gpus, tp, pp, paper[f"fig5.{key}.{pkey}"]["value"], r["step"]["seconds"], None])
    right = {}
    for arch in ARCHS:
        for variant, pkey, _ in SCHEMES:
            v = "fullrank-tp" if variant == "fullrank-tp" else f"{arch}-{variant}"
            r = m.run("paper-architectures", v)
            right[(arch, variant)] = r["step"]["seconds"]
            if arch != "cola" and variant != "fullrank-tp":   # cola and the dense model: rows of the left panel
                rows.append(["7B", arch, variant, 4, 4, 1, paper[f"fig5r.{arch}.{pkey}"]["value"], r["step"]["seconds"], None])
    write_csv(os.path.join(out, "fig5.csv"), ["size", "arch", "scheme", "gpus", "tp", "pp", "paper_s", "model_s", "measured_s"], rows)
    # the sensitivity to the unstated micro-batches per iteration (13B, 30B: the pipeline)
    sens = {}
    for size, key, gpus, tp, pp in SIZES:
        if pp > 1:
            for variant, _, _ in SCHEMES:
                r = m.run("paper-weak-scaling", f"{key}-{variant}", ["train.grad_accum=4"])
                sens[(size, variant)] = r["step"]["seconds"]
    fig, ax = plt.subplots(1, 2, figsize=(13, 4.6), gridspec_kw={"width_ratios": [5, 3]})
    colors = {"fullrank-tp": "#888888", "vanilla-tp": "#d95f02", "boost": "#1b9e77"}
    w = 0.13
    for j, (variant, pkey, name) in enumerate(SCHEMES):
        xs = [i + (j - 1) * 2 * w for i in range(len(SIZES))]
        ax[0].bar([x - w / 2 for x in xs], [left[(s[0], variant)] for s in SIZES], w, color=colors[variant], label=f"{name} model")
        ax[0].bar([x + w / 2 for x in xs], [paper[f"fig5.{s[1]}.{pkey}"]["value"] for s in SIZES], w, color=colors[variant],
                  alpha=0.35, hatch="//", edgecolor=colors[variant], label=f"{name} paper")
    ax[0].set_xticks(range(len(SIZES)))
    ax[0].set_xticklabels([f"{s[0]}\n{s[2]} GPU{'s' if s[2] > 1 else ''}, tp {s[3]}, pp {s[4]}" for s in SIZES])
    ax[0].set_ylabel("seconds per iteration")
    ax[0].set_title(f"Fig. 5 left: weak scaling, CoLA (solid: {label}; hatched: paper)", fontsize=10)
    ax[0].legend(fontsize=7, ncol=3)
    for j, (variant, pkey, name) in enumerate(SCHEMES):
        xs = [i + (j - 1) * 2 * w for i in range(len(ARCHS))]
        ax[1].bar([x - w / 2 for x in xs], [right[(a, variant)] for a in ARCHS], w, color=colors[variant])
        ax[1].bar([x + w / 2 for x in xs], [paper[f"fig5r.{a}.{pkey}"]["value"] for a in ARCHS], w, color=colors[variant],
                  alpha=0.35, hatch="//", edgecolor=colors[variant])
    ax[1].set_xticks(range(len(ARCHS)))
    ax[1].set_xticklabels([a.upper() if a != "cola" else "CoLA" for a in ARCHS])
    ax[1].set_title("Fig. 5 right: architectures at 7B, tp 4", fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "fig5.png"), dpi=130)
    plt.close(fig)
    return left, right, sens


def fig1(m, paper, out, plt, label):
    reps = {"fullrank-tp": m.run("paper-ablations", "fullrank-tp"), "vanilla-tp": m.run("paper-ablations", "vanilla-tp"),
            "btp": m.run("paper-ablations", "btp-online-grouped")}
    pk = {"fullrank-tp": "fullrank", "vanilla-tp": "vanilla", "btp": "btp"}
    names = {"fullrank-tp": "FullRank-TP", "vanilla-tp": "Vanilla-TP", "btp": "BTP (BOOST)"}
    rows, res = [], {}
    for s, r in reps.items():
        c, k = layer_split(r)
        pc, pm = paper[f"fig1.{pk[s]}.compute"]["value"], paper[f"fig1.{pk[s]}.comm"]["value"]
        res[s] = (1e3 * c, 1e3 * k, pc, pm)
        rows.append([s, "compute", pc, 1e3 * c, ratio(1e3 * c, pc), label])
        rows.append([s, "communication", pm, 1e3 * k, ratio(1e3 * k, pm), label])
    write_csv(os.path.join(out, "fig1.csv"), ["scheme", "part", "paper_ms", "model_ms", "model_over_paper", "label"], rows)
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    xs = range(len(reps))
    for i, s in enumerate(reps):
        c, k, pc, pm = res[s]
        ax.bar(i - 0.18, c, 0.34, color="#4c72b0", label="compute (model)" if i == 0 else None)
        ax.bar(i - 0.18, k, 0.34, bottom=c, color="#dd8452", label="communication (model)" if i == 0 else None)
        ax.bar(i + 0.18, pc, 0.34, color="#4c72b0", alpha=0.35, hatch="//", label="compute (paper)" if i == 0 else None)
        ax.bar(i + 0.18, pm, 0.34, bottom=pc, color="#dd8452", alpha=0.35, hatch="//", label="communication (paper)" if i == 0 else None)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([names[s] for s in reps])
    ax.set_ylabel("ms per layer, forward, micro-batch 4")
    ax.set_title(f"Fig. 1: per-layer runtime, 7B, tp 4 (left bars: {label}; right: paper)", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "fig1.png"), dpi=130)
    plt.close(fig)
    return res, reps


def pair_shapes(cfg, tp, N):
    d, dff, r = cfg["d"], cfg["d_ff"], cfg["r"]
    return {   # (M, N, K) of the down factor A and the up factor B of one low-rank linear, per rank
        ("attention", "Vanilla-TP"): [(N, r // tp, d), (N, d, r // tp)],
        ("attention", "BTP"): [(N, r, d // tp), (N, d // tp, r)],
        ("mlp", "Vanilla-TP"): [(N, r // tp, d), (N, dff, r // tp)],
        ("mlp", "BTP"): [(N, r, d // tp), (N, dff // tp, r)],
    }


def fig6(m, paper, out, plt, label, cfg7):
    shapes = pair_shapes(cfg7, 4, 4 * 4096)
    rows, res = [], {}
    for (part, scheme), gemms in shapes.items():
        fl = t = 0
        for (M, N, K) in gemms:
            g = m.gemm(M, N, K)
            fl += g["flops"]
            t += g["seconds"]
            rows.append([part, scheme, f"{M}x{N}x{K}", g["flops"], 1e3 * g["seconds"], 100 * g["utilisation"], None, None, label])
        peak = g["flop_per_s"] / g["utilisation"]
        util = 100 * fl / t / peak
        pkey = "vanilla" if scheme == "Vanilla-TP" else "btp"
        pt = paper[f"fig6.time.{part}.{pkey}"]["value"]
        pu = paper["fig6.util.vanilla"]["value"] if scheme == "Vanilla-TP" else paper[f"fig6.util.btp_{part}"]["value"]
        res[(part, scheme)] = (1e3 * t, util, pt, pu, fl)
        rows.append([part, scheme, "pair", fl, 1e3 * t, util, pt, pu, label])
    write_csv(os.path.join(out, "fig6.csv"), ["part", "scheme", "gemm_MxNxK", "flops", "model_ms", "model_util_pct", "paper_ms",
                                              "paper_util_pct", "label"], rows)
    fig, ax = plt.subplots(figsize=(7.5, 4))
    keys = list(res)
    ax.bar([i - 0.18 for i in range(len(keys))], [res[k][1] for k in keys], 0.34, color="#4c72b0", label=f"model ({label})")
    ax.bar([i + 0.18 for i in range(len(keys))], [res[k][3] for k in keys], 0.34, color="#4c72b0", alpha=0.35, hatch="//",
           label="paper (Fig. 6, approx.)")
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels([f"{p}\n{s}" for p, s in keys])
    ax.set_ylabel("GEMM utilisation of peak, %")
    ax.set_ylim(0, 100)
    ax.set_title("Fig. 6: one low-rank pair (A then B), 7B, micro-batch 4, tp 4", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "fig6.png"), dpi=130)
    plt.close(fig)
    return res


def bench_comm_volumes():
    p = subprocess.run(["build/bench_comm"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode:
        sys.exit(f"reproduce: build/bench_comm failed:\n{p.stdout}")
    vol = {}
    for line in p.stdout.splitlines():
        for name, key in (("FullRank-TP (dense)", "fullrank-tp"), ("Vanilla-TP (cola)", "vanilla-tp"),
                          ("BTP, grouped, online RMSNorm", "btp")):
            if line.startswith(name):
                vol[key] = int(line[len(name):].split()[1])   # forward elements
    return vol


def fig7(paper, out, plt, label, f1reps):
    bc = bench_comm_volumes()
    rows, res = [], {}
    for s, pk in (("fullrank-tp", "fullrank"), ("vanilla-tp", "vanilla"), ("btp", "btp")):
        by, sec, calls = tp_comm_forward(f1reps[s])
        if bc.get(s) is not None and bc[s] * 2 != by:
            sys.exit(f"reproduce: the forward TP bytes of {s} differ between build/simulate ({by}) and build/bench_comm "
                     f"({2 * bc[s]} = 2 x {bc[s]} elements)")
        gib = by / 2 ** 30
        pv, pt = paper[f"fig7.{pk}.volume"]["value"], paper[f"fig7.{pk}.time"]["value"]
        res[s] = (gib, 1e3 * sec, pv, pt, calls)
        rows.append([s, "volume_GiB", pv, gib, ratio(gib, pv), "exact (accounting)"])
        rows.append([s, "time_ms", pt, 1e3 * sec, ratio(1e3 * sec, pt), label])
    write_csv(os.path.join(out, "fig7.csv"), ["scheme", "quantity", "paper", "ours", "ours_over_paper", "label"], rows)
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.8))
    ks = list(res)
    for j, (idx, pidx, yl) in enumerate(((0, 2, "GiB per layer, forward (exact)"), (1, 3, f"ms per layer, forward ({label})"))):
        ax[j].bar([i - 0.18 for i in range(3)], [res[k][idx] for k in ks], 0.34, color="#55a868", label="ours")
        ax[j].bar([i + 0.18 for i in range(3)], [res[k][pidx] for k in ks], 0.34, color="#55a868", alpha=0.35, hatch="//", label="paper")
        ax[j].set_xticks(range(3))
        ax[j].set_xticklabels(["FullRank-TP", "Vanilla-TP", "BTP"])
        ax[j].set_ylabel(yl)
        ax[j].legend(fontsize=8)
    fig.suptitle("Fig. 7: TP communication per layer, 7B, micro-batch 4, s 4096, tp 4", fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "fig7.png"), dpi=130)
    plt.close(fig)
    return res


def qkv_mlp1_parts(rep):
    """Tab. 2's parts of one layer's forward (traced layer, micro-batch 0), in the drivers'
    order: QKV = the A GEMM(s) of q, k, v (before the attention core) and their all-reduce(s);
    MLP1 = the A GEMM(s) of gate, up (after the o projection: the GEMMs between the attention
    core and the SwiGLU other than A_o, B_o and the batched B's) and their all-reduce(s);
    layer = every op and collective of the layer's forward."""
    ev = layer_events(rep)
    ia = next(i for i, e in enumerate(ev) if e.get("name") == "attention_forward")
    isw = next(i for i, e in enumerate(ev) if e.get("name") == "swiglu_forward")
    qkv_c = sum(e["seconds"] for e in ev[:ia] if e["type"] == "op" and e["name"] == "gemm")
    qkv_m = sum(e["seconds"] for e in ev[:ia] if e["type"] == "comm")
    mid = ev[ia + 1:isw]
    gemms = [e for e in mid if e["type"] == "op" and e["name"] == "gemm"]
    ars = [e for e in mid if e["type"] == "comm"]
    mlp1_c = sum(e["seconds"] for e in gemms[2:])
    mlp1_m = sum(e["seconds"] for e in ars[1:])
    layer = sum(e["seconds"] for e in ev)
    return {"qkv_compute": 1e6 * qkv_c, "qkv_comm": 1e6 * qkv_m, "mlp1_compute": 1e6 * mlp1_c, "mlp1_comm": 1e6 * mlp1_m,
            "layer": 1e6 * layer}


def tab2(m, paper, out, label):
    rows, res = [], {}
    for mb in (1, 4):
        un = qkv_mlp1_parts(m.run("paper-ablations", "btp-online", [f"train.batch_size={mb}"]))
        gr = qkv_mlp1_parts(m.run("paper-ablations", "btp-online-grouped", [f"train.batch_size={mb}"]))
        for part in ("mlp1_compute", "mlp1_comm", "qkv_compute", "qkv_comm", "layer"):
            pu = paper.get(f"tab2.mb{mb}.{part}.ungrouped", {}).get("value")
            pg = paper.get(f"tab2.mb{mb}.{part}.grouped", {}).get("value")
            res[(mb, part)] = (un[part], gr[part], pu, pg)
            rows.append([mb, part, pu, un[part], pg, gr[part], ratio(un[part], gr[part]), ratio(pu, pg), label])
    write_csv(os.path.join(out, "tab2.csv"), ["micro_batch", "part", "paper_ungrouped_us", "model_ungrouped_us", "paper_grouped_us",
                                              "model_grouped_us", "model_speedup", "paper_speedup", "label"], rows)
    return res


def tab3(m, paper, out, label):
    rows, res = [], {}
    for mb in (4, 8):
        s = [f"train.batch_size={mb}"]
        pairs = {"btp": ("btp-online-grouped", "boost-lowrank-ckpt"), "vanilla-tp": ("vanilla-tp", "vanilla-tp-full-recompute")}
        for scheme, (base, ck) in pairs.items():
            a, b = m.run("paper-ablations", base, s), m.run("paper-ablations", ck, s)
            saved_mb = (mem_acts(a) - mem_acts(b)) / 1e6
            added_ms = 1e3 * (b["step"]["seconds"] - a["step"]["seconds"])
            eff = saved_mb / added_ms if added_ms > 0 else None
            pkey = "btp" if scheme == "btp" else "vanilla"
            pv = paper.get(f"tab3.mb{mb}.{pkey}", {}).get("value")
            res[(mb, scheme)] = (saved_mb, added_ms, eff, pv)
            rows.append([mb, scheme, saved_mb, added_ms, eff, pv, ratio(eff, pv), "exact (accounting) / " + label])
    write_csv(os.path.join(out, "tab3.csv"), ["micro_batch", "scheme", "saved_MB_exact", "added_ms_model", "MB_per_ms", "paper_MB_per_ms",
                                              "ours_over_paper", "label"], rows)
    return res


def norm_op(rep, online):
    """The first RMSNorm of the traced layer's forward, op level: the norm's own ops
    (rowsumsq, rownorm, and for online RMSNorm the rescales scale_rows) and, for SyncRMSNorm,
    its own all-reduce of the statistic; online RMSNorm's statistic rides in the bottleneck
    all-reduce (2·N more elements in a call that happens anyway: not counted here)."""
    ev = layer_events(rep)
    first_gemm = next(i for i, e in enumerate(ev) if e.get("name") == "gemm")
    first_ar_after = next(i for i, e in enumerate(ev) if i > first_gemm and e["type"] == "comm")
    t = 0.0
    for i, e in enumerate(ev[:first_ar_after + 2]):
        if e["type"] == "op" and e["name"] in ("rowsumsq", "rownorm"):
            t += e["seconds"]
        if online and e["type"] == "op" and e["name"] == "scale_rows":
            t += e["seconds"]
        if not online and e["type"] == "comm" and i < first_gemm:
            t += e["seconds"]
    return 1e3 * t


def rmsnorm(m, paper, out, label):
    rows, res = [], {}
    for mb in (1, 4):
        s = [f"train.batch_size={mb}"]
        sy = norm_op(m.run("paper-ablations", "btp-sync-grouped", s), False)
        on = norm_op(m.run("paper-ablations", "btp-online-grouped", s), True)
        ps, po = paper[f"rmsnorm.mb{mb}.sync"]["value"], paper[f"rmsnorm.mb{mb}.online"]["value"]
        res[mb] = (sy, on, ps, po)
        rows.append([mb, ps, sy, po, on, ratio(sy, on), ratio(ps, po), label])
    write_csv(os.path.join(out, "rmsnorm.csv"), ["micro_batch", "paper_sync_ms", "model_sync_ms", "paper_online_ms", "model_online_ms",
                                                 "model_speedup", "paper_speedup", "label"], rows)
    return res


LADDER = [("vanilla-tp", "Vanilla-TP"), ("btp", "+ BTP (SyncRMSNorm, ungrouped)"), ("btp-online", "+ online RMSNorm"),
          ("btp-online-grouped", "+ grouping (= BOOST)"), ("boost-lowrank-ckpt", "+ low-rank checkpointing")]


def ladder(m, paper, out, label):
    rows, res, prev = [], [], None
    for v, name in LADDER:
        r = m.run("paper-ablations", v)
        t = r["step"]["seconds"]
        first = res[0][2] if res else t
        pv = paper["fig5.7b.vanilla"]["value"] if v == "vanilla-tp" else paper["fig5.7b.boost"]["value"] if v == "btp-online-grouped" else None
        res.append((v, name, t, ratio(prev, t), first / t, pv, mem_acts(r) / 2 ** 30))
        rows.append([v, name, t, ratio(prev, t), first / t, pv, ratio(paper["fig5.7b.vanilla"]["value"], pv) if pv else None,
                     mem_acts(r) / 2 ** 30, label])
        prev = t
    write_csv(os.path.join(out, "ladder.csv"), ["variant", "step", "model_s", "speedup_vs_previous", "speedup_vs_vanilla", "paper_s",
                                                "paper_speedup_vs_vanilla", "activations_GiB_exact", "label"], rows)
    return res


# ---- the report ---------------------------------------------------------------------------------
def composition(rep):
    """ms of one layer's forward by class: gemm, attention, memory-bound, communication."""
    c = {"gemm": 0.0, "attention": 0.0, "memory": 0.0, "comm": 0.0}
    for e in layer_events(rep):
        c["comm" if e["type"] == "comm" else e["class"]] += 1e3 * e["seconds"]
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hardware", default="a100-80gb-node4")
    ap.add_argument("--out", default="analysis/reproduction")
    a = ap.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out = os.path.join(ROOT, a.out)
    os.makedirs(out, exist_ok=True)
    paper, pdoc = load_paper()
    tmp = tempfile.mkdtemp(prefix="reproduce.")
    m = Model(a.hardware, tmp)
    label = f"modeled ({a.hardware})"
    cfg7 = next(c for c in pdoc["configurations"] if c["size"] == "7B")

    left, right, sens = fig5(m, paper, out, plt, label)
    f1, f1reps = fig1(m, paper, out, plt, label)
    f6 = fig6(m, paper, out, plt, label, cfg7)
    f7 = fig7(paper, out, plt, label, f1reps)
    t2 = tab2(m, paper, out, label)
    t3 = tab3(m, paper, out, label)
    rn = rmsnorm(m, paper, out, label)
    ld = ladder(m, paper, out, label)
    hw_path = os.path.join(ROOT, "experiments/hardware", a.hardware + ".yaml")
    with open(hw_path) as fh:
        hw = yaml12.load(fh)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")

    R = []
    R.append("# Reproducing BOOST (arXiv 2512.12131) — the report\n")
    R.append(f"Generated by `make reproduce` (analysis/reproduce.py) on {now} at commit {git_commit()}: {m.n} simulations "
             f"with `build/simulate` on the hardware profile `{a.hardware}` ({hw['description']}), the exact accounting of "
             f"`build/bench_comm`, and the CPU validation of `analysis/validate_cpu.py` where it has been run. The paper's "
             f"numbers come from `analysis/reproduction/paper_numbers.yaml` (each with its provenance). Every value carries "
             f"its label: **exact** (counted by the real drivers in accounting mode), **{label}** (the performance model, "
             f"docs/performance-model.md), or **measured** (machine and date). No GPU has run these recipes: there are no "
             f"measured GPU cells, and `measured_s` in fig5.csv is empty.\n")
    R.append("Nothing is fitted to the paper's timings: the profile's numbers are vendor specifications and published "
             "measurements (its comments cite each), one profile serves every figure, and there are no per-size factors. "
             "What the model does not contain is listed under *Known limits of the model* below.\n")
    R.append("**Assumption — micro-batches per iteration.** The paper does not state it. Every recipe uses one micro-batch "
             "of 4 sequences per iteration (`train.grad_accum: 1`): the paper's own Fig. 1 per-layer forward times × 3 "
             "(forward + backward) × 32 layers give its 7B seconds per iteration (FullRank (8.6 + 2.0) ms → 1.0 s against "
             "1.06 s), which a larger count would not. With pipeline parallelism (13B, 30B) one micro-batch is a serial "
             "pipeline; the table after Fig. 5 shows 4 micro-batches for comparison.\n")

    # ---- the target
    R.append("## The issue's target\n")
    R.append(f"*With `a100-80gb-node4` and no constant fitted to the paper's timings: the modeled speed-ups of BOOST over "
             f"FullRank-TP and over Vanilla-TP within 15 % of the paper's Fig. 5 ratios at every size 1B–30B; the Fig. 1 "
             f"compute/communication split at 7B within 25 % for each scheme.*\n")
    rows, miss5 = [], []
    for size, key, gpus, tp, pp in SIZES:
        for other, pkey, name in SCHEMES[:2]:
            mr = left[(size, other)] / left[(size, "boost")]
            pr = paper[f"fig5.{key}.{pkey}"]["value"] / paper[f"fig5.{key}.boost"]["value"]
            d = mr / pr - 1
            ok = abs(d) <= FIG5_TOL
            if not ok:
                miss5.append((size, name, d))
            rows.append([size, f"over {name}", f(pr, 2), f"{mr:.2f} ({label})", f"{100 * d:+.1f}%", "within" if ok else "**MISSED**"])
    R.append("**Fig. 5: BOOST's speed-up (seconds per iteration of the baseline / of BOOST)**\n")
    R.append(md_table(["size", "speed-up", "paper", "model", "model / paper − 1", "15 %"], rows) + "\n")
    rows, miss1 = [], []
    names = {"fullrank-tp": "FullRank-TP", "vanilla-tp": "Vanilla-TP", "btp": "BTP"}
    for s, (c, k, pc, pm) in f1.items():
        for part, v, p in (("compute", c, pc), ("communication", k, pm)):
            d = v / p - 1
            ok = abs(d) <= FIG1_TOL
            if not ok:
                miss1.append((names[s], part, d))
            rows.append([names[s], part, f(p, 1), f"{v:.2f} ({label})", f"{100 * d:+.1f}%", "within" if ok else "**MISSED**"])
        frac, pfrac = k / (c + k), pm / (pc + pm)
        rows.append([names[s], "communication share", f"{100 * pfrac:.1f}%", f"{100 * frac:.1f}%", f"{100 * (frac / pfrac - 1):+.1f}%", "(share)"])
    R.append("**Fig. 1: per-layer forward compute and communication at 7B, tp 4, ms**\n")
    R.append(md_table(["scheme", "part", "paper", "model", "model / paper − 1", "25 %"], rows) + "\n")
    verdict5 = "met" if not miss5 else f"NOT met at {len(miss5)} of 10 ratios"
    verdict1 = "met" if not miss1 else f"NOT met for {len(miss1)} of 6 parts"
    R.append(f"**Verdict: Fig. 5 ratios {verdict5}; Fig. 1 split {verdict1}.** Where and why the model misses: the "
             f"section *What misses and why* below.\n")

    # ---- Fig. 5
    R.append("## Fig. 5: seconds per iteration\n")
    R.append("![Fig. 5](fig5.png)\n")
    rows = []
    for size, key, gpus, tp, pp in SIZES:
        for variant, pkey, name in SCHEMES:
            p = paper[f"fig5.{key}.{pkey}"]
            v = left[(size, variant)]
            rows.append([size, f"{gpus} (tp {tp}, pp {pp})", name, f"{p['value']:.2f} ({p['provenance']})", f"{v:.3f}", label,
                         f(v / p["value"], 2)])
    R.append(md_table(["size", "GPUs", "scheme", "paper s (provenance)", "model s", "label", "model / paper"], rows) + "\n")
    R.append("Architectures at 7B, tp 4 (Fig. 5 right):\n")
    rows = []
    for arch in ARCHS:
        for variant, pkey, name in SCHEMES:
            p = paper[f"fig5r.{arch}.{pkey}"]["value"]
            v = right[(arch, variant)]
            rows.append([arch, name, f"{p:.2f}", f"{v:.3f}", label, f(v / p, 2)])
    R.append(md_table(["architecture", "scheme", "paper s", "model s", "label", "model / paper"], rows) + "\n")
    rows = []
    for (size, variant), v4 in sens.items():
        rows.append([size, variant, f"{left[(size, variant)]:.3f}", f"{v4:.3f}", f"{v4 / 4:.3f}", label])
    R.append("The unstated micro-batch count, 13B and 30B (pipelined): seconds per iteration with 1 micro-batch (the "
             "recipes) and with 4 (4× the tokens; per micro-batch in the last column). The speed-up ratios move little:\n")
    R.append(md_table(["size", "scheme", "1 micro-batch s", "4 micro-batches s", "4 micro-batches, s per micro-batch", "label"], rows) + "\n")
    for size in ("13B", "30B"):
        r1 = left[(size, "fullrank-tp")] / left[(size, "boost")]
        r4 = sens[(size, "fullrank-tp")] / sens[(size, "boost")]
        v1 = left[(size, "vanilla-tp")] / left[(size, "boost")]
        v4 = sens[(size, "vanilla-tp")] / sens[(size, "boost")]
        R.append(f"- {size}: over FullRank-TP {r1:.2f} (1) vs {r4:.2f} (4); over Vanilla-TP {v1:.2f} vs {v4:.2f}.")
    R.append("")

    # ---- Fig. 1
    R.append("## Fig. 1: per-layer compute and communication (7B, tp 4, forward, micro-batch 4)\n")
    R.append("![Fig. 1](fig1.png)\n")
    rows = []
    for s, rep in f1reps.items():
        c = composition(rep)
        rows.append([names[s], f"{c['gemm']:.2f}", f"{c['attention']:.2f}", f"{c['memory']:.2f}", f"{c['comm']:.2f}", label])
    R.append("What the model's forward layer is made of, ms:\n")
    R.append(md_table(["scheme", "GEMMs", "attention core", "memory-bound ops", "collectives", "label"], rows) + "\n")

    # ---- Fig. 6
    R.append("## Fig. 6: GEMM utilisation of the Vanilla-TP and BTP shapes (7B, tp 4, micro-batch 4)\n")
    R.append("![Fig. 6](fig6.png)\n")
    rows = []
    for (part, scheme), (t, u, pt, pu, fl) in f6.items():
        rows.append([part, scheme, f"{fl / 1e9:.1f}", f"{t:.3f}", f"{pt:.2f}", f(t / pt, 2), f"{u:.1f}", f"{pu:.0f}", f(u / pu, 2), label])
    R.append(md_table(["pair", "scheme", "GFLOP (exact)", "model ms", "paper ms", "ratio", "model util %", "paper util %", "ratio",
                       "label"], rows) + "\n")
    R.append("A pair = one low-rank linear's down factor A then up factor B per rank: Vanilla-TP A [N,d]·[d,r/tp], B [N,r/tp]·[r/tp,out]; "
             "BTP A [N,d/tp]·[d/tp,r], B [N,r]·[r,out/tp]; N = 4·4096 tokens, out = d (attention: q) or d_ff (MLP: up). Both "
             "schemes do the same FLOPs. The paper's attention-pair times (~0.20 and ~0.16 ms, read off its plot) would be "
             "above the A100's 312 TFLOP/s peak for this pair's 68.7 GFLOP, so the paper timed a smaller pair than this reading "
             "of the notes; its utilisations are the comparable numbers.\n")

    # ---- Fig. 7
    R.append("## Fig. 7: TP communication per layer (7B, micro-batch 4, s 4096, tp 4, forward)\n")
    R.append("![Fig. 7](fig7.png)\n")
    rows = []
    for s, (gib, ms, pv, pt, calls) in f7.items():
        rows.append([names[s], calls, f"{gib:.3f}", "exact", f"{pv:.2f}", f(gib / pv, 2), f"{ms:.2f}", label, f"{pt:.2f}", f(ms / pt, 2)])
    R.append(md_table(["scheme", "calls", "GiB", "label", "paper GB", "ratio", "ms", "label", "paper ms", "ratio"], rows) + "\n")
    vb = f7["vanilla-tp"][1] / f7["btp"][1]
    R.append(f"BTP's forward TP communication is {vb:.1f}× faster than Vanilla-TP's ({label}; paper "
             f"{paper['fig7.btp_speedup_vs_vanilla']['value']}×); volume ratios (exact): FullRank-TP / BTP "
             f"{f7['fullrank-tp'][0] / f7['btp'][0]:.3f} (paper {paper['comm.ratio.fullrank_over_btp']['value']:.3f}), Vanilla-TP / BTP "
             f"{f7['vanilla-tp'][0] / f7['btp'][0]:.2f} (paper ~{paper['comm.ratio.vanilla_over_btp']['value']}); BTP's time vs "
             f"FullRank-TP's {100 * (f7['btp'][1] / f7['fullrank-tp'][1] - 1):+.1f}% (paper: up to −8 %). The volumes agree with "
             f"`build/bench_comm`'s table (checked).\n")

    # ---- Tab. 2
    R.append("## Table 2: linear-layer grouping, op level (7B CoLA, tp 4, BTP + online RMSNorm), µs\n")
    rows = []
    for (mb, part), (un, gr, pu, pg) in t2.items():
        rows.append([mb, part, f"{un:.0f}", f(pu, 0), f(un / pu, 2) if pu else "—", f"{gr:.0f}", f(pg, 0), f(gr / pg, 2) if pg else "—",
                     f"{un / gr:.2f}", f(pu / pg, 2) if pu and pg else "—", label])
    R.append(md_table(["micro-batch", "part", "ungrouped", "paper", "ratio", "grouped", "paper", "ratio", "speed-up", "paper", "label"], rows) + "\n")
    R.append("Parts, from the traced layer's forward in the drivers' order: QKV = the down-factor GEMM(s) of q, k, v and their "
             "all-reduce(s); MLP1 = those of gate and up; layer = every op and collective of the layer's forward.\n")

    # ---- Tab. 3
    R.append("## Table 3: activation checkpointing efficiency (7B, tp 4), MB saved per ms added\n")
    rows = []
    for (mb, scheme), (saved, added, eff, pv) in t3.items():
        rows.append([mb, "BTP low-rank checkpointing" if scheme == "btp" else "Vanilla-TP full-layer recompute", f"{saved:.0f}",
                     "exact", f"{added:.1f}", label, f(eff, 1), f(pv, 1), f(eff / pv, 2) if eff and pv else "—"])
    R.append(md_table(["micro-batch", "checkpointing", "MB saved per GPU", "label", "ms added per iteration", "label", "MB/ms",
                       "paper MB/ms", "ratio"], rows) + "\n")
    for mb in (4, 8):
        e_b, e_v = t3[(mb, "btp")][2], t3[(mb, "vanilla-tp")][2]
        pb, pv = paper.get(f"tab3.mb{mb}.btp", {}).get("value"), paper.get(f"tab3.mb{mb}.vanilla", {}).get("value")
        if e_b and e_v:
            R.append(f"- micro-batch {mb}: BTP's checkpointing is {e_b / e_v:.2f}× as efficient as Vanilla-TP's (paper "
                     f"{pb / pv:.2f}×).")
    R.append("\nMB = 10⁶ bytes of the activations and working set one GPU holds (exact, the memory report of the drivers); "
             "ms = the modeled step time with checkpointing minus without.\n")

    # ---- online RMSNorm
    R.append("## Online RMSNorm, op level (7B, tp 4, s 4096, BTP + grouping), ms\n")
    rows = []
    for mb, (sy, on, ps, po) in rn.items():
        rows.append([mb, f"{sy:.3f}", f"{ps:.3f}", f(sy / ps, 2), f"{on:.3f}", f"{po:.3f}", f(on / po, 2), f"{sy / on:.2f}", f"{ps / po:.2f}", label])
    R.append(md_table(["micro-batch", "SyncRMSNorm", "paper", "ratio", "online", "paper", "ratio", "speed-up", "paper", "label"], rows) + "\n")
    R.append("Op level = the first norm of a layer's forward: its statistic and normalisation ops, plus SyncRMSNorm's own "
             "all-reduce of the statistic; online RMSNorm's rescales count, its statistic rides in the bottleneck all-reduce.\n")

    # ---- ladder
    R.append("## The technique ladder (7B CoLA, tp 4, micro-batch 4)\n")
    rows = []
    for v, name, t, sp, cum, pv, gib in ld:
        rows.append([name, f"{t:.3f}", label, f(sp, 3), f"{cum:.2f}", f"{pv:.2f}" if pv else "—",
                     f"{paper['fig5.7b.vanilla']['value'] / pv:.2f}" if pv else "—", f"{gib:.1f}"])
    R.append(md_table(["step", "model s/iteration", "label", "speed-up over the step before", "over Vanilla-TP", "paper s", "paper over Vanilla-TP",
                       "activations + working set GiB per GPU (exact)"], rows) + "\n")
    R.append("The paper gives only the ladder's ends (Vanilla-TP and BOOST in Fig. 5); low-rank checkpointing trades time "
             "for memory, so its step is a slow-down by design (Table 3 measures what it buys).\n")

    # ---- the CPU validation
    R.append("## The model's credential: predicted against measured on this machine (cpu-local)\n")
    vpath = os.path.join(out, "validation_cpu.md")
    if os.path.exists(vpath):
        with open(vpath) as fh:
            R.append("Every ablation recipe's variants at tp 1, 2 and 4, measured and predicted in one session "
                     "(`/usr/bin/python3 analysis/validate_cpu.py`; cells: measured = on the host and date below, "
                     "predicted = modeled (cpu-local)).\n")
            R.append(fh.read())
    else:
        R.append("Not run in this checkout: `/usr/bin/python3 analysis/validate_cpu.py` (about half an hour on 2 cores) writes "
                 "analysis/reproduction/validation_cpu.md, which this report then includes.\n")

    # ---- misses
    R.append("## What misses and why\n")
    bt = composition(f1reps["btp"])
    fr = composition(f1reps["fullrank-tp"])
    R.append(f"- **BTP's compute in Fig. 1** ({f1['btp'][0]:.2f} ms modeled vs {f1['btp'][2]} ms): the model's BTP layer is "
             f"{bt['gemm']:.2f} ms of GEMMs, {bt['attention']:.2f} ms of attention core and {bt['memory']:.2f} ms of memory-bound "
             f"ops (FullRank-TP: {fr['gemm']:.2f} / {fr['attention']:.2f} / {fr['memory']:.2f}). The paper's own numbers put "
             f"the difference between the two layers at {f1['fullrank-tp'][2] - f1['btp'][2]:.1f} ms, the model at "
             f"{f1['fullrank-tp'][0] - f1['btp'][0]:.2f} ms: the model's BTP loses less to its many small element-wise ops "
             f"(memory-bound ops at the datasheet bandwidth, no kernel-launch gaps) and to its GEMMs ({f6[('mlp', 'BTP')][1]:.0f} % "
             f"and {f6[('attention', 'BTP')][1]:.0f} % utilisation for the MLP and attention pairs against the paper's ~75 % "
             f"and ~70 %) than the authors' PyTorch code does.")
    for size, name, d in miss5:
        key = next(k for sz, k, *_ in SIZES if sz == size)
        other = "fullrank-tp" if name == "FullRank-TP" else "vanilla-tp"
        okey = "fullrank" if other == "fullrank-tp" else "vanilla"
        line = f"- **Fig. 5, {size}, over {name}**: the modeled speed-up is {100 * d:+.1f}% off the paper's."
        if size != "7B":   # how each scheme's iteration grows from 7B, paper against model
            g_p = paper[f"fig5.{key}.{okey}"]["value"] / paper[f"fig5.7b.{okey}"]["value"]
            g_b = paper[f"fig5.{key}.boost"]["value"] / paper["fig5.7b.boost"]["value"]
            m_p = left[(size, other)] / left[("7B", other)]
            m_b = left[(size, "boost")] / left[("7B", "boost")]
            line += (f" From 7B to {size} the paper's {name} iteration grows {g_p:.2f}× and its BOOST iteration "
                     f"{g_b:.2f}×; the model's grow {m_p:.2f}× and {m_b:.2f}× (the drivers' layer arithmetic on the "
                     f"same profile). The paper's {name} scales unlike its other two schemes; the model cannot follow "
                     f"a scaling that its own layer costs do not produce.")
        else:   # 7B: with the paper's own Fig. 1 BTP layer in place of the model's
            fr_l, bt_l = f1["fullrank-tp"], f1["btp"]
            layers = 32
            bt_fix = left[("7B", "boost")] + 3 * layers * (bt_l[2] - bt_l[0]) / 1e3
            fr_fix = left[("7B", other)] + (3 * layers * (fr_l[2] - fr_l[0]) / 1e3 if other == "fullrank-tp" else 0)
            line += (f" The model's BTP layer computes in {bt_l[0]:.2f} ms what the paper's does in {bt_l[2]} ms (Fig. 1; "
                     f"FullRank-TP {fr_l[0]:.2f} vs {fr_l[2]} ms): with the paper's Fig. 1 compute per layer in place of the "
                     f"model's (× 3 for forward and backward, × {layers} layers) the speed-up would be "
                     f"{fr_fix / bt_fix:.2f} against the paper's "
                     f"{paper[f'fig5.7b.{okey}']['value'] / paper['fig5.7b.boost']['value']:.2f}. The shortfall is BTP's "
                     f"compute, the item above.")
        R.append(line)
    R.append(f"- **Absolute seconds of the pipelined sizes**: with one micro-batch per iteration (the assumption above) "
             f"13B and 30B run their stages one after another; the paper's 30B numbers (from reading notes, not the paper "
             f"body) are lower than any serial pipeline of these layers would allow on A100s, which suggests more than one "
             f"micro-batch; the ratios, which the target judges, hardly move (table after Fig. 5).")
    sy1, on1, ps1, po1 = rn[1]
    R.append(f"- **Online RMSNorm, op level**: the model prices SyncRMSNorm's own all-reduce of a [N] statistic as NCCL's "
             f"small-message latency (a few µs on NVLink; {sy1:.3f} ms for the whole sync norm at micro-batch 1 against the "
             f"paper's {ps1}), and online RMSNorm's two rescales of the [N, 3r] bottleneck at memory bandwidth: the model finds "
             f"the online form slower at the op level ({on1:.3f} ms) and the difference a few tens of µs per layer either way. "
             f"The paper's 0.375 ms for a 16 KiB all-reduce plus two element-wise ops holds costs the α-β model has no term "
             f"for (launch and synchronisation of a separate collective in the authors' PyTorch code).")
    R.append(f"- **1B, BOOST against Vanilla-TP**: at tp 1 there is no tensor parallelism; the paper's BOOST is 5 % slower "
             f"than its Vanilla-TP there, the model's BOOST is {100 * (left[('1B', 'vanilla-tp')] / left[('1B', 'boost')] - 1):.0f} % "
             f"faster because its grouped GEMMs fill the A100 better — the model prices the shapes the drivers issue.")
    R.append("")
    R.append("## Known limits of the model\n")
    R.append("- No overlap of communication with computation (this engine has none; neither has the paper's BTP code).")
    R.append("- GEMMs: a roofline with tile/wave quantization, one efficiency pinned by a published maximum-achievable-matmul "
             "measurement, a serial epilogue on the A100 (short-K penalty, derived from the profile's own peak and "
             "bandwidth) and split-K at the fastest slice count (an ideal library heuristic); one tile shape for every "
             "GEMM, no stream-K.")
    R.append("- Memory-bound ops at the datasheet bandwidth; no kernel-launch overhead on the GPUs (no sourced number).")
    R.append("- Attention at FlashAttention-2's published efficiencies (forward 73 %, backward 50 % on the A100).")
    R.append("- The inter-node link (Slingshot-11) at line rate; NCCL's ring and tree by their α-β tuning model.")
    R.append("")
    R.append("## Files\n")
    R.append("fig1.png/.csv, fig5.png/.csv (`size,arch,scheme,gpus,tp,pp,paper_s,model_s,measured_s`), fig6.png/.csv, "
             "fig7.png/.csv, tab2.csv, tab3.csv, rmsnorm.csv, ladder.csv, validation_cpu.md/.csv (when run), "
             "paper_numbers.yaml. Regenerate: `make reproduce` (HARDWARE=profile to use another profile).")
    with open(os.path.join(out, "REPORT.md"), "w") as fh:
        fh.write("\n".join(R) + "\n")
    print(f"reproduce: {m.n} simulations on {a.hardware}; wrote {a.out}/REPORT.md and the figures")
    print(f"  Fig. 5 ratios: {verdict5}; Fig. 1 split: {verdict1}")


if __name__ == "__main__":
    main()
