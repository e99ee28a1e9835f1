"""torchao MX tensors (``MXTensor`` in a ``torch.save`` state dict or flattened to safetensors)
as Hurray MXFP (scheme 0x05), bit-exact with torchao's own ``MXTensor.dequantize``.

The checkpoint is read by ``torch.load(weights_only=True)`` with stand-ins registered under
torchao's class names (:func:`safe_globals`): torchao need not be installed (where torchao
registered its own class in this process, torch may build that instead; the same attributes
are read). A stand-in keeps the pickled state as plain attributes: ``qdata`` (fp8 elements,
fp4 two per byte with element ``2i`` in the low nibble, as Hurray packs them, or fp6 one
code per byte), ``scale`` (e8m0 bytes, one per block of ``block_size`` along the last axis,
in cuBLAS's blocked order when ``is_swizzled_scales``), ``elem_dtype`` and ``block_size``.
The safetensors form of torchao's ``flatten_tensor_state_dict`` holds the same parts
(:func:`plan_torchao_safetensors`).

torchao decodes ``f32(value(q)) * 2^(e - 127)`` with ``e = 0`` as 2^-127 and ``e = 255`` as
NaN. Hurray forbids both bytes: a 255 is refused; a 0 in a block whose codes are all +-0
(torchao writes it for all-zero blocks) becomes 127, which decodes to the same signed zeros,
and a 0 in any other block is refused. So is an fp8 NaN code (torchao writes none): torch
decodes it keeping payload bits that Hurray's quiet NaN does not.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

import numpy as np

from hurray_gpu.format.descriptor import BufferHandle, RowMajor, TensorDescriptor
from hurray_gpu.format.descriptor.quant import MXFP
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

__all__ = ["convert_mx", "is_mx", "load_mx", "mx_entry", "plan_mx", "plan_torchao_safetensors",
           "safe_globals"]

Loader = Callable[[SourceTensor], Converted]
_MX = "torchao.prototype.mx_formats.mx_tensor."
# torch / torchao element dtype -> Hurray storage type.
_ELEMS = {"float8_e4m3fn": "float8_e4m3", "float8_e5m2": "float8_e5m2",
          "fp6_e2m3": "float6_e2m3", "fp6_e3m2": "float6_e3m2",
          "float4_e2m1fn_x2": "float4_e2m1"}
# The smallest fp8 code (sign masked off) that is a NaN; torchao writes none (a block with a NaN
# gets scale 0xFF), but other writers could.
_NAN_CODES = {"float8_e4m3": 0x7F, "float8_e5m2": 0x7D}
_STEP = 1 << 15  # u32 words per fp6 packing step
_SIX = tuple(np.uint32(m) for m in (0x3F, 0xFC0, 0x3F000, 0xFC0000))  # codes 0..3 of a word
_FIX_MX = ("quantize the weight again with torchao (MXTensor.to_mx of the float weight), or "
           "save it unquantized (bfloat16/float32), then convert again.")
_FIX_BAD = "save the state dict again with torch.save(model.state_dict(), path) from torchao."


class _Opaque:
    """Stand-in for torchao's dataclasses and enums in the pickle: their state is kept, never
    interpreted (the activation settings and kernel preference do not change the weight)."""

    def __init__(self, *args: Any) -> None:
        self.args = args


@functools.cache
def safe_globals(torch: Any) -> list[tuple[Any, str]]:
    """``(stand-in, torchao name)`` pairs for ``torch.serialization.safe_globals``: the MX
    tensor class, a ``torch.Tensor`` subclass with no behaviour of its own (the pickle rebuilds
    it as an empty wrapper and sets its state as attributes), and opaque holders for the
    dataclass and enums its state refers to."""

    class MXTensor(torch.Tensor):  # type: ignore[misc, name-defined]
        """Holds a pickled torchao MXTensor's state (qdata, scale, elem_dtype, ...)."""

        @classmethod
        def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            raise TypeError(f"a torchao MXTensor read by the converter has no operations "
                            f"({func}); only its qdata and scale are read")

    return [(MXTensor, _MX + "MXTensor"),
            (_Opaque, _MX + "QuantizeTensorToMXKwargs"),
            (_Opaque, "torchao.prototype.mx_formats.config.ScaleCalculationMode"),
            (_Opaque, "torchao.quantization.quantize_.common.kernel_preference.KernelPreference")]


def is_mx(value: Any) -> bool:
    """True for a torchao MXTensor (the stand-in, or torchao's own class when torchao itself
    registered it for ``weights_only`` loading)."""
    return type(value).__name__ == "MXTensor" and hasattr(value, "qdata")


