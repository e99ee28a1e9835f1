"""The small-request fast path: read-ahead receives, corked sends, memoised descriptors.

Syscalls are counted by a wrapper around a real socket (nothing is faked: every byte still
goes through the kernel), and what arrives is compared with what was sent.
"""

from __future__ import annotations

import dataclasses
import socket
import threading
from collections import Counter
from typing import Any

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.errors import HurrayFormatError
from hurray_gpu.format import protocol as P
from hurray_gpu.format.descriptor import TensorDescriptor, decode_descriptor
from hurray_gpu.format.descriptor.buffers import DeviceTag
from hurray_gpu.net.framing import declare
from hurray_gpu.net.transport import Connection, recv_data
from tests._support import stable_rng
from tests.net.conftest import Start


class Counting:
    """A real socket whose ``send``/``sendmsg`` (counted together as ``sends``) and
    ``recv_into``/``recvmsg_into`` calls (``receives``) are counted: those that moved bytes.
    (A call that raises BlockingIOError is counted apart, as ``blocked``: a try with
    MSG_DONTWAIT before the peer could take or send the bytes, or a wait that ran out.)"""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.calls = sock, Counter[str]()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.sock, name)
        if name not in ("send", "sendmsg", "recv_into", "recvmsg_into"):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            try:
                done = attr(*args, **kwargs)
            except BlockingIOError:
                self.calls["blocked"] += 1
                raise
            self.calls["sends" if name.startswith("send") else "receives"] += 1
            return done

        return counted


def _pair() -> tuple[Connection, Connection, Counting, Counting]:
    a, b = socket.socketpair()
    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)  # a whole test frame fits
    ca, cb = Counting(a), Counting(b)
    return (Connection(ca, timeout=10.0), Connection(cb, timeout=10.0),  # type: ignore[arg-type]
            ca, cb)


@pytest.mark.parametrize("nbytes", [4096, 100_000])
def test_corked_messages_leave_in_one_sendmsg_and_arrive_whole(nbytes: int) -> None:
    """A descriptor, one data frame and DATA_END: one sendmsg (a large frame is sent from
    the caller's memory in the same sendmsg as the descriptor and DATA_END), received
    bit-exact through the read-ahead buffer (and straight into the destination for the
    large frame)."""
    sender, receiver, out, inp = _pair()
    data = stable_rng(nbytes).integers(0, 256, nbytes, dtype=np.uint8)
    t = hg.from_numpy(data)
    raw = declare(t.descriptor, DeviceTag.CPU, 0, 0)
    with sender.corked():
        sender.send_buffers(2, t.buffers, head=P.TensorDescriptorMsg(raw, nbytes), end=True)
        assert out.calls["sends"] == (0 if nbytes < 1 << 16 else 1)  # small ones queued
    assert out.calls["sends"] == 1
    header, msg = receiver.recv_message()
    assert isinstance(msg, P.TensorDescriptorMsg) and msg.descriptor == raw
    got = np.empty(nbytes, np.uint8)
    recv_data(receiver, 2, [got.data], nbytes)
    assert np.array_equal(got, data)
    # A 4 KiB answer is one recv; a large one reads ahead once, then straight into ``got``.
    assert inp.calls["receives"] <= (1 if nbytes < 1 << 16 else 1 + nbytes // (1 << 15))
    sender.close()
    receiver.close()


def test_read_ahead_keeps_messages_apart_across_buffer_boundaries() -> None:
    """Many messages of odd sizes in one stream, split at every read-ahead boundary,
    come back in order and intact."""
    sender, receiver, _, _ = _pair()
    rng = stable_rng(7)
    keys = ["k" * int(n) for n in rng.integers(1, 3000, 120)]
    with sender.corked():
        for i, key in enumerate(keys):
            sender.send(P.TensorRequest(key, (), 0, 0, 0), i + 2)
    for i, key in enumerate(keys):
        header, msg = receiver.recv_message()
        assert header.stream_id == i + 2 and isinstance(msg, P.TensorRequest)
        assert msg.key == key
    sender.close()
    receiver.close()


def test_a_small_get_is_one_send_and_one_receive_per_side(start: Start) -> None:
    """The server sends a small answer (descriptor, frame, DATA_END) with one sendmsg, and
    the client reads all of a repeated one with one recvmsg_into (the data straight into
    the result)."""
    values = np.arange(1024, dtype=np.float32)
    server, extra = start({"small": hg.from_numpy(values)}, "unix")
    with hg.connect(server.url, **extra) as client:
        counting = Counting(client._conn.sock)
        client._conn.sock = counting  # type: ignore[assignment]
        for _ in range(20):
            assert np.array_equal(client.get("small").numpy(), values)
        counting.calls.clear()
        for _ in range(20):
            client.get("small")
        assert counting.calls["sends"] == 20  # one request each
        assert counting.calls["receives"] <= 25  # before: descriptor, frame, data, END...
        # The receive waits in the kernel: no try before the answer is there, no poll.
        assert counting.calls["blocked"] == 0


def test_a_prepared_answer_larger_than_the_socket_buffer_arrives_whole() -> None:
    """A host-memory answer goes out with one sendmsg; what the socket did not take (a small
    send buffer, a reader slower than the sender) follows from where it stopped."""
    sender, receiver, out, _ = _pair()
    sender.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16 << 10)
    data = stable_rng(9).integers(0, 256, 3 << 20, dtype=np.uint8)
    t = hg.from_numpy(data)
    raw = declare(t.descriptor, DeviceTag.CPU, 0, 0)
    got, whole = np.empty(data.nbytes, np.uint8), []

    def read() -> None:
        _, msg = receiver.recv_message()
        assert isinstance(msg, P.TensorDescriptorMsg) and msg.descriptor == raw
        recv_data(receiver, 2, [got.data], data.nbytes)  # through its TENSOR_DATA_END
        whole.append(True)

    reader = threading.Thread(target=read)
    reader.start()
    sender.send_buffers(2, t.buffers, head=P.TensorDescriptorMsg(raw, data.nbytes), end=True)
    reader.join(30)
    assert whole and np.array_equal(got, data)
    assert out.calls["sends"] > 1  # it did not all fit at once
    sender.close()
    receiver.close()


