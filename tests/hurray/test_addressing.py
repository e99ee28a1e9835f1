"""Dense-layout addressing reference: spec examples, NumPy cross-checks and properties."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError
from hurray_gpu.format.addressing import (
    byte_positions,
    dense_offsets,
    element_offsets,
    hilbert_coords,
    hilbert_index,
    morton_code,
    offset_range,
    storage_elements,
)
from hurray_gpu.format.descriptor import (
    CSR,
    BlockPaged,
    ColMajor,
    Hilbert,
    Morton,
    RowMajor,
    Strided,
    TensorDescriptor,
    Tiled,
    decode_descriptor,
)
from hurray_gpu.format.descriptor.sizes import element_range, layout_specs
from hurray_gpu.format.dtypes import buffer_size, by_name

F32 = by_name("float32")
HILBERT_R2_P2 = [(0, 0), (1, 0), (1, 1), (0, 1), (0, 2), (0, 3), (1, 3), (1, 2),
                 (2, 2), (2, 3), (3, 3), (3, 2), (3, 1), (2, 1), (2, 0), (3, 0)]


# --- scalar oracles transcribed literally from hurray-spec (independent of the module) ------

def spec_coords_to_hilbert(x: list[int], r: int, p: int) -> int:
    x = list(x)
    m = 1 << (p - 1)
    q = m
    while q > 1:
        pp = q - 1
        for i in range(r):
            if x[i] & q:
                x[0] ^= pp
            else:
                t = (x[0] ^ x[i]) & pp
                x[0] ^= t
                x[i] ^= t
        q >>= 1
    for i in range(1, r):
        x[i] ^= x[i - 1]
    t, q = 0, m
    while q > 1:
        if x[r - 1] & q:
            t ^= q - 1
        q >>= 1
    x = [v ^ t for v in x]
    h = 0
    for b in range(p):
        for d in range(r):
            h |= ((x[d] >> b) & 1) << (b * r + (r - 1 - d))
    return h


def spec_morton(idx: tuple[int, ...], bits: tuple[int, ...]) -> int:
    code, rank = 0, len(bits)
    for b in range(max(bits)):
        for d in range(rank):
            if b < bits[d]:
                code |= ((idx[d] >> b) & 1) << (b * rank + d)
    return code


def simple_off(tag: int, dims: tuple[int, ...], strides: tuple[int, ...],
               e: tuple[int, ...]) -> int:
    if tag == 3:
        return sum(i * s for i, s in zip(e, strides, strict=True))
    order = range(len(dims)) if tag == 2 else range(len(dims) - 1, -1, -1)
    off, acc = 0, 1
    for k in order:
        off += e[k] * acc
        acc *= dims[k]
    return off


def spec_tiled(t: Tiled, dims: tuple[int, ...], idx: tuple[int, ...]) -> int:
    tile = t.tile_shape
    grid = tuple(-(-n // k) for n, k in zip(dims, tile, strict=True))
    tid = tuple(i // k for i, k in zip(idx, tile, strict=True))
    e = tuple(i % k for i, k in zip(idx, tile, strict=True))
    outer = simple_off(t.outer_layout, grid, t.outer_strides, tid) * int(np.prod(tile))
    if t.inner is not None:
        return outer + spec_tiled(t.inner, tile, e)
    return outer + simple_off(t.inner_layout, tile, t.inner_strides, e)


def all_indices(dims: tuple[int, ...]) -> np.ndarray:
    return np.moveaxis(np.indices(dims, dtype=np.int64), 0, -1).reshape(-1, len(dims))


# --- spec examples -----------------------------------------------------------------------------

def test_row_and_col_major_spec_examples() -> None:
    assert element_offsets(RowMajor(), (3, 4), [1, 2]) == 6
    assert element_offsets(ColMajor(), (3, 4), [1, 2]) == 7
    assert element_offsets(RowMajor(), (), np.zeros((0,), np.int64)) == 0


def test_strided_spec_example() -> None:
    lay = Strided((-4, 1))
    assert element_offsets(lay, (3, 4), [2, 3]) == -5
    # The spec's range formula gives [-8, 3] (12 elements); its prose "(9 elements)" only
    # counts up to offset 0 and ignores element [0, 3] at offset 3.
    assert offset_range(lay, (3, 4)) == (-8, 3)
    assert storage_elements(lay, (3, 4)) == 12
    assert element_offsets(lay, (3, 4), [0, 3]) == 3


def test_tiled_spec_example() -> None:
    lay = Tiled((2, 4))
    assert element_offsets(lay, (6, 8), [3, 5]) == 29
    assert storage_elements(lay, (6, 8)) == 48
    # Partial boundary tiles: storage covers whole tiles.
    assert storage_elements(lay, (5, 7)) == 3 * 2 * 8
    assert element_offsets(lay, (5, 7), [4, 6]) == (2 * 2 + 1) * 8 + 0 * 4 + 2


def test_tiled_nested_and_strided_sublayouts() -> None:
    nested = Tiled((4, 4), 0x01, 0x04, inner=Tiled((2, 2)))
    # tile [1,1] -> 3*16; inner tile [0,1] -> 1*4; intra [1,0] -> 2
    assert element_offsets(nested, (8, 8), [5, 6]) == 54
    col = Tiled((2, 4), 0x02, 0x02)
    # grid [3,2] col-major: tile [1,1] -> 1 + 1*3 = 4; inner col-major [1,1] -> 1 + 1*2 = 3
    assert element_offsets(col, (6, 8), [3, 5]) == 4 * 8 + 3
    st_lay = Tiled((2, 4), 0x03, 0x03, outer_strides=(1, 5), inner_strides=(1, -2))
    assert element_offsets(st_lay, (6, 8), [3, 5]) == (1 + 5) * 8 + (1 - 2)


def test_tiled_depth_limit() -> None:
    node = Tiled((1,))
    for _ in range(7):
        node = Tiled((1,), 0x01, 0x04, inner=node)
    assert element_offsets(node, (3,), [2]) == 2  # 8 blocks: allowed
    deeper = Tiled((1,), 0x01, 0x04, inner=node)
    with pytest.raises(HurrayFormatError, match="deeper than 8"):
        element_offsets(deeper, (3,), [2])


def test_morton_spec_example_and_unequal_bits() -> None:
    assert element_offsets(Morton((2, 2)), (4, 4), [2, 3]) == 14
    assert morton_code([[2, 3], [0, 0], [3, 3]], (2, 2)).tolist() == [14, 0, 15]
    assert storage_elements(Morton((2, 2)), (4, 4)) == 16
    # Morton codes with explicit bit positions (Hurray spec, Layouts: Morton): bits [1, 3] put dimension 1 bits at positions 1, 3, 5 -> max code 43.
    assert storage_elements(Morton((1, 3)), (2, 8)) == 44
    assert element_offsets(Morton((1, 3)), (2, 8), [1, 7]) == 43


def test_hilbert_conformance_table() -> None:
    h = np.arange(16)
    assert [tuple(c) for c in hilbert_coords(h, 2, 2).tolist()] == HILBERT_R2_P2
    assert hilbert_index(np.array(HILBERT_R2_P2), 2, 2).tolist() == list(range(16))
    lay = Hilbert(2, 2)
    assert element_offsets(lay, (4, 4), np.array(HILBERT_R2_P2)).tolist() == list(range(16))
    for hv, c in enumerate(HILBERT_R2_P2):
        assert spec_coords_to_hilbert(list(c), 2, 2) == hv


@pytest.mark.parametrize(("rank", "order"), [(2, 1), (2, 3), (2, 5), (3, 1), (3, 2), (3, 3),
                                             (4, 2), (5, 2), (6, 1), (6, 2), (7, 1), (7, 2),
                                             (8, 1), (8, 2)])
def test_hilbert_bijective_roundtrip_adjacent(rank: int, order: int) -> None:
    n = 1 << (rank * order)
    coords = hilbert_coords(np.arange(n), order, rank)
    assert coords.min() >= 0 and coords.max() < 1 << order
    assert np.array_equal(hilbert_index(coords, order, rank), np.arange(n))
    assert len({tuple(c) for c in coords.tolist()}) == n  # bijective
    step = np.abs(np.diff(coords, axis=0))
    assert np.all(step.sum(axis=1) == 1) and np.all(step.max(axis=1) == 1)
    grid = all_indices((1 << order,) * rank)
    assert np.array_equal(hilbert_coords(hilbert_index(grid, order, rank), order, rank), grid)


@settings(max_examples=300, deadline=None)
@given(st.integers(2, 5), st.integers(1, 6), st.data())
def test_hilbert_matches_literal_spec(rank: int, order: int, data: st.DataObject) -> None:
    order = min(order, 12 // rank)
    x = data.draw(st.lists(st.integers(0, (1 << order) - 1), min_size=rank, max_size=rank))
    h = spec_coords_to_hilbert(x, rank, order)
    assert hilbert_index(np.array(x), order, rank) == h
    assert hilbert_coords(h, order, rank).tolist() == x


# --- NumPy cross-checks ------------------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=4), st.data())
def test_col_major_matches_numpy_order_f(dims: list[int], data: st.DataObject) -> None:
    a = np.arange(int(np.prod(dims))).reshape(dims) * 3 + 1
    buf = a.ravel(order="F")
    desc = TensorDescriptor(F32, tuple(dims), ColMajor())
    assert np.array_equal(buf[dense_offsets(desc)], a)
    assert np.array_equal(a.ravel()[dense_offsets(TensorDescriptor(F32, tuple(dims)))], a)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 5), st.integers(-7, 7)), min_size=1, max_size=4))
def test_strided_matches_as_strided(dims_strides: list[tuple[int, int]]) -> None:
    dims = tuple(d for d, _ in dims_strides)
    strides = tuple(s for _, s in dims_strides)
    lay = Strided(strides)
    lo, hi = offset_range(lay, dims)
    buf = np.arange(hi - lo + 1, dtype=np.int64) * 10
    base = buf[-lo:]
    view = np.lib.stride_tricks.as_strided(base, dims, tuple(s * 8 for s in strides))
    offs = dense_offsets(TensorDescriptor(F32, dims, lay))
    assert np.array_equal(buf[offs - lo], view)
    assert storage_elements(lay, dims) == hi - lo + 1
    assert offs.min() == lo and offs.max() == hi


@st.composite
def tiled_layouts(draw: st.DrawFn, rank: int, depth: int = 3) -> Tiled:
    tile = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    outer = draw(st.sampled_from([1, 2, 3]))
    inner = draw(st.sampled_from([1, 2, 3, 4] if depth > 1 else [1, 2, 3]))
    strides = st.lists(st.integers(-6, 6), min_size=rank, max_size=rank).map(tuple)
    return Tiled(tile, outer, inner, draw(strides) if outer == 3 else (),
                 draw(strides) if inner == 3 else (),
                 draw(tiled_layouts(rank, depth - 1)) if inner == 4 else None)


@st.composite
def dense_cases(draw: st.DrawFn) -> tuple[object, tuple[int, ...]]:
    kind = draw(st.sampled_from(["row", "col", "strided", "tiled", "morton", "hilbert"]))
    if kind == "hilbert":
        rank = draw(st.integers(2, 4))
        order = draw(st.integers(1, 8 // rank + (1 if rank == 2 else 0)))
        return Hilbert(order, rank), (1 << order,) * rank
    rank = draw(st.integers(1, 4))
    dims = tuple(draw(st.lists(st.integers(0, 6), min_size=rank, max_size=rank)))
    if kind == "row":
        return RowMajor(), dims
    if kind == "col":
        return ColMajor(), dims
    if kind == "strided":
        return Strided(tuple(draw(st.lists(st.integers(-9, 9), min_size=rank,
                                           max_size=rank)))), dims
    if kind == "tiled":
        return draw(tiled_layouts(rank)), dims
    bits = tuple(max(1, (n - 1).bit_length()) + draw(st.integers(0, 2)) for n in dims)
    return Morton(bits), dims


@settings(max_examples=300, deadline=None)
@given(dense_cases())
def test_dense_offsets_match_scalar_spec_and_element_offsets(case: tuple) -> None:
    lay, dims = case
    desc = TensorDescriptor(F32, dims, lay)
    offs = dense_offsets(desc)
    assert offs.shape == dims and offs.dtype == np.int64
    idx = all_indices(dims)
    assert np.array_equal(element_offsets(desc, None, idx), offs.reshape(-1))
    for i in itertools.islice(idx.tolist(), 40):
        want = (spec_tiled(lay, dims, tuple(i)) if isinstance(lay, Tiled)
                else spec_morton(tuple(i), lay.bits) if isinstance(lay, Morton)
                else spec_coords_to_hilbert(i, lay.hilbert_rank, lay.order)
                if isinstance(lay, Hilbert) else None)
        if want is not None:
            assert offs[tuple(i)] == want
    if offs.size:
        lo, hi = offset_range(lay, dims)
        assert lo <= offs.min() and offs.max() <= hi
    if isinstance(lay, (RowMajor, ColMajor, Hilbert)) or (
            isinstance(lay, Morton) and len(set(lay.bits)) == 1
            and all(n == 1 << b for n, b in zip(dims, lay.bits, strict=True))):
        assert np.array_equal(np.sort(offs.reshape(-1)), np.arange(offs.size))


@settings(max_examples=300, deadline=None)
@given(dense_cases(), st.integers(0, 64))
def test_storage_agrees_with_descriptor_sizes(case: tuple, byte_offset: int) -> None:
    lay, dims = case
    assert element_range(lay, dims) == offset_range(lay, dims)
    lo, hi = offset_range(lay, dims)
    assert storage_elements(lay, dims) == hi - lo + 1
    if isinstance(lay, Tiled) and lay.outer_layout != 3 and lay.inner_layout in (1, 2):
        grid = np.prod([-(-n // t) for n, t in zip(dims, lay.tile_shape, strict=True)])
        assert storage_elements(lay, dims) == grid * np.prod(lay.tile_shape)
    if isinstance(lay, Morton) and len(set(lay.bits)) == 1 and 0 not in dims:
        assert storage_elements(lay, dims) == 1 << sum(lay.bits)
    spec = layout_specs(lay, dims, F32, None, byte_offset)[0]
    assert spec.min_size == byte_offset + buffer_size(F32, hi + 1)


def test_golden_dense_descriptors_buffer_sizes() -> None:
    root = Path(__file__).parent.parent / "golden" / "hurray"
    checked = 0
    for entry in json.loads((root / "manifest.json").read_text())["descriptors"]:
        d = decode_descriptor((root / entry["file"]).read_bytes())
        if d.layout.TAG in (0x01, 0x02, 0x03, 0x04, 0x05, 0x40):
            need = d.byte_offset + buffer_size(d.dtype, storage_elements(d))
            assert need == entry["expect"]["buffer_byte_sizes"][0], entry["file"]
            checked += 1
    assert checked >= 5
    morton = decode_descriptor((root / "descriptors" / "morton_f32_4x4.bin").read_bytes())
    assert dense_offsets(morton)[2, 3] == 14


def test_byte_positions() -> None:
    b, bit = byte_positions(F32, [0, 3, -2], byte_offset=8)
    assert b.tolist() == [8, 20, 0] and bit.tolist() == [0, 0, 0]
    b, bit = byte_positions(by_name("uint4"), [0, 1, 2, 3, -1], byte_offset=4)
    assert b.tolist() == [4, 4, 5, 5, 3] and bit.tolist() == [0, 4, 0, 4, 4]
    b, bit = byte_positions(by_name("bool"), [9])
    assert (b.tolist(), bit.tolist()) == ([1], [1])
    b, bit = byte_positions(by_name("float6_e2m3"), [5, 3])
    assert (b.tolist(), bit.tolist()) == ([3, 0], [6, 18])


# --- hostile input -----------------------------------------------------------------------------

@pytest.mark.parametrize(("lay", "dims", "idx", "match"), [
    (RowMajor(), (3, 4), [3, 0], "indices\\[0, 0\\] = 3"),
    (RowMajor(), (3, 4), [0, -1], "negative"),
    (RowMajor(), (3, 4), [1, 2, 3], "last axis"),
    (RowMajor(), (3, None), [0, 0], "dynamic"),
    (Strided((1,)), (3, 4), [0, 0], "strides has 1"),
    (Strided((1 << 62, 1 << 62)), (3, 4), [0, 0], "beyond signed 64-bit"),
    (Morton((1, 2)), (3, 4), [0, 0], "exceeds 2\\*\\*morton_bits"),
    (Morton((40, 40)), (4, 4), [0, 0], "63-bit"),
    (Hilbert(2, 2), (4, 8), [0, 0], "not 2\\*\\*hilbert_order"),
    (Hilbert(2, 3), (4, 4), [0, 0], "hilbert_rank"),
    (Tiled((0, 1)), (3, 4), [0, 0], "tile_shape"),
    (Tiled((1, 1), 0x05), (3, 4), [0, 0], "invalid"),
    (Tiled((2, 2), 0x01, 0x04), (3, 4), [0, 0], "nested"),
    (ColMajor(), (), np.zeros(0, np.int64), "scalar"),
])
def test_hostile_dense(lay: object, dims: tuple, idx: object, match: str) -> None:
    with pytest.raises(HurrayFormatError, match=match) as err:
        element_offsets(lay, dims, np.asarray(idx, dtype=np.int64))
    assert "Fix:" in str(err.value)


def test_hostile_index_types_and_limits() -> None:
    with pytest.raises(HurrayFormatError, match="exceeds 2\\*\\*63-1"):
        element_offsets(RowMajor(), (3,), np.array([[1 << 63]], dtype=np.uint64))
    with pytest.raises(HurrayFormatError, match="not an integer"):
        element_offsets(RowMajor(), (3,), np.array([[1.0]]))
    with pytest.raises(HurrayFormatError, match="more than the limit"):
        dense_offsets(TensorDescriptor(F32, (1 << 20, 1 << 20)))
    with pytest.raises(UnsupportedOpError):
        element_offsets(CSR(3), (3, 4), [[0, 0]])
    with pytest.raises(UnsupportedOpError):
        storage_elements(BlockPaged(4, 2), (3, 1, 1))
    with pytest.raises(HurrayFormatError, match="differs"):
        element_offsets(TensorDescriptor(F32, (3, 4)), (4, 3), [[0, 0]])
    with pytest.raises(HurrayFormatError):
        hilbert_coords([16], 2, 2)
    with pytest.raises(HurrayFormatError):
        hilbert_index([[4, 0]], 2, 2)
    with pytest.raises(HurrayFormatError):
        hilbert_index([[0, 0]], 32, 2)
    with pytest.raises(HurrayFormatError):
        morton_code([[4, 0]], (2, 2))


nasty = st.one_of(st.integers(0, 5), st.sampled_from([-1, 1 << 31, 1 << 40, (1 << 62),
                                                      (1 << 63) - 1, -(1 << 63)]))


@st.composite
def nasty_layouts(draw: st.DrawFn, rank: int, depth: int = 0) -> object:
    vec = st.lists(nasty, min_size=max(0, rank - 1), max_size=rank + 1).map(tuple)
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return draw(st.sampled_from([RowMajor(), ColMajor()]))
    if kind == 1:
        return Strided(draw(vec))
    if kind == 2:
        return Morton(draw(vec))
    if kind == 3:
        return Hilbert(draw(nasty), draw(nasty))
    inner = draw(st.integers(0, 5)) if depth < 9 else 1
    return Tiled(draw(vec), draw(st.integers(0, 4)), inner, draw(vec), draw(vec),
                 draw(nasty_layouts(rank, depth + 1)) if inner == 4 else None)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 3), st.data())
def test_fuzz_dense_raise_only_typed_errors(rank: int, data: st.DataObject) -> None:
    shape = tuple(data.draw(st.lists(nasty, min_size=rank, max_size=rank)))
    lay = data.draw(nasty_layouts(rank))
    rows = data.draw(st.lists(st.lists(st.integers(0, 5), min_size=rank, max_size=rank),
                              max_size=3))
    idx = np.array(rows, dtype=np.int64).reshape(len(rows), rank)
    try:
        element_offsets(lay, shape, idx)
        storage_elements(lay, shape)
        dense_offsets(TensorDescriptor(F32, shape, lay))
    except (HurrayFormatError, UnsupportedOpError) as err:
        assert "Fix:" in str(err)
