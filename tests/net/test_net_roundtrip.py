"""get and put over TCP, Unix-domain sockets and TLS return every tensor bit-exact."""

from __future__ import annotations

import os
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.errors import RemoteError
from hurray_gpu.format import protocol as P
from hurray_gpu.net.framing import declare
from hurray_gpu.net.server import REQUEST_FAILED
from hurray_gpu.runtime.memory import MemoryClass
from tests._support import skip_or_fail, stable_rng
from tests.hurray._io_samples import (
    NUMPY_SAMPLES,
    layout_samples,
    nested_group,
    overlay,
    partition,
    quantized_per_channel,
)
from tests.net.conftest import TRANSPORTS, RawPeer, Start, as_discrete, data_frame


def samples() -> dict[str, Any]:
    """Every dtype, every layout and quantization, composites and empty tensors."""
    out: dict[str, Any] = {f"np/{k}": hg.from_numpy(v) for k, v in NUMPY_SAMPLES.items()}
    out.update({f"layout/{k}": v for k, v in layout_samples().items()})
    out.update({"q": quantized_per_channel(), "part": partition(), "over": overlay(),
                "group": nested_group(),
                "empty": hg.from_numpy(np.zeros((0, 4), dtype=np.float32)),
                "scalar": hg.from_numpy(np.float64(2.5))})
    return out


def same(a: Any, b: Any) -> bool:
    """Equal descriptors (handles compared as the wire re-declares them: cpu, producer
    synced), equal buffer bytes, equal members."""
    return (declare(a.descriptor, 0, 0, 0) == declare(b.descriptor, 0, 0, 0)
            and len(a.buffers) == len(b.buffers)
            and all(x.numpy().tobytes() == y.numpy().tobytes()
                    for x, y in zip(a.buffers, b.buffers, strict=True))
            and len(a.members) == len(b.members)
            and all(same(x, y) for x, y in zip(a.members, b.members, strict=True)))


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_get_and_put_round_trip_bit_exact(start: Start, transport: str) -> None:
    tensors = samples()
    server, kw = start(dict(tensors), transport)
    assert server.url.startswith({"tcp": "hurray://127.0.0.1:", "unix": "hurray+unix:///",
                                  "tls": "hurrays://127.0.0.1:"}[transport])
    with hg.connect(server.url, **kw) as client:
        assert client.ping() > 0
        for key, t in tensors.items():
            got = client.get(key)
            assert got.is_host and same(got, t), key
            if not t.is_composite:
                client.put(f"back/{key}", got)
                assert same(server.registry[f"back/{key}"], t), key
                assert same(client.get(f"back/{key}"), t), key
        assert client.get("np/int4").numpy().tolist() == NUMPY_SAMPLES["int4"].tolist()
        assert client.get("group").members[1].members[0].numpy().tolist() == [[0, 1], [4, 5]]


def test_same_bytes_fail_the_comparison_when_one_bit_differs() -> None:
    a = hg.from_numpy(np.arange(8, dtype=np.int32))
    changed = np.arange(8, dtype=np.int32)
    changed[3] ^= 1 << 20
    assert same(a, a) and not same(a, hg.from_numpy(changed))


def test_unknown_key_is_remote_unknown_tensor_and_the_connection_goes_on(start: Start) -> None:
    server, _ = start({"a": hg.from_numpy(np.ones(3, np.float32))})
    with hg.connect(server.url) as client:
        with pytest.raises(RemoteError) as info:
            client.get("nope")
        assert info.value.code == P.ErrorCode.UNKNOWN_TENSOR and "nope" in str(info.value)
        assert client.get("a").numpy().tolist() == [1.0, 1.0, 1.0]


