"""Export a ``.hrry`` file back to safetensors or GGUF, one tensor at a time (docs/importing.md).

Every tensor is planned first from the file (target type and byte count; a tensor the target
cannot carry is refused before anything is written), then each is read, encoded, written and
dropped. The output is written atomically.
"""

from __future__ import annotations

import json
import math
import os
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

import numpy as np

from hurray_gpu.errors import ConversionError, HurrayFormatError, UnsupportedConversionError
from hurray_gpu.io.convert.ggml_kquants import IQ4_VALUES
from hurray_gpu.io.convert.gguf_kwrite import (
    KBLOCKS,
    Unfit,
    encode_kquant,
    kquant_kind,
    per_block,
)
from hurray_gpu.io.convert.gguf_write import encode_block, gguf_kv, write_gguf_header
from hurray_gpu.io.file_reader import HrryFile, open_file
from hurray_gpu.io.file_writer import atomic_output
from hurray_gpu.runtime.transfer import Progress, show_progress

__all__ = ["EXPORT_FORMATS", "ExportResult", "export"]

EXPORT_FORMATS = {".safetensors": "safetensors", ".gguf": "gguf"}
_FLOATS = {"float32": 4, "float16": 2, "bfloat16": 2}
# Hurray type -> safetensors dtype, listed in the order safetensors writes data (its dtype
# enum, largest first), ties broken by name.
_ST = {"uint64": "U64", "int64": "I64", "float64": "F64", "complex64": "C64",
       "float32": "F32", "uint32": "U32", "int32": "I32", "bfloat16": "BF16",
       "float16": "F16", "uint16": "U16", "int16": "I16", "float8_e4m3": "F8_E4M3",
       "float8_e5m2": "F8_E5M2", "int8": "I8", "uint8": "U8", "bool": "BOOL"}
_ST_ORDER = {kind: i for i, kind in enumerate(_ST.values())}
_GGUF_DIRECT = {"float32": "F32", "float16": "F16", "bfloat16": "BF16", "float64": "F64",
                "int8": "I8", "int16": "I16", "int32": "I32", "int64": "I64"}
# GGML block type -> (elements, bytes) per block
_BLOCKS = {"Q8_0": (32, 34), "Q4_0": (32, 18), "Q5_0": (32, 22), "Q4_1": (32, 20),
           "Q5_1": (32, 24), "TQ1_0": (256, 54), "IQ4_NL": (32, 18), "MXFP4": (32, 17),
           **{kind: (spec.per, spec.size) for kind, spec in KBLOCKS.items()}}
_ALIGNMENT = 32  # GGUF's default general.alignment
_ROW_MAJOR, _NUMPY_LAYOUTS = 0x01, (0x01, 0x02, 0x03)  # row/column-major, strided
_FIX_DEQUANT = ("export with dequantize='float32' (or 'bfloat16', 'float16'; the CLI's "
                "--dequantize) to write its dequantized values instead.")


@dataclass(frozen=True)
class _Plan:
    """One tensor's target type, shape and byte count, and how to encode it."""

    name: str
    kind: str
    shape: tuple[int, ...]
    nbytes: int
    encode: Callable[[Any], np.ndarray]
    dequantized: bool = False


@dataclass
class ExportResult:
    """What :func:`export` did.

    Attributes:
        format: ``"safetensors"`` or ``"gguf"``.
        tensors: tensors written.
        output_bytes: size of the written file.
        seconds: wall time.
        kinds: tensors per target type (``{"Q4_0": 3, "F32": 2}``).
        dequantized: names of the tensors written dequantized.
    """

    format: str
    tensors: int = 0
    output_bytes: int = 0
    seconds: float = 0.0
    kinds: dict[str, int] = field(default_factory=dict)
    dequantized: list[str] = field(default_factory=list)


