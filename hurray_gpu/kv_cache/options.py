"""Constructor options of the paged KV cache: geometry limits, dtypes and quantized formats."""

from __future__ import annotations

from typing import Any

import numpy as np

from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.format.dtypes import DType, by_name
from hurray_gpu.kernels.paged import FLOAT_WORDS

__all__ = ["MAX_HEADS", "MAX_HEAD_DIM", "MAX_LAYERS", "MAX_PAGES", "MAX_PAGE_SIZE", "kv_format",
           "positive", "role_index", "storage_dtype"]

# Quantized storage Hurray 1.0 can express, and the kernel format of each.
_KV_FORMATS = {"int8": "q8", "float8_e4m3": "f8"}
# Geometry limits, checked before anything is allocated.
MAX_LAYERS = 4096
MAX_HEADS = 65536
MAX_HEAD_DIM = 65536
MAX_PAGE_SIZE = 65536
# Pages per pool: host bookkeeping is a few words per page.
MAX_PAGES = 1 << 24


def positive(value: Any, name: str, limit: int) -> int:
    """``value`` as an int in ``[1, limit]``.

    Raises:
        UnsupportedOpError: not an int, or out of range.
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise UnsupportedOpError(f"{name} must be an int, got {value!r}",
                                 fix=f"pass {name} as an int.")
    if not 1 <= int(value) <= limit:
        raise UnsupportedOpError(f"{name} = {value} is outside [1, {limit}]",
                                 fix=f"use 1 <= {name} <= {limit}.")
    return int(value)


def storage_dtype(dtype: Any) -> DType:
    """The Hurray DType of a cache's K/V: whole-byte types with a NumPy equivalent.

    Raises:
        UnsupportedOpError: sub-byte, private or unknown types.
    """
    dt = by_name(dtype) if isinstance(dtype, str) else dtype
    if not isinstance(dt, DType) or not dt.interpretable or dt.numpy is None or dt.bits % 8:
        raise UnsupportedOpError(f"cannot keep a KV cache of {dtype!r}",
                                 fix="use float16, bfloat16, float32 or another whole-byte type.")
    return dt


def kv_format(kv_dtype: Any, dtype: DType, page_size: int) -> tuple[str | None, str | None]:
    """``(kv_dtype name, kernel format)`` after checking what Hurray 1.0 can express.

    Raises:
        UnsupportedOpError: an unknown kv_dtype, a non-float dtype, or (int8) a page_size
            that is not a power of two >= 2.
    """
    if kv_dtype is None:
        return None, None
    if not isinstance(kv_dtype, str) or kv_dtype not in _KV_FORMATS:
        raise UnsupportedOpError(f"kv_dtype={kv_dtype!r} is not supported",
                                 fix="use None, 'int8' or 'float8_e4m3'.")
    if dtype.name not in FLOAT_WORDS:
        raise UnsupportedOpError(f"a quantized cache takes float K/V, not {dtype.name}",
                                 fix="use dtype float16, bfloat16 or float32.")
    if kv_dtype == "int8" and (page_size < 2 or page_size & (page_size - 1)):
        raise UnsupportedOpError(
            f"kv_dtype='int8' needs a power-of-two page_size >= 2, got {page_size}",
            fix="Hurray per-block scales need block_size == page_size, a power of two.")
    return kv_dtype, _KV_FORMATS[kv_dtype]


def role_index(role: Any) -> int:
    """0 for ``"key"``/``0``, 1 for ``"value"``/``1``.

    Raises:
        UnsupportedOpError: anything else.
    """
    if isinstance(role, (str, int, np.integer)) and not isinstance(role, bool):
        if role in ("key", "k", 0):
            return 0
        if role in ("value", "v", 1):
            return 1
    raise UnsupportedOpError(f"role must be 'key' or 'value', got {role!r}",
                             fix="pass role='key' or role='value' (or 0 / 1).")
