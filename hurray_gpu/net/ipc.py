"""Zero-copy tensor handoff between processes on one Linux machine (docs/interchange.md, IPC).

The Hurray spec's IPC mode: the producer copies a tensor once into one page-aligned shared
allocation and serves it on a Unix-domain socket (:func:`share`); each consumer that connects
receives the descriptors and the memory (:func:`attach`) with no copy. Host memory is a
sealed memfd segment, mapped read-only. Device memory stays on the device: a Vulkan PEER
allocation travels as an opaque fd, a CUDA/ROCm one as an IPC memory handle (plus an IPC event
handle in event mode), each opened by the device's ``ipc_import`` (hurray_gpu.runtime.device).
A release is one byte back (``b"R"``) or the consumer's socket closing, which also covers a
consumer that dies. A memfd's pages go with its last descriptor and mapping, so a SIGKILLed
producer leaves every host consumer's mapping valid; device memory is freed by the producer
once it closed and every consumer released.

Handoff message (producer to consumer, little-endian, at most one fd attached to its first
bytes): ``b"HIP1"``, u32 body length, then the body: u32 node count, and per node in
depth-first order (a composite head before its members) u32 member count, u32 descriptor
length, the descriptor; then u32 record length and the record: empty for a host segment (the
fd), else u8 device tag, u8 fds attached (0 or 1), u16 device id length, the device id
(``Device.ipc_id``) and the device's own record. Buffer ``i`` of the flattened list starts at
the next multiple of 4096 after buffer ``i-1`` ends (the first at 0): both sides derive the
offsets, so only sizes need checking.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import mmap
import os
import selectors
import socket
import struct
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from hurray_gpu.errors import (
    BackendUnavailableError,
    HurrayFormatError,
    ProtocolError,
    TransportError,
    UnsupportedOpError,
)
from hurray_gpu.format import codec
from hurray_gpu.format.descriptor.buffers import DeviceTag, SyncMode
from hurray_gpu.net.client import MAX_DEPTH, MAX_MEMBERS
from hurray_gpu.net.framing import tensor_nodes
from hurray_gpu.net.transport import ACCEPT_BACKOFF, ACCEPT_RETRY
from hurray_gpu.parts import assemble, is_tensor, not_a_tensor
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.memory import MemoryClass
from hurray_gpu.runtime.registry import device_count, resolve_device, tag_name
from hurray_gpu.sync.handoff import SyncState, parse_mode

__all__ = ["SharedTensor", "attach", "share"]

IPC_ALIGN = 4096  # the spec's minimum alignment for IPC buffers; every buffer starts on one
MAX_MESSAGE = 64 << 20  # bytes of one handoff message (descriptors only, never data)
_MAGIC = b"HIP1"
_SEALS = ("F_SEAL_SHRINK", "F_SEAL_GROW", "F_SEAL_WRITE")
_FIX_MSG = "connect only to a hurray_gpu.share() socket of the same version."


def _offsets(sizes: list[int]) -> tuple[list[int], int]:
    """Each buffer's offset in the segment, and the bytes the segment needs."""
    offsets, end = [], 0
    for size in sizes:
        start = -(-end // IPC_ALIGN) * IPC_ALIGN
        offsets.append(start)
        end = start + size
    return offsets, end


def _ipc_raw(desc: Any, raw: bytes, tag: int, mclass: MemoryClass, mode: SyncMode) -> bytes:
    """``desc`` (encoded as ``raw``) re-declared for the shared allocation: its device, class
    and sync mode, and page-aligned; encoded, and memoized on ``raw`` (encoding validates, which
    costs more than the rest of a small handoff's producer side)."""
    key = (raw, tag, mclass, mode)
    out = _IPC_RAW.get(key)
    if out is None:
        out = codec.encode(dataclasses.replace(desc, buffers=tuple(dataclasses.replace(
            h, alignment=IPC_ALIGN if h.byte_size else h.alignment, device_tag=tag,
            sync_mode=mode, memory_class=mclass) for h in desc.buffers)))
        if len(_IPC_RAW) >= 256:  # bounded: a producer of many shapes starts over
            _IPC_RAW.clear()
        _IPC_RAW[key] = out
    return out


_IPC_RAW: dict[tuple[bytes, int, MemoryClass, SyncMode], bytes] = {}


class SharedTensor:
    """A tensor exported to one shared allocation and served on a Unix socket (see :func:`share`).

    Attributes:
        path: the socket path consumers pass to :func:`attach`.
        nbytes: the shared allocation's size in bytes.
        device: where the shared allocation lives (the cpu device for a host segment).
    """

    def __init__(self, tensor: Any, path: str, *, timeout: float = 10.0, host: bool = False,
                 sync: Any = SyncMode.PRODUCER_SYNCED) -> None:
        if not hasattr(os, "memfd_create") or not hasattr(socket, "send_fds"):
            raise UnsupportedOpError("shared-memory handoff needs Linux (memfd and SCM_RIGHTS)",
                                     fix="on other systems send tensors with hg.serve/connect.")
        mode = parse_mode(sync)
        nodes = tensor_nodes(tensor)
        sources = [b for n in nodes for b in n.buffers]
        offsets, end = _offsets([b.nbytes for b in sources])
        self.path, self.nbytes, self._timeout = path, max(end, IPC_ALIGN), timeout
        dev = tensor.device
        mclass = None if host or dev.tag == DeviceTag.CPU else dev.ipc_class
        if mode != SyncMode.PRODUCER_SYNCED and mclass is None:
            raise UnsupportedOpError(f"host segments are producer-synced, not {mode.name.lower()}",
                                     fix="share with sync='producer_synced', or share a CUDA "
                                         "or ROCm tensor for event mode.")
        self._memory: Buffer | None = None  # device memory, kept until closed and released
        if mclass is None:
            self.device, record = resolve_device("cpu"), b""
            fd: int | None = self._segment(sources, offsets)
        else:
            self.device, (fd, record) = dev, self._export(dev, mclass, sources, offsets, mode)
        raws = [_ipc_raw(n.descriptor, n.descriptor_bytes, self.device.tag,
                         mclass or MemoryClass.STANDARD, mode) for n in nodes]
        body = struct.pack("<I", len(nodes)) + b"".join(
            struct.pack("<II", len(n.members), len(raw)) + raw
            for n, raw in zip(nodes, raws, strict=True))
        body += struct.pack("<I", len(record)) + record
        self._message = _MAGIC + struct.pack("<I", len(body)) + body
        self._fd: int | None = fd
        try:
            self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._listener.bind(path)
        except BaseException:
            self._free()
            raise
        self._listener.listen(64)
        self._listener.setblocking(False)
        self._cond = threading.Condition()
        self._active = self._served = 0
        self._conns: set[socket.socket] = set()
        self._closed = self._freed = False
        _Loop.get().register(self._listener, self._accept)

    def _segment(self, sources: list[Any], offsets: list[int]) -> int:
        """A sealed memfd holding every buffer at its offset."""
        fd = os.memfd_create("hurray_gpu-ipc", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(fd, self.nbytes)
            if all(buf.is_host for buf in sources):
                # write() fills the file's pages directly: through a mapping every page
                # faults first, which makes the copy 2-4x slower at any size.
                for off, buf in zip(offsets, sources, strict=True):
                    data, done = memoryview(buf.array), 0
                    while done < len(data):  # Linux writes at most 2 GiB - 4 KiB per call
                        done += os.pwrite(fd, data[done:], off + done)
            else:
                with mmap.mmap(fd, self.nbytes) as mm:
                    segment = np.frombuffer(mm, dtype=np.uint8)
                    for off, buf in zip(offsets, sources, strict=True):
                        buf.copyout(segment[off:off + buf.nbytes])
                    del segment  # the mapping cannot close while a view exists
            # Sealed: no one (consumers included) can change the data or the size, so a
            # consumer's mapping can never fault on a truncated file.
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, sum(getattr(fcntl, s) for s in _SEALS)
                        | fcntl.F_SEAL_SEAL)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _export(self, dev: Any, mclass: MemoryClass, sources: list[Any], offsets: list[int],
                mode: SyncMode) -> tuple[int | None, bytes]:
        """One fresh ``mclass`` allocation on ``dev`` holding every buffer at its offset
        (copied on the device), exported: (the fd to pass or None, the handoff's record)."""
        self._memory = memory = Buffer(dev, self.nbytes, mclass)
        memory.allocation.root.shared = True  # never pooled: consumers read it
        try:
            for off, buf in zip(offsets, sources, strict=True):
                if buf.nbytes:
                    memory.view(off, buf.nbytes).copy_from(buf)
            if mode == SyncMode.PRODUCER_SYNCED:
                dev.synchronize()  # the spec's producer-synced: finished before it is sent
            record, fd = dev.ipc_export(memory.allocation, mode == SyncMode.EVENT)
        except BaseException:
            self._free()
            raise
        ident = dev.ipc_id
        return fd, struct.pack("<BBH", dev.tag, fd is not None, len(ident)) + ident + record

    def _free(self) -> None:
        """Drop the producer's fd and device memory."""
        fd, self._fd = getattr(self, "_fd", None), None
        if fd is not None:
            os.close(fd)
        memory, self._memory = self._memory, None
        if memory is not None:
            memory.free()

    @property
    def active(self) -> int:
        """Consumers holding the tensor now (connected and not yet released)."""
        with self._cond:
            return self._active

    @property
    def served(self) -> int:
        """Consumers that connected so far."""
        with self._cond:
            return self._served

    def wait_released(self, timeout: float | None = None) -> bool:
        """Wait until no consumer holds the tensor; True when none does (False: timed out)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._active == 0, timeout)

    def close(self) -> None:
        """Stop serving and remove the socket; idempotent.

        Host segment: the producer's descriptor goes now; consumers that attached keep valid
        mappings (the kernel frees the memory with the last one). Device memory: freed once
        every consumer released it (at once when none holds it). Call :meth:`wait_released`
        first to wait for them.
        """
        with self._cond:
            if self._closed:
                return
            self._closed = True
        _Loop.get().call(self._stop)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        self._reclaim()

    def __enter__(self) -> SharedTensor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _reclaim(self) -> None:
        """Free the shared memory once closed and released (only the first time)."""
        with self._cond:
            done = self._closed and self._active == 0 and not self._freed
            self._freed = self._freed or done
        if done:
            self._free()

    # The handlers below run under the loop's mutex.
    def _stop(self, sel: selectors.BaseSelector) -> None:
        # Device memory stays until its consumers release it: their sockets stay watched.
        for sock in (self._listener, *(self._conns if self._memory is None else ())):
            sel.unregister(sock)
            sock.close()
        if self._memory is None:
            with self._cond:
                self._conns.clear()
                self._active = 0
                self._cond.notify_all()

    def _accept(self, sel: selectors.BaseSelector, listener: socket.socket) -> None:
        try:
            conn, _ = listener.accept()
        except OSError as exc:
            if exc.errno in ACCEPT_RETRY:  # still readable: do not spin until it passes
                time.sleep(ACCEPT_BACKOFF)
            return
        with self._cond:  # counted before the consumer can see the handoff
            if self._closed:  # close() began: a release since may have freed the memory
                conn.close()
                return
            self._active += 1
            self._served += 1
        try:
            conn.settimeout(self._timeout)
            sent = 0 if self._fd is None else socket.send_fds(
                conn, [self._message[:IPC_ALIGN]], [self._fd])
            if sent < len(self._message):
                conn.sendall(self._message[sent:])
            sel.register(conn, selectors.EVENT_READ, self._release)
            self._conns.add(conn)
        except OSError:  # the consumer went away before it got the handoff
            self._drop(conn)

    def _release(self, sel: selectors.BaseSelector, conn: socket.socket) -> None:
        # b"R", anything else or end of file: this consumer is done.
        with contextlib.suppress(OSError):
            conn.recv(64)
        sel.unregister(conn)
        self._conns.discard(conn)
        self._drop(conn)

    def _drop(self, conn: socket.socket) -> None:
        conn.close()
        with self._cond:
            self._active -= 1
            self._cond.notify_all()
        self._reclaim()


class _Loop:
    """One daemon thread per process serves every SharedTensor: a thread per share would cost
    its start and join on every handoff. Handlers run under ``mutex``, and so does :meth:`call`
    from other threads, which so closes sockets without a round trip through the loop."""

    _current: _Loop | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.sel = selectors.DefaultSelector()
        self.mutex = threading.Lock()
        threading.Thread(target=self._run, name="hurray_gpu ipc", daemon=True).start()

    @classmethod
    def get(cls) -> _Loop:
        """The loop of this process (a forked child starts its own)."""
        with cls._lock:
            if cls._current is None or cls._current.pid != os.getpid():
                cls._current = cls()
            return cls._current

    def register(self, sock: socket.socket, handler: Callable[..., Any]) -> None:
        """Call ``handler(selector, sock)`` on the loop thread whenever ``sock`` is readable."""
        with self.mutex:
            self.sel.register(sock, selectors.EVENT_READ, handler)

    def call(self, fn: Callable[[selectors.BaseSelector], Any]) -> None:
        """Run ``fn(selector)`` here, while no handler runs."""
        with self.mutex:
            fn(self.sel)

    def _run(self) -> None:
        while True:
            for key, _ in self.sel.select():
                with self.mutex:
                    if self.sel.get_map().get(key.fd) is not key:
                        continue  # unregistered since select() returned
                    try:
                        key.data(self.sel, key.fileobj)
                    except Exception as exc:  # the loop serves every share: it must go on
                        warnings.warn(f"hurray_gpu ipc: {exc!r}", RuntimeWarning, stacklevel=1)


def share(tensor: Any, path: str, *, timeout: float = 10.0, host: bool = False,
          sync: Any = "producer_synced") -> SharedTensor:
    """Export ``tensor`` into one shared allocation and serve it at ``path``.

    The data is copied once: a host tensor (or any, with ``host=True``) into a sealed
    page-aligned memfd segment; a tensor on a device that shares memory across processes
    (``Device.ipc_class``: Vulkan PEER memory, CUDA/ROCm device memory) into one fresh
    allocation on that device, with no host copy. Later changes to ``tensor`` are not seen by
    consumers. Every consumer that connects gets the same memory, zero-copy (:func:`attach`).
    Devices that share none (OpenCL) share a host segment.

    Args:
        tensor: the Tensor (a composite travels with its members).
        path: a filesystem path for the Unix-domain socket (must not exist).
        timeout: seconds a slow consumer may take to receive the handoff.
        host: share a host copy even when the device could share its memory.
        sync: ``"producer_synced"`` (the copy has finished before anything is sent) or
            ``"event"`` (CUDA/ROCm: consumers' streams wait on an IPC event).

    Returns:
        A :class:`SharedTensor`; ``close()`` it (or use ``with``) when done serving.

    Raises:
        UnsupportedOpError: not Linux (no memfd or fd passing), or event mode where the memory
            cannot carry an IPC event (host segments, Vulkan).
        OSError: the socket path is taken or unwritable.
    """
    if not is_tensor(tensor):
        raise not_a_tensor(tensor, "hg.share")
    return SharedTensor(tensor, path, timeout=timeout, host=host, sync=sync)


def attach(path: str, *, timeout: float = 10.0) -> Any:
    """Open the tensor a :func:`share` producer serves at ``path``, without a copy.

    A host segment arrives as read-only cpu Buffers mapping it; device memory as read-only
    Buffers on this process's matching device (Vulkan: the same deviceUUID and driverUUID;
    CUDA/ROCm: the same PCI address). ``t.release()`` (or dropping the tensor) tells the
    producer this consumer is done; a host mapping stays valid while the tensor (or any array
    over its buffers) lives, even if the producer exits.

    Args:
        path: the producer's socket path.
        timeout: seconds to wait for the whole handoff message.

    Returns:
        The Tensor, handed off producer-synced, or in event mode (see ``Tensor.release``).

    Raises:
        TransportError: nothing serves at ``path``, or the producer went away mid-handoff.
        ProtocolError: a truncated or malformed handoff message, a segment that is not a
            sealed memfd, or device memory this device cannot open.
        HurrayFormatError: descriptors that are malformed or need more bytes than the memory.
        BackendUnavailableError: no device here is the producer's.
    """
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        try:
            sock.connect(path)
        except OSError as exc:
            raise TransportError(f"nothing serves a shared tensor at {path!r} ({exc})",
                                 fix="start the producer with hg.share(tensor, path) first.") from None
        fd, body = _receive(sock, time.monotonic() + timeout)
        try:
            nodes, record = _parse(body)
            if record:
                return _import(fd, nodes, record, lambda: _release(sock))
            if fd is None:
                raise ProtocolError("the handoff carried no segment file descriptor",
                                    fix=_FIX_MSG)
            return _map(fd, nodes, lambda: _release(sock))
        finally:
            if fd is not None:
                os.close(fd)
    except BaseException:
        sock.close()
        raise


def _release(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.sendall(b"R")
    sock.close()


def _receive(sock: socket.socket, deadline: float) -> tuple[int | None, bytes]:
    """The handoff's fd (None without one) and body; the fd is closed here on any error."""
    fds: list[int] = []
    try:
        # The producer sends the first IPC_ALIGN bytes with the fd in one message: a small
        # handoff arrives whole in this first read.
        head = b""
        while len(head) < 8:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            data, got, flags, _ = socket.recv_fds(sock, IPC_ALIGN - len(head), 1)
            fds += got
            if flags & socket.MSG_CTRUNC:
                raise ProtocolError("the handoff carried more than one file descriptor",
                                    fix=_FIX_MSG)
            if not data:
                raise TransportError(f"the producer closed the socket after {len(head)} of 8 "
                                     "header bytes", fix="check that the producer is alive.")
            head += data
        if head[:4] != _MAGIC:
            raise ProtocolError(f"not a hurray_gpu IPC handoff (magic {head[:4]!r})",
                                fix=_FIX_MSG)
        (length,) = struct.unpack_from("<I", head, 4)
        if length > MAX_MESSAGE:
            raise ProtocolError(f"handoff message of {length} bytes exceeds {MAX_MESSAGE}",
                                fix=_FIX_MSG)
        if len(head) > 8 + length:
            raise ProtocolError(f"{len(head) - 8 - length} bytes follow the {length}-byte "
                                "handoff message", fix=_FIX_MSG)
        body = bytearray(head[8:].ljust(length, b"\0"))
        view, got_n = memoryview(body), len(head) - 8
        while got_n < length:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            n = sock.recv_into(view[got_n:])
            if not n:
                raise ProtocolError(f"handoff message truncated at {got_n} of {length} bytes",
                                    fix="check that the producer is alive.")
            got_n += n
        return (fds[0] if fds else None), bytes(body)
    except BaseException as exc:
        for fd in fds:
            os.close(fd)
        if isinstance(exc, OSError) and not isinstance(exc, TransportError):
            raise TransportError(f"the handoff did not arrive ({exc or 'timed out'})",
                                 fix="check the producer, or pass a larger timeout.") from None
        raise


def _parse(body: bytes) -> tuple[list[tuple[int, bytes]], bytes]:
    """``(member count, descriptor bytes)`` per node, and the memory record."""
    try:
        (count,) = struct.unpack_from("<I", body)
        pos, out = 4, []
        for _ in range(count):
            members, size = struct.unpack_from("<II", body, pos)
            if pos + 8 + size > len(body):
                raise struct.error("descriptor past the end")
            out.append((members, body[pos + 8:pos + 8 + size]))
            pos += 8 + size
        (size,) = struct.unpack_from("<I", body, pos)
        record, pos = body[pos + 4:pos + 4 + size], pos + 4 + size
    except struct.error as exc:
        raise ProtocolError(f"malformed handoff message ({exc})", fix=_FIX_MSG) from None
    if pos != len(body) or not out or count > MAX_MEMBERS:
        raise ProtocolError(f"malformed handoff message ({count} nodes in {len(body)} bytes)",
                            fix=_FIX_MSG)
    pending: list[int] = []  # members still to come at each open composite level
    for i, (members, _) in enumerate(out):
        if i and not pending:
            raise ProtocolError("the handoff carries nodes outside its composite tree",
                                fix=_FIX_MSG)
        if pending:
            pending[-1] -= 1
        pending.append(members)
        if len(pending) > MAX_DEPTH + 1:
            raise ProtocolError(f"the handoff nests composites past {MAX_DEPTH} levels",
                                fix=_FIX_MSG)
        while pending and not pending[-1]:
            pending.pop()
    if pending:
        raise ProtocolError("the handoff's member counts exceed its nodes (not one composite "
                            "tree)", fix=_FIX_MSG)
    return out, record


def _layout(nodes: list[tuple[int, bytes]], size: int) -> tuple[list[Any], list[int], list[int]]:
    """The descriptors, and each buffer's offset and size, checked against ``size`` bytes."""
    descs = [codec.decode(raw) for _, raw in nodes]
    sizes = [int(h.byte_size) for d in descs for h in codec.handles(d)]
    offsets, end = _offsets(sizes)
    if end > size or size == 0:
        raise HurrayFormatError(f"the descriptors need {end} bytes but the shared memory "
                                f"holds {size}", field="byte_size",
                                fix="the producer's descriptors and memory disagree: "
                                    "re-share the tensor with hg.share().")
    return descs, offsets, sizes


def _build(nodes: list[tuple[int, bytes]], descs: list[Any], buffers: list[Any],
           state: SyncState) -> Any:
    """The tensor tree over ``buffers``; one state for the head and every member: the first
    release (or collection) signals."""
    order, parts = iter(zip(nodes, descs, strict=True)), iter(buffers)

    def build() -> Any:  # _parse checked that the member counts form one tree
        (members, raw), desc = next(order)
        kids = [build() for _ in range(members)]
        return assemble(raw, [next(parts) for _ in codec.handles(desc)], kids, sync=state)

    return build()


def _map(fd: int, nodes: list[tuple[int, bytes]], on_release: Callable[[], Any]) -> Any:
    """Check the segment against the descriptors, then map it and build the tensor."""
    try:
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
    except OSError:
        seals = 0
    if any(not seals & getattr(fcntl, s) for s in _SEALS):
        raise ProtocolError("the segment is not a sealed memfd (it could shrink or change "
                            "under the mapping)", fix="share tensors with hg.share().")
    size = os.fstat(fd).st_size
    descs, offsets, sizes = _layout(nodes, size)
    segment = np.frombuffer(mmap.mmap(fd, size, prot=mmap.PROT_READ), dtype=np.uint8)
    cpu = resolve_device("cpu")  # cpu Buffers: the descriptors must declare cpu memory
    buffers = [Buffer.wrap(segment[o:o + n], cpu) for o, n in zip(offsets, sizes, strict=True)]
    return _build(nodes, descs, buffers, SyncState(SyncMode.PRODUCER_SYNCED,
                                                  on_release=on_release))


def _import(fd: int | None, nodes: list[tuple[int, bytes]], record: bytes,
            on_release: Callable[[], Any]) -> Any:
    """Open the producer's device memory (``Device.ipc_import``) and build the tensor over it."""
    try:
        tag, nfds, length = struct.unpack_from("<BBH", record)
    except struct.error:
        raise ProtocolError(f"a device record of {len(record)} bytes", fix=_FIX_MSG) from None
    ident, payload = record[4:4 + length], record[4 + length:]
    if len(ident) != length or nfds != (fd is not None):
        raise ProtocolError(f"the device record declares {nfds} fd(s) and a {length}-byte "
                            f"device id; the handoff carried {int(fd is not None)} and "
                            f"{len(ident)} bytes", fix=_FIX_MSG)
    dev = _ipc_device(tag, ident)
    descs = [codec.decode(raw) for _, raw in nodes]  # malformed ones fail before any import
    modes = {int(h.sync_mode) for d in descs for h in d.buffers}
    allocation, event = dev.ipc_import(payload, fd)
    descs, offsets, sizes = _layout(nodes, allocation.nbytes)
    mode = SyncMode(modes.pop()) if len(modes) == 1 else None
    if mode is None or (mode == SyncMode.EVENT) != (event is not None):
        raise ProtocolError(f"sync modes {sorted(modes)} with{'out' if event is None else ''} "
                            "an IPC event", fix=_FIX_MSG)
    root = Buffer(dev, allocation.nbytes, _allocation=allocation)
    views = [root.view(o, n) for o, n in zip(offsets, sizes, strict=True)]
    return _build(nodes, descs, views, SyncState(mode, event=event, on_release=on_release))


def _ipc_device(tag: int, ident: bytes) -> Any:
    """This process's device of kind ``tag`` whose ``ipc_id`` is ``ident``."""
    for index in range(device_count(tag)):
        dev = resolve_device((tag, index))
        if ident and dev.ipc_id == ident:
            return dev
    raise BackendUnavailableError(
        f"no {tag_name(tag)} device here is the producer's (device id {ident.hex() or 'none'})",
        fix="attach from a process that sees the producer's device, or share a host copy "
            "(hg.share(t, path, host=True)).")
