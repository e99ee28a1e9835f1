"""Property tests: random valid descriptors round-trip; mutated encodings never escape the codec."""

from __future__ import annotations

import contextlib
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hurray_gpu.errors import HurrayFormatError
from hurray_gpu.format.descriptor import (
    COO,
    CSC,
    CSF,
    CSR,
    MXFP,
    NF4,
    BlockPaged,
    BufferHandle,
    ColMajor,
    Composite,
    CompositeMember,
    Extension,
    ExtensionType,
    Hilbert,
    Morton,
    PerBlockAffine,
    PerChannelAffine,
    PerTensorAffine,
    RowMajor,
    Shard,
    Statistics,
    Strided,
    TensorDescriptor,
    Tiled,
    decode_descriptor,
    is_valid_pair,
)
from hurray_gpu.format.descriptor.sizes import byte_floor, element_range
from hurray_gpu.format.dtypes import DTYPES, by_tag

SETTINGS = settings(max_examples=2000, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
INT_STORAGE = [0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x48, 0x49, 0x4A, 0x4B]
BLOCK_STORAGE = [0x10, 0x11, 0x48, 0x49, 0x4A, 0x4B]
MX_STORAGE = [0x40, 0x41, 0x43, 0x44, 0x45, 0x10, 0x48]
ZP = {0x10: (-128, 127), 0x11: (0, 255), 0x12: (-32768, 32767), 0x13: (0, 65535),
      0x14: (-(2**31), 2**31 - 1), 0x15: (0, 2**31 - 1), 0x48: (-8, 7), 0x49: (0, 15),
      0x4A: (-2, 1), 0x4B: (0, 3)}
DEVICE_PAIRS = [(d, m) for d in [*range(9), 0xF0, 0xFE] for m in [0, 1, 2, 3, 0xF0, 0xFE]
                if is_valid_pair(d, m)]
LAYOUT_KINDS = ["row", "col", "strided", "tiled", "morton", "hilbert", "coo", "csr", "csc",
                "csf", "paged", "composite", "extension"]

dims = st.integers(0, 6)
u64 = st.integers(0, 2**64 - 1)
f64 = st.floats(allow_nan=True, allow_infinity=True)


@st.composite
def extension_types(draw: st.DrawFn) -> ExtensionType:
    bw = draw(st.sampled_from([1, 2, 4, 8, 16, 24, 32, 64]))
    pf = 1 if bw >= 8 else 8 // bw
    if draw(st.booleans()):
        return ExtensionType(bw, pf, 1, 0, draw(st.integers(0, 1)), draw(st.integers(0, 255)),
                             draw(st.integers(0, 255)), draw(st.integers(0, 2**32 - 1)),
                             draw(st.integers(0, 1)), draw(st.integers(0, 1)))
    return ExtensionType(bw, pf, 0, draw(st.integers(0, 1)), has_nan=draw(st.integers(0, 1)),
                         has_inf=draw(st.integers(0, 1)))


@st.composite
def tiled_layouts(draw: st.DrawFn, rank: int, depth: int = 1) -> Tiled:
    tile = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    outer = draw(st.sampled_from([1, 2, 3]))
    inner = draw(st.sampled_from([1, 2, 3, 4] if depth < 8 else [1, 2, 3]))
    strides = st.lists(st.integers(-3, 3), min_size=rank, max_size=rank).map(tuple)
    o_s = draw(strides) if outer == 3 else ()
    i_s = draw(strides) if inner == 3 else ()
    nested = draw(tiled_layouts(rank, depth + 1)) if inner == 4 else None
    return Tiled(tile, outer, inner, o_s, i_s, nested)


@st.composite
def layouts(draw: st.DrawFn) -> tuple[object, tuple]:
    kind = draw(st.sampled_from(LAYOUT_KINDS))
    if kind in ("row", "col"):
        rank = draw(st.integers(0, 5))
        shape = tuple(draw(st.lists(st.one_of(dims, st.just(None)) if rank else dims,
                                    min_size=rank, max_size=rank)))
        return (RowMajor() if kind == "row" or rank == 0 else ColMajor()), shape
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(dims, min_size=rank, max_size=rank)))
    if kind == "strided":
        return Strided(tuple(draw(st.lists(st.integers(-5, 5), min_size=rank,
                                           max_size=rank)))), shape
    if kind == "tiled":
        return draw(tiled_layouts(rank)), shape
    if kind == "morton":
        bits = tuple(draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank)))
        return Morton(bits), tuple(min(n, 1 << b) for n, b in zip(shape, bits, strict=True))
    if kind == "hilbert":
        order, r = draw(st.integers(1, 2)), draw(st.integers(2, 3))
        return Hilbert(order, r), (1 << order,) * r
    nnz = draw(st.integers(0, 5))
    if kind == "coo":
        return COO(nnz, draw(st.integers(0, 1))), shape
    if kind in ("csr", "csc"):
        return (CSR(nnz) if kind == "csr" else CSC(nnz)), shape[:1] * 0 + (shape[0], 3)
    if kind == "csf":
        r = draw(st.integers(3, 4))
        return CSF(nnz, tuple(draw(st.permutations(range(r))))), (2,) * r
    if kind == "paged":
        return BlockPaged(draw(st.sampled_from([1, 2, 4, 16])), draw(st.integers(0, 4)),
                          0, draw(st.integers(0, 3)), draw(st.integers(0, 2)),
                          draw(st.sampled_from([0, 7, 0xFFFFFFFF])),
                          draw(st.integers(0, 1))), (draw(dims), 2, 3)
    if kind == "composite":
        rule = draw(st.sampled_from([1, 2, 3]))
        op = draw(st.sampled_from([1, 2])) if rule == 2 else 0
        return Composite(rule, op, draw(st.integers(1 if rule == 2 else 0, 2**32 - 2))), shape
    return Extension(draw(st.integers(0xF0, 0xFE)), draw(u64),
                     draw(st.binary(max_size=12))), shape


