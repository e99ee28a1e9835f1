"""Constant device buffers for the dequant kernels: value tables (LUTs), kept per device.

The NF4 levels are the exact float32 bit patterns of the Hurray spec's NF4 Lookup Table, used
verbatim.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

from hurray_gpu.buffer import Buffer
from hurray_gpu.format.dtypes import by_name, value_table

__all__ = ["NF4_BITS", "device_table", "nf4_table", "table_values"]

NF4_BITS = (
    0xBF800000, 0xBF3239B1, 0xBF066B30, 0xBECA32A0, 0xBE91A24D, 0xBE3D353F, 0xBDBA7871,
    0x00000000, 0x3DA2FAFF, 0x3E24CAE3, 0x3E7C04DD, 0x3EAD033A, 0x3EE1A4B8, 0x3F1007AB,
    0x3F3913B3, 0x3F800000,
)

_CACHE: weakref.WeakKeyDictionary[Any, dict[str, Buffer]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def nf4_table() -> np.ndarray:
    """The 16 NF4 levels as float32 (bit-exact from the facts sheet)."""
    return np.array(NF4_BITS, np.uint32).view(np.float32)


def table_values(name: str) -> np.ndarray:
    """The f32 value of every code of storage type ``name`` (``"nf4"`` for the NF4 levels)."""
    return nf4_table() if name == "nf4" else value_table(by_name(name))


def device_table(device: Any, name: str) -> Buffer:
    """The value table ``name`` as an f32 Buffer on ``device`` (uploaded once, then reused).

    Args:
        device: an opened Device.
        name: a storage type name of 8 bits or fewer, or ``"nf4"``.

    Returns:
        A read-only (by convention) Buffer of ``2**bits`` float32 values.
    """
    with _LOCK:
        tables = _CACHE.setdefault(device, {})
        cached = tables.get(name)
        if cached is None:
            cached = Buffer.from_bytes(device, table_values(name).tobytes())
            tables[name] = cached
        return cached
