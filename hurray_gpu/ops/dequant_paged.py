"""Dequantizing block-paged tensors (facts §2.6): gather the pages on the device (sub-byte pools
as byte rows), then run the affine kernel with per-page-slot parameters mapped through the table.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import ml_dtypes
import numpy as np

from hurray_gpu.buffer import Buffer
from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError
from hurray_gpu.format.descriptor import RowMajor, TensorDescriptor
from hurray_gpu.format.descriptor.quant import (
    SCALE_TYPE_SIZES,
    PerBlockAffine,
    PerChannelAffine,
    PerTensorAffine,
)
from hurray_gpu.format.descriptor.validate import validate_descriptor
from hurray_gpu.format.dtypes import by_name

__all__ = ["dequantize_paged", "token_slots"]

_SCALE_NP = {1: np.dtype("<f2"), 2: np.dtype(ml_dtypes.bfloat16), 3: np.dtype("<f4")}


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


def _slot_params(t: Any, q: PerBlockAffine, slots: np.ndarray, slot_count: int
                 ) -> tuple[np.ndarray, np.ndarray | None]:
    """Per-token f32 scales (exact widening) and i32 zero points, gathered by slot."""
    width = SCALE_TYPE_SIZES[q.scale_type_tag]
    raw = _host_bytes(t.buffers[q.scale_buffer_index])
    need = slot_count * width
    zp_raw = None
    if q.zero_point_buffer_index is not None:
        if q.zero_point_buffer_index == q.scale_buffer_index:
            zp_raw, need = raw[need:need + 4 * slot_count], need + 4 * slot_count
        else:
            zp_raw = _host_bytes(t.buffers[q.zero_point_buffer_index])[: 4 * slot_count]
    if raw.size < need or (zp_raw is not None and zp_raw.size < 4 * slot_count):
        raise HurrayFormatError(f"the parameter buffers hold fewer than {slot_count} page slots",
                                field="scales", fix="write one scale (and zero point) per "
                                                    "page slot, num_pages * page_size.")
    scales = raw[: slot_count * width].view(_SCALE_NP[q.scale_type_tag]).astype(np.float32)
    zps = None if zp_raw is None else zp_raw.view("<i4")[slots].astype("<i4")
    return scales[slots], zps


def _dense(t: Any, gathered: Any, quant: Any, params: list[np.ndarray],
           shape: tuple[int, ...]) -> Any:
    """The gathered codes as a dense row-major ``shape`` Tensor of ``t``'s storage type."""
    from hurray_gpu.tensor import Tensor
    from hurray_gpu.tensor_device import is_host

    dev = gathered.device
    h0 = gathered.descriptor.buffers[0]
    blobs = [np.ascontiguousarray(p).view(np.uint8).reshape(-1) for p in params]
    bufs = [gathered.buffers[0]] + [b if is_host(dev) else Buffer.from_bytes(dev, b)
                                    for b in blobs]
    handles = (h0,) + tuple(dataclasses.replace(h0, byte_size=int(b.size)) for b in blobs)
    desc = TensorDescriptor(t.dtype, shape, RowMajor(), handles,
                            quantization=quant)
    return Tensor.from_parts(desc, bufs)


