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
import struct
import subprocess
import sys

B, TMP = sys.argv[1], sys.argv[2]
TIMEOUT = int(os.environ.get("PROBE_TIMEOUT", "60"))
INFO = os.path.join(B, "info")
os.makedirs(TMP, exist_ok=True)
INT_LIMITS = {"int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1), "uint64": (0, 2**64 - 1)}
F32_MAX, F32_MIN_NORMAL = struct.unpack("f", b"\xff\xff\x7f\x7f")[0], 2.0**-126
n_probes = 0


def emit(kind, name, outcome, detail):
    global n_probes
    n_probes += 1
    print(f"{kind}\t{name}\t{outcome}\t{' '.join(detail.split())[:300]}", flush=True)


def run(args):
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT, errors="replace")
    except subprocess.TimeoutExpired:
        return None, ""
    return p.returncode, p.stdout + p.stderr


def f32(x):
    """x correctly rounded to fp32 (inf beyond it), as a double."""
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def f32_next(x, toward):
    """The fp32 number next to the fp32 number x in the direction of toward."""
    if x == toward: return x
    if x == 0: return math.copysign(2.0**-149, toward)
    b = struct.unpack("<I", struct.pack("<f", x))[0]
    b = b + 1 if (toward > x) == (x > 0) else b - 1
    return struct.unpack("<f", struct.pack("<I", b))[0]


def parse_bound(s):
    if not s:
        return None, False
    excl = s[0] in "<>"
    return float(s[1:] if excl else s), excl


class Key:
    def __init__(self, line):
        f = line.rstrip("\n").split("\t")
        self.name, self.type = f[0], f[1]
        self.lo, self.lo_excl = parse_bound(f[2])
        self.hi, self.hi_excl = parse_bound(f[3])
        self.names = f[4].split(",") if f[4] else []
        self.default, self.change, self.max_len, self.accepted = f[5], f[6], int(f[7]), f[8]
        self.section, self.leaf = self.name.split(".", 1)

    def int_range(self):
        lo, hi = INT_LIMITS[self.type]
        if self.lo is not None: lo = max(lo, int(self.lo) + (1 if self.lo_excl else 0))
        if self.hi is not None: hi = min(hi, int(self.hi) - (1 if self.hi_excl else 0))
        return lo, hi

    def in_range(self, x):
        if self.lo is not None and not (x > self.lo if self.lo_excl else x >= self.lo): return False
        if self.hi is not None and not (x < self.hi if self.hi_excl else x <= self.hi): return False
        return True


def read_back(key, out):
    """The key's value in build/info's JSON (the resolved configuration)."""
    for line in out.splitlines():
        if line.startswith("{"):
            return json.loads(line)[key.section][key.leaf]
    raise ValueError("no JSON in the output")


def expected_value(key, text):
    """What a correct parser makes of text at the key's type (None: it must be refused)."""
    t = key.type
    try:
        if t in INT_LIMITS:
            s = text.replace("_", "")
            if s.lower().startswith(("0x", "+0x", "-0x")):
                v = int(s, 16)
            elif any(c in s for c in ".eE"):
                from decimal import Decimal
                d = Decimal(s)
                if d != d.to_integral_value(): return None
                v = int(d)
            else:
                v = int(s, 10)
            lo, hi = key.int_range()
            return v if lo <= v <= hi else None
        if t in ("fp32", "fp64"):
            if any(c in text for c in "xXpP_ ") or text.lower().strip("+-.") in ("inf", "nan", "infinity"): return None
            x = float(text)
            if not math.isfinite(x) or not key.in_range(x): return None
            used = f32(x) if t == "fp32" else x
            tiny = F32_MIN_NORMAL if t == "fp32" else sys.float_info.min
            if not math.isfinite(used) or not key.in_range(used): return None
            if used == 0 and any(c in "123456789" for c in text.split("e")[0].split("E")[0]): return None
            if used != 0 and abs(used) < tiny: return None
            return used
        if t == "bool":
            return {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}.get(text)
        if t == "enum":
            return text if text in key.names else None
    except (ValueError, ArithmeticError):
        return None
    return "?"   # strings: decided by the engine's own checks (length checked below)


def probe_value(key, label, text):
    """One value of one key through --set; classified against expected_value."""
    want = expected_value(key, text)
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
        if key.type in ("string",) and want == "?":
            ok = got == text or (text.startswith(("'", '"')) and got == text[1:-1])
        elif key.type == "fp32":
            ok = isinstance(got, (int, float)) and f32(float(got)) == want
        else:
            ok = got == want
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
    print(f"probe_keys: {len(keys)} keys of the schema, {n_probes} probes (values and spellings)", file=sys.stderr)


main()
