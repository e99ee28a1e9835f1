"""dequantize() of sub-byte block-paged pools (int4/uint4/int2/uint2, bool, float4/float6),
bit-exact against ``block_paged_to_dense`` of the codes and the dequantization formula (Hurray spec, Quantization), on every device.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.format.addressing import block_paged_to_dense
from hurray_gpu.format.descriptor import BufferHandle, TensorDescriptor
from hurray_gpu.format.descriptor.layouts import BlockPaged
from hurray_gpu.format.descriptor.quant import (
    NF4,
    PerBlockAffine,
    PerChannelAffine,
    PerTensorAffine,
)
from hurray_gpu.format.dtypes import buffer_size, by_name
from hurray_gpu.ops import dequantize
from hurray_gpu.tensor import Tensor

PS, PAGES = 4, 5
SLOTS = PAGES * PS
# Sequence 0: pages [3, 0], 6 tokens; sequence 1 shares page 3 (prefix), then page 4: 5 tokens.
BT, SP, LENS = [3, 0, 3, 4], [0, 2, 4], [6, 5]
NP_OUT = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}


def _pack(codes: np.ndarray, bits: int) -> np.ndarray:
    """The little-endian bit stream of ``codes`` (docs/format.md, Element types and sizes)."""
    lanes = ((codes.astype(np.uint32)[:, None] >> np.arange(bits)) & 1).astype(np.uint8)
    return np.packbits(lanes.reshape(-1), bitorder="little")


def _pool(storage: str, heads: int, dim: int, quant, params: list[np.ndarray],
          seed: int = 0) -> tuple[Tensor, np.ndarray]:
    """A sub-byte block-paged tensor and its codes, shaped [pages, page_size, heads, dim]."""
    dt = by_name(storage)
    n = SLOTS * heads * dim
    codes = np.random.default_rng(seed).integers(0, 1 << dt.bits, n).astype(np.uint8)
    packed = _pack(codes, dt.bits)
    assert packed.size == buffer_size(dt, n)
    blobs = [packed, np.asarray(BT, "<u4").view(np.uint8), np.asarray(SP, "<u4").view(np.uint8)]
    blobs += [np.ascontiguousarray(p).view(np.uint8).reshape(-1) for p in params]
    desc = TensorDescriptor(dt, (sum(LENS), heads, dim), BlockPaged(PS, PAGES, num_seqs=2),
                            tuple(BufferHandle(b.size, 64) for b in blobs), quantization=quant)
    return Tensor.from_parts(desc, blobs), codes.reshape(PAGES, PS, heads, dim)


def _gather(arr: np.ndarray) -> np.ndarray:
    return block_paged_to_dense(arr, np.array(BT), np.array(SP), PS, LENS)


def _signed(codes: np.ndarray, bits: int) -> np.ndarray:
    v = codes.astype(np.int64)
    return np.where(v >= 1 << (bits - 1), v - (1 << bits), v)


def _check(t: Tensor, want32: np.ndarray, device) -> None:
    for out, npt in NP_OUT.items():
        got = dequantize(t, out, device=device, seq_lens=LENS)
        assert got.shape == want32.shape and got.dtype.name == out and got.device is device
        bits = np.asarray(got.to("cpu").buffers[0]).copy()
        want = want32.astype(np.float32).astype(npt)
        assert np.array_equal(bits, want.view(np.uint8).reshape(-1)), out


@pytest.mark.parametrize("storage", ["int4", "uint4", "int2", "uint2"])
@pytest.mark.parametrize("asym", [False, True])
def test_per_block_per_page_slot_sub_byte(device, storage: str, asym: bool) -> None:
    bits = by_name(storage).bits
    rng = np.random.default_rng(bits * 3 + asym)
    scales = (rng.uniform(0.25, 4.0, SLOTS) * rng.choice([-1, 1], SLOTS)).astype(np.float16)
    signed = storage.startswith("int")
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    zps = rng.integers(lo, hi, SLOTS, endpoint=True).astype("<i4")
    quant = PerBlockAffine(0, PS, 3, 4 if asym else None, 1)
    t, codes = _pool(storage, 2, 3 if bits == 4 else 4, quant,
                     [scales, zps] if asym else [scales], seed=bits)
    q = _signed(codes, bits) if signed else codes.astype(np.int64)
    s = _gather(scales.astype(np.float32).reshape(PAGES, PS, 1, 1))
    z = _gather(zps.reshape(PAGES, PS, 1, 1)).astype(np.int64) if asym else 0
    _check(t, s * (_gather(q) - z).astype(np.float32), device)


def test_per_tensor_and_per_channel_sub_byte(device) -> None:
    t, codes = _pool("uint4", 2, 5, PerTensorAffine(0.25, 7), [], seed=1)
    _check(t, np.float32(0.25) * (_gather(codes).astype(np.int64) - 7).astype(np.float32),
           device)
    scales = np.array([0.5, -2.0, 3.0, 1.5], np.float32)
    t, codes = _pool("int2", 3, 4, PerChannelAffine(2, 3, None), [scales], seed=2)
    want = scales.reshape(1, 1, 4) * _gather(_signed(codes, 2)).astype(np.float32)
    _check(t, want, device)


@pytest.mark.parametrize(("storage", "dim"), [
    ("float4_e2m1", 3), ("float6_e2m3", 2), ("float6_e3m2", 6), ("int4", 1), ("bool", 4)])
def test_unquantized_sub_byte_pools_unpack(device, storage: str, dim: int) -> None:
    t, codes = _pool(storage, 4, dim, None, [], seed=dim)
    dt = by_name(storage)
    if storage.startswith("float"):
        values = codes.view(dt.numpy).astype(np.float32)
    else:
        values = (_signed(codes, dt.bits) if dt.signed else codes).astype(np.float32)
    _check(t, _gather(values), device)


@pytest.mark.parametrize(("storage", "heads", "dim"), [("uint4", 1, 3), ("int2", 1, 5),
                                                      ("float6_e2m3", 1, 3)])
def test_rows_ending_inside_a_byte(device, storage: str, heads: int, dim: int) -> None:
    # 12, 10 and 18 bits per token row: rows start mid-byte, read in place from the pool.
    t, codes = _pool(storage, heads, dim, PerTensorAffine(0.5, 1) if storage != "float6_e2m3"
                     else None, [], seed=dim)
    dt = by_name(storage)
    if storage.startswith("float"):
        want = _gather(codes.view(dt.numpy).astype(np.float32))
    else:
        q = _signed(codes, dt.bits) if dt.signed else codes.astype(np.int64)
        want = np.float32(0.5) * (_gather(q) - 1).astype(np.float32)
    _check(t, want, device)


def test_nf4_pools_are_refused(device) -> None:
    absmax = np.ones(sum(LENS) * 2, np.float32)      # one per 8-element block of a row
    t, _ = _pool("uint4", 2, 8, NF4(2, 8, 3), [absmax])
    with pytest.raises(UnsupportedOpError, match="Fix:"):
        dequantize(t.to(device), seq_lens=LENS)