def test_descriptor_decodes_are_memoised_strictly_and_bounded() -> None:
    """The same small descriptor bytes decode to the same (immutable) object; a failing
    decode is never stored; large descriptors and permissive decodes are not memoised."""
    raw = hg.from_numpy(np.zeros((3, 5), np.float32)).descriptor_bytes
    first = decode_descriptor(raw)
    assert decode_descriptor(bytearray(raw)) is first
    assert decode_descriptor(raw, permissive=True) is not first
    assert decode_descriptor(raw, permissive=True) == first
    bad = raw[:-1] + b"\xff"
    for _ in range(2):
        with pytest.raises(HurrayFormatError):
            decode_descriptor(raw + b"\x00")  # a trailing byte
    with pytest.raises(HurrayFormatError):
        decode_descriptor(bad[:10])
    big = dataclasses.replace(first, version_minor=1, trailing=bytes(3000)).encode()
    assert len(big) > 2048
    assert decode_descriptor(big) is not decode_descriptor(big)
    from hurray_gpu.format.descriptor import model

    assert model._decode_memo.cache_info().maxsize == 256


def test_declare_is_remembered_per_descriptor_and_placement() -> None:
    desc: TensorDescriptor = hg.from_numpy(np.ones(16, np.float16)).descriptor
    once = declare(desc, DeviceTag.CPU, 0, 0)
    assert declare(desc, DeviceTag.CPU, 0, 0) is once
    wider = declare(desc, DeviceTag.CPU, 0, 4096)
    assert wider != once and decode_descriptor(wider).buffers[0].alignment == 4096
    assert decode_descriptor(once).buffers[0].alignment == desc.buffers[0].alignment


def _answer(nbytes: int, seed: int) -> tuple[bytes, np.ndarray, bytes]:
    """A tensor answer on stream 2 as one byte string (descriptor, one frame, DATA_END)."""
    data = stable_rng(seed).integers(0, 256, nbytes, dtype=np.uint8)
    raw = declare(hg.from_numpy(data).descriptor, DeviceTag.CPU, 0, 0)
    wire = (P.encode(P.TensorDescriptorMsg(raw, nbytes), 2) + P.data_header(2, 0, nbytes)
            + data.tobytes() + P.encode(P.TensorDataEnd(), 2))
    return wire, data, raw


def test_a_large_frame_and_its_data_end_take_one_receive() -> None:
    """The receive that brings a large frame's last bytes straight into the destination
    brings what follows (DATA_END) into the read-ahead buffer: two receives in all (the
    descriptor with the first bytes, then the rest), where DATA_END took a third."""
    sender, receiver, _, inp = _pair()
    wire, data, raw = _answer(100_000, 11)
    sender.send_views([wire])
    _, msg = receiver.recv_message()
    assert isinstance(msg, P.TensorDescriptorMsg) and msg.descriptor == raw
    got = np.empty(data.nbytes, np.uint8)
    recv_data(receiver, 2, [got.data], data.nbytes)
    assert np.array_equal(got, data)
    assert inp.calls["receives"] == 2


@pytest.mark.parametrize("back", [*range(0, 26), 40, 9000, 50_000])
def test_a_large_frame_cut_near_its_end_still_arrives_whole(back: int) -> None:
    """The answer arrives in two parts, cut ``back`` bytes before its end (in the data, in
    the frame's last bytes, in every byte of DATA_END): the data lands whole, DATA_END is
    read whole, and a request sent after it is read as the next message."""
    sender, receiver, _, _ = _pair()
    wire, data, _ = _answer(60_000, 12)
    after = P.encode(P.Ping(), 7)
    cut = len(wire) - back

    def send() -> None:
        sender.send_views([wire[:cut]])
        threading.Event().wait(0.02)  # the receiver takes the first part alone
        sender.send_views([wire[cut:] + after])

    writer = threading.Thread(target=send)
    writer.start()
    receiver.recv_message()
    got = np.empty(data.nbytes, np.uint8)
    recv_data(receiver, 2, [got.data], data.nbytes)
    header, msg = receiver.recv_message()
    writer.join(10)
    assert np.array_equal(got, data)
    assert isinstance(msg, P.Ping) and header.stream_id == 7
    sender.close()
    receiver.close()
