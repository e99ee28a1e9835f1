"""A repeated get on both sides: the server's prepared answer and the client's expectation of
it come from one framing plan, so they must be byte for byte what the general path sends; a
client whose server answers otherwise (another framing, a new descriptor, an ERROR or a PING
in the middle) must still get exactly what was sent."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.format import protocol as P
from hurray_gpu.format.descriptor import BufferHandle, RowMajor, TensorDescriptor
from hurray_gpu.format.descriptor.buffers import DeviceTag
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.net.framing import declare
from hurray_gpu.parts import assemble
from hurray_gpu.runtime.hostmem import host_alignment
from tests._support import stable_rng
from tests.hurray._io_samples import quantized_per_channel
from tests.net.conftest import RawPeer, Start, data_frame


def _bytes(seed: int, n: int) -> np.ndarray:
    return stable_rng(seed).integers(0, 256, n, dtype=np.uint8)


def _answer_bytes(peer: RawPeer, stream: int) -> bytes:
    """The raw bytes of one answer, up to and including its DATA_END."""
    out = b""
    while True:
        head = peer._exact(P.HEADER_SIZE)
        header = P.decode_header(head, 1 << 30)
        assert header.stream_id == stream
        out += head + peer._exact(header.length)
        if header.type == P.MessageType.TENSOR_DATA_END:
            return out


def _by_hand(t: Any, stream: int, frame: int) -> bytes:
    """The answer to a get of ``t`` assembled from the codec's pieces, frame by frame."""
    sizes = [b.nbytes for b in t.buffers]
    out = P.encode(P.TensorDescriptorMsg(declare(t.descriptor, DeviceTag.CPU, 0, 0),
                                         sum(sizes)), stream)
    base = 0
    for buf, size in zip(t.buffers, sizes, strict=True):
        data = buf.numpy().tobytes()
        for start in range(0, size, frame):
            out += P.data_header(stream, base + start, len(data[start:start + frame]))
            out += data[start:start + frame]
        base += size
    return out + P.encode(P.TensorDataEnd(), stream)


@pytest.mark.parametrize("peer_max", [4096, P.DEFAULT_MAX_MESSAGE])
def test_first_and_repeated_answers_are_the_same_bytes(start: Start, peer_max: int) -> None:
    """The general path's answer (stream 2) and the prepared one (streams 3, 9) equal the
    codec's messages assembled by hand; a quantized tensor has three buffers, and a peer
    accepting 4 KiB messages gets several frames per buffer."""
    tensors = {"bytes": hg.from_numpy(_bytes(2, 10_000)), "q": quantized_per_channel()}
    assert len(tensors["q"].buffers) == 3
    server, _ = start(dict(tensors))
    peer = RawPeer(server.url)
    peer.hello(max_message_size=peer_max)
    frame = min(16 << 20, peer_max - 8)
    stream = 2
    for key, t in tensors.items():
        request = P.TensorRequest(key, (), 0, 0, 0)
        for _ in range(3):
            peer.send_msg(request, stream)
            assert _answer_bytes(peer, stream) == _by_hand(t, stream, frame), (key, stream)
            stream += 3
    peer.close()


def test_the_client_expects_what_the_server_sends(start: Start) -> None:
    """The client's remembered answer to a repeated get (its messages stamped with a stream
    id, the data ranges filled with the tensor's bytes) is the server's answer, byte for
    byte, and the repeat is taken from it."""
    t = quantized_per_channel()
    server, _ = start({"q": t})
    with hg.connect(server.url, max_message_size=4096) as client:
        assert not client._repeats
        client.get("q")
        (request, plan), = client._repeats.values()
        assert bytes(request[:4]) == P.MessageType.TENSOR_REQUEST.to_bytes(4, "little")
        answer = plan[5]
        assert answer is not None
        data = [b.numpy().tobytes() for b in t.buffers]
        expected = b"".join(data[p[0]][p[1]:p[2]] if isinstance(p, tuple) else bytes(p)
                            for p in answer.frames.pieces)
    stream = 5
    peer = RawPeer(server.url)
    peer.hello(max_message_size=4096)
    peer.send_msg(P.TensorRequest("q", (), 0, 0, 0), stream)
    got = _answer_bytes(peer, stream)
    peer.close()
    restamped = bytearray(expected)
    at = 0
    while at < len(restamped):  # the plan was stamped with the client's last stream id
        restamped[at + 4:at + 8] = stream.to_bytes(4, "little")
        at += P.HEADER_SIZE + int.from_bytes(restamped[at + 8:at + 12], "little")
    assert bytes(restamped) == got == _by_hand(t, stream, 4088)


