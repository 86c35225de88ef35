"""reproduce_published.py — the performance model against published end-to-end training
throughputs measured by others (analysis/reproduction/published_throughputs.yaml; its header
states the sources, the split into calibration and held-out rows, and every mapping choice).

Each row's published number is converted to seconds per iteration by its source's own
definition (seconds_of); the mapped variant (experiments/published-throughputs.yaml, same id) is
priced by build/simulate on the row's hardware profile with the attention kernel its system ran.
error = published seconds / modeled seconds - 1 (positive: the model is too fast).

    /usr/bin/python3 analysis/reproduce_published.py     # the table alone, on stdout
reproduce.py imports compute() and section() for REPORT.md and published.csv.
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import yaml12  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SET = "analysis/reproduction/published_throughputs.yaml"
MANIFEST = "published-throughputs"
# The targets on the held-out rows (issue: a model with no thumb on the scale)
TARGET_MEDIAN, TARGET_WORST, TARGET_SIGN = 0.12, 0.25, 0.70
# The commit that fixed the set and its split, before the model was changed
SPLIT_COMMIT = "b65bf9b"


def load():
    with open(os.path.join(ROOT, SET)) as fh:
        return yaml12.load(fh)


def hardware_of(doc, row):
    return row.get("hardware") or doc["sources"][row["source"]]["hardware"]


def attention_of(doc, row):
    return doc["sources"][row["source"]]["attention"]


def seconds_of(doc, row):
    """The published number as seconds per iteration, by its source's definition."""
    metric = doc["sources"][row["source"]]["metric"]
    B, s, l, h, V, gpus, x = row["batch"], row["seq"], row["layers"], row["hidden"], row["vocab"], row["gpus"], row["value"]
    if metric == "tflops_per_gpu_sc21_eq3":   # Narayanan et al. SC21, Eq. (3), recompute included
        return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h)) / (x * 1e12 * gpus)
    if metric == "tflops_per_gpu_mcore_2024":   # megatron/training/training.py at f2e5db402c (GPT, no GQA, no SwiGLU)
        f = row["ffn"]
        return 12 * B * s * l * h * h * ((1 + 1 + s / h) + f / h + V / (2 * l * h)) / (x * 1e12 * gpus)
    if metric == "tokens_per_s_per_gpu":
        return B * s / (x * gpus)
    if metric == "seconds_per_iteration":
        return x
    raise SystemExit(f"{SET}: row {row['id']}: unknown metric {metric}")


def compute(model_for, doc):
    """{"pubs/<id>": modeled seconds} on the models model_for(hardware) returns (reproduce.Model),
    and {"pubfit/<id>": every stage fits the profile's memory}."""
    V, X = {}, {}
    for row in doc["rows"]:
        r = model_for(hardware_of(doc, row)).run(MANIFEST, row["id"], (), ("--attention-kernel", attention_of(doc, row)))
        V[f"pubs/{row['id']}"] = r["step"]["seconds"]
        X[f"pubfit/{row['id']}"] = all(st["memory_fits"] for st in r["stages"])
    return V, X


def errors(doc, V):
    """[(row, published s, modeled s, error)] in the file's order."""
    return [(row, seconds_of(doc, row), V[f"pubs/{row['id']}"], seconds_of(doc, row) / V[f"pubs/{row['id']}"] - 1)
            for row in doc["rows"]]


def summary(errs):
    """(n, median |error|, worst |error|, positive, negative) of [(row, pub, model, err)]."""
    e = [x[3] for x in errs]
    if not e:
        return (0, None, None, 0, 0)
    return (len(e), statistics.median(abs(x) for x in e), max(abs(x) for x in e), sum(x > 0 for x in e), sum(x < 0 for x in e))


def verdict(s):
    n, med, worst, pos, neg = s
    sign = max(pos, neg) / n if n else 1
    return (med <= TARGET_MEDIAN, worst <= TARGET_WORST, sign <= TARGET_SIGN)


def main():
    import subprocess
    import json
    import tempfile
    tmp = tempfile.mkdtemp(prefix="published.")

    class M:
        def __init__(self, hw):
            self.hw = hw

        def run(self, manifest, variant, sets, extra):
            out = os.path.join(tmp, f"{variant}.json")
            cmd = ["build/simulate", f"experiments/{manifest}.yaml", "--variant", variant, "--hardware", self.hw, "--json", out,
                   *extra]
            p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if p.returncode:
                sys.exit(f"{' '.join(cmd)} failed:\n{p.stdout[-2000:]}")
            with open(out) as fh:
                return json.load(fh)
    doc = load()
    V, X = compute(M, doc)
    for split in ("calibration", "held_out"):
        errs = [x for x in errors(doc, V) if x[0]["split"] == split]
        print(f"== {split}")
        for row, p, m, e in errs:
            print(f"  {row['id']:22s} published {p:9.3f} s  model {m:9.3f} s  error {100 * e:+6.1f} %"
                  f"{'' if X[f'pubfit/' + row['id']] else '  (the engine would not fit)'}")
        n, med, worst, pos, neg = summary(errs)
        print(f"  n {n}: median |error| {100 * med:.1f} %, worst {100 * worst:.1f} %, {pos} positive, {neg} negative")


if __name__ == "__main__":
    main()


# ---- REPORT.md and published.csv (reproduce.py) ----------------------------------------------
FIRST_HELD_OUT = ("10912ed", "median |error| 21.5 %, worst 55.6 %, 12 positive, 7 negative")   # the first pricing of the held-out rows


def _pct(x):
    return f"{100 * x:+.1f}%"


