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
    # hurray_gpu imports most of itself on first use: load it all now, so the first input's
    # memory is not charged with imports, and atheris instruments every module (get() runs
    # inside its instrument_imports block).
    for module in ("hurray_gpu.tensor", "hurray_gpu.kernels", "hurray_gpu.ops",
                   "hurray_gpu.io", "hurray_gpu.kv_cache", "hurray_gpu.sync", "vyre"):
        importlib.import_module(module)
    from hurray_gpu.format.dtypes import DTYPES
    from hurray_gpu.runtime.registry import resolve_device

    resolve_device("cpu")  # imports the cpu backend, which decoded tensors live on
    for dtype in DTYPES.values():
        dtype.numpy  # noqa: B018  (loads ml_dtypes once, outside any measured input)
    return importlib.import_module(f"fuzz.{name}").HARNESS
