"""Codec of the Hurray network interchange protocol (Hurray spec, Interchange).

Pure bytes in, bytes out: no sockets and no devices (those live in ``hurray_gpu.net``). The
byte layout, the error codes and our stream-id conventions are in docs/interchange.md, "Byte
layout". Every message is a 12-byte header (type u32, stream_id u32, payload_length u32, all
little-endian) and a payload; the payload fields of each type are declared once in ``_SCHEMA``
and both directions walk that table.

Decoding is strict and safe on hostile input: ``decode_header`` rejects an oversized payload
before the caller allocates anything, ``decode`` never reads outside the payload and allocates
at most the payload's size, and every violation raises ``ProtocolError`` whose ``code`` is the
``ErrorCode`` to answer with. Encoding checks its inputs the same way, so what we send always
decodes.
"""

from __future__ import annotations

import enum
import struct
import threading
from dataclasses import dataclass, fields
from typing import Any

from hurray_gpu.errors import HurrayFormatError, ProtocolError
from hurray_gpu.format.descriptor import decode_descriptor, decode_descriptor_prefix
from hurray_gpu.format.descriptor.layouts import LAYOUT_NAMES

HEADER_SIZE = 12
PROTOCOL_VERSION = 1
DEFAULT_MAX_MESSAGE = 64 << 20
DATA_HEADER_SIZE = HEADER_SIZE + 8  # a TENSOR_DATA frame's header plus its u64 byte offset
_HEADER = struct.Struct("<III")
_SPEC = "(docs/interchange.md, Byte layout)"


class MessageType(enum.IntEnum):
    """Message types; 0xF0-0xFE are private (none defined here) and 0xFF is invalid."""

    CLIENT_HELLO = 0x01
    SERVER_HELLO = 0x02
    TENSOR_REQUEST = 0x03
    TENSOR_DESCRIPTOR = 0x04
    TENSOR_DATA = 0x05
    TENSOR_DATA_END = 0x06
    TENSOR_PUT = 0x07
    TENSOR_PUT_ACK = 0x08
    ERROR = 0x09
    PING = 0x0A
    PONG = 0x0B
    RDMA_REGISTER = 0x0C
    RDMA_READY = 0x0D


class ErrorCode(enum.IntEnum):
    """ERROR message codes; 0xF0-0xFE are implementation-defined, the rest reserved."""

    PROTOCOL_VERSION_MISMATCH = 1
    UNKNOWN_TENSOR = 2
    LAYOUT_UNAVAILABLE = 3
    TRANSCODE_LIMIT_EXCEEDED = 4
    DEVICE_UNAVAILABLE = 5
    INVALID_MESSAGE = 6
    MESSAGE_TOO_LARGE = 7
    SHARD_MISMATCH = 8


class Capability(enum.IntFlag):
    """Hello capability bits; bits 4-63 are reserved (zero)."""

    TRANSCODING = 1
    PARALLEL_STREAMS = 2
    RDMA_DATA_PLANE = 4
    RDMA_GPUDIRECT = 8  # implies RDMA_DATA_PLANE


class RequestFlag(enum.IntFlag):
    """TENSOR_REQUEST flag bits; bits 2-31 are reserved (zero)."""

    ALLOW_TRANSCODE = 1
    PARALLEL_OK = 2


@dataclass(frozen=True)
class Header:
    """A decoded 12-byte message header (``length`` is the payload's)."""

    type: int
    stream_id: int
    length: int


@dataclass(frozen=True)
class LayoutEntry:
    """A layout tag; a private tag (0xF0-0xFE) carries opaque ``metadata`` (u16-framed)."""

    tag: int
    metadata: bytes = b""


@dataclass(frozen=True)
class Hello:
    """The fields both hellos share (encode a ClientHello or a ServerHello).

    ``layouts`` is in preference order; empty ``memory_classes`` means STANDARD only.
    """

    version: int
    max_message_size: int
    capabilities: int
    layouts: tuple[LayoutEntry, ...]
    devices: tuple[int, ...]
    memory_classes: tuple[int, ...]


class ClientHello(Hello):
    """CLIENT_HELLO (0x01): what the client speaks and accepts."""