def test_hrry_file_and_directory_sources(start: Start, tmp_path: Path) -> None:
    tensors = {"w": hg.from_numpy(np.arange(6, dtype=np.float16).reshape(2, 3)),
               "part": partition()}
    (tmp_path / "d" / "sub").mkdir(parents=True)
    hg.save(tmp_path / "d" / "m.hrry", tensors)
    hg.save(tmp_path / "d" / "sub" / "n.hrry", {"x/y": hg.from_numpy(np.array([7], np.int8))})
    file_server, _ = start(str(tmp_path / "d" / "m.hrry"))
    dir_server, _ = start(tmp_path / "d")
    with hg.connect(file_server.url) as c:
        assert same(c.get("w"), tensors["w"]) and same(c.get("part"), tensors["part"])
        assert same(c.get("part/1"), tensors["part"].members[1])  # a member by its index name
    with hg.connect(dir_server.url) as c:
        assert same(c.get("m.hrry/w"), tensors["w"])
        assert c.get("sub/n.hrry/x/y").numpy().tolist() == [7]
        for missing in ("m.hrry/nope", "nope.hrry/w", "m.hrry", "sub/n.hrry/x"):
            with pytest.raises(RemoteError) as info:
                c.get(missing)
            assert info.value.code == P.ErrorCode.UNKNOWN_TENSOR, missing


def test_keys_cannot_escape_a_served_directory(start: Start, tmp_path: Path) -> None:
    outside = tmp_path / "secret.hrry"
    hg.save(outside, {"k": hg.from_numpy(np.array([42], np.int32))})
    root = tmp_path / "served"
    (root / "sub").mkdir(parents=True)
    hg.save(root / "ok.hrry", {"k": hg.from_numpy(np.array([1], np.int32))})
    os.symlink(outside, root / "link.hrry")
    os.symlink(tmp_path, root / "up")
    server, _ = start(root)
    with hg.connect(server.url) as c:
        assert c.get("ok.hrry/k").numpy().tolist() == [1]
        for key in ("../secret.hrry/k", "sub/../../secret.hrry/k", "/" + str(outside) + "/k",
                    "link.hrry/k", "up/secret.hrry/k", "./ok.hrry/k", "sub//../ok.hrry/k"):
            with pytest.raises(RemoteError) as info:
                c.get(key)
            assert info.value.code == P.ErrorCode.UNKNOWN_TENSOR, key
        assert c.get("ok.hrry/k").numpy().tolist() == [1]


def test_many_clients_at_once(start: Start) -> None:
    rng = stable_rng("net-many-clients")
    base = {f"t{i}": hg.from_numpy(rng.standard_normal((64, 33)).astype(np.float32))
            for i in range(4)}
    server, _ = start(dict(base))
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            with hg.connect(server.url) as c:
                for round_ in range(5):
                    key = f"t{(n + round_) % 4}"
                    assert same(c.get(key), base[key])
                    mine = np.full((n + 1, round_ + 1), n * 10 + round_, np.int32)
                    c.put(f"c{n}/{round_}", mine)
                    assert c.get(f"c{n}/{round_}").numpy().tolist() == mine.tolist()
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert len([k for k in server.registry if k.startswith("c")]) == 40


def test_a_64_mib_tensor_in_many_frames(start: Start) -> None:
    data = stable_rng("net-64mib").integers(0, 256, 64 << 20, dtype=np.uint8)
    server, _ = start({"big": hg.from_numpy(data)}, max_message_size=1 << 20)
    with hg.connect(server.url, max_message_size=1 << 20) as c:
        got = c.get("big")  # frames of at most 1 MiB - 8 each way
        assert np.array_equal(got.numpy(), data)
        c.put("big2", got)
    assert np.array_equal(server.registry["big2"].numpy(), data)


