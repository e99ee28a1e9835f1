"""torchao MX tensors (``MXTensor`` in a ``torch.save`` state dict) as Hurray MXFP (scheme
0x05), bit-exact with torchao's own ``MXTensor.dequantize``.

The checkpoint is read by ``torch.load(weights_only=True)`` with stand-ins registered under
torchao's class names (:func:`safe_globals`): no torchao code runs, and torchao need not be
installed. A stand-in keeps the pickled state as plain attributes: ``qdata`` (fp8 elements,
fp4 two per byte with element ``2i`` in the low nibble, as Hurray packs them, or fp6 one
code per byte), ``scale`` (e8m0 bytes, one per block of ``block_size`` along the last axis,
in cuBLAS's blocked order when ``is_swizzled_scales``), ``elem_dtype`` and ``block_size``.

torchao decodes ``f32(value(q)) * 2^(e - 127)`` with ``e = 0`` as 2^-127 and ``e = 255`` as
NaN. Hurray forbids both bytes: a 255 is refused; a 0 in a block whose codes are all +-0
(torchao writes it for all-zero blocks) becomes 127, which decodes to the same signed zeros,
and a 0 in any other block is refused.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from hurray_gpu.format.descriptor import BufferHandle, RowMajor, TensorDescriptor
from hurray_gpu.format.descriptor.quant import MXFP
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.format.packing import pack_codes
from hurray_gpu.io.convert.source import Converted, SourceFile, SourceTensor, refuse
from hurray_gpu.parts import assemble

__all__ = ["is_mx", "load_mx", "mx_entry", "safe_globals"]

_MX = "torchao.prototype.mx_formats.mx_tensor."
# torch / torchao element dtype -> Hurray storage type.
_ELEMS = {"float8_e4m3fn": "float8_e4m3", "float8_e5m2": "float8_e5m2",
          "fp6_e2m3": "float6_e2m3", "fp6_e3m2": "float6_e3m2",
          "float4_e2m1fn_x2": "float4_e2m1"}
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
    """Plan one MX tensor: check its state (element type, block size, part types and sizes)
    before anything is converted.

    Raises:
        ConversionError: parts of the wrong type or size.
        UnsupportedConversionError: an element type or layout Hurray MXFP cannot carry.
    """
    elem = str(getattr(t, "elem_dtype", "?")).removeprefix("torch.")
    kind = f"mx-{elem}"
    q, s, bs = getattr(t, "qdata", None), getattr(t, "scale", None), getattr(t, "block_size", 0)
    if elem not in _ELEMS:
        raise refuse(src, (name, kind), f"element type {elem!r} is not one of torchao's MX "
                     f"types {sorted(_ELEMS)}", _FIX_MX)
    if type(bs) is not int or bs & (bs - 1) or not 16 <= bs <= 2048:
        raise refuse(src, (name, kind), f"block_size {bs!r} is not a power of two in [16, "
                     "2048], the block sizes Hurray MXFP has", _FIX_MX)
    if not isinstance(q, torch.Tensor) or not isinstance(s, torch.Tensor) or is_mx(q):
        raise _fail(src, name, kind, "its qdata and scale are not plain tensors")
    want = getattr(torch, elem) if elem.startswith("float8") else torch.uint8
    if q.dtype != want or s.dtype != torch.float8_e8m0fnu or q.layout != torch.strided:
        raise _fail(src, name, kind, f"qdata is {q.dtype} and scale {s.dtype}, but "
                    f"{elem} needs {want} and torch.float8_e8m0fnu")
    if not q.is_contiguous() or q.dim() == 0 or q.dim() > 8:
        raise refuse(src, (name, kind), "its qdata is transposed (or of rank 0 or above 8): "
                     "blocks that run along another axis than the stored last one are not "
                     "mapped yet", _FIX_MX)
    shape = tuple(int(d) for d in q.shape)
    if elem == "float4_e2m1fn_x2":
        shape = (*shape[:-1], shape[-1] * 2)
    if shape[-1] == 0 or shape[-1] % bs:
        raise _fail(src, name, kind, f"the last dimension {shape[-1]} is not a positive "
                    f"multiple of block_size {bs}")
    blocks = int(q.numel()) * (2 if elem == "float4_e2m1fn_x2" else 1) // bs
    need = _swizzled_count(shape, bs) if getattr(t, "is_swizzled_scales", False) else blocks
    if int(s.numel()) != need:
        raise _fail(src, name, kind, f"its scale holds {int(s.numel())} bytes, but shape "
                    f"{list(shape)} in blocks of {bs} needs {need}")
    return SourceTensor(name, kind, shape, -1, int(q.numel()) + int(s.numel()))


def _swizzled_count(shape: tuple[int, ...], bs: int) -> int:
    rows, cols = int(np.prod(shape[:-1], dtype=object)), shape[-1] // bs
    return -(-rows // 128) * 128 * -(-cols // 4) * 4


def _unswizzle(scale: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """torchao's ``from_blocked``: tiles of 128 rows x 4 columns, each stored as 32 x 16 with
    the four 32-row quarters interleaved (cuBLAS's block-scaling layout), padding dropped."""
    rb, cb = -(-rows // 128), -(-cols // 4)
    tiles = scale.reshape(rb * cb, 32, 4, 4).transpose(0, 2, 1, 3).reshape(rb, cb, 128, 4)
    return tiles.transpose(0, 2, 1, 3).reshape(rb * 128, cb * 4)[:rows, :cols]


def load_mx(src: SourceFile, entry: SourceTensor, t: Any, torch: Any) -> Converted:
    """Convert one planned MX tensor (see the module docstring for the scale repairs).

    Raises:
        ConversionError: fp6 codes above 6 bits.
        UnsupportedConversionError: a NaN scale (255), or a 2^-127 scale (0) on a block with
            nonzero codes.
    """
    elem, shape, bs = entry.kind.removeprefix("mx-"), entry.shape, int(t.block_size)
    hurray = by_name(_ELEMS[elem])
    raw = t.qdata.contiguous().reshape(-1).view(torch.uint8).numpy()
    scale = t.scale.contiguous().reshape(-1).view(torch.uint8).numpy()
    rows, cols = int(np.prod(shape[:-1], dtype=object)), shape[-1] // bs
    if getattr(t, "is_swizzled_scales", False):
        scale = _unswizzle(scale, rows, cols)
    scale = np.ascontiguousarray(scale).reshape(-1)
    if hurray.bits == 6 and raw.size and int(raw.max()) > 0x3F:
        raise _fail(src, entry.name, entry.kind, f"an fp6 code {int(raw.max()):#x} does not "
                    "fit in 6 bits")
    nan = np.flatnonzero(scale == 0xFF)
    if nan.size:
        raise refuse(src, entry, f"block {int(nan[0])} has scale byte 0xFF, which torchao "
                     "decodes as NaN for the whole block and Hurray forbids", _FIX_MX)
    codes = _codes(raw, hurray.bits).reshape(scale.size, bs)
    zero = scale == 0
    if zero.any():
        # A block of +-0 codes keeps its signed zeros under any scale; any other code would
        # decode to a different value under the smallest scale Hurray allows (2^-126).
        sign = 0x80 if hurray.bits == 8 else 1 << (hurray.bits - 1)
        nonzero = ((codes[zero] & ~np.uint8(sign)) != 0).any(axis=1)
        if nonzero.any():
            block = int(np.flatnonzero(zero)[np.argmax(nonzero)])
            raise refuse(src, entry, f"block {block} has scale byte 0x00 (2^-127) and nonzero "
                         "codes: Hurray forbids that scale, and no other one decodes those "
                         "codes to the same values", _FIX_MX)
    expected = functools.partial(_decode, codes, scale.copy(), hurray, shape)
    fixed = np.where(zero, np.uint8(127), scale)
    data = raw if hurray.bits != 6 else pack_codes(raw, hurray)
    handles = (BufferHandle(data.nbytes, 64), BufferHandle(fixed.nbytes, 64))
    desc = TensorDescriptor(hurray, shape, RowMajor(), handles,
                            quantization=MXFP(len(shape) - 1, bs, 1))
    return Converted(assemble(desc, [data, fixed]), expected)


def _codes(raw: np.ndarray, bits: int) -> np.ndarray:
    """One code per byte (fp4 bytes split low nibble first, torchao's and Hurray's order)."""
    if bits != 4:
        return raw
    return np.stack([raw & 0x0F, raw >> 4], axis=1).reshape(-1)


def _decode(codes: np.ndarray, scale: np.ndarray, hurray: Any, shape: tuple[int, ...]) -> np.ndarray:
    """torchao's ``to_dtype`` in float32: ``f32(value(q)) * 2^(e - 127)``, one product per
    element (exact except where it falls below float32's subnormals, rounded as torch does)."""
    values = codes.view(hurray.numpy).astype(np.float32)
    factor = np.ldexp(np.float32(1), scale.astype(np.int32) - 127).astype(np.float32)
    return (values * factor[:, None]).reshape(shape)
