"""reproduce_sp.py — REPORT.md's extension section (not in the paper): BOOST against the
strongest tensor-parallel baseline in use, Megatron-TP with sequence parallelism (Korthikanti et
al., 2022) and selective recomputation, at the paper's 1B-30B configurations; and BOOST with the
sequence-sharded bottlenecks of docs/boost.md §8.

analysis/reproduce.py calls `report(...)` once, as its other sections are built, with its model
of the profile and the paper's numbers; this writes sp.csv and sp.png into the report's folder
and returns the section's markdown. Every row is a variant of
experiments/paper-sequence-parallel.yaml (the paper's grids, bf16, micro-batch 4, s 4096, one
micro-batch per iteration: reproduce.py's assumption). Modelled seconds carry the band over the
profile's chosen constants (reproduction_bands.py); memory is exact (the drivers' dry memory
report) and decides "fits" against the profile's capacity.
"""
import os

TITLE = "Extension, not in the paper: BOOST against Megatron-TP with sequence parallelism and selective recomputation"
MANIFEST = "paper-sequence-parallel"   # experiments/paper-sequence-parallel.yaml: every row below is one of its variants
SIZES = [("1B", "1b", 1, 1, 1), ("3B", "3b", 2, 2, 1), ("7B", "7b", 4, 4, 1), ("13B", "13b", 8, 4, 2), ("30B", "30b", 16, 4, 4)]
# variant suffix -> (label, the paper's scheme key for the rows the paper ran, a baseline?)
SCHEMES = {"fullrank-tp": ("FullRank-TP", "fullrank", True),
           "fullrank-tp-sp": ("FullRank-TP + SP", None, True),
           "fullrank-tp-sp-selective": ("FullRank-TP + SP + selective", None, True),
           "vanilla-tp": ("Vanilla-TP", "vanilla", True),
           "vanilla-tp-sp": ("Vanilla-TP + SP", None, True),
           "vanilla-tp-sp-selective": ("Vanilla-TP + SP + selective", None, True),
           "boost": ("BOOST", "boost", False),
           "boost-sp": ("BOOST + SP (docs/boost.md §8)", None, False),
           "boost-no-recompute": ("BOOST, no full recompute", None, False),
           "boost-lowrank-ckpt": ("BOOST + low-rank ckpt", None, False),
           "boost-sp-lowrank-ckpt": ("BOOST + SP + low-rank ckpt", None, False)}


def _variants(key, root):
    """The manifest's variants of one size, in its order: [(variant, scheme suffix)]."""
    import yaml12
    with open(os.path.join(root, "experiments", MANIFEST + ".yaml")) as fh:
        names = list(yaml12.load(fh)["variants"])
    out = []
    for n in names:
        size, _, sk = n.partition("-")
        if size == key:
            if sk not in SCHEMES:
                raise SystemExit(f"reproduce_sp: {MANIFEST}.yaml variant {n}: no label for '{sk}' (reproduce_sp.SCHEMES)")
            out.append((n, sk))
    return out


def _compute(model, root):
    """{metric: value} of one profile's model (seconds and speed-ups over BOOST as the paper runs
    it), and the exact memory."""
    V, X = {}, {}
    for size, key, *_ in SIZES:
        for var, sk in _variants(key, root):
            r = model.run(MANIFEST, var)
            V[f"sp/{size}/{sk}/s"] = r["step"]["seconds"]
            X[f"sp/{size}/{sk}/GiB"] = max(st["memory_bytes"]["total"] for st in r["stages"]) / 2 ** 30
            X[f"sp/{size}/{sk}/fits"] = all(st["memory_fits"] for st in r["stages"])
        for sk in SCHEMES:
            if f"sp/{size}/{sk}/s" in V:
                V[f"sp/{size}/{sk}/x"] = V[f"sp/{size}/{sk}/s"] / V[f"sp/{size}/boost/s"]
    return V, X


