"""Row transfers of a host-memory PagedKVCache (read_rows / write_rows): views of the pages
in token order, filled or read in place, against gather and append_prefill of the same rows;
the sequence is protected while a transfer is open."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.kv_cache import OutOfPagesError, PagedKVCache
from tests._support import stable_rng

HEADS, DIM, PAGE = 2, 4, 4


def _cache(**kw: object) -> PagedKVCache:
    return PagedKVCache("cpu", 2, HEADS, DIM, 48, PAGE, "float16", **kw)  # type: ignore[arg-type]


def _rows(seed: str, tokens: int) -> np.ndarray:
    return stable_rng(seed).standard_normal((2, tokens, HEADS, DIM)).astype(np.float16)


def _fill(views: list[memoryview], data: np.ndarray) -> None:
    flat, at = data.reshape(-1).view(np.uint8), 0
    for v in views:
        v[:] = flat[at:at + len(v)]
        at += len(v)
    assert at == flat.size


def _stored(cache: PagedKVCache, seq: int, layer: int) -> np.ndarray:
    k, v, _ = cache.gather([seq], layer)
    return np.stack([k.numpy(), v.numpy()]).view(np.uint16)


def _scattered(cache: PagedKVCache) -> None:
    """Every other page of the pool's first 16 in use, so new pages are not consecutive."""
    held = [cache.add_sequence() for _ in range(16)]
    for seq in held:
        cache.append_prefill(seq, 0, *np.zeros((2, PAGE, HEADS, DIM), np.float16))
    for seq in held[::2]:
        cache.free(seq)


def test_written_rows_are_what_append_prefill_would_store() -> None:
    cache, model = _cache(), _cache()
    _scattered(cache)
    a, m = cache.add_sequence(), model.add_sequence()
    for layer, (start, tokens) in enumerate([(6, 13), (0, 9)]):
        head, rows = _rows(f"head{layer}", start), _rows(f"rows{layer}", tokens)
        for c, s in ((cache, a), (model, m)):
            c.append_prefill(s, layer, head[0], head[1])
        with cache.write_rows(a, layer, tokens) as w:
            assert w.tokens == tokens and w.nbytes == rows.nbytes
            assert len(w.views) > 2  # scattered pages: several runs per role
            _fill(w.views, rows)
            assert cache.seq_len(a, layer) == start  # not part of the sequence yet
        model.append_prefill(m, layer, rows[0], rows[1])
        assert np.array_equal(_stored(cache, a, layer), _stored(model, m, layer))
        with cache.read_rows(a, layer) as r:
            got = np.concatenate([np.frombuffer(v, np.uint8) for v in r.views])
        assert np.array_equal(got.view(np.uint16), _stored(model, m, layer).reshape(-1))
    cache.check_invariants()


def test_a_released_write_leaves_the_sequence_as_it_was() -> None:
    cache = _cache()
    a = cache.add_sequence()
    first = _rows("first", 5)
    cache.append_prefill(a, 0, first[0], first[1])
    w = cache.write_rows(a, 0, 11)
    _fill(w.views, _rows("dropped", 11))
    w.release()
    w.commit()  # a second end does nothing
    assert cache.seq_len(a, 0) == 5
    assert np.array_equal(_stored(cache, a, 0), first.view(np.uint16))
    more = _rows("more", 11)  # the pages it took are the sequence's capacity now
    cache.append_prefill(a, 0, more[0], more[1])
    assert np.array_equal(_stored(cache, a, 0),
                          np.concatenate([first, more], axis=1).view(np.uint16))
    with pytest.raises(RuntimeError), cache.write_rows(a, 0, 3) as w:  # leaving on an error
        raise RuntimeError
    assert cache.seq_len(a, 0) == 16
    cache.check_invariants()


