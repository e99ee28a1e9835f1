"""Mutation fuzzing of the decoder: a WireFormatError or a clean round trip, never a crash.

Rehashed mutations fix the digest up so the body decoder sees the damage.
"""

from __future__ import annotations

import dataclasses

import blake3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vyre import WireFormatError, from_wire, ir, to_wire

import corpus

CORPUS = corpus.corpus_blobs()


def _canonical_f32(obj: object) -> object:
    if isinstance(obj, ir.LitF32):
        return ir.LitF32(ir.canonical_f32_bits(obj.bits))
    if isinstance(obj, tuple):
        return tuple(_canonical_f32(v) for v in obj)
    if dataclasses.is_dataclass(obj) and isinstance(obj, (ir.Node, ir.Expr, ir.Program)):
        values = {f.name: _canonical_f32(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
        return type(obj)(**values)
    return obj


@st.composite
def mutated(draw: st.DrawFn) -> tuple[bytes, bool]:
    blob = bytearray(draw(st.sampled_from(CORPUS)))
    for _ in range(draw(st.integers(1, 4))):
        action = draw(st.sampled_from(["set", "set", "set", "insert", "delete", "truncate"]))
        pos = draw(st.integers(40 if len(blob) > 40 else 0, max(len(blob) - 1, 0)))
        if action == "set" and blob:
            blob[pos] = draw(st.sampled_from([0, 1, 2, 0x7F, 0x80, 0xFF, draw(st.integers(0, 255))]))
        elif action == "insert":
            blob[pos:pos] = draw(st.binary(min_size=1, max_size=4))
        elif action == "delete" and blob:
            del blob[pos:pos + draw(st.integers(1, 4))]
        elif action == "truncate":
            del blob[pos:]
    if len(blob) >= 6 and draw(st.integers(0, 9)) == 0:
        blob[4] = draw(st.integers(3, 7))
    rehash = draw(st.booleans()) or draw(st.booleans())
    if rehash and len(blob) >= 40:
        blob[8:40] = blake3.blake3(bytes(blob[40:])).digest()
    return bytes(blob), rehash


def _check(blob: bytes) -> bool:
    try:
        program = from_wire(blob, preserve_unknown=True)
    except WireFormatError as exc:
        assert "Fix:" in str(exc)
        return False
    again = to_wire(program, version=program.wire_version)
    decoded = from_wire(again, preserve_unknown=True)
    assert decoded == _canonical_f32(program)
    assert to_wire(decoded, version=decoded.wire_version) == again
    return True


@settings(
    max_examples=6000, deadline=None, suppress_health_check=[HealthCheck.too_slow],
    database=None,
)
@given(mutated())
def test_mutated_blobs_fail_cleanly_or_round_trip(case: tuple[bytes, bool]) -> None:
    blob, _ = case
    _check(blob)


@settings(max_examples=500, deadline=None, database=None)
@given(st.binary(max_size=64), st.booleans())
def test_random_bytes_after_a_valid_header(tail: bytes, rehash: bool) -> None:
    head = bytearray(CORPUS[0][:40])
    if rehash:
        head[8:40] = blake3.blake3(tail).digest()
    _check(bytes(head) + tail)


def test_every_single_byte_flip_of_a_small_blob_is_handled() -> None:
    base = to_wire(corpus.every_tag_program())
    decoded_ok = 0
    for pos in range(40, len(base)):
        for value in (0x00, 0x01, 0x80, 0xFF, base[pos] ^ 0x01):
            blob = bytearray(base)
            blob[pos] = value
            blob[8:40] = blake3.blake3(bytes(blob[40:])).digest()
            decoded_ok += _check(bytes(blob))
    assert decoded_ok > 0


def test_every_truncation_is_rejected() -> None:
    base = to_wire(corpus.buffer_fields_program())
    for cut in range(len(base)):
        blob = bytearray(base[:cut])
        if cut >= 40:
            blob[8:40] = blake3.blake3(bytes(blob[40:])).digest()
        try:
            from_wire(bytes(blob))
        except WireFormatError:
            continue
        raise AssertionError(f"truncation at {cut} decoded")
