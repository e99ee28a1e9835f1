"""GGML's ternary types TQ1_0 and TQ2_0 as Hurray tensors, bit-exact with gguf-py's own
dequantization (``gguf.quants``) in float32.

Both are 256-element blocks of codes ``t`` with one f16 ``d`` (the block's last two bytes),
decoded as ``d * (t - 1)``: per-block affine (scheme 0x03), symmetric, block 256, f16 scales,
int2 codes ``t - 1``. gguf-py's f32 product is one rounding, as Hurray's ``scale * q`` is.
TQ2_0 holds 2-bit codes (four to a byte, element ``32 * (4 * h + k) + j`` at bits ``2k`` of
byte ``32 * h + j``); TQ1_0 packs trits in base 3, five to a ``qs`` byte and four to a ``qh``
byte, read back as the top trit of ``(byte * 3^k mod 256) * 3``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hurray_gpu.io.convert.ggml_quants import (
    FIX_REQUANT,
    _half,
    _parts,
    _per_block,
    _repair,
    _shaped,
)
from hurray_gpu.io.convert.source import Converted, SourceFile, SourceTensor, refuse

__all__ = ["TERNARY"]

_POW3 = np.array((1, 3, 9, 27, 81), np.uint8).reshape(1, 1, 5, 1)
_SHIFT2 = np.array((0, 2, 4, 6), np.uint8).reshape(1, 1, 4, 1)


def _tq2_0(b: np.ndarray) -> np.ndarray:
    n = b.shape[0]
    q = (b[:, :64].reshape(n, -1, 1, 32) >> _SHIFT2) & 3
    return q.reshape(n, 256).astype(np.int8) - np.int8(1)


def _trits(qs: np.ndarray, group: int, powers: np.ndarray) -> np.ndarray:
    """Base-3 fields: byte ``j`` of each ``group`` times ``3^k`` (mod 256) in element order."""
    return (qs.reshape(qs.shape[0], -1, 1, group) * powers).reshape(qs.shape[0], -1)


def _tq1_0(b: np.ndarray) -> np.ndarray:
    x = np.concatenate([_trits(b[:, :32], 32, _POW3), _trits(b[:, 32:48], 16, _POW3),
                        _trits(b[:, 48:52], 4, _POW3[:, :, :4])], axis=1)
    return ((x.astype(np.uint16) * 3) >> 8).astype(np.int8) - np.int8(1)


def _ternary(size: int, decode: Callable[[np.ndarray], np.ndarray]) -> Callable[
        [SourceFile, SourceTensor, np.ndarray], Converted]:
    def convert(src: SourceFile, entry: SourceTensor, raw: np.ndarray) -> Converted:
        blocks = raw.reshape(-1, size)
        d = _half(blocks, size // 2 - 1)
        zero = _repair(src, entry, d, "scale", lambda i: decode(blocks[i]))
        codes = src.buffer(blocks.shape[0] * 64, "codes").reshape(-1, 64)
        for part in _parts(blocks.shape[0], 256):
            q = decode(blocks[part])
            high = np.flatnonzero((q == 2).any(axis=1))
            if high.size:  # only TQ2_0 can hold code 3; its quantizer never writes it
                raise refuse(src, entry, f"block {(part.start or 0) + high[0]} has 2-bit code 3 "
                             "(the value 2 * d), which int2 codes t - 1 cannot hold",
                             FIX_REQUANT)
            v = (q.view(np.uint8) & 3).reshape(q.shape[0], -1, 4)
            out = codes[part]
            np.copyto(out, v[:, :, 0])  # Hurray's int2: element i at bits 2 * (i % 4), LSB first
            for k in (1, 2, 3):
                out |= v[:, :, k] << np.uint8(2 * k)
        codes[zero] = 0

        def expected() -> np.ndarray:  # gguf-py's d * (t - 1), in f32
            return (_half(blocks, size // 2 - 1).view(np.float16).astype(np.float32)[:, None]
                    * decode(blocks).astype(np.float32))
        return Converted(_per_block("int2", entry.shape, codes, d, None, 256),
                         _shaped(entry, expected))
    return convert


# GGML type -> (elements per block, block bytes, mapping).
TERNARY: dict[str, tuple[int, int, Callable[[SourceFile, SourceTensor, np.ndarray],
                                            Converted]]] = {
    "TQ1_0": (256, 54, _ternary(54, _tq1_0)),
    "TQ2_0": (256, 66, _ternary(66, _tq2_0)),
}
