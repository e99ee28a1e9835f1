"""Layout kernels without a device: every kernel renders in every dialect, and the kernel-level
NumPy references agree with the spec's address formulas (hurray_gpu.format.addressing)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hurray_gpu.dialect import DIALECTS, render
from hurray_gpu.format.addressing import dense_offsets, offset_range, storage_elements
from hurray_gpu.format.descriptor import BufferHandle, TensorDescriptor
from hurray_gpu.format.descriptor.layouts import Hilbert, Morton, Strided, Tiled
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.kernels import KERNELS
from hurray_gpu.kernels.layout import gather_kernel, ref_axis_entries, ref_hilbert_so
from hurray_gpu.ops.layout_plan import plan_dense

ALL = [k for k in KERNELS.values() if "layout" in k.tags]


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_every_layout_kernel_renders(dialect: str) -> None:
    names = [k.name for k in ALL]
    assert len(set(names)) == len(names)
    for kernel in ALL:
        text = render(kernel, dialect)
        assert kernel.name in text or dialect in ("glsl", "wgsl")  # entry: main()


def _desc(layout: object, shape: tuple[int, ...], dtype: str = "float32") -> TensorDescriptor:
    dt = by_name(dtype)
    lo, _ = offset_range(layout, shape)
    first = max(-lo, 0)
    size = (first + storage_elements(layout, shape)) * dt.bits // 8
    return TensorDescriptor(dt, shape, layout, (BufferHandle(size, 64),),
                            byte_offset=first * dt.bits // 8)


def _table_offsets(desc: TensorDescriptor) -> np.ndarray:
    plan = plan_dense(desc, desc.buffers[0].byte_size)
    tables = [ref_axis_entries(plan.records, n, d0, nd, base)
              for d0, nd, n, base in plan.regions]
    nx, ny, nz = (r[2] for r in plan.regions)
    total = (tables[2].astype(np.uint64)[:, None, None] + tables[1][None, :, None]
             + tables[0][None, None, :]) & 0xFFFFFFFF
    return total.reshape(-1).astype(np.int64)[: nx * ny * nz]


@st.composite
def _layouts(draw: st.DrawFn) -> tuple[object, tuple[int, ...]]:
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=rank, max_size=rank)))
    kind = draw(st.sampled_from(["strided", "tiled", "nested", "morton"]))
    if kind == "strided":
        return Strided(tuple(draw(st.integers(-9, 9)) for _ in shape)), shape
    if kind == "morton":
        return Morton(tuple(max(1, math.ceil(math.log2(n))) for n in shape)), shape
    tile = tuple(draw(st.integers(1, 4)) for _ in shape)
    outer, inner = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    strides = tuple(draw(st.integers(-3, 3)) for _ in shape)
    nested = Tiled(tuple(draw(st.integers(1, 2)) for _ in shape)) if kind == "nested" else None
    return Tiled(tile, outer, 4 if nested else inner,
                 strides if outer == 3 else (), strides if inner == 3 and not nested else (),
                 nested), shape


@settings(max_examples=80, deadline=None)
@given(_layouts())
def test_axis_tables_reproduce_the_spec_offsets(case: tuple[object, tuple[int, ...]]) -> None:
    layout, shape = case
    desc = _desc(layout, shape)
    lo, _ = offset_range(desc)
    want = dense_offsets(desc).reshape(-1) - lo
    assert np.array_equal(_table_offsets(desc), want)


def test_hilbert_reference_matches_spec_table() -> None:
    table = [(0, 0), (1, 0), (1, 1), (0, 1), (0, 2), (0, 3), (1, 3), (1, 2), (2, 2), (2, 3),
             (3, 3), (3, 2), (3, 1), (2, 1), (2, 0), (3, 0)]
    rows = np.array([x * 4 + y for x, y in table])
    assert np.array_equal(ref_hilbert_so(rows, 2, 2), np.arange(16))
    desc = _desc(Hilbert(2, 3), (4, 4, 4))
    assert np.array_equal(ref_hilbert_so(np.arange(64), 2, 3), dense_offsets(desc).reshape(-1))


def test_word_gather_reference_is_the_spec_gather() -> None:
    desc = _desc(Tiled((4, 3)), (6, 8), "uint8")
    plan = plan_dense(desc, desc.buffers[0].byte_size)
    src = np.arange(desc.buffers[0].byte_size, dtype=np.uint8)
    args = {"src": src, "dst": np.zeros(48, np.uint8), **plan.scalars}
    for name, (d0, nd, n, base) in zip(("tx", "ty", "tz"), plan.regions, strict=True):
        args[name] = ref_axis_entries(plan.records, n, d0, nd, base)
    gather_kernel("sep", "u8").reference(args)
    assert np.array_equal(args["dst"], src[dense_offsets(desc).reshape(-1)])


def test_host_blocks_follow_the_storage_runs() -> None:
    # Rows that are one storage run are copied as runs of whole rows; rows of tiles in bands
    # of whole tiles; columns that are runs in blocks 32 wide; the rest in 64 x 64 (at 1024^2:
    # at 256^2 every one of these launches is one chunk of items, so a whole slice per item).
    from hurray_gpu.backends.cpu import DEVICE as CPU
    from hurray_gpu.format.descriptor.layouts import ColMajor, RowMajor
    from hurray_gpu.ops.layout_plan import blocks

    def plan(layout: object, side: int = 256, outer: tuple[int, ...] = ()) -> object:
        dtype, shape = by_name("float32"), (*outer, side, side)
        size = 4 * math.prod(shape)
        return plan_dense(TensorDescriptor(dtype, shape, layout, (BufferHandle(size, 64),)), size)

    lays = (RowMajor(), Tiled((32, 32)), ColMajor(), Morton((8, 8)))
    assert [(plan(lay).xcontig, plan(lay).ycontig) for lay in lays] == [
        (2, 0), (1, 0), (0, 2), (0, 0)]
    assert [blocks(CPU, plan(lay, 1024)) for lay in lays[:3]] + [
        blocks(CPU, plan(Morton((10, 10)), 1024))] == [(512, 8), (128, 32), (32, 128), (64, 64)]
    assert blocks(CPU, plan(ColMajor(), 4096)) == (32, 1024)
    # Bands of tiles take whole slices only while the launch is one chunk of 128 items (so no
    # core goes without work): 1024 x 1024 is 8 x 32 blocks of 128 x 32, 512 x 512 4 x 16 and
    # 2 x 256 x 256 2 x 8 x 2 (so whole slices), 9 x 256 x 256 is 9 x 8 x 2 = 144.
    assert [blocks(CPU, plan(Tiled((1,) * len(outer) + (32, 32)), side, outer))
            for side, outer in ((1024, ()), (512, ()), (256, (2,)), (256, (9,)))] == [
        (128, 32), (512, 512), (256, 256), (128, 32)]
