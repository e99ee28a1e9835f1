"""PagedKVCache on every device against a NumPy model: a plain per-sequence list of tokens."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.kv_cache import OutOfPagesError, PagedKVCache
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.device import Device
from hurray_gpu.tensor import Tensor
from tests._support import stable_rng

# (dtype, heads, head_dim): rows moved as u32, u16 and u8 words respectively, plus f32.
GEOMETRIES = [("float16", 2, 4), ("bfloat16", 1, 3), ("uint8", 3, 1), ("float32", 2, 2)]


def host(t: Tensor) -> np.ndarray:
    """A tensor's values on the host."""
    return (t if t.is_host else t.to("cpu")).numpy()


class Model:
    """The reference: per sequence and layer, the list of K and V rows appended."""

    def __init__(self, layers: int) -> None:
        self.layers = layers
        self.k: dict[int, list[list[np.ndarray]]] = {}
        self.v: dict[int, list[list[np.ndarray]]] = {}

    def add(self, seq: int) -> None:
        self.k[seq] = [[] for _ in range(self.layers)]
        self.v[seq] = [[] for _ in range(self.layers)]

    def append(self, seqs: list[int], layer: int, k: np.ndarray, v: np.ndarray,
               counts: list[int]) -> None:
        at = 0
        for seq, n in zip(seqs, counts, strict=True):
            self.k[seq][layer] += list(k[at:at + n])
            self.v[seq][layer] += list(v[at:at + n])
            at += n

    def fork(self, parent: int, child: int) -> None:
        self.k[child] = [list(rows) for rows in self.k[parent]]
        self.v[child] = [list(rows) for rows in self.v[parent]]

    def free(self, seq: int) -> None:
        del self.k[seq], self.v[seq]

    def dense(self, seqs: list[int], layer: int, shape: tuple[int, int],
              dtype: Any) -> tuple[np.ndarray, np.ndarray]:
        out = []
        for table in (self.k, self.v):
            rows = [r for s in seqs for r in table[s][layer]]
            out.append(np.array(rows, dtype=dtype).reshape(-1, *shape))
        return out[0], out[1]


