"""The tensor server of the network interchange protocol (docs/interchange.md).

``serve(source)`` answers TENSOR_REQUEST and TENSOR_PUT on TCP, Unix-domain or TLS sockets, one
thread per connection. A source is a ``.hrry`` file (served straight from its memory map), a
directory of them, a dict of Tensors (on any device), a PagedKVCache, or a list of those; the
first source that knows a key answers. Each connection's memory is bounded: a control message
by ``max_message_size``, a pushed tensor by ``max_put_bytes``, device data by one staging chunk.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import socket
import ssl
import struct
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from hurray_gpu.errors import HurrayGPUError, ProtocolError, UnsupportedOpError
from hurray_gpu.format import protocol as P
from hurray_gpu.format.descriptor.buffers import DeviceTag, SyncMode, is_valid_pair
from hurray_gpu.format.descriptor.layouts import LAYOUT_NAMES, ColMajor
from hurray_gpu.format.descriptor.model import TensorDescriptor, decode_descriptor
from hurray_gpu.format.dtypes import by_name, by_tag
from hurray_gpu.net.framing import (
    FileData,
    FramePlan,
    buffer_views,
    check_host_allocs,
    declare,
    file_spans,
    host_allocs,
    host_buffers,
    shard_span,
    tensor_nodes,
)
from hurray_gpu.net.sources import (
    MAX_OPEN_FILES,
    REQUEST_FAILED,
    DirectorySource,
    FileSource,
    KVSource,
    Refused,
    check_key,
    open_source,
    unknown_key,
)
from hurray_gpu.net.transport import (
    ACCEPT_BACKOFF,
    ACCEPT_RETRY,
    DEFAULT_PORT,
    Connection,
    StreamError,
    TransportError,
    listen,
    recv_data,
)
from hurray_gpu.ops.host import relayout
from hurray_gpu.ops.materialize import materialize
from hurray_gpu.runtime.registry import resolve_device
from hurray_gpu.tensor import Tensor

# Implementation-defined error codes (the spec leaves 0xF0-0xFE to implementations).
SERVER_BUSY = 0xF1  # max_connections reached; the connection is closed
# A private layout entry asking for row-major values of one element type: tag 0xF0 with
# metadata b"hgdt" + the type tag. Other implementations skip it as an unknown extension.
DTYPE_ENTRY_TAG = 0xF0
DTYPE_ENTRY_MAGIC = b"hgdt"
# PARALLEL_STREAMS: a request for shard i of n carries the private entry 0xF1 with metadata
# b"hgsh" + i (u32) + n (u32) among its layouts, and sets PARALLEL_OK.
SHARD_ENTRY_TAG = 0xF1
SHARD_ENTRY_MAGIC = b"hgsh"
MAX_SHARDS = 64
DEFAULT_TRANSCODE_LIMIT = 1 << 30
DEFAULT_MAX_PUT = 1 << 30
_REPLIES, _REPLY_PIECES = 64, 512  # prepared answers per connection; iovecs in one of them
_REQUEST = int(P.MessageType.TENSOR_REQUEST)
_U32 = struct.Struct("<I")
_HEADER = struct.Struct("<III")  # a message header: type, stream id, payload length
Files = list[tuple[FileData, int] | None] | None  # each buffer's file and offset (sendfile)


def dtype_entry(dtype: str) -> P.LayoutEntry:
    """The private layout entry that asks for row-major values of ``dtype`` (e.g. bfloat16)."""
    return P.LayoutEntry(DTYPE_ENTRY_TAG, DTYPE_ENTRY_MAGIC + bytes([by_name(dtype).tag]))


def shard_entry(index: int, count: int) -> P.LayoutEntry:
    """The private layout entry that asks for shard ``index`` of ``count`` (PARALLEL_STREAMS)."""
    return P.LayoutEntry(SHARD_ENTRY_TAG, SHARD_ENTRY_MAGIC + struct.pack("<II", index, count))


# -- negotiation and transcoding ---------------------------------------------------------------
def _numel(t: Tensor) -> int | None:
    dims = [d for d in t.shape if d is not None]
    return math.prod(dims) if len(dims) == len(t.shape) else None


def _matches(t: Tensor, entry: P.LayoutEntry) -> bool:
    if entry.tag < 0xF0:
        return bool(t.descriptor.layout_tag == entry.tag)
    return (_entry_dtype(entry) == t.dtype.tag and t.descriptor.layout_tag == 0x01
            and t.quantization is None)


def _entry_dtype(entry: P.LayoutEntry) -> int | None:
    meta = entry.metadata
    if entry.tag == DTYPE_ENTRY_TAG and len(meta) == 5 and meta[:4] == DTYPE_ENTRY_MAGIC:
        return meta[4]
    return None


def _transcode(t: Tensor, entry: P.LayoutEntry, limit: int) -> Tensor | None:
    """``t`` converted to what ``entry`` asks for with the library's ops on t's device, or
    None when that conversion does not exist. Raises Refused beyond ``limit`` bytes."""
    count = _numel(t)
    if count is None or t.is_composite or entry.tag not in (0x01, 0x02, DTYPE_ENTRY_TAG):
        return None
    dtype = None
    if entry.tag == DTYPE_ENTRY_TAG:
        tag = _entry_dtype(entry)
        if tag is None:
            return None
        dtype = by_tag(tag).name
    bits = by_name(dtype).bits if dtype else 32 if t.quantization is not None else t.dtype.bits
    size = (count * bits + 7) // 8
    if size > limit:
        raise Refused(P.ErrorCode.TRANSCODE_LIMIT_EXCEEDED,
                      f"transcoding to layout 0x{entry.tag:02X} would make {size} bytes; this "
                      f"server's transcode_limit is {limit}",
                      fix="request the stored layout, or have the operator raise transcode_limit.")
    try:
        dense = t if (t.descriptor.layout_tag == 0x01 and dtype is None and entry.tag == 0x02) \
            else materialize(t, dtype, max_output_bytes=max(limit, 1))
        if not isinstance(dense, Tensor):
            return None  # a composite group materializes to several tensors
        return relayout(dense, ColMajor()) if entry.tag == 0x02 else dense
    except UnsupportedOpError:
        return None


def negotiate(t: Tensor, request: P.TensorRequest, hello: P.Hello, limit: int) -> Tensor:
    """The tensor to send for ``request``: as stored when its layout is acceptable, else
    transcoded (ALLOW_TRANSCODE) to the first acceptable entry that can be produced.

    Raises:
        Refused: LAYOUT_UNAVAILABLE or TRANSCODE_LIMIT_EXCEEDED.
    """
    wanted = request.layouts or hello.layouts
    if not wanted:
        return t
    allow = bool(request.flags & P.RequestFlag.ALLOW_TRANSCODE)
    over: Refused | None = None
    for entry in wanted:
        if _matches(t, entry):
            return t
        if allow:
            try:
                out = _transcode(t, entry, limit)
            except Refused as exc:
                over = over or exc
                continue
            if out is not None:
                return out
    if over is not None:
        raise over
    tags = ", ".join(f"0x{e.tag:02X}" for e in wanted)
    raise Refused(P.ErrorCode.LAYOUT_UNAVAILABLE,
                  f"the tensor is stored as {t.layout_name} (0x{t.descriptor.layout_tag:02X}) "
                  f"and the request accepts only {tags}" + ("" if allow else
                                                            " without ALLOW_TRANSCODE"),
                  fix="accept the stored layout, or set allow_transcode=True.")


def tensor_plan(t: Any, raw_of: Callable[[Any], bytes], frame: int,
                shard: tuple[int, int] = (0, 1)) -> FramePlan:
    """The answer to a GET of ``t`` (or one shard of its bytes) in frames of ``frame`` bytes:
    descriptor, data frames, DATA_END; a composite head's members follow, each the same way
    (the spec's composite streaming). Every descriptor is declared (and checked by
    ``raw_of``) before anything is sent."""
    plan = FramePlan()
    for node in tensor_nodes(t):
        sizes = [b.nbytes for b in node.buffers]
        lo, hi = shard_span(sum(sizes), *shard)
        plan.tensor(P.encode(P.TensorDescriptorMsg(raw_of(node.descriptor), hi - lo, *shard), 1),
                    sizes, frame, (lo, hi))
        shard = (0, 1)  # members are never sharded
    return plan


def send_tensor(conn: Connection, sid: int, t: Any, raw_of: Callable[[Any], bytes],
                shard: tuple[int, int] = (0, 1)) -> None:
    """Stream ``t`` (or one shard of its bytes) on ``sid`` (see :func:`tensor_plan`)."""
    conn.send_plan(tensor_plan(t, raw_of, conn.frame_bytes, shard), _buffers(t), sid)


def _buffers(t: Any) -> Sequence[Any]:
    return [b for node in tensor_nodes(t) for b in node.buffers] if t.members else t.buffers


class _Reply:
    """A GET's answer (its :func:`tensor_plan`) kept for the next identical request on the
    connection, re-stamped with that request's stream id.

    Valid while the server's lookup of ``key`` returns this very tensor (a PUT or any other
    replacement of the key is a miss; a ``.hrry`` source returns the same tensor only while
    its file is unchanged on disk, see FileSource); the tensor is held weakly, so a replaced
    tensor's memory (or map) is not kept alive by the cache: the views of its data that a
    host answer keeps (``iov``) are dropped when the tensor goes.

    After each answer the reply is stamped for the request most likely next, the same one
    on the next stream (``request``: its bytes): that request is then answered with a
    comparison, the checks that the tensor still holds, and one send.
    """

    __slots__ = ("key", "tensor", "plan", "iov", "allocs", "files", "spans", "request", "sid",
                 "__weakref__")

    def __init__(self, key: str, t: Tensor, plan: FramePlan, iov: list[Any] | None,
                 buffers: Sequence[Any], request: bytes, files: Files) -> None:
        self.key, self.plan, self.iov, self.files = key, plan, iov, files
        # The pieces sent from the tensor's file by sendfile (see FileData), if any.
        self.spans = None if files is None or iov is None else file_spans(plan, files)
        self.allocs = tuple(b.allocation for b in buffers)
        drop = weakref.ref(self)

        def gone(_: object) -> None:  # the tensor was collected: release its memory
            reply = drop()
            if reply is not None:
                reply.iov, reply.allocs, reply.files, reply.spans = None, (), None, None
        self.tensor = weakref.ref(t, gone)
        self.request = bytearray(request)  # the request message, stamped like the plan
        self.sid = 1  # the stream the plan and request are stamped with

    def holds(self, server: Server) -> Tensor | None:
        """The tensor, while the key still names it and its memory was not freed; else None
        (the request then takes the full path, which reports why)."""
        t = self.tensor()
        if t is None:
            return None
        for a in self.allocs:
            if a.freed:
                return None
        try:
            return t if server.find(self.key) is t else None
        except HurrayGPUError:
            return None

    def stamp(self, sid: int) -> None:
        """Stamp the answer and the request with ``sid``."""
        if sid != self.sid:
            self.plan.stamp(sid)
            _U32.pack_into(self.request, 4, sid)
            self.sid = sid


# -- the server --------------------------------------------------------------------------------
class Server:
    """A running tensor server; build it with :func:`serve`.

    Attributes:
        url: where clients connect (``hurray://127.0.0.1:PORT``, ``hurrays://...`` with TLS,
            ``hurray+unix:///path``).
        registry: the dict TENSOR_PUT stores into (the first dict source, else a new one).
        kv_sequences: sequence name -> id of the PagedKVCache source's sequences that PUTs
            of ``kv/<name>`` created (empty without a cache).
    """

    def __init__(self, source: Any, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT,
                 unix: str | None = None, ssl_context: ssl.SSLContext | None = None,
                 max_message_size: int = P.DEFAULT_MAX_MESSAGE,
                 transcode_limit: int = DEFAULT_TRANSCODE_LIMIT,
                 max_put_bytes: int = DEFAULT_MAX_PUT, timeout: float = 30.0,
                 idle_timeout: float = 300.0, max_connections: int = 64,
                 writable: bool = False, sendfile: bool = False,
                 max_open_files: int = MAX_OPEN_FILES) -> None:
        items = source if isinstance(source, list | tuple) else [source]
        self._sources = [open_source(item, writable, sendfile, max_open_files)
                         for item in items]
        dicts = [s for s in self._sources if isinstance(s, dict)]
        self.registry: dict[str, Any] = dicts[0] if dicts else {}
        if not dicts:
            self._sources.insert(0, self.registry)
        kv = [s for s in self._sources if isinstance(s, KVSource)]
        self.kv_sequences: dict[str, int] = kv[0].names if kv else {}
        self.serves_kv = bool(kv)  # GETs of kv/ keys may then be sent from its pages
        self.max_message_size, self.transcode_limit = max_message_size, transcode_limit
        self.max_put_bytes, self.max_connections = max_put_bytes, max_connections
        self.timeout, self.idle_timeout = timeout, idle_timeout
        self.sendfile = sendfile
        self._ssl = ssl_context
        self._sock = listen(host, port, unix)
        self._unix = unix
        if unix is not None:
            self.url = f"hurray+unix://{unix}"
        else:
            bound = self._sock.getsockname()
            name = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
            self.url = f"{'hurrays' if ssl_context else 'hurray'}://{name}:{bound[1]}"
        self._stop = threading.Event()
        self._conns: dict[threading.Thread, Connection | socket.socket] = {}
        self._lock = threading.Lock()
        self._accept = threading.Thread(target=self._accept_loop, name="hurray-accept",
                                        daemon=True)

    def start(self) -> Server:
        """Start accepting connections in the background; returns self."""
        self._accept.start()
        return self

    def wait(self) -> None:
        """Block until :meth:`close` (from another thread, or Ctrl-C around it)."""
        while not self._stop.wait(0.5):
            pass

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop accepting, close every connection, join the threads; idempotent."""
        self._stop.set()
        if self._accept.is_alive():
            self._accept.join()
        self._sock.close()
        with self._lock:
            live = list(self._conns.items())
        for _, conn in live:
            _hang_up(conn)
        for thread, _ in live:
            thread.join(timeout=self.timeout)
        for s in self._sources:
            if not isinstance(s, dict):
                s.close()
        if self._unix is not None and os.path.exists(self._unix):
            os.unlink(self._unix)

    # -- connections -----------------------------------------------------------------------
    def _accept_loop(self) -> None:
        self._sock.settimeout(0.2)  # poll so close() is seen promptly
        while not self._stop.is_set():
            try:
                sock, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError as exc:
                if exc.errno not in ACCEPT_RETRY:
                    return  # the listening socket was closed
                # Out of descriptors or kernel memory, for now: the connections in hand still
                # close and free some, so wait and accept again rather than stop serving.
                self._stop.wait(ACCEPT_BACKOFF)
                continue
            with self._lock:
                if len(self._conns) >= self.max_connections:
                    self._refuse(sock)
                    continue
                thread = threading.Thread(target=self._connection, args=(sock,), daemon=True,
                                          name="hurray-conn")
                self._conns[thread] = sock
            thread.start()

    def _refuse(self, sock: socket.socket) -> None:
        if self._ssl is not None:  # no handshake yet: a plaintext ERROR would be garbage
            _hang_up(sock)
            return
        try:
            sock.settimeout(1.0)
            sock.sendall(P.encode(P.ErrorMsg(SERVER_BUSY, f"the server is at its limit of "
                                             f"{self.max_connections} connections"), 1))
        except OSError:
            pass
        sock.close()

    def _connection(self, sock: socket.socket) -> None:
        conn: Connection | None = None
        try:
            if sock.family != socket.AF_UNIX:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._ssl is not None:
                sock.settimeout(self.timeout)
                sock = self._ssl.wrap_socket(sock, server_side=True)
            conn = Connection(sock, max_message_size=self.max_message_size,
                              timeout=self.timeout, idle_timeout=self.idle_timeout)
            with self._lock:
                self._conns[threading.current_thread()] = conn
            if self._stop.is_set():
                return
            _Session(self, conn).run()
        except (TransportError, OSError, ssl.SSLError):
            pass  # the peer went away or timed out: nothing to answer
        except ProtocolError as exc:  # malformed or misplaced: answer, then close
            if conn is not None:
                stream = getattr(exc, "stream_id", 1)
                with contextlib.suppress(TransportError, ProtocolError):
                    conn.send(P.ErrorMsg(exc.code, str(exc)), stream)
        finally:
            with self._lock:
                self._conns.pop(threading.current_thread(), None)
            _hang_up(conn if conn is not None else sock)

    # -- sources ---------------------------------------------------------------------------
    def lookup(self, key: str) -> Tensor:
        """The tensor a key names in the first source that has it.

        Raises:
            Refused: UNKNOWN_TENSOR.
        """
        check_key(key)
        return self.find(key)

    def files_of(self, key: str, t: Tensor) -> Files:
        """Where ``t``'s buffers lie in the served file it was read from, for ``sendfile``
        (see FileSource.files_of); None for a tensor held in memory, or without ``sendfile``
        (its bytes are then sent from the file's map)."""
        if not self.sendfile:
            return None
        for source in self._sources:
            if isinstance(source, FileSource):
                files = source.files_of(key, t)
                if files is not None:
                    return files
        return None

    def find(self, key: str) -> Tensor:
        """:meth:`lookup` of a key that passed ``check_key`` before."""
        for source in self._sources:
            found = source.get(key) if isinstance(source, dict) else source.lookup(key)
            if found is not None:
                return found  # type: ignore[no-any-return]
        raise unknown_key(key)


class _Session:
    """One client connection: the hello, then requests until the peer leaves."""

    def __init__(self, server: Server, conn: Connection) -> None:
        self.server, self.conn = server, conn
        self.hello: P.Hello = P.ClientHello(1, 0, 0, (), (), ())
        self.last_stream = 1
        self.devices: tuple[int, ...] = (DeviceTag.CPU,)
        self.replies: dict[bytes, _Reply] = {}  # by the request's payload; see _Reply
        self.hot: _Reply | None = None  # the last one answered, stamped for the next stream

    def run(self) -> None:
        self._hello()
        skip: int | None = None  # a refused PUT's stream: its data frames are dropped
        while not self.server._stop.is_set():
            if skip is None and self.replies and self._again():
                continue
            header = self.conn.recv_header()
            if header.stream_id == skip and header.type in (P.MessageType.TENSOR_DATA,
                                                            P.MessageType.TENSOR_DATA_END):
                self.conn.discard(header.length)
                skip = None if header.type == P.MessageType.TENSOR_DATA_END else skip
                continue
            skip = None
            if header.type == P.MessageType.TENSOR_DATA:
                raise _misplaced(header)
            sid = header.stream_id
            payload = bytes(self.conn.recv_payload(header))
            try:
                msg = P.decode(header, payload)
            except ProtocolError as exc:
                exc.stream_id = sid  # type: ignore[attr-defined]
                raise
            if isinstance(msg, P.Ping):
                self.conn.send(P.Pong(), sid)
            elif isinstance(msg, P.Pong | P.ErrorMsg):
                continue  # an answer to nothing pending, or a client giving up a stream
            elif isinstance(msg, P.TensorRequest | P.TensorPut):
                # A GET's answer is corked: a small tensor leaves in one send. (A PUT's is
                # not: a PING among its data frames is answered at once.)
                with self.conn.corked() if isinstance(msg, P.TensorRequest) else \
                        contextlib.nullcontext():
                    skip = self._request(sid, msg, payload)
            else:
                raise _misplaced(header)

    def _again(self) -> bool:
        """Answer the next message, once it is read ahead whole, if it is a request answered
        before and its prepared reply still holds; the reply is found by the request's bytes
        (they decode to the same request again: the codec is deterministic, so their checks
        passed before), first as the last request again on the next stream. False, with
        nothing consumed, otherwise."""
        conn = self.conn
        hot = self.hot
        if hot is not None and conn.next_is(hot.request):  # waits for the next message
            reply, sid, n = hot, hot.sid, len(hot.request)
        else:
            whole = conn.read_ahead()
            if whole is None:
                return False
            mtype, sid, payload = whole
            found = self.replies.get(payload) if mtype == _REQUEST and \
                sid > self.last_stream else None
            if found is None:
                return False
            reply, n = found, P.HEADER_SIZE + len(payload)
        t = reply.holds(self.server)
        if t is None:
            return False  # (replaced or freed since: the full path answers)
        conn.drop(n)
        self._answer(reply, t, sid)
        return True

    def _answer(self, reply: _Reply, t: Tensor, sid: int) -> None:
        """Send a prepared reply on ``sid``, then stamp it for the same request next."""
        self.last_stream = sid
        if reply.iov is None:
            conn = self.conn
            conn.send_plan(reply.plan, _buffers(t), sid, reply.files)
            reply.sid = sid
        else:
            reply.stamp(sid)
            self.conn.send_iov(reply.iov, reply.plan.size, reply.spans)
        reply.stamp(sid + 1)
        self.hot = reply

    def _request(self, sid: int, msg: P.TensorRequest | P.TensorPut, payload: bytes
                 ) -> int | None:
        """Answer a GET or PUT; returns the stream whose remaining data frames to drop."""
        try:
            if sid <= self.last_stream:
                raise Refused(P.ErrorCode.INVALID_MESSAGE,
                              f"request on stream {sid}; streams must ascend past "
                              f"{self.last_stream}", fix="number requests 2, 3, 4, ...")
            self.last_stream = sid
            if isinstance(msg, P.TensorRequest):
                self._get(sid, msg, payload)
            else:
                self._put(sid, msg)
        except StreamError as exc:
            self.conn.send(P.ErrorMsg(exc.code, str(exc)), sid)
            return sid if isinstance(msg, P.TensorPut) else None
        except HurrayGPUError as exc:
            if isinstance(exc, ProtocolError | TransportError):
                raise
            self.conn.send(P.ErrorMsg(REQUEST_FAILED, str(exc)), sid)
            return sid if isinstance(msg, P.TensorPut) else None
        return None

    def _hello(self) -> None:
        header, msg = self.conn.recv_message()
        if not isinstance(msg, P.ClientHello) or header.stream_id != 1:
            raise ProtocolError(f"the first message was type 0x{header.type:X} on stream "
                                f"{header.stream_id}, not CLIENT_HELLO on stream 1",
                                fix="start every connection with CLIENT_HELLO on stream 1.")
        if msg.max_message_size < 4096:
            raise ProtocolError(f"CLIENT_HELLO max_message_size {msg.max_message_size} is "
                                "below 4096 bytes", fix="accept messages of at least 4 KiB.")
        self.hello, self.conn.peer_max = msg, msg.max_message_size
        server = self.server
        tags = {DeviceTag.CPU} | {s.cache.device.tag for s in server._sources
                                  if isinstance(s, KVSource)}
        self.devices = tuple(sorted(tags))
        caps = P.Capability.PARALLEL_STREAMS | (
            P.Capability.TRANSCODING if server.transcode_limit > 0 else 0)
        self.conn.send(P.ServerHello(min(msg.version, P.PROTOCOL_VERSION),
                                     server.max_message_size, int(caps),
                                     tuple(P.LayoutEntry(t) for t in sorted(LAYOUT_NAMES)),
                                     self.devices, ()), 1)

    def _place(self, request: P.TensorRequest) -> tuple[int, int]:
        """The (device tag, memory class) the descriptor declares for ``request``."""
        if request.device not in self.devices:
            raise Refused(P.ErrorCode.DEVICE_UNAVAILABLE,
                          f"device tag 0x{request.device:02X} is not one this server offers "
                          f"({', '.join(f'0x{d:02X}' for d in self.devices)})",
                          fix="request one of the devices in the SERVER_HELLO.")
        classes = self.hello.memory_classes or (0,)
        for mclass in classes:
            if is_valid_pair(request.device, mclass):
                return request.device, mclass
        raise Refused(P.ErrorCode.DEVICE_UNAVAILABLE,
                      f"none of the client's memory classes {list(classes)} is valid for "
                      f"device tag 0x{request.device:02X}", fix="list STANDARD (0) in the hello.")

    def _get(self, sid: int, request: P.TensorRequest, payload: bytes) -> None:
        align = request.min_alignment
        if align & (align - 1) or align > 1 << 20:
            raise Refused(P.ErrorCode.INVALID_MESSAGE, f"min_alignment {align} is not 0 or a "
                          "power of two up to 1 MiB", fix="send 0 or a power of two.")
        tag, mclass = self._place(request)
        request, shard = _shard_of(request)
        server = self.server

        def raw_of(desc: TensorDescriptor) -> bytes:
            raw = declare(desc, tag, mclass, align)
            if len(raw) + 24 > self.conn.peer_max:
                raise Refused(P.ErrorCode.MESSAGE_TOO_LARGE, f"the descriptor takes "
                              f"{len(raw)} bytes, over the client's max_message_size",
                              fix="raise the client's max_message_size.")
            return raw

        rows = self._rows_out(request) if shard == (0, 1) and tag == DeviceTag.CPU else None
        if rows is not None:  # sent straight from a KV cache's pages, no gather
            try:
                self.conn.send_view_data(sid, rows.views, P.encode(P.TensorDescriptorMsg(
                    raw_of(rows.desc), rows.nbytes, 0, 1), sid), end=False)
            finally:
                rows.release()
            # Only now, with the pages let go (a send returns once the kernel holds the
            # bytes), may the client see its answer end and, say, have the sequence freed.
            self.conn.send(P.TensorDataEnd(), sid)
            return
        found = server.lookup(request.key)
        if any(b.allocation.freed for b in _buffers(found)):
            raise Refused(REQUEST_FAILED, f"the tensor {request.key!r} was freed on the server",
                          fix="store it again (a PUT, or the served registry) before a get.")
        t = negotiate(found, request, self.hello, server.transcode_limit)
        if shard != (0, 1) and t.is_composite:
            raise Refused(P.ErrorCode.SHARD_MISMATCH, "a composite cannot be sharded",
                          fix="request composites over one connection (parallel=1).")
        if tag != DeviceTag.CPU and t.device.tag != tag:
            t = t.to(resolve_device(DeviceTag(tag).name.lower()))

        plan = tensor_plan(t, raw_of, self.conn.frame_bytes, shard)
        # A stored tensor sent as it is (no transcode, copy or shard) from host memory: its
        # answer is kept for the same request again (see _Reply).
        buffers = _buffers(t)
        files = server.files_of(request.key, t) if t is found else None
        if t is found and shard == (0, 1) and len(plan.pieces) <= _REPLY_PIECES \
                and all(b.is_host for b in buffers) \
                and any((s.held(request.key) if isinstance(s, FileSource) else s.get(request.key))
                        is t for s in server._sources if not isinstance(s, KVSource)):
            self.replies.pop(payload, None)  # a stale reply to the same request
            if len(self.replies) >= _REPLIES:
                del self.replies[next(iter(self.replies))]  # the oldest
            reply = self.replies[payload] = _Reply(
                request.key, t, plan, self.conn.iov(plan, buffers), buffers,
                _HEADER.pack(_REQUEST, sid, len(payload)) + payload, files)
            self._answer(reply, t, sid)
            return
        self.conn.send_plan(plan, buffers, sid, files)

    def _put(self, sid: int, msg: P.TensorPut) -> None:
        check_key(msg.key)
        server = self.server
        desc = decode_descriptor(msg.descriptor)  # the codec decoded it once already
        sizes = [int(h.byte_size) for h in desc.buffers]
        if desc.layout_tag == 0x0B:
            raise Refused(REQUEST_FAILED, "a composite head cannot be PUT",
                          fix="PUT each member under its own key.")
        if sum(sizes) != msg.total_data_bytes:
            raise Refused(P.ErrorCode.INVALID_MESSAGE, f"total_data_bytes "
                          f"{msg.total_data_bytes} != the descriptor's buffers ({sum(sizes)})",
                          fix="send total_data_bytes = the sum of the buffer sizes.")
        if msg.total_data_bytes > server.max_put_bytes:
            raise Refused(P.ErrorCode.MESSAGE_TOO_LARGE, f"a PUT of {msg.total_data_bytes} "
                          f"bytes exceeds this server's max_put_bytes {server.max_put_bytes}",
                          fix="PUT smaller tensors, or ask the operator to raise max_put_bytes.")
        if any(h.sync_mode != SyncMode.PRODUCER_SYNCED for h in desc.buffers):
            raise Refused(P.ErrorCode.INVALID_MESSAGE, "a PUT buffer declares a sync_mode "
                          "other than producer-synced", fix="declare sync_mode 0 across machines.")
        rows = self._rows_for(msg.key, desc)
        if rows is not None:  # received straight into a KV cache's pages
            try:
                recv_data(self.conn, sid, rows.views, msg.total_data_bytes)
            except BaseException:
                rows.release()
                raise
            rows.commit()
            self.conn.send(P.TensorPutAck(), sid)
            return
        # From the cpu pool: a PUT copied out (into a KV cache, a file) and dropped stays warm.
        cpu, allocs = resolve_device("cpu"), host_allocs(desc)
        check_host_allocs(cpu, allocs)
        buffers = host_buffers(cpu, allocs)
        recv_data(self.conn, sid, buffer_views(buffers), msg.total_data_bytes)
        t = Tensor.from_parts(declare(desc, DeviceTag.CPU, 0, 0), buffers)
        if not any(s.put(msg.key, t) for s in server._sources
                   if isinstance(s, KVSource | DirectorySource)):
            server.registry[msg.key] = t
        self.conn.send(P.TensorPutAck(), sid)


    def _rows_out(self, request: P.TensorRequest) -> Any:
        """What a GET of a KV key sends straight from the cache's pages (KVSource.rows_out)
        when the first source holding the key is a KV cache and the request takes dense
        row-major values of its dtype as they are; else None (the full path)."""
        key = request.key
        if not key.startswith("kv/") or not self.server.serves_kv:
            return None
        check_key(key)
        for s in self.server._sources:
            if isinstance(s, KVSource):
                wanted = request.layouts or self.hello.layouts
                if wanted and wanted[0].tag != 0x01 and \
                        _entry_dtype(wanted[0]) != s.cache.dtype.tag:
                    return None
                return s.rows_out(key)
            if (s.get(key) if isinstance(s, dict) else s.lookup(key)) is not None:
                return None
        return None

    def _rows_for(self, key: str, desc: TensorDescriptor) -> Any:
        """The KV cache rows a PUT of ``key`` is received into (see KVSource.rows_for), when
        the source that stores it is a KV cache that can take it so; else None."""
        for s in self.server._sources:
            if isinstance(s, KVSource):
                rows = s.rows_for(key, desc)
                if rows is not None or s.put_key(key):
                    return rows
            elif isinstance(s, DirectorySource) and s.put_key(key):
                return None
        return None


def _shard_of(request: P.TensorRequest) -> tuple[P.TensorRequest, tuple[int, int]]:
    """The request without its shard entry, and the (index, count) it asks for."""
    shards = [e for e in request.layouts if e.tag == SHARD_ENTRY_TAG
              and e.metadata[:4] == SHARD_ENTRY_MAGIC and len(e.metadata) == 12]
    if not shards:
        return request, (0, 1)
    index, count = struct.unpack("<II", shards[0].metadata[4:])
    if len(shards) > 1 or not request.flags & P.RequestFlag.PARALLEL_OK or not (
            index < count <= MAX_SHARDS):
        raise Refused(P.ErrorCode.SHARD_MISMATCH, f"shard {index} of {count} (entries: "
                      f"{len(shards)}, PARALLEL_OK: {bool(request.flags & 2)})",
                      fix=f"ask for one shard i < n <= {MAX_SHARDS} and set PARALLEL_OK.")
    rest = tuple(e for e in request.layouts if e not in shards)
    return dataclasses.replace(request, layouts=rest), (index, count)


def _hang_up(conn: Connection | socket.socket) -> None:
    """Close a connection so that a thread blocked reading it wakes up."""
    if isinstance(conn, Connection):
        conn.close()
        return
    with contextlib.suppress(OSError):  # never connected or already gone
        conn.shutdown(socket.SHUT_RDWR)
    conn.close()


def _misplaced(header: P.Header) -> ProtocolError:
    exc = ProtocolError(f"a client may not send message type 0x{header.type:X} here",
                        fix="send CLIENT_HELLO first, then TENSOR_REQUEST, TENSOR_PUT (with its "
                            "data) or PING.")
    exc.stream_id = header.stream_id  # type: ignore[attr-defined]
    return exc


def serve(source: Any, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT,
          unix: str | None = None, ssl_context: ssl.SSLContext | None = None,
          max_message_size: int = P.DEFAULT_MAX_MESSAGE,
          transcode_limit: int = DEFAULT_TRANSCODE_LIMIT, max_put_bytes: int = DEFAULT_MAX_PUT,
          timeout: float = 30.0, idle_timeout: float = 300.0, max_connections: int = 64,
          writable: bool = False, sendfile: bool = False, max_open_files: int = MAX_OPEN_FILES,
          background: bool = False) -> Server:
    """Serve tensors over the Hurray network interchange protocol (docs/interchange.md).

    Args:
        source: a ``.hrry`` path, a directory of them (keys ``<file>.hrry/<tensor>``), a
            dict of Tensors (TENSOR_PUT stores there), a PagedKVCache (keys ``kv/<seq>``,
            ``kv/<seq>/<layer>``, ``kv/<seq>/<layer>/key|value``), or a list of those.
        host, port: the TCP address (default loopback only; port 0 picks a free port).
        unix: serve on this Unix-domain socket path instead of TCP.
        ssl_context: a server-side ``ssl.SSLContext``: TLS (``hurrays://`` URLs).
        max_message_size: the largest payload accepted from a client.
        transcode_limit: the largest transcoded tensor in bytes (0 disables transcoding).
        max_put_bytes: the largest tensor a client may PUT.
        timeout: seconds a message may take once started (a slow drip is cut off).
        idle_timeout: seconds a connection may wait between messages.
        max_connections: connections served at once; more are answered ERROR 0xF1.
        writable: a PUT of ``<file>.hrry/<name>`` into a served directory writes that file
            (atomically, keeping its other tensors); otherwise such a PUT is refused.
        sendfile: send a served file's data ranges of 64 KiB or more with ``sendfile(2)``
            (no copy through the server's memory) instead of ``sendmsg`` from the file's map.
            Off by default: over loopback it was faster on some machines and slower, or
            bimodal, on others, where the send from the map was steady (docs/interchange.md,
            Keys; ``python bench/transport.py`` measures both).
        max_open_files: files of a served directory kept open (mapped) at once; the least
            recently used is let go beyond it (its map once no get in flight uses it).
        background: return at once with the server running in threads; otherwise block
            until Ctrl-C, then close.

    Returns:
        The Server (``.url``, ``.close()``, a context manager).

    Raises:
        UnsupportedOpError: an unknown kind of source.
        HurrayFormatError, OSError: a source file cannot be opened; the address is in use.
    """
    server = Server(source, host=host, port=port, unix=unix, ssl_context=ssl_context,
                    max_message_size=max_message_size, transcode_limit=transcode_limit,
                    max_put_bytes=max_put_bytes, timeout=timeout, idle_timeout=idle_timeout,
                    max_connections=max_connections, writable=writable,
                    sendfile=sendfile, max_open_files=max_open_files).start()
    if background:
        return server
    try:
        server.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return server


__all__ = ["REQUEST_FAILED", "SERVER_BUSY", "Refused", "Server", "dtype_entry", "shard_entry",
           "negotiate", "send_tensor", "serve"]
