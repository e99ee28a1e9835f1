"""The client of the network interchange protocol: ``hg.connect(url)`` (docs/interchange.md).

A received tensor's host memory is allocated once, from its descriptor, after every size in it
was checked against what the client allows; TENSOR_DATA frames are then read with
``recv_into`` straight into it. Nothing the server sends is trusted: frames must ascend with no
gap or overlap within the declared total, totals must equal the descriptor's buffer sizes, and
composites are bounded in depth and members.
"""

from __future__ import annotations

import dataclasses
import itertools
import ssl
import struct
import threading
import time
import weakref
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from hurray_gpu.errors import (
    ArgumentTypeError,
    HurrayGPUError,
    ProtocolError,
    RemoteError,
    UnsupportedOpError,
)
from hurray_gpu.format import protocol as P
from hurray_gpu.format.codec import handles, is_head, member_count
from hurray_gpu.format.descriptor.buffers import DeviceTag
from hurray_gpu.format.descriptor.layouts import LAYOUT_NAMES
from hurray_gpu.format.descriptor.model import TensorDescriptor, decode_descriptor
from hurray_gpu.net.framing import (
    FRAME_BYTES,
    FramePlan,
    buffer_views,
    check_host_allocs,
    declare,
    host_allocs,
    host_arrays,
    host_buffers,
    shard_span,
)
from hurray_gpu.net.server import MAX_SHARDS, dtype_entry, shard_entry
from hurray_gpu.net.staging import Staging
from hurray_gpu.net.transport import Connection, StreamError, TransportError, dial, recv_data
from hurray_gpu.parts import Placement, as_tensor, check_room, is_tensor, release, tensor_builder
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.hostmem import HOST_ALIGNMENT
from hurray_gpu.runtime.memory import MemoryClass
from hurray_gpu.runtime.registry import resolve_device
from hurray_gpu.runtime.stream import Event, Stream, current_stream
from hurray_gpu.runtime.transfer import Progress
from hurray_gpu.tensor import Tensor

DEFAULT_MAX_TENSOR = 16 << 30  # the most bytes one get() allocates for a server's tensor
MAX_MEMBERS = 1 << 16  # members of one composite (and its nested composites) together
MAX_DEPTH = 8  # composite nesting, as for files and streams
_RECONNECT = "the server is out of step; reconnect."
_TAGS = {name: tag for tag, name in LAYOUT_NAMES.items()}
_PLANS, _PLAN_BYTES = 64, 2048  # remembered descriptor messages per client, and their size
_STEPS = 256  # data frames of an answer remembered for a repeat (16 MiB each: 4 GiB by default)
# (checked descriptor, its bytes, declared cpu bytes, their descriptor, (size, alignment)s,
# the answer expected when the same descriptor comes again: see _expected)
_Plan = tuple[Any, int, bytes, Any, tuple[tuple[int, int], ...], "_Answer | None"]
# A plain get (host result, default layouts) by (key, allow_transcode, dtype): its request
# encoded (stream id at bytes 4-8) and the plan of the answer it had last time.
_Repeat = tuple[bytearray, _Plan]


class _Seen:
    """A Tensor a get(out=) received into (held weakly; the client keeps the last few), its
    kind, the descriptor object found to fit it, its allocations and the views of its
    buffers: the same out= again skips the checks that cannot change. The views (and
    allocations) are dropped when the Tensor goes, so they never keep its memory alive."""

    __slots__ = ("ref", "kind", "match", "views", "allocs", "__weakref__")

    def fits(self, out: Any) -> bool:
        """Whether ``out`` is this Tensor, its memory not freed since."""
        if self.ref() is not out or self.views is None:
            return False
        for a in self.allocs:  # noqa: SIM110 (no generator on the path of every get)
            if a.freed:
                return False
        return True

    def __init__(self, tensor: Any, kind: tuple[Any, ...] | None, match: Any,
                 views: list[memoryview]) -> None:
        self.kind, self.match = kind, match
        self.views: list[memoryview] | None = views
        self.allocs = tuple(b.allocation for b in tensor.buffers)
        me = weakref.ref(self)

        def gone(_: object) -> None:
            seen = me()
            if seen is not None:
                seen.views, seen.allocs = None, ()
        self.ref = weakref.ref(tensor, gone)


_OUTS = 8  # out= Tensors remembered per client (see _Seen)
_U32 = struct.Struct("<I")
_DROP = 1 << 16  # the data of an answer out= cannot hold is read into this much, and dropped


def _entries(layouts: Sequence[Any] | None, dtype: str | None) -> tuple[P.LayoutEntry, ...]:
    out = [dtype_entry(dtype)] if dtype is not None else []
    for item in layouts or ():
        if isinstance(item, P.LayoutEntry):
            out.append(item)
        elif isinstance(item, str) and item in _TAGS:
            out.append(P.LayoutEntry(_TAGS[item]))
        elif isinstance(item, int) and item in LAYOUT_NAMES:
            out.append(P.LayoutEntry(item))
        else:
            raise UnsupportedOpError(f"{item!r} is not a layout", fix="name layouts as "
                                     f"{', '.join(sorted(_TAGS))}, or give their tags.")
    return tuple(out)