class ServerHello(Hello):
    """SERVER_HELLO (0x02): the server's answer; its version is at most the client's."""


@dataclass(frozen=True)
class TensorRequest:
    """TENSOR_REQUEST (0x03): ``flags`` are RequestFlag bits."""

    key: str
    layouts: tuple[LayoutEntry, ...]
    device: int
    min_alignment: int
    flags: int


@dataclass(frozen=True)
class TensorDescriptorMsg:
    """TENSOR_DESCRIPTOR (0x04): an encoded Hurray descriptor and the data that follows."""

    descriptor: bytes
    total_data_bytes: int
    shard_index: int = 0
    total_shards: int = 1


@dataclass(frozen=True)
class TensorData:
    """TENSOR_DATA (0x05); a decoded frame's ``data`` is a view of the payload (no copy)."""

    offset: int
    data: bytes | memoryview


@dataclass(frozen=True)
class TensorDataEnd:
    """TENSOR_DATA_END (0x06): the tensor's data is complete."""


@dataclass(frozen=True)
class TensorPut:
    """TENSOR_PUT (0x07): DATA frames and a DATA_END follow on the same stream."""

    key: str
    descriptor: bytes
    total_data_bytes: int


@dataclass(frozen=True)
class TensorPutAck:
    """TENSOR_PUT_ACK (0x08): the put tensor is stored."""


@dataclass(frozen=True)
class ErrorMsg:
    """ERROR (0x09): an ErrorCode (or 0xF0-0xFE) and a UTF-8 message; closes the stream."""

    code: int
    message: str


@dataclass(frozen=True)
class Ping:
    """PING (0x0A): no payload."""


@dataclass(frozen=True)
class Pong:
    """PONG (0x0B): answers a PING on the same stream id."""


@dataclass(frozen=True)
class RdmaRegister:
    """RDMA_REGISTER (0x0C): a registered remote region (we never advertise RDMA)."""

    remote_addr: int
    length: int
    rkey: bytes


@dataclass(frozen=True)
class RdmaReady:
    """RDMA_READY (0x0D): no payload."""


Message = (ClientHello | ServerHello | TensorRequest | TensorDescriptorMsg | TensorData
           | TensorDataEnd | TensorPut | TensorPutAck | ErrorMsg | Ping | Pong | RdmaRegister
           | RdmaReady)

# Field kinds, in wire order per type: u8/u32/u64 integers; str (u32 length + UTF-8); blob
# (u32 length + bytes); layouts (u16 n + entries); u8s (u16 n + u8s); desc (a self-delimiting
# descriptor); dblob (u32 length + a descriptor); rest (the remaining payload).
_HELLO = ("u32", "u32", "u64", "layouts", "u8s", "u8s")
_SCHEMA: dict[int, tuple[type, tuple[str, ...]]] = {
    MessageType.CLIENT_HELLO: (ClientHello, _HELLO),
    MessageType.SERVER_HELLO: (ServerHello, _HELLO),
    MessageType.TENSOR_REQUEST: (TensorRequest, ("str", "layouts", "u8", "u32", "u32")),
    MessageType.TENSOR_DESCRIPTOR: (TensorDescriptorMsg, ("desc", "u64", "u32", "u32")),
    MessageType.TENSOR_DATA: (TensorData, ("u64", "rest")),
    MessageType.TENSOR_DATA_END: (TensorDataEnd, ()),
    MessageType.TENSOR_PUT: (TensorPut, ("str", "dblob", "u64")),
    MessageType.TENSOR_PUT_ACK: (TensorPutAck, ()),
    MessageType.ERROR: (ErrorMsg, ("u32", "str")),
    MessageType.PING: (Ping, ()),
    MessageType.PONG: (Pong, ()),
    MessageType.RDMA_REGISTER: (RdmaRegister, ("u64", "u64", "blob")),
    MessageType.RDMA_READY: (RdmaReady, ()),
}
_TYPE_OF = {cls: mtype for mtype, (cls, _) in _SCHEMA.items()}
_MEMBER = {int(t): t for t in MessageType}  # a dict lookup; MessageType(t) is slow
_NAMES = {mtype: tuple(f.name for f in fields(cls)) for mtype, (cls, _) in _SCHEMA.items()}
_INT = {"u8": 1, "u16": 2, "u32": 4, "u64": 8}
_MIN = {"u8": 1, "u32": 4, "u64": 8, "str": 4, "blob": 4, "dblob": 4, "layouts": 2, "u8s": 2,
        "desc": 20, "rest": 0}  # desc: a descriptor's fixed header
