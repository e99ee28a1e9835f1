"""NumPy reference for block-paged (KV cache) element lookup (Hurray spec, Block-Paged
Layout; docs/format.md).

``flat = ((block_table[seq_ptr[s] + t // page_size] * page_size + t % page_size) * num_heads
+ h) * head_dim + d``; every table entry is validated before it is used.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .addressing_checks import (
    INT64_MAX,
    MAX_DENSE_ELEMENTS,
    as_index_array,
    check_below,
    check_pointer,
    checked_prod,
    fail,
)


def _count(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        fail(f"{name} = {value!r} is not an integer", name, f"pass {name} as an int.")
    if not minimum <= int(value) <= INT64_MAX:
        fail(f"{name} = {value} is outside [{minimum}, 2**63)", name,
             f"use {name} >= {minimum}.")
    return int(value)


def _tables(block_table: Any, seq_ptr: Any, num_pages: int) -> tuple[np.ndarray, np.ndarray]:
    sp = as_index_array(seq_ptr, "seq_ptr")
    bt = as_index_array(block_table, "block_table")
    if bt.ndim != 1:
        fail(f"block_table has shape {bt.shape}, expected 1-D", "block_table",
             "pass the block table as a flat array of page ids.")
    if sp.ndim != 1 or sp.shape[0] < 1:
        fail(f"seq_ptr has shape {sp.shape}, expected (num_seqs + 1,)", "seq_ptr",
             "seq_ptr holds num_seqs + 1 entries (just [0] for an empty batch).")
    check_pointer(sp, "seq_ptr", sp.shape[0], bt.shape[0], "len(block_table)")
    check_below(bt, num_pages, "block_table", "num_pages")
    return bt, sp


def _seq_lens(seq_lens: Any, sp: np.ndarray, page_size: int) -> np.ndarray:
    pages = np.diff(sp)
    if pages.size and int(pages.max()) * page_size > INT64_MAX:
        fail(f"a sequence of {int(pages.max())} pages x page_size {page_size} exceeds 2**63-1 "
             "tokens", "page_size", "use a page_size and block table that fit int64.")
    capacity = pages * np.int64(page_size)
    if seq_lens is None:
        return capacity
    lens = as_index_array(seq_lens, "seq_lens")
    if lens.shape != capacity.shape:
        fail(f"seq_lens has shape {lens.shape}, expected ({capacity.shape[0]},)", "seq_lens",
             "give one token count per sequence (num_seqs entries).")
    over = np.flatnonzero(lens > capacity)
    if over.size:
        s = int(over[0])
        fail(f"seq_lens[{s}] = {int(lens[s])} exceeds the sequence's "
             f"{int(capacity[s]) // page_size} pages x page_size {page_size}", "seq_lens",
             "a sequence cannot hold more tokens than its pages provide.")
    return lens


def block_paged_lookup(block_table: Any, seq_ptr: Any, page_size: int, num_heads: int,
                       head_dim: int, seq: Any, token: Any, head: Any, dim: Any, *,
                       num_pages: int, seq_lens: Any = None) -> np.ndarray:
    """Flat page_pool index of (sequence, token, head, dim), vectorized with broadcasting.

    Args:
        block_table: physical page ids (u32/u64), seq_ptr[num_seqs] entries.
        seq_ptr: num_seqs + 1 non-decreasing page offsets into block_table, seq_ptr[0] = 0.
        page_size: tokens per page (>= 1).
        num_heads, head_dim: the logical shape's last two dimensions.
        seq, token, head, dim: integer arrays (broadcast together).
        num_pages: physical pages in the pool (every page id must be below it).
        seq_lens: optional valid token count per sequence; without it a token
            is bounded by the sequence's pages x page_size.

    Returns:
        int64 array of flat page_pool element indices.

    Raises:
        HurrayFormatError: on a malformed table, a page id >= num_pages, or a query outside
            the sequence, head or dimension range.
    """
    page_size = _count(page_size, "page_size", 1)
    num_heads, head_dim = _count(num_heads, "num_heads", 0), _count(head_dim, "head_dim", 0)
    num_pages = _count(num_pages, "num_pages", 0)
    checked_prod((num_pages, page_size, num_heads, head_dim), INT64_MAX, "the page pool",
                 "num_pages")
    bt, sp = _tables(block_table, seq_ptr, num_pages)
    lens = _seq_lens(seq_lens, sp, page_size)
    s, t, h, d = np.broadcast_arrays(*(as_index_array(v, n) for v, n in
                                       ((seq, "seq"), (token, "token"), (head, "head"),
                                        (dim, "dim"))))
    check_below(s, lens.shape[0], "seq", "num_seqs")
    check_below(h, num_heads, "head", "num_heads")
    check_below(d, head_dim, "dim", "head_dim")
    limit = lens[s]
    bad = np.flatnonzero((t >= limit).reshape(-1))
    if bad.size:
        k = int(bad[0])
        fail(f"token[{k}] = {int(t.reshape(-1)[k])} is past sequence "
             f"{int(s.reshape(-1)[k])}'s {int(limit.reshape(-1)[k])} valid tokens", "token",
             "never read past a sequence's valid token count.")
    page = bt[sp[s] + t // page_size]
    return ((page * page_size + t % page_size) * num_heads + h) * head_dim + d


def _pool4(pool: Any, page_size: int, num_heads: int | None, head_dim: int | None,
           num_pages: int | None) -> np.ndarray:
    arr = np.asarray(pool)
    if arr.ndim == 4:
        if arr.shape[1] != page_size:
            fail(f"page_pool has shape {arr.shape}; axis 1 must be page_size = {page_size}",
                 "page_pool", "pass the pool as [num_pages, page_size, num_heads, head_dim].")
        return arr
    if arr.ndim != 1 or num_heads is None or head_dim is None or num_pages is None:
        fail(f"page_pool has shape {arr.shape}", "page_pool",
             "pass a 4-D [num_pages, page_size, heads, dim] pool, or a flat pool together "
             "with num_pages, num_heads and head_dim.")
    dims = (_count(num_pages, "num_pages", 0), page_size, _count(num_heads, "num_heads", 0),
            _count(head_dim, "head_dim", 0))
    need = checked_prod(dims, INT64_MAX, "the page pool", "num_pages")
    if arr.shape[0] < need:
        fail(f"page_pool holds {arr.shape[0]} elements, needs {need}", "page_pool",
             "the pool holds num_pages * page_size * num_heads * head_dim elements.")
    return arr[:need].reshape(dims)


def block_paged_to_dense(pool: Any, block_table: Any, seq_ptr: Any, page_size: int,
                         seq_lens: Any = None, *, num_heads: int | None = None,
                         head_dim: int | None = None, num_pages: int | None = None,
                         max_elements: int = MAX_DENSE_ELEMENTS) -> np.ndarray:
    """The logical [total_tokens, num_heads, head_dim] tensor of a block-paged cache.

    Sequences are concatenated in order; sequence s contributes its first seq_lens[s] tokens.

    Args:
        pool: the page pool, [num_pages, page_size, num_heads, head_dim], or flat together with
            ``num_pages``, ``num_heads`` and ``head_dim``.
        block_table, seq_ptr, page_size: as in ``block_paged_lookup``.
        seq_lens: valid tokens per sequence; None means every page is full.
        num_heads, head_dim, num_pages: required only for a flat pool.
        max_elements: refuse larger outputs (checked before allocating).

    Returns:
        The dense array (dtype of the pool).

    Raises:
        HurrayFormatError: on a malformed pool, table, seq_ptr or seq_lens.
    """
    page_size = _count(page_size, "page_size", 1)
    pool4 = _pool4(pool, page_size, num_heads, head_dim, num_pages)
    bt, sp = _tables(block_table, seq_ptr, pool4.shape[0])
    lens = _seq_lens(seq_lens, sp, page_size)
    total = int(lens.sum(dtype=object)) if lens.size else 0
    checked_prod((total,), max_elements, "the token list", "seq_lens")
    checked_prod((total, pool4.shape[2], pool4.shape[3]), max_elements, "the dense cache",
                 "seq_lens")
    seq_of = np.repeat(np.arange(lens.shape[0], dtype=np.int64), lens)
    starts = np.cumsum(lens) - lens
    tok = np.arange(total, dtype=np.int64) - np.repeat(starts, lens)
    page = bt[sp[seq_of] + tok // page_size]
    return pool4[page, tok % page_size]
