"""Device memory handoff (hurray_gpu.net.ipc over Device.ipc_export/ipc_import): Vulkan PEER
memory between two processes on lavapipe, with no host copy; SIGKILL of either side without
leaks; hostile device records; and the CUDA/ROCm record encoding and refusals, which need no
GPU (the CUDA/ROCm handoff itself runs in tests/gpu/test_ipc_cuda.py)."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.backends.cuda import IPC_HANDLE_BYTES, pack_ipc, unpack_ipc
from hurray_gpu.errors import (
    BackendUnavailableError,
    HurrayFormatError,
    ProtocolError,
    UnsupportedOpError,
)
from hurray_gpu.format import codec
from hurray_gpu.format.descriptor.buffers import DeviceTag, SyncMode
from hurray_gpu.net import ipc
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.memory import MemoryClass
from hurray_gpu.runtime.registry import is_available, resolve_device
from tests._support import skip_or_fail
from tests.net.test_ipc import ENV, _dense_desc, _fake_producer, _message

N = 1 << 16  # floats the two-process tensors hold
# The lavapipe driver backs exportable memory with a memfd of this name (an fd per exported
# allocation, a mapping per import), so counting them shows what is still allocated.
LAVAPIPE_FD = "llvmpipe memory fd"

# The tensor both sides derive: a quantized tensor the producer dequantizes with its kernel.
_MAKE = """
import numpy as np, hurray_gpu as hg
def make(device):
    rng = np.random.default_rng(2101)
    q = hg.quantize(rng.standard_normal(N_FLOATS).astype(np.float32), "per_block",
                    block_size=32)
    return hg.dequantize(q.to(device))
""".replace("N_FLOATS", str(N))

_PRODUCER = _MAKE + """
import hashlib, sys, time
t = make("vulkan:0")
shared = hg.share(t, sys.argv[1])
print("ready", hashlib.sha256(t.buffers[0].numpy().tobytes()).hexdigest(), flush=True)
time.sleep(600)
"""

_CONSUMER = """
import hashlib, sys, time, hurray_gpu as hg
t = hg.attach(sys.argv[1])
dev = t.device
out = hg.Buffer(dev, t.nbytes)
dev.run("copy_bytes", out, t.buffers[0], t.nbytes, wait=True)
print(dev.spec, hashlib.sha256(out.numpy().tobytes()).hexdigest(), flush=True)
time.sleep(600)
"""


@pytest.fixture
def sock_path() -> Iterator[str]:
    # Unix socket paths are limited to ~107 bytes: pytest's tmp_path can be longer.
    directory = tempfile.mkdtemp(prefix="hg-ipc-", dir="/tmp")
    yield os.path.join(directory, "s")
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def vk():
    if not is_available(DeviceTag.VULKAN):
        skip_or_fail("no Vulkan device", "apt-get install mesa-vulkan-drivers; pip install vulkan")
    dev = resolve_device((DeviceTag.VULKAN, 0))
    if dev.ipc_class is None:
        skip_or_fail(f"{dev} cannot export memory", "use a driver with VK_KHR_external_memory_fd")
    return dev


def _lavapipe_fds() -> tuple[int, int]:
    """(open fds, mappings) of lavapipe's exportable memory in this process."""
    fds = 0
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # closed while listing
            fds += LAVAPIPE_FD in os.readlink(f"/proc/self/fd/{name}")
    with open("/proc/self/maps") as f:
        return fds, sum(LAVAPIPE_FD in line for line in f)


