"""Zero-copy tensor handoff between processes on one Linux machine (docs/interchange.md, IPC).

The Hurray spec's IPC mode: the producer copies a tensor once into a sealed, page-aligned
memfd segment (:func:`share`) and serves it on a Unix-domain socket; each consumer that
connects receives the descriptors and the segment's file descriptor (SCM_RIGHTS) and maps it
read-only (:func:`attach`), so its cpu Buffers are the shared pages. A release is one byte
back (``b"R"``) or the consumer's socket closing, which also covers a consumer that dies.
Memory safety does not depend on those signals: the kernel frees a memfd's pages with its last
descriptor and mapping, so a SIGKILLed producer leaves every consumer's mapping valid, and a
SIGKILLed consumer leaks nothing.

Handoff message (producer to consumer, little-endian, one fd attached to its first bytes):
``b"HIP1"``, u32 body length, then the body: u32 node count, and per node in depth-first order
(a composite head before its members) u32 member count, u32 descriptor length, the descriptor.
Buffer ``i`` of the flattened list starts at the next multiple of 4096 after buffer ``i-1``
ends (the first at 0): both sides derive the offsets, so only sizes need checking.
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

from hurray_gpu.errors import HurrayFormatError, ProtocolError, TransportError, UnsupportedOpError
from hurray_gpu.format import codec
from hurray_gpu.format.descriptor.buffers import DeviceTag, SyncMode
from hurray_gpu.net.client import MAX_DEPTH, MAX_MEMBERS
from hurray_gpu.net.transport import tensor_nodes
from hurray_gpu.parts import make_tensor
from hurray_gpu.runtime.memory import MemoryClass
from hurray_gpu.sync.handoff import SyncState
from hurray_gpu.tensor import Tensor

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


def _ipc_desc(desc: Any) -> Any:
    """``desc`` re-declared for the segment: host memory, producer-synced, page-aligned."""
    return dataclasses.replace(desc, buffers=tuple(dataclasses.replace(
        h, alignment=IPC_ALIGN if h.byte_size else h.alignment, device_tag=DeviceTag.CPU,
        sync_mode=SyncMode.PRODUCER_SYNCED, memory_class=MemoryClass.STANDARD)
        for h in desc.buffers))


class SharedTensor:
    """A tensor exported to a sealed shared segment and served on a Unix socket (see :func:`share`).

    Attributes:
        path: the socket path consumers pass to :func:`attach`.
        nbytes: the segment's size in bytes.
    """

    def __init__(self, tensor: Any, path: str, *, timeout: float = 10.0) -> None:
        if not hasattr(os, "memfd_create") or not hasattr(socket, "send_fds"):
            raise UnsupportedOpError("shared-memory handoff needs Linux (memfd and SCM_RIGHTS)",
                                     fix="on other systems send tensors with hg.serve/connect.")
        nodes = tensor_nodes(tensor)
        descs = [_ipc_desc(n.descriptor) for n in nodes]
        sources = [b for n in nodes for b in n.buffers]
        offsets, end = _offsets([b.nbytes for b in sources])
        self.path, self.nbytes, self._timeout = path, max(end, IPC_ALIGN), timeout
        body = struct.pack("<I", len(nodes)) + b"".join(
            struct.pack("<II", len(n.members), len(raw)) + raw
            for n, raw in zip(nodes, map(codec.encode, descs), strict=True))
        self._message = _MAGIC + struct.pack("<I", len(body)) + body
        self._fd = os.memfd_create("hurray_gpu-ipc", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(self._fd, self.nbytes)
            with mmap.mmap(self._fd, self.nbytes) as mm:
                segment = np.frombuffer(mm, dtype=np.uint8)
                for off, buf in zip(offsets, sources, strict=True):
                    buf.copyout(segment[off:off + buf.nbytes])
                del segment  # the mapping cannot close while a view exists
            # Sealed: no one (consumers included) can change the data or the size, so a
            # consumer's mapping can never fault on a truncated file.
            fcntl.fcntl(self._fd, fcntl.F_ADD_SEALS, sum(getattr(fcntl, s) for s in _SEALS)
                        | fcntl.F_SEAL_SEAL)
            self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._listener.bind(path)
        except BaseException:
            os.close(self._fd)
            raise
        self._listener.listen(64)
        self._listener.setblocking(False)
        self._cond = threading.Condition()
        self._active = self._served = 0
        self._conns: set[socket.socket] = set()
        self._closed = False
        _Loop.get().register(self._listener, self._accept)

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
        """Stop serving, remove the socket and drop the producer's segment; idempotent.

        Consumers that attached keep valid mappings: the kernel frees the memory with the last
        one. Call :meth:`wait_released` first to wait for them.
        """
        with self._cond:
            if self._closed:
                return
            self._closed = True
        _Loop.get().call(self._stop)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        os.close(self._fd)

    def __enter__(self) -> SharedTensor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # The handlers below run on the loop thread only.
    def _stop(self, sel: selectors.BaseSelector) -> None:
        for sock in (self._listener, *self._conns):
            sel.unregister(sock)
            sock.close()
        with self._cond:
            self._conns.clear()
            self._active = 0
            self._cond.notify_all()

    def _accept(self, sel: selectors.BaseSelector, listener: socket.socket) -> None:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        with self._cond:  # counted before the consumer can see the handoff
            self._active += 1
            self._served += 1
        try:
            conn.settimeout(self._timeout)
            sent = socket.send_fds(conn, [self._message[:IPC_ALIGN]], [self._fd])
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


class _Loop:
    """One daemon thread per process serves every SharedTensor: a thread per share would cost
    its start and join on every handoff."""

    _current: _Loop | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.sel = selectors.DefaultSelector()
        self.wake_r, self.wake_w = socket.socketpair()
        self.sel.register(self.wake_r, selectors.EVENT_READ, None)
        self.calls: list[tuple[Callable[[selectors.BaseSelector], Any], threading.Event]] = []
        threading.Thread(target=self._run, name="hurray_gpu ipc", daemon=True).start()

    @classmethod
    def get(cls) -> _Loop:
        """The loop of this process (a forked child starts its own)."""
        with cls._lock:
            if cls._current is None or cls._current.pid != os.getpid():
                cls._current = cls()
            return cls._current

    def register(self, sock: socket.socket, handler: Callable[..., Any]) -> None:
        """Call ``handler(selector, sock)`` on the loop thread whenever ``sock`` is readable
        (epoll takes a new socket while another thread waits on it)."""
        self.sel.register(sock, selectors.EVENT_READ, handler)

    def call(self, fn: Callable[[selectors.BaseSelector], Any]) -> None:
        """Run ``fn(selector)`` on the loop thread and wait for it."""
        done = threading.Event()
        with self._lock:
            self.calls.append((fn, done))
        self.wake_w.send(b"x")
        done.wait()

    def _run(self) -> None:
        while True:
            for key, _ in self.sel.select():
                if self.sel.get_map().get(key.fd) is not key:
                    continue  # an earlier handler of this batch closed it
                if key.data is not None:
                    try:
                        key.data(self.sel, key.fileobj)
                    except Exception as exc:  # the loop serves every share: it must go on
                        warnings.warn(f"hurray_gpu ipc: {exc!r}", RuntimeWarning, stacklevel=1)
                    continue
                self.wake_r.recv(4096)
                with self._lock:
                    calls, self.calls = self.calls, []
                for fn, done in calls:
                    try:
                        fn(self.sel)
                    finally:
                        done.set()


def share(tensor: Any, path: str, *, timeout: float = 10.0) -> SharedTensor:
    """Export ``tensor`` (host or device) into a shared segment and serve it at ``path``.

    The data is copied once, into a sealed page-aligned memfd segment: later changes to
    ``tensor`` are not seen by consumers, and no consumer can change what others see. Every
    consumer that connects gets the same segment, zero-copy (:func:`attach`).

    Args:
        tensor: the Tensor (a composite travels with its members).
        path: a filesystem path for the Unix-domain socket (must not exist).
        timeout: seconds a slow consumer may take to receive the handoff.

    Returns:
        A :class:`SharedTensor`; ``close()`` it (or use ``with``) when done serving.

    Raises:
        UnsupportedOpError: not Linux (no memfd or fd passing).
        OSError: the socket path is taken or unwritable.
    """
    return SharedTensor(tensor, path, timeout=timeout)


def attach(path: str, *, timeout: float = 10.0) -> Any:
    """Map the tensor a :func:`share` producer serves at ``path``, without a copy.

    The result's cpu Buffers are read-only views of the shared segment. ``t.release()`` (or
    dropping the tensor) tells the producer this consumer is done; the mapping itself stays
    valid while the tensor (or any array over its buffers) lives, even if the producer exits.

    Args:
        path: the producer's socket path.
        timeout: seconds to wait for the whole handoff message.

    Returns:
        The Tensor, handed off producer-synced (see ``Tensor.release``).

    Raises:
        TransportError: nothing serves at ``path``, or the producer went away mid-handoff.
        ProtocolError: a truncated or malformed handoff message, or a segment that is not a
            sealed memfd.
        HurrayFormatError: descriptors that are malformed or need more bytes than the segment.
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
            return _map(fd, body, lambda: _release(sock))
        finally:
            os.close(fd)
    except BaseException:
        sock.close()
        raise


