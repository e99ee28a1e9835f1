"""bitsandbytes 4-bit (NF4) weights in safetensors, as ``QuantState.as_dict(packed=True)``
writes them, as Hurray NF4 (scheme 0x04), bit-exact with ``bnb.functional.dequantize_4bit``.

A weight ``W`` is up to six tensors: ``W`` (packed codes, element 2i in the HIGH nibble of
byte i), ``W.absmax``, ``W.quant_map`` (the 16 levels), ``W.quant_state.bitsandbytes__nf4``
(a JSON blob as uint8: shape, dtype, blocksize, quant_type, and for double quantization
``nested_blocksize``, ``nested_offset``) and, double-quantized, ``W.nested_absmax`` and
``W.nested_quant_map``: then ``W.absmax`` holds uint8 codes decoded as bitsandbytes does,
``f32(nested_quant_map[c] * nested_absmax[i // nested_blocksize]) + f32(nested_offset)``.

bitsandbytes' blocks run over the flattened tensor; Hurray's along one axis. When a power of
two ``k`` (>= 8) divides both the block size and the last dimension, the tensor keeps its
shape with blocks of ``k`` along the last axis (each absmax repeated ``blocksize / k``
times): no block straddles a row. Otherwise it is stored 1-D (``numel``) and its shape is
kept in the KV entry ``bitsandbytes.shape.<name>``. ``fp4`` is not OCP e2m1 (its smallest
level differs) and LLM.int8 weights decode with two roundings: both are refused.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from hurray_gpu.format.descriptor import BufferHandle, RowMajor, TensorDescriptor
from hurray_gpu.format.descriptor.quant import NF4
from hurray_gpu.format.descriptor.validate import MAX_RANK
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.io.convert.source import (
    Converted,
    SourceFile,
    SourceTensor,
    element_count,
    refuse,
)
from hurray_gpu.parts import assemble

__all__ = ["BNB_STATE", "plan_bnb"]

BNB_STATE = ".quant_state.bitsandbytes__"
# The JSON blob is a few hundred bytes; 64 KiB bounds a hostile one.
_MAX_STATE = 1 << 16
_FIX_BNB = ("quantize the weight again with bitsandbytes as NF4 (bnb_4bit_quant_type='nf4'), "
            "or save it unquantized (float16/bfloat16), then convert again.")
_DTYPES = ("float32", "float16", "bfloat16")
_PARTS = ("absmax", "quant_map", "nested_absmax", "nested_quant_map")
Loader = Callable[[SourceTensor], Converted]
_STEP = 1 << 15  # 64-bit lanes per nibble-swapping step: temporaries stay in the cache
_FOUR = np.uint64(4)
_HIGH, _LOW = np.uint64(0xF0F0F0F0F0F0F0F0), np.uint64(0x0F0F0F0F0F0F0F0F)


def _nf4_levels() -> np.ndarray:
    from hurray_gpu.ops.plan import nf4_table

    return nf4_table()


def plan_bnb(src: SourceFile, entries: dict[str, SourceTensor],
             metadata: dict[str, Any]) -> dict[str, Loader]:
    """Group every bitsandbytes weight of ``entries`` (safetensors tensors by name), in place:
    each weight's auxiliary tensors are removed, its entry is replaced by the planned one, and
    a flattened weight's shape is added to ``metadata``.

    Returns:
        ``{weight name: loader}``.

    Raises:
        ConversionError: an inconsistent quant state (missing parts, sizes that disagree).
        UnsupportedConversionError: fp4, LLM.int8 (``SCB``) or a quant_map other than NF4.
    """
    for name in entries:
        if name.endswith(".SCB"):
            raise refuse(src, (name[:-4] + ".weight", "bnb-int8"), "LLM.int8 weights decode "
                         "as (CB * SCB) * (1/127) in float32, two roundings that no Hurray "
                         "per-channel scale reproduces bit for bit", _FIX_BNB)
    out: dict[str, Loader] = {}
    for state in [n for n in entries if BNB_STATE in n]:
        name, kind = state.split(BNB_STATE)[0], "bnb-" + state.split(BNB_STATE)[1]
        if kind != "bnb-nf4":
            raise refuse(src, (name, kind), "bitsandbytes fp4 is not OCP e2m1: its levels times "
                         "12 (0, 0.0625, 2, 3, 4, 6, 8, 12) are e2m1's times 2 but for the "
                         "smallest (0.0625, not 1), which no float4_e2m1 scale reproduces",
                         _FIX_BNB)
        entries[name], out[name] = _plan_one(src, entries, name,
                                             _state(src, entries.pop(state), name), metadata)
    return out


def _state(src: SourceFile, entry: SourceTensor, name: str) -> dict[str, Any]:
    if entry.kind != "U8" or entry.nbytes > _MAX_STATE:
        raise src.fail(f"its quant state is {entry.kind} of {entry.nbytes} bytes, not a uint8 "
                       f"JSON blob of at most {_MAX_STATE}", tensor=name, kind="bnb-nf4")
    text = src.read(entry.offset, entry.nbytes, "the quant state", tensor=name).tobytes()
    try:
        state = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise src.fail(f"its quant state is not JSON ({exc})", tensor=name,
                       kind="bnb-nf4") from None
    state = state if isinstance(state, dict) else {}
    shape, bs = state.get("shape"), state.get("blocksize")
    if (not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape)
            or len(shape) > MAX_RANK or type(bs) is not int or bs < 8 or bs & (bs - 1)
            or state.get("quant_type") != "nf4" or state.get("dtype") not in _DTYPES):
        raise src.fail(f"its quant state {text[:200]!r} needs quant_type 'nf4', a shape of "
                       "non-negative ints, a power-of-two blocksize >= 8 and a float dtype",
                       tensor=name, kind="bnb-nf4")
    return state


def _part(src: SourceFile, entries: dict[str, SourceTensor], name: str, part: str,
          kind: str, count: int) -> SourceTensor:
    entry = entries.pop(f"{name}.{part}", None)
    if entry is None:
        raise src.fail(f"its quant state needs the tensor {name}.{part}, which is missing",
                       tensor=name, kind="bnb-nf4")
    itemsize = 4 if kind == "F32" else 1
    if entry.kind != kind or entry.nbytes != count * itemsize:
        raise src.fail(f"{name}.{part} is {entry.kind} of {entry.nbytes} bytes, but the quant "
                       f"state needs {count} x {kind}", tensor=name, kind="bnb-nf4")
    return entry


def _plan_one(src: SourceFile, entries: dict[str, SourceTensor], name: str,
              state: dict[str, Any], metadata: dict[str, Any]) -> tuple[SourceTensor, Loader]:
    shape, bs = tuple(state["shape"]), int(state["blocksize"])
    n = element_count(shape)
    blocks = -(-n // bs)
    weight = entries.get(name)
    if weight is None or weight.nbytes < (n + 1) // 2 or weight.nbytes > (n + 1) // 2 + 7:
        raise src.fail(f"the packed weight holds {getattr(weight, 'nbytes', 0)} bytes, but "
                       f"shape {list(shape)} needs {(n + 1) // 2} (two codes a byte)",
                       tensor=name, kind="bnb-nf4")
    nested = "nested_offset" in state
    parts = {"absmax": _part(src, entries, name, "absmax", "U8" if nested else "F32", blocks),
             "quant_map": _part(src, entries, name, "quant_map", "F32", 16)}
    if nested:
        nbs, offset = state.get("nested_blocksize"), state.get("nested_offset")
        if (type(nbs) is not int or nbs <= 0 or not isinstance(offset, (int, float))
                or not math.isfinite(offset) or state.get("nested_dtype") != "float32"):
            raise src.fail("its nested quant state needs a positive int nested_blocksize, a "
                           "finite nested_offset and nested_dtype 'float32'", tensor=name,
                           kind="bnb-nf4")
        parts["nested_absmax"] = _part(src, entries, name, "nested_absmax", "F32",
                                       -(-blocks // nbs))
        parts["nested_quant_map"] = _part(src, entries, name, "nested_quant_map", "F32", 256)
    levels = _f32(src, parts["quant_map"])
    if levels.view(np.uint32).tobytes() != _nf4_levels().view(np.uint32).tobytes():
        raise refuse(src, (name, "bnb-nf4"), "its quant_map is not the NF4 table bit for bit, "
                     "and Hurray NF4 decodes with that table only", _FIX_BNB)
    hurray_shape, block = _layout(src, name, shape, bs)
    if hurray_shape != shape:
        metadata[f"bitsandbytes.shape.{name}"] = json.dumps(list(shape))
    total = weight.nbytes + sum(p.nbytes for p in parts.values())
    planned = SourceTensor(name, "bnb-nf4", hurray_shape, weight.offset, total)
    return planned, lambda e: _load(src, e, weight, parts, state, block, shape)


def _layout(src: SourceFile, name: str, shape: tuple[int, ...],
            bs: int) -> tuple[tuple[int, ...], int]:
    """The Hurray shape and block size whose blocks each lie inside one bitsandbytes block."""
    last = shape[-1] if shape else 1
    if shape and last == 0:
        return shape, bs
    k = min(bs, last & -last)  # the largest power of two dividing both
    if shape and k >= 8:
        return shape, k
    n = element_count(shape)
    if n == 0:
        return (0,), bs
    k = min(bs, 1 << (n.bit_length() - 1))
    if k < 8:
        raise refuse(src, (name, "bnb-nf4"), f"{n} elements are fewer than Hurray NF4's "
                     "smallest block of 8", _FIX_BNB)
    return (n,), k


def _f32(src: SourceFile, entry: SourceTensor) -> np.ndarray:
    raw = src.read(entry.offset, entry.nbytes, "a quant-state tensor", tensor=entry.name)
    return raw.view("<f4").astype(np.float32)


def _absmax_f32(src: SourceFile, parts: dict[str, SourceTensor],
               state: dict[str, Any]) -> np.ndarray:
    """Each block's absmax as bitsandbytes' ``dequantize_4bit`` computes it (float32)."""
    if "nested_offset" not in state:
        return _f32(src, parts["absmax"])
    a = parts["absmax"]
    codes = src.read(a.offset, a.nbytes, "the absmax codes", tensor=a.name)
    scale = _f32(src, parts["nested_absmax"])
    out = _f32(src, parts["nested_quant_map"])[codes]
    out *= scale[np.arange(codes.size) // int(state["nested_blocksize"])]
    out += np.float32(state["nested_offset"])  # f32 add after the f32 product, as bnb does
    return out


def _load(src: SourceFile, entry: SourceTensor, weight: SourceTensor,
          parts: dict[str, SourceTensor], state: dict[str, Any], block: int,
          shape: tuple[int, ...]) -> Converted:
    n, bs = element_count(shape), int(state["blocksize"])
    raw = src.read(weight.offset, (n + 1) // 2, "the packed codes", tensor=entry.name,
                   kind=entry.kind, scratch="read")
    absmax = _absmax_f32(src, parts, state)
    bad = np.flatnonzero(~(absmax >= 0) | ~np.isfinite(absmax))
    if bad.size:
        raise refuse(src, entry, f"block {bad[0]} decodes to absmax {float(absmax[bad[0]])!r}, and "
                     "Hurray NF4 absmax values must be finite and >= 0", _FIX_BNB)
    codes = _swap_nibbles(raw, src.buffer(raw.size, "codes"))
    if n % 2:
        codes[-1] &= 0x0F  # the missing element 2i + 1 is padding: zero
    per_axis = entry.shape[-1] if entry.shape else 0
    count = -(-per_axis // block) * (n // per_axis) if per_axis else 0
    scales = absmax[np.arange(count) * block // bs]  # indices, not np.repeat: bs is untrusted
    handles = (BufferHandle(codes.nbytes, 64), BufferHandle(scales.nbytes, 64))
    desc = TensorDescriptor(by_name("uint4"), entry.shape, RowMajor(), handles,
                            quantization=NF4(max(len(entry.shape) - 1, 0), block, 1))
    tensor = assemble(desc, [codes, scales.view(np.uint8)])
    return Converted(tensor, lambda: _bnb_decode(raw, absmax, bs, n).reshape(entry.shape))


def _swap_nibbles(raw: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """bnb's element 2i is the high nibble of byte i, Hurray's the low one: swap the nibbles
    of every byte, in 64-bit lanes and steps of 256 KiB (2.5x byte operations)."""
    whole = raw.size // 8 * 8
    lanes, out = raw[:whole].view("<u8"), codes[:whole].view("<u8")
    for at in range(0, lanes.size, _STEP):
        part = slice(at, at + _STEP)
        high = lanes[part] << _FOUR
        high &= _HIGH
        np.right_shift(lanes[part], _FOUR, out=out[part])
        out[part] &= _LOW
        out[part] |= high
    codes[whole:] = (raw[whole:] << 4) | (raw[whole:] >> 4)
    return codes


def _bnb_decode(raw: np.ndarray, absmax: np.ndarray, bs: int, n: int) -> np.ndarray:
    """bitsandbytes' NF4 decoding in float32: ``absmax[i // blocksize] * NF4[code i]``, codes
    high nibble first (its own order, independent of the repacking above)."""
    codes = np.stack([raw >> 4, raw & 0x0F], axis=1).reshape(-1)[:n]
    return _nf4_levels()[codes] * absmax[np.arange(n) // bs]
