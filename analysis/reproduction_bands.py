"""reproduction_bands.py — the chosen constants of a GPU hardware profile and their plausible
ranges, for `make reproduce`'s uncertainty bands (analysis/reproduce.py).

A profile's numbers are of two kinds: those a specification or a published measurement gives
(peaks, bandwidths, the MAMF point, FlashAttention-2's forward efficiency) and those that had
to be chosen because no source pins them. Each chosen constant is listed here once, with the
value the profile uses, the alternatives a reader could defend, and why. reproduce.py prices
every figure once per alternative (one constant moved at a time, the others at the profile's
values) and reports each modelled number as the band [min, max] over those runs, with the
constant whose alternatives move it most. One at a time: the band is not a joint worst case
(two constants pushing the same way add up beyond it), and says so in REPORT.md. joint_bands
adds the constants' swings up (first order: every constant at its alternative that moves the
number down, then up, the effects summed) at no cost in simulations: the joint range where the
effects add, labelled as that in bands.csv and REPORT.md.
"""
import copy
import os

import yaml


def _gemm(doc):
    return doc["gemm"]["bf16"]


def _set_tile(m, n):
    def f(doc):
        _gemm(doc)["tile"] = [m, n]
    return f


def _set_gemm(key, value):
    def f(doc):
        _gemm(doc)[key] = value
    return f


def _set_root(key, value):
    def f(doc):
        doc[key] = value
    return f


def _scale_attention_backward(factor):
    def f(doc):
        doc["attention"]["bf16"]["backward"] = min(1.0, doc["attention"]["bf16"]["backward"] * factor)
    return f


def _scale_root(key, factor, cap=None):
    def f(doc):
        v = doc[key] * factor
        doc[key] = min(cap, v) if cap is not None else v
    return f


COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "p2p")


def _scale_link(link, factor):
    """Scales every bandwidth of links.<link> (the collectives' busbw tables and p2p); a profile
    without that link is left as it is."""
    def f(doc):
        for coll, c in doc["links"].get(link, {}).items():
            if coll not in COLLECTIVES:
                continue
            bw = c["busbw"]
            c["busbw"] = {k: v * factor for k, v in bw.items()} if isinstance(bw, dict) else bw * factor
    return f


def _drop_size_curve(doc):
    doc["links"].get("intra_node", {}).pop("size_curve", None)


def _mamf_table_pin(doc):
    """The A100 pin of the MAMF table (another machine's shape search) instead of Azure's cuBLASLt
    maximum; a profile pinned otherwise is left as it is."""
    g = _gemm(doc)
    if list(g["mamf_shape"]) == [16384, 16384, 16384] and abs(g["mamf"] - 256.5e12) < 1e9:
        g["mamf"], g["mamf_shape"] = 271.2e12, [1024, 10240, 5120]



def _set_sustained_clock(mhz):
    """The SM clock a step sustains (clock.sustained_mhz); a profile without a clock is left as it is."""
    def f(doc):
        if "clock" in doc:
            doc["clock"]["sustained_mhz"] = mhz
    return f


def _drop_clock(doc):
    doc.pop("clock", None)