def _refuse(path: str, t: Any, name: str, why: str, fix: str = _FIX_DEQUANT) -> Exception:
    return UnsupportedConversionError(why, source=path, tensor=name, source_type=_form(t),
                                      fix=fix)


def _form(t: Any) -> str:
    if t.is_composite:
        return "composite"
    quant = t.descriptor.quantization
    return t.dtype.name + ("" if quant is None else f" scheme 0x{quant.SCHEME:02X}")


def _dense_bytes(t: Any) -> np.ndarray:
    """The elements of an unquantized tensor in row-major order, as bytes (a view of the
    mapping when the tensor is stored row-major)."""
    if t.descriptor.layout_tag not in _NUMPY_LAYOUTS:
        from hurray_gpu.ops.materialize import materialize

        t = materialize(t)
    return np.ascontiguousarray(t.numpy()).reshape(-1).view(np.uint8)


def _dequantized(dtype: str) -> Callable[[Any], np.ndarray]:
    def encode(t: Any) -> np.ndarray:
        from hurray_gpu.ops.materialize import materialize

        return np.ascontiguousarray(materialize(t, dtype).numpy()).reshape(-1).view(np.uint8)
    return encode


def _shape(path: str, t: Any, name: str) -> tuple[int, ...]:
    if any(d is None for d in t.shape):
        raise _refuse(path, t, name, "its shape has dynamic dimensions, which neither "
                      "safetensors nor GGUF can describe", "materialize it to a static shape.")
    return tuple(int(d) for d in t.shape)


def _plan_dense_or_dequant(path: str, t: Any, name: str, kinds: dict[str, str],
                           dequantize: str | None, why: str) -> _Plan:
    shape = _shape(path, t, name)
    count = math.prod(shape)
    plain = not t.is_composite and t.descriptor.quantization is None
    if plain and t.dtype.name in kinds:
        return _Plan(name, kinds[t.dtype.name], shape, count * np.dtype(t.dtype.numpy).itemsize,
                     _dense_bytes)
    if dequantize is None:
        raise _refuse(path, t, name, why)
    return _Plan(name, kinds[dequantize], shape, count * _FLOATS[dequantize],
                 _dequantized(dequantize), True)


def _plan_safetensors(path: str, t: Any, name: str, dequantize: str | None) -> _Plan:
    if name == "__metadata__":
        raise _refuse(path, t, name, "safetensors reserves this name for its metadata",
                      "rename the tensor (hg.save under another name), then export again.")
    return _plan_dense_or_dequant(path, t, name, _ST, dequantize, (
        "safetensors stores dense elements of its own types only (no quantization schemes, "
        "composites, or sub-byte types)"))


# -- GGUF: which Hurray forms are GGML block types -------------------------------------------
def _buffers(t: Any, blocks: int, code_bytes: int) -> list[np.ndarray]:
    codes, scales = t.buffers[0].numpy(), t.buffers[1].numpy()
    if codes.size < blocks * code_bytes or scales.size < blocks * 2:
        raise HurrayFormatError(f"a {t.dtype.name} per-block tensor of {blocks} blocks has "
                                f"buffers of {codes.size} and {scales.size} bytes",
                                fix="the file is damaged; re-create it.")
    return [codes[:blocks * code_bytes].reshape(blocks, code_bytes),
            scales[:blocks * 2].view("<u2")]


def _overlay_parts(t: Any) -> tuple[Any, Any] | None:
    """(base, correction) of an overlay-add composite of the importer's Q4_1/Q5_1 form."""
    layout = t.descriptor.layout
    if not t.is_composite or (layout.composition_rule, layout.combine_op) != (2, 2) or (
            t.dtype.name != "float32" or len(t.members) != 2):
        return None
    roles = {m.descriptor.composite_member.member_role: m for m in t.members
             if m.descriptor.composite_member is not None}
    base, corr = roles.get(1), roles.get(0)
    if base is None or corr is None or not per_block(base, ("uint4", "uint8")) or (
            not per_block(corr, ("uint2",))) or base.shape != t.shape != corr.shape:
        return None
    return base, corr


