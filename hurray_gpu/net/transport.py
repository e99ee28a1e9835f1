"""Sockets of the network interchange protocol: TCP, Unix-domain and TLS, framed
(docs/interchange.md).

A :class:`Connection` sends and receives whole messages. Every receive checks the 12-byte
header (type, stream, the receiver's maximum payload) before it allocates anything; a
TENSOR_DATA payload is never decoded into a new bytes: its 8-byte offset is read, then the data
goes with ``recv_into`` straight into the caller's destination (small messages come out of a
16 KiB read-ahead). TENSOR_DATA is sent with one ``sendmsg`` of its header and a view of the
data (TLS: ``sendall`` of each, no copy); :meth:`Connection.corked` gathers small messages.

Time bounds: waiting for the first byte of the next message may take ``idle_timeout``; once a
message has started, all of it must arrive within ``timeout`` seconds, so a peer dripping one
byte at a time cannot hold a thread for longer than that.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import socket
import ssl
import struct
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from hurray_gpu.errors import HurrayGPUError, ProtocolError, RemoteError, TransportError
from hurray_gpu.format import protocol as P
from hurray_gpu.net.framing import FRAME_BYTES, FileData, FramePlan, file_spans
from hurray_gpu.runtime.buffer import Buffer

DEFAULT_PORT = 7740
_GATHER = 64  # pieces per sendmsg (below every IOV_MAX)
# accept() errors that pass (descriptors or kernel memory run out for a while), and the wait
# after one before accepting again (a listener stays readable: retrying at once would spin).
ACCEPT_RETRY = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
ACCEPT_BACKOFF = 0.05
_SCATTER = 512  # views per recvmsg_into (below every IOV_MAX, with the read-ahead buffer)
_DRAIN = 1 << 16  # discard() reads unwanted payloads in pieces of this size
# Receives read ahead into a buffer of this size; sends of a corked connection gather
# messages up to it (small tensors then take one syscall per side instead of one per message).
# 16 KiB: a large tensor's first data bytes, read ahead with its descriptor, are copied out
# of it; 64 KiB copied 64 KiB per get (callgrind: 9% of a 1 MiB get's client instructions).
_READAHEAD = 1 << 14
_SENDFILE_TAIL = 1 << 12  # the last bytes of a sendfile range go with the next message (send_spans)


class StreamError(ProtocolError):
    """A protocol error about one stream; the message that caused it was read whole, so the
    connection can go on (the receiver answers ERROR on that stream)."""


def parse_url(url: str) -> tuple[str, Any]:
    """``(scheme, address)`` of ``hurray://host:port``, ``hurrays://host:port`` (TLS) or
    ``hurray+unix:///abs/path``; the address is ``(host, port)`` or a path.

    Raises:
        TransportError: another scheme, a missing host, or a relative Unix path.
    """
    parts = urlsplit(url)
    fix = ("write hurray://HOST:PORT, hurrays://HOST:PORT (TLS) or hurray+unix:///ABS/PATH.")
    if parts.scheme == "hurray+unix":
        if not parts.path.startswith("/") or parts.netloc:
            raise TransportError(f"{url!r} does not name an absolute socket path", fix=fix)
        return parts.scheme, parts.path
    if parts.scheme not in ("hurray", "hurrays") or not parts.hostname or parts.path.strip("/"):
        raise TransportError(f"{url!r} is not a hurray URL", fix=fix)
    try:
        port = parts.port or DEFAULT_PORT
    except ValueError:
        raise TransportError(f"{url!r} has an invalid port", fix=fix) from None
    return parts.scheme, (parts.hostname, port)


def dial(url: str, ssl_context: ssl.SSLContext | None, timeout: float) -> socket.socket:
    """Open a client socket to ``url`` (TLS for ``hurrays://``).

    Raises:
        TransportError: the URL is bad, or nothing answers there.
    """
    scheme, address = parse_url(url)
    sock: socket.socket | None = None
    try:
        if scheme == "hurray+unix":
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            sock.connect(address)
            return sock
        sock = socket.create_connection(address, timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if scheme == "hurrays":
            context = ssl_context or ssl.create_default_context()
            sock = context.wrap_socket(sock, server_hostname=address[0])
        elif ssl_context is not None:
            sock.close()
            raise TransportError(f"{url!r} is plain TCP but an ssl_context was given",
                                 fix="use the hurrays:// scheme for TLS.")
        return sock
    except (OSError, ssl.SSLError) as exc:
        if sock is not None:  # refused, or the TLS handshake failed: the socket goes now
            sock.close()
        raise TransportError(f"cannot connect to {url}: {exc}",
                             fix="check that a server is running there (hurray-gpu serve) "
                                 "and that the URL, port and TLS settings match it.") from exc


def listen(host: str, port: int, unix: str | None) -> socket.socket:
    """A listening socket on ``host:port`` (TCP) or at the path ``unix``.

    A stale socket file left at ``unix`` by a dead server is replaced; any other file there
    is not.
    """
    if unix is not None:
        if os.path.exists(unix):
            import stat
            if not stat.S_ISSOCK(os.stat(unix).st_mode):
                raise TransportError(f"{unix} exists and is not a socket",
                                     fix="pass a path that does not exist yet.")
            os.unlink(unix)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(unix)
    else:
        sock = socket.create_server((host, port), reuse_port=False)
    sock.listen(64)
    return sock


_TIMEVAL = struct.Struct("@ll")  # struct timeval (SO_RCVTIMEO, SO_SNDTIMEO)
_DONTWAIT = getattr(socket, "MSG_DONTWAIT", 0)
_MORE = getattr(socket, "MSG_MORE", 0)
_WAITALL = getattr(socket, "MSG_WAITALL", 0)
_HEADER = struct.Struct("<III")  # a message header: type, stream id, payload length


class Connection:
    """One framed protocol connection over a connected socket.

    Args:
        sock: a connected stream socket (plain or TLS).
        max_message_size: the largest payload this side accepts (checked before allocating).
        timeout: seconds one message may take once its first byte arrived, and one send.
        idle_timeout: seconds to wait for the next message to begin.
    """

    def __init__(self, sock: socket.socket, *, max_message_size: int = P.DEFAULT_MAX_MESSAGE,
                 timeout: float = 30.0, idle_timeout: float | None = None) -> None:
        self.sock = sock
        self.max_message_size = max_message_size
        self.peer_max = P.DEFAULT_MAX_MESSAGE  # what the peer accepts (set by the hello)
        self.timeout = timeout
        self.idle_timeout = timeout if idle_timeout is None else idle_timeout
        self._deadline = 0.0
        self._header = bytearray(P.HEADER_SIZE)
        self._rraw = bytearray(_READAHEAD)  # bytes read ahead: [_rpos, _rend)
        self._rbuf = memoryview(self._rraw)
        self._rpos = self._rend = 0
        self._out: bytearray | None = None  # corked small messages, sent together
        self._tls = isinstance(sock, ssl.SSLSocket)
        # A plain socket blocks in the kernel, bounded by the kernel's own receive and send
        # timeouts (see _arm): a wait is the receive or send itself, one system call, where
        # a poll before it (or Python's socket timeouts: an ioctl and a poll per call) took
        # two or three. A try that must not wait passes MSG_DONTWAIT. TLS keeps socket
        # timeouts (its records may need reads to write, and back).
        self._armed = [math.inf, math.inf]  # the kernel timeouts set: receive, send
        if not self._tls:
            sock.settimeout(None)
        self.closed = False

    def _ready(self, writing: bool, deadline: float) -> bool:
        """Bound the next blocking receive (send) by ``deadline``; False once it passed.
        With TLS, sets the socket's timeout for the call that waits itself."""
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        if self._tls:
            self.sock.settimeout(left)
        elif not self.closed:  # closed: the call fails at once (its fd may be reused)
            armed = self._armed[writing]
            if armed > left or (armed < left / 4 and armed < self.timeout / 2):
                self._arm(writing, left)
        return True

    def _arm(self, writing: bool, left: float) -> None:
        """Set the kernel's timeout of one blocking receive (send) to the largest of timeout
        / 2, / 4, ... within ``left`` seconds: never past the deadline, and the same value
        message after message (a system call only when a slow message needs a shorter one,
        and once after it). A wait that runs out early is waited again, up to the deadline."""
        step = self.timeout / 2
        while step > left and step > 1e-3:
            step /= 2
        step = max(min(step, left), 1e-6)  # 0 would mean no timeout at all
        sec = int(step)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO if writing else
                             socket.SO_RCVTIMEO, _TIMEVAL.pack(sec, int((step - sec) * 1e6) or 1))
        self._armed[writing] = step

    def close(self) -> None:
        """Shut the socket down (wakes a thread blocked on it) and close it; idempotent."""
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(OSError):  # already disconnected
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()

    # -- receive ---------------------------------------------------------------------------
    def _recv_into(self, view: memoryview, deadline: float, then: int = 0) -> None:
        # Bytes already read ahead come first; a large remainder goes straight into ``view``
        # (on a plain socket with what follows it into the read-ahead buffer, in the same
        # receive: the next message, such as the DATA_END after a tensor's last frame, then
        # takes no receive of its own), a small one through the read-ahead buffer, so that
        # one recv brings a small tensor's descriptor, data frames and DATA_END together.
        # ``then``: bytes certain to follow (the peer owes a message after a frame's data);
        # a plain socket then waits in one receive for the rest of ``view`` and those
        # (MSG_WAITALL), where each return to Python would add its cost to a bulk receive.
        want, got = len(view), self._rend - self._rpos
        if got:
            got = min(got, want)
            view[:got] = self._rbuf[self._rpos:self._rpos + got]
            self._rpos += got
        while got < want:  # (here all bytes read ahead were consumed)
            if not self._ready(False, deadline):
                raise _late(got, want)
            if want - got < _READAHEAD // 2:  # through the read-ahead buffer
                n = self._recv_some(self._rbuf, got, want)
                step = min(n, want - got)
                view[got:got + step] = self._rbuf[:step]
                self._rpos, self._rend = step, n
                got += step
            elif self._tls:
                got += self._recv_some(view[got:], got, want)
            else:  # straight into the view, what follows into the read-ahead buffer
                n = self._recv_some([view[got:], self._rbuf[:then] if then else self._rbuf],
                                    got, want, _WAITALL if then else 0)
                if n > want - got:
                    self._rpos, self._rend, n = 0, n - (want - got), want - got
                got += n

    def _recv_some(self, view: memoryview | list[memoryview], got: int, want: int,
                   flags: int = 0) -> int:
        """One receive into ``view`` (a list, on a plain socket: into each in turn, as far as
        the bytes there go), waiting as :meth:`_ready` bounded it; the bytes it brought, 0
        when that wait ran out first."""
        try:
            n = self.sock.recv_into(view) if isinstance(view, memoryview) else \
                self.sock.recvmsg_into(view, 0, flags)[0]
        except (BlockingIOError, TimeoutError):
            return 0
        except (OSError, ssl.SSLError) as exc:
            raise TransportError(f"the connection failed: {exc}",
                                 fix="check the peer and the network, then reconnect."
                                 ) from exc
        if not n:
            raise TransportError(f"the peer closed the connection after {got} of {want} "
                                 "expected bytes",
                                 fix="reconnect; check the peer's log for why it closed.")
        return n

    def recv_header(self) -> P.Header:
        """The next message's header, checked (size limit before anything is allocated).

        Raises:
            ProtocolError: from ``decode_header``; its ``stream_id`` attribute is set to the
                raw header's stream (or 1) so the ERROR can be answered on it.
            TransportError: EOF, a broken connection or a timeout.
        """
        view, size, done = memoryview(self._header), P.HEADER_SIZE, 0
        if self._rend - self._rpos < size:  # the first byte may take idle_timeout
            self._recv_into(view[:1], time.monotonic() + self.idle_timeout)
            done = 1
        self._deadline = time.monotonic() + self.timeout
        if self._rend - self._rpos >= size - done:  # read ahead (usually with the first byte)
            view[done:] = self._rbuf[self._rpos:self._rpos + size - done]
            self._rpos += size - done
        else:
            self._recv_into(view[done:], self._deadline)
        try:
            return P.decode_header(memoryview(self._header), self.max_message_size)
        except HurrayGPUError as exc:
            (sid,) = struct.unpack_from("<I", self._header, 4)
            exc.stream_id = sid or 1  # type: ignore[attr-defined]
            raise

    def recv_into(self, view: memoryview, then: int = 0) -> None:
        """Read exactly ``len(view)`` bytes of the current message into ``view``; ``then``:
        bytes the peer is certain to send next (at most a message header's: the receive
        may wait for them too)."""
        self._recv_into(view, self._deadline, then)

    def recv_into_many(self, views: list[memoryview], then: int = 0) -> None:
        """Read exactly the bytes of ``views`` (one message's, in turn) into them: on a
        plain socket up to _SCATTER views per receive, waiting in the kernel for all of
        them (MSG_WAITALL), where one receive per view would cost a return to Python each
        (a KV cache's scattered pages: thousands per layer). ``then`` as :meth:`recv_into`."""
        deadline, last = self._deadline, len(views) - 1
        at = head = 0  # the view being filled; its bytes filled
        while at <= last and self._rend > self._rpos:  # the bytes read ahead, first
            k = min(len(views[at]) - head, self._rend - self._rpos)
            views[at][head:head + k] = self._rbuf[self._rpos:self._rpos + k]
            self._rpos, head = self._rpos + k, head + k
            if head == len(views[at]):
                at, head = at + 1, 0
        if self._tls:
            for i in range(at, last + 1):
                self._recv_into(views[i][head:] if i == at else views[i], deadline,
                                then if i == last else 0)
            return
        want, got = sum(len(v) for v in views[at:]) - head, 0
        while got < want:
            if not self._ready(False, deadline):
                raise _late(got, want)
            batch = views[at:at + _SCATTER]
            if head:
                batch[0] = batch[0][head:]
            tail = at + len(batch) > last
            if tail:  # what follows into the read-ahead buffer, as _recv_into does
                batch.append(self._rbuf[:then] if then else self._rbuf)
            # All of a batch is owed (the frame's header promised it): wait for all of it.
            n = self._recv_some(batch, got, want, _WAITALL if then or not tail else 0)
            room = sum(len(v) for v in (batch[:-1] if tail else batch))
            if n > room:  # (only with the tail: the rest of the message is in)
                self._rpos, self._rend, n = 0, n - room, room
            got += n
            n += head
            while at <= last and n >= len(views[at]):
                n -= len(views[at])
                at += 1
            head = n

    def recv_payload(self, header: P.Header) -> bytearray:
        """The current message's payload (its size was checked by :meth:`recv_header`)."""
        payload = bytearray(header.length)
        if header.length:  # DATA_END, PING, PONG: nothing to read
            self._recv_into(memoryview(payload), self._deadline)
        return payload

    def recv_message(self) -> tuple[P.Header, Any]:
        """The next whole message, decoded; a TENSOR_DATA frame comes back as ``(header,
        None)`` with its payload unread (the caller reads it with :meth:`data_offset` and
        :meth:`recv_into`)."""
        header = self.recv_header()
        if header.type == P.MessageType.TENSOR_DATA:
            return header, None
        return header, P.decode(header, memoryview(self.recv_payload(header)))

    def data_offset(self, header: P.Header) -> int:
        """Read a TENSOR_DATA frame's 8-byte offset; ``header.length - 8`` data bytes follow."""
        first8 = memoryview(self._header)[:8]
        self._recv_into(first8, self._deadline)
        return P.decode_data_offset(header, first8)

    def discard(self, n: int) -> None:
        """Read and drop ``n`` bytes of the current message in bounded pieces."""
        scratch = memoryview(bytearray(min(n, _DRAIN)))
        while n:
            step = min(n, len(scratch))
            self._recv_into(scratch[:step], self._deadline)
            n -= step

    # -- send ------------------------------------------------------------------------------
    @contextlib.contextmanager
    def corked(self) -> Iterator[None]:
        """Within this block small messages are copied into one buffer and sent together
        (when it fills, with the next large frame, or at the end); large data is still sent
        from the caller's memory without a copy."""
        self._out = bytearray()
        failed = False
        try:
            yield
        except TransportError:
            failed = True  # the connection is broken: nothing more can be sent
            raise
        finally:
            out, self._out = self._out, None
            if out and not failed:
                self.send_views([out])

    def send_views(self, views: Sequence[memoryview | bytes | bytearray]) -> None:
        """Send whole, already encoded messages (``views`` concatenated; at most a few
        hundred pieces) from the caller's memory (corked: small ones are gathered)."""
        if self._out is not None:
            size = sum(len(v) for v in views)
            if len(self._out) + size <= _READAHEAD:
                for v in views:
                    self._out += v
                return
            out, self._out = self._out, bytearray()
            views = [out, *views]
        if len(views) == 1 and not self._tls and isinstance(views[0], bytes | bytearray):
            views = self._try_send(views, len(views[0]))  # one message: most often all sent
            if not views:
                return
        deadline = time.monotonic() + self.timeout
        try:
            if self._tls:  # SSLSocket has no sendmsg; sendall of a view does not copy it
                for v in views:
                    self.sock.settimeout(max(deadline - time.monotonic(), 0.001))
                    self.sock.sendall(v)
                return
            self._send_all(views, deadline)
        except (OSError, ssl.SSLError) as exc:
            raise _send_failed(exc) from exc

    def _send_all(self, views: Sequence[Any], deadline: float, flags: int = 0) -> None:
        """Send all of ``views`` on a plain socket by ``deadline`` (``flags``: MSG_MORE when
        more of the same answer follows at once)."""
        pending = [memoryview(v).cast("B") for v in views if len(v)]
        while pending:
            if not self._ready(True, deadline):
                raise TimeoutError("timed out")
            try:  # blocks in the kernel until all is sent or its timeout runs out
                sent = self.sock.sendmsg(pending[:_GATHER], (), flags)
            except BlockingIOError:
                continue
            while pending and sent >= len(pending[0]):
                sent -= len(pending[0])
                pending.pop(0)
            if pending and sent:
                pending[0] = pending[0][sent:]

    def send_spans(self, iov: Sequence[Any], spans: Sequence[tuple[FileData, int] | None]
                   ) -> None:
        """Send ``iov``'s pieces in order, those with a span (see :func:`file_spans`) from
        their file by ``sendfile``, the runs between in one ``sendmsg`` each (held back with
        MSG_MORE until the file's bytes follow). A span's last few bytes go from ``iov``'s
        view with the run after it: a message sent alone after ``sendfile`` waits for room
        in the socket's buffer and reaches the peer a wake-up after the data (on loopback
        that cost about half of what ``sendfile`` saves on 1 MiB). A plain socket only.

        Raises:
            TransportError: the connection failed, timed out, or the file ended before a
                span did (it was truncated in place while served).
        """
        deadline = time.monotonic() + self.timeout
        run: list[Any] = []
        if self._out:  # corked messages go first
            run.append(self._out)
            self._out = bytearray()
        try:
            for piece, span in zip(iov, spans, strict=True):
                if span is None:
                    run.append(piece)
                    continue
                if run:
                    self._send_all(run, deadline, _MORE)
                n = len(piece) - _SENDFILE_TAIL
                self._sendfile(span[0], span[1], n, deadline)
                run = [memoryview(piece)[n:]]
            if run:
                self._send_all(run, deadline)
        except TransportError:
            raise
        except OSError as exc:
            raise _send_failed(exc) from exc

    def _sendfile(self, file: FileData, offset: int, count: int, deadline: float) -> None:
        out = self.sock.fileno()
        while count:
            if not self._ready(True, deadline):
                raise TimeoutError("timed out")
            try:
                n = os.sendfile(out, file.fd, offset, count)
            except BlockingIOError:
                continue
            if not n:
                raise TransportError(
                    f"the served file ends at byte {offset}, {count} bytes before the data "
                    "being sent from it (it was cut short); the connection is closed",
                    fix="replace served files atomically (hg.save writes a new file and "
                        "renames it over the old one) instead of rewriting them in place.")
            offset += n
            count -= n

    def send_message(self, message: bytes | bytearray) -> None:
        """Send one whole, encoded message (:meth:`send_views` of it, with fewer steps)."""
        if self._out is None and not self._tls:
            try:
                sent = self.sock.send(message, _DONTWAIT)
            except BlockingIOError:
                sent = 0
            except OSError as exc:
                raise _send_failed(exc) from exc
            if sent == len(message):
                return  # most often all of it at once
            message = memoryview(message)[sent:]  # type: ignore[assignment]
        self.send_views([message])

    def _try_send(self, views: Sequence[Any], size: int) -> list[Any]:
        """One ``sendmsg`` of ``views`` (byte buffers of ``size`` bytes in all; a plain
        socket; one view: ``send``, a little cheaper) without waiting; what it did not take."""
        try:
            sent = self.sock.send(views[0], _DONTWAIT) if len(views) == 1 else \
                self.sock.sendmsg(views, (), _DONTWAIT)
        except BlockingIOError:
            sent = 0
        except OSError as exc:
            raise _send_failed(exc) from exc
        if sent == size:
            return []
        i = 0
        while sent >= len(views[i]):
            sent -= len(views[i])
            i += 1
        return [memoryview(views[i])[sent:], *views[i + 1:]]

    @property
    def frame_bytes(self) -> int:
        """The most data bytes one TENSOR_DATA frame to this peer carries."""
        return max(1, min(FRAME_BYTES, self.peer_max - 8))

    def send(self, msg: Any, stream_id: int) -> None:
        """Encode and send one message."""
        self.send_views([P.encode(msg, stream_id)])

    def send_buffers(self, stream_id: int, buffers: Sequence[Buffer],
                     span: tuple[int, int] | None = None, *, head: Any = None,
                     end: bool = False) -> int:
        """Bytes ``span`` (default all) of ``buffers`` as TENSOR_DATA frames (offsets run over
        their concatenation), each within the peer's maximum message size, after the message
        ``head`` (if given) and followed by TENSOR_DATA_END (if ``end``); returns the bytes
        sent (see :meth:`send_plan`)."""
        plan = FramePlan()
        lo, hi = span or (0, sum(b.nbytes for b in buffers))
        plan.tensor(None if head is None else P.encode(head, 1), [b.nbytes for b in buffers],
                    self.frame_bytes, (lo, hi), end)
        self.send_plan(plan, buffers, stream_id)
        return hi

    def send_view_data(self, stream_id: int, views: Sequence[memoryview], head: bytes,
                       end: bool = True) -> None:
        """``head`` (a message encoded for ``stream_id``), then the bytes of host ``views``
        as TENSOR_DATA frames over their concatenation (a frame spans views: a KV cache's
        pages, see PagedKVCache.read_rows), then TENSOR_DATA_END (``end``); sent from the
        views' memory, _GATHER pieces at a time."""
        total = sum(len(v) for v in views)
        pending: list[Any] = [head]
        offset = at = cut = 0  # bytes framed; the view being sent; its bytes sent
        while offset < total:
            n = min(self.frame_bytes, total - offset)
            pending.append(P.data_header(stream_id, offset, n))
            offset += n
            while n:
                step = min(n, len(views[at]) - cut)
                pending.append(views[at][cut:cut + step])
                n, cut = n - step, cut + step
                if cut == len(views[at]):
                    at, cut = at + 1, 0
                if len(pending) >= _GATHER:
                    self.send_views(pending)
                    pending = []
        if end:
            pending.append(P.encode(P.TensorDataEnd(), stream_id))
        self.send_views(pending)

    def send_plan(self, plan: FramePlan, buffers: Sequence[Buffer], stream_id: int,
                  files: Sequence[tuple[FileData, int] | None] | None = None) -> None:
        """Send ``plan`` on ``stream_id`` with its data ranges taken from ``buffers``. Host
        memory goes out without a copy, gathered into as few sends as possible (buffers that
        lie in a file, ``files[j]`` = (file, offset), by ``sendfile``: see FileData); device
        memory is copied to the host one frame at a time into one reused array, sent before
        it is refilled."""
        plan.stamp(stream_id)
        # The allocation's own array: no view that pins the buffer is built (the caller
        # holds the buffers until this returns).
        hosts = [b.device.allocator.host_array(b.allocation) for b in buffers]
        spans = None if files is None or self._tls else file_spans(plan, files)
        if spans is not None and all(h is not None for h in hosts):
            self.send_spans([p if isinstance(p, bytearray) else hosts[p[0]].data[  # type: ignore[union-attr]
                p[1]:p[2]] for p in plan.pieces], spans)
            return
        if self._out is None and not self._tls and len(plan.pieces) <= _GATHER and all(
                h is not None for h in hosts):  # host memory: one sendmsg, most often all
            rest = self._try_send([p if isinstance(p, bytearray) else hosts[p[0]].data[  # type: ignore[union-attr]
                p[1]:p[2]] for p in plan.pieces], plan.size)
            if rest:
                self.send_views(rest)
            return
        pending: list[Any] = []
        size = 0
        staging: np.ndarray | None = None
        for piece in plan.pieces:
            if isinstance(piece, bytearray):
                pending.append(piece)
                continue
            j, start, stop = piece
            host = hosts[j]
            if host is None:  # device memory: flushed now, the staging array is refilled next
                if staging is None or len(staging) < stop - start:
                    staging = np.empty(stop - start, np.uint8)
                buffers[j].copyout(staging[:stop - start], start)
                pending.append(staging.data[:stop - start])
            else:
                pending.append(host.data[start:stop])
                size += stop - start
            if host is None or size >= FRAME_BYTES or len(pending) >= _GATHER:
                self.send_views(pending)
                pending, size = [], 0
        if pending:
            self.send_views(pending)

    def iov(self, plan: FramePlan, buffers: Sequence[Buffer]) -> list[Any] | None:
        """``plan``'s pieces with views of its data in host ``buffers``, for
        :meth:`send_iov` (again and again: :meth:`FramePlan.stamp` rewrites the messages in
        place); None where :meth:`send_plan` must send it (TLS, device memory, many pieces)."""
        hosts = [b.device.allocator.host_array(b.allocation) for b in buffers]
        if self._tls or len(plan.pieces) > _GATHER or any(h is None for h in hosts):
            return None
        return [p if isinstance(p, bytearray) else hosts[p[0]].data[p[1]:p[2]]  # type: ignore[union-attr]
                for p in plan.pieces]

    def send_iov(self, iov: list[Any], size: int,
                 spans: Sequence[tuple[FileData, int] | None] | None = None) -> None:
        """Send the ``size`` bytes of :meth:`iov`'s pieces (most often one ``sendmsg``; with
        ``spans``, see :meth:`send_spans`, the file's ranges by ``sendfile``)."""
        if spans is not None and not self._tls:
            self.send_spans(iov, spans)
        elif self._out is not None:
            self.send_views(iov)
        elif rest := self._try_send(iov, size):
            self.send_views(rest)

    # -- the expected answer (see FramePlan) -----------------------------------------------
    def peek(self, n: int, idle: bool = False) -> memoryview:
        """The next ``n`` (at most 16 KiB) bytes, read ahead and left unconsumed; the time
        limit of a message applies (the caller asks only for bytes a header it has seen
        promised, or for the 12 bytes of a header the peer owes it), or with ``idle`` the
        wait for the next message to begin."""
        have = self._rend - self._rpos
        if have < n:
            rbuf = self._rbuf
            deadline = time.monotonic() + (self.idle_timeout if idle else self.timeout)
            if self._rpos:
                rbuf[:have] = rbuf[self._rpos:self._rend]
                self._rpos, self._rend = 0, have
            while self._rend < n:
                if not self._ready(False, deadline):
                    raise _late(self._rend, n)
                self._rend += self._recv_some(rbuf[self._rend:], self._rend, n)
        return self._rbuf[self._rpos:self._rpos + n]

    def _arrived(self) -> int:
        """Wait (idle_timeout) for the next message to begin; the bytes read ahead."""
        have = self._rend - self._rpos
        if not have:  # (the common case: one receive at the start of the buffer)
            self._rpos = self._rend = 0
            deadline = time.monotonic() + self.idle_timeout
            while not have:
                if not self._ready(False, deadline):
                    raise _late(0, 1)
                have = self._rend = self._recv_some(self._rbuf, 0, 1)
        return have

    def next_is(self, message: bytes | bytearray) -> bool:
        """Wait (idle_timeout) for the next message to begin; whether all of ``message`` has
        been read ahead as the bytes that come next (left unconsumed, see :meth:`drop`)."""
        return self._arrived() >= len(message) and self._rraw.startswith(message, self._rpos)

    def read_ahead(self) -> tuple[int, int, bytes] | None:
        """Wait (idle_timeout) for the next message to begin; if all of it has been read
        ahead, its (type, stream id, payload), left unconsumed (see :meth:`drop`); else None
        (a message that is larger, or still arriving, is read by :meth:`recv_header`)."""
        have = self._arrived()
        if have < P.HEADER_SIZE:
            return None
        pos = self._rpos
        mtype, sid, length = _HEADER.unpack_from(self._rraw, pos)
        if have - P.HEADER_SIZE < length:
            return None
        return mtype, sid, bytes(self._rbuf[pos + P.HEADER_SIZE:pos + P.HEADER_SIZE + length])

    def drop(self, n: int) -> None:
        """Consume ``n`` bytes :meth:`read_ahead` or :meth:`peek` showed."""
        self._rpos += n

    def recv_planned(self, steps: Sequence[bytearray | tuple[int, int, int]],
                     views: Sequence[memoryview]) -> tuple[int, bool]:
        """Receive an answer laid out as ``steps`` (runs of messages and ``(view, start,
        stop)`` data ranges: a stamped FramePlan's pieces), each run compared whole, the data
        read into ``views``.

        Returns:
            (data bytes received, True) when all of it arrived as laid out, else (data
            bytes received before it, False) for the first message that differed, which is
            left unread.
        """
        done, rraw, first = 0, self._rraw, 0
        if len(steps) == 3 and self._rpos == self._rend and not self._tls and isinstance(
                steps[1], tuple) and len(steps[0]) <= _READAHEAD:  # the common answer
            j, start, stop = steps[1]
            if self._recv_frame(steps[0], views[j][start:stop]):  # type: ignore[arg-type]
                done, first = stop - start, 2
        for i in range(first, len(steps)):
            step = steps[i]
            if isinstance(step, tuple):
                j, start, stop = step
                # A message follows a frame's data (a planned one, or whatever else the
                # peer sends instead): its header's 12 bytes can be waited for with it.
                self._recv_into(views[j][start:stop], self._deadline,
                                P.HEADER_SIZE if i + 1 < len(steps) else 0)
                done += stop - start
                continue
            n = len(step)
            if self._rend - self._rpos < n or not rraw.startswith(step, self._rpos):
                if not self.expect(step):
                    return done, False
            else:  # all read ahead already: one comparison
                self._rpos += n
        return done, True

    def _recv_frame(self, head: bytearray, view: memoryview) -> bool:
        """:meth:`recv_planned` of the most common answer, a run of messages (``head``) then
        one frame's data (into ``view``), on a plain socket with nothing read ahead, in few
        steps (each taken on every get of a bulk tensor): one receive brings the head, then
        one waits for the rest of the data and the next message's header. True when the
        head matched and the data arrived; False with the head unconsumed (what arrived is
        read ahead, for the general path)."""
        rbuf, h, got = self._rbuf, len(head), 0
        deadline = time.monotonic() + self.timeout
        while not got:
            if not self._ready(False, deadline):
                raise _late(0, h)
            got = self._recv_some(rbuf[:h], 0, h)
        self._rpos, self._rend = 0, got
        if got < h or not self._rraw.startswith(head):
            return False
        self._deadline, self._rpos = deadline, h
        self._recv_into(view, deadline, P.HEADER_SIZE)
        return True

    def expect(self, message: bytes | bytearray) -> bool:
        """Consume the next message (or run of messages) if it is exactly ``message`` (its
        header first: a different one is left unread, for the general path to read)."""
        n = len(message)
        if self._rend - self._rpos < n:
            head = self.peek(P.HEADER_SIZE)  # one receive most often brings all of it
            if self._rend - self._rpos < n:
                if head != message[:P.HEADER_SIZE]:
                    return False
                self.peek(n)  # the same header: the peer owes n bytes
        if not self._rraw.startswith(message, self._rpos):
            return False
        self._rpos += n
        self._deadline = time.monotonic() + self.timeout
        return True


    def recv_small(self, runs: Sequence[tuple[int, bytearray]], iov: list[memoryview],
                   size: int) -> bool:
        """Receive a whole answer of ``size`` bytes (at most the read-ahead buffer's) laid out
        in advance: ``iov`` says where its bytes go, in order (its runs of messages: slices of
        :meth:`readahead_view` at their offset in the answer; its data: the destination),
        ``runs`` the (offset, bytes) each run must equal. Where all of it has arrived, that is
        one ``recvmsg_into`` and no copy.

        Returns:
            True when all of it arrived as expected; else False with nothing consumed
            (what arrived is left read ahead, in order, for the general receive). A TLS
            connection, or one with bytes read ahead already, always answers False.
        """
        if self._rpos != self._rend or self._tls:
            return False
        rraw, deadline = self._rraw, time.monotonic() + self.timeout
        while True:
            if not self._ready(False, deadline):
                raise TransportError(f"no answer within {self.timeout} s; closing",
                                     fix="check the server, or raise the timeout.")
            if got := self._recv_some(iov, 0, size):
                break
        if got == size:
            for at, run in runs:
                if not rraw.startswith(run, at):
                    break
            else:
                return True
        # In part, or otherwise: the bytes go to the read-ahead buffer at their offsets, and
        # more are read there while they still agree with every run.
        rbuf, at = self._rbuf, 0
        for view in iov:
            n = min(len(view), got - at)
            if view.obj is not rraw and n > 0:
                rbuf[at:at + n] = view[:n]
            at += len(view)
        deadline = time.monotonic() + self.timeout
        while all(run.startswith(rbuf[at:min(got, at + len(run))]) for at, run in runs
                  if at < got):
            if got == size:  # the data goes where it belongs after all
                at = 0
                for view in iov:
                    if view.obj is not rraw:
                        view[:] = rbuf[at:at + len(view)]
                    at += len(view)
                return True
            if not self._ready(False, deadline):
                raise _late(got, size)
            got += self._recv_some(rbuf[got:size], got, size)
        self._rpos, self._rend = 0, got
        return False

    def readahead_view(self) -> memoryview:
        """The read-ahead buffer (see :meth:`recv_small`)."""
        return self._rbuf