# (key, what it is, the profile's choice, [(alternative, mutation)], why this range)
CONSTANTS = [
    ("gemm_tile", "GEMM thread-block tile (wave quantization)", "256×128",
     [("128×128", _set_tile(128, 128)), ("128×256", _set_tile(128, 256))],
     "cuBLAS picks among several CUTLASS-style tiles per shape; 128×128 and 128×256 are the other common A100 "
     "bf16 tiles [MMG]. The pin re-derives the core efficiency for each tile."),
    ("gemm_pin", "the GEMM pin (A100)", "Azure's cuBLASLt 256.5 TFLOP/s at 16384³",
     [("MAMF 271.2 at 1024×10240×5120", _mamf_table_pin)],
     "two published A100 measurements 6 % apart: the measured system's own cuBLASLt maximum (docs/performance-model.md "
     "§11, 4.) against the MAMF table's shape search on another machine"),
    ("epilogue", "GEMM epilogue", "serial (A100), overlapped (H100)",
     [("overlapped", _set_gemm("epilogue", "overlapped"))],
     "added after the model missed the paper's Fig. 6 (commit 6a14b4c); overlapped is the model before it"),
    ("split_k", "split-K rule", "on (fastest slice count)",
     [("off", _set_gemm("split_k", False))],
     "an ideal library heuristic (on) against none (off); cuBLAS's real heuristic lies between"),
    ("attention_backward", "attention backward efficiency", "A100 0.50, H100 0.339",
     [("×0.8", _scale_attention_backward(0.8)), ("×1.2", _scale_attention_backward(1.2))],
     "FlashAttention-2 gives 50–73 % of peak overall on the A100 and no separate backward maximum; Azure's forward + "
     "backward measurements agree within 5 % (§11, 5.)"),
    ("memory_efficiency", "HBM efficiency of memory-bound ops", "STREAM Triad / datasheet (A100 0.834, H100 0.887)",
     [("×0.95 (Copy)", _scale_root("memory_efficiency", 0.947, 1.0)), ("×1.03 (Dot)", _scale_root("memory_efficiency", 1.03, 1.0))],
     "the spread of the same measurement's STREAM kernels (A100: Copy 1.61, Triad 1.70, Dot 1.75 TB/s)"),
    ("op_overhead_s", "per-op overhead (kernel launch)", "0 s",
     [("5 µs", _set_root("op_overhead_s", 5e-6))],
     "0 = none; eager PyTorch launches cost a few µs per kernel when the GPU waits on the host"),
    ("launch_s", "the host's launch of one kernel or collective (the launch queue)", "5 µs",
     [("0 (no queue: the model before round 2)", _set_root("launch_s", 0)), ("20 µs", _set_root("launch_s", 20e-6))],
     "the range of the CPU-side launch in PyTorch training traces, 5-20 µs [HTA] (docs/performance-model.md §12, 1.): "
     "its lower end for this engine's C host, its upper end; 0 is the model before the queue was priced"),
    ("sustained_clock", "the SM clock a training step sustains (H100)", "1575 of 1980 MHz (H100; A100: none)",
     [("1500 MHz", _set_sustained_clock(1500)), ("none (boost: the model before round 4)", _drop_clock)],
     "a Hopper GPU past its power limit, 1980 -> 1575 MHz (DeepGEMM#120); 1500 MHz the sustainable target at 700 W "
     "(TileOPs#1587); none is the model before docs/performance-model.md §19, 1."),
    ("size_curve", "collective bandwidth by message size", "the measured 8-GPU curve",
     [("none (α-β)", _drop_size_curve)],
     "the measured curve (§11, 1.) against NCCL's α-β tuning model alone (the model before it)"),
    ("nvlink_busbw", "intra-node bus bandwidth (large messages)", "A100 230.8 GB/s (Perlmutter 2 GPUs: 77), H100 478.9 (NVLS)",
     [("×0.78", _scale_link("intra_node", 180 / 230.8)), ("×1.17", _scale_link("intra_node", 270 / 230.8))],
     "for Perlmutter a p4d (NVSwitch) measurement transferred to its all-to-all NVLink by equal line rate (300 GB/s): "
     "60–90 % of the line rate"),
    ("inter_node", "inter-node NIC bandwidth", "0.86 of line rate (HDR, Slingshot, Omni-Path), 47 GB/s NDR",
     [("×0.5", _scale_link("inter_node", 0.5)), ("line rate", _scale_link("inter_node", 1 / 0.86))],
     "the achieved fraction measured on 200 Gb/s InfiniBand (nccl#1048), transferred to Slingshot-11 and Omni-Path; "
     "half of it, or the line rate"),
]


def perturbed_profiles(hw_doc, tmp):
    """[(constant key, alternative label, path of the profile file)], one per alternative.
    Each file is <tmp>/<n>/<profile name>.yaml (a profile's name must equal its file stem)."""
    out = []
    for key, _, _, alts, _ in CONSTANTS:
        for label, mutate in alts:
            doc = copy.deepcopy(hw_doc)
            mutate(doc)
            d = os.path.join(tmp, f"band{len(out)}")
            os.makedirs(d, exist_ok=True)
            path = os.path.join(d, hw_doc["name"] + ".yaml")
            with open(path, "w") as fh:
                yaml.safe_dump(doc, fh, sort_keys=False)
            out.append((key, label, path))
    return out


def bands(base, runs):
    """base: {metric: value}; runs: [(constant key, label, {metric: value})].
    Returns {metric: (lo, hi, key of the constant whose alternatives move it most)}."""
    out = {}
    for name, v in base.items():
        if v is None:
            continue
        lo = hi = v
        swing = {}
        for key, _, vals in runs:
            w = vals.get(name)
            if w is None:
                continue
            lo, hi = min(lo, w), max(hi, w)
            a, b = swing.get(key, (v, v))
            swing[key] = (min(a, w), max(b, w))
        driver = max(swing, key=lambda k: (swing[k][1] - swing[k][0], k)) if swing else None
        if driver is not None and swing[driver][1] - swing[driver][0] <= 1e-12 * abs(v):
            driver = None
        out[name] = (lo, hi, driver)
    return out


def joint_bands(base, runs):
    """First-order joint bands: {metric: (lo, hi)} with lo = v + the sum over the constants of
    min(0, its lowest alternative - v), hi likewise with the highest (each constant's swing from
    the one-at-a-time runs, the swings added up as if the effects were additive)."""
    out = {}
    for name, v in base.items():
        if v is None:
            continue
        swing = {}
        for key, _, vals in runs:
            w = vals.get(name)
            if w is None:
                continue
            a, b = swing.get(key, (v, v))
            swing[key] = (min(a, w), max(b, w))
        out[name] = (v + sum(a - v for a, _ in swing.values()), v + sum(b - v for _, b in swing.values()))
    return out
