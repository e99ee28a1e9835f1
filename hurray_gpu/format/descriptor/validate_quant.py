"""Buffer-table, quantization-placement and buffer-size rules (Hurray spec, Quantization;
docs/format.md, Quantization parameters)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .layouts import BlockPaged, Extension, own_buffer_count
from .quant import MXFP, NF4, PerBlockAffine, PerChannelAffine, PerTensorAffine, RawQuantization
from .reader import fail
from .sizes import byte_floor, element_range

if TYPE_CHECKING:
    from .model import TensorDescriptor
    from .validate import Where

_AFFINE = frozenset({0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x48, 0x49, 0x4A, 0x4B})
STORAGE_TYPES: dict[int, frozenset[int]] = {
    0x01: _AFFINE,
    0x02: _AFFINE,
    0x03: frozenset({0x10, 0x11, 0x48, 0x49, 0x4A, 0x4B}),
    0x04: frozenset({0x49}),
    0x05: frozenset({0x40, 0x41, 0x43, 0x44, 0x45, 0x10, 0x48}),
}
_ZP_RANGE = {0x10: (-128, 127), 0x11: (0, 255), 0x12: (-32768, 32767), 0x13: (0, 65535),
             0x14: (-(1 << 31), (1 << 31) - 1), 0x15: (0, (1 << 31) - 1), 0x48: (-8, 7),
             0x49: (0, 15), 0x4A: (-2, 1), 0x4B: (0, 3)}


def param_indices(q: object) -> tuple[int, ...]:
    """Distinct parameter-buffer indices referenced by a quantization scheme."""
    if isinstance(q, (PerChannelAffine, PerBlockAffine)):
        z = q.zero_point_buffer_index
        return (q.scale_buffer_index,) if z is None or z == q.scale_buffer_index else (
            q.scale_buffer_index, z)
    if isinstance(q, (NF4, MXFP)):
        return (q.scale_buffer_index,)
    return ()


def check_buffer_table(d: TensorDescriptor, permissive: bool, w: Where) -> None:
    """buffer_count == L + distinct parameter indices, each index in [L, buffer_count)."""
    count = len(d.buffers)
    if not w.marks:  # building for encode: the wire decoder has not checked the handles
        for i, h in enumerate(d.buffers):
            h.validate(i)
    if count > 255:
        fail(f"{count} buffers exceed the u8 buffer_count", "buffer_count", None,
             "split the tensor; a descriptor holds at most 255 buffers.")
    own = own_buffer_count(d.layout, d.rank)
    if own == 0:
        return  # composite head: buffer_count == 0 checked with the head rules
    q = d.quantization
    params = param_indices(q)
    lo = 1 if own is None else own
    for idx in params:
        if not lo <= idx < count:
            fail(f"parameter buffer index {idx} is outside [{lo}, {count})", "scale_buffer_index",
                 w.at("quantization"), f"parameter buffers follow the layout's {lo} buffer(s) "
                 "and must exist in the buffer table.")
    if own is None or isinstance(q, RawQuantization):
        ok, want = count >= lo, f"at least {lo}"
    else:
        ok, want = count == own + len(params), str(own + len(params))
    if not ok:
        fail(f"buffer_count is {count}, expected {want} for layout 0x{d.layout.TAG:02X}"
             f"{' with quantization' if params else ''}", "buffer_count", w.at("buffer_count"),
             "write the layout's own buffers followed by exactly the referenced parameter "
             "buffers.")


def check_quantization(d: TensorDescriptor, permissive: bool, w: Where) -> None:
    """Per-scheme storage types, axis, block size and block-paged compatibility."""
    q = d.quantization
    if isinstance(q, RawQuantization):
        if not permissive:
            fail(f"quantization scheme 0x{q.SCHEME:02X} is not recognised", "scheme_tag",
                 w.at("quantization"), "use an assigned scheme 0x01-0x05.")
        q.check(w.at("quantization"))
        return
    assert q is not None
    base = w.at("quantization")
    q.check(base)
    tag = d.dtype.tag
    if tag not in STORAGE_TYPES[q.SCHEME] and not (d.dtype.unknown and permissive):
        fail(f"storage type {d.dtype.name} is not allowed for scheme 0x{q.SCHEME:02X}",
             "type_tag", w.at("h", 14), "store quantized data in one of the scheme's types "
             "(Hurray spec, each scheme's Valid Storage Types).")
    if isinstance(q, PerTensorAffine):
        lo, hi = _ZP_RANGE.get(tag, (-(1 << 31), (1 << 31) - 1))
        if not lo <= q.zero_point <= hi:
            fail(f"zero_point {q.zero_point} is outside {d.dtype.name}'s range [{lo}, {hi}]",
                 "zero_point", w.at("quantization", 8), "use a zero point the storage type "
                 "can represent.")
        return
    _check_axis(d, q, w)


def _check_axis(d: TensorDescriptor, q: PerChannelAffine | PerBlockAffine | NF4 | MXFP,
                w: Where) -> None:
    if not 0 <= q.axis < d.rank:
        fail(f"quantization axis {q.axis} is not < rank {d.rank}", "axis",
             w.at("quantization", 4), "quantize along an existing dimension.")
    size = d.shape[q.axis]
    if size is None:
        fail(f"quantization axis {q.axis} is a dynamic dimension", "axis",
             w.at("quantization", 4), "resolve the dimension before quantizing along it.")
    paged = isinstance(d.layout, BlockPaged)
    if paged and isinstance(q, PerChannelAffine) and q.axis == 0:
        fail("per-channel quantization on block-paged axis 0", "axis", w.at("quantization", 4),
             "block-paged per-channel scales run along axis 1 or 2.")
    if paged and isinstance(q, PerBlockAffine):
        assert isinstance(d.layout, BlockPaged)
        if q.axis != 0 or q.block_size != d.layout.page_size:
            fail("block-paged per-block quantization needs axis 0 and block_size == page_size",
                 "block_size", w.at("quantization", 8), "use one scale per page slot.")
        return
    if isinstance(q, MXFP):
        if size == 0 or size % q.block_size:
            fail(f"MXFP shape[axis] {size} is not a positive multiple of {q.block_size}",
                 "block_size", w.at("quantization", 8), "MX tensors have no partial blocks.")
    elif isinstance(q, (PerBlockAffine, NF4)) and 0 < size < q.block_size:
        fail(f"block_size {q.block_size} exceeds shape[axis] {size}", "block_size",
             w.at("quantization", 8), "use a block size <= the quantized dimension.")


def check_buffer_sizes(d: TensorDescriptor, w: Where) -> None:
    """Data buffers >= their requirement; unshared parameter buffers exact (docs/format.md)."""
    if not d.buffers:
        return
    if d.byte_offset > d.buffers[0].byte_size:
        fail(f"byte_offset {d.byte_offset} exceeds buffer 0's byte_size "
             f"{d.buffers[0].byte_size}", "byte_offset", w.at("byte_offset"),
             "byte_offset must point inside buffer 0.")
    if isinstance(d.layout, Extension):
        return
    _check_negative_reach(d, w)
    for spec in d.buffer_specs():
        if spec.min_size is None or spec.index >= len(d.buffers):
            continue
        have = d.buffers[spec.index].byte_size
        bad = have != spec.min_size if spec.exact else have < spec.min_size
        if bad:
            rel = w.at("buffers", 16 * spec.index)
            need = "exactly" if spec.exact else "at least"
            fail(f"buffers[{spec.index}] ({spec.role}) has byte_size {have}, needs {need} "
                 f"{spec.min_size}", f"buffers[{spec.index}].byte_size", rel,
                 "size the buffer from the shape, layout and quantization (docs/format.md, "
                 "Buffer sizes).")


def _check_negative_reach(d: TensorDescriptor, w: Where) -> None:
    rng = element_range(d.layout, d.shape)
    if rng is None or rng[0] >= 0 or rng[1] < rng[0]:
        return
    low = byte_floor(d.dtype, d.extension_type, rng[0])
    if low is not None and d.byte_offset + low < 0:
        fail(f"negative strides reach {-low} bytes before buffer 0 but byte_offset is "
             f"{d.byte_offset}", "byte_offset", w.at("byte_offset"),
             "raise byte_offset so every element lies inside the buffer.")



