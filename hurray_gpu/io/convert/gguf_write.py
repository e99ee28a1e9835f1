"""Hurray tensors and KV back to GGUF (version 3): the inverse of :mod:`ggml_quants` for the
32-element block types, and the container (header, key/values with their GGUF types, tensor
infos, aligned data).

Each encoder takes the importer's Hurray form and returns the GGML blocks: 4-bit codes repacked
to GGML's nibble order, Q5 bit 4 gathered into ``qh``, and the zero-scale repair reversed (a
block of all-zero codes with scale +-1 was a block with ``d = +-0``: both decode to the same
bits, and a quantizer writes the zero).
"""

from __future__ import annotations

import ast
import struct
from collections.abc import Callable
from typing import IO, Any

import numpy as np

from hurray_gpu.errors import UnsupportedConversionError
from hurray_gpu.io.convert.ggml_kquants import IQ4_VALUES
from hurray_gpu.io.kv import UInt64

__all__ = ["GGML_IDS", "encode_block", "gguf_kv", "write_gguf_header"]

# GGML type name -> type id (ggml.c), for the types the exporter writes.
GGML_IDS = {"F32": 0, "F16": 1, "Q4_0": 2, "Q4_1": 3, "Q5_0": 6, "Q5_1": 7, "Q8_0": 8,
            "I8": 24, "I16": 25, "I32": 26, "I64": 27, "F64": 28, "BF16": 30, "IQ4_NL": 20,
            "TQ1_0": 34, "Q2_K": 10, "Q3_K": 11, "Q4_K": 12, "Q5_K": 13, "Q6_K": 14,
            "IQ4_XS": 23, "MXFP4": 39}
_ONE, _SIGN = 0x3C00, 0x8000
# GGUF value type ids and struct formats (the GGUF specification's table).
_TYPES = {"UINT8": (0, "B"), "INT8": (1, "b"), "UINT16": (2, "H"), "INT16": (3, "h"),
          "UINT32": (4, "I"), "INT32": (5, "i"), "FLOAT32": (6, "f"), "BOOL": (7, "?"),
          "STRING": (8, ""), "ARRAY": (9, ""), "UINT64": (10, "Q"), "INT64": (11, "q"),
          "FLOAT64": (12, "d")}
_PART = 1 << 15  # blocks per encoding step: temporaries stay in the cache
# TQ1_0's base-3 weights: the first trit is the most significant (read back first by ggml).
_POW3 = np.array((81, 27, 9, 3, 1), np.uint16).reshape(1, 5, 1)
_IQ4_INDEX = np.zeros(256, np.uint8)  # int8 table value (as a byte) -> its 4-bit index
_IQ4_INDEX[IQ4_VALUES.view(np.uint8)] = np.arange(16, dtype=np.uint8)


