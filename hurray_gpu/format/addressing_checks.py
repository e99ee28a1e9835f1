"""Shared hostile-input checks for the NumPy addressing reference (Hurray spec, Memory Layout).

Every index read from a caller's array is validated here before it is used or allocated for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NoReturn

import numpy as np

from hurray_gpu.errors import HurrayFormatError

INT64_MAX = (1 << 63) - 1
# Dense references allocate prod(shape) elements; above this a hostile shape is refused
# before allocation rather than surfacing as MemoryError.
MAX_DENSE_ELEMENTS = 1 << 28


def fail(message: str, field: str, fix: str) -> NoReturn:
    """Raise HurrayFormatError for ``field`` with a ``Fix:`` hint."""
    raise HurrayFormatError(message, field=field, fix=fix)


def static_shape(shape: Sequence[int | None], field: str = "shape") -> tuple[int, ...]:
    """Validate a shape: every entry a non-dynamic int in [0, 2**63).

    Raises:
        HurrayFormatError: on a dynamic (None), negative or oversized dimension.
    """
    out = []
    for k, n in enumerate(shape):
        if n is None:
            fail(f"{field}[{k}] is dynamic", field,
                 "resolve every dynamic dimension before addressing elements.")
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            fail(f"{field}[{k}] = {n!r} is not an integer", field, "use integer dimensions.")
        if not 0 <= int(n) <= INT64_MAX:
            fail(f"{field}[{k}] = {n} is outside [0, 2**63)", field,
                 "use dimensions that fit a signed 64-bit index.")
        out.append(int(n))
    return tuple(out)


def checked_prod(values: Sequence[int], limit: int, what: str, field: str) -> int:
    """Product of ``values`` (Python ints), refused when above ``limit``."""
    out = 1
    for v in values:
        out *= v
    if out > limit:
        fail(f"{what} needs {out} elements, more than the limit {limit}", field,
             "address a smaller tensor or raise the limit explicitly.")
    return out


def check_dense_shape(dims: Sequence[int], limit: int) -> int:
    """Refuse a dense allocation of ``dims`` above ``limit`` elements; returns the count.

    A zero extent does not license huge other extents: NumPy cannot even describe them.
    """
    count = checked_prod(dims, limit, "the dense tensor", "shape")
    checked_prod([max(n, 1) for n in dims], INT64_MAX // 16, "the dense tensor's non-empty "
                 "extents", "shape")
    return count


def as_index_array(a: Any, name: str, *, allow_negative: bool = False) -> np.ndarray:
    """Convert ``a`` to an int64 array of indices without wrap-around.

    Args:
        a: array-like of integers (any NumPy integer dtype; u64 values above 2**63-1 are
            rejected rather than wrapped).
        name: buffer/argument name used in error messages.
        allow_negative: accept negative values (strides); indices are non-negative.

    Returns:
        An int64 ndarray with the same shape.

    Raises:
        HurrayFormatError: for a non-integer dtype, a value above 2**63-1 or a negative index.
    """
    arr = np.asarray(a)
    if arr.dtype == object or arr.dtype.kind not in "iu":
        if arr.size == 0 and arr.dtype.kind in "fO":
            return np.zeros(arr.shape, dtype=np.int64)
        fail(f"{name} has dtype {arr.dtype}, not an integer type", name,
             f"pass {name} as an integer array (u64 on the wire).")
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and arr.size:
        big = np.flatnonzero(arr.reshape(-1) > np.uint64(INT64_MAX))
        if big.size:
            pos = int(big[0])
            fail(f"{name}[{pos}] = {int(arr.reshape(-1)[pos])} exceeds 2**63-1", name,
                 f"every {name} entry must be a valid in-range index.")
    out = arr.astype(np.int64)
    if not allow_negative and out.size:
        neg = np.flatnonzero(out.reshape(-1) < 0)
        if neg.size:
            pos = int(neg[0])
            fail(f"{name}[{pos}] = {int(out.reshape(-1)[pos])} is negative", name,
                 f"every {name} entry must be >= 0.")
    return out


def check_below(arr: np.ndarray, bound: int, name: str, what: str) -> None:
    """Reject the first entry of ``arr`` (flat order) that is >= ``bound``."""
    if arr.size == 0:
        return
    bad = np.flatnonzero(arr.reshape(-1) >= bound)
    if bad.size:
        pos = int(bad[0])
        fail(f"{name}[{pos}] = {int(arr.reshape(-1)[pos])} is out of range: {what} is {bound}",
             name, f"every {name} entry must be < {bound} ({what}).")


def check_pointer(ptr: np.ndarray, name: str, length: int, last: int, last_what: str) -> None:
    """Validate a CSR-style pointer array: length, ptr[0] == 0, non-decreasing, ptr[-1] == last.

    Raises:
        HurrayFormatError: naming the first offending position.
    """
    if ptr.ndim != 1 or ptr.shape[0] != length:
        fail(f"{name} has shape {ptr.shape}, expected ({length},)", name,
             f"{name} must hold exactly {length} entries.")
    if int(ptr[0]) != 0:
        fail(f"{name}[0] = {int(ptr[0])}, must be 0", name, f"start {name} at 0.")
    drop = np.flatnonzero(np.diff(ptr) < 0)
    if drop.size:
        k = int(drop[0])
        fail(f"{name} decreases at position {k + 1}: {name}[{k}] = {int(ptr[k])} > "
             f"{name}[{k + 1}] = {int(ptr[k + 1])}", name, f"{name} must be non-decreasing.")
    if int(ptr[-1]) != last:
        fail(f"{name}[{length - 1}] = {int(ptr[-1])}, expected {last} ({last_what})", name,
             f"the last {name} entry must equal {last_what}.")


def check_strictly_increasing_within(crd: np.ndarray, owner: np.ndarray, name: str,
                                     what: str) -> None:
    """Reject a coordinate that is not strictly greater than its predecessor in the same slice.

    Args:
        crd: coordinates (int64, 1-D).
        owner: the slice (parent) id of each coordinate, non-decreasing.
        name: buffer name for messages.
        what: what a slice is ("row", "column", "parent").
    """
    if crd.size < 2:
        return
    same = owner[1:] == owner[:-1]
    bad = np.flatnonzero(same & (crd[1:] <= crd[:-1]))
    if bad.size:
        k = int(bad[0]) + 1
        kind = "duplicate" if crd[k] == crd[k - 1] else "decreasing"
        fail(f"{name}[{k}] = {int(crd[k])} is {kind} after {name}[{k - 1}] = "
             f"{int(crd[k - 1])} within {what} {int(owner[k])}", name,
             f"sort {name} strictly increasing within each {what}, without duplicates.")

