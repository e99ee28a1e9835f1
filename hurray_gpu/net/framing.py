"""What goes on the wire for a tensor, laid out before anything is sent: the frames of an
answer (FramePlan), the split of PARALLEL_STREAMS shards, the descriptor bytes declared to a
peer, the host arrays a receiver allocates from a descriptor, and the ranges of a served file
sent by ``sendfile`` (FileData). No socket is touched here (see transport.py).
"""

from __future__ import annotations

import dataclasses
import os
import struct
import threading
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from hurray_gpu.format import protocol as P
from hurray_gpu.format.descriptor.buffers import BufferHandle, SyncMode
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.hostmem import aligned_empty, host_alignment
from hurray_gpu.runtime.memory import MemoryClass

# The largest TENSOR_DATA frame we send: big enough that the per-frame cost vanishes, small
# enough that a device tensor's staging chunk and a peer's receive stay bounded.
FRAME_BYTES = 16 << 20
SHARD_ALIGN = 1 << 16  # PARALLEL_STREAMS shard boundaries (docs/interchange.md)
SENDFILE_MIN = 1 << 16  # data ranges of a file this large go by sendfile (see FileData)
_U32 = struct.Struct("<I")
_DATA_END = P.encode(P.TensorDataEnd(), 1)


def tensor_nodes(t: Any) -> list[Any]:
    """``t`` and its composite members, depth first (a head before its members)."""
    return [t, *(n for m in t.members for n in tensor_nodes(m))]


class FramePlan:
    """The messages of tensor answers (a head message, TENSOR_DATA frames, TENSOR_DATA_END)
    laid out once, to be sent or expected again: ``pieces`` are encoded messages (with
    ``gather``, consecutive ones in one bytearray, one iovec; stream id 1 until :meth:`stamp`
    writes another) and ``(buffer, start, stop)`` byte ranges of the data, numbered over the
    buffers of every :meth:`tensor` added. The one framing rule of this package: a sender's
    answer, its prepared repeat and a receiver's expectation of that repeat all come from it.
    """

    __slots__ = ("pieces", "starts", "buffers", "gather", "size")

    def __init__(self, gather: bool = True) -> None:
        self.pieces: list[bytearray | tuple[int, int, int]] = []
        self.starts: list[tuple[bytearray, int]] = []  # where each message begins
        self.buffers = 0
        self.gather = gather  # consecutive messages in one piece (False: one per piece)
        self.size = 0  # bytes of all pieces

    def message(self, encoded: bytes) -> None:
        """Append one encoded message (header and payload)."""
        last = self.pieces[-1] if self.pieces else None
        if not isinstance(last, bytearray) or not self.gather:
            self.pieces.append(last := bytearray())
        self.starts.append((last, len(last)))
        last += encoded
        self.size += len(encoded)

    def tensor(self, head: bytes | None, sizes: Sequence[int], frame: int,
               span: tuple[int, int] | None = None, end: bool = True) -> None:
        """Append ``head`` (an encoded message), then bytes ``span`` (default all) of buffers
        of ``sizes`` as TENSOR_DATA frames of at most ``frame`` data bytes (offsets over the
        buffers concatenated; no frame crosses a buffer), then TENSOR_DATA_END (``end``)."""
        if head is not None:
            self.message(head)
        lo, hi = span or (0, sum(sizes))
        base = 0
        for j, size in enumerate(sizes, start=self.buffers):
            for start in range(max(lo - base, 0), min(hi - base, size), frame):
                n = min(frame, hi - base - start, size - start)
                self.message(P.data_header(1, base + start, n))
                self.pieces.append((j, start, start + n))
                self.size += n
            base += size
        self.buffers += len(sizes)
        if end:
            self.message(_DATA_END)

    def stamp(self, stream_id: int) -> None:
        """Write ``stream_id`` into every message header."""
        for run, at in self.starts:
            _U32.pack_into(run, at + 4, stream_id)


