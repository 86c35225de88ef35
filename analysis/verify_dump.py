#!/usr/bin/python3
"""verify_dump.py DUMP.h5 [DUMP.h5 ...] — independent check of the C engine's step dump.

A step dump (written by the engine at the configured steps) holds:
  root attrs  format = "boost-c step dump", config = resolved configuration as JSON
              ({"model": {...}, "train": {...}, "data": {...}}), optionally step
  /model/...  the weights the step's gradients were computed with
  /batch/inputs, /batch/targets   [rows, T] int32 — every micro-batch of the step
  /loss       float64 scalar: mean loss over rows x T tokens
  /grads/<name without "model/">  gradient of that mean loss, before clipping

This script rebuilds the model in PyTorch float64 (analysis/torch_model.py, written from
the paper notes, not from the C code), recomputes loss and gradients on the same batch and
compares:
  loss:         |loss_c - loss_t| <= 1e-4 * |loss_t|
  each tensor:  max|g_c - g_t|    <= 1e-5 + 1e-3 * max|g_t|
Why these tolerances: the engine computes in fp32 (unit round-off 6e-8), the reference in
float64, so the difference is the engine's own rounding. Each gradient element is a sum over
up to rows*T tokens and d_model/d_ff/V products; with fp32 accumulation in BLAS and fast
exp/SiLU approximations, relative errors of ~1e-5..1e-4 of the tensor's scale are normal,
while any real bug (wrong transpose, missing term, wrong head mapping, wrong scaling) shows
up as O(1) relative error. The error is measured relative to the tensor's largest entry
(not element-wise) because tiny elements carry large relative rounding noise; the 1e-5
absolute floor covers tensors whose gradient is ~0 (e.g. an unused vocabulary row).

Prints one table row per tensor; exit 0 if everything passes, 1 on any failure,
2 if the file is not a readable step dump.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import h5py
    import numpy as np
    import torch
except ImportError as e:  # pragma: no cover
    sys.stderr.write(f"verify_dump: {e}; use /usr/bin/python3 with python3-torch, python3-h5py\n")
    sys.exit(2)

from torch_model import BoostModel, ModelConfig

LOSS_RTOL = 1e-4
GRAD_ATOL = 1e-5
GRAD_RTOL = 1e-3


def _attr_text(v):
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.ndarray):  # a 1-element array of strings
        v = v.reshape(-1)[0]
        return v.decode() if isinstance(v, bytes) else str(v)
    return str(v)


def read_dump(path):
    with h5py.File(path, "r") as f:
        fmt = _attr_text(f.attrs.get("format", ""))
        if fmt != "boost-c step dump":
            raise ValueError(f"root attribute format is {fmt!r}, expected 'boost-c step dump'")
        conf = json.loads(_attr_text(f.attrs["config"]))
        mcfg = ModelConfig.from_dict(conf.get("model", conf))
        model = BoostModel(mcfg, dtype=torch.float64)
        model.load_hdf5(f)
        inputs = np.asarray(f["batch/inputs"][()])
        targets = np.asarray(f["batch/targets"][()])
        loss = float(np.asarray(f["loss"][()]).reshape(-1)[0])
        grads = {}
        if "grads" in f:
            f["grads"].visititems(lambda n, o: grads.__setitem__("model/" + n, np.asarray(o[()]))
                                  if isinstance(o, h5py.Dataset) else None)
        step = f.attrs.get("step", None)
    return conf, model, inputs, targets, loss, grads, step


def write_reference_dump(path, model, inputs, targets, corrupt=None):
    """Write a step dump of `model` (a torch_model.BoostModel) on one batch, in the format
    read_dump() reads: the self-checks of this script (tests/t_torch_reference.sh,
    analysis/lax_selftest.py). corrupt: a parameter name whose first gradient entry is moved
    by 1% of the tensor's scale (the check must then fail and name it)."""
    for p in model.parameters():
        p.grad = None
    loss = model.loss(inputs, targets)
    loss.backward()
    with h5py.File(path, "w") as f:
        f.attrs["format"] = "boost-c step dump"
        f.attrs["config"] = json.dumps({"model": dict(model.cfg.__dict__), "train": {}, "data": {}})
        f.attrs["step"] = 1
        for name, p in model.named_engine_parameters():
            f[name] = p.detach().numpy()
            g = p.grad.numpy().copy() if p.grad is not None else np.zeros(tuple(p.shape), np.float32)
            if name == corrupt:
                g.reshape(-1)[0] += 0.01 * np.abs(g).max() + 1e-4
            f["grads/" + name[len("model/"):]] = g
        f["batch/inputs"] = inputs.numpy().astype(np.int32)
        f["batch/targets"] = targets.numpy().astype(np.int32)
        f["loss"] = np.float64(loss.item())