_MIN_LEN = {t: sum(_MIN[k] for k in kinds) for t, (_, kinds) in _SCHEMA.items()}
_PEER_FIX = ("make the peer send well-formed messages " + _SPEC + "; this connection cannot "
             "continue.")


def _fail(what: str, fix: str, code: int = ErrorCode.INVALID_MESSAGE) -> ProtocolError:
    return ProtocolError(what, code=code, fix=fix)


def _check_header(mtype: int, stream_id: int, length: int) -> MessageType:
    """The checks a header alone allows (all but the size limit)."""
    if mtype not in _SCHEMA:
        kind = ("a private type" if 0xF0 <= mtype <= 0xFE else
                "the invalid type" if mtype == 0xFF else "an unknown type")
        raise _fail(f"message type 0x{mtype:X} is {kind}; this implementation knows 0x01-0x0D.",
                    "send only the message types 0x01-0x0D " + _SPEC + ".")
    name = _MEMBER[mtype]
    if stream_id == 0:
        raise _fail(f"{name.name} on stream 0, which is reserved.",
                    "number streams from 1 (hello) and 2 upward (requests) " + _SPEC + ".")
    if length < _MIN_LEN[mtype] or (not _SCHEMA[mtype][1] and length):
        need = "no payload" if not _SCHEMA[mtype][1] else f"at least {_MIN_LEN[mtype]} bytes"
        raise _fail(f"{name.name} payload of {length} bytes; it takes {need}.", _PEER_FIX)
    return name


def decode_header(raw: bytes | memoryview, max_message_size: int) -> Header:
    """Decode and check a message header before its payload is read.

    Args:
        raw: exactly ``HEADER_SIZE`` bytes.
        max_message_size: the largest payload this receiver accepts.

    Raises:
        ProtocolError: MESSAGE_TOO_LARGE for a payload over ``max_message_size``;
            INVALID_MESSAGE for an unknown/private/invalid type, stream 0, or a payload length
            the type cannot have.
    """
    if len(raw) != HEADER_SIZE:
        raise _fail(f"a message header is {HEADER_SIZE} bytes, got {len(raw)}.",
                    f"pass exactly the first {HEADER_SIZE} bytes of the message.")
    mtype, stream_id, length = _HEADER.unpack(raw)
    _check_header(mtype, stream_id, length)
    if length > max_message_size:
        raise _fail(f"{MessageType(mtype).name} payload of {length} bytes exceeds this "
                    f"receiver's maximum of {max_message_size} bytes.",
                    "split the data into TENSOR_DATA frames no larger than the max_message_size "
                    "the hello exchange agreed on.", ErrorCode.MESSAGE_TOO_LARGE)
    return Header(mtype, stream_id, length)


def decode_data_offset(header: Header, first8: bytes | memoryview) -> int:
    """The ``byte_offset_in_buffer`` of a TENSOR_DATA frame from its first 8 payload bytes.

    The receiver then reads ``header.length - 8`` data bytes straight into its buffer.

    Raises:
        ProtocolError: INVALID_MESSAGE when the header is not a TENSOR_DATA frame's.
    """
    _check_header(header.type, header.stream_id, header.length)
    if header.type != MessageType.TENSOR_DATA or len(first8) != 8:
        raise _fail(f"decode_data_offset needs a TENSOR_DATA header and 8 bytes, got type "
                    f"0x{header.type:X} and {len(first8)} bytes.",
                    "call it only for TENSOR_DATA frames, with the payload's first 8 bytes.")
    return int.from_bytes(first8, "little")