def test_an_open_transfer_protects_its_sequence() -> None:
    cache = _cache()
    a, b = cache.add_sequence(), cache.add_sequence()
    rows = _rows("guard", 6)
    cache.append_prefill(a, 0, rows[0], rows[1])
    r = cache.read_rows(a, 0)
    w = cache.write_rows(a, 1, 6)
    for refused in (lambda: cache.free(a), lambda: cache.fork(a), lambda: cache.swap_out(a),
                    lambda: cache.append_prefill(a, 1, rows[0], rows[1]),
                    lambda: cache.write_rows(a, 1, 2), cache.close):
        with pytest.raises(UnsupportedOpError, match="row (transfer|write)"):
            refused()
    cache.append_prefill(a, 0, rows[0], rows[1])  # another layer: allowed
    cache.append_prefill(b, 1, rows[0], rows[1])  # another sequence: allowed
    _fill(w.views, rows)
    w.commit()
    r.release()
    assert np.array_equal(_stored(cache, a, 1), rows.view(np.uint16))
    cache.free(cache.fork(a))
    cache.free(a)
    cache.check_invariants()
    cache.close()


def _forked(seed: str) -> tuple[PagedKVCache, int, int, np.ndarray]:
    """A cache, a sequence of 6 rows (its second page holds 2 of 4), its fork, the rows."""
    cache = _cache()
    parent = cache.add_sequence()
    head = _rows(seed, 6)
    cache.append_prefill(parent, 0, head[0], head[1])
    return cache, parent, cache.fork(parent), head


def test_a_write_into_a_shared_page_copies_it_first() -> None:
    cache, parent, child, head = _forked("shared")
    tail = _rows("tail", 5)
    with cache.write_rows(child, 0, 5) as w:
        _fill(w.views, tail)
    assert np.array_equal(_stored(cache, parent, 0), head.view(np.uint16))
    assert np.array_equal(_stored(cache, child, 0),
                          np.concatenate([head, tail], axis=1).view(np.uint16))
    cache.check_invariants()


def test_prefix_cache_registers_pages_completed_by_a_write() -> None:
    cache = _cache(enable_prefix_cache=True)
    ids = list(range(8))
    a = cache.add_sequence(ids)
    rows = _rows("prefix", 8)
    for layer in range(2):
        with cache.write_rows(a, layer, 8) as w:
            _fill(w.views, rows)
    b = cache.add_sequence(ids)  # both full pages found in the prefix cache
    assert cache.seq_len(b) == 8 and cache.block_table(b) == cache.block_table(a)
    cache.check_invariants()


def test_bad_transfers_are_refused_and_an_abandoned_one_ends() -> None:
    cache = _cache()
    a = cache.add_sequence()
    for bad in (-1, 1.5, 2**40):
        with pytest.raises(UnsupportedOpError, match="tokens"):
            cache.write_rows(a, 0, bad)  # type: ignore[arg-type]
    with pytest.raises(UnsupportedOpError, match="layer"):
        cache.read_rows(a, 2)
    with pytest.raises(OutOfPagesError):
        cache.write_rows(a, 0, 49 * PAGE)
    assert cache.num_free_pages == 48
    quant = PagedKVCache("cpu", 1, HEADS, DIM, 8, PAGE, "float16", kv_dtype="int8")
    with pytest.raises(UnsupportedOpError, match="unquantized cache in host memory"):
        quant.read_rows(quant.add_sequence(), 0)
    cache.write_rows(a, 0, 3)  # dropped unclosed: released when collected
    gc.collect()
    cache.free(a)
    cache.check_invariants()


def test_no_copy_on_write_under_an_open_transfer() -> None:
    # A read transfer's views stay on the sequence's pages: an append that would replace a
    # page it shares with a fork (the fork could then free the old page mid-send) waits.
    cache, a, b, head = _forked("cow-guard")
    more = _rows("cow-more", 3)
    with cache.read_rows(a, 0) as r:
        with pytest.raises(UnsupportedOpError, match="copy a page shared with a fork"):
            cache.append_prefill(a, 0, more[0], more[1])
        with pytest.raises(UnsupportedOpError, match="copy a page shared with a fork"):
            cache.write_rows(a, 0, 3)
        cache.append_prefill(b, 0, more[0], more[1])  # the fork copies; a's pages stay
        got = np.concatenate([np.frombuffer(v, np.uint8) for v in r.views])
    assert np.array_equal(got.view(np.uint16), head.reshape(-1).view(np.uint16))
    cache.append_prefill(a, 0, more[0], more[1])  # closed: allowed
    assert np.array_equal(_stored(cache, a, 0),
                          np.concatenate([head, more], axis=1).view(np.uint16))
    cache.check_invariants()
