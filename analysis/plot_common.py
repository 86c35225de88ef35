"""plot_common.py — what the figure scripts share: which runs a figure shows (the
completed runs of one launch), their data from the run database, line styles that keep
identical curves distinguishable, the same-architecture baseline of a variant, and the
caption (model, layout, host, launch). See analysis/README.md and docs/database.md.
"""
import json
import math
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
    """The run database, read-only; exit 2 naming the file when it is missing, not a file, or
    not an SQLite database (a text file, a folder), or lacks the tables."""
    if not os.path.exists(path):
        die(prog, f"no run database at {path} (run an experiment first: make exp EXP={experiment or 'quickstart'})")
    if not os.path.isfile(path):
        die(prog, f"{path} is not a file; DB= names a run database (runs/boost.db)")
    with open(path, "rb") as f:
        head = f.read(16)
    if head != b"SQLite format 3\0":
        die(prog, f"{path} is not an SQLite database (its first bytes are {head[:16]!r}); DB= names a run database "
                  f"(runs/boost.db)")
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        con.row_factory = sqlite3.Row
        have = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    except sqlite3.Error as e:
        die(prog, f"{path}: cannot read it as a run database: {e}")
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
        if experiment is not None and launch["experiment"] != experiment:
            die(prog, f"launch {launch_id} is of experiment {launch['experiment']}, not {experiment}")
    else:
        if experiment is None:
            die(prog, "name an experiment (make figures EXP=name), a launch (LAUNCH=id) or runs (RUNS=\"7 9\")")
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
    runs = completed(prog, con, rows)
    if not runs:
        die(prog, f"no completed run in {'launch ' + str(launch['id']) if launch else 'the latest runs'} of {experiment}")
    return launch, runs


def distinct(values):
    """The values in order, each once."""
    return list(dict.fromkeys(values))


class Selection:
    """What a figure shows. launches: the launches drawn (dicts; empty for runs made by hand
    or named one by one); runs: their completed runs (dicts, config parsed); groups: {label:
    [runs]} in order — one label per variant (its alias) for one launch, "L<id> <alias>" for
    several launches, "r<id> <alias>" for runs named one by one (each run its own group);
    tag: the part of the file names that says what was drawn (L5, L2+3, R7+9, latest)."""

    def __init__(self, experiment, launches, runs, mode):
        self.experiment, self.launches, self.runs, self.mode = experiment, launches, runs, mode
        self.launch = launches[0] if len(launches) == 1 else None
        self.groups = {}
        for r in runs:
            alias = variant_alias(r["variant"])
            label = {"launches": f"L{r['launch_id']} {alias}", "runs": f"r{r['id']} {alias}"}.get(mode, alias)
            self.groups.setdefault(label, []).append(r)
        if mode == "runs":
            self.tag = "R" + "+".join(str(r["id"]) for r in runs)
        elif launches:
            self.tag = "L" + "+".join(str(l["id"]) for l in launches)
        else:
            self.tag = "latest"

    def variants(self):
        """The full variant names drawn, in order (the footer's key of aliases)."""
        return distinct(r["variant"] for r in self.runs)

    def title(self):
        if self.mode == "runs":
            return f"{self.experiment}: runs {', '.join(str(r['id']) for r in self.runs)}"
        if self.launches:
            return f"{self.experiment}: launch{'es' if len(self.launches) > 1 else ''} " + ", ".join(str(l["id"]) for l in self.launches)
        return f"{self.experiment}: latest run of each variant"


def completed(prog, con, rows):
    """The completed runs of rows (dicts, config parsed); the others printed as left out."""
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
    return runs


