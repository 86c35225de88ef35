#!/usr/bin/python3
"""calibrate_gpu.py — a GPU hardware profile from the per-op times of `make gpu-check`.

    /usr/bin/python3 analysis/calibrate_gpu.py GPU-OPS.json --base h200-1 --name h200-1-measured
        [--out experiments/hardware/NAME.yaml] [--precision bf16]

GPU-OPS.json is what `build/test_backend_ops --json FILE` writes (make gpu-check keeps it as
DIR/gpu-ops.json; docs/gpu.md): {"device": ..., "reps": R, "tf32": 0|1, "records": [{"op",
"case", "size", "dtype", "ms", "flops", "bytes", "M", "N", "K", "count"}, ...]}, each record one
op timed with CUDA events, its FLOPs and bytes as the op's OpInfo counts them — exactly the
counts build/simulate prices. A file that says {"skipped": "..."} (no GPU) is refused.

The new profile is the --base profile (links, peaks, memory size, tile: what per-op timings on
one GPU cannot measure; its sources stay cited in the base file) with the measured parts
replaced, each derived as the model uses it (docs/performance-model.md §1):
  gemm.<p>.mamf, mamf_shape   the fastest GEMM record of precision p (FLOP/s, its M, N, K): the
                              roofline's efficiency is then pinned by this measurement, as the
                              shipped profiles pin it by a published one (the base's epilogue
                              and split_k are kept)
  attention.<p>               attention_forward / attention_backward FLOP/s over peak_flops.<p>
                              (the largest record of each)
  memory_efficiency           median of the memory-bound records' bytes / s over the base's
                              memory_bandwidth (records of the largest size)
  op_overhead_s               median over the memory-bound records of the smallest size of
                              (time − bytes / achieved bandwidth), at least 0
The profile is written, then loaded by build/simulate (`--gemm` on its mamf shape must give back
the measured rate), and the table of what was measured is printed.
"""
import argparse
import datetime
import json
import os
import statistics
import shutil
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import yaml12  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GEMM_OPS = {"gemm", "gemm_group"}
ATTENTION_OPS = {"attention_forward", "attention_backward"}