def csv_rows(doc, V, B, X):
    head = ["id", "source", "split", "gpu", "hardware", "attention", "tp", "pp", "dp", "gpus", "micro_batch", "batch", "seq",
            "published_value", "published_metric", "published_s", "model_s", "model_lo", "model_hi", "error", "engine_fits"]
    rows = []
    for row, p, m, e in errors(doc, V):
        src = doc["sources"][row["source"]]
        b = B.get(f"pubs/{row['id']}")
        rows.append([row["id"], row["source"], row["split"], row.get("gpu") or src["gpu"], hardware_of(doc, row), src["attention"],
                     row["tp"], row["pp"], row["dp"], row["gpus"], row["micro_batch"] or "1 (not stated)", row["batch"], row["seq"],
                     row["value"], src["metric"], p, m, b[0] if b else m, b[1] if b else m, e,
                     "yes" if X[f"pubfit/{row['id']}"] else "no"])
    return head, rows


def section(doc, V, B, X, md_table):
    """The lines of REPORT.md's section on the published throughputs."""
    L = []
    errs = errors(doc, V)
    cal = [x for x in errs if x[0]["split"] == "calibration"]
    held = [x for x in errs if x[0]["split"] == "held_out"]
    n, med, worst, pos, neg = summary(held)
    ok_med, ok_worst, ok_sign = verdict(summary(held))
    L.append(f"The set: {len(errs)} published end-to-end training throughputs of transformers on A100 and H100 GPUs from "
             f"{len(doc['sources'])} sources (`{SET}`: each row's configuration, its source's location, the metric's "
             f"definition; `experiments/published-throughputs.yaml`: the engine variant of each row). **The split was fixed in "
             f"commit {SPLIT_COMMIT}, before any change to the model**: calibration = the {len(cal)} Megatron-LM SC21 rows whose "
             f"errors had already been seen (REPORT.md at 7034904), held out = the other {len(held)}. No constant was fitted to "
             f"either part: the model's mechanisms come from documentation and published microbenchmarks "
             f"(docs/performance-model.md §11, written in the commit before they were priced); the calibration rows were "
             f"priced before and after, the held-out rows after, once.\n")
    L.append(f"**Held-out rows: median |error| {100 * med:.1f} % (target ≤ {100 * TARGET_MEDIAN:.0f} %: "
             f"{'met' if ok_med else '**NOT met**'}), worst {100 * worst:.1f} % (target ≤ {100 * TARGET_WORST:.0f} %: "
             f"{'met' if ok_worst else '**NOT met**'}), {pos} too fast and {neg} too slow ({100 * max(pos, neg) / n:.0f} % of one "
             f"sign; target ≤ {100 * TARGET_SIGN:.0f} %: {'met' if ok_sign else '**NOT met**'}).** The first pricing of the "
             f"held-out rows (commit {FIRST_HELD_OUT[0]}) gave {FIRST_HELD_OUT[1]}; nothing in the model was changed after it.\n")
    cn, cmed, cworst, cpos, cneg = summary(cal)
    L.append(f"Calibration rows: median |error| {100 * cmed:.1f} %, worst {100 * cworst:.1f} %, {cpos} too fast, {cneg} too slow "
             f"(before the mechanisms of §11, REPORT.md at 7034904: median 23.4 %, worst 37.9 %, 6 too fast).\n")
    L.append("error = published seconds per iteration / modeled − 1 (positive: the model is too fast); published seconds from "
             "each source's own metric (SC21: Eq. (3) teraFLOP/s; Megatron-Core: its FLOP count at f2e5db402c; MosaicML: "
             "tokens/s/GPU; BLOOM: seconds per iteration as logged). Band: the model over the chosen constants' alternatives "
             "on that row's profile. *engine fits*: whether this engine's own memory layout fits the profile's memory (the "
             "published systems shard or recompute their own way; the time is priced either way).\n")
    rows = []
    for row, p, m, e in errs:
        src = doc["sources"][row["source"]]
        b = B.get(f"pubs/{row['id']}")
        band = f" [{b[0]:.3f}–{b[1]:.3f}]" if b and b[1] - b[0] > 1e-12 * m else ""
        shape = f"{row['params_b']}B: {row['layers']}×{row['hidden']}, {row['heads']} heads"
        rows.append([row["id"], row["split"].replace("_", "-"), row.get("gpu") or src["gpu"], shape,
                     f"{row['tp']}/{row['pp']}/{row['dp']} ({row['gpus']})", row["micro_batch"] or "1*", row["batch"], row["seq"],
                     f"{p:.3f}", f"{m:.3f}{band}", _pct(e), "yes" if X[f"pubfit/{row['id']}"] else "no",
                     row["system"].replace("|", "\\|")])   # a pipe of the text is no column border
    L.append(md_table(["row", "split", "GPU", "model", "tp/pp/dp (GPUs)", "micro-batch", "batch", "seq", "published s",
                       "model s [band]", "error", "engine fits", "what the published system does that this engine's trace does not"],
                      rows) + "\n")
    L.append("\\* not stated by the source; 1 sequence per replica, chosen before pricing (the set's header).\n")
    by = {}
    for x in held:
        by.setdefault(x[0]["source"], []).append(x)
    parts = []
    for key, xs in by.items():
        k, med_, w_, p_, n_ = summary(xs)
        parts.append(f"{key} ({k} rows): median |error| {100 * med_:.1f} %, worst {100 * w_:.1f} %, {p_} too fast, {n_} too slow")
    L.append("By source (held out): " + "; ".join(parts) + ".\n")
    return L