def _release(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.sendall(b"R")
    sock.close()


def _receive(sock: socket.socket, deadline: float) -> tuple[int, bytes]:
    """The handoff's fd and body; the fd is closed here on any error."""
    fds: list[int] = []
    try:
        head = b""
        while len(head) < 8:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            data, got, flags, _ = socket.recv_fds(sock, 8 - len(head), 1)
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
        (length,) = struct.unpack("<I", head[4:])
        if length > MAX_MESSAGE:
            raise ProtocolError(f"handoff message of {length} bytes exceeds {MAX_MESSAGE}",
                                fix=_FIX_MSG)
        if len(fds) != 1:
            raise ProtocolError("the handoff carried no segment file descriptor", fix=_FIX_MSG)
        body = bytearray(length)
        view, got_n = memoryview(body), 0
        while got_n < length:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            n = sock.recv_into(view[got_n:])
            if not n:
                raise ProtocolError(f"handoff message truncated at {got_n} of {length} bytes",
                                    fix="check that the producer is alive.")
            got_n += n
        return fds[0], bytes(body)
    except BaseException as exc:
        for fd in fds:
            os.close(fd)
        if isinstance(exc, OSError) and not isinstance(exc, TransportError):
            raise TransportError(f"the handoff did not arrive ({exc or 'timed out'})",
                                 fix="check the producer, or pass a larger timeout.") from None
        raise


def _parse(body: bytes) -> list[tuple[int, bytes]]:
    """``(member count, descriptor bytes)`` per node."""
    try:
        (count,) = struct.unpack_from("<I", body)
        pos, out = 4, []
        for _ in range(count):
            members, size = struct.unpack_from("<II", body, pos)
            if pos + 8 + size > len(body):
                raise struct.error("descriptor past the end")
            out.append((members, body[pos + 8:pos + 8 + size]))
            pos += 8 + size
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
    return out


def _map(fd: int, body: bytes, on_release: Callable[[], Any]) -> Any:
    """Check the segment against the descriptors, then map it and build the tensor."""
    nodes = _parse(body)
    try:
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
    except OSError:
        seals = 0
    if any(not seals & getattr(fcntl, s) for s in _SEALS):
        raise ProtocolError("the segment is not a sealed memfd (it could shrink or change "
                            "under the mapping)", fix="share tensors with hg.share().")
    descs = [codec.decode(raw) for _, raw in nodes]
    sizes = [int(h.byte_size) for d in descs for h in codec.handles(d)]
    offsets, end = _offsets(sizes)
    size = os.fstat(fd).st_size
    if end > size or size == 0:
        raise HurrayFormatError(f"the descriptors need {end} bytes but the shared segment "
                                f"holds {size}", field="byte_size",
                                fix="the producer's descriptors and segment disagree: "
                                    "re-share the tensor with hg.share().")
    segment = np.frombuffer(mmap.mmap(fd, size, prot=mmap.PROT_READ), dtype=np.uint8)
    arrays = iter([segment[o:o + n] for o, n in zip(offsets, sizes, strict=True)])
    order = iter(zip(nodes, descs, strict=True))
    # One state for the head and every member: the first release (or collection) signals.
    state = SyncState(SyncMode.PRODUCER_SYNCED, on_release=on_release)

    def build() -> Any:  # _parse checked that the member counts form one tree
        (members, raw), desc = next(order)
        kids = [build() for _ in range(members)]
        t = Tensor(raw, [next(arrays) for _ in codec.handles(desc)], kids)
        return make_tensor(t.descriptor, t.buffers, members=kids, raw=raw, device=t.device,
                           memory_class=t.memory_class, sync=state)

    return build()