def data_header(stream_id: int, offset: int, nbytes: int) -> bytes:
    """The 20 bytes that precede ``nbytes`` of data in a TENSOR_DATA frame.

    Sending these and the data with one ``sendmsg`` avoids copying the data.

    Raises:
        ProtocolError: a field out of range (stream 0, offset past u64, frame past u32).
    """
    _check_int("u32", stream_id, "TENSOR_DATA stream_id")
    _check_int("u64", offset, "TENSOR_DATA byte_offset_in_buffer")
    _check_int("u32", nbytes, "TENSOR_DATA data length")
    _check_int("u32", nbytes + 8, "TENSOR_DATA payload_length")
    _check_header(MessageType.TENSOR_DATA, stream_id, nbytes + 8)
    return _HEADER.pack(MessageType.TENSOR_DATA, stream_id, nbytes + 8) + offset.to_bytes(8, "little")


def _check_int(kind: str, value: object, where: str) -> int:
    bits = 8 * _INT[kind]
    if not isinstance(value, int) or not 0 <= value < 1 << bits:
        raise _fail(f"{where} = {value!r} is not a {kind} (0 to 2**{bits} - 1).",
                    f"pass an integer in [0, {(1 << bits) - 1}] for {where}.")
    return value


def _check_tag(tag: int, where: str) -> None:
    if tag not in LAYOUT_NAMES and not 0xF0 <= tag <= 0xFE:
        raise _fail(f"{where} layout tag 0x{tag:02X} is not a layout Hurray defines.",
                    "use a defined layout tag (0x01-0x0B, 0x40) or a private one "
                    "(0xF0-0xFE, with metadata) " + _SPEC + ".")


def _descriptor_length(raw: memoryview, where: str) -> int:
    try:
        length = int.from_bytes(raw[6:10], "little") if raw[:4] == b"HRRY" else 0
        if 20 <= length <= len(raw):  # decode exactly its bytes: small ones are memoised
            decode_descriptor(raw[:length])
            return length
        return decode_descriptor_prefix(raw, 0)[1]
    except HurrayFormatError as exc:
        reason = str(exc).split(" Fix:")[0]
        raise _fail(f"{where} is not a valid Hurray descriptor: {reason}",
                    "send the descriptor bytes TensorDescriptor.encode() produced, unchanged."
                    ) from None


def _check_message(mtype: MessageType, msg: Message) -> None:
    """The value rules beyond field ranges, shared by encode and decode."""
    if isinstance(msg, Hello):
        if msg.version == 0:
            raise _fail(f"{mtype.name} protocol_version 0 does not exist.",
                        f"send protocol_version {PROTOCOL_VERSION}.")
        if msg.capabilities >> 4:
            raise _fail(f"{mtype.name} capability_flags 0x{msg.capabilities:X} set reserved "
                        "bits 4-63.", "send only the bits of Capability (0x1-0x8).")
        if msg.capabilities & Capability.RDMA_GPUDIRECT and not (
                msg.capabilities & Capability.RDMA_DATA_PLANE):
            raise _fail(f"{mtype.name} sets RDMA_GPUDIRECT without RDMA_DATA_PLANE.",
                        "set RDMA_DATA_PLANE (bit 2) whenever RDMA_GPUDIRECT (bit 3) is set.")
    elif isinstance(msg, TensorRequest) and msg.flags >> 2:
        raise _fail(f"TENSOR_REQUEST request_flags 0x{msg.flags:X} set reserved bits 2-31.",
                    "send only ALLOW_TRANSCODE (bit 0) and PARALLEL_OK (bit 1).")
    elif isinstance(msg, TensorDescriptorMsg) and msg.shard_index >= msg.total_shards:
        raise _fail(f"TENSOR_DESCRIPTOR shard_index {msg.shard_index} is not below total_shards "
                    f"{msg.total_shards}.", "send total_shards >= 1 and shard_index in "
                    "[0, total_shards).", ErrorCode.SHARD_MISMATCH)
    elif isinstance(msg, ErrorMsg) and not (1 <= msg.code <= 8 or 0xF0 <= msg.code <= 0xFE):
        raise _fail(f"ERROR code {msg.code} is reserved.",
                    "send an ErrorCode (1-8) or an implementation-defined code (0xF0-0xFE).")


