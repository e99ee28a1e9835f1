"""The host C blocked gather (``layout_sepblk_*``) on cpu:0 against its NumPy reference where its
paths switch: 8-word row runs, 8 x 8 transposes of column runs (TRANSPOSE8), blocks of 16 x 16
ones (TRANSPOSE16, streamed past the cache), 8 x 8 and 16 x 16 Morton groups
(ZORDER8, ZORDER16, streamed past the cache), tables that only look like runs or Morton groups,
runs cut by the end of src or by u32 wrap-around, sizes that are not multiples of 8 or of the
block, wpe > 1 and u8/u16 words; and materialize() of such layouts end to end."""

from __future__ import annotations

import numpy as np
import pytest

from hurray_gpu.dialect.kernel import numpy_dtype
from hurray_gpu.format.descriptor.layouts import ColMajor, Morton, Strided, Tiled
from hurray_gpu.kernels import run_reference
from hurray_gpu.kernels.layout import gather_kernel
from hurray_gpu.ops.host import relayout
from hurray_gpu.ops.layout_plan import blocks, device_buffers, plan_dense
from hurray_gpu.ops.materialize import materialize
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.registry import resolve_device
from hurray_gpu.tensor import Tensor
from tests._support import stable_rng

CPU = resolve_device("cpu")