def die(msg):
    sys.stderr.write(f"calibrate_gpu: {msg}\n")
    sys.exit(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ops_json")
    ap.add_argument("--base", required=True, help="the profile whose links, peaks and tile are kept (a name or a path)")
    ap.add_argument("--name", required=True, help="the new profile's name (= its file stem)")
    ap.add_argument("--out", help="default experiments/hardware/NAME.yaml")
    ap.add_argument("--precision", default="bf16", choices=["bf16", "fp32", "tf32"])
    a = ap.parse_args()
    try:
        with open(a.ops_json) as fh:
            doc = json.load(fh)
    except (OSError, ValueError) as e:
        die(f"{a.ops_json}: cannot read a JSON document: {e}")
    if "skipped" in doc:
        die(f"{a.ops_json}: the GPU timing was skipped ({doc['skipped']}): nothing to calibrate from")
    recs = doc.get("records")
    if not isinstance(recs, list) or not recs:
        die(f"{a.ops_json}: no 'records' list (expected the output of build/test_backend_ops --json)")
    need = ["op", "size", "dtype", "ms", "flops", "bytes", "M", "N", "K", "count"]
    for i, r in enumerate(recs):
        miss = [k for k in need if k not in r]
        if miss:
            die(f"{a.ops_json}: record {i} lacks {', '.join(miss)}")
        if not (isinstance(r["ms"], (int, float)) and r["ms"] > 0):
            die(f"{a.ops_json}: record {i} ({r['op']}): ms must be a positive number, got {r['ms']!r}")
    dtype = "fp32" if a.precision == "tf32" else a.precision
    if a.precision == "tf32" and not doc.get("tf32"):
        die(f"{a.ops_json}: --precision tf32 needs a timing run with --tf32")
    mine = [r for r in recs if r["dtype"] == dtype]
    if not mine:
        die(f"{a.ops_json}: no {dtype} records")
    base_path = a.base if ("/" in a.base or a.base.endswith(".yaml")) else os.path.join(ROOT, "experiments/hardware", a.base + ".yaml")
    try:
        with open(base_path) as fh:
            prof = yaml12.load(fh)
    except OSError as e:
        die(f"--base {a.base}: {e}")
    p = a.precision
    peak = prof.get("peak_flops", {}).get(p)
    if not peak:
        die(f"{base_path}: no peak_flops.{p}")
    g = prof.get("gemm", {}).get(p)
    if not g or g.get("model") != "roofline":
        die(f"{base_path}: gemm.{p} must be a roofline model (its tile is kept)")

    # memory-bound ops: achieved bandwidth (largest size) and the fixed cost per op (smallest)
    mem = [r for r in mine if r["op"] not in GEMM_OPS | ATTENTION_OPS and r["bytes"] > 0]
    bw_eff = overhead = None
    if mem:
        biggest = max(r["bytes"] for r in mem)
        big = [r for r in mem if r["size"] == next(x["size"] for x in mem if x["bytes"] == biggest)]
        bws = [r["bytes"] / (r["ms"] * 1e-3) for r in big]
        bw = statistics.median(bws)
        bw_eff = min(1.0, bw / prof["memory_bandwidth"])
        prof["memory_efficiency"] = float(f"{bw_eff:.6g}")
        small_size = min(mem, key=lambda r: r["bytes"])["size"]
        small = [r for r in mem if r["size"] == small_size]
        overhead = max(0.0, statistics.median(r["ms"] * 1e-3 - r["bytes"] / bw for r in small))
        prof["op_overhead_s"] = float(f"{overhead:.6g}")
    # GEMM: the fastest record pins the roofline's efficiency
    gemms = [r for r in mine if r["op"] in GEMM_OPS and r["flops"] > 0 and r["count"] <= 1]
    if not gemms:
        die(f"{a.ops_json}: no single {dtype} GEMM record")
    rate = lambda r: r["flops"] / (r["ms"] * 1e-3)

    def core_seconds(r):
        """The model prices a GEMM or attention as its roofline time plus op_overhead_s
        (src/sim/op_time.c), and a CUDA-event time holds that launch cost: rates are pinned on
        the rest, so that the profile gives the measured time back."""
        t = r["ms"] * 1e-3 - prof.get("op_overhead_s", 0.0)
        if not t > 0:
            die(f"{a.ops_json}: {r['op']} ({r['ms']} ms) is not longer than the op overhead {prof['op_overhead_s']} s")
        return t

    best = max(gemms, key=rate)
    g["mamf"] = float(f"{best['flops'] / core_seconds(best):.6g}")
    g["mamf_shape"] = [int(best["M"]), int(best["N"]), int(best["K"])]
    # attention: the largest record of each direction
    att = prof.setdefault("attention", {}).setdefault(p, {})
    got_att = {}
    for op, key in (("attention_forward", "forward"), ("attention_backward", "backward")):
        rs = [r for r in mine if r["op"] == op and r["flops"] > 0]
        if rs:
            r = max(rs, key=lambda r: r["flops"])
            att[key] = float(f"{min(1.0, r['flops'] / core_seconds(r) / peak):.6g}")
            got_att[key] = (r, rate(r))
    prof["name"] = a.name
    prof["device"] = str(doc.get("device", prof.get("device", "?")))
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    prof["description"] = f"{prof['device']}: {a.base} with GEMM, attention and memory-bound op rates measured by make gpu-check ({now})"
    out = a.out or os.path.join(ROOT, "experiments/hardware", a.name + ".yaml")
    if os.path.splitext(os.path.basename(out))[0] != a.name:
        die(f"--out {out}: a profile's file stem must be its name ({a.name})")
    header = [f"{a.name}: written by analysis/calibrate_gpu.py on {now} from {os.path.abspath(a.ops_json)}",
              f"(build/test_backend_ops --json: per-op CUDA-event times, {doc.get('reps', '?')} repetitions, device {prof['device']}).",
              f"Measured here: gemm.{p}.mamf/mamf_shape (the fastest GEMM record), attention.{p} (attention records over",
              f"peak_flops.{p}), memory_efficiency (memory-bound records, largest size), op_overhead_s (smallest size).",
              f"Everything else is the base profile {os.path.relpath(base_path, ROOT)}, whose comments cite its sources."]
    tmpdir = tempfile.mkdtemp(prefix="calibrate_gpu.")
    tmp = os.path.join(tmpdir, a.name + ".yaml")   # a profile loads only under its own stem
    with open(tmp, "w") as fh:
        fh.write("".join(f"# {h}\n" for h in header))
        yaml.safe_dump(prof, fh, sort_keys=False, default_flow_style=None, width=120)
    # loading it back through the engine's own validation; the curve must give the measurement back
    M, N, K = g["mamf_shape"]
    chk = subprocess.run([os.path.join(ROOT, "build/simulate"), "--hardware", tmp, "--gemm", f"{M},{N},{K}", "--precision", p],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if chk.returncode:
        os.unlink(tmp)
        die(f"the written profile does not load:\n{chk.stdout}")
    back = json.loads(chk.stdout)["flop_per_s"]
    if abs(back / rate(best) - 1) > 1e-3:
        os.unlink(tmp)
        die(f"the profile gives {back:.4g} FLOP/s at its mamf shape, measured {rate(best):.4g}")
    shutil.move(tmp, out)
    os.rmdir(tmpdir)
    print(f"calibrate_gpu: {len(mine)} {dtype} records of {prof['device']} -> {os.path.relpath(out, ROOT)}")
    print(f"  gemm.{p}: mamf {g['mamf'] / 1e12:.1f} TFLOP/s at {M}x{N}x{K} ({100 * g['mamf'] / peak:.1f}% of the base's peak "
          f"{peak / 1e12:.0f})")
    for key, (r, rt) in got_att.items():
        print(f"  attention.{p}.{key}: {rt / 1e12:.1f} TFLOP/s = {att[key]:.3f} of peak ({r['case'] if 'case' in r else r['op']})")
    if bw_eff is not None:
        print(f"  memory_efficiency {bw_eff:.3f} (of {prof['memory_bandwidth'] / 1e12:.2f} TB/s); op_overhead_s {overhead * 1e6:.2f} us")
    print(f"  simulate with it: build/simulate experiments/X.yaml --hardware {a.name} ...")


if __name__ == "__main__":
    main()
