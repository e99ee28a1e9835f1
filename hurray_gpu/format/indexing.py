"""Basic indexing (ints, slices, ``...``, ``None``) of dense tensors as descriptor views.

A view keeps the tensor's buffers and changes only the shape, the layout and ``byte_offset``:
row-major or column-major when the selected elements are still contiguous that way, strided
otherwise. Strides count logical elements (Hurray spec, Memory Layout), so any basic index of a
whole-byte tensor is a view; a sub-byte view must start on a byte (6-bit: 3-byte group)
boundary, because ``byte_offset`` cannot address a bit.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Sequence

from hurray_gpu.errors import ArgumentTypeError, TensorIndexError, UnsupportedOpError
from hurray_gpu.format.descriptor.layouts import ColMajor, RowMajor, Strided
from hurray_gpu.format.descriptor.model import TensorDescriptor

__all__ = ["element_strides", "view_descriptor"]

_FIX_TYPE = ("index with ints, slices, ... and None only; for lists, arrays or masks index "
             "t.numpy() (a host copy) instead.")


def element_strides(desc: TensorDescriptor) -> tuple[int, ...]:
    """The strides, in elements, of a row-major, column-major or strided descriptor."""
    if isinstance(desc.layout, Strided):
        return tuple(desc.layout.strides)
    dims = [int(d) for d in desc.shape]  # type: ignore[arg-type]
    order = range(len(dims)) if isinstance(desc.layout, ColMajor) else reversed(range(len(dims)))
    strides, step = [0] * len(dims), 1
    for axis in order:
        strides[axis] = step
        step *= dims[axis]
    return tuple(strides)


def _normalize(key: object, rank: int) -> list[object]:
    items = list(key) if isinstance(key, tuple) else [key]
    if sum(item is Ellipsis for item in items) > 1:
        raise TensorIndexError("an index can only have a single ellipsis ('...')",
                               fix="keep one '...' in the index.")
    used = sum(item is not None and item is not Ellipsis for item in items)
    if used > rank:
        raise TensorIndexError(f"too many indices: {used} for a tensor of rank {rank}",
                               fix=f"pass at most {rank} ints or slices.")
    fill: list[object] = [slice(None)] * (rank - used)
    if Ellipsis not in items:
        return items + fill
    at = items.index(Ellipsis)
    return items[:at] + fill + items[at + 1:]


def _index(item: object, axis: int, dim: int) -> int:
    if isinstance(item, bool):
        raise ArgumentTypeError(f"index {item!r} on axis {axis}: booleans are masks, not "
                                "positions", fix=_FIX_TYPE)
    try:
        i = operator.index(item)  # type: ignore[arg-type]
    except TypeError:
        raise ArgumentTypeError(f"cannot index a tensor with {type(item).__name__} on axis "
                                f"{axis}", fix=_FIX_TYPE) from None
    if not -dim <= i < dim:
        raise TensorIndexError(f"index {i} is out of bounds for axis {axis} of size {dim}",
                               fix=f"use an index in [{-dim}, {dim}).")
    return i + dim if i < 0 else i


def _select(shape: Sequence[int], strides: Sequence[int], key: object
            ) -> tuple[list[int], list[int], int]:
    """``(shape, strides, element offset of the new [0, ..., 0])`` after ``key``."""
    out_shape: list[int] = []
    out_strides: list[int] = []
    offset, axis = 0, 0
    for item in _normalize(key, len(shape)):
        if item is None:  # a new axis of size 1
            out_shape.append(1)
            out_strides.append(0)
            continue
        dim, stride = shape[axis], strides[axis]
        if isinstance(item, slice):
            start, stop, step = item.indices(dim)
            out_shape.append(len(range(start, stop, step)))
            out_strides.append(stride * step)
            offset += start * stride if out_shape[-1] else 0
        else:
            offset += _index(item, axis, dim) * stride
        axis += 1
    return out_shape, out_strides, offset


def _contiguous(shape: Sequence[int], strides: Sequence[int], reverse: bool) -> bool:
    step = 1
    axes = range(len(shape)) if reverse else reversed(range(len(shape)))
    for axis in axes:
        if shape[axis] != 1 and strides[axis] != step:
            return False
        step *= shape[axis]
    return True


def view_descriptor(desc: TensorDescriptor, key: object) -> TensorDescriptor:
    """The descriptor of ``tensor[key]``: the same buffers, a new shape, layout and offset.

    Args:
        desc: an unquantized row-major, column-major or strided descriptor of static shape
            (the caller checks).
        key: an int, slice, ``...``, ``None`` or a tuple of them (NumPy's basic indexing).

    Returns:
        The view's descriptor (statistics, shard and member sections dropped: they describe
        the whole tensor).

    Raises:
        TensorIndexError: an index out of range, or too many indices.
        ArgumentTypeError: an index that is not basic (a list, an array, a bool, a float).
        UnsupportedOpError: a sub-byte view that would start inside a byte.
    """
    shape = [int(d) for d in desc.shape]  # type: ignore[arg-type]
    new_shape, strides, offset = _select(shape, element_strides(desc), key)
    if 0 in new_shape:
        offset = 0  # an empty view addresses no element
    dtype = desc.dtype
    if dtype.sub_byte:
        per, group = dtype.packing_group
        if offset % per:
            raise UnsupportedOpError(
                f"this {dtype.name} view would start at element {offset}, inside a byte: "
                f"a view of a packed type must start on a multiple of {per} elements",
                fix="unpack first (t.unpack()[...]) or index the host copy t.numpy().")
        start = offset // per * group
    else:
        start = offset * (dtype.bits // 8)
    if not new_shape or 0 in new_shape or _contiguous(new_shape, strides, False):
        layout: RowMajor | ColMajor | Strided = RowMajor()
    elif _contiguous(new_shape, strides, True):
        layout = ColMajor()
    else:
        layout = Strided(tuple(strides))
    return dataclasses.replace(desc, shape=tuple(new_shape), layout=layout,
                               byte_offset=desc.byte_offset + start, statistics=None,
                               shard=None, composite_member=None)