def _tiles(n: int, t: int, inner: int, outer: int) -> np.ndarray:
    """Offsets of index 0..n-1 along an axis cut in tiles of ``t`` (steps inner and outer)."""
    i = np.arange(n, dtype=np.int64)
    return (i // t) * outer + (i % t) * inner


def _fake_runs(n: int) -> np.ndarray:
    """Every aligned 8 entries start and end like a run (t[x+7] == t[x]+7) but are shuffled
    inside: an exact run test must reject them."""
    t = np.arange(n, dtype=np.int64)
    for g in range(0, n - 7, 8):
        t[g + 1: g + 7] = t[g + 1: g + 7][::-1]
    return t


def _check(word: str, tx: np.ndarray, ty: np.ndarray, tz: np.ndarray, nsrc: int, *,
           wpe: int = 1, woff: int = 0, block: tuple[int, int] = (16, 8),
           slack: int = 0) -> np.ndarray:
    """Run the gather on cpu:0 and its reference on the same inputs; return the output.
    ``slack`` nonzero words follow the nsrc words of src: a read past nsrc shows up."""
    kernel, dt = gather_kernel("sepblk", word), numpy_dtype(word)
    rng = np.random.default_rng(11)
    src = rng.integers(1, np.iinfo(dt).max, nsrc + slack, dtype=np.uint64).astype(dt)
    n = tx.size * ty.size * tz.size * wpe
    tables = {k: (np.asarray(v, np.int64) & 0xFFFFFFFF).astype(np.uint32)
              for k, v in (("tx", tx), ("ty", ty), ("tz", tz))}
    sentinel = np.full(n, 7, dt)  # a missed store shows up as 7
    scalars = {"nx": tx.size, "ny": ty.size, "nz": tz.size, "wpe": wpe, "woff": woff,
               "nsrc": nsrc, "bx": block[0], "by": block[1]}
    want = np.frombuffer(run_reference(kernel, {"dst": sentinel.tobytes(), "src": src.tobytes(),
                                                **{k: v.tobytes() for k, v in tables.items()}},
                                       scalars)["dst"], dt)
    out = Buffer.from_bytes(CPU, sentinel)
    CPU.run(kernel, dst=out, src=Buffer.from_bytes(CPU, src),
            **{k: Buffer.from_bytes(CPU, v) for k, v in tables.items()}, **scalars)
    got = out.numpy(dt)[:n]
    assert np.array_equal(got, want), np.flatnonzero(got != want)[:10]
    return got


@pytest.mark.parametrize("block", [(16, 8), (13, 5), (64, 64), (8, 32)])
@pytest.mark.parametrize("word", ["u32", "u16", "u8"])
@pytest.mark.parametrize("nx", [40, 37])
def test_row_runs_cut_by_the_end_of_src(nx: int, word: str, block: tuple[int, int]) -> None:
    # nx x 29 in 8 x 8 tiles (rows are runs of 8); src ends 5 words before the last tile row
    # does (with nx = 40 inside a run of 8): those read zeros, the words before them do not.
    tx, ty = _tiles(nx, 8, 1, 64), _tiles(29, 8, 8, 64 * 5)
    span = int(tx.max() + ty.max()) + 1
    got = _check(word, tx, ty, np.array([0]), span - 5, block=block)
    assert (got == 0).sum() == 5


@pytest.mark.parametrize("block", [(128, 32), (64, 8), (40, 8), (96, 5)])
@pytest.mark.parametrize(("nx", "cut"), [(96, 5), (100, 5), (96, 33), (64, 1)])
def test_tile_rows_of_32_cut_by_the_end_of_src(nx: int, cut: int,
                                               block: tuple[int, int]) -> None:
    # nx x 40 in 32 x 32 tiles: every aligned 32 columns of a block are one storage run
    # (copied whole after one table read) when the block is 32 wide or a multiple of it, else
    # in runs of 8. src ends `cut` words before the last tile row does, inside a 32-word run,
    # and nonzero words follow: those `cut` words must read 0, the ones before them must not.
    tx, ty = _tiles(nx, 32, 1, 1024), _tiles(40, 32, 32, 1024 * -(-nx // 32))
    span = int(tx.max() + ty.max()) + 1
    got = _check("u32", tx, ty, np.array([0]), span - cut, block=block, slack=64)
    assert (got == 0).sum() == ((ty[:, None] + tx[None, :]) >= span - cut).sum() > 0


@pytest.mark.parametrize("block", [(16, 16), (8, 24), (5, 3), (128, 128)])
@pytest.mark.parametrize("word", ["u32", "u16", "u8"])
@pytest.mark.parametrize("nx", [21, 24])
def test_column_runs_transposed_and_cut(nx: int, word: str, block: tuple[int, int]) -> None:
    # Column-major nx x 35 with a 3-word offset; src ends 5 words before the last column does
    # (nx = 24: inside a whole group of 8 columns, which TRANSPOSE8 must then leave alone).
    ny = 35
    got = _check(word, np.arange(nx) * ny, np.arange(ny), np.array([0]), nx * ny - 2,
                 woff=3, block=block)
    assert (got.reshape(ny, nx)[-5:, -1] == 0).all() and (got == 0).sum() == 5


@pytest.mark.parametrize("block", [(24, 32), (32, 32)])
@pytest.mark.parametrize("word", ["u32", "u16"])
@pytest.mark.parametrize("spacing", ["even", "descending", "uneven", "shuffled"])
def test_column_runs_in_any_order(spacing: str, word: str, block: tuple[int, int]) -> None:
    # Column runs of 8 whose starts are evenly spaced (one TRANSPOSE8 per 8 x 8; TRANSPOSE16
    # per 16 x 16 in the whole 32 x 32 blocks), descending (a stride that wraps as u32),
    # unevenly spaced or shuffled (transposed through p), in blocks with ragged edges (43 x 45).
    ny, nx = 45, 43
    col = {"even": np.arange(nx), "descending": np.arange(nx)[::-1],
           "uneven": np.arange(nx) + (np.arange(nx) >= 3),
           "shuffled": np.random.default_rng(3).permutation(nx)}[spacing]
    _check(word, col * 64, np.arange(ny), np.array([0, 64 * 45]), 64 * 45 * 2, block=block)


@pytest.mark.parametrize("block", [(32, 16), (16, 48), (128, 128)])
@pytest.mark.parametrize("word", ["u32", "u16", "u8"])
@pytest.mark.parametrize(("nx", "ny"), [(64, 48), (48, 70), (40, 35)])
def test_column_runs_in_16x16_groups(nx: int, ny: int, word: str,
                                     block: tuple[int, int]) -> None:
    # Column-major slices under a 7-word offset: blocks whose sides are multiples of 16 go
    # in 16 x 16 groups, ragged ones (of 70 rows, of 40 x 35) in 8 x 8 groups and elements.
    _check(word, np.arange(nx) * ny, np.arange(ny), np.array([0, nx * ny]), 7 + 2 * nx * ny,
           woff=7, block=block, slack=16)


@pytest.mark.parametrize("word", ["u32", "u16"])
def test_column_runs_of_8_but_not_16(word: str) -> None:
    # Columns are runs of 8 rows, one 8-row band after another (a source in 8-row tiles):
    # every aligned 8 rows is one run, 16 never are, so no block may go in 16 x 16 groups.
    nx, ny = 48, 64
    _check(word, np.arange(nx) * 8, _tiles(ny, 8, 1, 8 * nx), np.array([0]), nx * ny,
           block=(32, 32))


@pytest.mark.parametrize("cols", [3008, 3000])
def test_column_major_past_the_last_level_cache(cols: int) -> None:
    # An output larger than the host's cache: 16 x 16 groups stream their rows past it when
    # every row starts on a cache line (3008 columns), plain stores otherwise (3000).
    from hurray_gpu.backends.cpu import _stream_bytes

    rows = _stream_bytes() // 4 // cols + 40
    want = stable_rng("colmajor", cols).integers(0, 2**32, (rows, cols), dtype=np.uint32)
    got = materialize(relayout(Tensor.from_numpy(want), ColMajor()).to(CPU)).numpy()
    assert want.nbytes > _stream_bytes() and np.array_equal(got, want)


def _zorder(n: int, pos: int) -> np.ndarray:
    """Offsets of index 0..n-1 along one axis of a rank-2 Morton layout (bits at ``pos``,
    ``pos + 2``, ...)."""
    i, out = np.arange(n, dtype=np.int64), np.zeros(n, np.int64)
    for b in range(12):
        out |= ((i >> b) & 1) << (2 * b + pos)
    return out


@pytest.mark.parametrize("block", [(64, 64), (24, 16), (13, 5), (8, 8)])
@pytest.mark.parametrize("word", ["u32", "u16", "u8"])
@pytest.mark.parametrize(("nx", "ny"), [(40, 32), (43, 45)])
def test_morton_groups_reordered_and_cut(nx: int, ny: int, word: str,
                                         block: tuple[int, int]) -> None:
    # Rank-2 Morton (x bits odd, y bits even, ZORDER8 per aligned 8 x 8 group) under a 5-word
    # offset, two outer slices; src ends 61 words before the last slice's span does, inside its
    # last group, which goes element by element (the words it addresses past the end read 0).
    tx, ty = _zorder(nx, 1), _zorder(ny, 0)
    span = int(tx.max() + ty.max()) + 1
    cut = -(-span // 64) * 64
    got = _check(word, tx, ty, np.array([0, cut]), 5 + cut + span - 61, woff=5, block=block)
    assert 0 < (got == 0).sum() <= 61 and (got[:nx * ny] != 0).all()


@pytest.mark.parametrize("block", [(64, 64), (32, 16), (48, 32), (16, 24)])
@pytest.mark.parametrize("word", ["u32", "u16"])
@pytest.mark.parametrize(("nx", "ny", "cut"), [(64, 48, 0), (96, 64, 0), (64, 48, 100)])
def test_morton_in_16x16_groups(nx: int, ny: int, cut: int, word: str,
                                block: tuple[int, int]) -> None:
    # Rank-2 Morton under a 3-word offset: blocks wholly inside src whose sides are multiples of
    # 16 go in 16 x 16 groups (ZORDER16; u16 words take its loop), a block 24 rows tall in 8 x 8
    # groups. With `cut`, src ends inside the last block, which must go the bounded way.
    tx, ty = _zorder(nx, 1), _zorder(ny, 0)
    span = int(tx.max() + ty.max()) + 1
    got = _check(word, tx, ty, np.array([0]), 3 + span - cut, woff=3, block=block, slack=16)
    assert (got == 0).sum() == ((ty[:, None] + tx[None, :]) >= span - cut).sum()


@pytest.mark.parametrize("axis", ["x", "y"])
def test_groups_of_8_in_morton_order_but_not_16(axis: str) -> None:
    # Every aligned 8 x 8 group is 64 words in Morton order, but along one axis the groups are
    # not: x steps 64 words from one group to the next (row-major groups), or y's 8-row groups
    # are swapped in pairs. No 16 x 16 group is in Morton order, so blocks whose sides are
    # multiples of 16 must keep to ZORDER8.
    tx, ty = _zorder(64, 1), _zorder(32, 0)
    if axis == "x":
        tx = np.tile(_zorder(8, 1), 8) + np.arange(64) // 8 * 64
    else:
        ty = ty.reshape(2, 2, 8)[:, ::-1].reshape(-1)
    _check("u32", tx, ty, np.array([0]), int(tx.max() + ty.max()) + 1, block=(64, 32))


def test_morton_past_the_last_level_cache() -> None:
    # An output larger than the host's cache in Morton order: 16 x 16 groups stream their rows
    # past it (4096 columns: every row starts on a cache line), and the ragged last band of
    # blocks (not a multiple of 16 rows) goes in 8 x 8 groups and elements.
    from hurray_gpu.backends.cpu import _stream_bytes

    rows = _stream_bytes() // 4 // 4096 + 44
    want = stable_rng("morton", rows).integers(0, 2**32, (rows, 4096), dtype=np.uint32)
    t = relayout(Tensor.from_numpy(want), Morton((12, 12))).to(CPU)
    assert want.nbytes > _stream_bytes() and np.array_equal(materialize(t).numpy(), want)


@pytest.mark.parametrize("axis", ["x", "y"])
def test_tables_that_only_look_like_zorder(axis: str) -> None:
    # One aligned group of 8 swaps two entries (still 64 distinct words in one run): an
    # exact test must reject the whole block, not copy it in Morton order.
    tx, ty = _zorder(32, 1), _zorder(16, 0)
    bent = tx if axis == "x" else ty
    bent[[9, 10]] = bent[[10, 9]]
    _check("u32", tx, ty, np.array([0]), 32 * 16, block=(32, 16))


@pytest.mark.parametrize("axis", ["x", "y"])
def test_tables_that_only_look_like_runs(axis: str) -> None:
    fake, plain = _fake_runs(40), np.arange(24) * 40
    tx, ty = (fake, plain) if axis == "x" else (plain, fake)
    _check("u32", tx, ty, np.array([0]), 40 * 40, block=(40, 24))


@pytest.mark.parametrize("cols", [False, True])
def test_runs_across_u32_wrap_around(cols: bool) -> None:
    # The outer offset is just below 2**32: the first elements' offsets are >= nsrc (zeros)
    # and the rest wrap to the start of src, in the middle of a run.
    ny, nx = 24, 20
    tx, ty = (np.arange(nx) * ny, np.arange(ny)) if cols else (np.arange(nx), np.arange(ny) * nx)
    got = _check("u32", tx, ty, np.array([2**32 - 12, 2**32 - 3]), ny * nx, block=(16, 16))
    assert (got == 0).sum() == 15


@pytest.mark.parametrize(("word", "wpe"), [("u32", 2), ("u8", 3), ("u16", 2)])
def test_wide_elements_keep_the_element_path(word: str, wpe: int) -> None:
    tx, ty = _tiles(19, 8, 1, 64), _tiles(17, 8, 8, 64 * 3)
    span = int(tx.max() + ty.max()) + 1
    _check(word, tx, ty, np.array([0, span]), 2 * span * wpe - 4, wpe=wpe, woff=1)


_LAYOUTS = [ColMajor(), Tiled((8, 8)), Tiled((16, 8)), Tiled((4, 16)),
            Tiled((16, 16), inner_layout=4, inner=Tiled((8, 8))), Morton((6, 6)),
            Strided((-53, 1)), Strided((1, -45)), Strided((-1, -45))]


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "float64"])
@pytest.mark.parametrize("layout", _LAYOUTS, ids=repr)
def test_materialize_odd_shapes_on_host(layout: object, dtype: str) -> None:
    rng = np.random.default_rng(5)
    shape = (3, 45, 53) if isinstance(layout, ColMajor) else (45, 53)
    want = (rng.standard_normal(shape) * 50).astype(dtype)
    got = materialize(relayout(Tensor.from_numpy(want), layout).to(CPU)).numpy()
    assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "float64"])