def _plain(t: Any) -> tuple[Any, tuple[int, ...]]:
    """The same pages without quantization (the layout's own three buffers), and the shape.

    A token's ``heads * dim`` codes are consecutive bits of its page slot (hurray-facts
    §1.3), so a sub-byte pool whose token rows fill whole bytes is gathered as a uint8 pool
    of one byte row per slot: the gathered bytes are then the dense row-major codes.

    Raises:
        UnsupportedOpError: a sub-byte pool whose token rows end inside a byte.
    """
    from hurray_gpu.tensor import Tensor

    desc = t.descriptor
    shape = tuple(int(d) for d in desc.shape)  # validated: block-paged shapes are static
    plain = dataclasses.replace(desc, quantization=None, buffers=desc.buffers[:3])
    row_bits = shape[1] * shape[2] * desc.dtype.bits
    if desc.dtype.bits < 8:
        if row_bits % 8:
            raise UnsupportedOpError(
                f"a token row of this sub-byte pool holds {row_bits} bits, not whole bytes",
                fix="make num_heads * head_dim * bits a multiple of 8 (pad head_dim), or "
                    "store the pages as int8/uint8.")
        plain = dataclasses.replace(plain, dtype=by_name("uint8"), statistics=None,
                                    shape=(shape[0], 1, row_bits // 8))
    return Tensor.from_parts(plain, t.buffers[:3]), shape


def dequantize_paged(t: Any, dtype: str, seq_lens: Any) -> Any:
    """Dequantize a block-paged tensor into a dense ``[total_tokens, heads, dim]`` Tensor.

    Args:
        t: the block-paged Tensor (on its device; validated here before any launch).
        dtype: the output type.
        seq_lens: tokens per sequence; default ``t.seq_lens``, else full pages (§12.20).

    Returns:
        A dense row-major Tensor on ``t``'s device.

    Raises:
        HurrayFormatError: a malformed descriptor, block table, seq_ptr, seq_lens or an
            invalid scale / zero point of a page slot in use.
        UnsupportedOpError: NF4/MXFP pools (hurray-facts §12.25), or sub-byte pools whose
            token rows do not fill whole bytes.
    """
    from hurray_gpu.ops.dequantize import dequantize
    from hurray_gpu.ops.layout_paged import materialize_paged

    desc = t.descriptor
    validate_descriptor(desc, permissive=False)
    q = desc.quantization
    if q is not None and not isinstance(q, (PerTensorAffine, PerChannelAffine,
                                            PerBlockAffine)):
        # hurray-facts §12.25: the spec defines no indexing for NF4/MXFP on block-paged.
        raise UnsupportedOpError("block-paged pools quantize with the affine schemes only",
                                 fix="use per-tensor, per-channel or per-block affine.")
    lens = seq_lens if seq_lens is not None else getattr(t, "seq_lens", None)
    plain, shape = _plain(t)
    # Validates the block table and seq_ptr on the device, and seq_lens, before any use.
    gathered = materialize_paged(plain, None, lens)
    if q is None:
        sub = desc.dtype.bits < 8
        return dequantize(_dense(t, gathered, None, [], shape) if sub else gathered, dtype)
    if not isinstance(q, PerBlockAffine):
        idx = {q.scale_buffer_index: 1} if isinstance(q, PerChannelAffine) else {}
        if isinstance(q, PerChannelAffine) and q.zero_point_buffer_index is not None:
            idx.setdefault(q.zero_point_buffer_index, 2)
        params = [_host_bytes(t.buffers[i]) for i in sorted(idx, key=idx.__getitem__)]
        quant = q if isinstance(q, PerTensorAffine) else dataclasses.replace(
            q, scale_buffer_index=1, zero_point_buffer_index=None if q.zero_point_buffer_index
            is None else idx[q.zero_point_buffer_index])
        return dequantize(_dense(t, gathered, quant, params, shape), dtype)
    lay = desc.layout
    slots = _slots(t, lens)
    scales, zps = _slot_params(t, q, slots, int(lay.num_pages) * int(lay.page_size))
    quant = PerChannelAffine(0, 1, None if zps is None else 2)
    params = [scales] + ([] if zps is None else [zps])
    try:
        return dequantize(_dense(t, gathered, quant, params, shape), dtype)
    except HurrayFormatError as exc:
        raise _slot_error(t, slots, scales, zps) from exc


def _slot_error(t: Any, slots: np.ndarray, scales: np.ndarray, zps: np.ndarray | None
                ) -> HurrayFormatError:
    """Name the page slot behind the first invalid per-token parameter the kernel flagged."""
    bad = ~np.isfinite(scales) | (scales == 0)
    if zps is not None:
        storage = t.descriptor.dtype
        lo, hi = ((-(1 << (storage.bits - 1)), (1 << (storage.bits - 1)) - 1) if storage.signed
                  else (0, min((1 << storage.bits) - 1, (1 << 31) - 1)))
        bad |= (zps < lo) | (zps > hi)
    k = int(np.flatnonzero(bad)[0]) if bad.any() else 0
    return HurrayFormatError(
        f"page slot {int(slots[k])} (token {k}) has an invalid scale or zero point",
        field="scales", fix="scales must be finite and non-zero, zero points within the "
                            "storage type's range, for every page slot in use.")


def _slots(t: Any, lens: Any) -> np.ndarray:
    lay = t.descriptor.layout
    word = np.dtype("<u8" if lay.block_table_index_type else "<u4")
    bt = _host_bytes(t.buffers[1]).view(word)
    sp = _host_bytes(t.buffers[2]).view(word)[: int(lay.num_seqs) + 1]
    ps = int(lay.page_size)
    lens_arr = np.diff(sp.astype(np.int64)) * ps if lens is None else \
        np.asarray(lens, np.int64).reshape(-1)
    return token_slots(bt, sp, lens_arr, ps, int(lay.num_pages))
