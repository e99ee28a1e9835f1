"""Shared-memory handoff (hurray_gpu.net.ipc): zero-copy attach, releases, SIGKILL of either
side without leaks, and hostile handoff messages."""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.errors import HurrayFormatError, ProtocolError, TransportError
from hurray_gpu.format import codec
from hurray_gpu.format import descriptor as d
from hurray_gpu.format.descriptor.buffers import DeviceTag, SyncMode
from hurray_gpu.net import ipc
from hurray_gpu.net.framing import tensor_nodes
from hurray_gpu.runtime.memory import MemoryClass
from hurray_gpu.tensor import Tensor
from tests._support import stable_rng

ROOT = Path(__file__).resolve().parents[2]
SEGMENT = "memfd:hurray_gpu-ipc"
ENV = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")


@pytest.fixture
def sock_path() -> Iterator[str]:
    # Unix socket paths are limited to ~107 bytes: pytest's tmp_path can be longer.
    directory = tempfile.mkdtemp(prefix="hg-ipc-", dir="/tmp")
    yield os.path.join(directory, "s")
    shutil.rmtree(directory, ignore_errors=True)


def _segments(pid: int | str = "self") -> tuple[int, int]:
    """(open fds, mappings) of hurray_gpu IPC segments in process ``pid``."""
    fd_dir = f"/proc/{pid}/fd"
    fds = 0
    for name in os.listdir(fd_dir):
        with contextlib.suppress(OSError):  # closed while listing
            fds += SEGMENT in os.readlink(os.path.join(fd_dir, name))
    with open(f"/proc/{pid}/maps") as f:
        maps = sum(SEGMENT in line for line in f)
    return fds, maps


def _samples() -> dict[str, Any]:
    rng = np.random.default_rng(21)
    dense = hg.from_numpy(rng.standard_normal((256, 300)).astype(np.float32))
    q = hg.quantize(rng.standard_normal(4096).astype(np.float32), "per_block", block_size=32)
    lone = hg.from_numpy(np.array([1, 2, 3], dtype=np.int16))
    group = Tensor.from_parts(codec.encode(_group_head()), [], [lone, dense])
    return {"dense": dense, "quantized": q, "composite": group,
            "empty": hg.from_numpy(np.zeros((0, 3), dtype=np.float32))}


def _group_head() -> Any:
    """A group composite head of two members (a group's members may be any tensors)."""
    return d.TensorDescriptor(hg.by_name("float32"), (2, 4), d.Composite(3, 0, 2), ())


def _bytes(t: Any) -> list[bytes]:
    return [b.numpy().tobytes() for b in t.buffers] + [x for m in t.members for x in _bytes(m)]


def _same(a: Any, b: Any) -> bool:
    """Same data and the same descriptor apart from the buffer handles' declarations."""
    da, db = a.descriptor, b.descriptor
    return (_bytes(a) == _bytes(b) and (da.dtype, da.shape, da.layout, da.quantization)
            == (db.dtype, db.shape, db.layout, db.quantization)
            and [h.byte_size for h in da.buffers] == [h.byte_size for h in db.buffers]
            and len(a.members) == len(b.members)
            and all(_same(x, y) for x, y in zip(a.members, b.members, strict=True)))


SAMPLES = _samples()


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_attach_maps_the_segment_without_a_copy(name: str, sock_path: str) -> None:
    t = SAMPLES[name]
    with hg.share(t, sock_path) as shared:
        got = hg.attach(sock_path)
        assert _same(got, t)
        nodes = [got, *got.members]
        for node in nodes:
            for b, h in zip(node.buffers, node.descriptor.buffers, strict=True):
                assert b.readonly and b.is_host
                if h.byte_size:
                    assert h.alignment == 4096 and b.array.ctypes.data % 4096 == 0
        if name == "dense":
            # Zero-copy: the buffer lies inside this process's mapping of the segment.
            ptr = got.buffers[0].array.ctypes.data
            with open("/proc/self/maps") as f:
                spans = [tuple(int(x, 16) for x in line.split()[0].split("-"))
                         for line in f if SEGMENT in line]
            assert any(lo <= ptr and ptr + t.nbytes <= hi for lo, hi in spans)
            assert np.array_equal(got.numpy(), t.numpy())
        assert shared.active == 1 and shared.served == 1
        got.release()
        assert shared.wait_released(10) and shared.active == 0


