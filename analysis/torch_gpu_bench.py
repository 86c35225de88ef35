#!/usr/bin/env python3
"""torch_gpu_bench.py — PyTorch's training step of the boost-c model on one GPU, eager and
torch.compile, as the reference for make gpu-check's throughput table (docs/gpu.md).

    python3 analysis/torch_gpu_bench.py [--preset boost-1b] [--seq 2048] [--batch 4]
        [--linears dense,cola,svd] [--modes eager,compile] [--precision bf16|fp32]
        [--steps 8] [--warmup 3] [--budget SECONDS] [--attention] [--gemm]
        [--json OUT.json] [--device cuda]

The model mirrors analysis/torch_model.py (same shapes, parameters and maths as the
engine: RMSNorm, RoPE on non-interleaved halves, causal GQA attention, SwiGLU (g*u for
cola with only_lr_act), dense / CoLA (SiLU between the factors) / SVD linears, tied or
untied head, mean cross-entropy), written for speed the way a PyTorch user would:
parameters made on the device, attention through F.scaled_dot_product_attention (PyTorch's
fastest: flash / memory-efficient kernels), bf16 by autocast over fp32 parameters (the
engine's bf16: bf16 compute, fp32 master weights and AdamW state), fused AdamW, foreach
gradient clipping. One timed step = zero grads + forward + backward + clip + AdamW, timed
with CUDA events; ms/step is the median of --steps after --warmup. torch.compile compiles
each transformer block (regional compilation: one compile serves every layer) and the head.

MFU = tokens/s x FLOPs/token (torch_model.train_flops_per_token, the engine's definition)
/ the GPU's dense peak for the precision (datasheet, by device name; --peak-tflops
overrides). --gemm also measures a bf16 8192^3 matrix product (the practical ceiling).
--attention times causal attention forward+backward (B 2, H 32, s 4096, hd 64 unless
given) through SDPA, for the flash-attention comparison. --budget stops starting new
measurements once the wall time is spent (each skipped one is reported, never invented).
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch
import torch.nn.functional as F

from torch_model import PRESETS, ModelConfig, train_flops_per_token

# Dense (no sparsity) peak TFLOP/s by device name, from the vendors' datasheets (SXM parts).
PEAKS = [  # (name substring, bf16, tf32, fp32)
    ("H200", 989.4, 494.7, 66.9),
    ("H100 PCIe", 756.0, 378.0, 51.2),
    ("H100", 989.4, 494.7, 66.9),
    ("A100", 312.0, 156.0, 19.5),
    ("L40S", 362.1, 183.0, 91.6),
    ("A10", 125.0, 62.5, 31.2),
]


OOM = getattr(torch.cuda, "OutOfMemoryError", RuntimeError)


def peak_tflops(name, precision):
    for sub, bf16, tf32, fp32 in PEAKS:
        if sub in name:
            return {"bf16": bf16, "tf32": tf32, "fp32": fp32}[precision]
    return None


class Block(torch.nn.Module):
    """One transformer block with the engine's parameter names (flattened "/" -> "__")."""

    def __init__(self, cfg, dev):
        super().__init__()
        self.cfg = cfg
        d, kvd, ff = cfg.d_model, cfg.kv_dim, cfg.d_ff
        ra, rm = cfg.rank_attn, cfg.rank_mlp
        self.input_norm = torch.nn.Parameter(torch.ones(d, device=dev))
        self.post_attn_norm = torch.nn.Parameter(torch.ones(d, device=dev))
        self.shapes = {"q": (d, d, ra), "k": (d, kvd, ra), "v": (d, kvd, ra), "o": (d, d, ra),
                       "gate": (d, ff, rm), "up": (d, ff, rm), "down": (ff, d, rm)}
        for name, (din, dout, r) in self.shapes.items():
            if cfg.linear == "dense":
                setattr(self, name + "_W", torch.nn.Parameter(torch.randn(din, dout, device=dev) * 0.02))
            else:
                std = r ** -0.25 * (din + dout) ** -0.25
                setattr(self, name + "_A", torch.nn.Parameter(torch.randn(din, r, device=dev) * std))
                setattr(self, name + "_B", torch.nn.Parameter(torch.randn(r, dout, device=dev) * std))
        self.gate_silu = not (cfg.linear == "cola" and cfg.only_lr_act)

    def lin(self, x, name):
        if self.cfg.linear == "dense":
            return x @ getattr(self, name + "_W")
        h = x @ getattr(self, name + "_A")
        if self.cfg.linear == "cola":
            h = F.silu(h)
        return h @ getattr(self, name + "_B")

    def forward(self, x, cos, sin):
        c = self.cfg
        B, T, _ = x.shape
        H, Hkv, hd = c.n_heads, c.n_kv_heads, c.head_dim
        a = rmsnorm(x, self.input_norm, c.norm_eps)
        q = rope(self.lin(a, "q").view(B, T, H, hd), cos, sin).transpose(1, 2)
        k = rope(self.lin(a, "k").view(B, T, Hkv, hd), cos, sin).transpose(1, 2)
        v = self.lin(a, "v").view(B, T, Hkv, hd).transpose(1, 2)
        y = attention(q, k, v)
        x = x + self.lin(y.transpose(1, 2).reshape(B, T, H * hd), "o")
        m = rmsnorm(x, self.post_attn_norm, c.norm_eps)
        g, u = self.lin(m, "gate"), self.lin(m, "up")
        z = (F.silu(g) if self.gate_silu else g) * u
        return x + self.lin(z, "down")