def shard_span(total: int, index: int, count: int) -> tuple[int, int]:
    """Bytes [lo, hi) of shard ``index`` of ``count`` of a ``total``-byte tensor: equal parts
    with inner boundaries rounded up to 64 KiB (both sides compute the same split)."""
    def edge(i: int) -> int:
        return min(total, -(-(total * i // count) // SHARD_ALIGN) * SHARD_ALIGN)

    return edge(index), edge(index + 1) if index + 1 < count else total


class FileData:
    """An open file whose bytes answers send with ``sendfile`` (the kernel hands the socket
    the file's cached pages: no copy through user memory, and on loopback or a Unix socket
    one copy in all instead of two). It holds its own descriptor, a duplicate closed when
    the last holder lets go: the file's own close does not end it, so its number is never
    reused under a send in flight."""

    __slots__ = ("fd", "__weakref__")

    def __init__(self, fd: int) -> None:
        self.fd = os.dup(fd)
        weakref.finalize(self, os.close, self.fd)


def file_spans(plan: FramePlan, files: Sequence[tuple[FileData, int] | None]
               ) -> list[tuple[FileData, int] | None] | None:
    """Per piece of ``plan``: ``(file, offset)`` for a data range of a buffer that lies in a
    file (``files[j]``: the file and where buffer j begins in it) and is large enough for
    ``sendfile`` to pay; None for the others. None when no piece qualifies."""
    spans: list[tuple[FileData, int] | None] = []
    found = False
    for piece in plan.pieces:
        span = None
        if not isinstance(piece, bytearray) and piece[2] - piece[1] >= SENDFILE_MIN:
            at = files[piece[0]]
            if at is not None:
                span, found = (at[0], at[1] + piece[1]), True
        spans.append(span)
    return spans if found else None


def declare(desc: Any, tag: int, mclass: int, min_alignment: int) -> bytes:
    """``desc``'s bytes with every handle re-declared: device ``tag``, memory class, producer
    synced (the rule across machines), alignment at least ``min_alignment``."""
    # Remembered per descriptor object (held, so its id is not reused) and placement: a
    # served tensor is declared the same way for every request.
    key = (id(desc), tag, mclass, min_alignment)
    hit = _DECLARED.get(key)
    if hit is not None and hit[0] is desc:
        return hit[1]
    handles = tuple(BufferHandle(h.byte_size, max(h.alignment, min_alignment) if h.byte_size
                                 else h.alignment, tag, SyncMode.PRODUCER_SYNCED, mclass)
                    for h in desc.buffers)
    raw = bytes(dataclasses.replace(desc, buffers=handles).encode())
    if len(raw) <= _DECLARED_BYTES:
        with _DECLARED_LOCK:
            if len(_DECLARED) >= _DECLARED_ENTRIES:
                del _DECLARED[next(iter(_DECLARED))]  # the oldest
            _DECLARED[key] = (desc, raw)
    return raw


_DECLARED: dict[tuple[int, int, int, int], tuple[Any, bytes]] = {}
_DECLARED_LOCK = threading.Lock()
_DECLARED_ENTRIES, _DECLARED_BYTES = 256, 2048


def host_allocs(desc: Any) -> tuple[tuple[int, int], ...]:
    """(bytes, alignment) of the host array :func:`host_arrays` allocates per buffer handle."""
    return tuple((int(h.byte_size), host_alignment(h.alignment, int(h.byte_size)))
                 for h in desc.buffers)


def check_host_allocs(cpu: Any, allocs: tuple[tuple[int, int], ...]) -> None:
    """Check each size of :func:`host_allocs` before :func:`host_buffers` (no check) takes it."""
    for n, _ in allocs:
        cpu.allocator.check_request(n, MemoryClass.STANDARD)


def host_buffers(cpu: Any, allocs: tuple[tuple[int, int], ...]) -> tuple[Buffer, ...]:
    """A host buffer per checked :func:`host_allocs` entry, from the ``cpu`` pool (aligned to
    ``pool_alignment``, the most ``host_alignment`` asks of a size; reused memory is warm)."""
    take = cpu.allocator.take
    return tuple(Buffer.adopt(cpu, take(n, MemoryClass.STANDARD)) for n, _ in allocs)


def buffer_views(buffers: Sequence[Buffer]) -> list[memoryview]:
    """Host views of :func:`host_buffers` (an empty one has no array)."""
    return [b.allocation.raw.data if b.allocation.nbytes else memoryview(b"") for b in buffers]


def host_arrays(desc: Any) -> list[np.ndarray]:
    """One aligned, uninitialised host array per buffer handle of ``desc`` (the destination a
    receiver allocates once, from the descriptor, before any data arrives)."""
    return [aligned_empty(n, align) for n, align in host_allocs(desc)]


__all__ = ["FRAME_BYTES", "SENDFILE_MIN", "SHARD_ALIGN", "FileData", "FramePlan", "buffer_views",
           "check_host_allocs", "declare", "file_spans", "host_allocs", "host_arrays", "host_buffers", "shard_span",
           "tensor_nodes"]
