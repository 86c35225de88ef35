"""config_scalars.py — the engine's manifest reader and analysis/yaml12.py read every scalar alike.

Generated: several thousand spellings of a value (sign, leading zeros, 0x/0o/0b, '_', exponents,
'.5', special floats, booleans and null words in every case, quotes, the tags !!int ... !, spaces
and comments) for a key of each type (int32, uint64, fp32, fp64, bool, enum, string). Each is
read by the engine (build/test_config --read-scalars: config_load_file, one child per case) and
by yaml12.load. The analysis reads a key as the key's type: a value of another type, or outside
the key's range at the precision the engine uses, is no value of that key. For every spelling:
either both refuse, or both give the same typed value. The same for two numbers of a hardware
profile (build/test_sim --read-profiles), which the analysis reads through yaml12 too. Prints
PASS/FAIL lines (tests/lib.sh).
usage: python3 tests/config_scalars.py BUILD_DIR
"""
import math
import os
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "analysis"))
import yaml  # noqa: E402
import yaml12  # noqa: E402

KEYS = ["train.warmup_steps", "train.seed", "train.lr", "train.grad_clip",
        "model.tie_embeddings", "model.linear", "run.dump_dir"]
NONEMPTY = set()   # (all the string keys above may be empty)


def schema(build):
    """key -> (type, lo, lo_excl, hi, hi_excl, enum names), from `info --keys-tsv`."""
    out = subprocess.run([os.path.join(build, "info"), "--keys-tsv"], check=True, capture_output=True, text=True).stdout
    rows = {}
    for line in out.splitlines():
        f = line.split("\t")
        lo, hi = f[2], f[3]
        rows[f[0]] = (f[1], float(lo.lstrip(">")) if lo else None, lo.startswith(">"),
                      float(hi.lstrip("<")) if hi else None, hi.startswith("<"), f[4].split(",") if f[4] else [])
    return rows


def bodies():
    nums = ["0", "5", "8", "10", "255", "1000", "00", "007", "010", "019", "0010", "1_000", "1__0", "_1", "1_",
            "0x10", "0xff", "0XFF", "0x", "0xg", "0x_1", "0x1_0", "0o10", "0o19", "0O10", "0o", "0b101", "0b2", "0B1",
            "1:30", "190:20:30", "1:30.5", "1.5", "1.", ".5", "0.5", "00.5", "010.5", "0.0", "1e3", "1E3", "1e+3",
            "1e-3", "3e-4", "1.5e3", "2e6", "2.0000000001e6", "010e2", "1e400", "1e-400", "1e-40", "1e-310", "1_0.5",
            "1.5_0", "0x1p-10", "1e", "e3", ".", "1.2.3", "0x7fffffff", "99999999999999999999"]
    for n in nums:
        for s in ("", "+", "-"):
            yield s + n
    for n in (".inf", ".Inf", ".INF", ".iNf", ".nan", ".NaN", ".NAN", "inf", "nan", "Infinity"):
        for s in ("", "+", "-"):
            yield s + n
    for w in ("true", "false", "yes", "no", "on", "off", "y", "n"):
        for v in {w, w.title(), w.upper(), w[0] + w[1:].upper()}:
            yield v
    yield from ("", "~", "null", "Null", "NULL", "nULL", "abc", "1,100", "cola", "dense", "text:x", "5 5", "-1-")


def spellings():
    for b in bodies():
        yield b
        yield b + "   # a comment"
        if not b:
            continue
        yield "'" + b + "'"
        yield '"' + b + '"'
        for tag in ("!!int", "!!float", "!!str", "!!bool", "!!null", "!"):
            yield tag + " " + b


def f32(x):
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def in_range(x, row):
    _, lo, lox, hi, hix, _ = row
    if lo is not None and not (x > lo if lox else x >= lo):
        return False
    return hi is None or (x < hi if hix else x <= hi)


