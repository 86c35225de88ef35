#!/usr/bin/python3
"""load_export.py — a model that build/export wrote, back in PyTorch (docs/export.md).

    /usr/bin/python3 analysis/load_export.py OUT_DIR [--check-logits LOGITS.json] [--transformers]

Builds the boost-c model of analysis/torch_model.py from an export folder — any kind: the
low-rank layout (cola, svd, lax: the checkpoint's tensor names and shapes) and the dense
Hugging Face layout (its names, weights [out, in], transposed back) — and prints what it
loaded. Needs numpy and torch only (safetensors files are read here, no safetensors package).

--check-logits FILE: the logits of `build/sample CHECKPOINT --logits FILE` (the engine's own
forward pass on the prompt's ids) against this model's on the same ids; exit 1 when they
differ by more than the float32 tolerance (|a - b| <= 1e-4 + 1e-4 |b| for every logit).
--transformers: the same check through Hugging Face transformers instead
(AutoModelForCausalLM and AutoTokenizer.from_pretrained(OUT_DIR): a dense export), with the
tokenizer's ids of the prompt against the engine's; run it with a Python that has
transformers (docs/export.md says how to install one).

In a script:
    import load_export
    model = load_export.load("OUT_DIR")          # torch_model.BoostModel, eval mode
    logits = model(torch.tensor([[1, 2, 3]]))    # [1, 3, vocab]
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

PROG = "load_export"
RTOL = ATOL = 1e-4
HF_PROJ = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj", "o": "self_attn.o_proj",
           "gate": "mlp.gate_proj", "up": "mlp.up_proj", "down": "mlp.down_proj"}


def die(msg, code=2):
    sys.stderr.write(f"{PROG}: {msg}\n")
    sys.exit(code)


def read_safetensors(path):
    """{name: float32 numpy array} of a safetensors file (the format: 8-byte little-endian
    header length, a JSON header of dtype/shape/data_offsets, then the bytes)."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        die(f"{path}: {len(raw)} bytes, too short for a safetensors file")
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        die(f"{path}: the header claims {n} bytes but the file has {len(raw)}")
    try:
        header = json.loads(raw[8:8 + n])
    except ValueError as e:
        die(f"{path}: the header is not JSON ({e})")
    data, out = raw[8 + n:], {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        if h.get("dtype") != "F32":
            die(f"{path}: {name} is {h.get('dtype')}; build/export writes F32 only")
        a, b = h["data_offsets"]
        shape = tuple(h["shape"])
        if not (0 <= a <= b <= len(data)) or b - a != 4 * int(np.prod(shape, dtype=np.int64)):
            die(f"{path}: {name}: data_offsets {a}..{b} do not hold float32 {list(shape)} within the file")
        out[name] = np.frombuffer(data[a:b], dtype="<f4").reshape(shape)
    return out


def engine_tensors(d, cfg_json):
    """{engine name: array in the engine's shape} from an export folder."""
    layout = cfg_json["boost_c"]["layout"]
    t = read_safetensors(os.path.join(d, "model.safetensors"))
    if layout == "boost-c":
        return t
    if layout != "hf-llama":
        die(f"{d}/config.json: layout {layout!r} is neither boost-c nor hf-llama")
    out = {"model/embed_tokens": t["model.embed_tokens.weight"], "model/final_norm": t["model.norm.weight"]}
    if "lm_head.weight" in t:
        out["model/lm_head"] = t["lm_head.weight"].T
    for layer in range(cfg_json["num_hidden_layers"]):
        p, q = f"model/layers/{layer}", f"model.layers.{layer}"
        out[f"{p}/input_norm"] = t[f"{q}.input_layernorm.weight"]
        out[f"{p}/post_attn_norm"] = t[f"{q}.post_attention_layernorm.weight"]
        for proj, hf in HF_PROJ.items():
            grp = "attn" if proj in ("q", "k", "v", "o") else "mlp"
            out[f"{p}/{grp}/{proj}/W"] = t[f"{q}.{hf}.weight"].T
    return out


def load(d, dtype=None):
    """torch_model.BoostModel of an export folder, in eval mode (float32 by default)."""
    import torch
    import torch_model as tm
    with open(os.path.join(d, "config.json")) as f:
        cfg_json = json.load(f)
    if "boost_c" not in cfg_json:
        die(f"{d}/config.json has no boost_c section: not a folder build/export wrote")
    cfg = tm.config_from_json(cfg_json["boost_c"]["config"])
    model = tm.BoostModel(cfg, dtype=dtype or torch.float32)
    tensors = engine_tensors(d, cfg_json)
    names = [n for n, _ in model.named_engine_parameters()]
    missing, extra = sorted(set(names) - set(tensors)), sorted(set(tensors) - set(names))
    if missing or extra:
        die(f"{d}: the tensors do not match the {cfg.linear} model of config.json: missing {missing[:4]}, "
            f"not in the model {extra[:4]}")
    with torch.no_grad():
        for name in names:
            p = model.param(name)
            a = torch.from_numpy(np.array(tensors[name], dtype=np.float32))   # (a writable copy)
            if tuple(a.shape) != tuple(p.shape):
                die(f"{d}: {name} has shape {list(a.shape)}, the model expects {list(p.shape)}")
            p.copy_(a.to(p.dtype))
    return model.eval()


def compare(mine, theirs, what):
    """Max |difference| and whether every logit is within the float32 tolerance."""
    mine, theirs = np.asarray(mine, dtype=np.float64), np.asarray(theirs, dtype=np.float64)
    if mine.shape != theirs.shape:
        die(f"{what}: shape {mine.shape} vs the engine's {theirs.shape}", 1)
    diff = np.abs(mine - theirs)
    ok = bool(np.all(diff <= ATOL + RTOL * np.abs(theirs)))
    return float(diff.max()), ok


def main():
    ap = argparse.ArgumentParser(description="a build/export folder back in PyTorch")
    ap.add_argument("dir")
    ap.add_argument("--check-logits", metavar="FILE", help="build/sample --logits output to compare with")
    ap.add_argument("--transformers", action="store_true", help="check through Hugging Face transformers (dense)")
    args = ap.parse_args()
    if not os.path.isdir(args.dir) or not os.path.isfile(os.path.join(args.dir, "config.json")):
        die(f"{args.dir}: not a folder with a config.json (build/export CHECKPOINT {args.dir} writes one)")
    ref = None
    if args.check_logits:
        try:
            with open(args.check_logits) as f:
                ref = json.load(f)
            ids, logits = ref["ids"], ref["logits"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            die(f"{args.check_logits}: not the JSON of build/sample --logits ({e})")
    import torch
    if args.transformers:
        with open(os.path.join(args.dir, "config.json")) as f:
            layout = json.load(f).get("boost_c", {}).get("layout")
        if layout != "hf-llama":
            die(f"{args.dir} is a {layout or 'non-boost-c'} export, which no Hugging Face class reads: "
                f"check it without --transformers")
        try:
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as e:
            die(f"no transformers for {sys.executable} ({e}); docs/export.md says how to install it")
        model = AutoModelForCausalLM.from_pretrained(args.dir, torch_dtype=torch.float32).eval()
        print(f"{type(model).__name__} from {args.dir}: {sum(p.numel() for p in model.parameters())} parameters")
        if ref is None:
            return
        if os.path.isfile(os.path.join(args.dir, "tokenizer.json")) and "prompt" in ref:
            tok = AutoTokenizer.from_pretrained(args.dir)
            hf_ids = tok(ref["prompt"])["input_ids"]
            if hf_ids != ids:
                die(f"the tokenizer's ids of {ref['prompt']!r} are {hf_ids}, the engine's {ids}", 1)
            print(f"tokenizer: the engine's {len(ids)} ids of the prompt")
        with torch.no_grad():
            got = model(torch.tensor([ids])).logits[0].numpy()
    else:
        model = load(args.dir)
        print(f"{model.cfg.linear} model from {args.dir}: {sum(p.numel() for p in model.parameters())} parameters")
        if ref is None:
            return
        with torch.no_grad():
            got = model(torch.tensor([ids])).numpy()[0]
    worst, ok = compare(got, logits, args.check_logits)
    print(f"logits of {len(ids)} positions x {len(logits[0])}: max |difference| {worst:.3g} "
          f"({'within' if ok else 'OUTSIDE'} the float32 tolerance {ATOL:g} + {RTOL:g} |x|)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