def test_device_tensors_are_served_and_received_on_devices(start: Start) -> None:
    try:
        hg.device("opencl")
    except hg.BackendUnavailableError as exc:
        skip_or_fail(f"no OpenCL device ({exc})", "install pocl-opencl-icd and pyopencl")
    values = np.arange(40000, dtype=np.float32).reshape(200, 200)
    on_device = hg.from_numpy(values).to("opencl")
    q = quantized_per_channel()  # two buffers, both copied out through one staging array
    server, _ = start({"d": on_device, "q": q.to("opencl")})
    with hg.connect(server.url) as c:
        got_q = c.get("q")  # (its handles keep the device's alignment)
        assert [b.numpy().tobytes() for b in got_q.buffers] == \
            [b.numpy().tobytes() for b in q.buffers]
        got = c.get("d", device="opencl")
        assert got.device.kind == "opencl"
        assert np.array_equal(got.to("cpu").numpy(), values)
        c.put("back", got)
    assert server.registry["back"].is_host
    assert np.array_equal(server.registry["back"].numpy(), values)


# OpenCL: plain host slots a worker thread copies in; Vulkan with discrete memory: pinned
# slots the socket writes into in place, copied to the destination on the ring's stream;
# lavapipe as it is: no ring, the socket writes the mapped destination in place.
@pytest.mark.parametrize(("kind", "ring"), [("opencl", "plain"), ("vulkan", "pinned"),
                                            ("vulkan", "none")])
