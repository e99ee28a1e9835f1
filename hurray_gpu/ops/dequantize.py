"""Dequantization and unpacking on the device: the result is a dense row-major Tensor on the
same device (block-paged tensors in one pass through the block table); invalid parameters found
by the kernel raise HurrayFormatError naming the entry. ``convert`` changes the element type of
a row-major tensor (dequantize, unpack or widen/narrow floats).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from hurray_gpu.dialect.kernel import FLOAT_TYPES
from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError
from hurray_gpu.format.descriptor import RowMajor
from hurray_gpu.format.descriptor.quant import (
    SCALE_TYPE_SIZES,
    PerBlockAffine,
    PerChannelAffine,
    PerTensorAffine,
)
from hurray_gpu.format.descriptor.validate import validate_descriptor
from hurray_gpu.format.dtypes import buffer_size, by_name
from hurray_gpu.kernels.dequant_variants import paged_dequant_kernel
from hurray_gpu.kernels.layout_paged import PAGED_IX_HEADER
from hurray_gpu.kernels.layout_sparse import COPY_WORDS
from hurray_gpu.ops.layout_plan import U32_LIMIT, dense_result, device_buffers, paged_walk
from hurray_gpu.ops.plan import _out as _out_dtype
from hurray_gpu.ops.plan import (
    bad_affine_params,
    bind_inputs,
    check_buffer_sizes,
    check_flag,
    elements_per_item,
    explain_invalid,
    feeds,
    plan_dequantize,
    plan_unpack,
    prepare,
    repeat,
)
from hurray_gpu.parts import not_a_tensor
from hurray_gpu.runtime.buffer import Buffer

__all__ = ["check_output", "convert", "dequantize", "dequantize_paged", "token_slots", "unpack"]

# A result may be MAX_EXPANSION times the bytes the tensor stores (members included) or
# MIN_OUTPUT_LIMIT, whichever is larger: a stride-0 broadcast, an aliased block table or a
# sparse tensor would otherwise let a few stored bytes allocate gigabytes.
MAX_EXPANSION = 64
MIN_OUTPUT_LIMIT = 1 << 28


def check_output(t: Any, dtype: str | None, max_output_bytes: int | None) -> int:
    """Return the output limit in force (``max_output_bytes``, None: the MAX_EXPANSION
    default); raise UnsupportedOpError if ``t`` as ``dtype`` (None: its own) is larger. A group
    head is not checked: its members are, one by one."""
    stored, stack = 0, [t]
    while stack:
        x = stack.pop()
        stored += sum(b.nbytes for b in x.buffers)
        stack.extend(x.members)
    limit = (max(MIN_OUTPUT_LIMIT, MAX_EXPANSION * stored) if max_output_bytes is None
             else max_output_bytes)
    bits = max(by_name(dtype).bits if dtype else 0, t.dtype.bits or 0)
    nbytes = math.prod(t.shape) * bits // 8
    if nbytes > limit and not (t.is_composite and t.layout.composition_rule == 3):
        raise UnsupportedOpError(
            f"the {dtype or t.dtype.name} result of shape {list(t.shape)} would take {nbytes:,} bytes, over the "
            f"output limit of {limit:,} for a tensor that stores {stored:,} bytes",
            fix="pass max_output_bytes= a larger limit if this result is wanted.")
    return limit


def _run(t: Any, planner: Any, dtype: str | None, device: Any,
         key: tuple[Any, ...] | None = None) -> Any:
    if device is not None:
        planner(t.descriptor, dtype)  # a hostile descriptor fails before any transfer
        t = t.to(device)
    dev, bufs = t.device, t.buffers
    plan = planner(t.descriptor, dtype, ept=elements_per_item(dev))
    check_buffer_sizes(t.descriptor, bufs)
    # Kept under ``key`` (see dequantize), a repeat runs it again without planning.
    return prepare(key, t.descriptor, bufs, dev, plan.kernel, plan.scalars, feeds(plan, dev),
                   by_name(plan.out_dtype), plan.shape, plan)(bufs)


def dequantize(t: Any, dtype: str = "float32", device: Any = None, *,
               seq_lens: Any = None, max_output_bytes: int | None = None) -> Any:
    """Dequantize ``t`` on its device (each scheme's Dequantization Formula in the Hurray spec,
    bit-exact on every backend).

    Affine schemes compute ``f32(scale) * f32(i32(q - zero_point))`` (the subtraction wraps
    in 32-bit two's complement), NF4 ``absmax * NF4[q]``, MXFP ``2^(e-127) * value(q)``; the
    f32 result is rounded to ``dtype`` to nearest even. Unquantized types of 8 bits or fewer
    (int4, bool, float8/6/4, ...) are unpacked to their values.

    Args:
        t: a Tensor (host or device) with a row-major layout.
        dtype: ``"float32"``, ``"float16"`` or ``"bfloat16"``.
        device: move ``t`` there first (any spec :func:`hurray_gpu.device` accepts).
        seq_lens: block-paged tensors only: tokens per sequence (default ``t.seq_lens``,
            else full pages, docs/format.md, Token counts per sequence).
        max_output_bytes: the largest result allowed (default: 64x the bytes ``t`` stores,
            at least 256 MiB; docs/reliability.md).

    Returns:
        A dense row-major Tensor of ``dtype`` and ``t.shape`` on the same device (block-paged
        tensors: their logical ``[total_tokens, heads, dim]``, per-page-slot scales applied
        through the block table).

    Raises:
        HurrayFormatError: a malformed descriptor or buffer size (before any launch), or an
            invalid parameter found by the kernel (zero/non-finite scale, zero point out of
            range, e8m0 scale 0x00/0xFF).
        UnsupportedOpError: a non-row-major layout, an unsupported dtype, a tensor too big
            for 32-bit indexing, or a result over ``max_output_bytes``.
    """
    # A repeat call on the same descriptor object, device and buffer sizes runs prepared:
    # everything below depends on nothing else, and passed when the call was prepared.
    try:
        key = (plan_dequantize, id(t.descriptor), dtype, t.device, max_output_bytes)
    except AttributeError:
        raise not_a_tensor(t, "hg.dequantize") from None
    if device is None and seq_lens is None and (done := repeat(key, t)) is not None:
        return done
    _out_dtype(dtype)
    check_output(t, dtype, max_output_bytes)
    if t.descriptor.layout_tag == 0x0A:
        validate_descriptor(t.descriptor, permissive=False)
        # t.to() makes a plain Tensor: take an exported tensor's seq_lens first.
        lens = seq_lens if seq_lens is not None else getattr(t, "seq_lens", None)
        return dequantize_paged(t if device is None else t.to(device), dtype, lens)
    if seq_lens is not None:
        raise UnsupportedOpError("seq_lens applies to block-paged tensors only",
                                 fix="drop seq_lens.")
    return _run(t, plan_dequantize, dtype, device, key if device is None else None)


def unpack(t: Any, dtype: str | None = None, device: Any = None) -> Any:
    """Unpack an unquantized sub-byte or small-float tensor on its device.

    Args:
        t: a Tensor of bool, int4/uint4/int2/uint2, float4/6/8 (row-major).
        dtype: None for the natural wider type (int8/uint8 for integers and bool, float32
            for floats), or ``"float32"``/``"float16"``/``"bfloat16"``.
        device: move ``t`` there first.

    Returns:
        A dense row-major Tensor on the same device.

    Raises:
        HurrayFormatError: a malformed descriptor, or float8_e8m0 data with code 0x00/0xFF.
        UnsupportedOpError: a quantized tensor or an impossible target type.
    """
    try:
        key = (plan_unpack, id(t.descriptor), dtype, t.device)
    except AttributeError:
        raise not_a_tensor(t, "hg.unpack") from None
    if device is None:
        done = repeat(key, t)
        return done if done is not None else _run(t, plan_unpack, dtype, None, key)
    return _run(t, plan_unpack, dtype, device)


def _float_convert(t: Any, dtype: str, kernel: str) -> Any:
    """Round/widen between float32 and float16/bfloat16 with the basic convert kernels."""
    dev, count = t.device, math.prod(int(d) for d in t.shape)
    src = device_buffers(t, dev)[0]
    out = Buffer(dev, max(buffer_size(by_name(dtype), count), 1))
    dev.run(kernel, dst=out, src=src, n=count)
    return dense_result(dev, by_name(dtype), tuple(int(d) for d in t.shape), out)


def convert(t: Any, dtype: str) -> Any:
    """Change the element type of a row-major tensor (dequantize, unpack or widen)."""
    if t.descriptor.quantization is not None:
        return dequantize(t, dtype)
    if t.dtype.bits <= 8:
        return unpack(t, dtype)

    kernel = f"{FLOAT_TYPES.get(t.dtype.name)}_to_{FLOAT_TYPES.get(dtype or '')}"
    if kernel in ("f32_to_f16", "f32_to_bf16", "f16_to_f32", "bf16_to_f32"):
        return _float_convert(t, dtype, kernel)
    raise UnsupportedOpError(f"cannot convert unquantized {t.dtype.name} to {dtype}",
                             fix="materialize without dtype and convert with NumPy.")


def _host_bytes(buf: Any) -> np.ndarray:
    if isinstance(buf, Buffer):
        return np.asarray(buf.copyout(), dtype=np.uint8).reshape(-1)
    return np.asarray(buf, dtype=np.uint8).reshape(-1)


def token_slots(block_table: np.ndarray, seq_ptr: np.ndarray, seq_lens: np.ndarray,
                page_size: int, num_pages: int) -> np.ndarray:
    """The page-pool slot ``page * page_size + t % page_size`` of every logical token.

    Args:
        block_table: page ids (validated: each < num_pages).
        seq_ptr: num_seqs + 1 monotone offsets into ``block_table``.
        seq_lens: tokens per sequence, each within its pages.
        page_size, num_pages: the layout's geometry.

    Returns:
        int64 slots, one per token in sequence order.

    Raises:
        HurrayFormatError: a table entry or token count out of range (checked here again:
            the slots index host memory).
    """
    sp = np.asarray(seq_ptr, np.int64)
    bt = np.asarray(block_table, np.int64)
    lens = np.asarray(seq_lens, np.int64)
    pages = np.diff(sp)
    if (sp.size != lens.size + 1 or sp[0] != 0 or (pages < 0).any() or sp[-1] != bt.size
            or (lens < 0).any() or (lens > pages * page_size).any()
            or ((bt < 0) | (bt >= num_pages)).any()):
        raise HurrayFormatError("block_table, seq_ptr or seq_lens are inconsistent",
                                field="block_table",
                                fix="page ids < num_pages, seq_ptr monotone from 0 to the "
                                    "table length, seq_lens within each sequence's pages.")
    seq = np.repeat(np.arange(lens.size), lens)
    starts = np.concatenate([[0], np.cumsum(lens)])[:-1]
    j = np.arange(seq.size) - starts[seq]
    return bt[sp[seq] + j // page_size] * page_size + j % page_size


def _pool_view(t: Any) -> tuple[Any, list[int]]:
    """The page pool as a dense row-major ``[num_pages * page_size, heads, dim]`` descriptor.

    Per-page-slot (per-block, axis 0) parameters become per-channel along the slot axis: the
    kernels index them by pool position. The planner only knows f32 per-channel scales, so
    a planning descriptor with f32-sized scale entries is returned with the original buffer
    index of each of its buffers; ``_plan`` restores the real scale type.

    Raises:
        HurrayFormatError: a parameter buffer smaller than the scheme needs.
    """
    desc = t.descriptor
    lay = desc.layout
    slots = int(lay.num_pages) * int(lay.page_size)
    shape = (slots, int(desc.shape[1]), int(desc.shape[2]))
    q = desc.quantization
    count = slots * shape[1] * shape[2]
    data = dataclasses.replace(desc.buffers[0], byte_size=buffer_size(desc.dtype, count))
    if q is None or isinstance(q, PerTensorAffine):
        return dataclasses.replace(desc, layout=RowMajor(), shape=shape, byte_offset=0,
                                   buffers=(data,), quantization=q), [0]
    entries = slots if isinstance(q, PerBlockAffine) else shape[q.axis]
    zidx = q.zero_point_buffer_index
    order = [q.scale_buffer_index] + ([] if zidx is None or zidx == q.scale_buffer_index
                                      else [zidx])
    width = SCALE_TYPE_SIZES[q.scale_type_tag]
    need = {q.scale_buffer_index: entries * (width + (4 if zidx == q.scale_buffer_index
                                                      else 0))}
    if zidx is not None and zidx != q.scale_buffer_index:
        need[zidx] = 4 * entries
    for index, size in need.items():
        if desc.buffers[index].byte_size < size or t.buffers[index].nbytes < size:
            raise HurrayFormatError(
                f"parameter buffer {index} holds fewer than {entries} entries", field="scales",
                fix="write one scale (and zero point) per page slot, num_pages * page_size.")
    handles = [dataclasses.replace(desc.buffers[i], byte_size=4 * entries * (
        2 if i == zidx == q.scale_buffer_index else 1)) for i in order]
    quant = PerChannelAffine(0 if isinstance(q, PerBlockAffine) else q.axis, 1,
                             None if zidx is None else (1 if zidx == q.scale_buffer_index
                                                        else 2))
    row = dataclasses.replace(desc, layout=RowMajor(), shape=shape, byte_offset=0,
                              buffers=(data, *handles), quantization=quant)
    return row, [0, *order]


def _plan(t: Any, dtype: str, dev: Any) -> tuple[Any, list[int]]:

    row, order = _pool_view(t)
    qplan = plan_dequantize(row, dtype, ept=elements_per_item(dev))
    qplan = dataclasses.replace(qplan, scalars=dict(qplan.scalars))  # plans are shared
    q = t.descriptor.quantization
    if isinstance(q, (PerChannelAffine, PerBlockAffine)):
        stype = q.scale_type_tag
        qplan.scalars["stype"] = stype
        if q.zero_point_buffer_index == q.scale_buffer_index:
            qplan.scalars["zoff"] = qplan.scalars["nparam"] * SCALE_TYPE_SIZES[stype]
    qplan.scalars["doff"] = 0  # paged_walk rebases the pool past byte_offset
    return qplan, order


def dequantize_paged(t: Any, dtype: str, seq_lens: Any) -> Any:
    """Dequantize (or unpack) a block-paged tensor into a dense ``[total_tokens, heads, dim]``.

    Args:
        t: the block-paged Tensor (on its device; validated here before any launch).
        dtype: ``"float32"``, ``"float16"`` or ``"bfloat16"``.
        seq_lens: tokens per sequence; default ``t.seq_lens``, else full pages (docs/format.md).

    Returns:
        A dense row-major Tensor on ``t``'s device.

    Raises:
        HurrayFormatError: a malformed descriptor, block table, seq_ptr, seq_lens or an
            invalid scale / zero point of a page slot in use.
        UnsupportedOpError: NF4/MXFP pools (docs/format.md, Quantized pools), or an output
            type other than the float ones.
    """
    desc, dev = t.descriptor, t.device
    validate_descriptor(desc, permissive=False)
    q = desc.quantization
    if q is not None and not isinstance(q, (PerTensorAffine, PerChannelAffine,
                                            PerBlockAffine)):
        # docs/format.md, Quantized pools: the spec defines no indexing for NF4/MXFP on block-paged.
        raise UnsupportedOpError("block-paged pools quantize with the affine schemes only",
                                 fix="use per-tensor, per-channel or per-block affine.")
    qplan, order = _plan(t, dtype, dev)
    walk = paged_walk(t, seq_lens)  # validates the table on the device, and seq_lens
    total, heads, dim = walk.dims
    if total * heads * dim >= U32_LIMIT:  # the kernels index the output with u32
        raise UnsupportedOpError(f"{total * heads * dim} output elements exceed the kernels' "
                                 "32-bit indexing", fix="materialize fewer sequences at once.")
    out_dtype = by_name(qplan.out_dtype)
    out = Buffer(dev, max(buffer_size(out_dtype, total * heads * dim), 1))
    if total * heads * dim == 0:
        return dense_result(dev, out_dtype, walk.dims, out)
    inputs = bind_inputs(qplan, dev, [walk.bufs[i] for i in order])
    kernel = paged_dequant_kernel(qplan.kernel)
    scalars = {p.name: qplan.scalars[p.name] for p in kernel.scalars if p.name in qplan.scalars}
    err = Buffer(dev, 4)
    err.copyin(np.zeros(1, np.uint32))
    try:
        ix, nix = _lookup(dev, walk, t.descriptor.layout)
        dev.run(kernel, dst=out, err=err, ix=ix, row=heads * dim, ntok=total, nix=nix,
                **inputs, **scalars)
        check_flag(err, qplan.kernel, lambda: _invalid(t, qplan, inputs, walk))
    except BaseException:
        out.free()
        raise
    return dense_result(dev, out_dtype, walk.dims, out)


def _lookup(dev: Any, walk: Any, lay: Any) -> tuple[Buffer, int]:
    """The kernels' ``ix`` buffer: geometry and token starts from the host, then seq_ptr and
    the block table copied on the device (validated there already)."""
    head = np.concatenate([[walk.nseq, int(lay.page_size), int(lay.num_pages), walk.nbt,
                            walk.iw], walk.starts]).astype("<u4")
    assert head.size == PAGED_IX_HEADER + walk.nseq + 1
    sp_words, bt_words = (walk.nseq + 1) * walk.iw, walk.nbt * walk.iw
    nix = head.size + sp_words + bt_words
    if nix >= 1 << 31:
        raise UnsupportedOpError("the block table exceeds 32-bit indexing",
                                 fix="split the cache.")
    ix = Buffer(dev, 4 * nix)
    ix.copyin(head.tobytes())
    dev.run(COPY_WORDS, dst=ix, src=walk.bufs[2], n=sp_words, dat=head.size)
    if bt_words:
        dev.run(COPY_WORDS, dst=ix, src=walk.bufs[1], n=bt_words, dat=head.size + sp_words)
    return ix, nix


def _invalid(t: Any, qplan: Any, inputs: dict[str, Any], walk: Any) -> HurrayFormatError:
    """Name the invalid parameter: per page slot in use (by its first token), else by entry."""
    q = t.descriptor.quantization
    if not isinstance(q, PerBlockAffine):
        return explain_invalid(qplan, inputs)
    lay = t.descriptor.layout
    word = np.dtype("<u8" if walk.iw == 2 else "<u4")
    bt = _host_bytes(walk.bufs[1]).view(word)
    sp = _host_bytes(walk.bufs[2]).view(word)[: walk.nseq + 1]
    slots = token_slots(bt, sp, np.diff(walk.starts.astype(np.int64)), int(lay.page_size),
                        int(lay.num_pages))
    bad = bad_affine_params(qplan, inputs)
    hits = np.flatnonzero(bad[slots])
    k = int(hits[0]) if hits.size else 0
    return HurrayFormatError(
        f"page slot {int(slots[k])} (token {k}) has an invalid scale or zero point",
        field="scales", fix="scales must be finite and non-zero, zero points within the "
                            "storage type's range, for every page slot in use.")