def _unrepair(d: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """The f16 bits ``d`` with the importer's zero-scale repair undone: scale +-1 over codes
    that are all zero becomes +-0 (the same decoded bits)."""
    zero = ~codes.any(axis=1) & ((d & 0x7FFF) == _ONE)
    return np.where(zero, d & _SIGN, d).astype("<u2")


def _nibbles(codes: np.ndarray) -> np.ndarray:
    """Hurray's packed 4-bit codes (element 2k low nibble of byte k) as one code a byte."""
    out = np.empty((codes.shape[0], codes.shape[1] * 2), np.uint8)
    out[:, 0::2], out[:, 1::2] = codes & 0x0F, codes >> 4
    return out


def _ggml_qs(q: np.ndarray) -> np.ndarray:
    """32 codes a block (low 4 bits) -> GGML's 16 bytes: element j low, j + 16 high."""
    return (q[:, :16] & 0x0F) | ((q[:, 16:] & 0x0F) << 4)


def _qh(q: np.ndarray) -> np.ndarray:
    """Bit 4 of each of 32 codes -> GGML's little-endian u32 ``qh`` (bit j = element j)."""
    return np.packbits((q >> 4) & 1, axis=1, bitorder="little")


def _halves(*values: np.ndarray) -> list[np.ndarray]:
    return [v.astype("<u2").reshape(-1, 1).view(np.uint8) for v in values]


def encode_block(kind: str, parts: list[np.ndarray]) -> np.ndarray:
    """GGML blocks of ``kind`` from the Hurray buffers of the importer's form.

    Args:
        kind: ``Q8_0``, ``Q4_0``, ``Q5_0``, ``TQ1_0``, ``IQ4_NL`` (parts: codes, f16 scales) or
            ``Q4_1``, ``Q5_1`` (parts: base codes, base scales, offsets ``m`` as f16 bits).

    Returns:
        The blocks, one row of bytes each.
    """
    blocks = parts[1].size
    out = []
    for at in range(0, blocks, _PART):
        part = [p[at:at + _PART] for p in parts]
        out.append(_ENCODERS[kind](*part))
    return np.concatenate(out) if out else np.empty((0, 0), np.uint8)


def _q8_0(codes: np.ndarray, d: np.ndarray) -> np.ndarray:
    codes = codes.reshape(-1, 32)
    return np.concatenate(_halves(_unrepair(d, codes)) + [codes.view(np.uint8)], axis=1)


def _q4_0(codes: np.ndarray, d: np.ndarray) -> np.ndarray:
    q = _nibbles(codes.reshape(-1, 16))  # int4 nibbles of q - 8: zero exactly where q - 8 is
    return np.concatenate(_halves(_unrepair(d, q)) + [_ggml_qs(q ^ 8)], axis=1)


def _q5_0(codes: np.ndarray, d: np.ndarray) -> np.ndarray:
    codes = codes.reshape(-1, 32)
    q = (codes.view(np.int8) + 16).astype(np.uint8)
    return np.concatenate(_halves(_unrepair(d, codes)) + [_qh(q), _ggml_qs(q)], axis=1)


def _q4_1(codes: np.ndarray, d: np.ndarray, m: np.ndarray) -> np.ndarray:
    q = _nibbles(codes.reshape(-1, 16))
    return np.concatenate(_halves(_unrepair(d, q), m) + [_ggml_qs(q)], axis=1)


def _q5_1(codes: np.ndarray, d: np.ndarray, m: np.ndarray) -> np.ndarray:
    q = codes.reshape(-1, 32)
    return np.concatenate(_halves(_unrepair(d, q), m) + [_qh(q), _ggml_qs(q)], axis=1)


def _base3(t: np.ndarray, count: int, group: int) -> np.ndarray:
    """``count`` trits per byte (rows of ``count * group``, trit k of byte j at element
    ``k * group + j``) -> ggml's bytes ``ceil(x * 256 / 243)``, whose top trit after each
    multiplication by 3 (mod 256) is the next one."""
    x = (t.reshape(t.shape[0], count, group) * _POW3[:, :count]).sum(axis=1, dtype=np.uint16)
    return ((x * 256 + 242) // 243).astype(np.uint8)


def _tq1_0(codes: np.ndarray, d: np.ndarray) -> np.ndarray:
    """int2 codes ``t - 1`` in {-1, 0, 1} (block 256) -> TQ1_0's 48 ``qs``, 4 ``qh``, ``d``."""
    codes = codes.reshape(-1, 64)
    t = ((codes[:, :, None] >> np.array((0, 2, 4, 6), np.uint8)) + 1) & 3  # int2 -> t
    t = t.reshape(-1, 256)
    return np.concatenate([_base3(t[:, :160], 5, 32), _base3(t[:, 160:240], 5, 16),
                           _base3(t[:, 240:], 4, 4)] + _halves(_unrepair(d, codes)), axis=1)


def _iq4_nl(codes: np.ndarray, d: np.ndarray) -> np.ndarray:
    """int8 IQ4 table values -> their indices in GGML nibble order; a repaired zero block
    (codes 0, scale +-1) gets ``d = +-0`` and index 8 (value 1): the same signed zeros."""
    codes = codes.reshape(-1, 32)
    q = _IQ4_INDEX[codes.view(np.uint8)]
    q[~codes.any(axis=1)] = 8
    return np.concatenate(_halves(_unrepair(d, codes)) + [_ggml_qs(q)], axis=1)


_ENCODERS: dict[str, Callable[..., np.ndarray]] = {
    "Q8_0": _q8_0, "Q4_0": _q4_0, "Q5_0": _q5_0, "Q4_1": _q4_1, "Q5_1": _q5_1, "TQ1_0": _tq1_0,
    "IQ4_NL": _iq4_nl}


# -- the container --------------------------------------------------------------------------
def _string(text: str | bytes) -> bytes:
    raw = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    return struct.pack("<Q", len(raw)) + raw


def _value(vtype: str, value: Any) -> bytes:
    """One GGUF value (without its type id) of GGUF type ``vtype`` (``ARRAY[UINT32]``)."""
    if vtype.startswith("ARRAY["):
        elem = vtype[6:-1]
        if isinstance(value, str):  # the importer kept empty arrays as their repr
            value = ast.literal_eval(value)
        if not isinstance(value, (list, tuple)) or elem not in _TYPES or elem == "ARRAY":
            raise ValueError(f"a {vtype} value must be a flat list, not {value!r:.60}")
        return (struct.pack("<IQ", _TYPES[elem][0], len(value))
                + b"".join(_value(elem, v) for v in value))
    if vtype == "STRING":
        if not isinstance(value, (str, bytes)):
            raise ValueError(f"a STRING value must be a string, not {type(value).__name__}")
        return _string(value)
    if vtype not in _TYPES:
        raise ValueError(f"unknown GGUF value type {vtype}")
    return struct.pack("<" + _TYPES[vtype][1], value)


def _type_of(vtype: str) -> int:
    return _TYPES["ARRAY" if vtype.startswith("ARRAY[") else vtype][0]


def _natural(value: Any) -> str:
    """The GGUF type a Hurray KV value of no recorded GGUF type is written as."""
    if isinstance(value, bool):
        return "BOOL"
    if isinstance(value, UInt64):
        return "UINT64"
    if isinstance(value, int):
        return "INT64"
    if isinstance(value, float):
        return "FLOAT64"
    if isinstance(value, (bytes, bytearray)):
        return "ARRAY[UINT8]"
    if isinstance(value, list) and value:
        return f"ARRAY[{_natural(value[0])}]"
    return "STRING"


def gguf_kv(metadata: dict[str, Any]) -> tuple[int, list[tuple[str, str, Any]]]:
    """The GGUF version and key/values of a ``.hrry``'s KV section.

    ``gguf.<key>`` entries get back their GGUF types from ``gguf.value_types``, in that
    (the source file's) order; every other KV entry is written as ``hurray.<key>`` with the
    natural GGUF type of its value (bytes as ``ARRAY[UINT8]``).

    Returns:
        ``(version, [(key, GGUF type, value), ...])``.
    """
    types = metadata.get("gguf.value_types", [])
    out = []
    for item in types if isinstance(types, list) else []:
        key, _, vtype = str(item).partition("=")
        if f"gguf.{key}" in metadata:
            out.append((key, vtype, metadata[f"gguf.{key}"]))
    for key, value in metadata.items():
        if not key.startswith("gguf."):
            if isinstance(value, (bytes, bytearray)):
                value = list(bytes(value))
            out.append((f"hurray.{key}", _natural(value), value))
    version = metadata.get("gguf.version", 3)
    return (version if version in (2, 3) else 3), out


def write_gguf_header(handle: IO[bytes], version: int, kv: list[tuple[str, str, Any]],
                      infos: list[tuple[str, tuple[int, ...], str, int]],
                      alignment: int, source: str) -> int:
    """Write the header, key/values and tensor infos ``(name, shape, type, offset)`` and pad
    to ``alignment``; returns the bytes written (the data section starts there).

    Raises:
        UnsupportedConversionError: a value that its GGUF type cannot hold (names the key).
    """
    head = [b"GGUF", struct.pack("<IQQ", version, len(infos), len(kv))]
    for key, vtype, value in kv:
        try:
            head += [_string(key), struct.pack("<I", _type_of(vtype)), _value(vtype, value)]
        except (ValueError, SyntaxError, KeyError, TypeError, struct.error) as exc:
            raise UnsupportedConversionError(
                f"metadata key {key!r} ({vtype}) cannot be written to GGUF: {exc}",
                source=source, fix="remove or fix that KV entry (and its gguf.value_types "
                "item) with hg.save, then export again.") from None
    for name, shape, kind, offset in infos:
        ne = tuple(reversed(shape))  # GGUF lists the innermost dimension first
        head += [_string(name), struct.pack(f"<I{len(ne)}QIQ", len(ne), *ne, GGML_IDS[kind],
                                            offset)]
    data = b"".join(head)
    data += b"\0" * (-len(data) % alignment)
    handle.write(data)
    return len(data)