class _Answer:
    """The answer a repeated get expects (as this package's server frames it, see FramePlan):
    ``frames``, restamped per request; for an answer that fits the read-ahead buffer, its
    ``size``, its runs of messages with their offsets, and where each piece is received
    (a run: its slice of the read-ahead buffer; data: (buffer, start, stop)), see
    Connection.recv_small. ``size`` is 0 for a larger answer."""

    __slots__ = ("frames", "size", "runs", "slots", "bound")

    def __init__(self, frames: FramePlan, readahead: memoryview) -> None:
        self.frames = frames
        self.runs: list[tuple[int, bytearray]] = []
        self.slots: list[memoryview | tuple[int, int, int]] = []
        at = 0
        for piece in frames.pieces:
            if isinstance(piece, tuple):
                self.slots.append(piece)
                at += piece[2] - piece[1]
            else:
                self.runs.append((at, piece))
                self.slots.append(readahead[at:at + len(piece)])
                at += len(piece)
        self.size = at if at <= len(readahead) else 0
        self.bound: tuple[list[memoryview], list[memoryview]] | None = None  # see iov

    def iov(self, views: list[memoryview], keep: bool) -> list[memoryview]:
        """Where each piece of a small answer is received, its data into ``views``; with
        ``keep``, kept for the same ``views`` again (a repeated get(out=): that Tensor's
        seen views, whose few KiB it then keeps alive)."""
        bound = self.bound
        if bound is not None and bound[0] is views:
            return bound[1]
        iov = [views[p[0]][p[1]:p[2]] if isinstance(p, tuple) else p for p in self.slots]
        if keep:
            self.bound = (views, iov)
        return iov


class _OutMismatch(UnsupportedOpError):
    """``get(out=)`` cannot hold what the server sent; its data was read and dropped, so the
    connection stays in step."""


def _kind(desc: Any) -> tuple[Any, ...]:
    """What ``out=`` must match of a descriptor: everything but the buffers' alignment and
    placement (a host copy has its own; the server declares the stored ones)."""
    return (desc.dtype, desc.shape, desc.layout, desc.byte_offset, desc.quantization,
            desc.shard, desc.statistics, desc.extension_type, desc.composite_member,
            desc.trailing, tuple(int(h.byte_size) for h in desc.buffers))


class _Into:
    """The caller's memory a ``get(out=)`` receives into: a writable host Tensor (not a
    composite), received into when the descriptor the server sends matches its own (see
    :func:`_kind`), or a writable C-contiguous buffer (a NumPy array, bytearray, memoryview)
    of exactly a one-buffer tensor's bytes, 64-byte aligned at least."""

    __slots__ = ("tensor", "kind", "views", "array", "match")

    def __init__(self, out: Any, seen: _Seen | None = None) -> None:
        fix = ("pass a Tensor in host memory (an earlier get's result, or hg.from_numpy("
               "np.empty(...))), or an aligned, writable NumPy array of the tensor's bytes.")
        self.array: np.ndarray | None = None
        self.kind: tuple[Any, ...] | None = None
        self.match: Any = None  # the descriptor object last found to fit (see check)
        if seen is not None and seen.fits(out):
            # A Tensor a recent get(out=) received into: its descriptor and buffers cannot
            # have changed, so only a free since then is checked again.
            self.tensor, self.kind, self.match = out, seen.kind, seen.match
            self.views: list[memoryview] = seen.views  # type: ignore[assignment]
            return
        if is_tensor(out):
            buffers = out.buffers
            arrays = [b.device.allocator.host_array(b.allocation) for b in buffers]
            if out.is_composite or not out.is_host or any(
                    a is None or not a.flags.writeable or b.allocation.readonly
                    or b.allocation.freed for a, b in zip(arrays, out.buffers, strict=True)):
                raise UnsupportedOpError(f"get(out=) needs a writable, non-composite tensor "
                                         f"in host memory, not {out!r}", fix=fix)
            self.tensor, self.kind = out, _kind(out.descriptor)
            self.views = [a.data for a in arrays]  # type: ignore[union-attr]
            return
        try:
            view = memoryview(out)
        except TypeError:
            raise ArgumentTypeError(f"get(out=) takes a Tensor or a writable buffer, not "
                                    f"{type(out).__name__}", fix=fix) from None
        if view.readonly or not view.c_contiguous:
            raise UnsupportedOpError("get(out=) got a read-only or non-contiguous buffer",
                                     fix=fix)
        self.array = np.frombuffer(view.cast("B") if view.ndim != 1 or view.format != "B"
                                   else view, np.uint8)
        if self.array.nbytes and self.array.ctypes.data % HOST_ALIGNMENT:
            raise UnsupportedOpError(f"get(out=) got a buffer at an address that is not a "
                                     f"multiple of {HOST_ALIGNMENT} bytes", fix=fix)
        self.tensor, self.kind, self.views = None, None, [self.array.data]

    def check(self, desc: Any, allocs: tuple[tuple[int, int], ...]) -> list[memoryview]:
        """The views to receive ``desc``'s buffers into.

        Raises:
            _OutMismatch: ``desc`` does not fit (the caller drops its data first)."""
        if self.tensor is not None:
            if desc is self.match or self.kind == _kind(desc):
                self.match = desc
                return self.views
            what = f"{self.tensor!r}"
        elif len(allocs) == 1 and not is_head(desc) and allocs[0][0] == len(self.views[0]) \
                and not self.array.ctypes.data % allocs[0][1]:  # type: ignore[union-attr]
            return self.views
        else:
            what = f"a {len(self.views[0])}-byte buffer"
        raise _OutMismatch(f"get(out=) holds {what}, but the server sent {desc.dtype.name} "
                           f"{list(desc.shape)} ({desc.layout.__class__.__name__}, "
                           f"{len(allocs)} buffers of {[n for n, _ in allocs]} bytes"
                           f"{', a composite head' if is_head(desc) else ''}); its data was "
                           "dropped", fix="pass out= of the tensor's exact kind (a Tensor: its "
                           "dtype, shape, layout and buffer sizes; a buffer: the bytes of a "
                           "one-buffer tensor, aligned as it needs), or get() without out=.")

    def result(self, build: Any, declared: Any, raw: bytes, cpu: Any) -> Tensor:
        """The Tensor to return: ``out`` itself, or one over the buffer."""
        if self.tensor is not None:
            return self.tensor  # type: ignore[no-any-return]
        return build(declared, (Buffer.wrap(self.array, cpu),),  # type: ignore[no-any-return]
                     (), raw, cpu, MemoryClass.STANDARD, None, None)