def report(Model, model, hw, tmp, no_bands, paper, out, plt, hwname):
    """The section's markdown; sp.csv and sp.png into out. Model: reproduce.py's simulate runner
    (class), model: its instance on the profile, hw: the profile (dict), tmp: a scratch folder,
    no_bands: skip the sweep, paper: the paper's numbers {id: {value, provenance}}, plt: pyplot."""
    import reproduce as R   # its helpers (md_table, write_csv, ROOT); imported here: reproduce.py imports this module
    import reproduction_bands as rb
    V, X = _compute(model, R.ROOT)
    runs = []
    if not no_bands:
        for i, (key, alt, path) in enumerate(rb.perturbed_profiles(hw, os.path.join(tmp, "sp-bands"))):
            vals, _ = _compute(Model(path, os.path.join(tmp, f"sp-run{i}")), R.ROOT)
            runs.append((key, alt, vals))
    B = rb.bands(V, runs)
    cap = hw["memory_bytes"] / 2 ** 30

    def v(name, d=2):
        x = V.get(name)
        if x is None:
            return "—"
        b = B.get(name)
        return f"{x:.{d}f}" + (f" [{b[0]:.{d}f}–{b[1]:.{d}f}]" if b and b[1] - b[0] > 1e-9 * abs(x) else "")

    def paper_x(key, pkey):
        """The paper's speed-up of BOOST over a baseline at one size, with its provenance."""
        a, b = paper.get(f"fig5.{key}.{pkey}"), paper.get(f"fig5.{key}.boost")
        if not a or not b:
            return "—", None
        prov = a["provenance"] if a["provenance"] == b["provenance"] else f"{a['provenance']}/{b['provenance']}"
        return f"{a['value'] / b['value']:.2f} ({prov})", a["value"] / b["value"]

    rows, csv_rows = [], []
    for size, key, gpus, tp, pp in SIZES:
        for var, sk in _variants(key, R.ROOT):
            name, pkey, _ = SCHEMES[sk]
            n = f"sp/{size}/{sk}"
            px, pxv = paper_x(key, pkey) if pkey and pkey != "boost" else ("—", None)
            fits = X[f"{n}/fits"]
            rows.append([size, f"{gpus} (tp {tp}, pp {pp})", name, v(f"{n}/s"), f"{X[f'{n}/GiB']:.1f}",
                         "yes" if fits else "**no**", v(f"{n}/x") if sk != "boost" else "1", px])
            b = B.get(f"{n}/x", (None, None))
            csv_rows.append([size, gpus, tp, pp, sk, var, V[f"{n}/s"], B[f"{n}/s"][0], B[f"{n}/s"][1], X[f"{n}/GiB"], int(fits),
                             V.get(f"{n}/x"), b[0], b[1], pxv, f"modeled ({hwname})"])
    R.write_csv(os.path.join(out, "sp.csv"), ["size", "gpus", "tp", "pp", "scheme", "variant", "model_s", "model_lo", "model_hi",
                                              "peak_GiB_exact", "fits", "scheme_over_boost", "ratio_lo", "ratio_hi",
                                              "paper_ratio", "label"], csv_rows)

    # the strongest configuration that fits on either side, per size, and the ratio of the two
    def strongest(size, keys):
        cand = [(V[f"sp/{size}/{sk}/s"], sk) for sk in keys if f"sp/{size}/{sk}/s" in V and X[f"sp/{size}/{sk}/fits"]]
        return min(cand)[1] if cand else None

    BASELINES = [k for k, (_, _, base) in SCHEMES.items() if base]
    BOOSTS = [k for k, (_, _, base) in SCHEMES.items() if not base]

    def nm(sk):
        return SCHEMES[sk][0]
    best = []
    for size, key, gpus, tp, pp in SIZES:
        b, o = strongest(size, BASELINES), strongest(size, BOOSTS)
        if b and o:
            V[f"sp/{size}/best/x"] = V[f"sp/{size}/{b}/s"] / V[f"sp/{size}/{o}/s"]
            for _, _, vals in runs:   # the same pair on each alternative profile: the band of the ratio
                if f"sp/{size}/{b}/s" in vals and f"sp/{size}/{o}/s" in vals:
                    vals[f"sp/{size}/best/x"] = vals[f"sp/{size}/{b}/s"] / vals[f"sp/{size}/{o}/s"]
    B = rb.bands(V, runs)
    for size, key, gpus, tp, pp in SIZES:
        b, o = strongest(size, BASELINES), strongest(size, BOOSTS)
        pkey = "fullrank" if b and b.startswith("fullrank") else "vanilla" if b else None
        best.append([size, nm(b) if b else "none fits", nm(o) if o else "none fits", v(f"sp/{size}/best/x"),
                     paper_x(key, pkey)[0] if pkey else "—"])

    # the figure: speed-ups per size, paper's as diamonds; memory per GPU against the capacity
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 8.5))
    shown = [("fullrank-tp", "#888888"), ("fullrank-tp-sp", "#555555"), ("fullrank-tp-sp-selective", "#222222"),
             ("vanilla-tp", "#fdb863"), ("vanilla-tp-sp", "#e66101"), ("vanilla-tp-sp-selective", "#b35806")]
    sizes = [s for s, *_ in SIZES]
    w = 0.13
    for i, (sk, col) in enumerate(shown):
        xs, ys, lo, hi = [], [], [], []
        for j, size in enumerate(sizes):
            n = f"sp/{size}/{sk}/x"
            if n not in V:
                continue
            xs.append(j + (i - 2.5) * w); ys.append(V[n])
            b = B.get(n, (V[n], V[n]))
            lo.append(V[n] - b[0]); hi.append(b[1] - V[n])
        label = SCHEMES[sk][0]
        ax1.bar(xs, ys, w, color=col, label=f"{label} / BOOST", yerr=[lo, hi], capsize=2)
    for j, (size, key, *_rest) in enumerate(SIZES):
        for pkey, off in (("fullrank", -2.5), ("vanilla", 0.5)):
            _, pv = paper_x(key, pkey)
            if pv is not None:
                ax1.plot(j + off * w, pv, "kD", ms=5, fillstyle="none" if paper[f"fig5.{key}.{pkey}"]["provenance"] == "reading-notes" else "full")
    for j, size in enumerate(sizes):   # the strongest baseline that fits over the strongest BOOST that fits
        n = f"sp/{size}/best/x"
        if n in V:
            ax1.plot(j, V[n], "*", color="#1b9e77", ms=11, label="strongest that fits / strongest BOOST that fits" if j == 1 else None)
    ax1.axhline(1, color="k", lw=0.5)
    ax1.set_xticks(range(len(sizes)), sizes)
    ax1.set_ylabel("seconds / BOOST's seconds")
    ax1.set_title(f"Extension (not in the paper): BOOST's speed-up over Megatron-TP (+ SP, + selective), modeled on {hwname}; "
                  "diamonds: the paper's ratios (no SP)", fontsize=8)
    ax1.set_ylim(0, 1.35 * max([V[k] for k in V if k.endswith("/x")] + [2.0]))
    ax1.legend(fontsize=7, ncol=3, loc="upper left")
    mem = shown + [("boost", "#1b9e77"), ("boost-sp", "#66c2a5"), ("boost-no-recompute", "#a6dba0"),
                   ("boost-lowrank-ckpt", "#5aae61"), ("boost-sp-lowrank-ckpt", "#00441b")]
    for i, (sk, col) in enumerate(mem):
        xs, ys = [], []
        for j, size in enumerate(sizes):
            n = f"sp/{size}/{sk}/GiB"
            if n in X:
                xs.append(j + (i - (len(mem) - 1) / 2) * 0.075); ys.append(X[n])
        ax2.bar(xs, ys, 0.075, color=col, label=SCHEMES[sk][0])
    ax2.axhline(cap, color="r", lw=1, ls="--", label=f"capacity {cap:.0f} GiB")
    ax2.set_xticks(range(len(sizes)), sizes)
    ax2.set_ylabel("peak memory per GPU, GiB (exact)")
    ax2.legend(fontsize=6, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.08))
    fig.tight_layout()
    fig.savefig(os.path.join(out, "sp.png"), dpi=120)
    plt.close(fig)

    L = []
    L.append("The paper compares BOOST with Megatron-style TP without sequence parallelism (SP). Here the engine's "
             "Megatron-LM form of SP (docs/parallelism.md §8: reduce-scatter and all-gather along the sequence in place of "
             "the block's all-reduces, norms and residual adds on seq/tp-token shards, the normed inputs gathered again in "
             "backward) and selective recomputation (docs/boost.md §4: with flash attention the scores are never stored; "
             "`selective` drops the attention output and its log-sum-exp and replays the flash forward) are priced on the "
             f"paper's grids, against BOOST as the paper runs it. **Modeled ({hwname}) — no GPU has run these**; memory is "
             "exact (the drivers' dry report) against the profile's capacity. At 1B (tp 1) there is nothing to shard. At "
             "30B the paper recomputes whole layers under every scheme; its `+ SP + selective` rows drop that full recompute "
             "(the combination Korthikanti et al. propose instead of it), so they show whether it fits without it.\n")
    L.append("![BOOST against Megatron-TP with sequence parallelism](sp.png)\n")
    L.append(R.md_table(["size", "GPUs", "scheme", "model s/iteration [band]", "peak GiB/GPU (exact)", f"fits {cap:.0f} GiB",
                         "scheme / BOOST [band]", "paper's ratio, no SP (provenance)"], rows) + "\n")
    L.append("The strongest configuration that fits on each side (the fastest Megatron-TP row, the fastest BOOST row), "
             "and the speed-up of the one over the other, beside the paper's ratio for the same baseline scheme (without SP, "
             "and with the paper's recompute):\n")
    L.append(R.md_table(["size", "strongest baseline that fits", "strongest BOOST that fits", "baseline s / BOOST s [band]",
                         "paper's ratio, that scheme (provenance)"], best) + "\n")
    tp_sizes = [size for size, _, _, tp, _ in SIZES if tp > 1 and f"sp/{size}/best/x" in V]
    xs = [V[f"sp/{size}/best/x"] for size in tp_sizes]
    fits_now = [f"{size} {SCHEMES[sk][0]}" for size, *_ in SIZES for sk in SCHEMES
                if sk.endswith("-sp") and f"sp/{size}/{sk}/fits" in X and X[f"sp/{size}/{sk}/fits"]
                and not X.get(f"sp/{size}/{sk[:-3]}/fits", True)]
    L.append(f"Reading: at {', '.join(tp_sizes)} (tp > 1) BOOST's modelled speed-up over the strongest Megatron-TP "
             f"configuration that fits is {min(xs):.2f}–{max(xs):.2f}×, against the paper's ratios in the last column. "
             "Sequence parallelism leaves the forward's TP volume unchanged (a reduce-scatter and an all-gather carry "
             "what one all-reduce did; the backward gathers each normed input again: `make bench-comm`); what it "
             "changes is memory" + (f": with it {', '.join(fits_now)} fit{'s' if len(fits_now) == 1 else ''} where "
             "the plain scheme does not" if fits_now else "") + ". BOOST + SP keeps BTP's volume and cuts the "
             "bottleneck activations by tp (docs/boost.md §8), at twice the collective calls. sp.csv holds every row "
             "with its variant and band.\n")
    return "\n".join(L)