def test_a_device_get_streams_through_the_staging_ring(
        start: Start, kind: str, ring: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from hurray_gpu.net.staging import STAGING_DEPTH, STAGING_SLOT

    try:
        dev = hg.device(kind)
    except hg.BackendUnavailableError as exc:
        skip_or_fail(f"no {kind} device ({exc})", "install pocl-opencl-icd, pyopencl and "
                     "mesa-vulkan-drivers")
    if ring == "pinned":
        as_discrete(monkeypatch, dev)
    pinned = (STAGING_SLOT, hg.MemoryClass.HOST_PINNED)
    dev.allocator.free_cache()
    data = stable_rng("net-staging").integers(0, 256, 40 << 20, dtype=np.uint8)
    q = quantized_per_channel()
    server, _ = start({"big": hg.from_numpy(data), "q": q, "group": nested_group()})
    with hg.connect(server.url) as c:
        tracemalloc.start()
        tracemalloc.reset_peak()
        try:
            got = c.get("big", device=kind)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert got.device.kind == kind
        # the host held the ring (or nothing), never the whole 40 MiB
        assert peak < STAGING_DEPTH * STAGING_SLOT + (4 << 20) < data.nbytes
        if ring == "none":
            assert peak < 1 << 20
        # the ring's slots went back to the device's pool: pinned ones where it maps them
        assert (len(dev.allocator._pool.get(pinned, [])) == STAGING_DEPTH) == (ring == "pinned")
        assert np.array_equal(got.to("cpu").numpy(), data)
        assert same(c.get("q", device=kind).to("cpu"), q)
        group = c.get("group", device=kind)  # a composite: every member on the device
        assert group.members[1].members[0].device.kind == kind
        assert same(group.to("cpu"), nested_group())
        again = c.get("big", device=kind)  # the pooled slots again, all copies done in order
        assert np.array_equal(again.to("cpu").numpy(), data)


def test_the_ring_refills_a_pinned_slot_only_after_its_copy(
        start: Start, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every submission on a Vulkan stream is held back 20 ms (a slow device): a slot refilled
    before its copy to the device ran would reach the tensor with the next slot's bytes."""
    from hurray_gpu.backends import vulkan_sync
    from hurray_gpu.net import staging

    try:
        dev = hg.device("vulkan")
    except hg.BackendUnavailableError as exc:
        skip_or_fail(f"no Vulkan device ({exc})", "install mesa-vulkan-drivers")
    as_discrete(monkeypatch, dev)
    run = vulkan_sync._Lane._run

    def slow(lane: Any, item: Any) -> None:
        time.sleep(0.02)
        run(lane, item)

    monkeypatch.setattr(vulkan_sync._Lane, "_run", slow)
    monkeypatch.setattr(staging, "STAGING_SLOT", 256 << 10)
    data = stable_rng("net-slow-ring").integers(0, 256, 3 << 20, dtype=np.uint8)
    server, _ = start({"x": hg.from_numpy(data)})
    with hg.connect(server.url) as c:
        got = c.get("x", device=dev)  # 12 slots through a ring of 3
        assert np.array_equal(got.to("cpu").numpy(), data)
    assert (256 << 10, hg.MemoryClass.HOST_PINNED) in dev.allocator._pool


def test_paged_kv_cache_keys(start: Start) -> None:
    rng = stable_rng("net-kv")
    cache = hg.PagedKVCache("cpu", num_layers=2, num_kv_heads=2, head_dim=4, num_pages=8,
                            page_size=4, dtype="float32")
    seq = cache.add_sequence()
    rows = {(layer, role): rng.standard_normal((6, 2, 4)).astype(np.float32)
            for layer in range(2) for role in range(2)}
    for layer in range(2):
        cache.append_prefill(seq, layer, rows[layer, 0], rows[layer, 1])
    server, _ = start(cache)
    with hg.connect(server.url) as c:
        assert np.array_equal(c.get(f"kv/{seq}/1/value").numpy(), rows[1, 1])
        assert np.array_equal(c.get(f"kv/{seq}/0").numpy(), np.stack([rows[0, 0], rows[0, 1]]))
        whole = c.get(f"kv/{seq}").numpy()
        assert whole.shape == (2, 2, 6, 2, 4)
        assert np.array_equal(whole[1, 0], rows[1, 0])
        for key in (f"kv/{seq + 1}", f"kv/{seq}/2", f"kv/{seq}/0/keys", "kv/x"):
            with pytest.raises(RemoteError) as info:
                c.get(key)
            assert info.value.code == P.ErrorCode.UNKNOWN_TENSOR, key


def test_put_pages_into_a_decode_nodes_kv_cache(start: Start) -> None:
    """The disaggregated path: a prefill cache's KV is pushed into another process's cache."""
    rng = stable_rng("net-kv-put")
    prefill = hg.PagedKVCache("cpu", num_layers=3, num_kv_heads=2, head_dim=8, num_pages=16,
                              page_size=4, dtype="float16")
    seq = prefill.add_sequence()
    for layer in range(3):
        k, v = (rng.standard_normal((10, 2, 8)).astype(np.float16) for _ in range(2))
        prefill.append_prefill(seq, layer, k, v)
    decode = hg.PagedKVCache("cpu", num_layers=3, num_kv_heads=2, head_dim=8, num_pages=16,
                             page_size=4, dtype="float16")
    decode.add_sequence()  # sequence 0 is taken, so the pushed one gets another id
    server, _ = start(decode)
    with hg.connect(server.url) as src_side:
        pages = np.stack([np.stack([t.numpy() for t in prefill.gather([seq], layer)[:2]])
                          for layer in range(3)])
        src_side.put("kv/req-1", pages)
        new = server.kv_sequences["req-1"]
        assert new != 0 and decode.seq_len(new) == 10
        for layer in range(3):
            want = prefill.gather([seq], layer)
            got = decode.gather([new], layer)
            assert all(np.array_equal(g.numpy(), w.numpy())
                       for g, w in zip(got[:2], want[:2], strict=True))
        one = rng.standard_normal((2, 1, 2, 8)).astype(np.float16)
        src_side.put("kv/req-1/2", one)  # one more token in layer 2
        assert decode.seq_len(new, 2) == 11 and decode.seq_len(new, 0) == 10
        assert np.array_equal(src_side.get("kv/req-1/2/value").numpy()[-1], one[1, 0])
        for key, bad in (("kv/req-1/5", one), ("kv/req-2", one),
                         ("kv/req-1/0", one.astype(np.float32)), ("kv/77", pages)):
            with pytest.raises(RemoteError) as info:
                src_side.put(key, bad)
            assert info.value.code in (0xF0, P.ErrorCode.UNKNOWN_TENSOR), key
        assert sorted(server.kv_sequences) == ["req-1"] and decode.seq_ids == [0, new]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_kv_put_is_received_straight_into_the_caches_pages(start: Start,
                                                             transport: str) -> None:
    """A PUT into a host-memory cache is received into the pages it reserved (no buffer is
    allocated), pages scattered over the pool included, and is the sequence's rows after."""
    decode = hg.PagedKVCache("cpu", num_layers=2, num_kv_heads=2, head_dim=8, num_pages=96,
                             page_size=4, dtype="float16")
    held = [decode.add_sequence() for _ in range(8)]  # every other page in use: scattered
    for seq in held:
        decode.append_prefill(seq, 0, *np.zeros((2, 5, 2, 8), np.float16))
    for seq in held[::2]:
        decode.free(seq)
    server, kw = start(decode, transport)
    rng = stable_rng("net-kv-direct")
    rows = rng.standard_normal((2, 2, 37, 2, 8)).astype(np.float16)
    layers, one = hg.from_numpy(rows), hg.from_numpy(rows[1, :, :7])
    alloc = hg.device("cpu").allocator
    with hg.connect(server.url, **kw) as client:
        before = alloc.stats()["alloc_count"]
        client.put("kv/all", layers)  # every layer at once
        client.put("kv/one/1", one)
        assert alloc.stats()["alloc_count"] == before
        for name, want in (("all", rows), ("one", [None, rows[1, :, :7]])):
            seq = server.kv_sequences[name]
            for layer, w in enumerate(want):
                k, v, _ = decode.gather([seq], layer)
                if w is None:
                    assert decode.seq_len(seq, layer) == 0
                    continue
                assert np.array_equal(k.numpy().view(np.uint16), w[0].view(np.uint16))
                assert np.array_equal(v.numpy().view(np.uint16), w[1].view(np.uint16))
    decode.check_invariants()


def test_a_kv_put_paused_mid_page_still_lands_in_its_pages(start: Start) -> None:
    """A frame over many scattered pages whose bytes stop, past the server's read-ahead
    (16 KiB), for longer than one kernel wait (half the server's timeout) in the middle of
    a page: the receive resumes inside that page."""
    decode = hg.PagedKVCache("cpu", num_layers=1, num_kv_heads=8, head_dim=64, num_pages=64,
                             page_size=4, dtype="float16")  # 4 KiB pages
    held = [decode.add_sequence() for _ in range(40)]
    for seq in held:
        decode.append_prefill(seq, 0, *np.zeros((2, 4, 8, 64), np.float16))
    for seq in held[::2]:
        decode.free(seq)  # the PUT's pages: every other one, in descending order
    server, _ = start(decode, timeout=2.0)
    rows = stable_rng("net-kv-pause").standard_normal((2, 64, 8, 64)).astype(np.float16)
    data = rows.tobytes()
    peer = RawPeer(server.url)
    peer.hello()
    peer.send_msg(P.TensorPut("kv/p/0", declare(hg.from_numpy(rows).descriptor, 0, 0, 0),
                              len(data)), 3)
    frame = data_frame(3, 0, data)
    cut = len(frame) - len(data) + 10 * 4096 + 1000  # inside the eleventh page
    peer.send(frame[:cut])
    time.sleep(1.3)  # the server's receive returns what it has after 1 s, and waits again
    peer.send(frame[cut:] + P.encode(P.TensorDataEnd(), 3))
    header, msg = peer.recv()
    assert (header.stream_id, type(msg)) == (3, P.TensorPutAck)
    k, v, _ = decode.gather([server.kv_sequences["p"]], 0)
    assert k.numpy().tobytes() + v.numpy().tobytes() == data


def test_a_put_copied_into_a_quantized_kv_cache_leaves_its_memory_in_the_cpu_pool(
        start: Start) -> None:
    """A PUT the server must convert (into an int8 cache) is received into the cpu pool's
    memory: copied into the cache's pages and dropped, it returns there, and the next PUT
    of its size reuses it (no second buffer of that size is pooled)."""
    def cache() -> hg.PagedKVCache:
        return hg.PagedKVCache("cpu", num_layers=1, num_kv_heads=2, head_dim=8,
                               num_pages=64, page_size=4, dtype="float16", kv_dtype="int8")

    decode, local = cache(), cache()
    server, _ = start(decode)
    rows = stable_rng("net-kv-pool").standard_normal((2, 37, 2, 8)).astype(np.float16)
    pool, key = hg.device("cpu").allocator, (rows.nbytes, MemoryClass.STANDARD)

    def pooled() -> int:
        deadline = time.monotonic() + 10  # the server drops its tensor after the ACK
        while not pool._pool.get(key) and time.monotonic() < deadline:
            time.sleep(0.01)
        return len(pool._pool.get(key, ()))

    pool.free_cache()
    seq = local.add_sequence()
    local.append_prefill(seq, 0, rows[0], rows[1])
    want = local.gather([seq], 0)
    with hg.connect(server.url) as client:
        for n, name in enumerate(("a", "b")):
            client.put(f"kv/{name}/0", rows)
            assert pooled() == 1, n
            got = decode.gather([server.kv_sequences[name]], 0)
            assert all(np.array_equal(g.numpy().view(np.uint16), w.numpy().view(np.uint16))
                       for g, w in zip(got[:2], want[:2], strict=True))


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_parallel_streams_shards_land_in_one_destination(start: Start, transport: str) -> None:
    data = stable_rng("net-parallel").integers(0, 256, (3 << 20) + 12345, dtype=np.uint8)
    q = quantized_per_channel()  # three buffers: shards cross buffer boundaries
    server, kw = start({"big": hg.from_numpy(data), "q": q, "tiny": hg.from_numpy(data[:5]),
                        "part": partition()}, transport)
    with hg.connect(server.url, **kw) as c:
        assert c.server_hello.capabilities & P.Capability.PARALLEL_STREAMS
        assert np.array_equal(c.get("big", parallel=4).numpy(), data)
        assert len(c._peers) == 3  # the extra connections stay for the next get
        assert same(c.get("q", parallel=3), q)
        assert c.get("tiny", parallel=5).numpy().tolist() == data[:5].tolist()
        with pytest.raises(RemoteError) as info:
            c.get("part", parallel=2)
        assert info.value.code == P.ErrorCode.SHARD_MISMATCH


def test_shard_spans_tile_the_bytes() -> None:
    from hurray_gpu.net.framing import SHARD_ALIGN, shard_span

    for total in (0, 1, SHARD_ALIGN - 1, SHARD_ALIGN * 7 + 3, 10**8):
        for count in (1, 2, 3, 7, 64):
            spans = [shard_span(total, i, count) for i in range(count)]
            assert spans[0][0] == 0 and spans[-1][1] == total
            assert all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))
            assert all(lo <= hi and (lo % SHARD_ALIGN == 0 or lo == total) for lo, hi in spans)


