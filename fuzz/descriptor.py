"""Fuzz harness for the descriptor decoder (decode_descriptor / decode_descriptor_prefix).

Control byte: bit 0 permissive; bit 1 prefix mode at offset ``(ctl >> 2) & 3``; bit 4 pass a
memoryview. Property: HurrayFormatError only; bounded time and memory; decoded => re-encodes
to the identical bytes and re-decodes to an equal descriptor.
"""

from __future__ import annotations

from hurray_gpu.errors import HurrayFormatError
from hurray_gpu.format.descriptor import (
    TensorDescriptor,
    decode_descriptor,
    decode_descriptor_prefix,
    peek_descriptor_length,
)

from . import seeds
from ._engine import Bounds, FuzzFailure, Harness, Stats, guarded

NAME = "descriptor"
# A descriptor's objects (shape tuple, handles, sections) stay within a few dozen bytes of
# Python memory per wire byte.
BOUNDS = Bounds(seconds=2.0, mem_factor=64, mem_slack=256 << 10)


def one_input(data: bytes, *, measure_memory: bool = False, stats: Stats | None = None) -> bool:
    """Check every property on one input.

    Returns:
        True when the input decoded (and round-tripped).

    Raises:
        FuzzFailure: a property was broken.
    """
    if not data:
        return False
    ctl, payload = data[0], data[1:]
    permissive, prefix = bool(ctl & 1), bool(ctl & 2)
    offset = (ctl >> 2) & 3 if prefix else 0
    source: bytes | memoryview = memoryview(payload) if ctl & 0x10 else payload

    def decode() -> tuple[TensorDescriptor, int]:
        if prefix:
            return decode_descriptor_prefix(source, offset, permissive=permissive)
        return decode_descriptor(source, permissive=permissive), len(payload)

    result = guarded(decode, HurrayFormatError, size=len(payload), bounds=BOUNDS,
                     measure_memory=measure_memory, stats=stats)
    if result is None:
        return False
    desc, used = result
    if prefix and peek_descriptor_length(source, offset) != used:
        raise FuzzFailure(f"peek_descriptor_length disagrees with the decoded length {used}")
    check_round_trip(desc, payload[offset:offset + used], permissive)
    return True


def check_round_trip(desc: TensorDescriptor, wire: bytes, permissive: bool) -> None:
    """Decoded => encode gives ``wire`` back byte for byte, and that decodes equal.

    Raises:
        FuzzFailure: the re-encoding differs or fails.
    """
    try:
        again = desc.encode(permissive=permissive)
    except Exception as exc:
        raise FuzzFailure(f"a decoded descriptor does not re-encode: {exc!r}") from exc
    if again != wire:
        raise FuzzFailure(f"re-encoding changed the bytes:\n in  {wire.hex()}\n out {again.hex()}")
    try:
        back = decode_descriptor(again, permissive=permissive)
    except Exception as exc:
        raise FuzzFailure(f"re-encoded descriptor does not decode: {exc!r}") from exc
    if repr(back) != repr(desc):  # repr, not ==: NaN statistics never compare equal
        raise FuzzFailure(f"re-decoded descriptor differs: {back!r} != {desc!r}")


HARNESS = Harness(NAME, lambda: list(seeds.descriptor_seeds()), one_input)
