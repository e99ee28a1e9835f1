"""Sparse (COO/CSR/CSC/CSF) and block-paged references: spec examples, properties, hostile input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from hurray_gpu.errors import HurrayFormatError
from hurray_gpu.format.addressing import (
    block_paged_lookup,
    block_paged_to_dense,
    coo_to_dense,
    csc_to_dense,
    csf_to_dense,
    csr_to_dense,
)

CSR_DENSE = np.array([[1.0, 0, 0, 2.0, 0], [0, 0, 3.0, 0, 0], [0, 4.0, 0, 0, 5.0],
                      [0, 0, 0, 0, 0]], dtype=np.float32)


# --- independent builders (plain Python loops over the nonzeros) -------------------------------

def build_csr(dense: np.ndarray) -> tuple[list, list, list]:
    vals, cols, ptr = [], [], [0]
    for row in dense:
        for j, v in enumerate(row):
            if v != 0:
                vals.append(v)
                cols.append(j)
        ptr.append(len(vals))
    return vals, cols, ptr


def build_csf(dense: np.ndarray, mode_order: list[int]) -> tuple[list, list]:
    perm = np.transpose(dense, mode_order)
    nz = sorted(tuple(int(v) for v in c) for c in zip(*np.nonzero(perm), strict=True))
    values = [perm[c] for c in nz]
    levels = []
    for k in range(dense.ndim):
        parents = [()] if k == 0 else sorted({c[:k] for c in nz})
        children = sorted({c[: k + 1] for c in nz})
        pos, count = [0], 0
        for p in parents:
            count += sum(1 for ch in children if ch[:k] == p)
            pos.append(count)
        levels.append((pos, [ch[k] for ch in children]))
    return values, levels


# --- spec examples -----------------------------------------------------------------------------

def test_coo_spec_example() -> None:
    out = coo_to_dense((4, 4), np.array([1.5, -0.5, 2.0], np.float32),
                       np.array([0, 1, 2, 0, 3, 3], np.uint64), is_sorted=True)
    want = np.zeros((4, 4), np.float32)
    want[0, 1], want[2, 0], want[3, 3] = 1.5, -0.5, 2.0
    assert out.dtype == np.float32 and np.array_equal(out, want)


def test_csr_csc_spec_examples() -> None:
    out = csr_to_dense((4, 5), np.array([1, 2, 3, 4, 5], np.float32),
                       np.array([0, 3, 2, 1, 4], np.uint64), np.array([0, 2, 3, 5, 5], np.uint64))
    assert np.array_equal(out, CSR_DENSE)
    out = csc_to_dense((4, 5), np.array([1, 4, 3, 2, 5], np.float32),
                       np.array([0, 2, 1, 0, 2], np.uint64),
                       np.array([0, 1, 2, 3, 4, 5], np.uint64))
    assert np.array_equal(out, CSR_DENSE)


def test_csf_spec_example_pairs_and_flat() -> None:
    levels = [([0, 2], [0, 1]), ([0, 2, 3], [0, 2, 1]), ([0, 1, 2, 4], [1, 3, 0, 2])]
    want = np.zeros((2, 3, 4), np.float32)
    want[0, 0, 1], want[0, 2, 3], want[1, 1, 0], want[1, 1, 2] = 1, 2, 3, 4
    vals = np.array([1, 2, 3, 4], np.float32)
    assert np.array_equal(csf_to_dense((2, 3, 4), [0, 1, 2], vals, levels), want)
    flat = [np.array(a, np.uint64) for pair in levels for a in pair]
    assert np.array_equal(csf_to_dense((2, 3, 4), [0, 1, 2], vals, flat), want)
    assert csf_to_dense((2, 3, 4), [0, 1, 2], vals, levels)[1, 1, 2] == 4.0


def test_csf_empty_and_mode_order() -> None:
    empty = csf_to_dense((2, 3, 4), [2, 0, 1], np.zeros(0, np.float32),
                         [([0, 0], []), ([0], []), ([0], [])])
    assert empty.shape == (2, 3, 4) and not empty.any()
    # mode_order [2, 0, 1]: level 0 stores dimension 2.
    out = csf_to_dense((2, 3, 4), [2, 0, 1], np.array([7.0]),
                       [([0, 1], [3]), ([0, 1], [1]), ([0, 1], [2])])
    assert out[1, 2, 3] == 7.0 and np.count_nonzero(out) == 1


def test_block_paged_spec_example() -> None:
    rng = np.random.default_rng(3)
    pool = rng.standard_normal((5, 4, 2, 8)).astype(np.float16)
    bt, sp = np.array([0, 1, 0], np.uint32), np.array([0, 2, 3], np.uint32)
    out = block_paged_to_dense(pool, bt, sp, 4, [6, 3])
    assert out.shape == (9, 2, 8) and out.dtype == np.float16
    assert np.array_equal(out[0:4], pool[0, 0:4])
    assert np.array_equal(out[4:6], pool[1, 0:2])
    assert np.array_equal(out[6:9], pool[0, 0:3])  # sequence 1 aliases page 0
    seq = np.array([0] * 6 + [1] * 3)[:, None, None]
    tok = np.array(list(range(6)) + list(range(3)))[:, None, None]
    head, dim = np.arange(2)[None, :, None], np.arange(8)[None, None, :]
    flat = block_paged_lookup(bt, sp, 4, 2, 8, seq, tok, head, dim, num_pages=5,
                              seq_lens=[6, 3])
    assert np.array_equal(pool.reshape(-1)[flat], out)
    assert block_paged_lookup(bt, sp, 4, 2, 8, 0, 5, 1, 3, num_pages=5) == 91
    flat_pool = block_paged_to_dense(pool.reshape(-1), bt, sp, 4, [6, 3], num_heads=2,
                                     head_dim=8, num_pages=5)
    assert np.array_equal(flat_pool, out)
    full = block_paged_to_dense(pool, bt, sp, 4)
    assert full.shape == (12, 2, 8) and np.array_equal(full[4:8], pool[1])
    empty = block_paged_to_dense(pool, np.zeros(0, np.uint32), [0], 4)
    assert empty.shape == (0, 2, 8)


# --- properties --------------------------------------------------------------------------------

sparse_arrays = st.integers(1, 4).flatmap(lambda rank: hnp.arrays(
    np.int16, hnp.array_shapes(min_dims=rank, max_dims=rank, min_side=0, max_side=5),
    elements=st.sampled_from([0, 0, 0, 1, -3, 7])))


@settings(max_examples=300, deadline=None)
@given(sparse_arrays, st.randoms(use_true_random=False))
def test_coo_roundtrip(dense: np.ndarray, rnd: object) -> None:
    nz = np.argwhere(dense)
    order = list(range(len(nz)))
    rnd.shuffle(order)  # type: ignore[attr-defined]
    shuffled = nz[order] if len(nz) else nz
    vals = dense[tuple(shuffled.T)]
    assert np.array_equal(coo_to_dense(dense.shape, vals, shuffled.astype(np.uint64)), dense)
    assert np.array_equal(coo_to_dense(dense.shape, dense[tuple(nz.T)],
                                       nz.reshape(-1).astype(np.uint64), is_sorted=True), dense)


@settings(max_examples=300, deadline=None)
@given(hnp.arrays(np.float32, hnp.array_shapes(min_dims=2, max_dims=2, min_side=0, max_side=6),
                  elements=st.sampled_from([0.0, 0.0, 1.5, -2.0])))
def test_csr_csc_roundtrip(dense: np.ndarray) -> None:
    vals, cols, ptr = build_csr(dense)
    assert np.array_equal(csr_to_dense(dense.shape, np.array(vals, np.float32),
                                       np.array(cols, np.uint64), np.array(ptr, np.uint64)),
                          dense)
    vals, rows, cptr = build_csr(dense.T)
    assert np.array_equal(csc_to_dense(dense.shape, np.array(vals, np.float32),
                                       np.array(rows, np.uint64), np.array(cptr, np.uint64)),
                          dense)


@settings(max_examples=300, deadline=None)
@given(hnp.arrays(np.int32, hnp.array_shapes(min_dims=3, max_dims=4, min_side=1, max_side=4),
                  elements=st.sampled_from([0, 0, 0, 5, -1])), st.data())
def test_csf_roundtrip(dense: np.ndarray, data: st.DataObject) -> None:
    order = data.draw(st.permutations(range(dense.ndim)))
    vals, levels = build_csf(dense, list(order))
    out = csf_to_dense(dense.shape, order, np.array(vals, np.int32), levels)
    assert np.array_equal(out, dense)


# --- hostile input -----------------------------------------------------------------------------

def raises(match: str, fn: object, *args: object, **kw: object) -> None:
    with pytest.raises(HurrayFormatError, match=match) as err:
        fn(*args, **kw)  # type: ignore[operator]
    assert "Fix:" in str(err.value)


def test_hostile_coo() -> None:
    v = np.ones(2, np.float32)
    raises(r"indices\[3\] = 4 \(entry 1, dimension 1\)", coo_to_dense, (4, 4), v,
           np.array([0, 1, 2, 4], np.uint64))
    raises("entries 0 and 2 share", coo_to_dense, (4, 4), np.ones(3),
           np.array([1, 1, 0, 0, 1, 1], np.uint64))
    raises("is not after", coo_to_dense, (4, 4), v, np.array([2, 0, 1, 3], np.uint64),
           is_sorted=True)
    raises("duplicates", coo_to_dense, (4, 4), v, np.array([2, 0, 2, 0], np.uint64),
           is_sorted=True)
    raises("expected", coo_to_dense, (4, 4), v, np.array([0, 1, 2], np.uint64))
    raises("exceeds 2\\*\\*63-1", coo_to_dense, (4, 4), v,
           np.array([0, 1, 2, 1 << 63], np.uint64))
    raises("max_elements|more than the limit", coo_to_dense, (1 << 40, 1 << 40), v,
           np.zeros(4, np.uint64))
    raises("rank", coo_to_dense, (), np.ones(0), np.zeros(0, np.uint64))


def test_hostile_csr_csc() -> None:
    v5 = np.ones(5, np.float32)
    cols = np.array([0, 3, 2, 1, 4], np.uint64)
    raises(r"row_ptr decreases at position 2: row_ptr\[1\] = 3 > row_ptr\[2\] = 2",
           csr_to_dense, (4, 5), v5, cols, np.array([0, 3, 2, 5, 5], np.uint64))
    raises(r"row_ptr\[0\] = 1", csr_to_dense, (4, 5), v5, cols, [1, 2, 3, 5, 5])
    raises(r"row_ptr\[4\] = 4, expected 5", csr_to_dense, (4, 5), v5, cols, [0, 2, 3, 4, 4])
    raises(r"expected \(5,\)", csr_to_dense, (4, 5), v5, cols, [0, 2, 3, 5])
    raises(r"col_indices\[4\] = 5 is out of range", csr_to_dense, (4, 5), v5,
           np.array([0, 3, 2, 1, 5], np.uint64), [0, 2, 3, 5, 5])
    raises(r"col_indices\[1\] = 0 is duplicate", csr_to_dense, (4, 5), v5,
           np.array([0, 0, 2, 1, 4], np.uint64), [0, 2, 3, 5, 5])
    raises(r"col_indices\[1\] = 0 is decreasing", csr_to_dense, (4, 5), np.ones(2),
           [3, 0], [0, 2, 2, 2, 2])
    raises("rank 2", csr_to_dense, (4, 5, 1), v5, cols, [0, 2, 3, 5, 5])
    raises(r"row_indices\[0\] = 4 is out of range", csc_to_dense, (4, 5), np.ones(1), [4],
           [0, 1, 1, 1, 1, 1])
    raises("col_ptr decreases", csc_to_dense, (4, 5), np.ones(1), [0], [0, 1, 0, 1, 1, 1])
    raises("not an integer", csr_to_dense, (4, 5), v5, cols.astype(np.float64),
           [0, 2, 3, 5, 5])


def test_hostile_csf() -> None:
    vals = np.ones(1)
    good = [([0, 1], [0]), ([0, 1], [0]), ([0, 1], [0])]
    raises(r"mode_order\[1\] = 0", csf_to_dense, (2, 2, 2), [0, 0, 1], vals, good)
    raises(r"mode_order\[2\] = 3", csf_to_dense, (2, 2, 2), [0, 1, 3], vals, good)
    raises("rank", csf_to_dense, (2, 2), [0, 1], vals, good[:2])
    raises(r"crd_1\[0\] = 5 is out of range: shape\[1\]", csf_to_dense, (2, 2, 2), [0, 1, 2],
           vals, [([0, 1], [0]), ([0, 1], [5]), ([0, 1], [0])])
    raises(r"pos_0 has shape \(3,\)", csf_to_dense, (2, 2, 2), [0, 1, 2], vals,
           [([0, 1, 1], [0]), ([0, 1], [0]), ([0, 1], [0])])
    raises(r"pos_2\[1\] = 2, expected 1", csf_to_dense, (2, 2, 2), [0, 1, 2], vals,
           [([0, 1], [0]), ([0, 1], [0]), ([0, 2], [0])])
    raises(r"crd_0\[1\] = 0 is duplicate", csf_to_dense, (2, 2, 2), [0, 1, 2], np.ones(2),
           [([0, 2], [0, 0]), ([0, 1, 2], [0, 0]), ([0, 1, 2], [0, 0])])
    raises("leaf level", csf_to_dense, (2, 2, 2), [0, 1, 2], np.ones(2), good)
    raises("pos_crd_lists has 2 items", csf_to_dense, (2, 2, 2), [0, 1, 2], vals, good[:2])


def test_hostile_block_paged() -> None:
    pool = np.zeros((5, 4, 2, 8), np.float16)
    raises(r"block_table\[2\] = 5 is out of range: num_pages is 5", block_paged_to_dense,
           pool, [0, 1, 5], [0, 2, 3], 4)
    raises(r"seq_ptr decreases at position 2", block_paged_to_dense, pool, [0, 1, 0],
           [0, 3, 2, 3], 4)
    raises(r"seq_ptr\[2\] = 2, expected 3", block_paged_to_dense, pool, [0, 1, 0], [0, 1, 2],
           4)
    raises(r"seq_ptr\[0\] = 1", block_paged_to_dense, pool, [0, 1, 0], [1, 2, 3], 4)
    raises(r"seq_lens\[1\] = 5 exceeds", block_paged_to_dense, pool, [0, 1, 0], [0, 2, 3], 4,
           [6, 5])
    raises("axis 1 must be page_size", block_paged_to_dense, pool, [0], [0, 1], 2)
    raises("needs 320", block_paged_to_dense, np.zeros(100), [0], [0, 1], 4, num_heads=2,
           head_dim=8, num_pages=5)
    bt, sp = [0, 1, 0], [0, 2, 3]
    raises(r"token\[0\] = 6 is past sequence 0's 6", block_paged_lookup, bt, sp, 4, 2, 8, 0,
           6, 0, 0, num_pages=5, seq_lens=[6, 3])
    raises(r"token\[0\] = 4 is past sequence 1's 4", block_paged_lookup, bt, sp, 4, 2, 8, 1,
           4, 0, 0, num_pages=5)
    raises(r"seq\[0\] = 2 is out of range", block_paged_lookup, bt, sp, 4, 2, 8, 2, 0, 0, 0,
           num_pages=5)
    raises(r"head\[0\] = 2", block_paged_lookup, bt, sp, 4, 2, 8, 0, 0, 2, 0, num_pages=5)
    raises(r"dim\[0\] = 8", block_paged_lookup, bt, sp, 4, 2, 8, 0, 0, 0, 8, num_pages=5)
    raises(r"block_table\[1\] = 1 is out of range: num_pages is 1", block_paged_lookup, bt, sp,
           4, 2, 8, 0, 0, 0, 0, num_pages=1)
    raises("page_size = 0", block_paged_lookup, bt, sp, 0, 2, 8, 0, 0, 0, 0, num_pages=5)
    raises("page pool", block_paged_lookup, bt, sp, 1 << 40, 1 << 40, 8, 0, 0, 0, 0,
           num_pages=5)


nasty = st.one_of(st.integers(0, 5), st.sampled_from([-1, 1 << 31, 1 << 40, (1 << 63) - 1,
                                                      -(1 << 63)]))


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 4), st.integers(0, 4), st.data())
def test_fuzz_sparse_and_paged_raise_only_format_errors(rank: int, n: int,
                                                         data: st.DataObject) -> None:
    lists = st.lists(nasty, min_size=0, max_size=6)
    shape = tuple(data.draw(st.lists(nasty, min_size=rank, max_size=rank)))
    which = data.draw(st.integers(0, 5))
    ones = np.ones(n)
    try:
        if which == 0:
            coo_to_dense(shape, ones, data.draw(lists), is_sorted=data.draw(st.booleans()))
        elif which == 1:
            csr_to_dense(shape, ones, data.draw(lists), data.draw(lists))
        elif which == 2:
            csc_to_dense(shape, ones, data.draw(lists), data.draw(lists))
        elif which == 3:
            levels = [(data.draw(lists), data.draw(lists)) for _ in range(rank)]
            csf_to_dense(shape, data.draw(lists), ones, levels)
        elif which == 4:
            q = [data.draw(lists.map(lambda v: v[:2] or [0])) for _ in range(4)]
            block_paged_lookup(data.draw(lists), data.draw(lists), data.draw(nasty),
                               data.draw(nasty), data.draw(nasty), *q,
                               num_pages=data.draw(nasty))
        else:
            pool = np.zeros((data.draw(st.integers(0, 3)), 2, 1, 2))
            block_paged_to_dense(pool, data.draw(lists), data.draw(lists), 2,
                                 data.draw(st.none() | lists))
    except HurrayFormatError as err:
        assert "Fix:" in str(err)
