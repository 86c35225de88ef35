#!/usr/bin/env python3
"""probe_options.py BUILD — `make probes`: probes generated from every tool's option table.

Each binary of src/tools/ that parses its options through config/options.h publishes its table
(BOOST_OPTIONS=list: name, kind, type, bounds, names, schema key) and, with BOOST_OPTIONS=values,
parses a command line and prints every option's value as the tool will use it, doing nothing
else. Every option is tried with the bounds of its range and of its type, values one past them,
overflow, NaN and infinities, text that is no value, a missing value, a value given twice, a
value after '=', a near-miss of its name; flags with a value. A new option is probed without a
line here. Outcomes as in probe_keys.py: clean (exit 2, the error names the tool and the
option), accepted (and read back as given at the option's type), silent (a value outside the
option's range or type accepted, or read back different), crash, hang, other.
The switch variables of the Makefile ($(call flag,NAME)) are tried with a value that is not
0 or 1 (make -n): refused naming the variable. Also from the file, not from a list here.
Prints one line per probe, "KIND<TAB>NAME<TAB>OUTCOME<TAB>DETAIL"; the counts on stderr.
PROBE_TOOLS="exp train" probes those tools' options only (and no make switch).
"""
import glob
import math
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import probe_values as pv
from probe_values import INT_LIMITS, emit

B = sys.argv[1]
TIMEOUT = int(os.environ.get("PROBE_TIMEOUT", "60"))


def run(args, mode):
    return pv.run(args, TIMEOUT, dict(os.environ, BOOST_OPTIONS=mode))


class Option(pv.Range):
    def __init__(self, tool, line, key_len):
        f = line.split("\t")
        self.tool, self.name, self.kind, self.type = tool, f[0][2:], f[1], f[2]
        self.lo, self.lo_excl = pv.parse_bound(f[3])
        self.hi, self.hi_excl = pv.parse_bound(f[4])
        self.names = f[5].split(",") if f[5] else []
        self.key = f[6] if len(f) > 6 else ""
        self.max_len = key_len.get(self.key, 0)

    def expected(self, text):
        """What BOOST_OPTIONS=values must print for text: a value at the type, None (refused),
        or ("either", text) for a schema key's string (its own checks decide; taken, as given)."""
        if self.type == "string":
            if self.max_len and len(text.encode()) > self.max_len: return None
            return ("either", text) if self.key else text
        v = self.value_of(text)
        return None if v == "?" else v

    def matches(self, want, got):
        if isinstance(want, tuple): return got == want[1]
        if self.type == "string": return got == want
        try:
            return self.same(want, got)
        except ValueError:
            return False


def check(opt, label, args, want):
    """Run the tool's parser on args (BOOST_OPTIONS=values); want: the option's value as it
    must be printed (None: it must be refused)."""
    rc, out, err = run([os.path.join(B, opt.tool)] + args, "values")
    name = f"{opt.tool} --{opt.name} {label}"
    e = next((l for l in err.splitlines() if l.startswith("error: ")), "")
    if rc is None: return emit("options", name, "hang", "")
    if rc > 128 or rc < 0: return emit("options", name, "crash", f"signal {abs(rc) % 128}: {err[-200:]}")
    if rc == 0:
        if want is None: return emit("options", name, "silent", f"accepted {args!r}")
        got = next((l.split("\t", 1)[1] for l in out.splitlines() if l.startswith(f"--{opt.name}\t")), None)
        if got is None: return emit("options", name, "other", "no value printed")
        if opt.kind == "list" and not isinstance(want, tuple) and isinstance(want, str) and "\x1f" in want:
            ok = got == want
        else:
            ok = opt.matches(want, got.split("\x1f")[-1] if opt.kind == "list" else got)
        return emit("options", name, "accepted" if ok else "silent", "" if ok else f"given {args!r}, used {got!r}")
    either = isinstance(want, tuple)
    if rc == 2 and want is not None and not either: return emit("options", name, "other", f"a valid value refused: {e}")
    if rc == 2 and (f"{opt.tool} --{opt.name}" in e or f"{opt.tool}: unknown option" in e): return emit("options", name, "clean", e)
    return emit("options", name, "other", f"exit {rc}: {e or err[-200:]}")


