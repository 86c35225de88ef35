#!/usr/bin/python3
"""torch_bench.py — the same training step as build/bench, in PyTorch (CPU, float32).

    /usr/bin/python3 analysis/torch_bench.py [--preset cola-60m] [--seq 256] [--batch 4]
        [--steps 6] [--warmup 2] [--linears dense,cola,svd] [--threads 2]
        [--attention auto|explicit|sdpa] [--compile] [--json OUT.json] [--compare BENCH.json]

For each linear kind: the model of analysis/torch_model.py (same shapes, same maths as the
engine), random tokens, and one timed step = zero grads + forward + backward (mean
cross-entropy) + global grad-norm clip + AdamW (decay on 2-D tensors only) — what
build/bench times. The first --warmup steps are dropped; ms/step is the mean of the rest.
--compare reads build/bench's --json output and prints both engines side by side.

PyTorch's best settings, as far as the installed version has them: --attention auto (the
default) takes F.scaled_dot_product_attention (PyTorch >= 2.0; its CPU flash-attention kernel)
and falls back to the explicit softmax of torch_model.py (PyTorch 1.x); AdamW runs fused when
the version offers it on the CPU (else foreach); --compile wraps forward + loss in
torch.compile (inductor's C++ code generation; compiling happens in the warm-up steps, which
are not timed). Whatever was used is printed and written to the JSON.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch

from torch_model import PRESETS, BoostModel, ModelConfig, train_flops_per_token


def blas_info():
    """The BLAS PyTorch was built with (MKL in the PyPI wheels, the system libblas in Debian's)."""
    cfg = torch.__config__.show()
    i = cfg.find("BLAS_INFO=")
    if i < 0:
        return "?"
    name = cfg[i + len("BLAS_INFO="):].split(",")[0]
    return "the system libblas.so.3" if name == "generic" else name


def make_adamw(model, args):
    """AdamW with the fastest implementation this PyTorch offers on the CPU: fused, else foreach."""
    kw = dict(lr=1e-4, betas=(0.9, 0.999), eps=1e-8)
    if args.adamw == "fused":
        return torch.optim.AdamW(model.decay_groups(0.01), fused=True, **kw)
    if args.adamw == "foreach":
        return torch.optim.AdamW(model.decay_groups(0.01), foreach=True, **kw)
    return torch.optim.AdamW(model.decay_groups(0.01), **kw)


def adamw_mode():
    """'fused' where AdamW(fused=True) runs on CPU tensors, 'foreach' where that exists, else 'default'."""
    p = torch.nn.Parameter(torch.zeros(2))
    p.grad = torch.zeros(2)
    for mode in ("fused", "foreach"):
        try:
            torch.optim.AdamW([p], lr=1e-3, **{mode: True}).step()
            return mode
        except (TypeError, RuntimeError, ValueError):
            continue
    return "default"


def bench_kind(kind, args):
    shape = dict(PRESETS[args.preset])
    shape["seq_len"] = args.seq  # as build/bench: FLOPs per token use this T
    if args.only_lr_act is not None:
        shape["only_lr_act"] = args.only_lr_act
    if args.tied is not None:
        shape["tie_embeddings"] = args.tied
    cfg = ModelConfig(linear=kind, **shape)
    model = BoostModel(cfg, dtype=torch.float32, seed=42)
    model.sdpa = args.sdpa
    opt = make_adamw(model, args)
    loss_fn = torch.compile(model.loss) if args.compile else model.loss
    gen = torch.Generator().manual_seed(1234)
    n_params = sum(p.numel() for p in model.parameters())
    times, losses = [], []
    for step in range(args.warmup + args.steps):
        x = torch.randint(0, cfg.vocab_size, (args.batch, args.seq), generator=gen)
        y = torch.randint(0, cfg.vocab_size, (args.batch, args.seq), generator=gen)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        loss = loss_fn(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        dt = time.perf_counter() - t0
        losses.append(loss.item())
        if step >= args.warmup:
            times.append(dt)
    ms = 1e3 * sum(times) / len(times)
    tokens = args.batch * args.seq
    return {"kind": kind, "params": n_params, "flops_per_token": train_flops_per_token(cfg, args.seq),
            "ms_per_step": ms, "tokens_per_s": tokens / (ms / 1e3), "first_loss": losses[0],
            "last_loss": losses[-1]}


def main():
    ap = argparse.ArgumentParser(description="PyTorch reference timing of the boost-c training step")
    ap.add_argument("--preset", default="cola-60m", choices=sorted(PRESETS))
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--linears", default="dense,cola,svd")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only-lr-act", type=int, default=None, dest="only_lr_act", help="override the preset's")
    ap.add_argument("--tied", type=int, default=None, help="override the preset's tie_embeddings")
    ap.add_argument("--attention", choices=("auto", "explicit", "sdpa"), default="auto",
                    help="auto: scaled_dot_product_attention where PyTorch has it (>= 2.0), else the explicit softmax")
    ap.add_argument("--compile", action="store_true", help="torch.compile forward + loss (PyTorch >= 2.0)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--compare", help="build/bench --json output to print side by side")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    has_sdpa = hasattr(torch.nn.functional, "scaled_dot_product_attention")
    if args.attention == "sdpa" and not has_sdpa:
        sys.exit(f"torch_bench: --attention sdpa needs PyTorch >= 2.0 (this is {torch.__version__})")
    if args.compile and not hasattr(torch, "compile"):
        sys.exit(f"torch_bench: --compile needs PyTorch >= 2.0 (this is {torch.__version__})")
    args.sdpa = args.attention == "sdpa" or (args.attention == "auto" and has_sdpa)
    args.adamw = adamw_mode()
    settings = {"attention": "sdpa" if args.sdpa else "explicit softmax", "adamw": args.adamw,
                "compile": bool(args.compile)}

    print(f"PyTorch {torch.__version__} | {torch.get_num_threads()} threads | preset {args.preset} "
          f"| batch {args.batch} x seq {args.seq} | {args.steps} timed steps after {args.warmup} warm-up")
    print(f"threading | OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')} | "
          f"torch intra-op threads {torch.get_num_threads()} (OpenMP) | BLAS: {blas_info()}")
    print(f"settings | attention: {settings['attention']} | AdamW: {settings['adamw']} | "
          f"torch.compile: {'yes' if args.compile else 'no'}")
    res = []
    for kind in args.linears.split(","):
        r = bench_kind(kind.strip(), args)
        res.append(r)
    dense = next((r for r in res if r["kind"] == "dense"), None)
    print(f"{'kind':<6} {'params':>9} {'GFLOP/tok':>10} {'ms/step':>9} {'tokens/s':>9} {'speed-up':>9}")
    for r in res:
        su = f"{dense['ms_per_step'] / r['ms_per_step']:.2f}x" if dense else "-"
        print(f"{r['kind']:<6} {r['params'] / 1e6:8.2f}M {r['flops_per_token'] / 1e9:10.4f} "
              f"{r['ms_per_step']:9.1f} {r['tokens_per_s']:9.0f} {su:>9}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"engine": "pytorch", "torch": torch.__version__, "threads": args.threads, "settings": settings,
                       "blas": blas_info(),
                       "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""),
                       "preset": args.preset, "batch": args.batch, "seq": args.seq, "results": res}, f, indent=1)

    if args.compare:
        with open(args.compare) as f:
            cb = json.load(f)
        c = {r["kind"]: r for r in cb["results"]}
        print()
        print(f"side by side (tokens/s, {args.preset}, batch {args.batch} x {args.seq}, {args.threads} threads)")
        print(f"{'kind':<6} {'boost-c':>9} {'PyTorch':>9} {'boost-c/PyTorch':>16} {'boost-c MFU':>12}")
        for r in res:
            cr = c.get(r["kind"])
            if not cr:
                continue
            print(f"{r['kind']:<6} {cr['tokens_per_s']:9.0f} {r['tokens_per_s']:9.0f} "
                  f"{cr['tokens_per_s'] / r['tokens_per_s']:15.2f}x {100 * cr['mfu']:11.1f}%")


if __name__ == "__main__":
    main()