def verify(path, quiet=False):
    conf, model, inputs, targets, loss_c, grads_c, step = read_dump(path)
    c = model.cfg
    if inputs.ndim == 1:
        inputs = inputs.reshape(-1, c.seq_len)
        targets = targets.reshape(-1, c.seq_len)
    x = torch.from_numpy(inputs.astype(np.int64))
    y = torch.from_numpy(targets.astype(np.int64))
    loss_t_tensor = model.loss(x, y)
    loss_t_tensor.backward()
    loss_t = float(loss_t_tensor)

    kind = c.linear if c.linear != "lax" else f"lax({c.lax_base},{c.lax_gate},{c.lax_norm})"
    print(f"{path}: step {step if step is not None else '?'} | {kind} L{c.n_layers} d{c.d_model} "
          f"H{c.n_heads}/{c.n_kv_heads} ff{c.d_ff} r{c.rank_attn}/{c.rank_mlp} V{c.vocab_size} "
          f"tied={int(c.tie_embeddings)} only_lr_act={int(c.only_lr_act)} | batch {inputs.shape[0]}x{inputs.shape[1]}")
    failures = 0
    dl = abs(loss_c - loss_t)
    ok = dl <= LOSS_RTOL * abs(loss_t)
    failures += not ok
    print(f"  loss  C {loss_c:.8f}  torch {loss_t:.8f}  |diff| {dl:.2e}  "
          f"(tol {LOSS_RTOL * abs(loss_t):.2e})  {'ok' if ok else 'FAIL'}")
    width = max(len(n) for n, _ in model.named_engine_parameters())
    if not quiet:
        print(f"  {'tensor':<{width}} {'shape':>13} {'max|g_t|':>10} {'max|diff|':>10} {'tol':>10} {'rel':>9}")
    seen = set()
    worst = 0.0
    for name, p in model.named_engine_parameters():
        g_t = p.grad.detach().numpy()
        shape = "x".join(map(str, g_t.shape))
        if name not in grads_c:
            failures += 1
            print(f"  {name:<{width}} {shape:>13}  missing in dump  FAIL")
            continue
        seen.add(name)
        g_c = grads_c[name].astype(np.float64)
        if g_c.size != g_t.size:
            failures += 1
            print(f"  {name:<{width}} {shape:>13}  dump shape {g_c.shape}  FAIL")
            continue
        g_c = g_c.reshape(g_t.shape)
        scale = float(np.abs(g_t).max())
        diff = float(np.abs(g_c - g_t).max()) if np.all(np.isfinite(g_c)) else float("inf")
        tol = GRAD_ATOL + GRAD_RTOL * scale
        ok = diff <= tol
        failures += not ok
        rel = diff / scale if scale > 0 else 0.0
        worst = max(worst, rel)
        if not quiet or not ok:
            print(f"  {name:<{width}} {shape:>13} {scale:10.3e} {diff:10.3e} {tol:10.3e} {rel:9.2e}"
                  f"  {'ok' if ok else 'FAIL'}")
    extra = sorted(set(grads_c) - seen)
    for name in extra:
        failures += 1
        print(f"  {name}: in dump but not a parameter of this model  FAIL")
    n = len(seen)
    print(f"  {'PASS' if failures == 0 else 'FAIL'}: {n} gradient tensors compared, worst max|diff|/max|g| "
          f"{worst:.2e}, {failures} failure(s)")
    return failures == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dumps", nargs="+", help="step dump files (HDF5)")
    ap.add_argument("--quiet", action="store_true", help="print only failing tensors and the summary")
    args = ap.parse_args()
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    all_ok = True
    for path in args.dumps:
        try:
            all_ok &= verify(path, quiet=args.quiet)
        except (OSError, KeyError, ValueError) as e:
            sys.stderr.write(f"verify_dump: {path}: not a readable step dump: {e}\n")
            sys.exit(2)
    sys.exit(0 if all_ok else 1)


if __name__ == "__main__":
    main()
