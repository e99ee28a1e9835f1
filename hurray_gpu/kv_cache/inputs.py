"""Argument checks of the paged KV cache: token rows, sequence ids, layers, counts, outputs.

Rows arrive as NumPy arrays, Tensors or Buffers [num_tokens, heads, head_dim] and leave as a
Buffer on the cache's device, without a copy when they are already there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import Any

import numpy as np

from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.format.descriptor import (
    DEVICE_ALIGNMENT,
    MIN_DATA_ALIGNMENT,
    BufferHandle,
    DeviceTag,
    TensorDescriptor,
)
from hurray_gpu.format.dtypes import DType, buffer_size
from hurray_gpu.parts import TensorLike, dense_descriptor, is_tensor, make_tensor
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.device import Device
from hurray_gpu.runtime.memory import MemoryClass

__all__ = ["ONE_EACH", "check_counts", "check_index", "check_seq_id", "check_seq_ids",
           "dense_tensor", "out_buffers", "rows_buffer"]


# ``counts`` of a decode step: one token per sequence, no list to check.
ONE_EACH: Any = object()


def check_index(value: Any, limit: int, what: str) -> int:
    """``value`` as an int in ``[0, limit)``.

    Raises:
        UnsupportedOpError: not an int, or out of range.
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise UnsupportedOpError(f"{what} must be an int, got {value!r}",
                                 fix=f"pass {what} as an int.")
    if not 0 <= int(value) < limit:
        raise UnsupportedOpError(f"{what} = {value} is outside [0, {limit})",
                                 fix=f"pass a {what} below {limit}.")
    return int(value)


def check_seq_id(seq_id: Any) -> int:
    """One sequence id as an int.

    Raises:
        UnsupportedOpError: not an int.
    """
    if isinstance(seq_id, bool) or not isinstance(seq_id, (int, np.integer)):
        raise UnsupportedOpError(f"sequence id {seq_id!r} is not an int",
                                 fix="use an id returned by add_sequence or fork.")
    return int(seq_id)


def check_seq_ids(seq_ids: Any) -> list[int]:
    """A list of int sequence ids from an int or a sequence of ints.

    Raises:
        UnsupportedOpError: anything else.
    """
    if isinstance(seq_ids, (int, np.integer)) and not isinstance(seq_ids, bool):
        return [int(seq_ids)]
    if isinstance(seq_ids, list) and set(map(type, seq_ids)) <= {int}:
        return list(seq_ids)  # the common case, checked at C speed
    if isinstance(seq_ids, np.ndarray) and seq_ids.ndim == 1 and seq_ids.dtype.kind in "iu":
        return [int(s) for s in seq_ids.tolist()]
    if isinstance(seq_ids, (str, bytes)) or not isinstance(seq_ids, (Sequence, np.ndarray)):
        raise UnsupportedOpError(f"seq_ids must be an int or a list of ints, got {seq_ids!r}",
                                 fix="pass the ids add_sequence() returned, as an int or a list.")
    out = []
    for s in seq_ids:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            raise UnsupportedOpError(f"sequence id {s!r} is not an int",
                                     fix="pass the ids add_sequence() returned.")
        out.append(int(s))
    return out


def check_counts(seq_ids: list[int], tokens: int, counts: Any) -> list[int]:
    """Tokens per sequence: given, one each (decode), or all to a single sequence (prefill).

    Raises:
        UnsupportedOpError: counts that do not add up to the rows given.
    """
    if counts is ONE_EACH:
        if tokens != len(seq_ids):
            raise UnsupportedOpError(f"{tokens} token rows for {len(seq_ids)} sequences",
                                     fix="a decode step takes one row per sequence.")
        return [1] * tokens
    if counts is None:
        if tokens == len(seq_ids):
            return [1] * tokens
        if len(seq_ids) == 1:
            return [tokens]
        raise UnsupportedOpError(
            f"{tokens} token rows for {len(seq_ids)} sequences",
            fix="pass one row per sequence (decode), or counts= with the rows per sequence.")
    got = check_seq_ids(counts)
    if len(got) != len(seq_ids) or any(c < 0 for c in got) or sum(got) != tokens:
        raise UnsupportedOpError(
            f"counts {got} do not split {tokens} rows over {len(seq_ids)} sequences",
            fix="give one non-negative count per sequence, summing to the rows passed.")
    return got


def _shape_error(what: str, shape: Any, heads: int, head_dim: int) -> UnsupportedOpError:
    return UnsupportedOpError(f"{what} has shape {shape}, expected [num_tokens, {heads}, "
                              f"{head_dim}]", fix="pass [num_tokens, num_kv_heads, head_dim].")


def _dtype_error(what: str, got: Any, dtype: DType) -> UnsupportedOpError:
    return UnsupportedOpError(f"{what} has dtype {got}, the cache stores {dtype.name}",
                              fix=f"convert {what} to {dtype.name} first.")


