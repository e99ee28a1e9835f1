"""``materialize``: any layout to dense row-major on the tensor's device, fused with
dequantization or unpacking when the tensor is quantized or sub-byte; dense layouts through the
separable gather, block-paged through the page walk, sparse through the scatter, composites by
materializing their members (recursively) and applying the head's rule.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from hurray_gpu.dialect.kernel import FLOAT_TYPES
from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.format.descriptor.layouts import RowMajor, Strided
from hurray_gpu.format.dtypes import buffer_size, by_name
from hurray_gpu.kernels.dequant_variants import fused_kernel
from hurray_gpu.kernels.layout import AXIS_TABLE, add_kernel, put_kernel
from hurray_gpu.kernels.layout_paged import paged_gather
from hurray_gpu.ops.dequantize import check_output, convert, dequantize_paged
from hurray_gpu.ops.host import element, relayout, sparsify
from hurray_gpu.ops.layout_plan import (
    DENSE_TAGS,
    U32_LIMIT,
    _records,
    _regions,
    alloc_out,
    cached_tables,
    dense_launch,
    dense_result,
    device_buffers,
    dims_of,
    paged_walk,
    plan_dense,
    run_dense,
)
from hurray_gpu.ops.plan import (
    bind_inputs,
    check_flag,
    explain_invalid,
    plan_dequantize,
    prepare,
    repeat,
)
from hurray_gpu.ops.sparse import materialize_sparse
from hurray_gpu.parts import not_a_tensor
from hurray_gpu.runtime.buffer import Buffer

__all__ = [
    "element", "materialize", "materialize_composite", "materialize_dequant", "materialize_layout",
    "materialize_paged", "relayout", "sparsify",
]


def _err_template(dev: Any, plan: Any, words: int) -> Buffer:
    """Build ``[0 | nx, ny | x | y | z tables]`` on the device (AXIS_TABLE launches)."""
    lp = Buffer.from_bytes(dev, np.ascontiguousarray(plan.records, np.uint32))
    table = Buffer(dev, 4 * words)
    table.copyin(np.array([0, plan.scalars["nx"], plan.scalars["ny"]], np.uint32))
    at = 3
    for d0, nd, entries, base in plan.regions:
        dev.run(AXIS_TABLE, dst=table, lp=lp, n=entries, d0=d0, nd=nd, base=base, dat=at)
        at += max(entries, 1)
    return table


def _err_tables(dev: Any, plan: Any) -> tuple[Buffer, int]:
    """The err buffer of a sep launch: ``[0 | nx, ny | x | y | z tables]`` and its length.

    The kernel writes the flag word, so each launch gets its own copy of a template that is
    built once per plan and device (when small; see ``layout_run.cached_tables``).
    """
    words = 3 + sum(max(r[2], 1) for r in plan.regions)
    key = ("err", np.ascontiguousarray(plan.records, np.uint32).tobytes(),
           tuple(plan.regions), int(plan.scalars["nx"]), int(plan.scalars["ny"]))
    template = cached_tables(dev, key, words, lambda: [_err_template(dev, plan, words)])[0]
    err = Buffer(dev, 4 * words)
    err.copy_from(template)
    return err, words


def _launch(dev: Any, qplan: Any, kernel: Any, inputs: dict[str, Buffer],
            scalars: dict[str, Any], out: Buffer, err: Buffer) -> None:

    dev.run(kernel, dst=out, err=err, **inputs, **scalars)
    check_flag(err, kernel.name, lambda: explain_invalid(qplan, inputs))


def materialize_dequant(t: Any, dtype: str) -> Any:
    """Dequantize a quantized dense-layout tensor straight into row-major ``dtype``.

    Args:
        t: a quantized Tensor with a dense layout (any of row/col-major, strided, tiled,
            Morton, Hilbert).
        dtype: ``"float32"``, ``"float16"`` or ``"bfloat16"``.

    Returns:
        The row-major Tensor on ``t``'s device.

    Raises:
        HurrayFormatError: a bad layout or buffer size (before launch), or an invalid
            quantization parameter flagged by the kernel.
        UnsupportedOpError: an unsupported dtype, scheme or size.
    """
    desc, dev = t.descriptor, t.device
    bufs = device_buffers(t, dev)
    plan = plan_dense(desc, bufs[0].nbytes)
    data = dataclasses.replace(desc.buffers[0], byte_size=buffer_size(desc.dtype, plan.count))
    row = dataclasses.replace(desc, layout=RowMajor(), byte_offset=0,
                              buffers=(data, *desc.buffers[1:]))
    qplan = plan_dequantize(row, dtype)
    kernel = fused_kernel(qplan.kernel, plan.addr)
    scalars = {**qplan.scalars, "doff": plan.doff}
    inputs = bind_inputs(qplan, dev, bufs)
    if plan.addr == "sep":
        err, scalars["ntt"] = _err_tables(dev, plan)
        scalars["nspan"] = max(plan.span, 1)
    else:
        err = Buffer(dev, 4)
        err.copyin(np.zeros(1, np.uint32))
        scalars.update(hp=plan.scalars["hp"], hr=plan.scalars["hr"])
    out_dtype = by_name(qplan.out_dtype)
    out = Buffer(dev, max(buffer_size(out_dtype, plan.count), 1))
    if plan.count:
        try:
            _launch(dev, qplan, kernel, inputs, scalars, out, err)
        except BaseException:
            out.free()
            raise
    return dense_result(dev, out_dtype, plan.shape, out)


def materialize_paged(t: Any, dtype: str | None, seq_lens: Sequence[int] | None) -> Any:
    """Gather a block-paged tensor into its logical [total_tokens, heads, dim] view.

    Args:
        t: the block-paged Tensor (unquantized).
        dtype: None (keep the type) or a conversion for the result.
        seq_lens: tokens per sequence; default ``t.seq_lens`` (KV-cache exports), else every
            sequence's pages are taken as full.

    Raises:
        HurrayFormatError: bad block table / seq_ptr (found on the device), or seq_lens that
            do not fit the pages or the shape.
        UnsupportedOpError: quantized or sub-byte pools (``dequantize_paged`` reads those).
    """
    desc, dev, lay = t.descriptor, t.device, t.descriptor.layout
    if desc.quantization is not None or desc.dtype.bits < 8:
        raise UnsupportedOpError("quantized or sub-byte block-paged pools are not gathered",
                                 fix="materialize them with a float dtype (one fused pass).")
    walk = paged_walk(t, seq_lens)
    bufs, (total, heads, dim) = walk.bufs, walk.dims
    item = desc.dtype.bits // 8
    word = next(w for w in (4, 2, 1) if item % w == 0)
    npool = bufs[0].nbytes // word
    if npool >= U32_LIMIT or total * heads * dim * item >= U32_LIMIT:
        raise UnsupportedOpError("the pool exceeds 32-bit indexing", fix="split the cache.")
    out = Buffer(dev, max(buffer_size(desc.dtype, total * heads * dim), 1))
    ts = Buffer.from_bytes(dev, walk.starts.tobytes())
    dev.run(paged_gather({4: "u32", 2: "u16", 1: "u8"}[word]), dst=out, pool=bufs[0],
            bt=bufs[1], sp=bufs[2], ts=ts, row=heads * dim, ntok=total, nseq=walk.nseq,
            ps=int(lay.page_size), npages=int(lay.num_pages), nbt=walk.nbt, iw=walk.iw,
            wpe=item // word, npool=npool)
    result = dense_result(dev, desc.dtype, (total, heads, dim), out)
    if dtype is None or dtype == desc.dtype.name or math.prod((total, heads, dim)) == 0:
        return result
    return convert(result, dtype)


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


def _member_dense(m: Any, head_dtype: Any, limit: int) -> Any:
    if m.is_composite and m.layout.composition_rule == 3:
        raise UnsupportedOpError(
            "a partition or overlay member is a group composite, which has no dense value (its "
            "members are independent tensors)", fix="materialize the group's members one by "
            "one, or re-emit the composite with dense members.")
    convert_to = m.descriptor.quantization is not None or m.dtype != head_dtype
    return materialize(m, head_dtype.name if convert_to else None, max_output_bytes=limit)


def _apply(dev: Any, out: Buffer, head: tuple[int, ...], head_dtype: Any, member: Any,
           add: bool, limit: int) -> None:
    """Write (or add) ``member`` (materialized here) into its shard's box of ``out``."""
    shard = member.descriptor.shard
    m = _member_dense(member, head_dtype, limit)
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