def _fail(src: SourceFile, name: str, kind: str, why: str) -> Exception:
    return src.fail(why, tensor=name, kind=kind, fix=_FIX_BAD)


def mx_entry(src: SourceFile, name: str, t: Any, torch: Any) -> SourceTensor:
    """Plan one MX tensor of a PyTorch checkpoint: check its state (element type, block size,
    part types and sizes) before anything is converted.

    Raises:
        ConversionError: parts of the wrong type or size.
        UnsupportedConversionError: an element type or layout Hurray MXFP cannot carry.
    """
    elem = str(getattr(t, "elem_dtype", "?")).removeprefix("torch.")
    q, s = getattr(t, "qdata", None), getattr(t, "scale", None)
    if not isinstance(q, torch.Tensor) or not isinstance(s, torch.Tensor) or is_mx(q):
        raise _fail(src, name, f"mx-{elem}", "its qdata and scale are not plain tensors")
    if s.dtype != torch.float8_e8m0fnu or q.layout != torch.strided:
        raise _fail(src, name, f"mx-{elem}", f"its scale is {s.dtype}, not float8_e8m0fnu")
    if not q.is_contiguous():
        raise refuse(src, (name, f"mx-{elem}"), "its qdata is transposed: blocks that run "
                     "along another axis than the stored last one are not mapped yet", _FIX_MX)
    return plan_mx(src, name, (elem, getattr(t, "block_size", 0),
                               getattr(t, "is_swizzled_scales", False)),
                   str(q.dtype).removeprefix("torch."), tuple(int(d) for d in q.shape),
                   int(s.numel()), -1)


def plan_mx(src: SourceFile, name: str, state: tuple[str, Any, Any], qkind: str,
            qshape: tuple[int, ...], scales: int, offset: int) -> SourceTensor:
    """Plan one MX tensor from its state ``(elem_dtype, block_size, is_swizzled_scales)``, its
    qdata's torch dtype name and shape, and its count of scale bytes: the planned entry has
    kind ``mx-<elem_dtype>`` and the logical shape (fp4's last dimension doubled)."""
    elem, bs, swizzled = state
    kind = f"mx-{elem}"
    if elem not in _ELEMS:
        raise refuse(src, (name, kind), f"element type {elem!r} is not one of torchao's MX "
                     f"types {sorted(_ELEMS)}", _FIX_MX)
    if type(bs) is not int or bs & (bs - 1) or not 16 <= bs <= 2048:
        raise refuse(src, (name, kind), f"block_size {bs!r} is not a power of two in [16, "
                     "2048], the block sizes Hurray MXFP has", _FIX_MX)
    want = elem if elem.startswith("float8") else "uint8"
    if qkind != want or type(swizzled) is not bool:
        raise _fail(src, name, kind, f"its qdata is {qkind}, but {elem} needs {want} (and "
                    "is_swizzled_scales must be a bool)")
    if not 1 <= len(qshape) <= MAX_RANK or (swizzled and len(qshape) < 2):
        raise _fail(src, name, kind, f"its qdata has rank {len(qshape)}: MX tensors have "
                    f"1 to {MAX_RANK} dimensions (2 or more with swizzled scales)")
    shape = qshape if bits(elem) != 4 else (*qshape[:-1], qshape[-1] * 2)
    if shape[-1] == 0 or shape[-1] % bs:
        raise _fail(src, name, kind, f"the last dimension {shape[-1]} is not a positive "
                    f"multiple of block_size {bs}")
    blocks = element_count(shape) // bs
    need = _swizzled_count(shape, bs) if swizzled else blocks
    if scales != need:
        raise _fail(src, name, kind, f"its scale holds {scales} bytes, but shape "
                    f"{list(shape)} in blocks of {bs} needs {need}")
    return SourceTensor(name, kind, shape, offset, element_count(qshape) + need)


def bits(elem: str) -> int:
    """Bits per element of a torchao MX element type."""
    return by_name(_ELEMS[elem]).bits


# safetensors dtype of an MX part -> the torch dtype name of the tensor torchao flattened
_ST_PARTS = {"U8": "uint8", "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2"}