def random_rows(rng: np.random.Generator, n: int, heads: int, dim: int,
                dtype: Any) -> np.ndarray:
    """Random bit patterns of ``dtype`` (NaNs included: the cache must move bits exactly)."""
    nbytes = n * heads * dim * np.dtype(dtype).itemsize
    return rng.integers(0, 256, nbytes, dtype=np.uint8).view(dtype).reshape(n, heads, dim)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-exact equality (NaN payloads included)."""
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def check_all(cache: PagedKVCache, model: Model, seqs: list[int]) -> None:
    """Gather every layer of ``seqs`` and compare with the model, then the invariants."""
    shape = (cache.num_kv_heads, cache.head_dim)
    for layer in range(cache.num_layers):
        k, v, cu = cache.gather(seqs, layer)
        want_k, want_v = model.dense(seqs, layer, shape, cache.dtype.numpy)
        assert same_bits(host(k), want_k) and same_bits(host(v), want_v)
        lens = [len(model.k[s][layer]) for s in seqs]
        assert cu.tolist() == [0, *np.cumsum(lens).tolist()]
    cache.check_invariants()


@pytest.mark.parametrize(("dtype", "heads", "dim"), GEOMETRIES)
def test_decode_prefill_fork_and_free_match_the_model(kernel_device: Device, dtype: str,
                                                      heads: int, dim: int) -> None:
    rng = np.random.default_rng(7)
    npdt = by_name(dtype).numpy
    cache = PagedKVCache(kernel_device, 2, heads, dim, num_pages=24, page_size=4, dtype=dtype)
    model = Model(2)
    seqs = [cache.add_sequence() for _ in range(3)]
    for s in seqs:
        model.add(s)
    for layer in range(2):  # prefill: several tokens per sequence in one launch per role
        k, v = random_rows(rng, 11, heads, dim, npdt), random_rows(rng, 11, heads, dim, npdt)
        cache.append(seqs, layer, k, v, counts=[5, 0, 6])
        model.append(seqs, layer, k, v, [5, 0, 6])
    child = cache.fork(seqs[0])
    model.fork(seqs[0], child)
    seqs.append(child)
    for _ in range(6):  # decode: one token per sequence; the fork's first write copies
        for layer in range(2):
            k, v = random_rows(rng, 4, heads, dim, npdt), random_rows(rng, 4, heads, dim, npdt)
            cache.append_decode(seqs, layer, k, v)
            model.append(seqs, layer, k, v, [1] * 4)
        check_all(cache, model, seqs)
    cache.free(seqs[1])
    model.free(seqs[1])
    check_all(cache, model, [seqs[3], seqs[0], seqs[2]])
    k, v = random_rows(rng, 3, heads, dim, npdt), random_rows(rng, 3, heads, dim, npdt)
    cache.append_prefill(seqs[2], 1, k, v)
    model.append([seqs[2]], 1, k, v, [3])
    check_all(cache, model, [seqs[2]])


def test_fork_shares_pages_and_copy_on_write_keeps_the_parent(kernel_device: Device) -> None:
    rng = np.random.default_rng(1)
    cache = PagedKVCache(kernel_device, 1, 2, 4, num_pages=6, page_size=4)
    parent = cache.add_sequence()
    rows = random_rows(rng, 6, 2, 4, np.float16)
    cache.append(parent, 0, rows, rows)
    child = cache.fork(parent)
    assert cache.block_table(child) == cache.block_table(parent)
    assert cache.num_free_pages == 4  # no data copied, no pages taken
    new = random_rows(rng, 1, 2, 4, np.float16)
    cache.append(child, 0, new, new)
    assert cache.block_table(child)[0] == cache.block_table(parent)[0]
    assert cache.block_table(child)[1] != cache.block_table(parent)[1]
    assert same_bits(host(cache.gather(parent, 0)[0]), rows)
    assert same_bits(host(cache.gather(child, 0)[0]), np.concatenate([rows, new]))
    cache.check_invariants()


def test_gather_padded_zero_fills(kernel_device: Device) -> None:
    rng = np.random.default_rng(2)
    cache = PagedKVCache(kernel_device, 1, 1, 2, num_pages=8, page_size=2, dtype="float32")
    a, b, c = cache.add_sequence(), cache.add_sequence(), cache.add_sequence()
    rows = random_rows(rng, 5, 1, 2, np.float32)
    cache.append([a, b], 0, rows, -rows, counts=[2, 3])
    k, v, lens = cache.gather_padded([b, c, a], 0, max_len=4)
    assert lens.tolist() == [3, 0, 2] and k.shape == (3, 4, 1, 2)
    want = np.zeros((3, 4, 1, 2), np.float32)
    want[0, :3], want[2, :2] = rows[2:], rows[:2]
    assert same_bits(host(k), want) and same_bits(host(v), np.where(want == 0, 0, -want))
    with pytest.raises(UnsupportedOpError, match="max_len"):
        cache.gather_padded([b], 0, max_len=2)
    for bad in (2.5, -1, 2**31):  # checked before any host or device allocation
        with pytest.raises(UnsupportedOpError):
            cache.gather_padded([b], 0, max_len=bad)


def test_copy_blocks_copies_every_layer_and_role(kernel_device: Device) -> None:
    rng = np.random.default_rng(3)
    cache = PagedKVCache(kernel_device, 2, 1, 4, num_pages=6, page_size=2)
    a = cache.add_sequence()
    rows = [random_rows(rng, 4, 1, 4, np.float16) for _ in range(4)]
    for layer in range(2):
        cache.append(a, layer, rows[2 * layer], rows[2 * layer + 1])
    src = cache.block_table(a)
    cache.copy_blocks({src[0]: [4], src[1]: [5]})
    for layer in range(2):
        for role in (0, 1):
            pool = host_pool(cache, layer, role).reshape(6, 2, 1, 4)
            want = rows[2 * layer + role].reshape(2, 2, 1, 4)
            assert same_bits(pool[4:6], want)
    with pytest.raises(UnsupportedOpError, match="sources"):
        cache.copy_blocks([(0, 1), (1, 2)])
    with pytest.raises(UnsupportedOpError, match="outside"):
        cache.copy_blocks([(0, 6)])


def host_pool(cache: PagedKVCache, layer: int, role: int) -> np.ndarray:
    """The raw pool of (layer, role) as a flat array of the cache dtype."""
    return cache.storage.pool(layer, role).numpy(cache.dtype.numpy)


def test_swap_out_and_in_restore_contents(kernel_device: Device) -> None:
    rng = np.random.default_rng(4)
    cache = PagedKVCache(kernel_device, 2, 2, 2, num_pages=4, page_size=2)
    a = cache.add_sequence()
    k = [random_rows(rng, 3, 2, 2, np.float16) for _ in range(2)]
    for layer in range(2):
        cache.append(a, layer, k[layer], k[1 - layer])
    cache.swap_out(a)
    assert cache.num_free_pages == 4
    with pytest.raises(UnsupportedOpError, match="swapped"):
        cache.gather(a, 0)
    b = cache.add_sequence()
    filler = random_rows(rng, 8, 2, 2, np.float16)
    cache.append(b, 0, filler, filler)  # reuses (and overwrites) a's old pages
    with pytest.raises(OutOfPagesError):
        cache.swap_in(a)
    cache.free(b)
    cache.swap_in(a)
    for layer in range(2):
        got_k, got_v, _ = cache.gather(a, layer)
        assert same_bits(host(got_k), k[layer]) and same_bits(host(got_v), k[1 - layer])
    cache.check_invariants()


def test_failed_append_changes_nothing(kernel_device: Device) -> None:
    rng = np.random.default_rng(5)
    cache = PagedKVCache(kernel_device, 1, 1, 2, num_pages=3, page_size=2)
    a, b = cache.add_sequence(), cache.add_sequence()
    rows = random_rows(rng, 3, 1, 2, np.float16)
    cache.append(a, 0, rows, rows)
    before = (host_pool(cache, 0, 0).tobytes(), cache.block_table(a), cache.num_free_pages)
    big = random_rows(rng, 5, 1, 2, np.float16)
    with pytest.raises(OutOfPagesError, match="need 2, 1 available of 3"):
        cache.append([a, b], 0, big, big, counts=[1, 4])
    after = (host_pool(cache, 0, 0).tobytes(), cache.block_table(a), cache.num_free_pages)
    assert before == after and cache.seq_len(b) == 0
    cache.check_invariants()


def test_bad_arguments_raise_typed_errors(kernel_device: Device) -> None:
    cache = PagedKVCache(kernel_device, 2, 2, 4, num_pages=4, page_size=2)
    a = cache.add_sequence()
    ok = np.zeros((1, 2, 4), np.float16)
    cases = [
        ((99, 0, ok, ok), "does not exist"),
        ((a, 2, ok, ok), "layer"),
        ((a, 0, ok.astype(np.float32), ok), "dtype"),
        ((a, 0, np.zeros((1, 4, 2), np.float16), ok), "shape"),
        ((a, 0, ok, np.zeros((2, 2, 4), np.float16)), "rows"),
        (([a, a], 0, np.zeros((2, 2, 4), np.float16), np.zeros((2, 2, 4), np.float16)),
         "twice"),
        (("a", 0, ok, ok), "seq_ids"),
    ]
    for args, match in cases:
        with pytest.raises(UnsupportedOpError, match=match):
            cache.append(*args)
    with pytest.raises(UnsupportedOpError, match="counts"):
        cache.append(a, 0, ok, ok, counts=[2])
    for tokens in ([2**64], ["x"], 5):
        with pytest.raises(UnsupportedOpError):
            cache.add_sequence(tokens)
    cache.free(a)
    with pytest.raises(UnsupportedOpError, match="does not exist"):
        cache.append(a, 0, ok, ok)
    with pytest.raises(UnsupportedOpError, match="does not exist"):
        cache.gather([a], 0)
    cache.check_invariants()


@pytest.mark.parametrize("kwargs", [{"num_layers": 0}, {"head_dim": -1}, {"page_size": 1.5},
                                    {"dtype": "int4"}, {"dtype": "nope"}, {"num_pages": True},
                                    {"kv_dtype": "int4"}, {"kv_dtype": ["int8"]},
                                    {"kv_dtype": "int8", "page_size": 3},
                                    {"kv_dtype": "float8_e4m3", "dtype": "uint8"}])
def test_bad_geometry_is_rejected_before_allocating(kwargs: dict[str, Any]) -> None:
    args = {"device": "cpu", "num_layers": 1, "num_kv_heads": 1, "head_dim": 4,
            "num_pages": 2, **kwargs}
    with pytest.raises((UnsupportedOpError, ValueError)):
        PagedKVCache(**args)


def test_rows_as_tensors_and_device_buffers(kernel_device: Device) -> None:
    rng = np.random.default_rng(6)
    cache = PagedKVCache(kernel_device, 1, 2, 2, num_pages=4, page_size=2)
    a = cache.add_sequence()
    rows = random_rows(rng, 3, 2, 2, np.float16)
    tensor = Tensor.from_numpy(rows)
    cache.append(a, 0, tensor, tensor.to(kernel_device) if kernel_device.kind != "cpu"
                 else tensor)
    buf = Buffer.from_bytes(kernel_device, rows.reshape(-1).view(np.uint8))
    cache.append(a, 0, buf, buf)
    k, v, _ = cache.gather(a, 0)
    want = np.concatenate([rows, rows])
    assert same_bits(host(k), want) and same_bits(host(v), want)
    with pytest.raises(UnsupportedOpError, match="whole number"):
        cache.append(a, 0, buf.view(0, 6), buf.view(0, 6))


def test_prefix_cache_reuses_pages_with_their_data(kernel_device: Device) -> None:
    rng = np.random.default_rng(8)
    cache = PagedKVCache(kernel_device, 2, 1, 2, num_pages=8, page_size=2,
                         enable_prefix_cache=True)
    tokens = [5, 6, 7, 8, 9]
    a = cache.add_sequence(tokens)
    rows = [random_rows(rng, 5, 1, 2, np.float16) for _ in range(2)]
    for layer in range(2):
        cache.append(a, layer, rows[layer], rows[layer])
    cache.free(a)
    b = cache.add_sequence(tokens[:4] + [1])
    assert cache.seq_len(b) == 4 and cache.prefix_cache.hits == 2
    tail = random_rows(rng, 1, 1, 2, np.float16)
    for layer in range(2):
        cache.append(b, layer, tail, tail)
        got = host(cache.gather(b, layer)[0])
        assert same_bits(got, np.concatenate([rows[layer][:4], tail]))
    cache.check_invariants()


def test_empty_gathers_and_closed_cache(kernel_device: Device) -> None:
    cache = PagedKVCache(kernel_device, 1, 2, 2, num_pages=2, page_size=2)
    a = cache.add_sequence()
    k, v, cu = cache.gather([a], 0)
    assert k.shape == (0, 2, 2) and host(v).size == 0 and cu.tolist() == [0, 0]
    k, _, lens = cache.gather_padded([], 0)
    assert k.shape == (0, 0, 2, 2) and lens.size == 0
    cache.append(a, 0, np.zeros((0, 2, 2), np.float16), np.zeros((0, 2, 2), np.float16))
    assert cache.seq_len(a) == 0
    cache.close()
    with pytest.raises(UnsupportedOpError, match="closed"):
        cache.append(a, 0, np.zeros((1, 2, 2), np.float16), np.zeros((1, 2, 2), np.float16))
    with pytest.raises(UnsupportedOpError, match="closed"):
        cache.export(0, "key")


def _workload(cache: PagedKVCache, rng: np.random.Generator) -> list[np.ndarray]:
    """Prefill, fork, decode, swap and page copies; returns every gathered array."""
    seqs = [cache.add_sequence() for _ in range(3)]
    dims = (cache.num_kv_heads, cache.head_dim)
    for layer in range(cache.num_layers):
        k = rng.standard_normal((17, *dims)).astype(np.float16)
        cache.append(seqs, layer, k, -k, counts=[9, 3, 5])
    seqs.append(cache.fork(seqs[0]))
    for _ in range(5):
        for layer in range(cache.num_layers):
            k = rng.standard_normal((4, *dims)).astype(np.float16)
            cache.append_decode(seqs, layer, k, k * 2)
    cache.swap_out(seqs[1])
    cache.swap_in(seqs[1])
    table = cache.block_table(seqs[2])
    cache.copy_blocks([(table[0], cache.allocator.free_list[0])])
    out = []
    for layer in range(cache.num_layers):
        k, v, _ = cache.gather(seqs, layer)
        pk, pv, _ = cache.gather_padded(seqs[::-1], layer)
        out += [host(k), host(v), host(pk), host(pv)]
    cache.check_invariants()
    return out


@pytest.mark.parametrize("kv_dtype", [None, "int8", "float8_e4m3"])
def test_pools_larger_than_a_binding_are_bound_in_windows(
        kernel_device: Device, kv_dtype: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    from hurray_gpu.kv_cache import windows

    want = _workload(PagedKVCache(kernel_device, 2, 2, 4, 40, 4, kv_dtype=kv_dtype),
                     np.random.default_rng(5))
    # Three pages per binding: 14 windows, the last overlapping the one before.
    page = 4 * 2 * 4 * (1 if kv_dtype else 2)
    monkeypatch.setattr(windows, "binding_limit", lambda _d: windows.ALIGN_MARGIN + 3 * page)
    if getattr(kernel_device, "alignment", 4) > page:  # OpenCL: sub-buffers start aligned
        with pytest.raises(UnsupportedOpError, match="multiple of .* bytes.*Fix:"):
            PagedKVCache(kernel_device, 2, 2, 4, 40, 4, kv_dtype=kv_dtype)
        return
    cache = PagedKVCache(kernel_device, 2, 2, 4, 40, 4, kv_dtype=kv_dtype)
    assert cache.storage.windows.count == 14 and cache.storage.windows.base(13) == 37
    got = _workload(cache, np.random.default_rng(5))
    assert all(same_bits(g, w) for g, w in zip(got, want, strict=True))


def test_page_larger_than_a_binding_is_rejected_up_front(
        kernel_device: Device, monkeypatch: pytest.MonkeyPatch) -> None:
    from hurray_gpu.kv_cache import windows

    monkeypatch.setattr(windows, "binding_limit", lambda _d: windows.ALIGN_MARGIN + 100)
    with pytest.raises(UnsupportedOpError, match="storage-buffer range.*Fix:"):
        PagedKVCache(kernel_device, 1, 4, 16, num_pages=8, page_size=16)


def test_real_binding_limit_pool_spans_windows(kernel_device: Device) -> None:
    from hurray_gpu.kv_cache.windows import binding_limit

    limit = binding_limit(kernel_device)
    if not limit or limit > 2**28:
        pytest.skip(f"{kernel_device.spec} binds whole pools")
    page_bytes = 16 * 8 * 128 * 2
    pages = limit // page_bytes + 64  # just past one binding: two windows
    cache = PagedKVCache(kernel_device, 1, 8, 128, num_pages=pages, page_size=16)
    assert cache.storage.windows.count == 2
    seqs = [cache.add_sequence() for _ in range(pages)]  # one page each, the last ones high
    rows = np.random.default_rng(3).standard_normal((pages, 8, 128)).astype(np.float16)
    cache.append_decode(seqs, 0, rows, -rows)
    pick = [seqs[-1], seqs[0], seqs[pages // 2], seqs[-64]]
    k, v, _ = cache.gather(pick, 0)
    assert same_bits(host(k), rows[[pages - 1, 0, pages // 2, pages - 64]])
    assert same_bits(host(v), -rows[[pages - 1, 0, pages // 2, pages - 64]])
    cache.check_invariants()
    cache.close()


def test_gather_into_caller_buffers(kernel_device: Device) -> None:
    rng = np.random.default_rng(9)
    cache = PagedKVCache(kernel_device, 1, 2, 4, num_pages=8, page_size=4)
    a, b = cache.add_sequence(), cache.add_sequence()
    rows = random_rows(rng, 7, 2, 4, np.float16)
    cache.append([a, b], 0, rows, rows[::-1].copy(), counts=[3, 4])
    want_k, want_v, _ = cache.gather([a, b], 0)
    big = Buffer(kernel_device, 7 * 16 * 2 + 256)
    out = (Buffer(kernel_device, 7 * 16), big.view(128, 7 * 16))  # 128: OpenCL's alignment
    k, v, cu = cache.gather([a, b], 0, out=out)
    assert same_bits(host(k), host(want_k)) and same_bits(host(v), host(want_v))
    assert bytes(out[0].copyout()) == host(want_k).tobytes() and cu.tolist() == [0, 3, 7]
    bad = [(Buffer(kernel_device, 8), out[1]), [out[0]], (out[0], out[0]),
           (cache.storage.pool(0, 0), out[1]), (big.view(0, 7 * 16 + 8), out[1])]
    for wrong in bad[:4]:
        with pytest.raises(UnsupportedOpError):
            cache.gather([a, b], 0, out=wrong)
    k, _, _ = cache.gather([a, b], 0, out=bad[4])  # disjoint parts of one buffer are fine
    assert same_bits(host(k), host(want_k))


def test_kept_gather_plans_follow_tables_lengths_and_contents(kernel_device: Device) -> None:
    # A batch's slot map is kept between gathers: it must follow each layer's own length, a
    # table change with the same lengths (swap out and in: new pages) and page contents.
    rng = stable_rng("kv kept gather plans")
    cache = PagedKVCache(kernel_device, 2, 2, 4, num_pages=8, page_size=2)
    a, b = cache.add_sequence(), cache.add_sequence()
    rows = [random_rows(rng, 4, 2, 4, np.float16) for _ in range(4)]
    for layer in range(2):
        cache.append(a, layer, rows[layer][:3], rows[layer + 2][:3])
    for layer in range(2):
        cache.append(b, layer, rows[3][:2], rows[3][:2])
    for layer in range(2):  # one plan serves both layers (same lengths), each its own pools
        k, v, cu = cache.gather(a, layer)
        assert same_bits(host(k), rows[layer][:3]) and same_bits(host(v), rows[layer + 2][:3])
        cu[:] = 99  # the caller's copy: the kept plan's lengths stay as they were
    cache.append(a, 0, rows[0][3:], rows[2][3:])  # layer 0 grows, layer 1 does not
    k, _, cu = cache.gather(a, 0)
    assert same_bits(host(k), rows[0]) and cu.tolist() == [0, 4]
    k, _, cu = cache.gather(a, 1)
    assert same_bits(host(k), rows[1][:3]) and cu.tolist() == [0, 3]
    cache.copy_blocks([(cache.block_table(b)[0], cache.block_table(a)[0])])
    want = [np.concatenate([rows[3][:2], rows[layer][2:n]]) for layer, n in ((0, 4), (1, 3))]
    k, _, _ = cache.gather(a, 0)  # contents are read at every gather
    assert same_bits(host(k), want[0])
    cache.free(b)
    before = cache.block_table(a)
    cache.swap_out(a)
    c = cache.add_sequence()  # takes and overwrites a's old pages
    filler = random_rows(rng, 8, 2, 4, np.float16)
    for layer in range(2):
        cache.append(c, layer, filler, filler)
    cache.swap_in(a)
    assert set(cache.block_table(a)).isdisjoint(before)
    for layer in range(2):
        k, _, _ = cache.gather(a, layer)
        assert same_bits(host(k), want[layer])
    cache.check_invariants()
    cache.close()


def test_host_rows_are_appended_in_place_and_free_to_reuse_at_once() -> None:
    # On the cpu device a prefill's rows are read where they lie (no copy of the prompt's
    # K and V first), within the call: changing them after append returns changes nothing.
    cache = PagedKVCache("cpu", 1, 2, 8, 8, 4, "float16")
    rng = stable_rng(77)
    rows = rng.standard_normal((2, 13, 2, 8)).astype(np.float16)
    want = rows.copy()
    seq = cache.add_sequence()
    alloc = cache.device.allocator
    before = alloc.stats()["alloc_count"]
    cache.append_prefill(seq, 0, rows[0], rows[1])
    assert alloc.stats()["alloc_count"] == before  # (the slot list is a wrapped array too)
    rows[:] = 0
    got_k, got_v, _ = cache.gather([seq], 0)
    assert np.array_equal(got_k.numpy().view(np.uint16), want[0].view(np.uint16))
    assert np.array_equal(got_v.numpy().view(np.uint16), want[1].view(np.uint16))
    cache.close()
