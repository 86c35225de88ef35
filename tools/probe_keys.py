#!/usr/bin/env python3
"""probe_keys.py BUILD TMPDIR — `make probes`: probes generated from the configuration schema.

Every key of `build/info --keys-tsv` (its type of use, bounds, names, default, longest string)
is tried through the parser build/train uses (build/info --set KEY=VALUE --json, and manifests
through build/info --config): the bounds of its range and of its type, values one past them,
values that round onto a bound or to 0 at the type it is used at, overflow past 2^64 and past
any double, NaN and infinities, text that is no value, and the key given twice in one mapping
in every spelling (dotted, nested, through a merge key; in a file and in a variant). A new key
is probed without a line here.

Outcomes, as tools/probe.sh classifies them:
  clean     refused with exit 2 and an error naming the key (or, for a value that is valid on
            its own, a cross-key rule of config_finalize naming its keys)
  accepted  a valid value taken, and read back as given at the key's type
  silent    a value outside the key's range or type accepted, or a value read back different
            from the one given, correctly rounded to the key's type (the value used is not the
            value written)
  crash, hang, other as in probe.sh
Prints one line per probe, "KIND<TAB>NAME<TAB>OUTCOME<TAB>DETAIL", and on stderr the counts.
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import probe_values as pv
from probe_values import F32_MAX, F32_MIN_NORMAL, INT_LIMITS, emit, f32, f32_next

B, TMP = sys.argv[1], sys.argv[2]
TIMEOUT = int(os.environ.get("PROBE_TIMEOUT", "60"))
INFO = os.path.join(B, "info")
os.makedirs(TMP, exist_ok=True)


def run(args):
    rc, out, err = pv.run(args, TIMEOUT)
    return rc, out + err


class Key(pv.Range):
    def __init__(self, line):
        f = line.rstrip("\n").split("\t")
        self.name, self.type = f[0], f[1]
        self.lo, self.lo_excl = pv.parse_bound(f[2])
        self.hi, self.hi_excl = pv.parse_bound(f[3])
        self.names = f[4].split(",") if f[4] else []
        self.default, self.change, self.max_len, self.accepted = f[5], f[6], int(f[7]), f[8]
        self.section, self.leaf = self.name.split(".", 1)


def read_back(key, out):
    """The key's value in build/info's JSON (the resolved configuration)."""
    for line in out.splitlines():
        if line.startswith("{"):
            return json.loads(line)[key.section][key.leaf]
    raise ValueError("no JSON in the output")


def probe_value(key, label, text):
    """One value of one key through --set; classified against the value it must take."""
    want = key.value_of(text)
    rc, out = run([INFO, "--set", f"{key.name}={text}", "--json"])
    name = f"{key.name}={label}"
    if rc is None: return emit("keys", name, "hang", f"no answer in {TIMEOUT}s")
    if rc > 128 or rc < 0: return emit("keys", name, "crash", f"signal {abs(rc) % 128}: {out[-200:]}")
    err = next((l for l in out.splitlines() if l.startswith("error: ")), "")
    if rc == 0:
        if want is None: return emit("keys", name, "silent", f"accepted a value outside {key.accepted}: {text!r}")
        try:
            got = read_back(key, out)
        except (ValueError, KeyError) as e:
            return emit("keys", name, "other", f"accepted, no value to read back: {e}")
        if want == "?":   # a string: taken as written (YAML quotes removed)
            ok = got == text or (text[:1] in "'\"" and got == text[1:-1])
        else:
            ok = key.same(want, got if key.type in ("bool", "enum", "string") else str(got))
        return emit("keys", name, "accepted" if ok else "silent",
                    "" if ok else f"given {text!r}, used {got!r} (at {key.type}: {want!r})")
    if rc == 2 and err:
        if key.name in err: return emit("keys", name, "clean", err)
        if want is not None: return emit("keys", name, "clean", f"(cross-key rule) {err}")
        return emit("keys", name, "other", f"refused without naming {key.name}: {err}")
    return emit("keys", name, "other", f"exit {rc}: {out[-200:]}")


def values_of(key):
    """The generated values of one key: (label, text)."""
    t, v = key.type, []
    nonvalues = [("empty_quoted", '""'), ("word", "abc"), ("nan", ".nan"), ("inf", ".inf"), ("minus_inf", "-.inf"),
                 ("nan_word", "nan"), ("inf_word", "inf"), ("hex_float", "0x1p-10"), ("past_2_64", "99999999999999999999"),
                 ("minus_past_2_64", "-99999999999999999999"), ("past_double", "1e400"), ("below_double", "1e-400"),
                 ("non_ascii", "\u00e9"), ("control", "a\tb")]
    if t in INT_LIMITS:
        lo, hi = key.int_range()
        tlo, thi = INT_LIMITS[t]
        for lab, x in [("lo", lo), ("hi", hi), ("lo_minus_1", lo - 1), ("hi_plus_1", hi + 1), ("type_max", thi),
                       ("type_max_plus_1", thi + 1), ("type_min", tlo), ("type_min_minus_1", tlo - 1)]:
            v.append((lab, str(x)))
        v += [("fraction", "2.5"), ("float_integer", "2e1"), ("float_almost_integer", "2.0000000001e1"), ("hex", "0x10"),
              ("underscores", "1_0"), ("minus_zero", "-0")]
    elif t in ("fp32", "fp64"):
        f = t == "fp32"
        for side, b, excl in [("lo", key.lo, key.lo_excl), ("hi", key.hi, key.hi_excl)]:
            if b is None: continue
            v.append((side, repr(b)))
            toward = -math.inf if side == "hi" else math.inf
            inside = math.nextafter(b, toward)
            v.append((f"{side}_nearest_double_inside", repr(inside)))          # rounds onto b in fp32
            if f: v.append((f"{side}_nearest_fp32_inside", repr(f32_next(f32(b), toward))))
            v.append((f"{side}_outside", repr(math.nextafter(b, -toward))))
        lim = F32_MAX if f else sys.float_info.max
        v += [("type_max", repr(lim)), ("past_type_max", "1e39" if f else "1e309"), ("rounds_to_0", "1e-46" if f else "1e-330"),
              ("subnormal", "1e-40" if f else "1e-310"), ("smallest_normal", repr(F32_MIN_NORMAL if f else sys.float_info.min)),
              ("zero", "0"), ("minus_zero", "-0.0"), ("one", "1"), ("tenth", "0.1"), ("leading_point", ".5"),
              ("exponent_only", "1e"), ("plus", "+0.25")]
    elif t == "bool":
        v += [("true", "true"), ("False", "False"), ("yes", "yes"), ("one", "1"), ("TRUE", "TRUE")]
    elif t == "enum":
        v += [(f"name_{n}", n) for n in key.names] + [("unknown", "x"), ("upper", key.names[0].upper())]
    elif t == "string":
        v += [(f"name_{n}", n) for n in key.names[:3]]
        v += [("default", key.default or '""'), ("at_max_len", "a" * key.max_len), ("past_max_len", "a" * (key.max_len + 1)),
              ("non_ascii", "caf\u00e9"), ("zero", "0"), ("one_comma", "1,"), ("list", "[1,2]")]
    return v + [(lab, x) for lab, x in nonvalues if t != "string"]


def probe_duplicates(key):
    """The key twice in one mapping, in every spelling: refused naming both lines."""
    val = key.default if key.default != "" else '""'
    s, leaf, k = key.section, key.leaf, key.name
    spellings = {
        "dotted_then_nested": f"{k}: {val}\n{s}:\n  {leaf}: {val}\n",
        "nested_then_dotted": f"{s}:\n  {leaf}: {val}\n{k}: {val}\n",
        "dotted_twice": f"{k}: {val}\n{k}: {val}\n",
        "nested_twice": f"{s}:\n  {leaf}: {val}\n  {leaf}: {val}\n",
        "merge_and_nested": f"<<: {{{k}: {val}}}\n{s}:\n  {leaf}: {val}\n",
        "variant_dotted_then_nested": f"variants:\n  v:\n    {k}: {val}\n    {s}: {{{leaf}: {val}}}\n",
        "variant_flow": f"variants:\n  v: {{{k}: {val}, {s}: {{{leaf}: {val}}}}}\n",
    }
    for label, text in spellings.items():
        path = os.path.join(TMP, f"dup_{k}_{label}.yaml")
        with open(path, "w") as fh: fh.write(text)
        rc, out = run([INFO, "--config", path])
        name = f"{k}:{label}"
        err = next((l for l in out.splitlines() if l.startswith("error: ")), "")
        if rc is None: emit("spellings", name, "hang", "")
        elif rc > 128 or rc < 0: emit("spellings", name, "crash", out[-200:])
        elif rc == 2 and (f"{k} is given twice in one mapping" in err or "duplicate key" in err): emit("spellings", name, "clean", err)
        elif rc == 0: emit("spellings", name, "silent", "one of the two values was used without a word")
        else: emit("spellings", name, "other", f"exit {rc}: {err or out[-200:]}")
    # a variant may set what its file sets (a layer above, not a duplicate)
    path = os.path.join(TMP, f"dup_{k}_variant_over_file.yaml")
    with open(path, "w") as fh: fh.write(f"{k}: {val}\nvariants:\n  v: {{{k}: {val}}}\n")
    rc, out = run([INFO, "--config", path])
    err = next((l for l in out.splitlines() if l.startswith("error: ")), "")
    if rc == 0 or (rc == 2 and "given twice" not in err and err): emit("spellings", f"{k}:variant_over_file", "accepted" if rc == 0 else "clean", err)
    else: emit("spellings", f"{k}:variant_over_file", "other", f"exit {rc}: {err}")


def main():
    rc, out = run([INFO, "--keys-tsv"])
    if rc != 0:
        print(f"error: {INFO} --keys-tsv failed (exit {rc})", file=sys.stderr)
        sys.exit(2)
    keys = [Key(l) for l in out.splitlines() if l.strip()]
    for key in keys:
        for label, text in values_of(key):
            probe_value(key, label, text)
        probe_duplicates(key)
    print(f"probe_keys: {len(keys)} keys of the schema, {pv.n_probes} probes (values and spellings)", file=sys.stderr)


main()