@pytest.mark.parametrize("shape", [(160, 96), (48, 64), (300, 200)])
def test_materialize_column_major_in_16x16_groups(shape: tuple[int, ...], dtype: str) -> None:
    # Sides that are multiples of 16 (whole 16 x 16 groups for 4-byte words, the same blocks in
    # u8/u16 words, the element path for 8-byte ones), and 300 x 200 with ragged last blocks.
    want = (stable_rng("colmajor", shape, dtype).standard_normal(shape) * 50).astype(dtype)
    got = materialize(relayout(Tensor.from_numpy(want), ColMajor()).to(CPU)).numpy()
    assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize(("layout", "block"), [
    (Tiled((64, 64), inner_layout=4, inner=Tiled((8, 8))), (64, 64)),
    (Tiled((32, 32)), (128, 32)), (ColMajor(), (128, 128)), (Morton((11, 11)), (64, 64))])
def test_block_shape_per_layout_class(layout: object, block: tuple[int, int]) -> None:
    # Nested tiles at least 64 rows tall take one 64 x 64 block inside a tile, shorter tiles a
    # band of whole tiles; the result is exact either way (ragged 1500 x 1800 edges). The
    # same layout in 150 x 200 is one chunk of items: one item per slice.
    for shape, want in (((1500, 1800), block), ((150, 200), (200, 150))):
        dense = stable_rng("blocks", shape).standard_normal(shape).astype(np.float32)
        t = relayout(Tensor.from_numpy(dense), layout).to(CPU)
        assert blocks(CPU, plan_dense(t.descriptor, device_buffers(t, CPU)[0].nbytes)) == want
        assert np.array_equal(materialize(t).numpy(), dense)


def test_tile_bands_as_whole_rows_over_slices() -> None:
    # 3 slices of 70 x 100 in 32 x 32 tiles: a one-chunk launch, so each item copies a whole
    # slice (100 wide: 3 tiles and a ragged 4th; 70 rows: 2 tile rows and a ragged 6).
    want = np.random.default_rng(12).standard_normal((3, 70, 100)).astype(np.float32)
    t = relayout(Tensor.from_numpy(want), Tiled((1, 32, 32))).to(CPU)
    assert blocks(CPU, plan_dense(t.descriptor, device_buffers(t, CPU)[0].nbytes)) == (100, 70)
    assert np.array_equal(materialize(t).numpy(), want)