def _offsets(corr: Any, blocks: int) -> np.ndarray | None:
    """The per-block offsets ``m`` (f16 bits) of a correction whose codes are all 1 (``m``)
    or all 0 with scale +-1 (``m`` = +-0), or None for any other correction."""
    codes, scales = _buffers(corr, blocks, 8)
    ones, zeros = (codes == 0x55).all(axis=1), (codes == 0).all(axis=1)
    unit = (scales & 0x7FFF) == 0x3C00
    if not (ones | (zeros & unit)).all():
        return None
    return np.where(ones, scales, scales & 0x8000).astype("<u2")


def _iq4_nl(t: Any) -> list[np.ndarray] | None:
    """(codes, f16 bits of ``d``) of an int8 block-32 form with f32 scales that IQ4_NL holds
    exactly: every scale an f16, every code an IQ4 table value (or a repaired zero block:
    codes 0, scale +-1), else None."""
    blocks = math.prod(t.shape) // 32
    codes, scales = t.buffers[0].numpy(), t.buffers[1].numpy()
    if codes.size < blocks * 32 or scales.size < blocks * 4:
        return None
    codes, d = codes[:blocks * 32].reshape(blocks, 32), scales[:blocks * 4].view("<f4")
    half = d.astype(np.float16)
    zero = ~codes.any(axis=1) & (np.abs(d) == 1)
    if not (np.isin(codes.view(np.int8), IQ4_VALUES).all(axis=1) | zero).all() or not (
            np.array_equal(half.astype(np.float32), d)):
        return None
    return [codes, half.view("<u2")]


