"""Name -> harness lookup; modules are imported on demand (after atheris instruments)."""

from __future__ import annotations

import importlib

from . import HARNESS_NAMES
from ._engine import Harness


def get(name: str) -> Harness:
    """The harness called ``name`` (one of HARNESS_NAMES).

    Raises:
        KeyError: unknown harness name.
    """
    if name not in HARNESS_NAMES:
        raise KeyError(f"unknown harness {name!r}; choose from {', '.join(HARNESS_NAMES)}")
    return importlib.import_module(f"fuzz.{name}").HARNESS