def rmsnorm(x, gamma, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * gamma.to(x.dtype)


def rope(x, cos, sin):
    half = x.shape[-1] // 2
    x0, x1 = x[..., :half], x[..., half:]
    c, s = cos[None, :, None, :].to(x.dtype), sin[None, :, None, :].to(x.dtype)
    return torch.cat([x0 * c - x1 * s, x0 * s + x1 * c], dim=-1)


def attention(q, k, v):
    """q [B,H,T,hd], k, v [B,Hkv,T,hd] -> [B,H,T,hd], causal, scale 1/sqrt(hd)."""
    rep = q.shape[1] // k.shape[1]
    if hasattr(F, "scaled_dot_product_attention"):
        if rep > 1:
            try:
                return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            except TypeError:  # PyTorch < 2.5: no enable_gqa
                pass
            k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    # PyTorch < 2.0 (this repository's CPU machines): the plain causal softmax
    if rep > 1:
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    T = q.shape[2]
    s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.softmax(s.float(), dim=-1).to(q.dtype) @ v


class Model(torch.nn.Module):
    def __init__(self, cfg, dev):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = torch.nn.Parameter(torch.randn(cfg.vocab_size, cfg.d_model, device=dev) * cfg.embed_std)
        self.layers = torch.nn.ModuleList([Block(cfg, dev) for _ in range(cfg.n_layers)])
        self.final_norm = torch.nn.Parameter(torch.ones(cfg.d_model, device=dev))
        self.lm_head = None if cfg.tie_embeddings else torch.nn.Parameter(
            torch.randn(cfg.d_model, cfg.vocab_size, device=dev) * cfg.embed_std)
        half = cfg.head_dim // 2
        inv = torch.tensor([cfg.rope_theta ** (-2.0 * i / cfg.head_dim) for i in range(half)], dtype=torch.float64)
        ang = torch.arange(cfg.seq_len, dtype=torch.float64)[:, None] * inv[None, :]
        self.register_buffer("cos", ang.cos().float().to(dev), persistent=False)
        self.register_buffer("sin", ang.sin().float().to(dev), persistent=False)
        self.head = self._head

    def _head(self, x, targets):
        xf = rmsnorm(x, self.final_norm, self.cfg.norm_eps)
        w = self.embed_tokens.t() if self.lm_head is None else self.lm_head
        logits = xf @ w.to(xf.dtype)
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.view(-1))

    def loss(self, tokens, targets):
        T = tokens.shape[1]
        x = self.embed_tokens[tokens]
        cos, sin = self.cos[:T], self.sin[:T]
        for blk in self.layers:
            x = blk(x, cos, sin)
        return self.head(x, targets)

    def decay_groups(self, wd):
        dec = [p for p in self.parameters() if p.dim() == 2]
        nod = [p for p in self.parameters() if p.dim() != 2]
        return [{"params": dec, "weight_decay": wd}, {"params": nod, "weight_decay": 0.0}]


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


class Timer:
    """CUDA events on a GPU, the host clock (after a synchronise) elsewhere: milliseconds."""

    def __init__(self, dev):
        self.dev = dev

    def __enter__(self):
        if self.dev.type == "cuda":
            self.a, self.b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            self.a.record()
        else:
            self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if self.dev.type == "cuda":
            self.b.record()
            self.b.synchronize()
            self.ms = self.a.elapsed_time(self.b)
        else:
            self.ms = 1e3 * (time.perf_counter() - self.t0)


