"""reproduce_provenance.py — the provenance rule of analysis/reproduction/paper_numbers.yaml: one
source class per value, each checked against the team's notes (../shared/paper-notes.md, the
table "Where each number of this section comes from").

    /usr/bin/python3 analysis/reproduce_provenance.py [--probe N]

Rules (check()):
  1. every value has one class of CLASSES;
  2. a value of the paper's own classes (paper-text, paper-table, paper-figure, paper-abstract)
     names its location in `source` (a figure, a table, a section or the abstract);
  3. a value computed here (computed-here) says what from (`from`) and never carries a paper
     class; a value with a `from` is computed here;
  4. a value read off a figure (paper-figure, or a figure of the authors' README) is approx;
  5. each id's class is the one the notes' source table gives its group (NOTES_RULES), and the
     notes still carry the row the rule transcribes (when ../shared/paper-notes.md is there).
--probe N: the rule on N generated hostile edits of the real file (a paper class without its
location, a computed value with a paper class, a value moved to another class than the notes
give): each must be refused (the test of the rule, tests/t_sim.sh).
"""
import copy
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import yaml12  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILE = os.path.join(ROOT, "analysis/reproduction/paper_numbers.yaml")
NOTES = os.path.join(ROOT, "..", "shared", "paper-notes.md")
PAPER = ("paper-text", "paper-table", "paper-figure", "paper-abstract")
CLASSES = PAPER + ("authors-readme", "authors-code", "reading-notes", "computed-here")
LOCATION = re.compile(r"\b(Fig\.|Tab\.|Table|Sec\.|abstract)", re.I)

# The notes' table "Where each number of this section comes from", row by row: (ids, class, the
# words of the notes' row that say it). The first rule whose pattern matches an id decides.
NOTES_RULES = [
    (r"^abstract\.", "paper-abstract", "abstract ranges"),
    (r"^fig5\.30b\.", "reading-notes", "Fig. 5 left 30B row"),
    (r"^fig5\.(1b|3b|7b|13b)\.", "authors-readme", "Fig. 5 left 1B–13B"),
    (r"^fig5r\.", "reading-notes", "Fig. 5 right"),
    (r"^fig6\.", "authors-readme", "Fig. 6 (utilisation and GEMM times)"),
    (r"^fig7\.boost_below_fullrank_max$", "reading-notes", "\"up to 8 % below FullRank-TP\""),
    (r"^fig7\.", "authors-readme", "Fig. 7 (volumes, times, 5.3×)"),
    (r"^tab2\.mb1\.", "authors-readme", "Tab. 2 micro-batch-1 row"),
    (r"^tab2\.mb4\.", "reading-notes", "Tab. 2 micro-batch-4 row"),
    (r"^tab3\.", "reading-notes", "Tab. 3"),
    (r"^rmsnorm\.", "authors-readme", "online-RMSNorm op times"),
    (r"^fig1\.", "authors-readme", "Fig. 1 breakdown"),
    (r"^fig3\.", "authors-readme", "Fig. 3's 4× per collective"),
    (r"^comm\.ratio\.dp_gradient_bytes$", "reading-notes", "\"≈2.5× less DP traffic\""),
    (r"^comm\.ratio\.", "computed-here", "communication ratios (8/7, 5.9×)"),
    (r"^params\.ratio\.", "computed-here", "parameter ratios"),
    (r"^ai\.ratio\.", "reading-notes", None),   # the project's review gives it; the notes do not (the file says so)
]


def notes_class(nid):
    for pat, cls, words in NOTES_RULES:
        if re.search(pat, nid):
            return cls, words
    return None, None


