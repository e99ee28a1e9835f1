"""Fuzz harness for the VIR0 decoder (vyre.from_wire, with and without preserve_unknown).

Control byte: bit 0 preserve_unknown; bit 1 keep the header digest as mutated (by default
the harness rewrites it, so mutations reach the body decoder); bit 2 pass a memoryview.
Property: vyre.WireFormatError only; bounded time and memory; a decoded program re-encodes
(at its own wire version) to bytes that decode again and re-encode identically. Byte
identity with the input holds only for canonical blobs (vyre 0.7.2 wire format): the decoder
tolerates overlong LEBs, non-canonical f32 bits and lenient bools, which re-encode
canonically; the seeds (all canonical) are checked for exact identity in the tests.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import blake3

from vyre import WireFormatError, from_wire, ir, to_wire

from . import seeds
from ._engine import Bounds, FuzzFailure, Harness, Stats, guarded

NAME = "vir0"
HEADER_LEN = 40
# Decoded IR is Python objects: a 2-3 byte wire expression becomes a ~100-200 byte dataclass.
BOUNDS = Bounds(seconds=2.0, mem_factor=256, mem_slack=1 << 20)


def rehash(payload: bytes) -> bytes:
    """Rewrite the header digest to blake3(body) (no-op below 40 bytes)."""
    if len(payload) < HEADER_LEN:
        return payload
    return payload[:8] + blake3.blake3(payload[HEADER_LEN:]).digest() + payload[HEADER_LEN:]


def one_input(data: bytes, *, measure_memory: bool = False, stats: Stats | None = None) -> bool:
    """Check every property on one input.

    Returns:
        True when the blob decoded (and round-tripped).

    Raises:
        FuzzFailure: a property was broken.
    """
    if not data:
        return False
    ctl, payload = data[0], data[1:]
    if not ctl & 2:
        payload = rehash(payload)
    preserve = bool(ctl & 1)
    source: bytes | memoryview = memoryview(payload) if ctl & 4 else payload
    program = guarded(lambda: from_wire(source, preserve_unknown=preserve), WireFormatError,
                      size=len(payload), bounds=BOUNDS, measure_memory=measure_memory,
                      stats=stats)
    if program is None:
        return False
    again = check_round_trip(program)
    if stats is not None and again != payload:
        stats.note("decoded non-canonical blob (re-encoding canonicalises it)")
    return True


def check_round_trip(program: ir.Program) -> bytes:
    """Re-encode at the program's wire version: that decodes to the same program (f32
    literals canonicalised, the vyre 0.7.2 wire format) and re-encodes to identical bytes.

    Returns:
        The re-encoded bytes.

    Raises:
        FuzzFailure: encoding a decoded program fails, or the second round trip differs.
    """
    try:
        again = to_wire(program, version=program.wire_version)
    except Exception as exc:
        raise FuzzFailure(f"a decoded program does not re-encode: {exc!r}") from exc
    try:
        back = from_wire(again, preserve_unknown=True)
        twice = to_wire(back, version=back.wire_version)
    except Exception as exc:
        raise FuzzFailure(f"a re-encoded program does not round-trip: {exc!r}") from exc
    if back != canonical_f32(program):
        raise FuzzFailure("re-encoding changed the program (beyond f32 canonicalisation)")
    if twice != again:
        raise FuzzFailure(f"re-encoding is not idempotent:\n 1st {again.hex()}\n 2nd {twice.hex()}")
    return again


def canonical_f32(obj: Any) -> Any:
    """``obj`` with every LitF32 canonicalised as the encoder does."""
    if isinstance(obj, ir.LitF32):
        return ir.LitF32(ir.canonical_f32_bits(obj.bits))
    if isinstance(obj, tuple):
        return tuple(canonical_f32(v) for v in obj)
    if isinstance(obj, (ir.Node, ir.Expr, ir.Program)) and dataclasses.is_dataclass(obj):
        fields = {f.name: canonical_f32(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
        return type(obj)(**fields)
    return obj


HARNESS = Harness(NAME, lambda: list(seeds.vir0_seeds()), one_input)
