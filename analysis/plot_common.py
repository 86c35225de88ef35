"""plot_common.py — what the figure scripts share: which runs a figure shows (the
completed runs of one launch), their data from the run database, line styles that keep
identical curves distinguishable, the same-architecture baseline of a variant, and the
caption (model, layout, host, launch). See analysis/README.md and docs/database.md.
"""
import json
import os
import sqlite3
import statistics
import sys

MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">"]
LINESTYLES = ["-", "--", "-.", ":"]
PHASES = ["forward", "backward", "recompute", "optimizer", "pipeline", "other"]


def die(prog, msg):
    sys.stderr.write(f"{prog}: {msg}\n")
    sys.exit(2)


def style(i):
    """Colour, marker and line style of the i-th variant (all three differ between neighbours)."""
    return dict(color=f"C{i % 10}", marker=MARKERS[i % len(MARKERS)], linestyle=LINESTYLES[i % len(LINESTYLES)])


def markevery(i, n_variants, n_points):
    """Markers of variant i on every k-th point, shifted by i: identical curves show each
    variant's own markers instead of hiding them under the next variant's."""
    k = max(n_variants, n_points // 12, 1)
    return (i % k, k)


def open_db(prog, path, experiment):
    if not os.path.exists(path):
        die(prog, f"no run database at {path} (run an experiment first: make exp EXP={experiment})")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    have = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    for t in ("runs", "steps", "launches"):
        if t not in have:
            die(prog, f"{path} has no table '{t}' (a database of an older build: open it once with "
                      f"build/exp or build/train to migrate it)")
    return con


def chosen_launch(prog, con, experiment, launch_id=None):
    """The launch a figure shows (a dict): launch_id, else the experiment's latest; None when
    the experiment has no launch (runs made by hand)."""
    if launch_id is not None:
        launch = con.execute("SELECT * FROM launches WHERE id = ?", (launch_id,)).fetchone()
        if launch is None:
            die(prog, f"no launch {launch_id} in the database")
        if launch["experiment"] != experiment:
            die(prog, f"launch {launch_id} is of experiment {launch['experiment']}, not {experiment}")
    else:
        launch = con.execute("SELECT * FROM launches WHERE experiment = ? ORDER BY id DESC LIMIT 1",
                             (experiment,)).fetchone()
    return dict(launch) if launch is not None else None


def select_runs(prog, con, experiment, launch_id=None):
    """The runs a figure shows: those of one launch (launch_id, else the experiment's
    latest), completed ones only; runs not completed are printed and left out. Without any
    launch (runs made by hand), the latest run of each variant. Returns (launch, runs):
    launch a dict or None; runs a list of dicts in the order they ran."""
    launch = chosen_launch(prog, con, experiment, launch_id)
    if launch is not None:
        rows = con.execute("SELECT * FROM runs WHERE launch_id = ? ORDER BY id", (launch["id"],)).fetchall()
    else:
        rows = con.execute(
            "SELECT * FROM runs r WHERE experiment = ? AND id = (SELECT id FROM runs r2 WHERE r2.experiment = r.experiment "
            "AND r2.variant = r.variant ORDER BY started_at DESC, id DESC LIMIT 1) ORDER BY id", (experiment,)).fetchall()
        if rows:
            print(f"{prog}: no launch of {experiment}: the latest run of each variant (made by hand; settings may differ)")
    if not rows:
        known = [r[0] for r in con.execute("SELECT DISTINCT experiment FROM runs ORDER BY experiment")]
        die(prog, f"no runs of experiment '{experiment}' (experiments there: {', '.join(known) or 'none'})")
    runs = []
    for r in rows:
        run = dict(r)
        if run["status"] != "completed":
            last = con.execute("SELECT MAX(step) FROM steps WHERE run_id = ?", (run["id"],)).fetchone()[0]
            print(f"{prog}: left out: run {run['id']} ({run['variant']}, repeat_index {run.get('repeat_index', 0)}) "
                  f"is {run['status']} at step {last or 0}")
            continue
        run["config"] = json.loads(run["config_json"]) if run.get("config_json") else {}
        runs.append(run)
    if not runs:
        die(prog, f"no completed run in {'launch ' + str(launch['id']) if launch else 'the latest runs'} of {experiment}")
    return launch, runs


def by_variant(runs):
    """{variant: [runs]} in order of first appearance."""
    out = {}
    for r in runs:
        out.setdefault(r["variant"], []).append(r)
    return out


def same_architecture_baseline(variants):
    """{variant: baseline variant or None}: the first earlier variant whose model section is
    the same (BOOST against Vanilla-TP, a checkpointing scheme against no checkpointing);
    None when no earlier variant has that model (the dense FullRank-TP beside low-rank ones)."""
    out = {}
    names = list(variants)
    for i, v in enumerate(names):
        model = variants[v][0]["config"].get("model")
        out[v] = next((u for u in names[:i] if variants[u][0]["config"].get("model") == model), None)
    return out


def without_partner(variants):
    """Variants whose model section no other variant shares (no loss parity to draw)."""
    models = [json_key(rs[0]["config"].get("model")) for rs in variants.values()]
    return [v for v, m in zip(variants, models) if models.count(m) == 1]


def json_key(obj):
    return json.dumps(obj, sort_keys=True)


def steps_of(con, run_id):
    return con.execute("SELECT step, tokens_seen, loss, step_seconds, tokens_per_s FROM steps WHERE run_id = ? ORDER BY step",
                       (run_id,)).fetchall()


def timed(steps):
    """The steps after warm-up (the first max(1, last_step // 10) are not timed)."""
    if len(steps) <= 1:
        return list(steps)
    warm = max(1, steps[-1]["step"] // 10)
    return [s for s in steps if s["step"] > warm]


def quantile(v, q):
    v = sorted(v)
    if not v:
        return float("nan")
    pos = q * (len(v) - 1)
    i = int(pos)
    return v[i] + (pos - i) * (v[i + 1] - v[i]) if i + 1 < len(v) else v[i]


def median_and_spread(per_run_values):
    """per_run_values: one list of per-step values per run. Median over the runs of each run's
    median; spread min..max of the run medians (several runs) or p10..p90 of the single run."""
    meds = [statistics.median(v) for v in per_run_values if v]
    if not meds:
        return float("nan"), float("nan"), float("nan")
    if len(meds) > 1:
        return statistics.median(meds), min(meds), max(meds)
    v = per_run_values[0]
    return meds[0], quantile(v, 0.1), quantile(v, 0.9)


def describe_model(cfg):
    m = cfg.get("model", {})
    kind = m.get("linear", "?")
    s = f"{kind} L{m.get('n_layers')} d{m.get('d_model')} h{m.get('n_heads')}/{m.get('n_kv_heads')} ff{m.get('d_ff')}"
    if kind != "dense":
        s += f" r{m.get('rank_attn')}/{m.get('rank_mlp')}"
    return s + f" V{m.get('vocab_size')} T{m.get('seq_len')}"


def describe_layout(run):
    return f"tp{run['tp']}×pp{run['pp']}×dp{run['dp']}"


def caption(experiment, launch, runs):
    """Model(s), layout(s), host and launch, for the bottom of a figure."""
    models = []
    for r in runs:
        d = describe_model(r["config"])
        if d not in models:
            models.append(d)
    layouts = []
    for r in runs:
        d = describe_layout(r)
        if d not in layouts:
            layouts.append(d)
    parts = [f"model: {'; '.join(models)}", f"layout: {', '.join(layouts)}",
             f"host: {runs[0].get('host')}, {runs[0].get('cpu_model') or '?'}"]
    if is_simulated(launch):
        parts[-1] = f"priced on {runs[0].get('host')}"
        parts.append(f"launch {launch['id']} of {experiment} v{launch.get('experiment_version') or '-'} "
                     f"({launch['started_at'][:16]}Z): SIMULATED on hardware profile {launch.get('hardware')}, nothing trained, "
                     f"git {(launch.get('git_commit') or '?')[:10]}")
    elif launch:
        parts.append(f"launch {launch['id']} of {experiment} v{launch.get('experiment_version') or '-'} "
                     f"({launch['started_at'][:16]}Z, REPEAT={launch['repeat']}, load {launch.get('load_avg_1m') or float('nan'):.2f}, "
                     f"sgemm peak {launch.get('peak_gflops') or float('nan'):.1f} GFLOP/s, git {(launch.get('git_commit') or '?')[:10]})")
    else:
        parts.append(f"{experiment}: latest run of each variant (no launch)")
    return " | ".join(parts)


def add_arguments(ap):
    ap.add_argument("experiment")
    ap.add_argument("--db", default="runs/boost.db")
    ap.add_argument("--out", default="analysis/figures")
    ap.add_argument("--launch", type=int, default=None, help="launch id (default: the experiment's latest launch)")


ALIAS_MAX = 20


def _fnv1a(s):
    h = 2166136261
    for b in s.encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def variant_alias(v):
    """A short, stable name for a long variant name, the same as src/store/compare.c
    variant_alias(): the name itself up to ALIAS_MAX characters; a grid name
    ("online_rmsnorm=false,linear=cola") as its keys' initials with the values
    ("or=false,l=cola") if that is short enough; else the first 15 characters and a hash."""
    if len(v) <= ALIAS_MAX:
        return v
    if "=" in v:
        a, at_key, word_start = "", True, True
        for ch in v:
            if ch == "=":
                at_key = False
                a += "="
            elif ch == ",":
                at_key, word_start = True, True
                a += ","
            elif not at_key:
                a += ch
            elif ch == ".":
                a = a[:a.rfind(",") + 1] if "," in a else ""
                word_start = True
            elif ch == "_":
                word_start = True
            elif word_start:
                a += ch
                word_start = False
        if len(a) <= ALIAS_MAX:
            return a
    return f"{v[:15]}~{_fnv1a(v) & 0xFFFF:04x}"


def alias_key(names):
    """'alias = full name' lines for the names that have an alias (empty list when none)."""
    return [f"{variant_alias(v)} = {v}" for v in names if variant_alias(v) != v]


def figure_path(out, experiment, launch, kind):
    """<out>/<experiment>_L<launch>_<kind>.png: every launch its own files, so a figure of one
    launch never replaces another's; runs made by hand (no launch): <experiment>_latest_<kind>.png."""
    tag = f"L{launch['id']}" if launch else "latest"
    return os.path.join(out, f"{experiment}_{tag}_{kind}.png")


def is_simulated(launch):
    return bool(launch) and launch.get("kind") == "simulated"


def trailing_mean(values, n):
    """The mean of each value and the n - 1 before it (None values skipped); n = 1: as is."""
    if n <= 1:
        return list(values)
    out = []
    for i in range(len(values)):
        w = [x for x in values[max(0, i - n + 1):i + 1] if x is not None]
        out.append(sum(w) / len(w) if w else None)
    return out


def footer(fig, experiment, launch, runs, names, width=170):
    """The caption and the key of the aliased variant names at the bottom of a figure,
    wrapped to the figure's width (nothing runs off the edge). Returns the fraction of the
    figure's height it takes, for tight_layout(rect=(0, that, 1, ...))."""
    import textwrap
    chars = int(width * fig.get_figwidth() / 17)   # about 10 characters per inch at 7 pt
    lines = textwrap.wrap(caption(experiment, launch, runs), chars)
    key = alias_key(names)
    if key:
        lines += textwrap.wrap("variants: " + "; ".join(key), chars)
    fig.text(0.01, 0.005, "\n".join(lines), fontsize=7, va="bottom", family="sans-serif")
    return min(0.3, (len(lines) * 7 * 1.35 + 8) / 72 / fig.get_figheight())