def _encode_field(kind: str, value: object, where: str) -> bytes:
    if kind in _INT:
        return _check_int(kind, value, where).to_bytes(_INT[kind], "little")
    if kind == "str":
        try:
            raw: bytes = value.encode("utf-8")  # type: ignore[attr-defined]
        except (AttributeError, UnicodeEncodeError):
            raise _fail(f"{where} = {value!r} is not a str encodable as UTF-8.",
                        f"pass {where} as a str without lone surrogates.") from None
        return _encode_field("blob", raw, where)
    if kind in ("layouts", "u8s"):
        if not isinstance(value, tuple | list):
            raise _fail(f"{where} = {value!r} is not a tuple.", f"pass {where} as a tuple.")
        out = [_check_int("u16", len(value), f"the length of {where}").to_bytes(2, "little")]
        for item in value:
            out.append(_encode_entry(item, where) if kind == "layouts"
                       else _encode_field("u8", item, f"an item of {where}"))
        return b"".join(out)
    if not isinstance(value, bytes | bytearray | memoryview):
        raise _fail(f"{where} is a {type(value).__name__}, not bytes.", f"pass {where} as bytes.")
    raw = bytes(value)
    if kind in ("desc", "dblob") and _descriptor_length(memoryview(raw), where) != len(raw):
        raise _fail(f"{where} has bytes after its descriptor.",
                    "pass exactly one encoded descriptor.")
    if kind in ("blob", "dblob"):
        return _check_int("u32", len(raw), f"the length of {where}").to_bytes(4, "little") + raw
    return raw


def _encode_entry(entry: object, where: str) -> bytes:
    if not isinstance(entry, LayoutEntry):
        raise _fail(f"{where} holds {entry!r}, not a LayoutEntry.",
                    f"pass {where} as a tuple of LayoutEntry.")
    tag = _check_int("u8", entry.tag, f"a {where} tag")
    _check_tag(tag, where)
    if tag < 0xF0:
        if entry.metadata:
            raise _fail(f"{where} standard layout tag 0x{tag:02X} carries metadata.",
                        "attach metadata only to private tags 0xF0-0xFE.")
        return bytes([tag])
    meta = _encode_field("blob", entry.metadata, f"{where} metadata")[4:]
    return bytes([tag]) + _check_int("u16", len(meta), f"{where} metadata length").to_bytes(
        2, "little") + meta


def encode(msg: Message, stream_id: int) -> bytes:
    """Encode ``msg`` as one message (header and payload) on ``stream_id``.

    Raises:
        ProtocolError: INVALID_MESSAGE for a value the wire cannot carry or a rule the message
            breaks (the same rules ``decode`` enforces); SHARD_MISMATCH for shard fields.
    """
    mtype = _TYPE_OF.get(type(msg))
    if mtype is None:
        raise _fail(f"{type(msg).__name__} is not a protocol message.",
                    "encode one of the message classes of hurray_gpu.format.protocol "
                    "(a ClientHello or ServerHello, not a bare Hello).")
    name = _MEMBER[mtype]
    _check_int("u32", stream_id, f"{name.name} stream_id")
    names, memo, payload = _NAMES[mtype], mtype in _MEMO_TYPES, None
    if memo:
        try:
            payload = _ENCODED.get(msg)
        except (TypeError, ValueError):  # a descriptor passed as a mutable buffer or view
            memo = False
    if payload is None:
        kinds = _SCHEMA[mtype][1]
        payload = b"".join(_encode_field(kind, getattr(msg, f), f"{name.name} {f}")
                           for f, kind in zip(names, kinds, strict=True))
        _check_int("u32", len(payload), f"{name.name} payload_length")
        _check_message(name, msg)
        if memo:
            _remember(_ENCODED, msg, payload, len(payload))
    _check_header(mtype, stream_id, len(payload))
    return _HEADER.pack(mtype, stream_id, len(payload)) + payload


# The small control messages of a get or put repeat from call to call (the same request, the
# same descriptor, DATA_END): their payloads are encoded and decoded once and remembered.
# Messages are immutable and the codec is deterministic, so a hit equals a fresh result; only
# successful results up to _MEMO_BYTES are kept, at most _MEMO_ENTRIES of each (oldest out).
_MEMO_TYPES = frozenset({MessageType.TENSOR_REQUEST, MessageType.TENSOR_DESCRIPTOR,
                         MessageType.TENSOR_DATA_END, MessageType.TENSOR_PUT_ACK,
                         MessageType.PING, MessageType.PONG})