def select(prog, con, args, simulated=None):
    """The Selection of a figure script's arguments: --run ids, else --launch ids (one or
    several), else the experiment's latest launch. simulated: None any launch; False or True
    only launches of that kind (the others are printed as left out; none left: exit 2)."""
    if args.run:
        rows = []
        for rid in args.run:
            r = con.execute("SELECT * FROM runs WHERE id = ?", (rid,)).fetchone()
            if r is None:
                die(prog, f"no run {rid} in the database")
            rows.append(r)
        runs = completed(prog, con, rows)
        if not runs:
            die(prog, f"none of runs {', '.join(map(str, args.run))} is completed")
        return Selection("+".join(distinct(r["experiment"] for r in runs)), [], runs, "runs")
    if args.launch and len(args.launch) > 1:
        launches, seen = [], set()
        for lid in args.launch:
            if lid not in seen:
                seen.add(lid)
                launches.append(chosen_launch(prog, con, args.experiment, lid))
        if simulated is not None:
            kept = [l for l in launches if is_simulated(l) == simulated]
            for l in launches:
                if l not in kept:
                    print(f"{prog}: left out: launch {l['id']} is {'simulated' if is_simulated(l) else 'trained'}")
            if not kept:
                die(prog, f"none of launches {', '.join(str(l['id']) for l in launches)} is "
                          f"{'simulated' if simulated else 'trained'}")
            launches = kept
        runs = []
        for l in launches:
            runs += completed(prog, con, con.execute("SELECT * FROM runs WHERE launch_id = ? ORDER BY id", (l["id"],)).fetchall())
        if not runs:
            die(prog, f"no completed run in launches {', '.join(str(l['id']) for l in launches)}")
        return Selection("+".join(distinct(l["experiment"] for l in launches)), launches, runs, "launches")
    launch, runs = select_runs(prog, con, args.experiment, args.launch[0] if args.launch else None)
    experiment = launch["experiment"] if launch else args.experiment
    return Selection(experiment, [launch] if launch else [], runs, "launch")


def by_variant(runs):
    """{variant: [runs]} in order of first appearance."""
    out = {}
    for r in runs:
        out.setdefault(r["variant"], []).append(r)
    return out


def same_architecture_baseline(variants):
    """{variant: baseline variant or None}: the first earlier variant of the same launch whose
    model section is the same (BOOST against Vanilla-TP, a checkpointing scheme against no
    checkpointing); None when no earlier variant has that model (the dense FullRank-TP beside
    low-rank ones). variants: {label: [runs]} (Selection.groups)."""
    out = {}
    names = list(variants)
    for i, v in enumerate(names):
        r = variants[v][0]
        out[v] = next((u for u in names[:i] if variants[u][0]["config"].get("model") == r["config"].get("model")
                       and variants[u][0].get("launch_id") == r.get("launch_id")), None)
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


def describe_launch(launch):
    if is_simulated(launch):
        return (f"launch {launch['id']} of {launch['experiment']} v{launch.get('experiment_version') or '-'} "
                f"({launch['started_at'][:16]}Z): SIMULATED on hardware profile {launch.get('hardware')}, nothing trained, "
                f"git {(launch.get('git_commit') or '?')[:10]}")
    return (f"launch {launch['id']} of {launch['experiment']} v{launch.get('experiment_version') or '-'} "
            f"({launch['started_at'][:16]}Z, REPEAT={launch['repeat']}, load {launch.get('load_avg_1m') or float('nan'):.2f}, "
            f"sgemm peak {launch.get('peak_gflops') or float('nan'):.1f} GFLOP/s, git {(launch.get('git_commit') or '?')[:10]})")


def caption(sel):
    """Model(s), layout(s), host(s) and launch(es), for the bottom of a figure."""
    models = distinct(describe_model(r["config"]) for r in sel.runs)
    layouts = distinct(describe_layout(r) for r in sel.runs)
    hosts = distinct(f"{r.get('host')}, {r.get('cpu_model') or '?'}" for r in sel.runs)
    parts = [f"model: {'; '.join(models)}", f"layout: {', '.join(layouts)}"]
    if sel.launches and all(is_simulated(l) for l in sel.launches):
        parts.append(f"priced on {sel.runs[0].get('host')}")
    else:
        parts.append(f"host: {'; '.join(hosts)}")
    if sel.mode == "runs":
        parts.append("runs " + ", ".join(f"{r['id']} (launch {r.get('launch_id') or '-'}, {r['started_at'][:16]}Z)" for r in sel.runs))
    elif sel.launches:
        parts += [describe_launch(l) for l in sel.launches]
    else:
        parts.append(f"{sel.experiment}: latest run of each variant (no launch)")
    return " | ".join(parts)