def rows_buffer(device: Device, x: Any, what: str, dtype: DType, heads: int,
                head_dim: int) -> tuple[Buffer, int]:
    """``(buffer on device, num_tokens)`` for rows given as an array, a Tensor or a Buffer.

    Raises:
        UnsupportedOpError: wrong type, shape, dtype or device.
    """
    row_bytes = heads * head_dim * (dtype.bits // 8)
    if isinstance(x, Buffer):
        if x.device is not device:
            raise UnsupportedOpError(f"{what} is a Buffer on {x.device}, the cache is on "
                                     f"{device}", fix="move it to the cache's device first.")
        if x.nbytes % row_bytes:
            raise UnsupportedOpError(f"{what} holds {x.nbytes} bytes, not a whole number of "
                                     f"{row_bytes}-byte rows", fix="pass whole token rows.")
        return x, x.nbytes // row_bytes
    if is_tensor(x):
        return _tensor_rows(device, x, what, dtype, heads, head_dim)
    arr = np.asarray(x)
    if arr.dtype != dtype.numpy:
        raise _dtype_error(what, arr.dtype, dtype)
    if arr.ndim != 3 or arr.shape[1:] != (heads, head_dim):
        raise _shape_error(what, arr.shape, heads, head_dim)
    return _upload(device, np.ascontiguousarray(arr)), arr.shape[0]


def _upload(device: Device, arr: np.ndarray) -> Buffer:
    """``arr`` (contiguous) as rows on ``device``: on a host-memory device the array itself,
    read in place by the append (its kernels run in the caller's thread, so the caller may
    reuse the array once append returns; a copy cost as much again as the append)."""
    if not arr.size:
        return Buffer(device, 0)
    flat = arr.reshape(-1).view(np.uint8)
    if device.allocator.host_memory:
        return Buffer.wrap(flat, device)
    return Buffer.from_bytes(device, flat)


def _tensor_rows(device: Device, t: TensorLike, what: str, dtype: DType, heads: int,
                 head_dim: int) -> tuple[Buffer, int]:
    if t.dtype.tag != dtype.tag:
        raise _dtype_error(what, t.dtype.name, dtype)
    if len(t.shape) != 3 or tuple(t.shape[1:]) != (heads, head_dim) or t.shape[0] is None:
        raise _shape_error(what, t.shape, heads, head_dim)
    tokens = int(t.shape[0])
    desc = t.descriptor
    if desc.layout_tag == 0x01 and desc.quantization is None and t.device is device:
        nbytes = tokens * heads * head_dim * (dtype.bits // 8)
        return t.buffers[0].view(int(desc.byte_offset), nbytes), tokens
    host = t if t.is_host else t.to("cpu")
    return _upload(device, np.ascontiguousarray(host.numpy())), tokens


def out_buffers(device: Device, out: Any, nbytes: int,
                pool_roots: AbstractSet[int]) -> tuple[Buffer, Buffer] | None:
    """Caller-given gather outputs as two ``nbytes`` views (None when ``out`` is None);
    ``pool_roots``: the ids of the page pools' root allocations.

    Raises:
        UnsupportedOpError: not two Buffers on ``device``, too small, overlapping each
            other, or inside a page pool (a gather would overwrite the cache).
    """
    if out is None:
        return None
    if not isinstance(out, (tuple, list)) or len(out) != 2 or \
            not all(isinstance(b, Buffer) for b in out):
        raise UnsupportedOpError("out must be a (key, value) pair of Buffers",
                                 fix="pass two Buffers allocated on the cache's device.")
    k, v = out
    for b in (k, v):
        if b.device is not device or b.nbytes < nbytes:
            raise UnsupportedOpError(
                f"an out Buffer holds {b.nbytes} bytes on {b.device}; the gather needs "
                f"{nbytes} bytes on {device}", fix="allocate larger out Buffers on the cache's "
                "device (total tokens x heads x head_dim x itemsize).")
        if id(b.allocation.root) in pool_roots:
            raise UnsupportedOpError("an out Buffer is part of a page pool",
                                     fix="gather into Buffers of your own.")
    if nbytes and k.allocation.root is v.allocation.root and \
            k.offset < v.offset + nbytes and v.offset < k.offset + nbytes:
        raise UnsupportedOpError("the key and value out Buffers overlap",
                                 fix="pass two separate Buffers (or disjoint views).")
    return (k if k.nbytes == nbytes else k.view(0, nbytes),
            v if v.nbytes == nbytes else v.view(0, nbytes))


def dense_tensor(device: Device, buffer: Buffer, dtype: DType,
                 shape: tuple[int, ...]) -> TensorLike:
    """A row-major Tensor over ``buffer`` (no copy)."""
    if buffer.nbytes == buffer_size(dtype, math.prod(shape)):
        # The usual case (a gather's exact outputs): the descriptor built and encoded once.
        desc, raw = dense_descriptor(dtype, shape, device.tag)
        return make_tensor(desc, [buffer], raw=raw)
    host = device.tag == DeviceTag.CPU
    align = MIN_DATA_ALIGNMENT if host else DEVICE_ALIGNMENT
    handle = BufferHandle(buffer.nbytes, align, device.tag, 0, MemoryClass.STANDARD)
    desc = TensorDescriptor.dense(dtype, shape, buffers=(handle,))
    return make_tensor(desc, [buffer])