class Client:
    """A connection to a tensor server; use :func:`connect`. One request at a time runs on a
    connection (a lock orders callers from several threads); open more for concurrency."""

    def __init__(self, url: str, *, ssl_context: ssl.SSLContext | None = None,
                 timeout: float = 60.0, max_message_size: int = P.DEFAULT_MAX_MESSAGE,
                 max_tensor_bytes: int = DEFAULT_MAX_TENSOR) -> None:
        self.url = url
        self.max_tensor_bytes = max_tensor_bytes
        self._options: dict[str, Any] = {"ssl_context": ssl_context, "timeout": timeout,
                         "max_message_size": max_message_size,
                         "max_tensor_bytes": max_tensor_bytes}
        self._peers: list[Client] = []  # extra connections for parallel gets
        self._conn = Connection(dial(url, ssl_context, timeout),
                                max_message_size=max_message_size, timeout=timeout)
        self._lock = threading.Lock()
        self._next = 2
        self._plans: dict[tuple[P.TensorDescriptorMsg, bool], _Plan] = {}  # see _plan
        self._repeats: dict[tuple[str, bool, str | None], _Repeat] = {}  # see _again
        self._answered: _Plan | None = None  # the plan _receive took for its last tensor
        self._outs: dict[int, _Seen] = {}  # the last out= Tensors by id: see _Into
        self._cpu, self._build = resolve_device("cpu"), tensor_builder()
        self._rings: dict[Any, Stream] = {}  # the staging ring's stream per device
        try:
            self.server_hello = self._hello(max_message_size)
        except BaseException:
            self._conn.close()
            raise

    def _hello(self, max_message_size: int) -> P.Hello:
        conn = self._conn
        conn.send(P.ClientHello(P.PROTOCOL_VERSION, max_message_size, 0, (), (DeviceTag.CPU,),
                                ()), 1)
        header, msg = conn.recv_message()
        if isinstance(msg, P.ErrorMsg):
            raise RemoteError(msg.code, msg.message)
        if not isinstance(msg, P.ServerHello) or header.stream_id != 1:
            raise ProtocolError(f"the server answered the hello with type 0x{header.type:X}",
                                fix="connect to a Hurray interchange server.")
        if msg.version > P.PROTOCOL_VERSION:
            raise ProtocolError(f"the server chose protocol version {msg.version}, above ours",
                                code=P.ErrorCode.PROTOCOL_VERSION_MISMATCH,
                                fix="upgrade hurray_gpu or use a matching server.")
        if msg.max_message_size < 4096:
            raise ProtocolError(f"the server accepts messages of {msg.max_message_size} bytes",
                                fix="configure the server for messages of at least 4 KiB.")
        conn.peer_max = msg.max_message_size
        return msg

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (and those parallel gets opened); idempotent."""
        for peer in self._peers:
            peer.close()
        self._rings.clear()  # a Vulkan ring stream's thread ends with the stream
        self._conn.close()

    def _call(self, work: Any, *args: Any, send: bytearray | None = None) -> Any:
        """Run one request, ``work(stream id, *args)``, after sending the encoded message
        ``send`` (if given) stamped with the stream id; a broken or lying server closes the
        connection (it cannot be trusted to be in step any more), a RemoteError leaves it
        open."""
        with self._lock:
            if self._conn.closed:
                raise TransportError(f"the connection to {self.url} is closed",
                                     fix="connect again with hg.connect(url).")
            sid = self._next
            self._next = sid + 1
            try:
                if send is not None:
                    _U32.pack_into(send, 4, sid)
                    self._conn.send_message(send)
                return work(sid, *args)
            except (RemoteError, _OutMismatch):
                raise
            except (HurrayGPUError, OSError):
                self._conn.close()
                raise

    def get(self, key: str, *, device: Any = None, layouts: Sequence[Any] | None = None,
            allow_transcode: bool = False, dtype: str | None = None,
            parallel: int = 1, out: Any = None) -> Tensor:
        """Fetch the tensor ``key``.

        Args:
            key: the server's key (docs/interchange.md, Keys).
            device: put the result there (received in place or through a staging ring).
            layouts: acceptable layouts in preference order (names such as ``"row_major"``
                or tags); None accepts the stored layout.
            allow_transcode: let the server convert to an acceptable layout.
            dtype: ask for dense row-major values of this element type (a dequantization
                or conversion on the server; needs ``allow_transcode`` unless stored so).
            parallel: receive the bytes as this many shards over as many connections at
                once (PARALLEL_STREAMS; the extra connections stay open for later gets).
            out: receive into this memory instead of a new result: a writable host Tensor
                of the very kind the server sends (dtype, shape, layout, buffer sizes; not
                a composite), returned itself, or a writable, 64-byte aligned C-contiguous
                buffer (a NumPy array) of a one-buffer tensor's exact bytes, returned
                wrapped in a Tensor. Not with ``device`` (other than the cpu) or
                ``parallel``.

        Returns:
            The Tensor (a composite head with its members), on ``device`` or the cpu.

        Raises:
            RemoteError: the server answered ERROR (``.code``: UNKNOWN_TENSOR,
                LAYOUT_UNAVAILABLE, TRANSCODE_LIMIT_EXCEEDED, ...); the connection stays open.
            ProtocolError, TransportError: the server broke the protocol or the connection
                failed; the connection is closed.
            UnsupportedOpError: ``parallel`` > 1 for a server without PARALLEL_STREAMS;
                ``out`` unfit before the request (read-only, misaligned, with ``device`` or
                ``parallel``) or for what the server sent (its data is then read and
                dropped; the connection stays open).
            ArgumentTypeError: ``out`` is neither a Tensor nor a buffer.
        """
        if device is None and layouts is None and parallel == 1:  # a plain get
            plain = (key, allow_transcode, dtype)
            seen = self._repeats.get(plain)
            if seen is not None and (out is None or (
                    (last := self._outs.get(id(out))) is not None and last.ref() is out)):
                # Asked before, into a new result or the last out= again: the request
                # leaves first, the rest (out='s checks too) is made while the server works
                # (see _again).
                return self._call(self._again, plain, seen, None, out,  # type: ignore[no-any-return]
                                  send=seen[0])
        into = None if out is None else _Into(out, self._outs.get(id(out)))
        dest = None if device is None else resolve_device(device)
        if into is not None and (parallel != 1 or (
                dest is not None and not dest.allocator.host_memory)):
            raise UnsupportedOpError("get(out=) receives into host memory over one connection",
                                     fix="drop device= (copy the result with .to(device)) or "
                                         "parallel=, or drop out=.")
        repeat = (key, allow_transcode, dtype) if (dest is None or into is not None) and \
            layouts is None and parallel == 1 else None
        seen = None if repeat is None else self._repeats.get(repeat)
        if seen is not None:
            return self._call(self._again, repeat, seen, into,  # type: ignore[no-any-return]
                              send=seen[0])
        entries = _entries(layouts, dtype)
        tag = dest.tag if dest is not None and dest.tag in self.server_hello.devices \
            else DeviceTag.CPU
        flags = P.RequestFlag.ALLOW_TRANSCODE if allow_transcode else 0

        if parallel != 1:
            whole = self._get_parallel(P.TensorRequest(
                key, entries, int(tag), 0, int(flags | P.RequestFlag.PARALLEL_OK)), parallel)
            return whole if dest is None else whole.to(dest)

        on_device = dest is not None and not dest.allocator.host_memory
        target = Placement(dest, MemoryClass.STANDARD, Progress(0, "", False)) \
            if on_device and dest is not None else None

        def work(sid: int) -> Tensor:
            request = P.encode(P.TensorRequest(key, entries, int(tag), 0, int(flags)), sid)
            self._conn.send_views([request])
            budget = [self.max_tensor_bytes, MAX_MEMBERS]
            t = self._receive(sid, 0, budget, target, into)
            if repeat is not None:
                self._remember(repeat, bytearray(request), t)
            return t

        t: Tensor = self._call(work)
        self._note(into)
        return t if dest is None or into is not None else t.to(dest)

    def _note(self, into: _Into | None) -> None:
        """Remember the Tensor a get(out=) just received into (see :class:`_Seen`): the last
        few, so that gets alternating between some out= Tensors each find theirs."""
        if into is not None and into.tensor is not None:
            outs, key = self._outs, id(into.tensor)
            seen = outs.get(key)
            if seen is None or seen.ref() is not into.tensor or seen.match is not into.match:
                outs.pop(key, None)
                if len(outs) >= _OUTS:
                    del outs[next(iter(outs))]  # the oldest
                outs[key] = _Seen(into.tensor, into.kind, into.match, into.views)

    def _remember(self, plain: tuple[str, bool, str | None], request: bytearray,
                  t: Tensor) -> None:
        """Keep a plain get's request and the plan of its answer for the same get again."""
        plan, self._answered = self._answered, None
        if plan is None or plan[5] is None or t.is_composite:
            return
        self._repeats.pop(plain, None)
        if len(self._repeats) >= _PLANS:
            del self._repeats[next(iter(self._repeats))]  # the oldest
        self._repeats[plain] = (request, plan)

    def _again(self, sid: int, plain: tuple[str, bool, str | None], seen: _Repeat,
               into: _Into | None, out: Any = None) -> Tensor:
        """A plain get asked again (its request re-stamped and sent): while the server answers
        with the very bytes it answered last time (each run of messages compared as bytes,
        no decode), the data received straight into new arrays, a small answer in one
        receive; at the first run that differs, the general receive takes over there. What
        does not need the answer (the result Tensor, the expected bytes) is made while the
        server works on it."""
        request, plan = seen  # (the request was sent: see _call)
        conn = self._conn
        if out is not None:  # the last out= again (checked here: see _Into)
            try:
                into = _Into(out, self._outs.get(id(out)))
            except UnsupportedOpError as exc:  # freed since: the answer is dropped
                self._receive(sid, 0, [self.max_tensor_bytes, MAX_MEMBERS])
                raise _OutMismatch(f"{exc} (its answer was dropped)",
                                   fix="keep out='s memory until its get returns.") from None
        _, nbytes, raw, declared, allocs, answer = plan
        if answer is not None and nbytes <= self.max_tensor_bytes:
            if into is None:
                buffers = host_buffers(self._cpu, allocs)
                views = buffer_views(buffers)
                result = self._build(declared, buffers, (), raw, self._cpu,
                                     MemoryClass.STANDARD, None, None)
            else:  # a mismatch is reported by the general receive, which drops the data
                try:
                    views = into.check(plan[0], allocs)
                    result = into.result(self._build, declared, raw, self._cpu)
                    self._note(into)
                except _OutMismatch:
                    answer = None
        if answer is not None and nbytes <= self.max_tensor_bytes:
            frames = answer.frames
            frames.stamp(sid)
            if answer.size:
                whole = conn.recv_small(answer.runs, answer.iov(views, into is not None),
                                         answer.size)
            else:
                done, whole = conn.recv_planned(frames.pieces, views)
                if done and not whole:  # framed otherwise, or an ERROR or a PING amid data
                    self._recv(sid, views, nbytes, (done, nbytes))
                    whole = True
            if whole:
                return result  # type: ignore[no-any-return]
        # Another descriptor or an ERROR (nothing consumed), or not to be received this way.
        t = self._receive(sid, 0, [self.max_tensor_bytes, MAX_MEMBERS], None, into)
        self._remember(plain, request, t)
        self._note(into)
        return t

    def _get_parallel(self, request: P.TensorRequest, count: int) -> Tensor:
        """Shard i of ``count`` arrives on connection i, straight into one destination."""
        if not 1 <= count <= MAX_SHARDS or not (
                self.server_hello.capabilities & P.Capability.PARALLEL_STREAMS):
            raise UnsupportedOpError(f"parallel={count} needs a server with PARALLEL_STREAMS "
                                     f"and 1..{MAX_SHARDS} shards",
                                     fix="use parallel=1 (one connection).")
        while len(self._peers) < count - 1:
            self._peers.append(Client(self.url, **self._options))
        lock = threading.Lock()
        shared: dict[str, Any] = {}  # the descriptor, its bytes and the destination arrays
        errors: list[BaseException] = []

        def shard(index: int, client: Client) -> None:
            def work(sid: int) -> None:
                entry = shard_entry(index, count)
                client._conn.send(dataclasses.replace(
                    request, layouts=(*request.layouts, entry)), sid)
                msg = client._next_message(sid)
                if not isinstance(msg, P.TensorDescriptorMsg) or (
                        msg.shard_index, msg.total_shards) != (index, count):
                    raise ProtocolError(f"expected the descriptor of shard {index} of {count}",
                                        code=P.ErrorCode.SHARD_MISMATCH,
                                        fix="the server is out of step; reconnect.")
                with lock:
                    if not shared:
                        desc = self._plan(msg, [self.max_tensor_bytes, 0], whole=False)[0]
                        shared.update(desc=desc, raw=msg.descriptor, arrays=host_arrays(desc))
                    elif msg.descriptor != shared["raw"]:
                        raise ProtocolError(f"shard {index}'s descriptor differs from another "
                                            "shard's", code=P.ErrorCode.SHARD_MISMATCH,
                                            fix="the server must send one tensor to all.")
                total = sum(a.nbytes for a in shared["arrays"])
                span = shard_span(total, index, count)
                if msg.total_data_bytes != span[1] - span[0]:
                    raise ProtocolError(f"shard {index} of {count} declared "
                                        f"{msg.total_data_bytes} bytes, not {span[1] - span[0]}",
                                        code=P.ErrorCode.SHARD_MISMATCH,
                                        fix="split shards as docs/interchange.md says.")
                try:
                    recv_data(client._conn, sid, [a.data for a in shared["arrays"]], total, span)
                except StreamError as exc:
                    raise ProtocolError(str(exc), code=exc.code, fix=_RECONNECT) from None

            try:
                client._call(work)
            except BaseException as exc:  # re-raised by the calling thread
                errors.append(exc)

        threads = [threading.Thread(target=shard, args=(i, c), daemon=True)
                   for i, c in enumerate(self._peers[:count - 1], start=1)]
        for thread in threads:
            thread.start()
        shard(0, self)
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
        return Tensor.from_parts(declare(shared["desc"], DeviceTag.CPU, 0, 0), shared["arrays"])

    def _plan(self, msg: P.TensorDescriptorMsg, budget: list[int], whole: bool = True
              ) -> _Plan:
        """The descriptor of ``msg`` after every check that precedes allocating for it, and
        how to receive and wrap its data: remembered per descriptor message (the checks are
        a function of its bytes; the budget is not, and is charged every time)."""
        plan = self._plans.get((msg, whole))
        if plan is None:
            desc = self._check(msg, whole)
            raw = declare(desc, DeviceTag.CPU, 0, 0)  # the bytes will be in host memory
            allocs = host_allocs(desc)
            check_host_allocs(self._cpu, allocs)
            plan = (desc, sum(int(h.byte_size) for h in handles(desc)), raw,
                    decode_descriptor(raw), allocs, self._expected(msg, desc, allocs, whole))
            if len(msg.descriptor) <= _PLAN_BYTES:
                if len(self._plans) >= _PLANS:
                    del self._plans[next(iter(self._plans))]  # the oldest
                self._plans[(msg, whole)] = plan
        budget[0] -= plan[1]
        if budget[0] < 0:
            raise ProtocolError(f"the server declared {plan[1]} bytes, past this client's "
                                f"max_tensor_bytes {self.max_tensor_bytes}",
                                code=P.ErrorCode.MESSAGE_TOO_LARGE,
                                fix="pass connect(..., max_tensor_bytes=) if it is expected.")
        return plan

    def _expected(self, msg: P.TensorDescriptorMsg, desc: Any,
                  allocs: tuple[tuple[int, int], ...], whole: bool) -> _Answer | None:
        """The answer to a request that this descriptor message answers, as this package's
        server frames it for this client; None for a composite head or a shard (those are
        never repeated this way)."""
        frame = max(1, min(FRAME_BYTES, self._conn.max_message_size - 8))
        if not whole or is_head(desc) or len(msg.descriptor) > _PLAN_BYTES or sum(
                -(-n // frame) for n, _ in allocs) > _STEPS:
            return None  # (a run of messages compared must fit the read-ahead buffer)
        plan = FramePlan()
        plan.tensor(P.encode(msg, 1), [n for n, _ in allocs], frame)
        return _Answer(plan, self._conn.readahead_view())

    @staticmethod
    def _check(msg: P.TensorDescriptorMsg, whole: bool) -> Any:
        desc = decode_descriptor(msg.descriptor)
        sizes = [int(h.byte_size) for h in handles(desc)]
        if whole and sum(sizes) != msg.total_data_bytes:
            raise ProtocolError(f"total_data_bytes {msg.total_data_bytes} != the descriptor's "
                                f"buffers ({sum(sizes)} bytes)",
                                fix="the server is broken; report it.")
        if not whole and is_head(desc):
            raise ProtocolError("a composite arrived as shards", code=P.ErrorCode.SHARD_MISMATCH,
                                fix="the server must send composites whole.")
        if any(h.sync_mode for h in handles(desc)):
            raise ProtocolError("a buffer arrived with a sync_mode other than producer-synced",
                                fix="the server must declare sync_mode 0 across machines.")
        return desc

    def _next_message(self, sid: int) -> Any:
        while True:
            header, msg = self._conn.recv_message()
            if isinstance(msg, P.Ping):
                self._conn.send(P.Pong(), header.stream_id)
                continue
            if header.stream_id != sid or msg is None:
                raise ProtocolError(f"message type 0x{header.type:X} on stream "
                                    f"{header.stream_id} while waiting on stream {sid}",
                                    fix="the server is out of step; reconnect.")
            if isinstance(msg, P.ErrorMsg):
                raise RemoteError(msg.code, msg.message)
            return msg

    def _receive(self, sid: int, depth: int, budget: list[int],
                 target: Placement | None = None, into: _Into | None = None) -> Tensor:
        msg = self._next_message(sid)
        if not isinstance(msg, P.TensorDescriptorMsg):
            raise ProtocolError(f"expected TENSOR_DESCRIPTOR, got {type(msg).__name__}",
                                fix="the server is out of step; reconnect.")
        if (msg.shard_index, msg.total_shards) != (0, 1):
            raise ProtocolError(f"shard {msg.shard_index} of {msg.total_shards} of an unsharded "
                                "request", code=P.ErrorCode.SHARD_MISMATCH,
                                fix="the server must send the whole tensor as shard 0 of 1.")
        plan = self._plan(msg, budget)
        desc, _, raw, declared, allocs, _ = plan
        if depth == 0:
            self._answered = plan
        if target is not None and not is_head(desc):
            return self._receive_on(sid, desc, msg.total_data_bytes, target)
        if into is not None:
            try:
                views = into.check(desc, allocs)
            except _OutMismatch:  # its data is dropped: the connection stays in step
                if not is_head(desc):
                    self._recv(sid, itertools.repeat(memoryview(bytearray(_DROP))),
                               msg.total_data_bytes)
                    raise
                self._answered = None  # a composite is received whole, then dropped
                self._receive_members(sid, depth, budget, desc, allocs, raw, declared)
                raise
            self._recv(sid, views, msg.total_data_bytes)
            return into.result(self._build, declared, raw, self._cpu)
        return self._receive_members(sid, depth, budget, desc, allocs, raw, declared, target)

    def _receive_members(self, sid: int, depth: int, budget: list[int], desc: Any,
                         allocs: tuple[tuple[int, int], ...], raw: bytes, declared: Any,
                         target: Placement | None = None) -> Tensor:
        """The data of a checked descriptor ``desc`` (its TENSOR_DESCRIPTOR was read), then
        a composite head's members, each received whole."""
        total = sum(n for n, _ in allocs)
        buffers = host_buffers(self._cpu, allocs)
        self._recv(sid, buffer_views(buffers), total)
        members = []
        if is_head(desc):
            count = member_count(desc)
            budget[1] -= count
            if depth >= MAX_DEPTH or budget[1] < 0:
                raise ProtocolError(f"a composite nested {depth + 1} deep with {count} members "
                                    "passes this client's bounds",
                                    fix=f"keep composites within {MAX_DEPTH} levels and "
                                        f"{MAX_MEMBERS} members.")
            members = [self._receive(sid, depth + 1, budget, target) for _ in range(count)]
        if target is not None:  # a head: its members are on the device already
            return Tensor.from_parts(target.retag(desc), [], members)
        if members:  # a head: from_parts checks its members against it
            return Tensor.from_parts(raw, list(buffers), members)
        # Allocated here from the checked descriptor, so no part needs checking again.
        return self._build(declared, buffers, (), raw, self._cpu,  # type: ignore[no-any-return]
                           MemoryClass.STANDARD, None, None)

    def _recv(self, sid: int, views: Iterable[memoryview], total: int,
              span: tuple[int, int] | None = None) -> None:
        try:
            recv_data(self._conn, sid, views, total, span)
        except StreamError as exc:  # a server out of step is never resynchronised
            raise ProtocolError(str(exc), code=exc.code, fix=_RECONNECT) from None

    def _receive_on(self, sid: int, desc: Any, total: int, target: Placement) -> Tensor:
        """Receive into device buffers: in place where the host addresses them (lavapipe,
        unified-memory GPUs), else through the staging ring."""
        new, dev = target.retag(desc), target.device
        check_room(dev, total)
        buffers: list[Buffer] = []
        try:
            buffers += [target.alloc(h) for h in new.buffers]
            direct = [dev.allocator.host_view(b.allocation) for b in buffers]
            views = [v.data for v in direct if v is not None]
            staging = None if len(views) == len(buffers) else self._staging(buffers, dev)
            try:
                # The host writes below come after every use of this memory queued so far (a
                # pooled buffer's or pinned slot's last user may still be running).
                Event(dev, timing=False).record(current_stream(dev)).synchronize()
                self._recv(sid, views if staging is None else staging.views(), total)
            except BaseException:
                if staging is not None:
                    staging.finish(False)
                raise
            if staging is not None:
                staging.finish(True)
        except BaseException:
            release(buffers)
            raise
        return Tensor.from_parts(new, buffers)

    def _staging(self, buffers: Sequence[Buffer], device: Any) -> Staging:
        """The staging ring to ``buffers`` on ``device``: its stream is kept per device (a
        Vulkan stream is a thread and a command pool)."""
        stream = self._rings.get(device)
        if stream is None:
            stream = self._rings[device] = Stream(device)
        return Staging(buffers, stream)

    def put(self, key: str, tensor: Any) -> None:
        """Store ``tensor`` (a Tensor on any device, or a NumPy array) on the server as ``key``.

        Device memory is copied to the host one bounded chunk at a time while it is sent.

        Raises:
            UnsupportedOpError: a composite head (PUT each member under its own key).
            RemoteError: the server refused it (too large, malformed); the connection stays.
        """
        t = as_tensor(tensor)
        if t.is_composite:
            raise UnsupportedOpError("a composite head cannot be PUT",
                                     fix="PUT each of tensor.members under its own key.")
        raw = declare(t.descriptor, DeviceTag.CPU, 0, 0)
        total = sum(int(h.byte_size) for h in t.descriptor.buffers)

        def work(sid: int) -> None:
            self._conn.send_buffers(sid, t.buffers, head=P.TensorPut(key, raw, total), end=True)
            self._put_ack(sid)

        self._call(work)

    def _put_ack(self, sid: int) -> None:
        msg = self._next_message(sid)
        if not isinstance(msg, P.TensorPutAck):
            raise ProtocolError(f"expected TENSOR_PUT_ACK, got {type(msg).__name__}",
                                fix="the server is out of step; reconnect.")

    def put_kv(self, name: str, cache: Any, seq_id: int, layer: int | None = None) -> None:
        """PUT sequence ``seq_id`` of a PagedKVCache as ``kv/<name>/<layer>``
        ([2, tokens, heads, head_dim]), or every layer as ``kv/<name>`` ([layers, 2, ...]:
        the layers must hold the same tokens): the disaggregated prefill's hand-off. From a
        host-memory cache without kv_dtype the rows are sent from the pages themselves
        (:meth:`PagedKVCache.read_rows`, no gather); from any other cache they are gathered
        (dequantized) on its device first, then sent.

        Raises:
            UnsupportedOpError: layers of different lengths for ``kv/<name>``; what the
                cache raises for a bad sequence or layer.
            RemoteError: the server refused it; the connection stays.
        """
        layers = list(range(cache.num_layers)) if layer is None else [layer]
        key = f"kv/{name}" if layer is None else f"kv/{name}/{layer}"

        def shape_of(lens: set[int]) -> tuple[int, ...]:
            if len(lens) != 1:
                raise UnsupportedOpError(f"sequence {seq_id}'s layers hold {sorted(lens)} "
                                         "tokens", fix="PUT kv/<name>/<layer> one layer at a time.")
            shape = (2, lens.pop(), cache.num_kv_heads, cache.head_dim)
            return shape if layer is not None else (len(layers), *shape)

        if not cache.row_views:
            rows = [np.stack([t.to("cpu").numpy() for t in cache.gather([seq_id], n)[:2]])
                    for n in layers]
            shape = shape_of({r.shape[1] for r in rows})
            self.put(key, Tensor.from_numpy(np.stack(rows).reshape(shape)))
            return
        opened: list[Any] = []
        try:  # the rows' own token counts: what the views hold, appends since or not
            opened += [cache.read_rows(seq_id, n) for n in layers]
            desc = TensorDescriptor.dense(cache.dtype, shape_of({r.tokens for r in opened}))
            raw, total = declare(desc, DeviceTag.CPU, 0, 0), int(desc.buffers[0].byte_size)
            views = [v for r in opened for v in r.views]

            def work(sid: int) -> None:
                self._conn.send_view_data(sid, views, P.encode(P.TensorPut(key, raw, total),
                                                               sid))
                self._put_ack(sid)

            self._call(work)
        finally:
            for r in opened:
                r.release()

    def ping(self) -> float:
        """Round-trip time of a PING/PONG in seconds."""
        def work(_: int) -> float:
            start = time.perf_counter()
            self._conn.send(P.Ping(), 1)
            msg = self._next_message(1)
            if not isinstance(msg, P.Pong):
                raise ProtocolError(f"expected PONG, got {type(msg).__name__}",
                                    fix="the server is out of step; reconnect.")
            return time.perf_counter() - start

        return float(self._call(work))


def connect(url: str, *, ssl_context: ssl.SSLContext | None = None, timeout: float = 60.0,
            max_message_size: int = P.DEFAULT_MAX_MESSAGE,
            max_tensor_bytes: int = DEFAULT_MAX_TENSOR) -> Client:
    """Connect to a tensor server (docs/interchange.md).

    Args:
        url: ``hurray://host:port`` (default port 7740), ``hurrays://host:port`` (TLS) or
            ``hurray+unix:///abs/path``.
        ssl_context: a client-side ``ssl.SSLContext`` for ``hurrays://`` (default: the
            system's trust store with hostname checks).
        timeout: seconds one message (or the connect) may take.
        max_message_size: the largest payload accepted from the server.
        max_tensor_bytes: the most bytes one get() may allocate.

    Returns:
        A Client (``get``, ``put``, ``ping``, ``close``; a context manager).

    Raises:
        TransportError: nothing answers at ``url``.
        RemoteError, ProtocolError: the server refused or botched the hello.
    """
    return Client(url, ssl_context=ssl_context, timeout=timeout,
                  max_message_size=max_message_size, max_tensor_bytes=max_tensor_bytes)


__all__ = ["DEFAULT_MAX_TENSOR", "Client", "connect"]