def _send_failed(exc: BaseException) -> TransportError:
    return TransportError(f"sending failed: {exc}",
                          fix="check that the peer is still reading, then reconnect.")


def _late(got: int, want: int) -> TransportError:
    return TransportError(f"the peer sent {got} of {want} expected bytes within the time "
                          "limit; closing", fix="send each message whole and promptly, or "
                          "raise the timeout.")


def recv_data(conn: Connection, stream_id: int, dests: Iterable[memoryview], total: int,
              span: tuple[int, int] | None = None) -> None:
    """Receive one tensor's TENSOR_DATA frames and its TENSOR_DATA_END on ``stream_id``.

    The frames' offsets run over the concatenation of ``dests`` (whose sizes add up to
    ``total``; an iterator is advanced only when the previous view is full, a list's views
    spanned by one frame are received together). They must cover
    ``span`` (default all of it, else one shard's bytes): each frame starts where the
    previous one ended and stays within the span, and its data is read with ``recv_into``
    straight into the destination. A PING on any stream is answered with PONG meanwhile.

    Raises:
        StreamError: a frame out of order, with a gap or overlap, empty, or past ``total``,
            or DATA_END before ``total`` bytes (the frame was consumed: the connection goes on).
        RemoteError: the peer sent ERROR on the stream.
        ProtocolError: any other message (the connection cannot go on).
    """
    done, total = span or (0, total)
    # Views given as a list may be filled out of turn (several per receive); an iterator's
    # next view may exist only once the one before it is full (a staging ring's).
    scatter = isinstance(dests, list) and len(dests) > 1
    targets, view = iter(dests), memoryview(b"")
    skip = done
    while skip:  # a shard starts inside the destination
        view = next(targets)
        view, skip = view[min(skip, len(view)):], max(skip - len(view), 0)
    while True:
        header = conn.recv_header()
        mtype = header.type
        if mtype == P.MessageType.PING or (header.stream_id == stream_id and mtype in (
                P.MessageType.ERROR, P.MessageType.TENSOR_DATA_END)):
            msg = P.decode(header, memoryview(conn.recv_payload(header)))
            if isinstance(msg, P.Ping):
                conn.send(P.Pong(), header.stream_id)
                continue
            if isinstance(msg, P.ErrorMsg):
                raise RemoteError(msg.code, msg.message)
            if done != total:
                raise StreamError(f"TENSOR_DATA_END at byte {done} of {total}",
                                  fix="send every byte of every buffer before TENSOR_DATA_END.")
            return
        if header.stream_id != stream_id or mtype != P.MessageType.TENSOR_DATA:
            exc = ProtocolError(f"message type 0x{mtype:X} on stream {header.stream_id} in the "
                                f"middle of stream {stream_id}'s data",
                                fix="finish a tensor's data with TENSOR_DATA_END first.")
            exc.stream_id = header.stream_id  # type: ignore[attr-defined]
            raise exc
        offset = conn.data_offset(header)
        n = header.length - 8
        if offset != done or not n or n > total - done:
            conn.discard(n)
            why = ("is empty" if not n else f"ends at {offset + n}, past byte {total}"
                   if offset == done else
                   f"starts at {offset} where {done} was expected (frames must ascend "
                   "with no gap or overlap)")
            raise StreamError(f"a TENSOR_DATA frame on stream {stream_id} {why}",
                              fix="send each buffer's bytes once, in order, within "
                                  "total_data_bytes.")
        if scatter and n > len(view):  # the frame spans views: received together
            pieces = []
            while n:
                while not len(view):
                    view = next(targets)
                step = min(n, len(view))
                pieces.append(view[:step])
                n, done, view = n - step, done + step, view[step:]
            conn.recv_into_many(pieces, P.HEADER_SIZE)
        while n:
            while not len(view):
                view = next(targets)
            step = min(n, len(view))
            conn.recv_into(view[:step], P.HEADER_SIZE if step == n else 0)  # (a message follows)
            n, done, view = n - step, done + step, view[step:]


__all__ = ["ACCEPT_BACKOFF", "ACCEPT_RETRY", "DEFAULT_PORT", "Connection", "StreamError", "TransportError", "dial", "listen",
           "parse_url", "recv_data"]
