"""YAML with YAML 1.2 numbers, as libfyaml (the engine's parser) reads them.

PyYAML implements YAML 1.1, where `67e12` and `1e-3` are strings (a 1.1 float needs a dot and
a signed exponent). The hardware profiles and manifests are written for the engine, so the
analysis scripts must read the same numbers: load() is yaml.safe_load with the 1.2 float rule.
"""
import re

import yaml


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                  |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
                  |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
                  |[-+]?\.(?:inf|Inf|INF)
                  |\.(?:nan|NaN|NAN))$""", re.X),
    list("-+0123456789."))


def load(stream):
    """yaml.safe_load, with `67e12` read as the float 6.7e13 (YAML 1.2)."""
    return yaml.load(stream, Loader=_Loader)