def _eventually(check: Callable[[], bool], timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while not check() and time.monotonic() < deadline:
        time.sleep(0.02)
    return check()


def _spawn(script: str, path: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", script, path], stdout=subprocess.PIPE,
                            text=True, env=ENV)
    assert proc.stdout is not None
    return proc


def _make(device: object) -> object:
    scope: dict[str, object] = {}
    exec(_MAKE, scope)  # the same tensor the subprocesses build
    return scope["make"](device)  # type: ignore[operator]


def _copied(t: object) -> bytes:
    """The bytes of ``t``'s first buffer as this process's kernel reads them."""
    buf = t.buffers[0]  # type: ignore[attr-defined]
    out = Buffer(buf.device, buf.nbytes)
    buf.device.run("copy_bytes", out, buf, buf.nbytes, wait=True)
    return bytes(out.numpy())


def test_consumer_kernel_reads_the_producers_kernel_output(vk, sock_path: str) -> None:
    proc = _spawn(_PRODUCER, sock_path)
    try:
        assert proc.stdout is not None
        ready, digest = proc.stdout.readline().split()
        assert ready == "ready"
        got = hg.attach(sock_path)
        assert got.device is vk and got.memory_class == MemoryClass.PEER
        handle = got.descriptor.buffers[0]
        assert (handle.device_tag, handle.memory_class, handle.alignment) == (
            DeviceTag.VULKAN, MemoryClass.PEER, 4096)
        data = _copied(got)
        assert hashlib.sha256(data).hexdigest() == digest  # bit-exact, read by a kernel here
        assert np.array_equal(np.frombuffer(data, np.float32), _make("cpu").numpy())
        assert got.buffers[0].readonly  # another process's memory: kernels may not write it
        with pytest.raises(UnsupportedOpError, match="Fix:"):
            vk.run("fill_u32", got.buffers[0], 1, N)
        got.release()
    finally:
        proc.kill()
        proc.wait(30)


@pytest.mark.parametrize("name", ["dense", "quantized", "composite", "empty"])
def test_every_tensor_shape_travels_on_the_device(vk, name: str, sock_path: str) -> None:
    from tests.net.test_ipc import SAMPLES, _same

    t = SAMPLES[name].to(vk)
    with hg.share(t, sock_path) as shared:
        assert shared.device is vk
        got = hg.attach(sock_path)
        assert got.device is vk and _same(got, t)
        got.release()
        assert shared.wait_released(10)


def test_sigkilled_consumer_counts_as_released_and_nothing_leaks(vk, sock_path: str) -> None:
    t = _make(vk)
    gc.collect()
    before, live = _lavapipe_fds(), vk.allocator.stats()["allocated_bytes"]
    shared = hg.share(t, sock_path)
    held = _lavapipe_fds()
    assert held[0] == before[0] + 2  # the shared allocation's fd and the exported one
    proc = _spawn(_CONSUMER, sock_path)
    try:
        assert proc.stdout is not None
        spec, digest = proc.stdout.readline().split()
        assert spec == "vulkan:0"
        assert digest == hashlib.sha256(t.buffers[0].numpy().tobytes()).hexdigest()
        shared.close()  # a consumer holds it: the producer keeps the memory
        assert shared.active == 1 and _lavapipe_fds() == held
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        proc.kill()
    assert shared.wait_released(10)
    assert _eventually(lambda: _lavapipe_fds() == before)  # freed, not pooled
    assert vk.allocator.stats()["allocated_bytes"] == live


def test_sigkilled_producer_leaves_the_import_valid(vk, sock_path: str) -> None:
    gc.collect()
    before = _lavapipe_fds()
    proc = _spawn(_PRODUCER, sock_path)
    try:
        assert proc.stdout is not None
        _, digest = proc.stdout.readline().split()
        got = hg.attach(sock_path)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        proc.kill()
    # Vulkan reference-counts an exported payload: the import outlives its exporter.
    assert hashlib.sha256(_copied(got)).hexdigest() == digest
    assert _lavapipe_fds()[1] == before[1] + 1  # the import's mapping
    got.release()  # the producer is gone: the release signal goes nowhere, quietly
    del got
    gc.collect()
    assert _eventually(lambda: _lavapipe_fds() == before)


def test_event_mode_needs_an_ipc_event(vk, sock_path: str) -> None:
    for t in (_make(vk), _make("cpu")):
        with pytest.raises(UnsupportedOpError, match="Fix: share with sync='producer_synced'"):
            hg.share(t, sock_path, sync="event")
        assert not os.path.exists(sock_path)


# -- hostile device records -----------------------------------------------------------------

def _peer_desc(n: int, mode: SyncMode = SyncMode.PRODUCER_SYNCED) -> bytes:
    return ipc._ipc_raw(codec.decode(_dense_desc(n)), _dense_desc(n), DeviceTag.VULKAN,
                        MemoryClass.PEER, mode)


def _envelope(tag: int, ident: bytes, record: bytes, nfds: int = 1) -> bytes:
    return struct.pack("<BBH", tag, nfds, len(ident)) + ident + record


def _send(payload: bytes, fd: int | None) -> Callable[[socket.socket], None]:
    def send(conn: socket.socket) -> None:
        if fd is None:
            conn.sendall(payload)
        else:
            socket.send_fds(conn, [payload], [fd])
    return send


def _hostile(vk) -> dict[str, tuple[bytes, int | None, type[Exception], str]]:
    """name -> (message, fd to attach, error, match) around a real 4096-byte export."""
    exporter = Buffer(vk, 4096, MemoryClass.PEER)
    record, fd = vk.ipc_export(exporter.allocation, False)
    plain = os.memfd_create("not-vulkan")
    os.ftruncate(plain, 16384)
    ident = vk.ipc_id
    big = struct.pack("<QQI", 1 << 20, 1 << 20, struct.unpack("<QQI", record)[2])
    ok = _envelope(DeviceTag.VULKAN, ident, record)
    return {
        "descriptors need more than the memory": (
            _message([(0, _peer_desc(1025))], ok), fd, HurrayFormatError, "need 4100 bytes"),
        "record larger than the fd's memory": (
            _message([(0, _peer_desc(4))], _envelope(DeviceTag.VULKAN, ident, big)), fd,
            ProtocolError, "refused to import 1048576 bytes"),
        "fd that is not Vulkan memory": (
            _message([(0, _peer_desc(4))], ok), plain, ProtocolError, "refused to import"),
        "another device": (
            _message([(0, _peer_desc(4))], _envelope(DeviceTag.VULKAN, bytes(32), record)), fd,
            BackendUnavailableError, r"no vulkan \(0x04\) device here"),
        "missing fd": (_message([(0, _peer_desc(4))], ok), None, ProtocolError, "declares 1 fd"),
        "truncated device record": (_message([(0, _peer_desc(4))], ok[:-3]), fd, ProtocolError,
                                    "record of 17 bytes"),
        "truncated envelope": (_message([(0, _peer_desc(4))], ok[:3]), fd, ProtocolError,
                               "device record of 3 bytes"),
        "event mode without an event": (
            _message([(0, _peer_desc(4, SyncMode.EVENT))], ok), fd, ProtocolError, "sync modes"),
        "a CUDA record": (
            _message([(0, _peer_desc(4))], _envelope(DeviceTag.CUDA, b"0000:01:00.0",
                                                     pack_ipc(0, 16, bytes(64)), 0)),
            None, BackendUnavailableError, "Fix:"),
        "a device tag with no backend": (
            _message([(0, _peer_desc(4))], _envelope(0x77, ident, record)), fd,
            BackendUnavailableError, "no hurray_gpu backend"),
        "size and memory type this device would not allocate": (
            _message([(0, _peer_desc(4))], _envelope(DeviceTag.VULKAN, ident,
                                                     struct.pack("<QQI", 4096, 4096, 31))),
            fd, ProtocolError, "is not what this device allocates"),
    }, [exporter, fd, plain]


HOSTILE_NAMES = ["descriptors need more than the memory", "record larger than the fd's memory",
                 "fd that is not Vulkan memory", "another device", "missing fd",
                 "truncated device record", "truncated envelope", "event mode without an event",
                 "a CUDA record", "a device tag with no backend",
                 "size and memory type this device would not allocate"]


@pytest.mark.parametrize("case", HOSTILE_NAMES)
def test_hostile_device_record_is_a_typed_error(vk, case: str, sock_path: str) -> None:
    cases, keep = _hostile(vk)
    assert sorted(cases) == sorted(HOSTILE_NAMES)
    message, fd, error, match = cases[case]
    try:
        gc.collect()
        before, fds = _lavapipe_fds(), len(os.listdir("/proc/self/fd"))
        thread = _fake_producer(sock_path, _send(message, fd))
        with pytest.raises(error, match=match) as info:
            hg.attach(sock_path, timeout=5)
        assert "Fix:" in str(info.value)
        del info  # its traceback would keep an import alive
        thread.join(5)
        gc.collect()
        # Nothing imported stays, and every fd received was closed.
        assert _eventually(lambda: _lavapipe_fds() == before)
        assert len(os.listdir("/proc/self/fd")) == fds
    finally:
        os.close(keep[1])
        os.close(keep[2])


# -- CUDA / ROCm without a GPU: the record, and refusals --------------------------------------

def test_cuda_ipc_record_round_trips_and_rejects_malformed_ones() -> None:
    rng = np.random.default_rng(2102)
    handle, event = rng.bytes(IPC_HANDLE_BYTES), rng.bytes(IPC_HANDLE_BYTES)
    for ev in (b"", event):
        record = pack_ipc(4096 * 3, 123_457, handle, ev)
        assert unpack_ipc(record) == (4096 * 3, 123_457, handle, ev)
    good = pack_ipc(0, 8, handle, event)
    for bad in (good[:-1], good + b"x", good[:16], pack_ipc(0, 0, handle),
                pack_ipc(1 << 63, 8, handle)):
        with pytest.raises(ProtocolError, match="Fix: attach to a hg.share"):
            unpack_ipc(bad)


def test_devices_without_ipc_refuse_with_a_fix() -> None:
    host = resolve_device("cpu")
    assert host.ipc_class is None and host.ipc_id == b""
    buf = Buffer(host, 64)
    with pytest.raises(UnsupportedOpError, match="Fix: share a host copy"):
        host.ipc_export(buf.allocation, False)
    with pytest.raises(UnsupportedOpError, match="Fix: share a host copy"):
        host.ipc_import(b"", None)


def test_vulkan_refuses_events_and_views(vk) -> None:
    buf = Buffer(vk, 8192, MemoryClass.PEER)
    with pytest.raises(UnsupportedOpError, match="producer-synced only"):
        vk.ipc_export(buf.allocation, True)
    with pytest.raises(UnsupportedOpError, match="Fix:"):
        vk.ipc_export(buf.view(4096, 4096).allocation, False)
    with pytest.raises(UnsupportedOpError, match="Fix:"):  # not PEER memory
        vk.ipc_export(Buffer(vk, 64).allocation, False)