def test_device_tensors_arrive_as_host_tensors(sock_path: str) -> None:
    """share(host=True), or a device that shares no memory (OpenCL), copies device buffers
    into the segment: the consumer gets host memory."""
    t = SAMPLES["quantized"]
    others = [dev for dev in hg.devices() if dev.spec != "cpu:0"]
    assert others  # the NumPy reference device is always there
    for dev in others:
        on_dev = t.to(dev)
        for host in (True, False) if dev.ipc_class is None else (True,):
            with hg.share(on_dev, sock_path, host=host) as shared:
                assert shared.device.kind == "cpu"
                got = hg.attach(sock_path)
            assert got.is_host and _same(got, t), dev
            assert {h.device_tag for h in got.descriptor.buffers} == {hg.DeviceTag.CPU}
            got.release()


def test_many_consumers_and_release_by_collection(sock_path: str) -> None:
    t = SAMPLES["dense"]
    with hg.share(t, sock_path) as shared:
        a, b = hg.attach(sock_path), hg.attach(sock_path)
        assert shared.wait_released(0.2) is False and shared.active == 2
        a.release()
        deadline = time.monotonic() + 10
        while shared.active != 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert shared.active == 1
        view = b.buffers[0].array
        del b  # dropping the tensor releases it; the array keeps the mapping readable
        gc.collect()
        assert shared.wait_released(10)
        assert np.array_equal(view.view(np.float32).reshape(256, 300), t.numpy())
        assert shared.served == 2
    del view, a
    gc.collect()
    assert _segments() == (0, 0)


def test_segment_is_sealed_against_changes(sock_path: str) -> None:
    t = SAMPLES["dense"]
    with hg.share(t, sock_path):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(sock_path)
        _, fds, _, _ = socket.recv_fds(sock, 8, 1)
        try:
            with pytest.raises(PermissionError):
                os.ftruncate(fds[0], 1)  # shrinking would fault every consumer's mapping
            with pytest.raises(PermissionError):
                os.pwrite(fds[0], b"\xff", 0)
        finally:
            os.close(fds[0])
            sock.close()


_PRODUCER = """
import sys, time, numpy as np, hurray_gpu as hg
t = hg.from_numpy(np.arange(1 << 20, dtype=np.float32))
shared = hg.share(t, sys.argv[1])
print("ready", flush=True)
time.sleep(600)
"""

_CONSUMER = """
import sys, time, hurray_gpu as hg
t = hg.attach(sys.argv[1])
print(float(t.numpy()[-1]), flush=True)
time.sleep(600)
"""


def _spawn(script: str, path: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", script, path], stdout=subprocess.PIPE,
                            text=True, env=ENV)
    assert proc.stdout is not None
    return proc


def test_sigkilled_consumer_counts_as_released(sock_path: str) -> None:
    t = hg.from_numpy(np.arange(1 << 20, dtype=np.float32))
    with hg.share(t, sock_path) as shared:
        proc = _spawn(_CONSUMER, sock_path)
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == str(
                float((1 << 20) - 1))
            assert _segments(proc.pid) == (1, 1)  # mapped (Python's mmap keeps one fd)
            assert shared.active == 1
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
        finally:
            proc.kill()
        assert shared.wait_released(10) and shared.active == 0
        assert _segments() == (1, 0)  # only the producer's own descriptor
    assert _segments() == (0, 0)


def test_sigkilled_producer_leaves_the_mapping_valid(sock_path: str) -> None:
    proc = _spawn(_PRODUCER, sock_path)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        got = hg.attach(sock_path)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        proc.kill()
    assert _segments() == (1, 1)  # the mapping (and the fd Python's mmap keeps with it)
    assert np.array_equal(got.numpy(), np.arange(1 << 20, dtype=np.float32))
    got.release()  # the producer is gone: the release signal goes nowhere, quietly
    del got
    gc.collect()
    assert _segments() == (0, 0)  # the last mapping went: the kernel frees the pages


def test_nothing_serving_is_a_transport_error(sock_path: str) -> None:
    with pytest.raises(TransportError, match="Fix: start the producer"):
        hg.attach(sock_path, timeout=1)


# -- hostile producers ----------------------------------------------------------------------

def _memfd(size: int, seal: bool = True, data: bytes = b"") -> int:
    import fcntl

    fd = os.memfd_create("hurray_gpu-ipc", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, size)
    os.pwrite(fd, data, 0)
    if seal:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW
                    | fcntl.F_SEAL_WRITE)
    return fd


def _message(nodes: list[tuple[int, bytes]], record: bytes = b"") -> bytes:
    body = struct.pack("<I", len(nodes)) + b"".join(
        struct.pack("<II", m, len(raw)) + raw for m, raw in nodes)
    body += struct.pack("<I", len(record)) + record
    return b"HIP1" + struct.pack("<I", len(body)) + body