def bench_model(kind, mode, args, dev):
    shape = dict(PRESETS[args.preset])
    shape["seq_len"] = args.seq
    for k in ("n_layers", "d_model", "n_heads", "d_ff", "vocab_size"):
        v = getattr(args, k)
        if v:
            shape[k] = v
    if args.n_heads and shape["n_kv_heads"] > args.n_heads:
        shape["n_kv_heads"] = args.n_heads
    cfg = ModelConfig(linear=kind, **shape)
    torch.manual_seed(0)
    model = Model(cfg, dev)
    if mode == "compile":
        if not hasattr(torch, "compile"):
            return {"kind": kind, "mode": mode, "skipped": f"torch {torch.__version__} has no torch.compile"}
        for i, blk in enumerate(model.layers):
            model.layers[i] = torch.compile(blk)   # one compiled graph serves every block
        model.head = torch.compile(model._head)
    fused = dev.type == "cuda"
    try:
        opt = torch.optim.AdamW(model.decay_groups(0.01), lr=1e-4, betas=(0.9, 0.95), eps=1e-8, fused=fused)
    except TypeError:
        opt = torch.optim.AdamW(model.decay_groups(0.01), lr=1e-4, betas=(0.9, 0.95), eps=1e-8)
    n_params = sum(p.numel() for p in model.parameters())
    gen = torch.Generator(device="cpu").manual_seed(1234)
    autocast = args.precision == "bf16"
    times, losses = [], []
    t_first = time.perf_counter()
    first_ms = None
    for step in range(args.warmup + args.steps):
        x = torch.randint(0, cfg.vocab_size, (args.batch, args.seq), generator=gen).to(dev, non_blocking=True)
        y = torch.randint(0, cfg.vocab_size, (args.batch, args.seq), generator=gen).to(dev, non_blocking=True)
        sync(dev)
        with Timer(dev) as t:
            opt.zero_grad(set_to_none=True)
            with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=autocast):
                loss = model.loss(x, y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        if step == 0:
            first_ms = 1e3 * (time.perf_counter() - t_first)   # includes compilation
        losses.append(float(loss))
        if step >= args.warmup:
            times.append(t.ms)
    ms = statistics.median(times)
    tokens = args.batch * args.seq
    fpt = train_flops_per_token(cfg, args.seq)
    tflops = tokens / (ms / 1e3) * fpt / 1e12
    peak = args.peak_tflops or peak_tflops(torch.cuda.get_device_name(dev) if dev.type == "cuda" else "",
                                           args.precision if args.precision == "bf16" else "fp32")
    mem = torch.cuda.max_memory_allocated(dev) / 2**30 if dev.type == "cuda" else 0.0
    del model, opt
    if dev.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(dev)
    return {"kind": kind, "mode": mode, "params": n_params, "flops_per_token": fpt, "ms_per_step": ms,
            "ms_min": min(times), "ms_max": max(times), "tokens_per_s": tokens / (ms / 1e3),
            "tflops": tflops, "mfu": tflops / peak if peak else None, "first_step_ms": first_ms,
            "peak_mem_gib": mem, "first_loss": losses[0], "last_loss": losses[-1]}


def bench_attention(args, dev):
    """Causal attention forward+backward through SDPA at [B, H, T, hd] in bf16."""
    B, H, T, hd = args.attn_shape
    dt = torch.bfloat16 if args.precision == "bf16" else torch.float32
    q, k, v = (torch.randn(B, H, T, hd, device=dev, dtype=dt, requires_grad=True) for _ in range(3))
    do = torch.randn(B, H, T, hd, device=dev, dtype=dt)
    res = {}
    for what in ("forward", "forward+backward"):
        ts = []
        for i in range(3 + args.attn_reps):
            with Timer(dev) as t:
                o = attention(q, k, v)
                if what != "forward":
                    o.backward(do)
            if i >= 3:
                ts.append(t.ms)
        res[what] = statistics.median(ts)
    # causal: half the 4·B·H·T²·hd forward FLOPs; backward 2.5x forward (FlashAttention-2's count)
    f_fwd = 2.0 * B * H * T * T * hd
    return {"shape": {"B": B, "H": H, "T": T, "hd": hd}, "dtype": args.precision, "ms_forward": res["forward"],
            "ms_forward_backward": res["forward+backward"],
            "tflops_forward": f_fwd / (res["forward"] / 1e3) / 1e12,
            "tflops_forward_backward": 3.5 * f_fwd / (res["forward+backward"] / 1e3) / 1e12}


def bench_gemm(dev, n=8192):
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    ts = []
    for i in range(13):
        with Timer(dev) as t:
            a @ b
        if i >= 3:
            ts.append(t.ms)
    ms = statistics.median(ts)
    return {"n": n, "dtype": "bf16", "ms": ms, "tflops": 2.0 * n ** 3 / (ms / 1e3) / 1e12}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", default="boost-1b", choices=sorted(PRESETS))
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--n-layers", type=int, default=0, dest="n_layers", help="override the preset's (smaller shapes)")
    ap.add_argument("--d-model", type=int, default=0, dest="d_model")
    ap.add_argument("--n-heads", type=int, default=0, dest="n_heads")
    ap.add_argument("--d-ff", type=int, default=0, dest="d_ff")
    ap.add_argument("--vocab-size", type=int, default=0, dest="vocab_size")
    ap.add_argument("--linears", default="dense,cola,svd")
    ap.add_argument("--modes", default="eager,compile")
    ap.add_argument("--precision", default="bf16", choices=["bf16", "fp32"])
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--budget", type=float, default=0, help="seconds; 0 = no limit")
    ap.add_argument("--attention", action="store_true", help="time SDPA forward+backward")
    ap.add_argument("--attn-shape", type=int, nargs=4, default=[2, 32, 4096, 64], metavar=("B", "H", "T", "HD"))
    ap.add_argument("--attn-reps", type=int, default=10)
    ap.add_argument("--gemm", action="store_true", help="time one bf16 8192^3 matrix product")
    ap.add_argument("--peak-tflops", type=float, default=0)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--json")
    args = ap.parse_args()

    t_start = time.time()
    dev = torch.device(args.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print("torch_gpu_bench: no CUDA device visible to PyTorch", file=sys.stderr)
        return 3
    if dev.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False   # fp32 means fp32, as the engine's default
        torch.backends.cudnn.allow_tf32 = False
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    out = {"engine": "pytorch", "torch": torch.__version__, "device": name, "preset": args.preset,
           "batch": args.batch, "seq": args.seq, "precision": args.precision, "results": [], "skipped": []}
    if args.modes:
        print(f"PyTorch {torch.__version__} on {name} | {args.preset} | batch {args.batch} x seq {args.seq} | "
              f"{args.precision} ({'autocast over fp32 parameters' if args.precision == 'bf16' else 'TF32 off'}) | "
              f"median of {args.steps} steps after {args.warmup}", flush=True)
    else:
        print(f"PyTorch {torch.__version__} on {name}", flush=True)

    def over_budget():
        return args.budget and time.time() - t_start > args.budget

    if args.gemm:
        if over_budget():
            out["skipped"].append("gemm: budget spent")
        else:
            out["gemm"] = g = bench_gemm(dev)
            print(f"bf16 GEMM {g['n']}^3: {g['ms']:.2f} ms, {g['tflops']:.0f} TFLOP/s", flush=True)
    for mode in [m for m in args.modes.split(",") if m]:
        for kind in [k for k in args.linears.split(",") if k]:
            if over_budget():
                out["skipped"].append(f"{kind}/{mode}: budget of {args.budget:.0f} s spent")
                print(f"{kind:<6} {mode:<8} skipped: budget of {args.budget:.0f} s spent", flush=True)
                continue
            try:
                r = bench_model(kind, mode, args, dev)
            except OOM as e:
                r = {"kind": kind, "mode": mode, "skipped": f"out of memory: {str(e).splitlines()[0]}"}
                if dev.type == "cuda":
                    torch.cuda.empty_cache()
            if "skipped" in r:
                out["skipped"].append(f"{kind}/{mode}: {r['skipped']}")
                print(f"{kind:<6} {mode:<8} skipped: {r['skipped']}", flush=True)
                continue
            out["results"].append(r)
            mfu = f"{100 * r['mfu']:5.1f}%" if r["mfu"] else "  n/a"
            print(f"{kind:<6} {mode:<8} {r['ms_per_step']:9.2f} ms/step {r['tokens_per_s']:10.0f} tok/s "
                  f"{r['tflops']:7.1f} TFLOP/s MFU {mfu} | first step {r['first_step_ms'] / 1e3:.1f} s | "
                  f"peak {r['peak_mem_gib']:.1f} GiB | loss {r['first_loss']:.3f} -> {r['last_loss']:.3f}", flush=True)
    if args.attention:
        if over_budget():
            out["skipped"].append("attention: budget spent")
        else:
            a = out["attention"] = bench_attention(args, dev)
            s = a["shape"]
            impl = "SDPA" if hasattr(F, "scaled_dot_product_attention") else "plain softmax (no SDPA in this PyTorch)"
            print(f"{impl} causal B {s['B']} H {s['H']} s {s['T']} hd {s['hd']} {a['dtype']}: forward {a['ms_forward']:.3f} ms "
                  f"({a['tflops_forward']:.0f} TFLOP/s), forward+backward {a['ms_forward_backward']:.3f} ms "
                  f"({a['tflops_forward_backward']:.0f} TFLOP/s)", flush=True)
    out["wall_s"] = time.time() - t_start
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