def materialize_composite(t: Any, dtype: str | None, limit: int) -> Any:
    """Materialize a composite head (see :func:`~hurray_gpu.ops.materialize.materialize`).

    Returns:
        One row-major Tensor of the head's shape, in the head's dtype (then converted to
        ``dtype``).

    Raises:
        UnsupportedOpError: a group (its members are independent tensors), private
            composition rules, head types not assembled here, or a group member of a
            partition or overlay.
    """
    lay = t.layout
    if lay.composition_rule == 3:
        raise UnsupportedOpError(
            f"a group composite has no single dense value: its {len(t.members)} members are "
            "independent tensors", fix="materialize the members one by one: "
            "[hg.materialize(m) for m in t.members].")
    if lay.composition_rule not in (1, 2):
        raise UnsupportedOpError(f"composition rule {lay.composition_rule} is private",
                                 fix="private composites need an out-of-band agreement.")
    add = lay.composition_rule == 2 and lay.combine_op == 2
    head, head_dtype = _check_head(t, add)
    dev = t.device
    members = list(t.members)
    if lay.composition_rule == 2:
        # The base spans the whole head: the output starts as a copy of it (on the device).
        base = _own_buffer(_member_dense(members[0], head_dtype, limit), dev)
        out = Buffer(dev, base.nbytes).copy_from(base)
        members = members[1:]
    else:
        # Partition members cover the head exactly, so every byte is written below.
        out = Buffer(dev, max(buffer_size(head_dtype, math.prod(head)), 1))
    for m in members:
        _apply(dev, out, head, head_dtype, m, add, limit)
    result = dense_result(dev, head_dtype, head, out)
    if dtype is None or dtype == head_dtype.name:
        return result
    return convert(result, dtype)


