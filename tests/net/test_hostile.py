"""Misbehaving peers: the server answers the right ERROR, bounds its memory and time, and
keeps serving everyone else; the client refuses a lying server before allocating."""

from __future__ import annotations

import gc
import socket
import struct
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.errors import ProtocolError, RemoteError
from hurray_gpu.format import protocol as P
from hurray_gpu.net.framing import declare
from hurray_gpu.net.transport import TransportError
from tests._support import skip_or_fail
from tests.net.conftest import RawPeer, Start, as_discrete, data_frame, header

VALUES = np.arange(16, dtype=np.int32)


def serving(start: Start, **kw: object) -> hg.net.Server:
    server, _ = start({"a": hg.from_numpy(VALUES)}, **kw)
    return server


def still_serves(server: hg.net.Server) -> None:
    with hg.connect(server.url) as c:
        assert c.get("a").numpy().tolist() == VALUES.tolist()


def put_header(stream: int, key: str, total: int) -> bytes:
    t = hg.from_numpy(np.zeros(total // 4, np.int32))
    return P.encode(P.TensorPut(key, t.descriptor_bytes, total), stream)


@pytest.mark.parametrize("mtype", [0x20, 0xF5, 0xFF, 0x0E])
def test_unknown_types_get_invalid_message_and_close(start: Start, mtype: int) -> None:
    server = serving(start)
    peer = RawPeer(server.url)
    peer.hello()
    peer.send(header(mtype, 7, 0))
    assert peer.recv_error() == (7, P.ErrorCode.INVALID_MESSAGE)
    assert peer.closed_by_peer()
    still_serves(server)


def test_oversized_payload_is_refused_before_reading_it(start: Start) -> None:
    server = serving(start, max_message_size=1 << 16)
    peer = RawPeer(server.url)
    peer.hello()
    peer.send(header(P.MessageType.TENSOR_REQUEST, 2, (1 << 16) + 1))
    assert peer.recv_error() == (2, P.ErrorCode.MESSAGE_TOO_LARGE)
    assert peer.closed_by_peer()
    still_serves(server)


def test_malformed_payload_is_answered_on_its_stream_then_closed(start: Start) -> None:
    server = serving(start)
    peer = RawPeer(server.url)
    peer.hello()
    # a key length past the payload: the header passes, decoding the payload fails
    peer.send(header(P.MessageType.TENSOR_REQUEST, 6, 15) + struct.pack("<I", 1000) + bytes(11))
    assert peer.recv_error() == (6, P.ErrorCode.INVALID_MESSAGE)
    assert peer.closed_by_peer()
    still_serves(server)


def test_truncated_frame_then_close(start: Start) -> None:
    server = serving(start)
    peer = RawPeer(server.url)
    peer.hello()
    peer.send(header(P.MessageType.TENSOR_REQUEST, 2, 100) + b"\x05\0\0\0ab")
    peer.close()
    still_serves(server)


def test_slow_drip_is_cut_off_at_the_message_timeout(start: Start) -> None:
    server = serving(start, timeout=0.6)
    request = P.encode(P.TensorRequest("a", (), 0, 0, 0), 2)
    peer = RawPeer(server.url)
    peer.hello()
    began = time.monotonic()
    with pytest.raises(OSError):  # the server hangs up part-way through
        for byte in request:
            peer.send(bytes([byte]))
            still_serves(server)  # others are served meanwhile
            time.sleep(0.15)
            if peer.closed_by_peer_now():
                raise ConnectionResetError("closed")
    assert time.monotonic() - began < 0.6 + 2.0
    still_serves(server)


def test_request_before_hello_and_bad_streams(start: Start) -> None:
    server = serving(start)
    peer = RawPeer(server.url)
    peer.send_msg(P.TensorRequest("a", (), 0, 0, 0), 2)
    assert peer.recv_error() == (1, P.ErrorCode.INVALID_MESSAGE)
    assert peer.closed_by_peer()
    peer = RawPeer(server.url)
    peer.hello()
    peer.send_msg(P.TensorRequest("nope", (), 0, 0, 0), 5)
    assert peer.recv_error() == (5, P.ErrorCode.UNKNOWN_TENSOR)
    peer.send_msg(P.TensorRequest("a", (), 0, 0, 0), 4)  # streams must ascend
    assert peer.recv_error() == (4, P.ErrorCode.INVALID_MESSAGE)
    peer.send_msg(P.TensorRequest("a", (), 0x08, 0, 0), 6)  # OpenCL is not offered
    assert peer.recv_error() == (6, P.ErrorCode.DEVICE_UNAVAILABLE)
    peer.send_msg(P.Ping(), 9)
    header_, msg = peer.recv()
    assert isinstance(msg, P.Pong) and header_.stream_id == 9


BAD_PUTS: dict[str, Callable[[int], bytes]] = {
    "out_of_order": lambda s: data_frame(s, 8, bytes(8)) + data_frame(s, 0, bytes(8)),
    "gap": lambda s: data_frame(s, 0, bytes(4)) + data_frame(s, 8, bytes(8)),
    "overlap": lambda s: data_frame(s, 0, bytes(8)) + data_frame(s, 4, bytes(12)),
    "beyond_total": lambda s: data_frame(s, 0, bytes(16)) + data_frame(s, 16, bytes(4)),
    "short": lambda s: data_frame(s, 0, bytes(12)),
    "empty_frame": lambda s: data_frame(s, 0, b""),
}


@pytest.mark.parametrize("case", sorted(BAD_PUTS))
def test_bad_put_data_is_invalid_message_on_its_stream(start: Start, case: str) -> None:
    server = serving(start)
    peer = RawPeer(server.url)
    peer.hello()
    peer.send(put_header(2, "x", 16) + BAD_PUTS[case](2)
              + P.encode(P.TensorDataEnd(), 2))
    assert peer.recv_error() == (2, P.ErrorCode.INVALID_MESSAGE)
    assert "x" not in server.registry
    # the connection goes on: a good PUT and a GET on the same socket
    peer.send(put_header(3, "y", 16) + data_frame(3, 0, bytes(range(16)))
              + P.encode(P.TensorDataEnd(), 3))
    header_, msg = peer.recv()
    assert isinstance(msg, P.TensorPutAck) and header_.stream_id == 3
    assert server.registry["y"].buffers[0].numpy().tobytes() == bytes(range(16))
    still_serves(server)


def _kv_put(stream: int, key: str) -> bytes:
    """A TENSOR_PUT of 16 bytes of KV rows: [2, 2 tokens, 1 head, 2] float16."""
    desc = hg.from_numpy(np.zeros((2, 2, 1, 2), np.float16)).descriptor
    return P.encode(P.TensorPut(key, declare(desc, 0, 0, 0), 16), stream)


@pytest.mark.parametrize("case", sorted(BAD_PUTS) + ["hang_up"])
def test_bad_kv_put_data_leaves_the_decode_cache_as_it_was(start: Start, case: str) -> None:
    # The PUT is received straight into pages it reserved: bad data releases them, and a
    # sequence the PUT created is freed (its name forgotten).
    cache = hg.PagedKVCache("cpu", num_layers=1, num_kv_heads=1, head_dim=2, num_pages=4,
                            page_size=2, dtype="float16")
    server, _ = start(cache)
    peer = RawPeer(server.url)
    peer.hello()
    if case == "hang_up":  # half the data, then the connection closes
        peer.send(_kv_put(2, "kv/bad/0") + data_frame(2, 0, bytes(8)))
        peer.sock.close()
        deadline = time.monotonic() + 10
        while (cache.seq_ids or server.kv_sequences) and time.monotonic() < deadline:
            time.sleep(0.01)
    else:
        peer.send(_kv_put(2, "kv/bad/0") + BAD_PUTS[case](2) + P.encode(P.TensorDataEnd(), 2))
        assert peer.recv_error() == (2, P.ErrorCode.INVALID_MESSAGE)
    assert not server.kv_sequences and not cache.seq_ids and cache.num_free_pages == 4
    cache.check_invariants()
    if case == "hang_up":
        peer = RawPeer(server.url)
        peer.hello()
    rows = np.arange(8, dtype=np.float16)  # the connection goes on: a good PUT lands
    peer.send(_kv_put(3, "kv/good/0") + data_frame(3, 0, rows.tobytes())
              + P.encode(P.TensorDataEnd(), 3))
    header_, msg = peer.recv()
    assert isinstance(msg, P.TensorPutAck) and header_.stream_id == 3
    k, v, _ = cache.gather([server.kv_sequences["good"]], 0)
    assert k.numpy().tobytes() + v.numpy().tobytes() == rows.tobytes()


def test_put_over_the_limit_is_refused_and_its_data_skipped(start: Start) -> None:
    server = serving(start, max_put_bytes=64)
    peer = RawPeer(server.url)
    peer.hello()
    peer.send(put_header(2, "big", 128))
    assert peer.recv_error() == (2, P.ErrorCode.MESSAGE_TOO_LARGE)  # before any data
    peer.send(data_frame(2, 0, bytes(128)) + P.encode(P.TensorDataEnd(), 2))
    peer.send_msg(P.Ping(), 3)
    assert isinstance(peer.recv()[1], P.Pong)
    assert "big" not in server.registry


def test_data_frames_outside_a_put_close_the_connection(start: Start) -> None:
    server = serving(start)
    peer = RawPeer(server.url)
    peer.hello()
    peer.send(data_frame(2, 0, bytes(8)))
    assert peer.recv_error() == (2, P.ErrorCode.INVALID_MESSAGE)
    assert peer.closed_by_peer()


def test_connections_past_the_limit_are_told_busy(start: Start) -> None:
    server = serving(start, max_connections=2)
    held = [hg.connect(server.url) for _ in range(2)]
    peer = RawPeer(server.url)
    assert peer.recv_error() == (1, 0xF1)
    held[0].close()
    time.sleep(0.3)
    still_serves(server)
    held[1].close()


def test_close_stops_everything(start: Start) -> None:
    server = serving(start)
    client = hg.connect(server.url)
    server.close()
    with pytest.raises(TransportError):
        client.get("a")
    with pytest.raises(TransportError):
        hg.connect(server.url, timeout=2)


# -- a lying server ---------------------------------------------------------------------------
_FAKES: list[threading.Thread] = []  # the fake servers of the running test


@pytest.fixture(autouse=True)
def _fake_servers_end_with_their_test() -> Iterator[None]:
    """A fake server's thread (and its sockets) is gone when its test ends, not later, in
    whichever test runs next (one counting its process's open files)."""
    yield
    while _FAKES:
        _FAKES.pop().join(10)


def fake_server(script: Callable[[socket.socket], None]) -> str:
    """A one-connection server that answers the hello, then runs ``script``."""
    listener = socket.create_server(("127.0.0.1", 0))

    def run() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(1 << 16)  # the CLIENT_HELLO
            conn.sendall(P.encode(P.ServerHello(1, 1 << 20, 0, (), (0,), ()), 1))
            conn.recv(1 << 16)  # the TENSOR_REQUEST on stream 2
            script(conn)
            time.sleep(0.5)
        listener.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    _FAKES.append(thread)
    return f"hurray://127.0.0.1:{listener.getsockname()[1]}"


def descriptor(total: int, nbytes: int | None = None) -> bytes:
    t = hg.from_numpy(np.zeros(total, np.uint8))
    return P.encode(P.TensorDescriptorMsg(t.descriptor_bytes,
                                          total if nbytes is None else nbytes), 2)


LIES: dict[str, tuple[Callable[[socket.socket], None], int]] = {
    "total_mismatch": (lambda s: s.sendall(descriptor(16, 20)), P.ErrorCode.INVALID_MESSAGE),
    "huge": (lambda s: s.sendall(descriptor(1 << 20)), P.ErrorCode.MESSAGE_TOO_LARGE),
    "gap": (lambda s: s.sendall(descriptor(16) + data_frame(2, 4, bytes(12))),
            P.ErrorCode.INVALID_MESSAGE),
    "past_total": (lambda s: s.sendall(descriptor(16) + data_frame(2, 0, bytes(20))),
                   P.ErrorCode.INVALID_MESSAGE),
    "early_end": (lambda s: s.sendall(descriptor(16) + data_frame(2, 0, bytes(8))
                                      + P.encode(P.TensorDataEnd(), 2)),
                  P.ErrorCode.INVALID_MESSAGE),
    "wrong_stream": (lambda s: s.sendall(descriptor(16).replace(b"\x02\0\0\0", b"\x03\0\0\0", 1)),
                     P.ErrorCode.INVALID_MESSAGE),
    "shard": (lambda s: s.sendall(P.encode(P.TensorDescriptorMsg(
        hg.from_numpy(np.zeros(4, np.uint8)).descriptor_bytes, 4, 1, 2), 2)),
        P.ErrorCode.SHARD_MISMATCH),
}


@pytest.mark.parametrize("case", sorted(LIES))
def test_client_refuses_a_lying_server(case: str) -> None:
    script, code = LIES[case]
    client = hg.connect(fake_server(script), max_tensor_bytes=1 << 16, timeout=5)
    with pytest.raises(ProtocolError) as info:
        client.get("k")
    assert not isinstance(info.value, RemoteError) and info.value.code == code, info.value
    with pytest.raises(TransportError):  # a connection out of step is closed
        client.get("k")


def test_server_error_message_is_a_remote_error_with_its_code() -> None:
    url = fake_server(lambda s: s.sendall(P.encode(P.ErrorMsg(0xF3, "custom trouble"), 2)))
    with hg.connect(url, timeout=5) as client, pytest.raises(RemoteError) as info:
        client.get("k")
    assert info.value.code == 0xF3 and info.value.peer_message == "custom trouble"


def test_frame_header_is_checked_before_allocating() -> None:
    big = struct.pack("<III", P.MessageType.TENSOR_DESCRIPTOR, 2, 0xFFFFFFFF)
    client = hg.connect(fake_server(lambda s: s.sendall(big)), max_message_size=1 << 20,
                        timeout=5)
    with pytest.raises(ProtocolError) as info:
        client.get("k")
    assert info.value.code == P.ErrorCode.MESSAGE_TOO_LARGE


# -- the kernel's own time limits (plain sockets block in recv/send) --------------------------
def test_an_idle_client_is_cut_off_at_the_idle_timeout(start: Start) -> None:
    """idle_timeout 0.5 s under a 5 s message timeout: the kernel's receive timeout must
    not pass the shorter deadline (armed at timeout / 2 it would wait 2.5 s)."""
    server = serving(start, idle_timeout=0.5, timeout=5.0)
    peer = RawPeer(server.url)
    peer.hello()
    began = time.monotonic()
    assert peer.closed_by_peer()
    assert 0.45 < time.monotonic() - began < 1.5
    still_serves(server)


def test_a_silent_server_is_cut_off_at_the_client_timeout() -> None:
    """A server that stops answering ends a get at the client's timeout: the first get
    (the general receive) and the same get again (one receive of the expected answer)."""
    t = hg.from_numpy(VALUES)
    data = t.buffers[0].numpy().tobytes()
    answer = (P.encode(P.TensorDescriptorMsg(declare(t.descriptor, 0, 0, 0), len(data)), 2)
              + data_frame(2, 0, data) + P.encode(P.TensorDataEnd(), 2))
    for repeat in (False, True):
        done = threading.Event()

        def silent(conn: socket.socket, repeat: bool = repeat, done: threading.Event = done
                   ) -> None:
            if repeat:  # the first get's answer, then the same request again
                conn.sendall(answer)
                conn.recv(1 << 16)
            done.wait(2.5)  # (then the connection closes: long after the client's limit)

        url = fake_server(silent)
        client = hg.connect(url, timeout=0.6)
        if repeat:
            assert client.get("a").numpy().tolist() == VALUES.tolist()
        began = time.monotonic()
        with pytest.raises(TransportError):
            client.get("a")
        assert 0.55 < time.monotonic() - began < 1.8, repeat
        done.set()
        client.close()


@pytest.mark.parametrize("ring", ["pinned", "none"])
def test_a_server_gone_mid_device_get_leaves_nothing_held(
        ring: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cut off after 3 MiB of 4 (the pinned ring through slots of 1 MiB, or lavapipe's mapped
    destination written in place): a TransportError, the ring's slots and the destination
    back in the pool."""
    from hurray_gpu.net import staging as net_staging

    try:
        dev = hg.device("vulkan")
    except hg.BackendUnavailableError as exc:
        skip_or_fail(f"no Vulkan device ({exc})", "install mesa-vulkan-drivers")
    if ring == "pinned":  # device memory the host cannot address, as on a discrete GPU
        as_discrete(monkeypatch, dev)
    monkeypatch.setattr(net_staging, "STAGING_SLOT", 1 << 20)
    dev.allocator.free_cache()
    live = dev.allocator.allocated_bytes  # other tests' buffers in this process
    total = 4 << 20

    def script(s: socket.socket) -> None:
        s.sendall(descriptor(total) + b"".join(
            data_frame(2, off, bytes(1 << 20)) for off in range(0, 3 << 20, 1 << 20)))

    with hg.connect(fake_server(script), timeout=5) as client, \
            pytest.raises(TransportError, match="closed"):
        client.get("k", device=dev)
    assert dev.allocator.allocated_bytes == live
    slots = dev.allocator._pool.get((1 << 20, hg.MemoryClass.HOST_PINNED), [])
    assert len(slots) == (3 if ring == "pinned" else 0)
    assert len(dev.allocator._pool.get((total, hg.MemoryClass.STANDARD), [])) == 1


def test_a_refused_connection_leaves_no_socket_to_the_collector(tmp_path: Path) -> None:
    """Nothing listens at the path: each failed connect closes its socket itself (one left to
    the garbage collector would warn, and hold its descriptor until collected)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        for _ in range(3):
            with pytest.raises(TransportError, match="cannot connect"):
                hg.connect(f"hurray+unix://{tmp_path / 'nobody.sock'}")
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]