def test_put_writes_into_a_served_directorys_hrry_files(start: Start, tmp_path: Path) -> None:
    root = tmp_path / "d"
    root.mkdir()
    old = {"keep": hg.from_numpy(np.arange(5, dtype=np.int32)), "part": partition(),
           "w": hg.from_numpy(np.zeros(3, np.float32))}
    hg.save(root / "m.hrry", old, {"note": "kept"}, alignment=8192)
    server, _ = start(root, writable=True)
    readonly, _ = start(root)
    new_w = hg.from_numpy(stable_rng(7).standard_normal((4, 3)).astype(np.float16))
    fresh = hg.from_numpy(np.array([1, 2], np.uint8))
    with hg.connect(server.url) as c:
        before = c.get("m.hrry/w")  # served from the map the rewrite replaces
        c.put("m.hrry/w", new_w)
        c.put("sub/new.hrry/x/y", fresh)
        assert same(c.get("m.hrry/w"), new_w) and same(c.get("sub/new.hrry/x/y"), fresh)
        assert same(c.get("m.hrry/part"), old["part"]) and before.numpy().tolist() == [0, 0, 0]
        with pytest.raises(RemoteError) as info:
            c.put("m.hrry/part/0", fresh)  # the composite "part" already names its members so
        assert info.value.code == REQUEST_FAILED
        assert same(c.get("m.hrry/keep"), old["keep"])  # a refused PUT changed nothing
    assert "w" not in server.registry and not server.registry
    with hg.open_file(root / "m.hrry") as f:
        assert f.names == ["keep", "part", "part/0", "part/1", "w"]
        assert f.metadata == {"note": "kept"} and f.header.alignment == 8192
        assert same(f.read("w"), new_w) and same(f.read("part"), old["part"])
    assert [p.name for p in root.iterdir() if p.name.startswith(".hrry-")] == []
    with hg.connect(readonly.url) as c:
        with pytest.raises(RemoteError) as info:
            c.put("m.hrry/w", fresh)
        assert info.value.code == REQUEST_FAILED and "writable" in str(info.value)
        for key in ("../out.hrry/k", "sub/../../out.hrry/k"):
            with pytest.raises(RemoteError):
                c.put(key, fresh)
    with hg.connect(server.url) as c, pytest.raises(RemoteError) as info:
        c.put("../out.hrry/k", fresh)
    assert info.value.code == P.ErrorCode.UNKNOWN_TENSOR
    assert not (tmp_path / "out.hrry").exists()
    assert same(hg.open_file(root / "m.hrry").read("w"), new_w)


