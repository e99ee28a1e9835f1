"""compressed-tensors ``pack-quantized`` weights in safetensors as Hurray affine tensors,
bit-exact with the tool's own ``unpack_from_int32`` + ``dequantize``.

A weight ``P.weight`` is saved as ``P.weight_packed`` (int32 words; element ``i`` of a row at
bit ``i * num_bits`` of the row's little-endian bit stream, each row padded to a whole word;
stored as ``q + 2^(num_bits-1)``), ``P.weight_scale`` (one scale per group or per output
channel, in the model's float type), ``P.weight_shape`` and, asymmetric, ``P.weight_zero_point``
(packed the same way along dimension 0). The scheme (num_bits, strategy, group_size,
actorder) and the format (the group's own, else the model's) come from
``quantization_config`` in the ``config.json`` beside the file.

int4 / int8 ``group`` becomes per-block affine (scheme 0x03) along the input axis with the
scales in their own type (f16, bf16 or f32) and i32 zero points; ``channel`` becomes
per-channel affine (0x02) along the output axis with f32 scales (widened exactly). The tool
computes ``(q - zp) * scale`` in the scale's type; Hurray computes the exact f32 product and
rounds it once to the output type, which is the same value (``q - zp`` and the product are
exact in f32). Act-order ``group`` needs the ``g_idx`` permutation Hurray has no scheme for.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from hurray_gpu.format.descriptor import BufferHandle, RowMajor, TensorDescriptor
from hurray_gpu.format.descriptor.quant import PerBlockAffine, PerChannelAffine
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.format.packing import pack
from hurray_gpu.io.convert.source import Converted, SourceFile, SourceTensor, refuse
from hurray_gpu.parts import assemble

__all__ = ["plan_compressed"]

# A model's config.json is a few KiB; 16 MiB bounds a hostile one.
_MAX_CONFIG = 1 << 24
_FIX_CT = ("re-quantize with llm-compressor using int4/int8 weights, strategy 'group' (a "
           "power-of-two group_size) or 'channel' and no act-order (actorder None or "
           "'weight'), or keep the weight unquantized, then convert again.")
_SCALES = {"F16": 0x01, "BF16": 0x02, "F32": 0x03}  # the per-block scale_type tags
Loader = Callable[[SourceTensor], Converted]


def _config(src: SourceFile) -> dict[str, Any]:
    path = os.path.join(os.path.dirname(os.path.abspath(src.path)), "config.json")
    where = ("(checkpoint)", "pack-quantized")
    fix = "put the model's config.json (with its quantization_config) beside the file."
    try:
        with open(path, "rb") as f:  # sized first: read(n) would allocate n bytes up front
            size = os.fstat(f.fileno()).st_size
            text = f.read(size) if size <= _MAX_CONFIG else b""
    except OSError:
        raise refuse(src, where, f"its weight_packed tensors need the quantization_config of "
                     f"{path}, which cannot be read", fix) from None
    try:
        config: Any = json.loads(text) if text else None
        qc = config.get("quantization_config") or config.get("compression_config")
    except (ValueError, RecursionError, AttributeError):
        qc = None
    if not isinstance(qc, dict) or not isinstance(qc.get("config_groups"), dict):
        raise refuse(src, where, f"{path} has no quantization_config with config_groups", fix)
    return qc


def plan_compressed(src: SourceFile, entries: dict[str, SourceTensor],
                    metadata: dict[str, Any]) -> dict[str, Loader]:
    """Group every ``pack-quantized`` weight of ``entries`` (safetensors tensors by name), in
    place: its parts become one entry named ``P.weight``; the quantization_config goes into
    ``metadata``.

    Returns:
        ``{weight name: loader}``.

    Raises:
        ConversionError: parts whose shapes or types disagree with each other or the config.
        UnsupportedConversionError: act-order, a format other than pack-quantized, bit widths
            other than 4 and 8, strategies other than group and channel, or no config.json.
    """
    prefixes = [n[:-len(".weight_packed")] for n in entries if n.endswith(".weight_packed")]
    if not prefixes:
        return {}
    qc = _config(src)
    metadata["compressed-tensors.quantization_config"] = json.dumps(qc)
    # compressed-tensors writes each group's own format (the model's is "mixed-precision"
    # when groups differ); older configs carry only the model's.
    groups = [(g.get("weights"), g.get("format") or qc.get("format"))
              for g in qc["config_groups"].values() if isinstance(g, dict)]
    out: dict[str, Loader] = {}
    for prefix in prefixes:
        name = prefix + ".weight"
        if name in entries:
            raise src.fail(f"it is stored both as {name} and packed as {prefix}.weight_packed",
                           tensor=name, kind="pack-quantized", fix="keep one of the two (the "
                           "checkpoint was saved twice into one file), then convert again.")
        if f"{prefix}.weight_g_idx" in entries:
            raise refuse(src, (name, "pack-quantized"), "act-order (weight_g_idx) groups are "
                         "a permutation of the input axis, which no Hurray scheme carries",
                         _FIX_CT)
        entries[name], out[name] = _plan_one(src, entries, prefix, groups)
    return out


def _take(src: SourceFile, entries: dict[str, SourceTensor], name: str, part: str,
          kinds: tuple[str, ...]) -> SourceTensor:
    entry = entries.pop(part, None)
    if entry is None or entry.kind not in kinds or len(entry.shape) != 2:
        raise src.fail(f"{part} is {'missing' if entry is None else entry.kind} "
                       f"{list(entry.shape) if entry else ''}; pack-quantized needs a 2-D "
                       f"{'/'.join(kinds)} tensor", tensor=name, kind="pack-quantized")
    return entry


def _plan_one(src: SourceFile, entries: dict[str, SourceTensor], prefix: str,
              groups: list[Any]) -> tuple[SourceTensor, Loader]:
    name = prefix + ".weight"
    packed = _take(src, entries, name, f"{prefix}.weight_packed", ("I32",))
    scale = _take(src, entries, name, f"{prefix}.weight_scale", tuple(_SCALES))
    shape_entry = entries.pop(f"{prefix}.weight_shape", None)
    if shape_entry is None or shape_entry.kind not in ("I64", "I32") or shape_entry.shape != (2,):
        raise src.fail("needs weight_shape, 2 int64 values", tensor=name, kind="pack-quantized")
    dims = src.read(shape_entry.offset, shape_entry.nbytes, "weight_shape", tensor=name)
    rows, cols = (int(v) for v in dims.view("<i8" if shape_entry.kind == "I64" else "<i4"))
    zp = entries.pop(f"{prefix}.weight_zero_point", None)
    args = _scheme(src, name, groups, packed, scale, zp, rows, cols)
    bits = int(args["num_bits"])
    kind = f"pack-quantized int{bits} {args['strategy']}"
    if zp is not None:
        words = -(-rows * bits // 32)
        if zp.kind != "I32" or zp.shape != (words, scale.shape[1]):
            raise src.fail(f"weight_zero_point is {zp.kind} {list(zp.shape)}, not I32 "
                           f"[{words}, {scale.shape[1]}] (packed along dimension 0)",
                           tensor=name, kind=kind)
    total = packed.nbytes + scale.nbytes + (zp.nbytes if zp else 0)
    planned = SourceTensor(name, kind, (rows, cols), packed.offset, total)
    group = int(args["group_size"]) if args["strategy"] == "group" else 0
    return planned, lambda e: _load(src, e, packed, scale, zp, bits, group)


def _scheme(src: SourceFile, name: str, groups: list[tuple[Any, Any]], packed: SourceTensor,
            scale: SourceTensor, zp: SourceTensor | None, rows: int,
            cols: int) -> dict[str, Any]:
    """The config group whose weight arguments fit this tensor's parts (there must be one).

    Groups name their modules by class (``Linear``) or pattern, which a checkpoint alone
    cannot resolve, so the parts' shapes choose: bit width from the packed words, strategy
    and group size from the scales (the tool requires whole groups), symmetry from the zero
    point's presence."""
    where = (name, "pack-quantized")
    fits = []
    for args, fmt in groups:
        if not isinstance(args, dict):
            continue
        bits, strategy, size = args.get("num_bits"), args.get("strategy"), args.get("group_size")
        if (type(bits) is not int or not 1 <= bits <= 8 or rows < 0 or cols < 0
                or packed.shape != (rows, -(-cols * bits // 32))
                or bool(args.get("symmetric", True)) != (zp is None)):
            continue
        if scale.shape == (rows, 1) and strategy == "channel" or (
                strategy == "group" and type(size) is int and size > 0
                and cols % size == 0 and scale.shape == (rows, cols // size)):
            fits.append((args, fmt))
    if len({json.dumps(a, sort_keys=True) for a in fits}) != 1:
        raise src.fail(f"{len(fits)} distinct config groups fit weight_packed "
                       f"{list(packed.shape)}, weight_scale {list(scale.shape)} and "
                       f"weight_shape [{rows}, {cols}] (one must)", tensor=name,
                       kind="pack-quantized", fix="convert with the config.json saved with "
                       "this checkpoint.")
    args, fmt = fits[0]
    if fmt != "pack-quantized" or args.get("type", "int") != "int" or args["num_bits"] not in (4, 8):
        raise refuse(src, where, f"format {fmt!r} with {args.get('type')} {args['num_bits']}-bit"
                     " weights: only pack-quantized int4 and int8 map", _FIX_CT)
    if args.get("actorder") in ("group", "dynamic", True):  # True: older configs' "group"
        raise refuse(src, where, f"actorder {args['actorder']!r} permutes the input axis into "
                     "groups (g_idx), which no Hurray scheme carries", _FIX_CT)
    size = args.get("group_size") or 0
    if args["strategy"] == "group" and (size & (size - 1) or size < 2 or size > max(cols, 1)):
        raise refuse(src, where, f"group_size {size} is not a power of two in [2, {cols}], "
                     "which Hurray per-block blocks must be", _FIX_CT)
    return args


def _unpack(words: np.ndarray, bits: int, count: int) -> np.ndarray:
    """The tool's codes ``q`` (int8) of each row of little-endian int32 ``words``: element
    ``i`` at bit ``i * bits`` of the row, stored as ``q + 2^(bits-1)``."""
    raw = words.view(np.uint8).reshape(words.shape[0], words.shape[1] * 4)
    if bits == 8:
        return (raw[:, :count] ^ 0x80).view(np.int8)
    nib = np.empty((raw.shape[0], raw.shape[1] * 2), np.uint8)
    nib[:, 0::2], nib[:, 1::2] = raw & 0x0F, raw >> 4
    return nib[:, :count].view(np.int8) - 8


def _load(src: SourceFile, entry: SourceTensor, packed: SourceTensor, scale: SourceTensor,
          zp: SourceTensor | None, bits: int, group: int) -> Converted:
    rows, cols = entry.shape
    words = src.read(packed.offset, packed.nbytes, "weight_packed", tensor=entry.name,
                     kind=entry.kind, scratch="read").view("<i4").reshape(packed.shape)
    raw = words.view(np.uint8).reshape(rows, packed.shape[1] * 4)
    if bits == 8 or cols % 2 == 0:  # whole bytes per row: flip the offset bit of each code
        row = cols * bits // 8
        data = src.buffer(rows * row, "codes")  # reused: no page faults per tensor
        np.bitwise_xor(raw[:, :row], 0x80 if bits == 8 else 0x88, out=data.reshape(rows, row))
    else:  # odd int4 rows split a byte: unpack and pack
        data = pack(_unpack(words, 4, cols), by_name("int4"))
    tag = _SCALES[scale.kind]
    sbytes = src.read(scale.offset, scale.nbytes, "weight_scale", tensor=entry.name)
    s32 = _widen(sbytes, scale.kind).reshape(scale.shape)
    bad = np.flatnonzero((s32 == 0) | ~np.isfinite(s32))
    if bad.size:
        raise refuse(src, entry, f"scale {bad[0]} is {float(s32.ravel()[bad[0]])!r}, and "
                     "Hurray scales must be finite and nonzero", _FIX_CT)
    zeros = None
    if zp is not None:
        zwords = src.read(zp.offset, zp.nbytes, "weight_zero_point", tensor=entry.name)
        zeros = _unpack(np.ascontiguousarray(zwords.view("<i4").reshape(zp.shape).T), bits,
                        rows).T.astype("<i4")
    buffers = [data, (sbytes if group else s32.astype("<f4")).view(np.uint8)]
    if zeros is not None:
        buffers.append(np.ascontiguousarray(zeros).view(np.uint8).reshape(-1))
    zidx = None if zeros is None else 2
    quant = (PerBlockAffine(1, group, 1, zidx, tag) if group
             else PerChannelAffine(0, 1, zidx))
    handles = tuple(BufferHandle(b.nbytes, 64) for b in buffers)
    desc = TensorDescriptor(by_name(f"int{bits}"), (rows, cols), RowMajor(), handles,
                            quantization=quant)

    def expected() -> np.ndarray:  # the tool's (q - zp) * scale, in f32 (exact there)
        q = _unpack(words, bits, cols).astype(np.float32)
        if zeros is not None:
            q -= np.repeat(zeros, group or cols, axis=1)[:, :cols].astype(np.float32)
        return q * np.repeat(s32, group or cols, axis=1)[:, :cols]
    return Converted(assemble(desc, buffers), expected)


def _widen(raw: np.ndarray, kind: str) -> np.ndarray:
    """Scales as float32 (exactly: f16 and bf16 are subsets)."""
    if kind == "BF16":
        return (raw.view("<u2").astype(np.uint32) << 16).view(np.float32)
    return raw.view("<f2" if kind == "F16" else "<f4").astype(np.float32)