def quantizations(draw: st.DrawFn, layout: object, shape: tuple, own: int, tag: int):
    paged = isinstance(layout, BlockPaged)
    axes = [k for k, n in enumerate(shape) if n is not None and not (paged and k == 0)]
    choices = ["none"]
    if tag in INT_STORAGE:
        choices.append("tensor")
        if axes:
            choices.append("channel")
    if tag in BLOCK_STORAGE and shape and (paged and layout.page_size >= 2 and
                                           layout.page_size & (layout.page_size - 1) == 0
                                           or not paged and axes):
        choices.append("block")
    if tag == 0x49 and axes and not isinstance(layout, (BlockPaged, Morton, Hilbert)):
        choices.append("nf4")
    if tag in MX_STORAGE and axes and not isinstance(layout, (BlockPaged, Morton, Hilbert)):
        choices.append("mxfp")
    scheme = draw(st.sampled_from(choices))
    trailing = draw(st.binary(max_size=3))
    if scheme == "none":
        return None, shape
    if scheme == "tensor":
        lo, hi = ZP[tag]
        scale = draw(st.floats(width=32, allow_nan=False, allow_infinity=False).filter(bool))
        return PerTensorAffine(scale, draw(st.integers(lo, hi)), trailing), shape
    if scheme == "nf4":
        axis = draw(st.sampled_from(axes))
        shape = shape[:axis] + (draw(st.sampled_from([0, 8, 9, 20])),) + shape[axis + 1:]
        return NF4(axis, 8, own, trailing), shape
    if scheme == "mxfp":
        axis = draw(st.sampled_from(axes))
        block = draw(st.sampled_from([16, 32]))
        shape = shape[:axis] + (block * draw(st.integers(1, 2)),) + shape[axis + 1:]
        return MXFP(axis, block, own, trailing), shape
    sym = draw(st.booleans())
    shared = not sym and draw(st.booleans())
    swap = not sym and not shared and draw(st.booleans())
    s_idx, z_idx = (own + 1, own) if swap else (own, own if shared else own + 1)
    zp = None if sym else z_idx
    if scheme == "channel":
        return PerChannelAffine(draw(st.sampled_from(axes)), s_idx, zp, 3, trailing), shape
    stype = draw(st.sampled_from([1, 2, 3]))
    if paged:
        return PerBlockAffine(0, layout.page_size, s_idx, zp, stype, trailing), shape
    axis = draw(st.sampled_from(axes))
    block = draw(st.sampled_from([2, 4]))
    if shape[axis] and shape[axis] < block:
        block = 2 if shape[axis] >= 2 else block
        if shape[axis] < block:
            return None, shape
    return PerBlockAffine(axis, block, s_idx, zp, stype, trailing), shape