def _prefill(rng_name: str, layers: int, tokens: int, **kw: Any) -> tuple[Any, int, np.ndarray]:
    """A prefill cache whose sequence's pages are scattered (every other page of the pool's
    first 16 in use), holding ``tokens`` random rows in each layer; and those rows."""
    cache = hg.PagedKVCache("cpu", num_layers=layers, num_kv_heads=2, head_dim=8,
                            num_pages=64, page_size=4, dtype="float16", **kw)
    held = [cache.add_sequence() for _ in range(16)]
    for seq in held:
        cache.append_prefill(seq, 0, *np.zeros((2, 4, 2, 8), np.float16))
    for seq in held[::2]:
        cache.free(seq)
    rows = stable_rng(rng_name).standard_normal((layers, 2, tokens, 2, 8)).astype(np.float16)
    seq = cache.add_sequence()
    for layer in range(layers):
        cache.append_prefill(seq, layer, rows[layer, 0], rows[layer, 1])
    return cache, seq, rows


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_put_kv_sends_a_sequence_from_its_pages(start: Start, transport: str) -> None:
    # The server's max_message_size 4096: many frames, most starting and ending in a page.
    prefill, seq, rows = _prefill("put-kv", 2, 150)  # 9600 bytes per layer
    decode = hg.PagedKVCache("cpu", num_layers=2, num_kv_heads=2, head_dim=8, num_pages=128,
                             page_size=4, dtype="float16")
    server, kw = start(decode, transport, max_message_size=4096)
    with hg.connect(server.url, **kw) as client:
        client.put_kv("all", prefill, seq)
        client.put_kv("one", prefill, seq, 1)
        assert np.array_equal(client.get("kv/all").numpy().view(np.uint16),
                              rows.view(np.uint16))
        got = decode.gather([server.kv_sequences["one"]], 1)
        assert all(np.array_equal(g.numpy().view(np.uint16), r.view(np.uint16))
                   for g, r in zip(got[:2], rows[1], strict=True))
        prefill.append_prefill(seq, 0, rows[0, 0, :3], rows[0, 1, :3])
        with pytest.raises(hg.UnsupportedOpError, match="one layer at a time"):
            client.put_kv("uneven", prefill, seq)
        deeper = hg.PagedKVCache("cpu", 3, 2, 8, 8, 4, "float16")
        other = deeper.add_sequence()
        deeper.append_prefill(other, 2, rows[0, 0, :5], rows[0, 1, :5])
        with pytest.raises(RemoteError) as refused:  # a layer the decode cache lacks
            client.put_kv("bad", deeper, other, 2)
        deeper.free(other)  # released at once (its traceback still holds put_kv's frame)
        del refused
        still_serves = client.get("kv/one/1").numpy()
        assert np.array_equal(still_serves.view(np.uint16), rows[1].view(np.uint16))
    prefill.free(seq)  # every row transfer was released
    prefill.check_invariants()


