"""probe_values.py — what the generated probes (probe_keys.py, probe_options.py) share: the
value a correct parser makes of a text at a type of use (int32, int64, uint64, fp32, fp64,
enum), the bounds of a range, and the probe line they print."""
import math
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "analysis"))
import yaml12  # noqa: E402  (the one scalar rule's other reader: tests/config_scalars.py keeps it equal to the engine's)

INT_LIMITS = {"int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1), "uint64": (0, 2**64 - 1)}
F32_MAX, F32_MIN_NORMAL = struct.unpack("f", b"\xff\xff\x7f\x7f")[0], 2.0**-126


def f32(x):
    """x correctly rounded to fp32 (+-inf beyond it), as a double."""
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
    """'0', '>0', '<1' (the tables' bounds) -> (value, exclusive); '' -> (None, False)."""
    if not s: return None, False
    return (float(s[1:]), True) if s[0] in "<>" else (float(s), False)


class Range:
    """A type of use with the bounds of a range (set type, lo, lo_excl, hi, hi_excl, names)."""
    names = []

    def int_range(self):
        lo, hi = INT_LIMITS[self.type]
        if self.lo is not None: lo = max(lo, int(self.lo) + (1 if self.lo_excl else 0))
        if self.hi is not None: hi = min(hi, int(self.hi) - (1 if self.hi_excl else 0))
        return lo, hi

    def in_range(self, x):
        if self.lo is not None and not (x > self.lo if self.lo_excl else x >= self.lo): return False
        if self.hi is not None and not (x < self.hi if self.hi_excl else x <= self.hi): return False
        return True

    def value_of(self, text):
        """The value text must take at this type and range (an int, a float correctly rounded to
        the type, an enum name, a bool), or None when it must be refused; "?" for a string
        (decided by the caller)."""
        t = self.type
        if t not in INT_LIMITS and t not in ("fp32", "fp64", "bool"):
            return (text if text in self.names else None) if t == "enum" else "?"
        try:   # the type of the spelling, by the one scalar rule (docs/configuration.md "Values")
            v = yaml12.plain_value(text)
        except yaml12.Refused:
            return None
        if t in INT_LIMITS:
            if type(v) is not int: return None   # (2e6, 1.0: numbers; true: a boolean)
            lo, hi = self.int_range()
            return v if lo <= v <= hi else None
        if t == "bool":
            return v if type(v) is bool else None
        if type(v) not in (int, float): return None
        x = float(v)
        used = f32(x) if t == "fp32" else x
        if not (math.isfinite(x) and self.in_range(x) and math.isfinite(used) and self.in_range(used)): return None
        tiny = F32_MIN_NORMAL if t == "fp32" else sys.float_info.min
        if used == 0 and any(c in "123456789" for c in text.lower().split("e")[0]): return None   # rounds to 0
        if used != 0 and abs(used) < tiny: return None   # subnormal: less than the type's precision
        return used
        return "?"

    def same(self, want, got):
        """Is got (as a tool printed it) the value want at this type?"""
        if self.type == "fp32": return f32(float(got)) == want
        if self.type == "fp64": return float(got) == want
        if self.type in INT_LIMITS: return int(got) == want
        return got == want


n_probes = 0


def emit(kind, name, outcome, detail):
    """One probe line for tools/probe.sh: KIND<TAB>NAME<TAB>OUTCOME<TAB>DETAIL."""
    global n_probes
    n_probes += 1
    print(f"{kind}\t{name}\t{outcome}\t{' '.join(detail.split())[:300]}", flush=True)


def run(args, timeout, env=None):
    """(exit status or None on a timeout, stdout, stderr)."""
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env, errors="replace")
    except subprocess.TimeoutExpired:
        return None, "", ""
    return p.returncode, p.stdout, p.stderr
