"""Fuzz harness for the interchange codec (hurray_gpu.format.protocol: decode_header, decode,
decode_data_offset).

The input after the control byte is what a receiver reads from a connection: messages back to
back, each decoded as the transport does (header first, checked against the maximum size,
then exactly its payload); a message cut short at the end is left unread, as a receiver would
wait for more. Control byte: bit 0 pass payloads as memoryviews; bit 1 a 4 KiB maximum message
size instead of the default; bit 2 the input is one message whose payload_length the harness
rewrites to the bytes that follow the header (so mutations reach the payload decoders).
Property: ProtocolError only; bounded time and memory; every decoded message re-encodes to its
exact input bytes, and a TENSOR_DATA frame's decode_data_offset agrees with decode.
"""

from __future__ import annotations

import struct

from hurray_gpu.errors import ProtocolError
from hurray_gpu.format.protocol import (
    DEFAULT_MAX_MESSAGE,
    HEADER_SIZE,
    Message,
    MessageType,
    TensorData,
    decode,
    decode_data_offset,
    decode_header,
    encode,
)

from . import seeds
from ._engine import Bounds, FuzzFailure, Harness, Stats, guarded

NAME = "protocol"
# Messages are small Python objects, and a TENSOR_DESCRIPTOR decodes its descriptor once
# (the descriptor harness's factor).
BOUNDS = Bounds(seconds=2.0, mem_factor=64, mem_slack=256 << 10)


def split(ctl: int, stream: bytes) -> list[tuple[bytes, Message]]:
    """Decode ``stream`` message by message as a receiver would.

    Raises:
        ProtocolError: the first malformed message.
    """
    if ctl & 4 and len(stream) >= HEADER_SIZE:
        stream = stream[:8] + struct.pack("<I", len(stream) - HEADER_SIZE) + stream[12:]
    limit = 4096 if ctl & 2 else DEFAULT_MAX_MESSAGE
    out, pos = [], 0
    while len(stream) - pos >= HEADER_SIZE:
        header = decode_header(stream[pos:pos + HEADER_SIZE], limit)
        end = pos + HEADER_SIZE + header.length
        if end > len(stream):
            break
        payload = stream[pos + HEADER_SIZE:end]
        msg = decode(header, memoryview(payload) if ctl & 1 else payload)
        if header.type == MessageType.TENSOR_DATA and isinstance(msg, TensorData) and (
                decode_data_offset(header, payload[:8]) != msg.offset):
            raise FuzzFailure(f"decode_data_offset disagrees with decode: {msg.offset}")
        out.append((stream[pos:end], msg))
        pos = end
    return out


def one_input(data: bytes, *, measure_memory: bool = False, stats: Stats | None = None) -> bool:
    """Check every property on one input.

    Returns:
        True when the input held at least one complete message and every complete message
        decoded (and round-tripped).

    Raises:
        FuzzFailure: a property was broken.
    """
    if not data:
        return False
    ctl, stream = data[0], data[1:]
    result = guarded(lambda: split(ctl, stream), ProtocolError, size=len(stream),
                     bounds=BOUNDS, measure_memory=measure_memory, stats=stats)
    if result is None:
        return False
    for wire, msg in result:
        try:
            again = encode(msg, int.from_bytes(wire[4:8], "little"))
        except Exception as exc:
            raise FuzzFailure(f"a decoded {type(msg).__name__} does not re-encode: {exc!r}"
                              ) from exc
        if again != wire:
            raise FuzzFailure(f"re-encoding changed the bytes:\n in  {wire.hex()}\n out "
                              f"{again.hex()}")
    if stats is not None:
        stats.note(f"{len(result)} messages")
    return bool(result)  # only inputs that reached a payload decoder join the smoke pool


HARNESS = Harness(NAME, lambda: list(seeds.protocol_seeds()), one_input)
