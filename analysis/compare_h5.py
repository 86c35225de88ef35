#!/usr/bin/python3
"""Compare two boost-c HDF5 files (step dumps or checkpoints) tensor by tensor.

    compare_h5.py A.h5 B.h5 [--groups model,grads,loss] [--atol 1e-5] [--rtol 1e-4] [--exact]

For every dataset under the named groups (a top-level dataset such as /loss counts as
its own group) both files must hold the same names and shapes, and per tensor
    max|a - b| <= atol + rtol * max|b|
(--exact: bit-identical). Prints one line per failing tensor and a summary; exit 1 on
any difference beyond tolerance, 2 on unreadable input.
"""
import argparse
import sys

import h5py
import numpy as np


def collect(f, groups):
    out = {}
    for g in groups:
        if g not in f:
            continue
        obj = f[g]
        if isinstance(obj, h5py.Dataset):
            out[g] = obj[()]
            continue
        obj.visititems(lambda name, o: out.__setitem__(f"{g}/{name}", o[()]) if isinstance(o, h5py.Dataset) else None)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--groups", default="model,grads,loss")
    ap.add_argument("--atol", type=float, default=1e-5)
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--exact", action="store_true")
    args = ap.parse_args()
    groups = [g for g in args.groups.split(",") if g]
    try:
        with h5py.File(args.a, "r") as fa, h5py.File(args.b, "r") as fb:
            ta, tb = collect(fa, groups), collect(fb, groups)
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    bad = 0
    if set(ta) != set(tb):
        print(f"different tensors: only in A {sorted(set(ta) - set(tb))[:5]}, only in B {sorted(set(tb) - set(ta))[:5]}")
        bad += 1
    worst = 0.0
    for name in sorted(set(ta) & set(tb)):
        a, b = np.asarray(ta[name], dtype=np.float64), np.asarray(tb[name], dtype=np.float64)
        if a.shape != b.shape:
            print(f"{name}: shape {a.shape} vs {b.shape}")
            bad += 1
            continue
        diff = float(np.max(np.abs(a - b))) if a.size else 0.0
        scale = float(np.max(np.abs(b))) if b.size else 0.0
        allowed = 0.0 if args.exact else args.atol + args.rtol * scale
        worst = max(worst, diff / allowed if allowed > 0 else (0.0 if diff == 0 else float("inf")))
        if diff > allowed:
            print(f"{name}: max|a-b| = {diff:.3e} > {allowed:.3e} (max|b| = {scale:.3e})")
            bad += 1
    print(f"{len(ta)} tensors compared, {bad} beyond tolerance, worst diff/allowed = {worst:.3g}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
