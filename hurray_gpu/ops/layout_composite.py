"""Composite heads: partition (members assembled into one tensor), overlay (base plus
corrections in emission order, replace or add in the head's dtype) and group (the members).
"""

from __future__ import annotations

import math
from typing import Any

from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.format.descriptor.layouts import Strided
from hurray_gpu.format.dtypes import buffer_size
from hurray_gpu.kernels.dialect.kernel import FLOAT_TYPES
from hurray_gpu.kernels.layout import AXIS_TABLE, add_kernel, put_kernel
from hurray_gpu.ops.layout_plan import _records, _regions, dims_of
from hurray_gpu.ops.layout_run import dense_result, device_buffers
from hurray_gpu.runtime.buffer import Buffer

__all__ = ["materialize_composite"]



def _box_tables(dev: Any, head: tuple[int, ...], box: tuple[int, ...],
                offset: tuple[int, ...]) -> list[Buffer]:
    """Axis tables mapping a member's row-major index to its cell in the head (row-major)."""
    strides = [math.prod(head[k + 1:]) for k in range(len(head))]
    base = sum(o * s for o, s in zip(offset, strides, strict=True))
    lp = Buffer.from_bytes(dev, _records(Strided(tuple(strides)), box).reshape(-1).tobytes())
    tables = []
    for d0, nd, entries, b in _regions(box, base):
        table = Buffer(dev, 4 * max(entries, 1))
        dev.run(AXIS_TABLE, dst=table, lp=lp, n=entries, d0=d0, nd=nd, base=b, dat=0)
        tables.append(table)
    return tables


def _own_buffer(t: Any, dev: Any) -> Buffer:
    """Buffer 0 of a freshly materialized tensor, without a copy when it owns one."""
    return device_buffers(t, dev)[0]


def _member_dense(m: Any, head_dtype: Any) -> Any:
    from hurray_gpu.ops.materialize import materialize

    if m.descriptor.quantization is not None or m.dtype != head_dtype:
        return materialize(m, head_dtype.name)
    return materialize(m)


def _apply(dev: Any, out: Buffer, head: tuple[int, ...], head_dtype: Any, member: Any,
           add: bool) -> None:
    """Write (or add) ``member`` (materialized here) into its shard's box of ``out``."""
    shard = member.descriptor.shard
    m = _member_dense(member, head_dtype)
    box = tuple(int(d) for d in m.shape)
    offset = tuple(shard.shard_offset) if shard is not None else (0,) * len(head)
    if math.prod(box) == 0:
        return
    src = _own_buffer(m, dev)
    tx, ty, tz = _box_tables(dev, head, box, offset)
    grid = {"nx": box[-1] if box else 1, "ny": box[-2] if len(box) >= 2 else 1,
            "nz": math.prod(box[:-2]) if len(box) >= 3 else 1, "ndst": math.prod(head)}
    if add:
        dev.run(add_kernel(FLOAT_TYPES[head_dtype.name]), dst=out, src=src, tx=tx, ty=ty,
                tz=tz, **grid)
        return
    item = head_dtype.bits // 8
    word = next(w for w in (4, 2, 1) if item % w == 0)
    dev.run(put_kernel({4: "u32", 2: "u16", 1: "u8"}[word]), dst=out, src=src, tx=tx, ty=ty,
            tz=tz, wpe=item // word, **grid)


def _check_head(t: Any, add: bool) -> tuple[tuple[int, ...], Any]:
    head_dtype = t.dtype
    if head_dtype.bits < 8 or head_dtype.bits % 8:
        raise UnsupportedOpError(f"composite heads of {head_dtype.name} are not assembled",
                                 fix="use a whole-byte head type.")
    if add and head_dtype.name not in FLOAT_TYPES:
        raise UnsupportedOpError(f"overlay add in {head_dtype.name} is not implemented",
                                 fix="use a float32/float16/bfloat16 head.")
    return dims_of(t.descriptor), head_dtype


def materialize_composite(t: Any, dtype: str | None) -> Any:
    """Materialize a composite head (see :func:`~hurray_gpu.ops.materialize.materialize`).

    Returns:
        group: a tuple of the materialized members; partition and overlay: one row-major
        Tensor of the head's shape, in the head's dtype (then converted to ``dtype``).

    Raises:
        UnsupportedOpError: private composition rules, or head types not assembled here.
    """
    from hurray_gpu.ops.materialize import _convert, materialize

    lay = t.layout
    if lay.composition_rule == 3:
        return tuple(materialize(m, dtype) for m in t.members)
    if lay.composition_rule not in (1, 2):
        raise UnsupportedOpError(f"composition rule {lay.composition_rule} is private",
                                 fix="private composites need an out-of-band agreement.")
    add = lay.composition_rule == 2 and lay.combine_op == 2
    head, head_dtype = _check_head(t, add)
    dev = t.device
    members = list(t.members)
    if lay.composition_rule == 2:
        # The base spans the whole head: the output starts as a copy of it (on the device).
        base = _own_buffer(_member_dense(members[0], head_dtype), dev)
        out = Buffer(dev, base.nbytes).copy_from(base)
        members = members[1:]
    else:
        # Partition members cover the head exactly, so every byte is written below.
        out = Buffer(dev, max(buffer_size(head_dtype, math.prod(head)), 1))
    for m in members:
        _apply(dev, out, head, head_dtype, m, add)
    result = dense_result(dev, head_dtype, head, out)
    if dtype is None or dtype == head_dtype.name:
        return result
    return _convert(result, dtype)
