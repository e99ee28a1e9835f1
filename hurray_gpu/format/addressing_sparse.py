"""NumPy dense references for the COO, CSR, CSC and CSF sparse layouts (Hurray spec, one
document per layout).

Every stored index is bounds-checked, and every structural invariant is validated, before use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .addressing_checks import (
    MAX_DENSE_ELEMENTS,
    as_index_array,
    check_below,
    check_dense_shape,
    check_pointer,
    check_strictly_increasing_within,
    fail,
    static_shape,
)


def _prepare(shape: Sequence[int | None], values: Any, max_elements: int,
             ranks: str, ok: bool) -> tuple[tuple[int, ...], np.ndarray]:
    dims = static_shape(shape)
    if not ok:
        fail(f"rank {len(dims)} is not allowed here (needs {ranks})", "rank",
             f"use a tensor of {ranks}.")
    check_dense_shape(dims, max_elements)
    arr = np.asarray(values)
    if arr.ndim != 1:
        fail(f"values has shape {arr.shape}, expected 1-D", "values",
             "pass the values buffer as a 1-D array of nnz entries.")
    return dims, arr


def _lex_compare(rows: np.ndarray) -> np.ndarray:
    """Sign of rows[k+1] - rows[k] in lexicographic order (0 for equal rows)."""
    diff = np.sign(rows[1:] - rows[:-1])
    first = np.argmax(diff != 0, axis=1)
    return diff[np.arange(diff.shape[0]), first]


def coo_to_dense(shape: Sequence[int | None], values: Any, indices: Any, *,
                 is_sorted: bool = False,
                 max_elements: int = MAX_DENSE_ELEMENTS) -> np.ndarray:
    """Dense array of a COO tensor (Hurray spec, COO layout; absent entries are 0).

    Args:
        shape: logical shape (rank >= 1).
        values: the nnz stored values (dtype is kept).
        indices: u64 indices, flat ``[i*rank + d]`` (wire form) or shaped [nnz, rank].
        is_sorted: the descriptor's is_sorted flag; True also requires strictly increasing
            lexicographic order (dimension 0 major).
        max_elements: refuse larger dense outputs (checked before allocating).

    Returns:
        The dense array of ``shape``.

    Raises:
        HurrayFormatError: wrong buffer lengths, an index >= shape[d], duplicate coordinates,
            or an unsorted list declared sorted.
    """
    dims, vals = _prepare(shape, values, max_elements, "rank >= 1", len(shape) >= 1)
    rank, nnz = len(dims), vals.shape[0]
    idx = as_index_array(indices, "indices")
    if idx.ndim == 1 and idx.shape[0] == nnz * rank:
        idx = idx.reshape(nnz, rank)
    elif idx.shape != (nnz, rank):
        fail(f"indices has shape {idx.shape}, expected ({nnz * rank},) or ({nnz}, {rank})",
             "indices", "the indices buffer holds nnz*rank u64 entries [i*rank + d].")
    for d, n in enumerate(dims):
        bad = np.flatnonzero(idx[:, d] >= n)
        if bad.size:
            i = int(bad[0])
            fail(f"indices[{i * rank + d}] = {int(idx[i, d])} (entry {i}, dimension {d}) is "
                 f"out of range for shape[{d}] = {n}", "indices",
                 f"every coordinate along dimension {d} must be < {n}.")
    if nnz > 1:
        _check_coo_order(idx, is_sorted)
    out = np.zeros(dims, dtype=vals.dtype)
    out[tuple(idx.T)] = vals
    return out


def _check_coo_order(idx: np.ndarray, is_sorted: bool) -> None:
    if is_sorted:
        sign = _lex_compare(idx)
        bad = np.flatnonzero(sign <= 0)
        if bad.size:
            k = int(bad[0]) + 1
            what = "duplicates" if sign[k - 1] == 0 else "is not after"
            fail(f"COO entry {k} {idx[k].tolist()} {what} entry {k - 1} {idx[k - 1].tolist()} "
                 "although is_sorted = 1", "indices",
                 "sort entries strictly lexicographically (dimension 0 major) or write "
                 "is_sorted = 0; duplicates are never allowed.")
        return
    order = np.lexsort(idx.T[::-1])
    srt = idx[order]
    dup = np.flatnonzero(np.all(srt[1:] == srt[:-1], axis=1))
    if dup.size:
        a, b = sorted((int(order[dup[0]]), int(order[dup[0] + 1])))
        fail(f"COO entries {a} and {b} share the coordinate {idx[a].tolist()}", "indices",
             "store each coordinate at most once (sum duplicates before writing).")


def _compressed(dims: tuple[int, ...], vals: np.ndarray, minor: Any, ptr: Any,
                csr: bool) -> np.ndarray:
    names = ("col_indices", "row_ptr", "row", 1) if csr else ("row_indices", "col_ptr",
                                                               "column", 0)
    minor_name, ptr_name, slice_name, minor_axis = names
    nnz = vals.shape[0]
    crd = as_index_array(minor, minor_name)
    if crd.shape != (nnz,):
        fail(f"{minor_name} has shape {crd.shape}, expected ({nnz},)", minor_name,
             f"{minor_name} must hold exactly nnz = {nnz} entries.")
    major_n = dims[1 - minor_axis]
    p = as_index_array(ptr, ptr_name)
    check_pointer(p, ptr_name, major_n + 1, nnz, "nnz")
    check_below(crd, dims[minor_axis], minor_name, f"shape[{minor_axis}]")
    owner = np.repeat(np.arange(major_n, dtype=np.int64), np.diff(p))
    check_strictly_increasing_within(crd, owner, minor_name, slice_name)
    out = np.zeros(dims, dtype=vals.dtype)
    if csr:
        out[owner, crd] = vals
    else:
        out[crd, owner] = vals
    return out


def csr_to_dense(shape: Sequence[int | None], values: Any, col_indices: Any, row_ptr: Any, *,
                 max_elements: int = MAX_DENSE_ELEMENTS) -> np.ndarray:
    """Dense matrix of a CSR tensor (rank 2; Hurray spec, CSR layout).

    Args:
        shape: [nrows, ncols].
        values: the nnz stored values.
        col_indices: nnz column indices (u64), strictly increasing within each row.
        row_ptr: nrows + 1 entries, row_ptr[0] = 0, non-decreasing, row_ptr[nrows] = nnz.
        max_elements: refuse larger dense outputs.

    Returns:
        The dense [nrows, ncols] array.

    Raises:
        HurrayFormatError: on any violated storage invariant, naming value and position.
    """
    dims, vals = _prepare(shape, values, max_elements, "rank 2", len(shape) == 2)
    return _compressed(dims, vals, col_indices, row_ptr, csr=True)


def csc_to_dense(shape: Sequence[int | None], values: Any, row_indices: Any, col_ptr: Any, *,
                 max_elements: int = MAX_DENSE_ELEMENTS) -> np.ndarray:
    """Dense matrix of a CSC tensor (rank 2; Hurray spec, CSC layout).

    Args:
        shape: [nrows, ncols].
        values: the nnz stored values.
        row_indices: nnz row indices (u64), strictly increasing within each column.
        col_ptr: ncols + 1 entries, col_ptr[0] = 0, non-decreasing, col_ptr[ncols] = nnz.
        max_elements: refuse larger dense outputs.

    Returns:
        The dense [nrows, ncols] array.

    Raises:
        HurrayFormatError: on any violated storage invariant, naming value and position.
    """
    dims, vals = _prepare(shape, values, max_elements, "rank 2", len(shape) == 2)
    return _compressed(dims, vals, row_indices, col_ptr, csr=False)


def _csf_levels(pos_crd_lists: Sequence[Any], rank: int) -> list[tuple[Any, Any]]:
    items = list(pos_crd_lists)
    if len(items) == 2 * rank:
        return [(items[2 * k], items[2 * k + 1]) for k in range(rank)]
    if len(items) == rank and all(isinstance(it, (tuple, list)) and len(it) == 2
                                  for it in items):
        return [(it[0], it[1]) for it in items]
    fail(f"pos_crd_lists has {len(items)} items for rank {rank}", "pos_crd_lists",
         f"pass {rank} (pos_L, crd_L) pairs or the flat list pos_0, crd_0, ... "
         f"({2 * rank} arrays).")


def _check_mode_order(mode_order: Sequence[int], rank: int) -> list[int]:
    order = [int(m) for m in mode_order]
    if len(order) != rank:
        fail(f"mode_order has {len(order)} entries for rank {rank}", "mode_order",
             "write one mode_order entry per dimension.")
    seen: set[int] = set()
    for k, m in enumerate(order):
        if not 0 <= m < rank or m in seen:
            fail(f"mode_order[{k}] = {m} is out of range or repeated", "mode_order",
                 f"mode_order must be a permutation of 0..{rank - 1}.")
        seen.add(m)
    return order


def csf_to_dense(shape: Sequence[int | None], mode_order: Sequence[int], values: Any,
                 pos_crd_lists: Sequence[Any], *,
                 max_elements: int = MAX_DENSE_ELEMENTS) -> np.ndarray:
    """Dense array of a CSF tensor (rank >= 3; Hurray spec, CSF layout).

    Args:
        shape: logical shape.
        mode_order: permutation; tree level L stores logical dimension mode_order[L].
        values: the nnz leaf values.
        pos_crd_lists: rank (pos_L, crd_L) pairs, or the flat buffer-table order
            pos_0, crd_0, pos_1, crd_1, ...
        max_elements: refuse larger dense outputs.

    Returns:
        The dense array of ``shape``.

    Raises:
        HurrayFormatError: on a bad mode_order, pointer, coordinate or count, naming value
            and position.
    """
    dims, vals = _prepare(shape, values, max_elements, "rank >= 3", len(shape) >= 3)
    rank, nnz = len(dims), vals.shape[0]
    order = _check_mode_order(mode_order, rank)
    crds: list[np.ndarray] = []
    owners: list[np.ndarray] = []
    parents = 1
    for lvl, (pos_raw, crd_raw) in enumerate(_csf_levels(pos_crd_lists, rank)):
        crd = as_index_array(crd_raw, f"crd_{lvl}")
        if crd.ndim != 1:
            fail(f"crd_{lvl} has shape {crd.shape}, expected 1-D", f"crd_{lvl}",
                 "pass each crd buffer as a 1-D array.")
        pos = as_index_array(pos_raw, f"pos_{lvl}")
        check_pointer(pos, f"pos_{lvl}", parents + 1, crd.shape[0],
                      f"len(crd_{lvl}) = {crd.shape[0]}")
        check_below(crd, dims[order[lvl]], f"crd_{lvl}", f"shape[{order[lvl]}]")
        owner = np.repeat(np.arange(parents, dtype=np.int64), np.diff(pos))
        check_strictly_increasing_within(crd, owner, f"crd_{lvl}", "parent")
        crds.append(crd)
        owners.append(owner)
        parents = crd.shape[0]
    if parents != nnz:
        fail(f"the leaf level crd_{rank - 1} has {parents} entries but values has {nnz}",
             f"crd_{rank - 1}", "the leaf level must hold exactly nnz coordinates.")
    coords: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * rank
    node = np.arange(nnz, dtype=np.int64)
    for lvl in range(rank - 1, -1, -1):
        coords[order[lvl]] = crds[lvl][node]
        node = owners[lvl][node]
    out = np.zeros(dims, dtype=vals.dtype)
    out[tuple(coords)] = vals
    return out


__all__ = ["coo_to_dense", "csc_to_dense", "csf_to_dense", "csr_to_dense"]