def probe_option(opt):
    dash = f"--{opt.name}"
    if opt.kind == "flag":
        check(opt, "given", [dash], "1")
        check(opt, "twice", [dash, dash], "1")
        check(opt, "with_a_value", [dash + "=1"], None)
        return
    if opt.kind == "flag_or_value":
        check(opt, "bare", [dash], "")
        check(opt, "with_a_value", [dash + "=abc"], "abc")
        check(opt, "empty_value", [dash + "="], None)
        check(opt, "twice", [dash, dash], None)
        return
    values = []
    t = opt.type
    if t in INT_LIMITS:
        lo, hi = opt.int_range()
        tlo, thi = INT_LIMITS[t]
        values += [("lo", str(lo)), ("hi", str(hi)), ("lo_minus_1", str(lo - 1)), ("hi_plus_1", str(hi + 1)),
                   ("type_max_plus_1", str(thi + 1)), ("type_min_minus_1", str(tlo - 1)), ("past_2_64", "99999999999999999999"),
                   ("fraction", "1.5"), ("float_integer", f"{lo}e0" if lo >= 0 else "1e0"), ("hex", "0x10")]
    elif t in ("fp32", "fp64"):
        for side, b, excl in [("lo", opt.lo, opt.lo_excl), ("hi", opt.hi, opt.hi_excl)]:
            if b is None: continue
            values += [(side, repr(b)), (f"{side}_outside", repr(math.nextafter(b, -math.inf if side == "lo" else math.inf)))]
        values += [("past_double", "1e400"), ("rounds_to_0", "1e-400"), ("subnormal", "1e-310"), ("tenth", "0.1")]
    elif t == "enum":
        values += [(f"name_{n}", n) for n in opt.names] + [("unknown", "x")]
    elif t == "string":
        values += [("empty", ""), ("non_ascii", "caf\u00e9"), ("long", "a" * 5000)]
        if opt.max_len: values += [("at_max_len", "a" * opt.max_len), ("past_max_len", "a" * (opt.max_len + 1))]
    if t != "string":
        values += [("word", "abc"), ("empty", ""), ("nan", "nan"), (".nan", ".nan"), ("inf", ".inf"), ("minus_inf", "-.inf"),
                   ("hex_float", "0x1p-10"), ("non_ascii", "\u00e9")]
    for label, text in values:
        want = opt.expected(text)
        if opt.kind == "list":
            check(opt, label, [dash, text], None if want is None else want)
        else:
            check(opt, label, [dash, text], want)
    good = next(((l, x) for l, x in values if opt.expected(x) is not None), None)
    if good:
        check(opt, "after_equals", [f"{dash}={good[1]}"], opt.expected(good[1]))
        if opt.kind == "list":
            check(opt, "twice", [dash, good[1], dash, good[1]], f"{good[1]}\x1f{good[1]}")
        else:
            check(opt, "twice", [dash, good[1], dash, good[1]], None)
    check(opt, "missing_value", [dash], None)
    check(opt, "near_miss_name", [dash + "x", good[1] if good else "1"], None)


def makefile_switches():
    """make's switch variables: a value other than 0 or 1 stops make naming the variable."""
    text = open("Makefile").read()
    for var in sorted(set(re.findall(r"\$\(call flag,(\w+)\)", text))):
        # the target whose recipe uses it: the nearest "name:" line above its first use
        head = text[:text.index(f"$(call flag,{var})")]
        target = re.findall(r"(?m)^([a-z][\w-]*):", head)[-1]
        try:
            p = subprocess.run(["make", "-n", "--no-print-directory", target, f"{var}=yes", "EXP=quickstart"],
                               capture_output=True, text=True, timeout=TIMEOUT)
            rc, err = p.returncode, p.stderr
        except subprocess.TimeoutExpired:
            emit("make_vars", f"make {target} {var}=yes", "hang", "")
            continue
        name = f"make {target} {var}=yes"
        if rc == 2 and f"{var}=yes: expected 1 or 0" in err: emit("make_vars", name, "clean", err.strip().splitlines()[-1])
        elif rc == 0: emit("make_vars", name, "silent", "the value was ignored")
        else: emit("make_vars", name, "other", f"exit {rc}: {err[-200:]}")


def main():
    rc, out, _ = pv.run([os.path.join(B, "info"), "--keys-tsv"], TIMEOUT)
    key_len = {l.split("\t")[0]: int(l.split("\t")[7]) for l in out.splitlines() if l.strip()}
    tools = sorted(os.path.basename(p)[:-2] for p in glob.glob("src/tools/*.c"))
    only = os.environ.get("PROBE_TOOLS", "").split()   # PROBE_TOOLS="exp train": those tools only, no make switches
    if only: tools = [t for t in tools if t in only]
    n_opts, covered, uncovered = 0, [], []
    for tool in tools:
        path = os.path.join(B, tool)
        if not os.access(path, os.X_OK):
            emit("options", f"{tool} (binary)", "other", f"{path} not built")
            continue
        rc, out, err = run([path, "--help"], "list")
        rows = [l for l in out.splitlines() if l.startswith("--") and l.count("\t") >= 5]
        if rc != 0 or not rows:
            uncovered.append(tool)
            continue
        covered.append(tool)
        for line in rows:
            probe_option(Option(tool, line, key_len))
            n_opts += 1
    n_before = pv.n_probes
    if not only: makefile_switches()
    print(f"probe_options: {n_opts} options of {len(covered)} tools, {n_before} probes; {pv.n_probes - n_before} make switch "
          f"variables" + (f"; no option table (not probed): {', '.join(uncovered)}" if uncovered else ""), file=sys.stderr)


main()