_FLOAT_OUT = ("float32", "float16", "bfloat16")
_SPARSE_TAGS = (0x06, 0x07, 0x08, 0x09)


def materialize_layout(t: Any, *, key: tuple[Any, ...] | None = None) -> Any:
    """Gather a dense-layout tensor into row-major storage of the same type (no dequant).

    Args:
        t: a Tensor with a row/col-major, strided, tiled, Morton or Hilbert layout.
        key: keep the call prepared under this key for its repeats (see
            :func:`~hurray_gpu.ops.plan.prepare`).

    Returns:
        A row-major Tensor of ``t.dtype`` on ``t``'s device; quantization parameters are not
        carried (see :func:`materialize`).

    Raises:
        HurrayFormatError: layout fields that break the spec, or a layout addressing bytes
            outside buffer 0 (checked before launch).
        UnsupportedOpError: a non-dense layout, or sizes beyond 32-bit indexing.
    """
    dev, bufs = t.device, t.buffers
    src = device_buffers(t, dev)[0]
    plan = plan_dense(t.descriptor, src.nbytes)
    out = alloc_out(dev, plan, t.dtype)
    try:
        run_dense(dev, plan, src, out)
    except BaseException:
        out.free()
        raise
    if key is not None and plan.count and plan.mover != "packed":  # out is the exact result
        kernel, args, _ = dense_launch(dev, plan)  # the tables just built, from the cache
        feeds = tuple("dst" if p.name == "dst" else 0 if p.name == "src" else args.pop(p.name)
                      for p in kernel.buffers)
        prepare(key, t.descriptor, bufs, dev, kernel, args, feeds, t.dtype, plan.shape)
    return dense_result(dev, t.dtype, plan.shape, out)


def _dense(t: Any, dtype: str | None, key: tuple[Any, ...]) -> Any:
    desc = t.descriptor
    quantized = desc.quantization is not None
    if quantized or (dtype in _FLOAT_OUT and desc.dtype.bits <= 8
                     and by_name(dtype) != desc.dtype):
        # One pass: the dequant/unpack formula reads each code at its layout offset.
        return materialize_dequant(t, dtype or "float32")
    if dtype is None or by_name(dtype) == desc.dtype:
        return materialize_layout(t, key=key)
    return convert(materialize_layout(t), dtype)


def materialize(t: Any, dtype: str | None = None, *, seq_lens: Sequence[int] | None = None,
                max_output_bytes: int | None = None) -> Any:
    """Return ``t`` as a dense row-major tensor on the same device.

    Args:
        t: a Tensor: dense (row/col-major, strided, tiled, Morton, Hilbert), sparse (COO,
            CSR, CSC, CSF), block-paged, or a composite head with its members.
        dtype: the result's element type. Quantized tensors dequantize to it (default
            ``"float32"``); unquantized ones keep their type unless ``dtype`` is given
            (sub-byte and 8-bit floats unpack to ``float32/float16/bfloat16``).
        seq_lens: block-paged only: the token count of each sequence (may be omitted
            when every sequence's pages are full).
        max_output_bytes: the largest result allowed (default: 64x the bytes ``t`` stores, at
            least 256 MiB; docs/reliability.md), checked before anything is allocated.

    Returns:
        A row-major Tensor (a group composite has none: materialize its members).

    Raises:
        HurrayFormatError: a descriptor or index buffer that breaks the spec (checked
            before any kernel dereferences it), naming the first bad position.
        UnsupportedOpError: a layout or type conversion this build cannot do, or a result
            over ``max_output_bytes``.
    """
    # A repeat call on the same descriptor object, device and buffer sizes runs prepared:
    # everything below depends on nothing else, and passed when the call was prepared.
    try:
        key = (materialize, id(t.descriptor), dtype, t.device, max_output_bytes)
    except AttributeError:
        raise not_a_tensor(t, "hg.materialize") from None
    if seq_lens is None and (done := repeat(key, t)) is not None:
        return done
    if dtype is not None and dtype not in _FLOAT_OUT:
        by_name(dtype)  # an unknown name raises HurrayFormatError
    quantized = t.descriptor.quantization is not None
    limit = check_output(t, dtype or ("float32" if quantized else None), max_output_bytes)
    tag = t.descriptor.layout_tag
    if tag in DENSE_TAGS:
        return _dense(t, dtype, key)
    if tag == 0x0B:
        return materialize_composite(t, dtype, limit)
    if tag in _SPARSE_TAGS:

        return materialize_sparse(t, dtype)
    desc = t.descriptor
    if tag == 0x0A and (desc.quantization is not None or (
            dtype in _FLOAT_OUT and desc.dtype.bits <= 8 and by_name(dtype) != desc.dtype)):
        # One pass: each token row's codes are read from its page and dequantized/unpacked.

        return dequantize_paged(t, dtype or "float32", seq_lens)
    if tag == 0x0A:
        return materialize_paged(t, dtype, seq_lens)
    raise UnsupportedOpError(f"layout 0x{tag:02X} cannot be materialized",
                             fix="private and extension layouts need an out-of-band reader.")