def as_key(key, row, v):
    """The value the key holds when the analysis reads v, or None if v is no value of the key."""
    t = row[0]
    if t in ("int32", "int64", "uint64"):
        lim = {"int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1), "uint64": (0, 2**64 - 1)}[t]
        ok = type(v) is int and lim[0] <= v <= lim[1] and in_range(v, row)
        return v if ok else None
    if t in ("fp32", "fp64"):
        if type(v) not in (int, float):
            return None
        x = float(v)
        used = f32(x) if t == "fp32" else x
        tiny = 2.0**-126 if t == "fp32" else sys.float_info.min
        if not math.isfinite(used) or (x != 0 and abs(used) < tiny) or not in_range(x, row) or not in_range(used, row):
            return None
        return used
    if t == "bool":
        return v if type(v) is bool else None
    if v is None and t == "string" and key not in NONEMPTY:
        return ""
    if type(v) is not str or (t == "enum" and v not in row[5]) or (key in NONEMPTY and not v):
        return None
    return v


def report(name, bad, n, of_what):
    """The PASS or FAIL line of one check over n spellings; bad: the spellings read differently."""
    if bad:
        print("FAIL %s: %d of %d spellings read differently; first ones:" % (name, len(bad), n))
        for b in bad[:25]:
            print("  " + b)
        return 1
    print("PASS %s (%d spellings of %s: both refuse or both read the same value)" % (name, n, of_what))
    return 0


def engine_value(row, text):
    t = row[0]
    if t in ("int32", "int64", "uint64"):
        return int(text)
    if t in ("fp32", "fp64"):
        return f32(float(text)) if t == "fp32" else float(text)
    if t == "bool":
        return {"true": True, "false": False}[text]
    return text


def main():
    build = sys.argv[1]
    rows = schema(build)
    cases = []
    for key in KEYS:
        sec, name = key.split(".")
        for s in spellings():
            cases.append((key, s, "%s:\n  %s: %s\n" % (sec, name, s)))
    with tempfile.TemporaryDirectory() as tmp:
        lst = os.path.join(tmp, "cases")
        with open(lst, "wb") as f:
            for key, _, text in cases:
                f.write(key.encode() + b"\n" + text.encode() + b"\0")
        out = subprocess.run([os.path.join(build, "test_config"), "--read-scalars", lst], capture_output=True,
                             text=True).stdout
    results, msg = [], []
    for line in out.splitlines():
        if line.startswith("END\t"):
            ok = [m for m in msg if m.startswith("OK\t")]
            results.append((int(line[4:]), ok[0][3:] if ok else "\n".join(msg)))
            msg = []
        else:
            msg.append(line)
    if len(results) != len(cases):
        print("FAIL config_scalars_agree: the engine answered %d of %d cases" % (len(results), len(cases)))
        return 1
    bad = []
    for (key, spelling, text), (rc, eng) in zip(cases, results):
        row = rows[key]
        sec, name = key.split(".")
        try:
            raw = yaml12.load(text)[sec][name]
            want = as_key(key, row, raw)
            why = "reads %r%s" % (raw, "" if want is not None else ", no value of this key")
        except Exception as e:   # (any exception: the analysis gets no value)
            want, why = None, "refuses: %s" % str(e).splitlines()[0]
        if want is None and rc == 0:
            bad.append("%s: %s: yaml12 %s; the engine reads %s" % (key, spelling, why, eng))
        elif want is not None and rc != 0:
            bad.append("%s: %s: yaml12 %s; the engine refuses: %s" % (key, spelling, why, eng.splitlines()[-1]))
        elif want is not None and engine_value(row, eng) != want:
            bad.append("%s: %s: yaml12 %s; the engine reads %s" % (key, spelling, why, eng))
    return report("config_scalars_agree", bad, len(cases), "%d keys" % len(KEYS))


def profiles(build):
    """The hardware profiles' numbers by the same rule: a number of a profile (host_bandwidth, in
    (0, 1e16]; sm_count, an integer in [0, 2^20]) spelled as above, plain and quoted, read by hw_load
    (build/test_sim --read-profiles) and by yaml12.load (analysis/reproduce.py reads profiles so
    for the bands): both refuse, or both read the same number."""
    base_path = os.path.join(ROOT, "experiments", "hardware", "a100-80gb-node4.yaml")
    base = open(base_path).read()
    fields = {"host_bandwidth": ("host_bandwidth: 32e9 ", lambda v: type(v) in (int, float) and 0 < v <= 1e16),
              "sm_count": ("sm_count: 108 ", lambda v: type(v) is int and 0 <= v <= 2**20)}
    cases = []
    for key, (line, _) in fields.items():
        assert base.count("\n" + line) == 1, "%s: no line '%s'" % (base_path, line)
        for b in bodies():   # (plain and quoted: a whole profile per case is slow to read)
            for s in (b, "'" + b + "'") if b else (b,):
                cases.append((key, s, base.replace("\n" + line, "\n%s: %s " % (key, s), 1)))
    with tempfile.TemporaryDirectory() as tmp:
        lst = os.path.join(tmp, "cases")
        with open(lst, "wb") as f:
            for _, _, text in cases:
                f.write(text.encode() + b"\0")
        out = subprocess.run([os.path.join(build, "test_sim"), "--read-profiles", lst], capture_output=True,
                             text=True).stdout.splitlines()
    if len(out) != len(cases):
        print("FAIL profile_scalars_agree: the engine answered %d of %d cases" % (len(out), len(cases)))
        return 1
    bad = []
    for (key, spelling, text), eng in zip(cases, out):
        try:
            raw = yaml12.load(text)[key]
            want = float(raw) if fields[key][1](raw) else None
            why = "reads %r%s" % (raw, "" if want is not None else ", no value of this key")
        except Exception as e:   # (any exception: the analysis gets no value)
            want, why = None, "refuses: %s" % str(e).splitlines()[0]
        got = None
        if eng.startswith("OK\t"):
            hb, sm = eng.split("\t")[1:]
            got = float(hb) if key == "host_bandwidth" else float(sm)
        if (want is None) != (got is None) or (want is not None and want != got):
            bad.append("%s: %s: yaml12 %s; the engine %s" % (key, spelling, why, eng))
    return report("profile_scalars_agree", bad, len(cases), "%d profile numbers" % len(fields))


if __name__ == "__main__":
    sys.exit(main() | profiles(sys.argv[1]))
