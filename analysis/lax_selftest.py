#!/usr/bin/python3
"""lax_selftest.py — checks of the LaX reference (analysis/torch_model.py, analysis/lax_ops.py)
and of the hand-derived formulas of docs/lax.md. Runs without the C engine, in float64.

Prints "PASS name" / "FAIL name: reason" per check (tests/t_lax_reference.sh runs it):

  kron_factors            the balanced factorisation r = r1·r2 (r1 = largest divisor <= sqrt r)
  kron_is_kronecker       the kron gate equals z @ torch.kron(G1, G2) (the row-major convention)
  ops_vs_autograd_*       lax_ops.py (hand-written forward/backward of one crossing, the
                          equations the C side implements) against autograd of torch_model.py,
                          every base x gate x norm, layer 0 and layer >= 1, r = 12, 7 (prime), 16
  model_fd_*              the whole LaX model (3 layers, GQA, rank_attn 12 != rank_mlp 7):
                          autograd against central finite differences for entries of the LaX
                          tensors of layers 1 and 2 and of A, B, embedding; every gate and
                          norm, both bases
  reduces_to_base_*       zero dense gate + no norm = the base model (cola / svd), logits equal;
                          a one-layer LaX model = its base
  param_count             docs/lax.md's parameter formula = the reference model's numel, for
                          shapes with rank_attn != rank_mlp, prime ranks, GQA, tied/untied, L = 1
  flops_per_token         docs/lax.md's FLOP formula = 3 x the matmul FLOPs the torch profiler
                          counts in one forward (dense, cola, svd, every lax gate)
  doc_worked_numbers      the worked numbers table of docs/lax.md (cola-60m, boost-7b) = formula
  verify_dump_lax_*       analysis/verify_dump.py on LaX step dumps written by the torch model:
                          passes; a corrupted gate gradient fails and is named

Usage: /usr/bin/python3 analysis/lax_selftest.py [--numbers]   (--numbers: print the table)
"""
import contextlib
import io
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402
import torch_model as tm  # noqa: E402
import lax_ops  # noqa: E402

torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
DOC = os.path.join(HERE, "..", "docs", "lax.md")
FAILS = 0


def report(name, ok, why=""):
    global FAILS
    if ok:
        print(f"PASS {name}")
    else:
        FAILS += 1
        print(f"FAIL {name}: {why}")


def relerr(a, b):
    if a is None or b is None:       # a missing gradient (e.g. a detached path) is a failure
        return float("inf")
    scale = max(float(b.abs().max()), 1e-300)
    return float((a - b).abs().max()) / scale


COMBOS = [(b, g, n) for b in tm.LAX_BASES for g in tm.LAX_GATES for n in tm.LAX_NORMS]
FD_COMBOS = [("cola", "kron", "layernorm"), ("svd", "dense", "layernorm"), ("cola", "identity", "none"),
             ("svd", "kron", "none")]


