"""The package's version: the wheel's, which is the Rust workspace's."""

import os
import re

try:
    from importlib.metadata import PackageNotFoundError, version as _dist_version
except ImportError:  # pragma: no cover
    _dist_version = None


def _from_source():
    """A source tree without an install: the workspace's Cargo.toml."""
    here = os.path.dirname(os.path.abspath(__file__))
    cargo = os.path.join(here, "..", "..", "Cargo.toml")
    try:
        with open(cargo, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return "0+unknown"
    m = re.search(r'^\[workspace\.package\][^\[]*?^version\s*=\s*"([^"]+)"', text, re.M | re.S)
    return m.group(1) if m else "0+unknown"


def _version():
    if _dist_version is not None:
        try:
            return _dist_version("gpu-trace")
        except PackageNotFoundError:
            pass
    return _from_source()


__version__ = _version()
