"""The repeated-request fast paths: the server's prepared replies (per connection, per whole
request, valid only while the key names the same stored tensor) and the client's remembered
descriptor plans. Every answer is compared with what is stored, byte for byte."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.format import protocol as P
from tests._support import stable_rng
from tests.net.conftest import TRANSPORTS, RawPeer, Start
from tests.net.test_net_roundtrip import same, samples


def _bytes(seed: int, n: int) -> np.ndarray:
    return stable_rng(seed).integers(0, 256, n, dtype=np.uint8)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_every_replacement_of_a_key_is_seen_by_the_next_get(start: Start,
                                                            transport: str) -> None:
    """The same request again after a PUT, after a PUT of another shape and dtype, and after
    the served dict was changed directly: each get returns what the key names now (the
    replaced tensors are kept alive here, so only the key's lookup can tell)."""
    first = _bytes(1, 4096)
    server, kw = start({"k": hg.from_numpy(first)}, transport)
    replaced = []
    with hg.connect(server.url, **kw) as client:
        for _ in range(3):  # the second and third come from the prepared reply
            assert np.array_equal(client.get("k").numpy(), first)
        second = _bytes(2, 4096)
        replaced.append(server.registry["k"])
        client.put("k", hg.from_numpy(second))  # same descriptor, other bytes
        assert np.array_equal(client.get("k").numpy(), second)
        third = stable_rng(3).standard_normal((7, 9)).astype(np.float16)
        replaced.append(server.registry["k"])
        client.put("k", hg.from_numpy(third))  # another descriptor
        for _ in range(2):
            got = client.get("k")
            assert got.shape == (7, 9) and np.array_equal(got.numpy(), third)
        fourth = _bytes(4, 100_000)
        replaced.append(server.registry["k"])
        server.registry["k"] = hg.from_numpy(fourth)  # no PUT: replaced in the dict itself
        assert np.array_equal(client.get("k").numpy(), fourth)
        replaced.append(server.registry["k"])
        del server.registry["k"]
        with pytest.raises(hg.RemoteError) as err:
            client.get("k")
        assert err.value.code == P.ErrorCode.UNKNOWN_TENSOR


def test_a_replaced_tensor_is_not_kept_alive_by_a_prepared_reply(start: Start) -> None:
    server, _ = start({"k": hg.from_numpy(_bytes(5, 1 << 20))})
    old = weakref.ref(server.registry["k"])
    with hg.connect(server.url) as client:
        client.get("k")
        client.get("k")
        server.registry["k"] = hg.from_numpy(_bytes(6, 16))
        gc.collect()
        assert old() is None
        assert np.array_equal(client.get("k").numpy(), _bytes(6, 16))


@pytest.mark.parametrize("n", [4096, 1 << 20])
def test_a_prepared_reply_sends_the_current_bytes_and_lets_go(start: Start, n: int) -> None:
    """A prepared reply keeps views of its data: a change of the stored tensor's memory in
    place is in the next answer (whether the request is the one predicted, on the next
    stream, or not), and a replacement of the key neither keeps the old Tensor (nor its
    memory) alive nor is answered with its bytes."""
    server, _ = start({"k": hg.from_numpy(_bytes(7, n))})
    stored = server.registry["k"]
    memory = stored.buffers[0].device.allocator.host_array(stored.buffers[0].allocation)
    with hg.connect(server.url) as client:
        for i in range(4):  # the first through the full path, then prepared
            memory[:] = _bytes(8 + i, n)
            if i == 2:
                client.ping()  # takes a stream: the next request is not the one predicted
            assert np.array_equal(client.get("k").numpy(), _bytes(8 + i, n))
        old, held = weakref.ref(stored), weakref.ref(memory.base if memory.base is not None
                                                     else memory)
        server.registry["k"] = hg.from_numpy(_bytes(20, n))
        del stored, memory
        gc.collect()
        assert old() is None and held() is None
        for _ in range(2):
            assert np.array_equal(client.get("k").numpy(), _bytes(20, n))


@pytest.mark.parametrize("n", [4096, 1 << 20])
def test_a_freed_tensor_is_not_sent_from_a_prepared_reply(start: Start, n: int) -> None:
    """A stored tensor freed after its reply was prepared: the next get takes the full
    path, which refuses it, instead of sending the views of memory the pool may have
    handed to another tensor since."""
    server, _ = start({"k": hg.from_numpy(_bytes(30, n))})
    with hg.connect(server.url) as client:
        for _ in range(2):
            assert np.array_equal(client.get("k").numpy(), _bytes(30, n))
        for b in server.registry["k"].buffers:
            b.free()
        reuse = hg.from_numpy(_bytes(31, n))  # may take the freed memory
        with pytest.raises(hg.RemoteError):
            client.get("k")
        assert np.array_equal(reuse.numpy(), _bytes(31, n))


def test_every_sample_twice_bit_exact(start: Start) -> None:
    """Every dtype, layout, quantization and composite (the prepared reply carries several
    buffers and members), first through the full path, then from the prepared reply."""
    tensors = samples()
    server, _ = start(dict(tensors), "unix")
    with hg.connect(server.url) as client:
        for _ in range(2):
            for key, t in tensors.items():
                assert same(client.get(key), t), key


def test_a_prepared_reply_is_restamped_framed_and_keeps_stream_checks(start: Start) -> None:
    """A peer accepting 4 KiB messages: the answer comes in frames of at most 4088 data
    bytes on the request's own stream, the same for the first request and the repeats; a
    repeated request on a stream that does not ascend is still refused."""
    data = _bytes(7, 10_000)
    server, _ = start({"k": hg.from_numpy(data)})
    peer = RawPeer(server.url)
    peer.hello(max_message_size=4096)
    request = P.TensorRequest("k", (), 0, 0, 0)
    answers = []
    for stream in (2, 3, 7):
        peer.send_msg(request, stream)
        header, desc = peer.recv()
        assert header.stream_id == stream and isinstance(desc, P.TensorDescriptorMsg)
        got, frames = bytearray(), []
        while True:
            header, msg = peer.recv()
            assert header.stream_id == stream
            if isinstance(msg, P.TensorDataEnd):
                break
            assert isinstance(msg, P.TensorData) and msg.offset == len(got)
            frames.append(len(msg.data))
            got += msg.data
        assert bytes(got) == data.tobytes()
        answers.append((desc, frames))
    assert answers[0] == answers[1] == answers[2]
    assert answers[0][1] == [4088, 4088, 10_000 - 2 * 4088]
    peer.send_msg(request, 7)  # streams must ascend, repeated request or not
    assert peer.recv_error() == (7, P.ErrorCode.INVALID_MESSAGE)
    peer.send_msg(request, 8)
    header, msg = peer.recv()
    assert header.stream_id == 8 and isinstance(msg, P.TensorDescriptorMsg)
    peer.close()


def test_the_client_remembers_plans_per_descriptor_message(start: Start) -> None:
    """A remembered plan is keyed by the whole descriptor message: another shape under the
    same key gets its own; the byte limit is charged on every get."""
    small, large = _bytes(8, 4096), _bytes(9, 8192)
    server, _ = start({"a": hg.from_numpy(small), "b": hg.from_numpy(large)})
    with hg.connect(server.url, max_tensor_bytes=4096) as client:
        for _ in range(2):
            assert np.array_equal(client.get("a").numpy(), small)
        assert len(client._plans) == 1
        with pytest.raises(hg.ProtocolError) as err:
            client.get("b")
        assert err.value.code == P.ErrorCode.MESSAGE_TOO_LARGE
    with hg.connect(server.url) as client:
        server.registry["a"] = hg.from_numpy(large.reshape(64, 128))
        got = client.get("a")
        assert got.shape == (64, 128) and np.array_equal(got.numpy().reshape(-1), large)


def _hrry(path: Path, **arrays: np.ndarray) -> None:
    hg.save(path, {k: hg.from_numpy(a) for k, a in arrays.items()})


@pytest.mark.parametrize("served", ["directory", "file"])
def test_a_changed_hrry_file_is_seen_by_the_next_repeated_get(start: Start, tmp_path: Path,
                                                              served: str) -> None:
    """A key of a ``.hrry`` source names the very same tensor while its file is unchanged
    (so repeats take the prepared reply), and the next get after the file is replaced
    (the server's own PUT rewrite, or hg.save from outside) or rewritten in place (another
    size) returns the new bytes; the old map's tensor is then no longer held."""
    root = tmp_path / "d"
    root.mkdir()
    path = root / "m.hrry"
    _hrry(path, w=_bytes(10, 70_000), other=_bytes(11, 100))
    server, _ = start(root if served == "directory" else path, writable=True)
    key = "m.hrry/w" if served == "directory" else "w"
    first = server.lookup(key)
    assert server.lookup(key) is first
    old = weakref.ref(first)
    del first
    with hg.connect(server.url) as client:
        for _ in range(3):
            assert np.array_equal(client.get(key).numpy(), _bytes(10, 70_000))
        if served == "directory":  # the server's atomic rewrite, same shape, other bytes
            client.put(key, hg.from_numpy(_bytes(12, 70_000)))
            assert np.array_equal(client.get(key).numpy(), _bytes(12, 70_000))
            assert np.array_equal(client.get("m.hrry/other").numpy(), _bytes(11, 100))
        gc.collect()
        assert old() is None or served == "file"
        _hrry(path, w=_bytes(13, 70_000))  # replaced from outside (a new inode)
        for _ in range(2):
            assert np.array_equal(client.get(key).numpy(), _bytes(13, 70_000))
        gc.collect()
        assert old() is None
        _hrry(tmp_path / "next.hrry", w=_bytes(14, 50_000))
        with open(path, "r+b") as f:  # rewritten in place: same inode, another size
            f.truncate(0)
            f.write((tmp_path / "next.hrry").read_bytes())
        for _ in range(2):
            assert np.array_equal(client.get(key).numpy(), _bytes(14, 50_000))
        path.unlink()
        with pytest.raises(hg.RemoteError) as err:
            client.get(key)
        assert err.value.code == P.ErrorCode.UNKNOWN_TENSOR
