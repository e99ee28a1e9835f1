"""Known answers from outside the project: GGUF Q4_0/Q8_0 (``gguf.quants``), bitsandbytes NF4
(CPU ``dequantize_4bit``) and OCP MX element values (ml_dtypes), on every device.

The peers are test extras (pip ``gguf``, ``bitsandbytes``, ``torch``): skipped when absent.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from hurray_gpu.ops import dequantize
from hurray_gpu.ops.quantize import quantized_tensor
from tests._support import require_peer

QK = 32   # GGUF Q4_0 / Q8_0 block size


def _f32(t, device) -> np.ndarray:
    return dequantize(t, "float32", device=device).to("cpu").numpy()


def _gguf_blocks(rows: int, cols: int, qtype_name: str) -> tuple[np.ndarray, object, object]:
    gguf = require_peer("gguf")
    from gguf.quants import dequantize as g_dequantize
    from gguf.quants import quantize as g_quantize

    qtype = getattr(gguf.GGMLQuantizationType, qtype_name)
    x = np.random.default_rng(len(qtype_name)).normal(size=(rows, cols)).astype(np.float32)
    raw = g_quantize(x, qtype)
    return raw, g_dequantize(raw, qtype), qtype


def test_q4_0_against_gguf(device) -> None:
    # Q4_0 block: f16 d, then 16 bytes; byte j holds element j (low nibble) and j + 16
    # (high nibble); x = d * (q - 8): per-block affine, uint4, f16 scale, zero point 8.
    rows, cols = 3, 96
    raw, want, _ = _gguf_blocks(rows, cols, "Q4_0")
    blocks = raw.reshape(rows, cols // QK, 18)
    d = blocks[:, :, :2].copy().view(np.float16).reshape(-1)
    qs = blocks[:, :, 2:]
    codes = np.concatenate([qs & 0x0F, qs >> 4], axis=2).reshape(rows, cols)
    t = quantized_tensor(codes.astype(np.uint8), "uint4", "per_block", axis=1, block_size=QK,
                         scales=d, zero_points=np.full(d.size, 8, np.int32),
                         scale_type="float16")
    got = _f32(t, device)
    assert np.array_equal(got, np.asarray(want, np.float32).reshape(rows, cols))


def test_q8_0_against_gguf(device) -> None:
    # Q8_0 block: f16 d, then 32 int8; x = d * q: symmetric per-block int8, f16 scale.
    rows, cols = 4, 64
    raw, want, _ = _gguf_blocks(rows, cols, "Q8_0")
    blocks = raw.reshape(rows, cols // QK, 34)
    d = blocks[:, :, :2].copy().view(np.float16).reshape(-1)
    codes = blocks[:, :, 2:].copy().view(np.int8).reshape(rows, cols)
    t = quantized_tensor(codes, "int8", "per_block", axis=1, block_size=QK, scales=d,
                         scale_type="float16")
    assert np.array_equal(_f32(t, device), np.asarray(want, np.float32).reshape(rows, cols))


@pytest.mark.parametrize("blocksize", [64, 128])
def test_nf4_against_bitsandbytes(device, blocksize: int) -> None:
    torch = require_peer("torch")
    bnbf = require_peer("bitsandbytes.functional", "bitsandbytes")
    n = blocksize * 5 + blocksize // 2          # a partial last block
    x = torch.from_numpy(np.random.default_rng(blocksize).normal(size=n).astype(np.float32))
    packed, state = bnbf.quantize_4bit(x, blocksize=blocksize, quant_type="nf4")
    want = bnbf.dequantize_4bit(packed, state, quant_type="nf4").numpy().reshape(-1)
    # bitsandbytes packs element 2i in the HIGH nibble; Hurray uint4 is LSB-first.
    pb = packed.numpy().reshape(-1)
    codes = np.stack([pb >> 4, pb & 0x0F], axis=1).reshape(-1)[:n]
    absmax = state.absmax.numpy().astype(np.float32)
    t = quantized_tensor(codes.astype(np.uint8), "uint4", "nf4", axis=0, block_size=blocksize,
                         scales=absmax)
    got = _f32(t, device)
    assert np.array_equal(got, want[:n].astype(np.float32))


MX_TYPES = {"float8_e4m3": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2,
            "float6_e2m3": ml_dtypes.float6_e2m3fn, "float6_e3m2": ml_dtypes.float6_e3m2fn,
            "float4_e2m1": ml_dtypes.float4_e2m1fn, "int8": np.int8, "int4": ml_dtypes.int4}


@pytest.mark.parametrize("storage", sorted(MX_TYPES))
def test_mx_element_values_against_ml_dtypes(device, storage: str) -> None:
    rng = np.random.default_rng(len(storage))
    npt = np.dtype(MX_TYPES[storage])
    bits = {"float6_e2m3": 6, "float6_e3m2": 6, "float4_e2m1": 4, "int4": 4}.get(storage, 8)
    codes = rng.integers(0, 1 << bits, size=(4, 64))
    if bits == 8:
        values = codes.astype(np.uint8).view(npt)
    elif storage == "int4":
        values = (((codes + 8) % 16) - 8).astype(npt)
    else:
        # ml_dtypes' own decoding of every sub-byte code: its value at that bit pattern.
        values = codes.astype(np.uint8).view(npt)
    e8 = rng.integers(1, 255, size=8).astype(np.uint8)
    e8[:2] = (1, 254)
    t = quantized_tensor(values, storage, "mxfp", axis=1, block_size=32, scales=e8)
    scale = e8.view(ml_dtypes.float8_e8m0fnu).astype(np.float32).reshape(4, 2, 1)
    want = (values.astype(np.float32).reshape(4, 2, 32) * scale).reshape(4, 64)
    got = _f32(t, device)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))