def test_put_kv_from_a_quantized_cache_sends_its_gather(start: Start) -> None:
    prefill, seq, _ = _prefill("put-kv-q8", 1, 13, kv_dtype="int8")
    decode = hg.PagedKVCache("cpu", num_layers=1, num_kv_heads=2, head_dim=8, num_pages=16,
                             page_size=4, dtype="float16")
    server, _ = start(decode)
    with hg.connect(server.url) as client:
        client.put_kv("q", prefill, seq, 0)
    want, got = prefill.gather([seq], 0), decode.gather([server.kv_sequences["q"]], 0)
    assert all(np.array_equal(g.numpy().view(np.uint16), w.numpy().view(np.uint16))
               for g, w in zip(got[:2], want[:2], strict=True))


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_kv_get_is_sent_from_the_pages(start: Start, transport: str) -> None:
    # The client's max_message_size 4096: the server's frames start and end inside pages.
    cache, seq, rows = _prefill("kv-get", 2, 150)
    server, kw = start(cache, transport)
    alloc = hg.device("cpu").allocator
    with hg.connect(server.url, max_message_size=4096, **kw) as client:
        client.get(f"kv/{seq}/0")  # warm: the client's first result
        before = alloc.stats()["alloc_count"]
        got = {key: client.get(key).numpy() for key in (
            f"kv/{seq}", f"kv/{seq}/1", f"kv/{seq}/0/key", f"kv/{seq}/1/value")}
        assert alloc.stats()["alloc_count"] - before == 4  # the results: no gather
        for key, want in ((f"kv/{seq}", rows), (f"kv/{seq}/1", rows[1]),
                          (f"kv/{seq}/0/key", rows[0, 0]), (f"kv/{seq}/1/value", rows[1, 1])):
            assert np.array_equal(got[key].view(np.uint16), want.view(np.uint16)), key
        widened = client.get(f"kv/{seq}/1", dtype="float32", allow_transcode=True)
        assert np.array_equal(widened.numpy(), rows[1].astype(np.float32))
    cache.free(seq)  # every row transfer was released
    cache.check_invariants()


