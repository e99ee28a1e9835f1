"""Hostile-index matrix for every layout with index buffers or extents, on every device.

One table (CASES) of malicious tensors: sparse COO/CSR/CSC/CSF index buffers, block-paged
block tables / seq_ptr / seq_lens, and strided/tiled/Morton extents (negative and zero
strides, byte offsets past the buffer, buffers one byte short). Each row either expects
REJECT (the documented typed error, raised while building the tensor or by ``materialize``
before any launch) or an exact output (the kernels' guards neutralise it, or it is valid
per the spec and must come out right). CI runs this file again with HURRAY_GPU_DEBUG_BOUNDS=1,
so an out-of-bounds write by a kernel surfaces as BoundsViolation. Complements the
one-invariant tests of test_materialize_sparse.py and test_materialize_paged.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError
from hurray_gpu.format.addressing import dense_offsets
from hurray_gpu.format.descriptor import BufferHandle, TensorDescriptor
from hurray_gpu.format.descriptor.layouts import (
    COO,
    CSC,
    CSR,
    BlockPaged,
    Morton,
    RowMajor,
    Strided,
    Tiled,
)
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.ops.host import sparsify
from hurray_gpu.ops.materialize import materialize
from hurray_gpu.tensor import Tensor

U64_MAX, U32_MAX, I64_MIN_BITS = (1 << 64) - 1, (1 << 32) - 1, 1 << 63
REJECT = None  # expected outcome: the typed error, before launch
REJECTED = (HurrayFormatError, UnsupportedOpError)  # both documented by materialize


def _u64(values: Any) -> np.ndarray:
    return np.asarray(values, dtype=np.uint64).astype("<u8").view(np.uint8)


def _f32(n: int) -> np.ndarray:
    return np.arange(1, n + 1, dtype=np.float32)


# -- sparse builders (values are 1, 2, 3, ... in storage order) --------------------------------

def _coo(idx: list[list[int]], shape: tuple[int, ...] = (3, 4), sorted_: int = 1,
         nnz: int | None = None) -> Tensor:
    n = len(idx) if nnz is None else nnz
    flat = [c for row in idx for c in row]
    desc = TensorDescriptor(by_name("float32"), shape, COO(n, sorted_),
                            (BufferHandle(4 * len(idx)), BufferHandle(8 * len(flat))))
    return Tensor.from_parts(desc, [_f32(len(idx)).view(np.uint8), _u64(flat)])


def _compressed(kind: type, idx: list[int], ptr: list[int],
                shape: tuple[int, int] = (3, 4)) -> Tensor:
    desc = TensorDescriptor(by_name("float32"), shape, kind(len(idx)),
                            (BufferHandle(4 * len(idx)), BufferHandle(8 * len(idx)),
                             BufferHandle(8 * len(ptr))))
    return Tensor.from_parts(desc, [_f32(len(idx)).view(np.uint8), _u64(idx), _u64(ptr)])


def _csf(buffer: int, entry: int, value: int) -> Tensor:
    """A valid CSF tensor with one index entry overwritten (1 pos_0, 2 crd_0, 3 pos_1, ...)."""
    t = sparsify(Tensor.from_numpy(_CSF_DENSE), "csf")
    bufs = [np.array(b, copy=True) for b in t.buffers]
    bufs[buffer].view("<u8")[entry % bufs[buffer].view("<u8").size] = value
    return Tensor.from_parts(t.descriptor, bufs)


_CSF_DENSE = np.zeros((2, 3, 4), np.float32)
_CSF_DENSE[0, 1, 2], _CSF_DENSE[0, 2, 0], _CSF_DENSE[1, 0, 3], _CSF_DENSE[1, 2, 1] = 1, 2, 3, 4


def _dense(entries: dict[tuple[int, ...], float], shape: tuple[int, ...] = (3, 4)) -> np.ndarray:
    out = np.zeros(shape, np.float32)
    for where, value in entries.items():
        out[where] = value
    return out


# -- block-paged builders: 4 pages of 2 tokens, 1 head of 2 floats ----------------------------

PAGES, PS = 4, 2
POOL = np.arange(PAGES * PS * 2, dtype=np.float32).reshape(PAGES, PS, 1, 2)


def _paged(table: list[int], ptr: list[int], tokens: int, *, wide: bool = False,
           pool_bytes: int | None = None) -> Tensor:
    idx = np.dtype("<u8" if wide else "<u4")
    tb = np.asarray(table, np.uint64).astype(idx).view(np.uint8)
    sp = np.asarray(ptr, np.uint64).astype(idx).view(np.uint8)
    pool = POOL.reshape(-1).view(np.uint8)[:pool_bytes]
    layout = BlockPaged(PS, PAGES, num_seqs=len(ptr) - 1, block_table_index_type=int(wide))
    desc = TensorDescriptor(by_name("float32"), (tokens, 1, 2), layout,
                            (BufferHandle(pool.size), BufferHandle(tb.size),
                             BufferHandle(sp.size)))
    return Tensor.from_parts(desc, [pool, tb, sp])


def _tokens(*pages_and_counts: tuple[int, int]) -> np.ndarray:
    return np.concatenate([POOL[p, :n] for p, n in pages_and_counts]).reshape(-1, 1, 2)


# -- dense extents: int32 data 0, 1, 2, ... ---------------------------------------------------

def _extent(shape: tuple[int, ...], layout: Any, elements: int, byte_offset: int = 0,
            nbytes: int | None = None) -> Tensor:
    data = np.arange(elements, dtype=np.int32).view(np.uint8)[:nbytes]
    desc = TensorDescriptor(by_name("int32"), shape, layout, (BufferHandle(data.size),),
                            byte_offset=byte_offset)
    return Tensor.from_parts(desc, [data])


def _oracle(t: Tensor) -> np.ndarray:
    """The host addressing reference: out.flat[i] = data[byte_offset/4 + offsets.flat[i]]."""
    data = np.asarray(t.buffers[0]).view(np.int32)
    return data[t.descriptor.byte_offset // 4 + dense_offsets(t.descriptor)]


@dataclass(frozen=True)
class Case:
    """One malicious input. ``expect``: REJECT, or the exact materialized output (a callable
    of the host tensor when the host addressing reference computes it)."""

    name: str
    build: Callable[[], Tensor]
    expect: Any
    seq_lens: list[int] | None = None


CASES = [
    # COO: indices as u64; anything >= the dimension, or with the i64 sign bit, is hostile.
    Case("coo/index-u64-max", lambda: _coo([[0, 0], [U64_MAX, 1]]), REJECT),
    Case("coo/index-i64-sign-bit", lambda: _coo([[0, 0], [1, I64_MIN_BITS]]), REJECT),
    Case("coo/index-equals-dim", lambda: _coo([[0, 0], [2, 4]]), REJECT),
    Case("coo/nnz-beyond-buffers", lambda: _coo([[0, 0]], nnz=5), REJECT),
    Case("coo/nnz-zero", lambda: _coo([]), np.zeros((3, 4), np.float32)),
    Case("coo/unsorted-flagged-unsorted", lambda: _coo([[2, 3], [0, 1]], sorted_=0),
         _dense({(2, 3): 1, (0, 1): 2})),
    # CSR: col_indices and row_ptr (u64).
    Case("csr/row-ptr-end-u64-max", lambda: _compressed(CSR, [0, 1], [0, 1, 2, U64_MAX]),
         REJECT),
    Case("csr/row-ptr-past-nnz", lambda: _compressed(CSR, [0, 1], [0, 1, 5, 2]), REJECT),
    Case("csr/col-i64-sign-bit", lambda: _compressed(CSR, [0, I64_MIN_BITS], [0, 1, 2, 2]),
         REJECT),
    Case("csr/row-ptr-short", lambda: _compressed(CSR, [0, 1], [0, 1, 2]), REJECT),
    Case("csr/all-rows-empty", lambda: _compressed(CSR, [], [0, 0, 0, 0]),
         np.zeros((3, 4), np.float32)),
    # CSC: row_indices and col_ptr (u64), the transpose of CSR.
    Case("csc/row-equals-dim", lambda: _compressed(CSC, [3], [0, 1, 1, 1, 1]), REJECT),
    Case("csc/row-u64-max", lambda: _compressed(CSC, [U64_MAX], [0, 1, 1, 1, 1]), REJECT),
    Case("csc/row-i64-sign-bit", lambda: _compressed(CSC, [0, I64_MIN_BITS], [0, 1, 2, 2, 2]),
         REJECT),
    Case("csc/col-ptr-decreasing", lambda: _compressed(CSC, [0, 1], [0, 2, 1, 2, 2]), REJECT),
    Case("csc/col-ptr-first-nonzero", lambda: _compressed(CSC, [0, 1], [1, 1, 2, 2, 2]),
         REJECT),
    Case("csc/valid-control", lambda: _compressed(CSC, [0, 2], [0, 1, 1, 2, 2]),
         _dense({(0, 0): 1, (2, 2): 2})),
    # CSF (2 x 3 x 4, 4 nonzeros): pos_l / crd_l per level.
    Case("csf/pos0-end-u64-max", lambda: _csf(1, 1, U64_MAX), REJECT),
    Case("csf/crd0-i64-sign-bit", lambda: _csf(2, 0, I64_MIN_BITS), REJECT),
    Case("csf/pos1-past-crd1", lambda: _csf(3, -1, 1 << 40), REJECT),
    Case("csf/pos2-past-leaves", lambda: _csf(5, -1, 5), REJECT),
    Case("csf/leaf-crd-u64-max", lambda: _csf(6, 0, U64_MAX), REJECT),
    Case("csf/valid-control", lambda: _csf(6, 0, 2), _CSF_DENSE),
    # Block-paged: block_table (u32 or u64), seq_ptr, seq_lens.
    Case("paged/page-id-u32-max", lambda: _paged([0, U32_MAX], [0, 2], 4), REJECT),
    Case("paged/page-id-u64-max", lambda: _paged([0, U64_MAX], [0, 2], 4, wide=True), REJECT),
    Case("paged/page-id-2^32-wide", lambda: _paged([0, 1 << 32], [0, 2], 4, wide=True),
         REJECT),  # truncated to u32 it would alias page 0
    Case("paged/seq-ptr-past-table", lambda: _paged([0, 1], [0, 5], 4), REJECT),
    Case("paged/seq-ptr-u32-max", lambda: _paged([0, 1], [0, U32_MAX], 4), REJECT),
    Case("paged/seq-lens-negative", lambda: _paged([0, 1], [0, 1, 2], 2), REJECT,
         seq_lens=[-1, 3]),
    Case("paged/seq-lens-2^62", lambda: _paged([0, 1], [0, 2], 4), REJECT, seq_lens=[1 << 62]),
    Case("paged/pool-one-byte-short", lambda: _paged([0, 1], [0, 2], 4, pool_bytes=63), REJECT),
    Case("paged/no-sequences", lambda: _paged([], [0], 0), np.zeros((0, 1, 2), np.float32)),
    Case("paged/aliased-pages", lambda: _paged([2, 2], [0, 2], 4), _tokens((2, 2), (2, 2))),
    Case("paged/partial-last-page", lambda: _paged([3, 1, 0], [0, 2, 3], 4),
         _tokens((3, 2), (1, 1), (0, 1)), seq_lens=[3, 1]),
    # Strided / tiled / Morton extents (int32 elements).
    Case("strided/negative-no-offset", lambda: _extent((4,), Strided((-1,)), 4), REJECT),
    Case("strided/negative-with-offset", lambda: _extent((4,), Strided((-1,)), 4, 12), _oracle),
    Case("strided/zero-broadcast", lambda: _extent((5,), Strided((0,)), 1), _oracle),
    Case("strided/zero-and-negative-2d", lambda: _extent((2, 3), Strided((0, -1)), 3, 8),
         _oracle),
    Case("strided/overlapping-rows", lambda: _extent((3, 3), Strided((1, 1)), 5), _oracle),
    Case("strided/stride-2^62", lambda: _extent((2,), Strided((1 << 62,)), 2), REJECT),
    Case("strided/stride-i64-min", lambda: _extent((2,), Strided((-(1 << 63),)), 2, 8),
         REJECT),
    Case("strided/one-element-past-end", lambda: _extent((4,), Strided((2,)), 6), REJECT),
    Case("extent/byte-offset-2^40", lambda: _extent((4,), RowMajor(), 4, 1 << 40), REJECT),
    Case("extent/byte-offset-at-end", lambda: _extent((1,), RowMajor(), 4, 16), REJECT),
    Case("extent/empty-at-end", lambda: _extent((0,), RowMajor(), 4, 16),
         np.zeros(0, np.int32)),
    Case("tiled/one-byte-short", lambda: _extent((4, 4), Tiled((2, 2)), 16, nbytes=63), REJECT),
    Case("tiled/tile-larger-than-shape", lambda: _extent((3, 3), Tiled((4, 4)), 16), _oracle),
    Case("tiled/nested-short", lambda: _extent((4, 4), Tiled((2, 2), inner=Tiled((1, 2))), 15),
         REJECT),
    Case("morton/one-element-short", lambda: _extent((4, 4), Morton((2, 2)), 15), REJECT),
    Case("morton/valid-control", lambda: _extent((4, 4), Morton((2, 2)), 16), _oracle),
]


def build_case(case: Case, transform: Callable[[Tensor], Tensor] = lambda t: t
               ) -> Tensor | None:
    """The (transformed) host tensor, or None when building it already raised the typed
    error (which must then be the expected outcome)."""
    try:
        return transform(case.build())
    except REJECTED as exc:
        assert case.expect is REJECT, f"{case.name}: a valid input was refused: {exc}"
        assert "Fix:" in str(exc)
        return None


def check_case(device: Any, case: Case, host: Tensor | None,
               want: Callable[[np.ndarray], np.ndarray] = lambda w: w) -> None:
    """Materialize ``host`` on ``device``: the typed error for REJECT, else ``want`` of the
    case's expected output, bit-exact."""
    if host is None:
        return
    kwargs = {} if case.seq_lens is None else {"seq_lens": case.seq_lens}
    if case.expect is REJECT:
        with pytest.raises(REJECTED) as info:
            materialize(host.to(device), **kwargs)
        assert "Fix:" in str(info.value)
        return
    plain = case.build()
    expected = want(case.expect(plain) if callable(case.expect) else case.expect)
    got = materialize(host.to(device), **kwargs).to("cpu").numpy()
    assert got.shape == expected.shape and got.dtype == expected.dtype
    assert np.array_equal(got, expected), f"{case.name}: {got} != {expected}"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_index_matrix(device: Any, case: Case) -> None:
    check_case(device, case, build_case(case))


def test_the_matrix_covers_every_indexed_layout() -> None:
    families = {c.name.split("/")[0] for c in CASES}
    assert families == {"coo", "csr", "csc", "csf", "paged", "strided", "extent", "tiled",
                        "morton"}
    assert sum(c.expect is REJECT for c in CASES) >= 30
    assert len({c.name for c in CASES}) == len(CASES)