def add_arguments(ap):
    ap.add_argument("experiment", nargs="?", default=None,
                    help="the experiment (may be left out with --launch or --run: theirs)")
    ap.add_argument("--db", default="runs/boost.db")
    ap.add_argument("--out", default="analysis/figures")
    ap.add_argument("--launch", type=int, nargs="+", action="extend", default=None,
                    help="launch id(s) (default: the experiment's latest launch); several are drawn together")
    ap.add_argument("--run", type=int, nargs="+", action="extend", default=None,
                    help="run id(s) drawn together, each its own curve or bar (make figures RUNS=\"7 9\")")


def check_out(prog, out):
    """Before anything is read: exit 2 when the figure folder is a file (FIG_DIR=)."""
    if os.path.exists(out) and not os.path.isdir(out):
        die(prog, f"{out} is a file, not a folder; FIG_DIR= names the folder the figures go to (analysis/figures)")


def save(prog, fig, path, dpi, extra=None):
    """The figure into path (its folder created; exit 2 when it cannot be), and its sidecar."""
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        fig.savefig(path, dpi=dpi)
    except OSError as e:
        die(prog, f"cannot write {path}: {e.strerror}; FIG_DIR= names a writable folder")
    describe(fig, path, extra)


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


def figure_path(out, sel, kind):
    """<out>/<experiment>_<tag>_<kind>.png, tag L<launch> (L2+3 for several launches, R7+9 for
    runs named one by one): every launch its own files, so a figure of one launch never
    replaces another's; runs made by hand (no launch): <experiment>_latest_<kind>.png."""
    return os.path.join(out, f"{sel.experiment}_{sel.tag}_{kind}.png")


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


def footer(fig, sel, width=170):
    """The caption and the key of the aliased variant names at the bottom of a figure,
    wrapped to the figure's width (nothing runs off the edge). Returns the fraction of the
    figure's height it takes, for tight_layout(rect=(0, that, 1, ...))."""
    import textwrap
    chars = int(width * fig.get_figwidth() / 17)   # about 10 characters per inch at 7 pt
    lines = textwrap.wrap(caption(sel), chars)
    key = alias_key(sel.variants())
    if key:
        lines += textwrap.wrap("variants: " + "; ".join(key), chars)
    fig.text(0.01, 0.005, "\n".join(lines), fontsize=7, va="bottom", family="sans-serif")
    return min(0.3, (len(lines) * 7 * 1.35 + 8) / 72 / fig.get_figheight())