# -- a scripted server: the client's repeated get against answers it did not expect --------
Answer = Callable[[int], bytes]


class Scripted:
    """Answers the hello, then the i-th request with ``answers[i](stream)``; PONGs from the
    client are collected in ``pongs``."""

    def __init__(self, answers: list[Answer], cut: int = 0) -> None:
        self.answers, self.pongs, self.cut = answers, 0, cut  # cut: see _serve
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"hurray://127.0.0.1:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        conn.settimeout(10.0)

        def message() -> tuple[P.Header, Any]:
            header = P.decode_header(_exact(conn, P.HEADER_SIZE), 1 << 30)
            return header, P.decode(header, _exact(conn, header.length))

        with conn:
            message()
            conn.sendall(P.encode(P.ServerHello(1, P.DEFAULT_MAX_MESSAGE, 0, (), (0,), ()), 1))
            for answer in self.answers:
                header, msg = message()
                while isinstance(msg, P.Pong):
                    self.pongs += 1
                    header, msg = message()
                assert isinstance(msg, P.TensorRequest)
                data = answer(header.stream_id)
                if self.cut:  # its first ``cut`` bytes, a pause, then the rest
                    conn.sendall(data[:self.cut])
                    time.sleep(0.05)
                    data = data[self.cut:]
                conn.sendall(data)
            with pytest.raises((ConnectionError, AssertionError, OSError)):
                while True:  # the client's last PONG, then its close
                    header, msg = message()
                    assert isinstance(msg, P.Pong)
                    self.pongs += 1