def _gguf_block_kind(t: Any) -> str | None:
    if per_block(t, ("int8",), 32, 0x03) and t.shape[-1] % 32 == 0:
        return "IQ4_NL" if _iq4_nl(t) is not None else kquant_kind(t)
    if per_block(t, ("int2",), 256) and t.shape[-1] % 256 == 0:  # t - 1 in {-1, 0, 1}
        codes = t.buffers[0].numpy()[:math.prod(t.shape) // 4]
        return None if ((codes >> 1) & ~codes & 0x55).any() else "TQ1_0"
    if per_block(t, ("int4",)):
        return "Q4_0"
    if per_block(t, ("int8",)):  # the smallest GGML type that holds every code exactly
        codes = t.buffers[0].numpy()[:math.prod(t.shape)].view(np.int8)
        small = codes.size == 0 or (int(codes.min()) >= -16 and int(codes.max()) <= 15)
        return "Q5_0" if small else "Q8_0"
    parts = _overlay_parts(t)
    if parts is None:
        return kquant_kind(t)
    base, corr = parts
    if _offsets(corr, math.prod(t.shape) // 32) is None:
        return None
    if base.dtype.name == "uint4":
        return "Q4_1"
    codes = base.buffers[0].numpy()[:math.prod(t.shape)]
    return "Q5_1" if codes.size == 0 or int(codes.max()) <= 31 else None


def _encode_gguf(kind: str, shape: tuple[int, ...]) -> Callable[[Any], np.ndarray]:
    blocks = math.prod(shape) // _BLOCKS[kind][0]
    code_bytes = {"Q4_0": 16, "Q4_1": 16, "TQ1_0": 64}.get(kind, 32)

    def encode(t: Any) -> np.ndarray:
        if kind in KBLOCKS or kind == "MXFP4":
            return encode_kquant(kind, t).reshape(-1)
        if kind not in ("Q4_1", "Q5_1", "IQ4_NL"):
            return encode_block(kind, _buffers(t, blocks, code_bytes)).reshape(-1)
        iq4 = _iq4_nl(t) if kind == "IQ4_NL" else None
        if iq4 is not None:
            return encode_block(kind, iq4).reshape(-1)
        base, corr = _overlay_parts(t) or (None, None)  # planned from the same bytes
        offsets = None if corr is None else _offsets(corr, blocks)
        if offsets is None or kind == "IQ4_NL":
            raise HurrayFormatError(f"tensor {t.descriptor.layout} changed since it was "
                                    "planned", fix="do not modify the file while exporting.")
        return encode_block(kind, [*_buffers(base, blocks, code_bytes), offsets]).reshape(-1)
    return encode


def _plan_gguf(path: str, t: Any, name: str, dequantize: str | None) -> _Plan:
    kind = _gguf_block_kind(t)
    if kind is None:
        return _plan_dense_or_dequant(path, t, name, _GGUF_DIRECT, dequantize, (
            "GGUF carries F32/F16/BF16/F64/I8..I64 elements and the importer's forms of Q8_0, "
            "Q4_0, Q5_0, Q4_1, Q5_1 (per-block affine along the last axis, block 32, "
            "f16 scales, symmetric; Q4_1/Q5_1 as an overlay add of the offsets) and TQ1_0/TQ2_0 "
            "(int2 codes -1..1, block 256) and IQ4_NL (int8 table codes, block 32, f32 scales "
            "that are f16 values), and the K-quant, IQ4_XS and MXFP4 forms; this tensor is "
            "none of them"))
    shape = _shape(path, t, name)
    if kind in KBLOCKS or kind == "MXFP4":
        try:  # the f32 sub-block products must factor back into GGML's bytes
            encode_kquant(kind, t)
        except Unfit as exc:
            if dequantize is None:
                raise _refuse(path, t, name, f"it has the importer's {kind} form, but {exc}"
                              ) from None
            return _plan_dense_or_dequant(path, t, name, _GGUF_DIRECT, dequantize, str(exc))
    return _Plan(name, kind, shape, math.prod(shape) // _BLOCKS[kind][0] * _BLOCKS[kind][1],
                 _encode_gguf(kind, shape))


# -- writing --------------------------------------------------------------------------------
def _st_metadata(metadata: dict[str, Any]) -> dict[str, str]:
    """KV entries as safetensors ``__metadata__`` strings: ``safetensors.<key>`` back to
    ``<key>``; strings as they are; other values as JSON text (bytes as a hex string)."""
    out = {}
    for key, value in sorted(metadata.items()):
        if key.startswith("safetensors."):
            key = key[len("safetensors."):]
        if isinstance(value, (bytes, bytearray)):
            value = bytes(value).hex()
        elif isinstance(value, list):
            value = json.dumps([v.hex() if isinstance(v, bytes) else v for v in value])
        elif not isinstance(value, str):
            value = json.dumps(value)
        out[key] = value
    return out


def _write_safetensors(handle: IO[bytes], f: HrryFile, plans: list[_Plan],
                       write: Callable[[_Plan, int], None]) -> None:
    plans.sort(key=lambda p: (_ST_ORDER[p.kind], p.name))
    header: dict[str, Any] = {}
    meta = _st_metadata(f.metadata)
    if meta:
        header["__metadata__"] = meta
    at = 0
    for p in plans:
        header[p.name] = {"dtype": p.kind, "shape": list(p.shape), "data_offsets": [at,
                                                                                   at + p.nbytes]}
        at += p.nbytes
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)  # as safetensors pads: data starts 8-byte aligned
    handle.write(struct.pack("<Q", len(text)) + text)
    for p in plans:
        write(p, 0)


def _write_gguf(handle: IO[bytes], f: HrryFile, plans: list[_Plan],
                write: Callable[[_Plan, int], None]) -> None:
    version, kv = gguf_kv(f.metadata)
    align = f.metadata.get("gguf.general.alignment", _ALIGNMENT)
    infos, at = [], 0
    for p in plans:
        infos.append((p.name, p.shape, p.kind, at))
        at += p.nbytes + (-p.nbytes % align)
    write_gguf_header(handle, version, kv, infos, align, f.path)
    for p in plans:
        write(p, -p.nbytes % align)


_PLANNERS = {"safetensors": _plan_safetensors, "gguf": _plan_gguf}
_WRITERS = {"safetensors": _write_safetensors, "gguf": _write_gguf}


def _target(dst: str, format: str | None) -> str:
    kind = format or EXPORT_FORMATS.get(os.path.splitext(dst)[1].lower())
    if kind not in _PLANNERS:
        raise ConversionError(f"cannot tell the export format of {dst!r} ({format=})",
                              source=dst, fix="name the output .safetensors or .gguf, or pass "
                              "format='safetensors' or format='gguf'.")
    return kind


def export(src: str | os.PathLike[str], dst: str | os.PathLike[str], *,
           format: str | None = None, dequantize: str | None = None,
           progress: bool | None = None) -> ExportResult:
    """Export a ``.hrry`` file to safetensors or GGUF, streaming one tensor at a time.

    safetensors gets every dense tensor of a type it has, element bytes as they are (other
    layouts materialized to row-major). GGUF gets F32/F16/BF16/F64/I8..I64 and the importer's
    forms of Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, TQ1_0, IQ4_NL, Q2_K..Q6_K, IQ4_XS and MXFP4 back as
    those block types, byte for byte where the source wrote what its quantizer writes (a
    K-quant tensor whose sub-block products do not factor into an f16 and integers is refused).
    The KV section becomes the target's metadata (docs/importing.md). On any error ``dst`` is
    left as it was.

    Args:
        src: the ``.hrry`` file.
        dst: the file to write.
        format: ``"safetensors"`` or ``"gguf"``; default: from ``dst``'s suffix.
        dequantize: ``"float32"``, ``"bfloat16"`` or ``"float16"``: write tensors the target
            cannot carry (quantized, composite, other types) dequantized to this type;
            default: refuse them.
        progress: draw a progress bar (None: on a terminal, for large files).

    Returns:
        An :class:`ExportResult`.

    Raises:
        UnsupportedConversionError: a tensor the target cannot represent (nothing written).
        ConversionError: an unknown target format or a bad ``dequantize``.
        HurrayFormatError: a damaged ``.hrry`` file.
        OSError: a file cannot be read or written.
    """
    start, path, out = time.perf_counter(), os.fspath(src), os.fspath(dst)
    kind = _target(out, format)
    if dequantize is not None and dequantize not in _FLOATS:
        raise ConversionError(f"dequantize={dequantize!r} is not a float type", source=path,
                              fix="use 'float32', 'bfloat16' or 'float16'.")
    result = ExportResult(kind)
    with open_file(path) as f:
        plans = [_PLANNERS[kind](path, f.read(n), n, dequantize) for n in f.top_level_names()]
        total = sum(p.nbytes for p in plans)
        with atomic_output(out) as handle, Progress(total, f"export {os.path.basename(out)}",
                                                    show_progress(total, progress)) as bar:
            def write(p: _Plan, pad: int) -> None:
                data = p.encode(f.read(p.name))
                if data.nbytes != p.nbytes:  # a buffer shorter than its descriptor says
                    raise ConversionError(f"encoded to {data.nbytes} bytes, not the planned "
                                          f"{p.nbytes}", source=path, tensor=p.name,
                                          fix="check the file with `hurray-gpu inspect`.")
                handle.write(data.data)
                handle.write(b"\0" * pad)
                result.tensors += 1
                result.kinds[p.kind] = result.kinds.get(p.kind, 0) + 1
                if p.dequantized:
                    result.dequantized.append(p.name)
                bar.advance(p.nbytes)
            _WRITERS[kind](handle, f, plans, write)
    result.output_bytes = os.path.getsize(out)
    result.seconds = time.perf_counter() - start
    return result