def check(doc, notes_text=None):
    """The list of problems of a paper_numbers document (empty: it follows the rule)."""
    bad = []
    blocks = [("setup", doc.get("setup", {})), ("cluster", doc.get("cluster", {}))]
    blocks += [(f"configurations[{c.get('size')}]", c) for c in doc.get("configurations", [])]
    for where, b in blocks:
        if b.get("provenance") in PAPER:
            bad.append(f"{where}: the notes give the setup and configurations from the authors' code and README and "
                       f"the reading notes, not the paper ({b.get('provenance')})")
        if b.get("provenance") not in CLASSES:
            bad.append(f"{where}: provenance {b.get('provenance')!r} is not one of {', '.join(CLASSES)}")
    seen = set()
    for n in doc.get("numbers", []):
        nid, prov = n.get("id"), n.get("provenance")
        if nid in seen:
            bad.append(f"{nid}: listed twice")
        seen.add(nid)
        if prov not in CLASSES:
            bad.append(f"{nid}: provenance {prov!r} is not one of {', '.join(CLASSES)}")
            continue
        if prov in PAPER and not LOCATION.search(str(n.get("source", ""))):
            bad.append(f"{nid}: tagged {prov} but its source {n.get('source')!r} names no location (figure, table, section, abstract)")
        if prov == "computed-here" and not n.get("from"):
            bad.append(f"{nid}: computed here but no `from` says what from")
        if n.get("from") and prov != "computed-here":
            bad.append(f"{nid}: computed here (`from` {n.get('from')!r}) but tagged {prov}")
        if prov == "paper-figure" and not n.get("approx"):
            bad.append(f"{nid}: read off a figure but not approx: true")
        want, words = notes_class(nid)
        if want is None:
            bad.append(f"{nid}: no row of the notes' source table covers it (NOTES_RULES)")
        elif prov != want:
            bad.append(f"{nid}: tagged {prov}, the notes give its group ({words or 'not in the notes'}) as {want}")
        if notes_text is not None and words and words.split(" (")[0].strip('"') not in notes_text.replace("—", "–"):
            bad.append(f"{nid}: the notes no longer have the row {words!r} this rule transcribes")
    return bad


def hostile(doc, rng):
    """One generated edit that the rule must refuse, and what it is."""
    d = copy.deepcopy(doc)
    nums = d["numbers"]
    kind = rng.randrange(4)
    if kind == 0:   # a paper class without a location
        n = rng.choice(nums)
        n["provenance"], n["source"] = rng.choice(PAPER), rng.choice(["", "the paper", "reading notes", "README"])
        n["approx"] = True
        return d, f"{n['id']}: a paper class with no location"
    if kind == 1:   # a computed value shown as the paper's
        n = rng.choice([x for x in nums if x["provenance"] == "computed-here"])
        n["provenance"] = rng.choice(PAPER)
        return d, f"{n['id']}: computed here, tagged as the paper's"
    if kind == 2:   # a value moved to another class than the notes give (with a location, so only rule 5 can see it)
        n = rng.choice([x for x in nums if x["provenance"] != "computed-here"])
        n["provenance"] = rng.choice([c for c in CLASSES if c not in (n["provenance"], "computed-here")])
        n["source"] = "Fig. 9 (invented)"
        n["approx"] = True
        return d, f"{n['id']}: moved to {n['provenance']}"
    n = rng.choice(nums)   # a value given a `from` (computed) while tagged otherwise
    if n["provenance"] == "computed-here":
        n["provenance"] = "reading-notes"
    else:
        n["from"] = "a ratio of two other values"
    return d, f"{n['id']}: a computed value under another class"


def probes(k, seed, edit, problems_of):
    """k generated hostile edits, edit(rng) -> (edited input, what it is), each of which
    problems_of(edited input) must refuse (a non-empty list): the ones it did not refuse, each
    printed. Shared by the rules of the report's inputs (here and reproduce_published.py)."""
    rng = random.Random(seed)
    missed = []
    for _ in range(k):
        d, what = edit(rng)
        if not problems_of(d):
            missed.append(what)
    for w in missed:
        print(f"probe not refused: {w}")
    return missed


def main():
    with open(FILE) as fh:
        doc = yaml12.load(fh)
    notes = None
    if os.path.exists(NOTES):
        with open(NOTES) as fh:
            notes = fh.read()
    bad = check(doc, notes)
    for b in bad:
        print(f"{os.path.relpath(FILE, ROOT)}: {b}")
    if "--probe" in sys.argv:
        k = int(sys.argv[sys.argv.index("--probe") + 1])
        missed = probes(k, 33, lambda rng: hostile(doc, rng), lambda d: check(d, notes))
        bad += missed
        print(f"provenance: {k} generated hostile edits, {k - len(missed)} refused")
    print(f"provenance: {'OK' if not bad else f'{len(bad)} problem(s)'} ({len(doc['numbers'])} values; notes "
          f"{'checked' if notes is not None else 'not found: ../shared/paper-notes.md'})")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