# ---- formulas of docs/lax.md (written from the document, not from torch_model) -------------
def balanced(r):
    best = (1, r)
    for a in range(1, r + 1):
        if r % a == 0 and a <= r // a and (r // a - a) < (best[1] - best[0]):
            best = (a, r // a)
    return best


def extra_params(gate, norm, r):
    """X(r): parameters of one crossing."""
    r1, r2 = balanced(r)
    g = {"identity": 0, "dense": r * r + r, "kron": r1 * r1 + r2 * r2}[gate]
    return g + (2 * r if norm == "layernorm" else 0)


def gate_macs(gate, r):
    """M(r): multiply-adds per token of one gate."""
    r1, r2 = balanced(r)
    return {"identity": 0, "dense": r * r, "kron": r * (r1 + r2)}[gate]


def lin_sum(c):
    """Σ over the 7 projections of r (d_in + d_out) (low-rank) or d_in d_out (dense)."""
    d, kv, f, ra, rm = c.d_model, c.kv_dim, c.d_ff, c.rank_attn, c.rank_mlp
    if c.linear == "dense":
        return 2 * d * d + 2 * d * kv + 3 * d * f
    return ra * (2 * d + 2 * d + 2 * (d + kv)) + rm * 3 * (d + f)


def param_formula(c):
    L, d, V = c.n_layers, c.d_model, c.vocab_size
    n = L * (lin_sum(c) + 2 * d) + d + V * d * (1 if c.tie_embeddings else 2)
    if c.linear == "lax":
        n += (L - 1) * (4 * extra_params(c.lax_gate, c.lax_norm, c.rank_attn)
                        + 3 * extra_params(c.lax_gate, c.lax_norm, c.rank_mlp))
    return n


def flops_formula(c, T=None):
    L, d, V = c.n_layers, c.d_model, c.vocab_size
    T = c.seq_len if T is None else T
    macs = L * lin_sum(c) + d * V
    if c.linear == "lax":
        macs += (L - 1) * (4 * gate_macs(c.lax_gate, c.rank_attn) + 3 * gate_macs(c.lax_gate, c.rank_mlp))
    return 6 * macs + 12 * L * T * d


# ---- checks ---------------------------------------------------------------------------------
def check_kron_factors():
    bad = [r for r in range(1, 300) if tm.kron_factors(r) != balanced(r)]
    want = {7: (1, 7), 11: (1, 11), 12: (3, 4), 16: (4, 4), 128: (8, 16), 256: (16, 16), 1024: (32, 32), 1280: (32, 40)}
    bad += [r for r, f in want.items() if tm.kron_factors(r) != f]
    report("kron_factors", not bad, f"mismatch at r = {bad[:5]}")


def tiny_model(base, gate, norm, ra=12, rm=7, L=3, tied=False, kv=2, seed=3):
    cfg = tm.ModelConfig(linear="lax", lax_base=base, lax_gate=gate, lax_norm=norm, vocab_size=37,
                         n_layers=L, d_model=16, n_heads=4, n_kv_heads=kv, d_ff=24, rank_attn=ra,
                         rank_mlp=rm, seq_len=6, tie_embeddings=tied, only_lr_act=True)
    m = tm.BoostModel(cfg, dtype=torch.float64, seed=seed)
    with torch.no_grad():   # move LayerNorm/bias away from their 1/0 init so they are exercised
        g = torch.Generator().manual_seed(seed + 100)
        for name, p in m.named_engine_parameters():
            if "lax_norm" in name or name.endswith("lax_gate/b"):
                p.add_(0.3 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    return m


def check_kron_is_kronecker():
    m = tiny_model("cola", "kron", "none", ra=12)
    pre = "model/layers/1/attn/q"
    z = torch.randn(5, 12, dtype=torch.float64)
    g1, g2 = m.param(pre + "/lax_gate/G1"), m.param(pre + "/lax_gate/G2")
    want = z @ torch.kron(g1, g2)
    got = m.lax_gate(z, pre)
    got_ops = lax_ops.gate_forward("kron", z, {"G1": g1.detach(), "G2": g2.detach()})
    e1, e2 = relerr(got.detach(), want.detach()), relerr(got_ops, want.detach())
    report("kron_is_kronecker", e1 < 1e-13 and e2 < 1e-13, f"torch_model {e1:.1e}, lax_ops {e2:.1e}")


def check_ops_vs_autograd():
    for base, gate, norm in COMBOS:
        worst, msgs = 0.0, []
        for r, key in ((12, "attn/q"), (7, "mlp/down"), (16, "attn/o")):
            ra, rm = (r, 7) if key.startswith("attn") else (12, r)
            m = tiny_model(base, gate, norm, ra=ra, rm=rm)
            pre = f"model/layers/1/{key}"
            w = {}
            for name, p in m.named_engine_parameters():
                if name.startswith(pre + "/lax_"):
                    w[name.rsplit("/", 1)[1]] = p.detach()
            gen = torch.Generator().manual_seed(r)
            N = 9
            P = torch.randn(N, r, generator=gen, dtype=torch.float64)
            Zp = torch.randn(N, r, generator=gen, dtype=torch.float64)
            dZ = torch.randn(N, r, generator=gen, dtype=torch.float64)
            for layer0 in (True, False):
                # autograd through torch_model's own code path
                Pa = P.clone().requires_grad_(True)
                Za = Zp.clone().requires_grad_(True)
                for p in m.parameters():
                    p.grad = None
                lat = {} if layer0 else {key: Za}
                h = Pa
                if not layer0:
                    h = m.lax_cross(h, lat[key], pre)
                Z_ref = torch.nn.functional.silu(h) if m.cfg.latent_act else h
                (Z_ref * dZ).sum().backward()
                # by hand
                Z, cache = lax_ops.cross_forward(P, None if layer0 else Zp, w, base, gate, norm, m.cfg.norm_eps)
                dP, dZp, grads = lax_ops.cross_backward(dZ, cache, w, base, gate, norm)
                errs = {"Z": relerr(Z, Z_ref.detach()), "dP": relerr(dP, Pa.grad)}
                if not layer0:
                    errs["dZp"] = relerr(dZp, Za.grad)
                    for k, gk in grads.items():
                        errs["d" + k] = relerr(gk, m.param(f"{pre}/lax_{'norm' if k in ('gamma', 'beta') else 'gate'}/{k}").grad)
                    want = {"identity": set(), "dense": {"W", "b"}, "kron": {"G1", "G2"}}[gate]
                    want |= {"gamma", "beta"} if norm == "layernorm" else set()
                    if set(grads) != want:
                        msgs.append(f"r={r}: grads {sorted(grads)} != {sorted(want)}")
                elif dZp is not None or grads:
                    msgs.append("layer 0 returned a crossing gradient")
                for k, e in errs.items():
                    worst = max(worst, e)
                    if e > 1e-11:
                        msgs.append(f"r={r} layer{'0' if layer0 else '1'} {k}: rel err {e:.1e}")
        report(f"ops_vs_autograd_{base}_{gate}_{norm}", not msgs, "; ".join(msgs[:4]))


def check_model_fd():
    gen = torch.Generator().manual_seed(11)
    x = torch.randint(0, 37, (2, 6), generator=gen)
    y = torch.randint(0, 37, (2, 6), generator=gen)
    # every gate and norm once, both bases (the op-level check above covers all 12 combinations)
    for base, gate, norm in FD_COMBOS:
        m = tiny_model(base, gate, norm, tied=(gate == "dense"))
        for p in m.parameters():
            p.grad = None
        m.loss(x, y).backward()
        names = [n for n, _ in m.named_engine_parameters()
                 if "/lax_" in n and ("/layers/1/attn/q/" in n or "/layers/2/mlp/down/" in n)]
        names += ["model/layers/0/attn/q/A", "model/layers/0/mlp/down/B", "model/layers/2/attn/k/B",
                  "model/embed_tokens"]
        msgs = []
        for name in names:
            p = m.param(name)
            flat = p.data.view(-1)
            if p.grad is None:                     # no autograd path to this tensor
                p.grad = torch.zeros_like(p)
            # the largest gradient entry (a wrong term shows up there) and one in the middle
            for idx in (int(p.grad.abs().argmax()), flat.numel() // 2):
                old = float(flat[idx])
                h = 1e-5 * max(1.0, abs(old))
                with torch.no_grad():
                    flat[idx] = old + h
                    lp = float(m.loss(x, y))
                    flat[idx] = old - h
                    lm = float(m.loss(x, y))
                    flat[idx] = old
                fd = (lp - lm) / (2 * h)
                ad = float(p.grad.view(-1)[idx])
                # central differences at h = 1e-5: truncation ~h² and rounding ~1e-16·|loss|/h,
                # together well below 1e-9 absolute; a wrong term is an O(1) relative error
                if abs(fd - ad) > 1e-9 + 1e-6 * abs(ad):
                    msgs.append(f"{name}[{idx}]: autograd {ad:.9e} vs fd {fd:.9e}")
        report(f"model_fd_{base}_{gate}_{norm}", not msgs, "; ".join(msgs[:3]))


def check_reduces_to_base():
    gen = torch.Generator().manual_seed(5)
    x = torch.randint(0, 37, (2, 6), generator=gen)
    for base in tm.LAX_BASES:
        m = tiny_model(base, "dense", "none")
        bcfg = tm.ModelConfig(**{**m.cfg.__dict__, "linear": base})
        b = tm.BoostModel(bcfg, dtype=torch.float64, seed=99)
        with torch.no_grad():
            for name, p in m.named_engine_parameters():
                if "/lax_gate/" in name:
                    p.zero_()
                else:
                    b.param(name).copy_(p)
        e = relerr(m(x).detach(), b(x).detach())
        # one layer: no predecessor anywhere, so LaX (default gate and norm) is its base
        m1 = tm.BoostModel(tm.ModelConfig(**{**m.cfg.__dict__, "n_layers": 1, "lax_gate": "kron",
                                              "lax_norm": "layernorm"}), dtype=torch.float64, seed=4)
        b1 = tm.BoostModel(tm.ModelConfig(**{**m1.cfg.__dict__, "linear": base}), dtype=torch.float64, seed=4)
        same_names = [n for n, _ in m1.named_engine_parameters()] == [n for n, _ in b1.named_engine_parameters()]
        with torch.no_grad():
            for name, p in m1.named_engine_parameters():
                b1.param(name).copy_(p)
        e1 = relerr(m1(x).detach(), b1(x).detach())
        report(f"reduces_to_base_{base}", e < 1e-13 and e1 < 1e-13 and same_names,
               f"zero gate: rel {e:.1e}; one layer: rel {e1:.1e}, same tensors {same_names}")


SHAPES = [  # (vocab, L, d, heads, kv, d_ff, ra, rm, tied)
    (512, 2, 64, 4, 2, 172, 16, 16, False),      # tiny
    (300, 3, 48, 3, 1, 70, 11, 7, False),        # tiny-odd: prime ranks, kron (1, r)
    (97, 4, 32, 4, 2, 48, 12, 20, True),         # rank_attn != rank_mlp, tied
    (97, 1, 32, 4, 4, 48, 8, 12, False),         # one layer: no crossing at all
    (128, 3, 40, 5, 5, 56, 10, 6, True),
]


def shape_cfg(s, **kw):
    V, L, d, h, kv, f, ra, rm, tied = s
    return tm.ModelConfig(vocab_size=V, n_layers=L, d_model=d, n_heads=h, n_kv_heads=kv, d_ff=f,
                          rank_attn=ra, rank_mlp=rm, seq_len=8, tie_embeddings=tied, **kw)


def all_kinds(combos=COMBOS):
    for k in ("dense", "cola", "svd"):
        yield {"linear": k}
    for base, gate, norm in combos:
        yield {"linear": "lax", "lax_base": base, "lax_gate": gate, "lax_norm": norm}


def check_param_count():
    msgs = []
    for s in SHAPES:
        for kw in all_kinds():
            c = shape_cfg(s, **kw)
            m = tm.BoostModel(c, dtype=torch.float64)
            n = sum(p.numel() for p in m.parameters())
            if n != param_formula(c):
                msgs.append(f"{kw} {s}: model {n} vs formula {param_formula(c)}")
    report("param_count", not msgs, "; ".join(msgs[:3]))


def profiled_forward_flops(m, x):
    from torch.profiler import profile, ProfilerActivity
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU], with_flops=True) as prof:
        m(x)
    return sum(e.flops for e in prof.key_averages() if e.key in ("aten::mm", "aten::bmm", "aten::addmm"))


def check_flops():
    msgs = []
    # the profiler costs ~0.1 s a session: every gate once (FLOPs do not depend on base or norm)
    # on the shapes with prime ranks, rank_attn != rank_mlp, and one layer
    for s in SHAPES[1:4]:
        for kw in all_kinds(FD_COMBOS):
            c = shape_cfg(s, **kw)
            m = tm.BoostModel(c, dtype=torch.float64)
            B, T = 2, c.seq_len
            x = torch.zeros(B, T, dtype=torch.long)
            counted = 3 * profiled_forward_flops(m, x) / (B * T)    # fwd 2·MACs, x3 for fwd+bwd
            want = flops_formula(c)
            if abs(counted - want) > 1e-9 * want or abs(tm.train_flops_per_token(c) - want) > 1e-9 * want:
                msgs.append(f"{kw} {s}: profiler {counted:.0f}, docs formula {want}, "
                            f"torch_model {tm.train_flops_per_token(c):.0f}")
    report("flops_per_token", not msgs, "; ".join(msgs[:3]))


def worked_numbers():
    """Rows of docs/lax.md's worked-numbers table: (preset, base, gate, norm, params, extra
    params, FLOPs/token, extra FLOPs/token)."""
    rows = []
    for preset in ("cola-60m", "boost-7b"):
        pc = tm.PRESETS[preset]
        assert pc["rank_attn"] == pc["d_model"] // 4 == pc["rank_mlp"]
        base_cfg = tm.ModelConfig(linear="cola", **pc)
        P0, F0 = param_formula(base_cfg), flops_formula(base_cfg)
        rows.append((preset, "cola", "-", "-", P0, 0, F0, 0))
        for gate in tm.LAX_GATES:
            for norm in tm.LAX_NORMS:
                c = tm.ModelConfig(linear="lax", lax_base="cola", lax_gate=gate, lax_norm=norm, **pc)
                P, F = param_formula(c), flops_formula(c)
                rows.append((preset, "lax", gate, norm, P, P - P0, F, F - F0))
    return rows


def fmt_row(r):
    preset, kind, gate, norm, P, dP, F, dF = r
    return f"| {preset} | {kind} | {gate} | {norm} | {P:,} | {dP:,} | {F:,} | {dF:,} |"


def check_doc_numbers():
    try:
        text = open(DOC).read()
    except OSError as e:
        report("doc_worked_numbers", False, f"cannot read {DOC}: {e}")
        return
    missing = [fmt_row(r) for r in worked_numbers() if fmt_row(r) not in text]
    report("doc_worked_numbers", not missing, f"{len(missing)} row(s) of docs/lax.md differ from the "
           f"formula, first expected: {missing[0] if missing else ''} (lax_selftest.py --numbers prints them)")


def write_dump(path, m, corrupt=None):
    import verify_dump
    gen = torch.Generator().manual_seed(2)
    x = torch.randint(0, m.cfg.vocab_size, (3, m.cfg.seq_len), generator=gen)
    y = torch.randint(0, m.cfg.vocab_size, (3, m.cfg.seq_len), generator=gen)
    verify_dump.write_reference_dump(path, m, x, y, corrupt)


def check_verify_dump():
    try:
        import h5py  # noqa: F401
        import verify_dump
    except ImportError as e:
        print(f"SKIP verify_dump_lax: {e}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        for base, gate, norm in (("cola", "kron", "layernorm"), ("svd", "dense", "layernorm"),
                                 ("cola", "identity", "none")):
            m = tiny_model(base, gate, norm, tied=(gate == "dense"))
            m = m.float()
            path = os.path.join(tmp, f"{base}_{gate}_{norm}.h5")
            write_dump(path, m)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                ok = verify_dump.verify(path, quiet=True)
            report(f"verify_dump_lax_{base}_{gate}_{norm}", ok, out.getvalue().strip().splitlines()[-1])
        bad = "model/layers/2/mlp/up/lax_gate/G2"
        m = tiny_model("cola", "kron", "layernorm").float()
        path = os.path.join(tmp, "bad.h5")
        write_dump(path, m, corrupt=bad)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            ok = verify_dump.verify(path, quiet=True)
        named = re.search(re.escape(bad) + r" .*FAIL", out.getvalue()) is not None
        report("verify_dump_lax_detects_corrupt_gate", not ok and named,
               f"verify returned {ok}, tensor named {named}")


def main():
    if "--numbers" in sys.argv:
        print("| preset | linear | lax_gate | lax_norm | parameters | LaX parameters | "
              "training FLOPs/token | LaX FLOPs/token |")
        print("|---|---|---|---|---:|---:|---:|---:|")
        for r in worked_numbers():
            print(fmt_row(r))
        return
    check_kron_factors()
    check_kron_is_kronecker()
    check_ops_vs_autograd()
    check_model_fd()
    check_reduces_to_base()
    check_param_count()
    check_flops()
    check_doc_numbers()
    check_verify_dump()
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
