#!/usr/bin/env python3
"""read_dump.py — read a boost-c step dump (HDF5) with h5py, check it against the
documented layout (docs/checkpoint-format.md, "Step dumps") and print a summary.

    /usr/bin/python3 analysis/read_dump.py DUMP.h5 [--quiet]

Exit 0 if the file follows the contract, 1 (listing every violation) otherwise.
Checks: root attributes; every /model tensor float32 with the shapes implied by the
embedding and the linears (dense W [din,dout] or low-rank A [din,r] + B [r,dout]; LaX: the
crossing's tensors of docs/lax.md §4 in layers >= 1, from the config's lax_gate/lax_norm);
/grads mirrors /model; /batch int32 [rows,T] with token ids < V; /loss a finite float64
scalar; /activations (if present) shapes, layer-0 x == embed[tokens of the last
micro-batch] exactly, and bottleneck h == a @ A (z == SiLU(h) for CoLA). LaX: in layer 0 the
same; in layers >= 1 h is U = a @ A + g(z_prev) (z_prev: the same projection's z in the layer
before) and z == σ(LN(h)) (σ = SiLU on the cola base; no LN with lax_norm none).
"""
import json
import sys

import h5py
import numpy as np

PROJ = {"attn": ["q", "k", "v", "o"], "mlp": ["gate", "up", "down"]}
BOTTLENECK_INPUT = {"q": "a", "k": "a", "v": "a", "o": "y", "gate": "m", "up": "m", "down": "gu"}


def kron_factors(r):
    """(r1, r2), r1 = the largest divisor of r not above sqrt(r) (docs/lax.md §3)."""
    r1 = max(k for k in range(1, int(np.sqrt(r)) + 1) if r % k == 0)
    return r1, r // r1


def lax_tensors(m, r):
    """{name: shape} of one crossing of width r (docs/lax.md §4), m = the config's model section."""
    t = {}
    if m.get("lax_gate", "kron") == "dense":
        t.update({"lax_gate/W": (r, r), "lax_gate/b": (r,)})
    elif m.get("lax_gate", "kron") == "kron":
        r1, r2 = kron_factors(r)
        t.update({"lax_gate/G1": (r1, r1), "lax_gate/G2": (r2, r2)})
    if m.get("lax_norm", "layernorm") == "layernorm":
        t.update({"lax_norm/gamma": (r,), "lax_norm/beta": (r,)})
    return t


def lax_gate(m, f, base, z):
    """g(z) with the tensors under /model/<base>/ (float64)."""
    g = m.get("lax_gate", "kron")
    if g == "identity":
        return z
    if g == "dense":
        return z @ f[f"model/{base}/lax_gate/W"][()].astype(np.float64) + f[f"model/{base}/lax_gate/b"][()]
    G1, G2 = (f[f"model/{base}/lax_gate/{k}"][()].astype(np.float64) for k in ("G1", "G2"))
    zz = z.reshape(z.shape[0], G1.shape[0], G2.shape[0])
    return np.einsum("ik,nij,jl->nkl", G1, zz, G2).reshape(z.shape)