def _fake_producer(path: str, send: Callable[[socket.socket], None]) -> threading.Thread:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)

    def run() -> None:
        conn, _ = listener.accept()
        try:
            send(conn)
            conn.recv(1)  # hold the connection until the consumer gives up
        except OSError:
            pass
        finally:
            conn.close()
            listener.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _dense_desc(n: int) -> bytes:
    return hg.from_numpy(np.zeros(n, dtype=np.float32)).descriptor_bytes


def _with_fd(payload: bytes, fd_size: int | None = 4096, seal: bool = True,
             nfds: int = 1, eof: bool = False) -> Callable[[socket.socket], None]:
    """A forged handoff: ``payload`` with ``nfds`` memfds of ``fd_size`` bytes (``eof``: then
    the producer stops sending, as one that died)."""
    def send(conn: socket.socket) -> None:
        fds = [_memfd(fd_size, seal) for _ in range(nfds)] if fd_size is not None else []
        try:
            socket.send_fds(conn, [payload], fds) if fds else conn.sendall(payload)
        finally:
            for fd in fds:
                os.close(fd)
        if eof:
            conn.shutdown(socket.SHUT_WR)
    return send


HOSTILE: dict[str, tuple[Callable[[socket.socket], None], type[Exception], str | None]] = {
    # 1025 floats need 4100 bytes; the segment holds 4096.
    "descriptor larger than the segment": (
        _with_fd(_message([(0, _dense_desc(1025))])), HurrayFormatError, "need 4100 bytes"),
    "two buffers past one page": (
        _with_fd(_message([(2, codec.encode(_group_head())), (0, _dense_desc(4)),
                           (0, _dense_desc(4))])), HurrayFormatError, "need 4112 bytes"),
    "bad magic": (_with_fd(b"XXXX" + bytes(8)), ProtocolError, "magic"),
    "truncated header": (_with_fd(b"HIP1\x05", eof=True), TransportError, "header"),
    "truncated body": (_with_fd(_message([(0, _dense_desc(4))])[:-5], eof=True), ProtocolError,
                       "truncated"),
    "oversized length": (_with_fd(b"HIP1" + struct.pack("<I", 0xFFFFFFFF)), ProtocolError,
                         "exceeds"),
    "no fd": (_with_fd(_message([(0, _dense_desc(4))]), fd_size=None), ProtocolError,
              "no segment"),
    "two fds": (_with_fd(_message([(0, _dense_desc(4))]), nfds=2), ProtocolError,
                "more than one"),
    "unsealed segment": (_with_fd(_message([(0, _dense_desc(4))]), seal=False), ProtocolError,
                         "sealed"),
    "garbage descriptor": (_with_fd(_message([(0, b"\xff" * 40)])), HurrayFormatError, None),
    "node count past the body": (_with_fd(b"HIP1" + struct.pack("<II", 4, 3)), ProtocolError,
                                 "malformed"),
    "descriptor length past the body": (
        _with_fd(_message([(0, _dense_desc(4))])[:16] + struct.pack("<I", 1 << 20)
                 + _message([(0, _dense_desc(4))])[20:]), ProtocolError, "malformed"),
    "nesting too deep": (_with_fd(_message([(1, codec.encode(_group_head()))] * 12
                                           + [(0, _dense_desc(0))])), ProtocolError, "nests"),
    "member count past the nodes": (_with_fd(_message([(5, codec.encode(_group_head()))])),
                                    ProtocolError, "exceed its nodes"),
    "extra nodes": (_with_fd(_message([(0, _dense_desc(4)), (0, _dense_desc(0))])),
                    ProtocolError, "outside"),
    "silent producer": (lambda conn: None, TransportError, "did not arrive"),
    "host segment declared as device memory": (
        _with_fd(_message([(0, ipc._ipc_raw(codec.decode(_dense_desc(4)), _dense_desc(4),
                                            DeviceTag.VULKAN, MemoryClass.PEER,
                                            SyncMode.PRODUCER_SYNCED))])),
        HurrayFormatError, "declares device_tag 0x"),
    # Read with the header in one go: what follows the declared message is no handoff.
    "bytes past the message": (_with_fd(_message([(0, _dense_desc(4))]) + b"xy"),
                               ProtocolError, "2 bytes follow"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_handoff_is_a_typed_error(case: str, sock_path: str) -> None:
    send, error, match = HOSTILE[case]
    thread = _fake_producer(sock_path, send)
    gc.collect()  # an earlier test's segment in a reference cycle: gone now, not counted
    before = _segments()
    with pytest.raises(error, match=match) as info:
        # the silent producer times out; the others answer at once (generous for a busy machine)
        hg.attach(sock_path, timeout=1 if case == "silent producer" else 10)
    assert "Fix:" in str(info.value)
    del info  # its traceback would keep a mapping alive
    gc.collect()
    thread.join(5)  # the forger closes its own copies of the fds after sending them
    assert _segments() == before == (0, 0)  # nothing mapped, every received fd closed


def test_forged_messages_follow_the_producers_format(sock_path: str) -> None:
    # The hostile cases above forge the documented wire format: a real handoff parses the same.
    t = SAMPLES["composite"]
    with hg.share(t, sock_path) as shared:
        nodes, record = ipc._parse(shared._message[8:])
    assert [m for m, _ in nodes] == [2, 0, 0] and record == b""
    assert _message(nodes) == shared._message


# -- the small-handoff fast paths -----------------------------------------------------------

_DECLARATIONS = [(DeviceTag.CPU, MemoryClass.STANDARD, SyncMode.PRODUCER_SYNCED),
                 (DeviceTag.VULKAN, MemoryClass.PEER, SyncMode.PRODUCER_SYNCED)]


def test_memoized_descriptors_are_the_fresh_encoding() -> None:
    for t in SAMPLES.values():
        for node in tensor_nodes(t):
            for tag, mclass, mode in _DECLARATIONS:
                args = (node.descriptor, node.descriptor_bytes, tag, mclass, mode)
                ipc._IPC_RAW.clear()
                fresh = ipc._ipc_raw(*args)
                assert ipc._ipc_raw(*args) is fresh  # memoized
                desc = codec.decode(fresh)
                assert desc.shape == node.descriptor.shape and desc.dtype == node.descriptor.dtype
                assert [(h.device_tag, h.memory_class, h.sync_mode, h.byte_size,
                         h.alignment if h.byte_size else 0) for h in desc.buffers] == [
                    (tag, mclass, mode, h.byte_size, 4096 if h.byte_size else 0)
                    for h in node.descriptor.buffers]
    for n in range(300):  # bounded, however many shapes one producer shares
        t = hg.from_numpy(np.zeros(n, np.uint8))
        ipc._ipc_raw(t.descriptor, t.descriptor_bytes, *_DECLARATIONS[0])
        assert len(ipc._IPC_RAW) <= 256


def test_same_shape_of_another_dtype_gets_its_own_descriptor(sock_path: str) -> None:
    """Shares of one shape in turn (float32, then its bits as int32 and uint32): each consumer
    gets its tensor's element type and bytes, never a descriptor memoized for another."""
    data = stable_rng("ipc", "memo").standard_normal(1000).astype(np.float32)
    for arr in (data, data.view(np.int32), data.view(np.uint32), data):
        with hg.share(hg.from_numpy(arr), sock_path) as shared:
            got = hg.attach(sock_path)
            assert got.dtype.name == str(arr.dtype) and got.shape == (1000,)
            assert np.array_equal(got.numpy(), arr)
            got.release()
            assert shared.wait_released(10)


def test_a_handoff_message_larger_than_its_first_read(sock_path: str) -> None:
    """A group of 100 members: descriptors past the first IPC_ALIGN bytes read, which arrive
    in later reads after the ones that came with the fd."""
    rng = stable_rng("ipc", "large message")
    members = [hg.from_numpy(rng.integers(-99, 99, i + 1).astype(np.int16)) for i in range(100)]
    head = d.TensorDescriptor(hg.by_name("float32"), (1,), d.Composite(3, 0, 100), ())
    t = Tensor.from_parts(codec.encode(head), [], members)
    with hg.share(t, sock_path) as shared:
        assert len(shared._message) > ipc.IPC_ALIGN
        got = hg.attach(sock_path)
        assert _same(got, t)
        got.release()
        assert shared.wait_released(10)


def test_close_racing_consumers_leaks_nothing(sock_path: str) -> None:
    """close() takes the sockets from under the loop's handlers (one mutex, no round trip):
    consumers attaching meanwhile get the tensor or a TransportError, and every segment
    descriptor and mapping goes."""
    t = SAMPLES["dense"]
    expected = t.numpy()
    outcomes: list[str] = []

    def consume() -> None:
        try:
            got = hg.attach(sock_path, timeout=10)
        except TransportError:
            outcomes.append("refused")
            return
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            outcomes.append(repr(exc))
            return
        ok = np.array_equal(got.numpy(), expected)
        got.release()
        outcomes.append("attached" if ok else "wrong data")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(20):
            shared = hg.share(t, sock_path)
            threads = [threading.Thread(target=consume) for _ in range(3)]
            for thread in threads:
                thread.start()
            shared.close()
            for thread in threads:
                thread.join(30)
            assert shared.active == 0
    assert len(outcomes) == 60 and set(outcomes) <= {"attached", "refused"}, set(outcomes)
    assert not [w for w in caught if "hurray_gpu ipc" in str(w.message)]
    gc.collect()
    assert _segments() == (0, 0)
