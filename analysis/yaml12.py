"""YAML read by the engine's one scalar rule (docs/configuration.md "Values").

The manifests and hardware profiles are written for the engine (src/core/yaml_walk.c,
yaml_plain_type), so the analysis scripts read every value as it does: a quoted or block scalar
is text; a plain one is typed by the YAML 1.2 core schema (`67e12` and `1e-3` are numbers,
which PyYAML's YAML 1.1 reads as text); a spelling YAML 1.1 reads as another value (`010`
octal, `1_000`, `0b101`, `-0x10`, `1:30`, `yes`/`on`/`off`/`y`/`n`), `0o17`, a number beyond a
double (`1e400`) and any tag (`!!int 5`) are refused with the file, the line, the key and what
to write. Mapping keys are names (text). tests/config_scalars.py checks both readers agree.
"""
import math
import re

import yaml


class Refused(ValueError):
    """A value the one scalar rule refuses; the message names the file, the line and the key."""


_NULLS = {"", "~", "null", "Null", "NULL"}
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_BOOLS11 = {"yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF", "y", "Y", "n", "N"}
_SPECIAL = {".inf": math.inf, ".Inf": math.inf, ".INF": math.inf, "+.inf": math.inf, "+.Inf": math.inf,
            "+.INF": math.inf, "-.inf": -math.inf, "-.Inf": -math.inf, "-.INF": -math.inf,
            ".nan": math.nan, ".NaN": math.nan, ".NAN": math.nan}
_DECIMAL = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?\Z")
_SEXAGESIMAL = re.compile(r"[-+]?(?:[1-9][0-9_]*(?::[0-5]?[0-9])+|[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*)\Z")
_PREFIXED = re.compile(r"([-+]?)0(?:x([0-9a-fA-F]+)|o([0-7]+)|b([01]+))\Z")


def plain_value(s):
    """The value of the plain scalar s by the one scalar rule, or Refused (what to write)."""
    if s in _NULLS:
        return None
    if s in _BOOLS:
        return _BOOLS[s]
    if s in _SPECIAL:
        return _SPECIAL[s]
    if s in _BOOLS11:
        raise Refused("'%s' is a boolean in YAML 1.1 and text in YAML 1.2: write true or false, or quote it ('%s') "
                      "for text" % (s, s))
    if len(s) > 200:
        return s
    if "_" in s and not _SEXAGESIMAL.match(s):
        t = s.replace("_", "")
        try:
            v = plain_value(t)
        except Refused:
            v = None
        if type(v) in (int, float):
            raise Refused("'%s' groups digits with '_': a number in YAML 1.1, text in YAML 1.2: write %s for the "
                          "number, or quote it ('%s') for text" % (s, t, s))
    if _SEXAGESIMAL.match(s):
        raise Refused("'%s' is a base-60 number in YAML 1.1 (1:30 is 90) and text in YAML 1.2: quote it ('%s') for "
                      "text, or write the number in decimal" % (s, s))
    m = _PREFIXED.match(s)
    if m:
        sign, hx, octal, binary = m.groups()
        digits, base = (hx, 16) if hx else (octal, 8) if octal else (binary, 2)
        v = int(digits, base)
        if hx and not sign:
            return v   # 0x10: 16 in YAML 1.1 and 1.2
        if octal and sign:
            return s   # +0o10: text in both
        big = len(digits) > {16: 16, 8: 21, 2: 64}[base]
        dec = "it in decimal" if big else "%s%d" % ("-" if sign == "-" else "", v)
        what = ("an octal number in YAML 1.2 and text in YAML 1.1" if octal else
                "a binary number in YAML 1.1 and text in YAML 1.2" if binary else
                "a number in YAML 1.1 and text in YAML 1.2 (whose hexadecimal numbers have no sign)")
        raise Refused("'%s' is %s: write %s" % (s, what, dec))
    if not _DECIMAL.match(s):
        return s
    p = s[1:] if s[0] in "+-" else s
    if p[0] == "0" and len(p) > 1 and p[1].isdigit():
        z = len(p) - len(p.lstrip("0"))
        rest = p[z:] if p[z:z + 1].isdigit() else p[z - 1:]
        raise Refused("'%s' has a leading zero, which YAML 1.1 reads as octal (010 is 8) and YAML 1.2 does not: "
                      "write %s for the decimal number, or quote it ('%s') for text" % (s, s[:len(s) - len(p)] + rest, s))
    if p.isdigit():
        return int(s)
    # a decimal beyond a double: every YAML reader makes it infinite or 0, not what is written
    d = float(s)
    if math.isinf(d) or (d == 0 and any(c in "123456789" for c in re.split("[eE]", p)[0])):
        raise Refused("'%s' is %s a double (YAML readers read it as %s): write a number within about 1e-308 ... "
                      "1.8e308" % (s, "too large for" if math.isinf(d) else "too small for",
                                   "infinite" if math.isinf(d) else "0"))
    return d


def _where(node, key):
    m = node.start_mark
    return "%s:%d: %s" % (m.name, m.line + 1, "%s: " % key if key is not None else "")


class _Loader(yaml.SafeLoader):
    """SafeLoader with the one scalar rule: no implicit types but merge keys (<<), every plain
    scalar typed by plain_value, tags refused, mapping keys as their text."""

    yaml_implicit_resolvers = {
        ch: [(tag, rx) for tag, rx in rs if tag == "tag:yaml.org,2002:merge"]
        for ch, rs in yaml.SafeLoader.yaml_implicit_resolvers.items()}

    def compose_node(self, parent, index):
        ev = self.peek_event()
        tag = getattr(ev, "tag", None)
        if tag is not None and not isinstance(ev, yaml.AliasEvent):
            key = index.value if isinstance(index, yaml.ScalarNode) else None
            raise Refused("%s%s %s: YAML tags are not read (the type of a value is that of its spelling); hint: remove "
                          "the tag: a plain 5 is a number, a quoted '5' is text, true/false a boolean"
                          % (_where(ev, key), tag, getattr(ev, "value", "")))
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):
        self.flatten_mapping(node)
        out = {}
        for k, v in node.value:
            if not isinstance(k, yaml.ScalarNode):
                raise Refused("%smapping keys must be plain names" % _where(k, None))
            try:
                out[k.value] = self.construct_object(v, deep=deep)
            except Refused as e:
                if getattr(e, "placed", False):
                    raise
                e2 = Refused("%s%s" % (_where(v, k.value), e))
                e2.placed = True
                raise e2 from None
        return out


    def construct_sequence(self, node, deep=False):
        try:
            return super().construct_sequence(node, deep=deep)
        except Refused as e:
            if getattr(e, "placed", False):
                raise
            e2 = Refused("%sa list item: %s" % (_where(node, None), e))
            e2.placed = True
            raise e2 from None


def _construct_scalar(loader, node):
    if node.style is not None:   # quoted or block: text
        return node.value
    return plain_value(node.value)


_Loader.add_constructor("tag:yaml.org,2002:str", _construct_scalar)


def load(stream):
    """The YAML document of stream, every value read by the engine's one scalar rule."""
    return yaml.load(stream, Loader=_Loader)