def lax_latent(m, f, base, u, cross):
    """z = σ(LN(u)) (no LN in layer 0 or with lax_norm none; σ = SiLU on the cola base)."""
    if cross and m.get("lax_norm", "layernorm") == "layernorm":
        mu = u.mean(1, keepdims=True)
        var = ((u - mu) ** 2).mean(1, keepdims=True)
        u = (u - mu) / np.sqrt(var + float(m.get("norm_eps", 1e-6)))
        u = u * f[f"model/{base}/lax_norm/gamma"][()] + f[f"model/{base}/lax_norm/beta"][()]
    return u / (1 + np.exp(-u)) if m.get("lax_base", "cola") == "cola" else u


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    path, quiet = argv[1], "--quiet" in argv[2:]
    errors = []

    def err(msg):
        errors.append(msg)

    with h5py.File(path, "r") as f:
        a = f.attrs
        if a.get("format") != "boost-c step dump":
            err(f"root attribute format = {a.get('format')!r}, expected 'boost-c step dump'")
        if int(a.get("format_version", -1)) != 1:
            err(f"format_version = {a.get('format_version')!r}, expected 1")
        if "step" not in a or not np.issubdtype(np.asarray(a["step"]).dtype, np.integer):
            err("root attribute step (integer) missing")
        cfg = a.get("config", "")
        mcfg = {}
        try:
            conf = json.loads(cfg) if cfg else {}
            mcfg = conf.get("model", conf) if isinstance(conf, dict) else {}
        except ValueError as e:
            err(f"root attribute config is not JSON: {e}")
        lax = mcfg.get("linear") == "lax"

        def ds(name, shape, dtype):
            if name not in f or not isinstance(f[name], h5py.Dataset):
                err(f"{name} missing")
                return None
            d = f[name]
            if tuple(d.shape) != tuple(shape):
                err(f"{name} has shape {list(d.shape)}, expected {list(shape)}")
            if d.dtype != np.dtype(dtype):
                err(f"{name} has dtype {d.dtype}, expected {np.dtype(dtype)}")
            return d[()]

        # ---- shapes from the model itself ----------------------------------------
        if "model/embed_tokens" not in f:
            err("/model/embed_tokens missing")
            return report(path, errors, quiet, {})
        V, d = f["model/embed_tokens"].shape
        layers = sorted(int(k) for k in f["model/layers"].keys())
        if layers != list(range(len(layers))):
            err(f"/model/layers has groups {layers}, expected 0..{len(layers) - 1}")
        L = len(layers)
        q0 = f["model/layers/0/attn/q"]
        lowrank = "A" in q0
        kvd = f["model/layers/0/attn/k/" + ("B" if lowrank else "W")].shape[1]
        ff = f["model/layers/0/mlp/up/" + ("B" if lowrank else "W")].shape[1]
        dims = {"q": (d, d), "k": (d, kvd), "v": (d, kvd), "o": (d, d), "gate": (d, ff), "up": (d, ff), "down": (ff, d)}
        ranks = {}
        expected = {"embed_tokens": (V, d), "final_norm": (d,)}
        if "lm_head" in f["model"]:
            expected["lm_head"] = (d, V)
        for l in range(L):
            expected[f"layers/{l}/input_norm"] = (d,)
            expected[f"layers/{l}/post_attn_norm"] = (d,)
            for grp, projs in PROJ.items():
                for p in projs:
                    din, dout = dims[p]
                    base = f"layers/{l}/{grp}/{p}"
                    if lowrank:
                        r = f[f"model/{base}/A"].shape[1] if f"model/{base}/A" in f else -1
                        ranks[p] = r
                        expected[base + "/A"] = (din, r)
                        expected[base + "/B"] = (r, dout)
                        if lax and l >= 1:
                            for name, shape in lax_tensors(mcfg, r).items():
                                expected[f"{base}/{name}"] = shape
                    else:
                        expected[base + "/W"] = (din, dout)
        for fam in ("model", "grads"):
            present = set()
            f[fam].visititems(lambda n, o: present.add(n) if isinstance(o, h5py.Dataset) else None)
            for extra in sorted(present - set(expected)):
                err(f"/{fam}/{extra} is not a documented tensor")
            for name, shape in expected.items():
                ds(f"{fam}/{name}", shape, np.float32)
        g = f["grads/embed_tokens"][()]
        if not np.isfinite(g).all() or not np.any(g):
            err("/grads/embed_tokens is all zero or not finite")

        inputs = ds("batch/inputs", f["batch/inputs"].shape, np.int32) if "batch/inputs" in f else None
        rows, T = f["batch/inputs"].shape if inputs is not None else (0, 0)
        targets = ds("batch/targets", (rows, T), np.int32)
        for nm, arr in (("inputs", inputs), ("targets", targets)):
            if arr is not None and (arr.min() < 0 or arr.max() >= V):
                err(f"/batch/{nm} has token ids outside [0,{V})")
        loss = ds("loss", (), np.float64)
        if loss is not None and not np.isfinite(loss):
            err(f"/loss is {loss}")

        kind = "dense" if not lowrank else ("lax" if lax else "low-rank")
        summary = {"V": V, "d": d, "L": L, "kv_dim": kvd, "d_ff": ff, "linear": kind,
                   "ranks": ranks, "tied": "lm_head" not in f["model"], "batch": [rows, T],
                   "loss": float(loss) if loss is not None else None, "step": int(a.get("step", -1))}

        # ---- activations ---------------------------------------------------------
        if "activations" in f:
            act = f["activations"]
            B, Ta, first = int(act.attrs["B"]), int(act.attrs["T"]), int(act.attrs["first_row"])
            N = B * Ta
            if Ta != T or first + B != rows:
                err(f"/activations attrs B={B} T={Ta} first_row={first} do not match /batch [{rows},{T}]")
            cola = lowrank and not lax and "activations/layers/0/q_z" in f
            shapes = {"x": d, "a": d, "q": d, "k": kvd, "v": kvd, "y": d, "x_mid": d, "m": d, "g": ff, "u": ff, "gu": ff}
            for l in range(L):
                base = f"activations/layers/{l}"
                for n, cols in shapes.items():
                    ds(f"{base}/{n}", (N, cols), np.float32)
                if lowrank:
                    for p in dims:
                        h = ds(f"{base}/{p}_h", (N, ranks[p]), np.float32)
                        x_in = f[f"{base}/{BOTTLENECK_INPUT[p]}"][()]
                        mbase = f"layers/{l}/{'attn' if p in PROJ['attn'] else 'mlp'}/{p}"
                        A = f[f"model/{mbase}/A"][()]
                        want = x_in.astype(np.float64) @ A.astype(np.float64)
                        if lax:   # U = a @ A + g(z_prev); z = σ(LN(U)) (stored unless it is U itself)
                            zname = f"{base}/{p}_z"
                            zp = f"activations/layers/{l - 1}/{p}_" + ("z" if f"activations/layers/{l - 1}/{p}_z" in f else "h")
                            if l >= 1:
                                want = want + lax_gate(mcfg, f, mbase, f[zp][()].astype(np.float64))
                            if h is not None and not np.allclose(h, want, rtol=1e-3, atol=1e-4):
                                err(f"/{base}/{p}_h != {BOTTLENECK_INPUT[p]} @ A + g(z_prev) (max diff {np.abs(h - want).max():.3g})")
                            if h is not None and zname in f:
                                z = ds(zname, (N, ranks[p]), np.float32)
                                zw = lax_latent(mcfg, f, mbase, h.astype(np.float64), l >= 1)
                                if not np.allclose(z, zw, rtol=1e-3, atol=1e-4):
                                    err(f"/{zname} != σ(LN({p}_h)) (max diff {np.abs(z - zw).max():.3g})")
                            continue
                        if h is not None and not np.allclose(h, want, rtol=1e-3, atol=1e-5):
                            err(f"/{base}/{p}_h != {BOTTLENECK_INPUT[p]} @ A (max diff {np.abs(h - want).max():.3g})")
                        if cola:
                            z = ds(f"{base}/{p}_z", (N, ranks[p]), np.float32)
                            silu = want / (1 + np.exp(-want))
                            if z is not None and not np.allclose(z, silu, rtol=1e-3, atol=1e-5):
                                err(f"/{base}/{p}_z != SiLU({p}_h)")
            ds("activations/x_final", (N, d), np.float32)
            ds("activations/xf", (N, d), np.float32)
            ds("activations/losses", (N,), np.float32)
            if inputs is not None and "activations/layers/0/x" in f:
                toks = inputs[first:first + B].reshape(-1)
                x0 = f["activations/layers/0/x"][()]
                if x0.shape == (N, d) and not np.array_equal(x0, f["model/embed_tokens"][()][toks]):
                    err("/activations/layers/0/x != embed_tokens[inputs of the last micro-batch]")
            summary["activations"] = {"B": B, "T": Ta, "first_row": first, "cola_z": cola}
    return report(path, errors, quiet, summary)


def report(path, errors, quiet, summary):
    if not quiet:
        print(f"{path}: " + ", ".join(f"{k}={v}" for k, v in summary.items()))
    for e in errors:
        print(f"FAIL {path}: {e}")
    if not errors:
        print(f"ok {path}: follows the step-dump layout")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