def plan_torchao_safetensors(src: SourceFile, entries: dict[str, SourceTensor],
                             metadata: dict[str, Any]) -> dict[str, Loader]:
    """Group the MX tensors torchao's ``flatten_tensor_state_dict`` wrote (a tensor ``P.W``
    becomes ``P._W_qdata`` and ``P._W_scale``, its state JSON in ``__metadata__[P.W]``, every
    name in ``__metadata__["tensor_names"]``), in place, as :func:`plan_bnb` does.

    Returns:
        ``{weight name: loader}``.

    Raises:
        ConversionError: malformed state JSON, or parts missing or of the wrong type or size.
        UnsupportedConversionError: another torchao tensor subclass, or an MX state Hurray
            MXFP cannot carry.
    """
    names = _json(src, metadata.get("safetensors.tensor_names"), "tensor_names")
    if names is None:
        return {}
    out: dict[str, Loader] = {}
    for name in names if isinstance(names, list) else [None]:
        state = _json(src, metadata.get(f"safetensors.{name}"), str(name))
        if not isinstance(name, str) or not isinstance(state, dict) or "." not in name:
            raise src.fail(f"__metadata__ tensor_names lists {name!r}, which has no torchao "
                           "state JSON (or no '.' in its name)", tensor=str(name))
        kind = state.get("_type")
        if kind in ("Tensor", "torch.Tensor"):
            continue
        if kind != "MXTensor":
            raise refuse(src, (name, f"torchao-{kind}"), f"torchao's {kind} is not mapped: "
                         "this converter carries torchao's MXTensor only", _FIX_MX)
        data: dict[str, Any] = state.get("_data") or {}
        data = data if isinstance(data, dict) else {}
        elem = data.get("elem_dtype")
        elem = elem.get("_data") if isinstance(elem, dict) else elem
        prefix = "{}._{}_".format(*name.rsplit(".", 1))
        q, s = entries.pop(prefix + "qdata", None), entries.pop(prefix + "scale", None)
        if q is None or s is None or s.kind != "F8_E8M0" or q.kind not in _ST_PARTS:
            raise src.fail(f"its parts {prefix}qdata (U8 or F8_E4M3/F8_E5M2) and {prefix}scale "
                           "(F8_E8M0) are missing or of another type", tensor=name,
                           kind=f"mx-{elem}")
        planned = plan_mx(src, name, (str(elem), data.get("block_size"),
                                      data.get("is_swizzled_scales")),
                          _ST_PARTS[q.kind], q.shape, s.nbytes, q.offset)
        if name in entries:
            raise src.fail("the file holds both a tensor of this name and torchao MX parts "
                           f"{prefix}qdata/scale for it", tensor=name, kind=planned.kind)
        entries[name] = planned
        out[name] = functools.partial(_load_parts, src, q, s, int(data["block_size"]),
                                      bool(data["is_swizzled_scales"]))
    return out


def _json(src: SourceFile, text: Any, what: str) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise src.fail(f"__metadata__ {what} is not JSON ({exc})", tensor=what) from None


def _load_parts(src: SourceFile, q: SourceTensor, s: SourceTensor, bs: int, swizzled: bool,
                entry: SourceTensor) -> Converted:
    raw = src.read(q.offset, q.nbytes, "the MX codes", tensor=entry.name, kind=entry.kind,
                   scratch="read")
    scale = src.read(s.offset, s.nbytes, "the MX scales", tensor=entry.name, kind=entry.kind)
    return convert_mx(src, entry, raw, scale, bs, swizzled)