def test_a_kv_get_lets_go_of_the_sequence_before_its_answer_ends(
        start: Start, monkeypatch: pytest.MonkeyPatch) -> None:
    # The client may act on a GET's end at once (the bench frees the sequence next): by then
    # the server has released the rows it sent from, however slowly that runs (20 ms here).
    # Forking checks it (refused while a transfer is open).
    from hurray_gpu.kv_cache import RowViews

    release = RowViews.release

    def slow(rows: RowViews) -> None:
        time.sleep(0.02)
        release(rows)

    monkeypatch.setattr(RowViews, "release", slow)
    # 64 KiB: more than the server holds back to send with the request's other replies.
    cache = hg.PagedKVCache("cpu", num_layers=1, num_kv_heads=8, head_dim=64, num_pages=8,
                            page_size=4, dtype="float16")
    rows = stable_rng("kv-get-release").standard_normal((1, 2, 32, 8, 64)).astype(np.float16)
    seq = cache.add_sequence()
    cache.append_prefill(seq, 0, rows[0, 0], rows[0, 1])
    server, _ = start(cache)
    with hg.connect(server.url) as client:
        for _ in range(10):
            assert np.array_equal(client.get(f"kv/{seq}/0").numpy().view(np.uint16),
                                  rows[0].view(np.uint16))
            cache.free(cache.fork(seq))
    cache.free(seq)