@st.composite
def descriptors(draw: st.DrawFn) -> TensorDescriptor:
    layout, shape = draw(layouts())
    tag = draw(st.sampled_from([*DTYPES, 0xF0, 0xF7, 0xFE]) | st.sampled_from(
        [*INT_STORAGE, *MX_STORAGE, 0x49, 0x49]))
    ext = draw(extension_types()) if tag >= 0xF0 else None
    d = TensorDescriptor(by_tag(tag), shape, layout, extension_type=ext)
    if isinstance(layout, Composite):
        return _sections(draw, d)
    own = 1 if layout.TAG in (1, 2, 3, 4, 5, 0x40) else {
        0x06: 2, 0x07: 3, 0x08: 3, 0x09: 2 * len(shape) + 1, 0x0A: 3}.get(layout.TAG, 1)
    if isinstance(layout, Extension):
        own = draw(st.integers(1, 3))
    q = None
    if not isinstance(layout, Extension):
        q, shape = quantizations(draw, layout, shape, own, tag)
    n_params = 0 if q is None else len({getattr(q, "scale_buffer_index", None),
                                        getattr(q, "zero_point_buffer_index", None)} - {None})
    dense = layout.TAG in (1, 2, 3, 4, 5, 0x40)
    offset = draw(st.integers(0, 16)) if dense else 0
    rng = element_range(layout, shape) if dense else None
    if rng is not None and rng[0] < 0 <= rng[1] - rng[0]:
        low = byte_floor(by_tag(tag), ext, rng[0])
        offset += 0 if low is None else -low
    d = replace(d, quantization=q, byte_offset=offset, shape=shape,
                buffers=tuple(BufferHandle(0) for _ in range(own + n_params)))
    dev, mem = draw(st.sampled_from(DEVICE_PAIRS))
    sync = 0 if dev == 0 else draw(st.integers(0, 2))
    handles = []
    for spec in d.buffer_specs():
        size = spec.min_size
        if size is None:
            size = offset if spec.index == 0 else 0
            size += draw(st.integers(0, 64))
        elif not spec.exact:
            size += draw(st.sampled_from([0, 0, 1, 100]))
        align = draw(st.sampled_from([64, 128, 4096])) if size else draw(
            st.sampled_from([1, 2, 64, 4096]))
        handles.append(BufferHandle(max(size, offset if spec.index == 0 else 0), align, dev,
                                    sync, mem))
    return _sections(draw, replace(d, buffers=tuple(handles)))


def _sections(draw: st.DrawFn, d: TensorDescriptor) -> TensorDescriptor:
    static = None not in d.shape
    if static and not isinstance(d.layout, (BlockPaged, CSF)) and draw(st.booleans()):
        offs = tuple(draw(st.integers(0, 3)) for _ in d.shape)
        extra = tuple(draw(st.integers(0, 3)) for _ in d.shape)
        parent = tuple(o + n + e for o, n, e in zip(offs, d.shape, extra, strict=True))
        d = replace(d, shard=Shard(parent, offs))
    if draw(st.booleans()):
        mask = draw(st.integers(0, 0x3F))
        nnz = getattr(d.layout, "nnz", None)
        nm_n, nm_m = sorted(draw(st.lists(st.integers(0, 255), min_size=2, max_size=2)))
        d = replace(d, statistics=Statistics(
            mask, nnz if nnz is not None and mask & 1 else draw(u64), draw(f64), draw(f64),
            draw(f64), draw(f64), draw(f64), draw(st.floats(0, 1e300)), nm_n, nm_m,
            draw(st.integers(0, 1)), draw(st.integers(0, 1))))
    if not isinstance(d.layout, Composite) and draw(st.booleans()):
        d = replace(d, composite_member=CompositeMember(draw(st.integers(0, 1))))
    return d


@SETTINGS
@given(descriptors())
def test_random_valid_descriptors_round_trip(d: TensorDescriptor) -> None:
    data = d.encode()
    back = decode_descriptor(data)
    assert back.encode() == data
    assert len(data) == back.descriptor_length
    assert back.shape == d.shape and back.layout == d.layout and back.buffers == d.buffers


@st.composite
def mutations(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(descriptors()).encode())
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "set", "truncate", "insert", "delete"]))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "flip" and data:
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "set" and data:
            data[pos] = draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xF0, 0xFF]))
        elif op == "truncate":
            del data[pos:]
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif data:
            del data[pos:pos + draw(st.integers(1, 8))]
    return bytes(data)


@SETTINGS
@given(mutations(), st.booleans())
def test_mutated_encodings_decode_exactly_or_raise(data: bytes, permissive: bool) -> None:
    try:
        d = decode_descriptor(data, permissive=permissive)
    except HurrayFormatError as exc:
        assert "Fix:" in str(exc)
        return
    assert d.encode(permissive=permissive) == data


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_never_escape(data: bytes) -> None:
    for blob in (data, b"HRRY\x01\x00" + data):
        with contextlib.suppress(HurrayFormatError):
            decode_descriptor(blob, permissive=True)