_MEMO_BYTES, _MEMO_ENTRIES = 2048, 512
_ENCODED: dict[Any, bytes] = {}
_DECODED: dict[tuple[int, bytes], Any] = {}
_MEMO_LOCK = threading.Lock()


def _remember(memo: dict[Any, Any], key: Any, value: Any, size: int) -> None:
    if size <= _MEMO_BYTES:
        with _MEMO_LOCK:
            if len(memo) >= _MEMO_ENTRIES:
                del memo[next(iter(memo))]
            memo[key] = value


class _Reader:
    """A cursor that never reads past the payload."""

    def __init__(self, mv: memoryview, name: str) -> None:
        self.mv, self.pos, self.name = mv, 0, name

    def take(self, n: int, field: str) -> memoryview:
        left = len(self.mv) - self.pos
        if n > left:
            raise _fail(f"{self.name} payload ends inside {field}: {n} bytes needed at payload "
                        f"offset {self.pos}, {left} left.", _PEER_FIX)
        self.pos += n
        return self.mv[self.pos - n:self.pos]

    def uint(self, kind: str, field: str) -> int:
        return int.from_bytes(self.take(_INT[kind], field), "little")

    def field(self, kind: str, field: str) -> object:
        if kind in _INT:
            return self.uint(kind, field)
        if kind == "rest":
            return self.take(len(self.mv) - self.pos, field)
        if kind == "desc":
            return bytes(self.take(_descriptor_length(self.mv[self.pos:], field), field))
        if kind == "u8s":
            return tuple(self.take(self.uint("u16", field), field))
        if kind == "layouts":
            return tuple(self.entry(field) for _ in range(self.uint("u16", field)))
        raw = self.take(self.uint("u32", field), field)
        if kind == "dblob" and _descriptor_length(raw, field) != len(raw):
            raise _fail(f"{self.name} {field} has bytes after its descriptor.", _PEER_FIX)
        if kind != "str":
            return bytes(raw)
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError as exc:
            raise _fail(f"{self.name} {field} is not valid UTF-8 ({exc.reason} at byte "
                        f"{exc.start}).", "send keys and messages as UTF-8.") from None

    def entry(self, field: str) -> LayoutEntry:
        tag = self.uint("u8", field)
        _check_tag(tag, f"{self.name} {field}")
        if tag < 0xF0:
            return LayoutEntry(tag)
        return LayoutEntry(tag, bytes(self.take(self.uint("u16", field), field)))


def decode(header: Header, payload: bytes | memoryview) -> Message:
    """Decode one message's payload strictly.

    Args:
        header: from ``decode_header``.
        payload: exactly ``header.length`` bytes; a TENSOR_DATA's data is returned as a view
            of it.

    Raises:
        ProtocolError: INVALID_MESSAGE for anything malformed (truncation, trailing bytes,
            reserved bits, unknown layout tags, bad UTF-8, an invalid descriptor, ...),
            SHARD_MISMATCH for inconsistent shard fields.
    """
    name = _check_header(header.type, header.stream_id, header.length)
    mv = memoryview(payload).cast("B")  # byte-indexed whatever the caller's view format
    if len(mv) != header.length:
        raise _fail(f"{name.name} header says {header.length} payload bytes, got "
                    f"{len(mv)}.", "pass exactly header.length payload bytes.")
    key = (header.type, bytes(mv)) if name in _MEMO_TYPES and len(mv) <= _MEMO_BYTES else None
    hit = None if key is None else _DECODED.get(key)
    if hit is not None:
        return hit  # type: ignore[no-any-return]
    cls, kinds = _SCHEMA[name]
    r = _Reader(mv, name.name)
    values = [r.field(kind, f) for f, kind in zip(_NAMES[name], kinds, strict=True)]
    if r.pos != len(mv):
        raise _fail(f"{name.name} has {len(mv) - r.pos} bytes after its last field.",
                    _PEER_FIX)
    msg: Message = cls(*values)
    _check_message(name, msg)
    if key is not None:
        _remember(_DECODED, key, msg, len(mv))
    return msg