def _exact(conn: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = conn.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def _descriptor(data: np.ndarray, stream: int) -> bytes:
    raw = declare(hg.from_numpy(data).descriptor, DeviceTag.CPU, 0, 0)
    return P.encode(P.TensorDescriptorMsg(raw, data.nbytes), stream)


def _answer(data: np.ndarray, frames: int = 1, between: bytes = b"") -> Answer:
    """The answer to a get of ``data`` in ``frames`` frames, ``between`` after the
    descriptor."""
    def make(stream: int) -> bytes:
        raw, cut = data.tobytes(), -(-data.nbytes // frames)
        body = b"".join(data_frame(stream, at, raw[at:at + cut])
                        for at in range(0, len(raw), cut))
        return _descriptor(data, stream) + between + body + P.encode(P.TensorDataEnd(), stream)
    return make


def _error(after_descriptor: np.ndarray | None) -> Answer:
    def make(stream: int) -> bytes:
        head = b"" if after_descriptor is None else _descriptor(after_descriptor, stream)
        return head + P.encode(P.ErrorMsg(P.ErrorCode.UNKNOWN_TENSOR, "gone"), stream)
    return make


A, B = _bytes(10, 6000), _bytes(11, 6000)
C = stable_rng(12).standard_normal((5, 7)).astype(np.float32)


@pytest.mark.parametrize("size", [6000, 100_000])  # within the read-ahead buffer, or not
@pytest.mark.parametrize("case", ["new bytes", "new dtype", "new descriptor", "two frames",
                                  "ping", "error", "error after the descriptor"])
def test_a_repeated_get_takes_whatever_the_server_answers(case: str, size: int) -> None:
    """The first get teaches the client the answer; the second is answered otherwise; the
    third as at first: every result is what was sent, and the connection stays in step."""
    first, other = _bytes(10, size), _bytes(11, size)
    second, want = {
        "new bytes": (_answer(other), other),  # the same descriptor, new bytes: never stale
        # A descriptor message of the same length (its header matches): compared whole.
        "new dtype": (_answer(other.view(np.int8)), other.view(np.int8)),
        "new descriptor": (_answer(C), C),
        "two frames": (_answer(first, frames=2), first),
        "ping": (_answer(first, between=P.encode(P.Ping(), 1)), first),
        "error": (_error(None), None),
        "error after the descriptor": (_error(first), None),
    }[case]
    server = Scripted([_answer(first), second, _answer(first)])
    with hg.connect(server.url) as client:
        assert np.array_equal(client.get("k").numpy(), first)
        assert client._repeats  # the next get of "k" is a repeat
        if want is None:
            with pytest.raises(hg.RemoteError) as err:
                client.get("k")
            assert err.value.code == P.ErrorCode.UNKNOWN_TENSOR
        else:
            got = client.get("k").numpy()
            assert got.dtype == want.dtype and np.array_equal(got, want)
        assert np.array_equal(client.get("k").numpy(), first)
    server.thread.join(10)
    assert server.pongs == (1 if case == "ping" else 0)


@pytest.mark.parametrize("cut", [5, 40, 90, 3000, 6105])  # in the descriptor's header,
# in its payload, in the data frame's header, in the data, in DATA_END
@pytest.mark.parametrize("second", ["new bytes", "error after the descriptor", "ping"])
def test_a_repeated_small_get_arriving_in_two_parts(cut: int, second: str) -> None:
    """Every answer arrives in two parts with a pause between, cut at ``cut``: a repeat
    framed as before (new bytes: results come from pooled memory that held the last ones)
    is received in pieces, its runs compared part by part; one that differs only after the
    cut is received whole by the general path; the connection stays in step."""
    answer, want = {"new bytes": (_answer(B), B), "error after the descriptor": (_error(A), None),
                    "ping": (_answer(B, between=P.encode(P.Ping(), 1)), B)}[second]
    assert len(_answer(A)(2)) > cut
    server = Scripted([_answer(A), answer, _answer(A)], cut=cut)
    with hg.connect(server.url) as client:
        assert np.array_equal(client.get("k").numpy(), A)
        assert client._repeats
        if want is None:
            with pytest.raises(hg.RemoteError) as err:
                client.get("k")
            assert err.value.code == P.ErrorCode.UNKNOWN_TENSOR
        else:
            assert np.array_equal(client.get("k").numpy(), want)
        assert np.array_equal(client.get("k").numpy(), A)
    server.thread.join(10)
    assert server.pongs == (1 if second == "ping" else 0)


def test_a_repeated_get_answered_out_of_order_closes_the_connection() -> None:
    """A data frame that does not start where the last one ended is refused in a repeat as
    in a first get (here its header is the expected one: only its offset differs)."""
    def gap(stream: int) -> bytes:
        return _descriptor(A, stream) + data_frame(stream, 8, A.tobytes()) + \
            P.encode(P.TensorDataEnd(), stream)

    server = Scripted([_answer(A), gap])
    with hg.connect(server.url) as client:
        client.get("k")
        with pytest.raises(hg.ProtocolError):
            client.get("k")
        with pytest.raises(hg.TransportError):
            client.get("k")


def test_a_kept_view_of_a_dropped_result_survives_later_gets(start: Start) -> None:
    """Results come from the cpu pool: a NumPy view of a result pins its memory, so gets
    after the result itself was dropped (which reuse pooled memory) never write into it."""
    first, other = _bytes(20, 4096), _bytes(21, 4096)
    server, _ = start({"a": hg.from_numpy(first), "b": hg.from_numpy(other)})
    with hg.connect(server.url) as client:
        for _ in range(3):
            client.get("a")
        kept = client.get("a").numpy()
        for _ in range(5):
            assert np.array_equal(client.get("b").numpy(), other)
        assert np.array_equal(kept, first)


def test_a_dropped_result_declaring_a_large_alignment_comes_back_in_the_same_memory(
        start: Start) -> None:
    """A tensor whose buffer declares 4 KiB alignment (kept by its host copy at 4 MiB) is
    received into the cpu pool's memory like any other: dropped and asked for again, it
    arrives in the same warm, aligned memory; a kept NumPy view still pins it."""
    n = 4 << 20
    data = _bytes(24, n)
    desc = TensorDescriptor(by_name("uint8"), (n,), RowMajor(), (BufferHandle(n, 4096),))
    server, _ = start({"a": assemble(desc, [data])})
    with hg.connect(server.url) as client:
        first = client.get("a")
        address = first.buffers[0].array.ctypes.data
        assert address % host_alignment(4096, n) == 0 and host_alignment(4096, n) == 4096
        assert np.array_equal(first.numpy(), data)
        del first
        again = client.get("a")
        assert again.buffers[0].array.ctypes.data == address
        assert np.array_equal(again.numpy(), data)
        kept = again.numpy()
        del again
        assert client.get("a").buffers[0].array.ctypes.data != address
        assert np.array_equal(kept, data)


def test_only_answers_of_bounded_size_are_remembered(start: Start) -> None:
    """An answer of more data frames than the client keeps for a repeat (here 300 frames of
    a peer accepting 4 KiB messages) is received the general way every time."""
    big, small = _bytes(22, 4088 * 300), _bytes(23, 4088 * 200)
    server, _ = start({"big": hg.from_numpy(big), "small": hg.from_numpy(small)})
    with hg.connect(server.url, max_message_size=4096) as client:
        for _ in range(2):
            assert np.array_equal(client.get("big").numpy(), big)
        assert not client._repeats
        for _ in range(2):
            assert np.array_equal(client.get("small").numpy(), small)
        assert list(client._repeats) == [("small", False, None)]