# ---- drawing helpers ------------------------------------------------------------------------
def legend(ax, **kw):
    """A legend only where something is labelled (matplotlib warns on an empty one)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(**kw)


def variant_ticks(ax, x, labels, fontsize=9):
    """Variant names under bars, readable at any count: horizontal when the widest fits the
    spacing between ticks, else upright at the largest font (down to 6 pt) whose line fits
    it; below that, numbers under the bars and their names in a key inside the panel. The
    widths are the renderer's own, with a fifth to spare for the layout's later squeeze."""
    fig = ax.get_figure()
    r = fig.canvas.get_renderer()
    spacing = ax.get_window_extent(r).width / max(1, len(labels))

    def widest(rotation, size):
        ax.set_xticks(x, labels, fontsize=size, rotation=rotation, ha="center")
        return max([t.get_window_extent(r).width for t in ax.get_xticklabels()] or [0.0])

    if widest(0, fontsize) <= 0.8 * spacing:
        return
    for size in sorted({fontsize, 8, 7, 6}, reverse=True):
        if size <= fontsize and widest(90, size) <= 0.8 * spacing:
            return
    numbers = [str(i + 1) for i in range(len(labels))]
    ax.set_xticks(x, numbers, fontsize=6, rotation=90, ha="center")
    line = max(t.get_window_extent(r).width for t in ax.get_xticklabels())
    k = max(1, math.ceil(line / (0.8 * spacing)))   # every k-th bar numbered, so the numbers never touch
    ax.set_xticks(x[::k], numbers[::k], fontsize=6, rotation=90, ha="center")
    rows = max(1, int(ax.get_window_extent(r).height / (6 * fig.dpi / 72)) - 1)
    key = [f"{i + 1} = {t}" for i, t in enumerate(labels)]
    wide = max(len(e) for e in key)
    lines = ["  ".join(key[j].ljust(wide) for j in range(i, len(key), rows)) for i in range(min(rows, len(key)))]
    ax.text(0.99, 0.99, "\n".join(lines), transform=ax.transAxes, ha="right", va="top", ma="left", fontsize=5,
            family="monospace", bbox=dict(fc="white", ec="0.8", alpha=0.85, pad=1.5))


def scale_groups(values, factor=10.0):
    """Indices of values grouped by scale: sorted, split wherever the next is more than
    `factor` times the one before (a tiny model beside a 7B one), each group in the original
    order, the groups in the order of their first member. Zeros and NaN join the smallest."""
    pos = lambda v: v if v == v and v > 0 else 0.0   # noqa: E731
    groups, prev = [], 0.0
    for i in sorted(range(len(values)), key=lambda i: pos(values[i])):
        v = pos(values[i])
        if not groups or (prev > 0 and v > factor * prev):
            groups.append([])
        groups[-1].append(i)
        prev = v or prev
    return sorted((sorted(g) for g in groups), key=lambda g: g[0])


def scaled_panels(fig, spec, values, factor=10.0):
    """One panel per scale group of `values` (scale_groups) side by side in the subplot spec,
    widths in proportion to their bar counts: each keeps its own linear axis, so the small
    bars stay visible. Returns [(axes, indices)]."""
    groups = scale_groups(values, factor)
    if len(groups) == 1:
        return [(fig.add_subplot(spec), groups[0])]
    sub = spec.subgridspec(1, len(groups), width_ratios=[len(g) + 0.6 for g in groups], wspace=0.35)
    return [(fig.add_subplot(sub[0, k]), g) for k, g in enumerate(groups)]


def scale_note(ax, runs, n_all):
    """Under a panel that holds some of the variants (scaled_panels), as its x label, which
    model shapes they are ("models L4 d128"), so that panels of different scales say what
    they show."""
    if len(runs) == n_all:
        return
    shapes = []
    for r in runs:
        m = r["config"].get("model", {})
        s = f"L{m.get('n_layers')} d{m.get('d_model')}"
        if s not in shapes:
            shapes.append(s)
    ax.set_xlabel("models " + ", ".join(shapes), fontsize=8, color="0.3")


def describe(fig, png, extra=None):
    """The JSON sidecar of a figure (<png without .png>.json): per panel its title, axis labels
    and scale, tick labels and what it drew (bars, lines with data, texts), and whether it is
    empty; what tests and readers check without looking at pixels."""
    panels = []
    for ax in fig.get_axes():
        if not ax.get_visible():
            continue
        bars = [p for p in ax.patches if getattr(p, "get_height", None) and p.get_height() not in (0, None)]
        lines = [l for l in ax.get_lines() if len(l.get_xdata()) > 0 and l.get_visible()]
        texts = [t.get_text() for t in ax.texts if t.get_text().strip()]
        drawn = len(bars) + len(lines) + len(ax.collections) + len(ax.images)
        panels.append(dict(title=ax.get_title(), xlabel=ax.get_xlabel(), ylabel=ax.get_ylabel(), yscale=ax.get_yscale(),
                           axis=ax.axison, xticklabels=[t.get_text() for t in ax.get_xticklabels()],
                           bars=len(bars), lines=len(lines), collections=len(ax.collections), texts=texts,
                           legend=[t.get_text() for t in ax.get_legend().get_texts()] if ax.get_legend() else [],
                           empty=drawn == 0 and not texts))
    out = dict(figure=os.path.basename(png), panels=panels)
    if extra:
        out.update(extra)
    with open(png[:-4] + ".json", "w") as f:
        json.dump(out, f, indent=1)