def _swizzled_count(shape: tuple[int, ...], bs: int) -> int:
    rows, cols = element_count(shape[:-1]), shape[-1] // bs
    return -(-rows // 128) * 128 * -(-cols // 4) * 4


def _unswizzle(scale: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """torchao's ``from_blocked``: tiles of 128 rows x 4 columns, each stored as 32 x 16 with
    the four 32-row quarters interleaved (cuBLAS's block-scaling layout), padding dropped."""
    rb, cb = -(-rows // 128), -(-cols // 4)
    tiles = scale.reshape(rb * cb, 32, 4, 4).transpose(0, 2, 1, 3).reshape(rb, cb, 128, 4)
    return tiles.transpose(0, 2, 1, 3).reshape(rb * 128, cb * 4)[:rows, :cols]


def load_mx(src: SourceFile, entry: SourceTensor, t: Any, torch: Any) -> Converted:
    """Convert one planned MX tensor of a PyTorch checkpoint (see :func:`convert_mx`)."""
    raw = t.qdata.contiguous().reshape(-1).view(torch.uint8).numpy()
    scale = t.scale.contiguous().reshape(-1).view(torch.uint8).numpy()
    return convert_mx(src, entry, raw, scale, int(t.block_size), bool(t.is_swizzled_scales))


def convert_mx(src: SourceFile, entry: SourceTensor, raw: np.ndarray, scale: np.ndarray,
               bs: int, swizzled: bool) -> Converted:
    """One planned MX tensor from its qdata bytes and its e8m0 scale bytes (see the module
    docstring for the scale repairs).

    Raises:
        ConversionError: fp6 codes above 6 bits.
        UnsupportedConversionError: a NaN scale (255), a 2^-127 scale (0) on a block with
            nonzero codes, or an fp8 NaN code.
    """
    shape, hurray = entry.shape, by_name(_ELEMS[entry.kind.removeprefix("mx-")])
    rows, cols = element_count(shape[:-1]), shape[-1] // bs
    if swizzled:
        scale = np.ascontiguousarray(_unswizzle(scale, rows, cols)).reshape(-1)
    if hurray.bits == 6 and raw.size and int(raw.max()) > 0x3F:
        raise _fail(src, entry.name, entry.kind, f"an fp6 code {int(raw.max()):#x} does not "
                    "fit in 6 bits")
    nan = np.flatnonzero(scale == 0xFF)
    if nan.size:
        raise refuse(src, entry, f"block {int(nan[0])} has scale byte 0xFF, which torchao "
                     "decodes as NaN for the whole block and Hurray forbids", _FIX_MX)
    at = _first_nan(raw, _NAN_CODES[hurray.name]) if hurray.bits == 8 else -1
    if at >= 0:  # (fp4 and fp6 have no NaN codes)
        raise refuse(src, entry, f"element {at} is a NaN code, which torch decodes "
                     "keeping its payload bits and Hurray to the canonical quiet NaN",
                     _FIX_MX)
    zero = scale == 0
    if zero.any():
        # A block of +-0 codes keeps its signed zeros under any scale; any other code would
        # decode to a different value under the smallest scale Hurray allows (2^-126).
        sign = np.uint8(1 << (hurray.bits - 1))
        codes = _codes(raw.reshape(scale.size, -1)[zero].reshape(-1), hurray.bits)
        nonzero = ((codes.reshape(-1, bs) & ~sign) != 0).any(axis=1)
        if nonzero.any():
            block = int(np.flatnonzero(zero)[np.argmax(nonzero)])
            raise refuse(src, entry, f"block {block} has scale byte 0x00 (2^-127) and nonzero "
                         "codes: Hurray forbids that scale, and no other one decodes those "
                         "codes to the same values", _FIX_MX)
    expected = functools.partial(_decode, raw, scale.copy(), hurray, shape)
    fixed = np.where(zero, np.uint8(127), scale)
    data = raw if hurray.bits != 6 else _pack6(raw, src.buffer(raw.size // 4 * 3, "codes"))
    handles = (BufferHandle(data.nbytes, 64), BufferHandle(fixed.nbytes, 64))
    desc = TensorDescriptor(hurray, shape, RowMajor(), handles,
                            quantization=MXFP(len(shape) - 1, bs, 1))
    return Converted(assemble(desc, [data, fixed]), expected)


def _first_nan(raw: np.ndarray, nan_from: int) -> int:
    """The index of the first fp8 NaN code in ``raw`` (-1: none), in cache-sized steps."""
    limit = np.uint8(nan_from)
    for at in range(0, raw.size, _STEP * 4):
        magnitude = raw[at:at + _STEP * 4] & np.uint8(0x7F)
        hit = np.flatnonzero(magnitude >= limit)
        if hit.size:
            return at + int(hit[0])
    return -1


def _pack6(raw: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Hurray's 6-bit packing of one code per byte (``raw.size`` a multiple of 4, as every
    MX block is): each little-endian u32 of four codes loses the two high bits of each byte
    and keeps its low three bytes; in steps of 32768 words, so temporaries stay in the cache
    (several times faster than ``format.packing.pack_codes`` over the whole array)."""
    words, groups = raw.view("<u4"), out.reshape(-1, 3)
    for at in range(0, words.size, _STEP):
        w = words[at:at + _STEP]
        packed = w & _SIX[0]
        for shift, mask in zip((2, 4, 6), _SIX[1:], strict=True):
            packed |= (w >> np.uint32(shift)) & mask
        groups[at:at + _STEP] = packed.view(np.uint8).reshape(-1, 4)[:, :3]
    return out


def _codes(raw: np.ndarray, bits: int) -> np.ndarray:
    """One code per byte (fp4 bytes split low nibble first, torchao's and Hurray's order)."""
    if bits != 4:
        return raw
    return np.stack([raw & 0x0F, raw >> 4], axis=1).reshape(-1)


def _decode(raw: np.ndarray, scale: np.ndarray, hurray: Any,
            shape: tuple[int, ...]) -> np.ndarray:
    """torchao's ``to_dtype`` in float32: ``f32(value(q)) * 2^(e - 127)``, one product per
    element (exact except where it falls below float32's subnormals, rounded as torch does)."""
    values = _codes(raw, hurray.bits).view(hurray.numpy).astype(np.float32)
    values = values.reshape(scale.size, -1)
    factor = np.ldexp(np.float32(1), scale.astype(np.int32) - 127).astype(np.float32)
    return (values * factor[:, None]).reshape(shape)
