"""Hypothesis versions of the fuzz properties: every example memory-checked with tracemalloc.

Examples are seeds mutated by hypothesis-drawn operations (shrinkable to the few mutations
that matter), plus raw bytes for the decoders whose headers are short enough to hit.
"""

from __future__ import annotations

import blake3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz._engine import INTERESTING, OPS, mutate
from fuzz.harnesses import get

SETTINGS = settings(max_examples=500, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow])
op = st.tuples(st.sampled_from(OPS), st.integers(0, 1 << 20), st.integers(0, 1 << 24),
               st.integers(0, 255))


@st.composite
def mutated(draw: st.DrawFn, name: str) -> bytes:
    seeds = get(name).seeds()
    seed = draw(st.sampled_from(seeds))
    return mutate(seed, draw(st.lists(op, max_size=6)), seeds)


def _check(name: str, data: bytes) -> None:
    get(name).one_input(data, measure_memory=True)


@SETTINGS
@given(st.data())
def test_descriptor_mutants(data: st.DataObject) -> None:
    _check("descriptor", data.draw(mutated("descriptor")))


@SETTINGS
@given(st.data())
def test_stream_mutants(data: st.DataObject) -> None:
    _check("stream", data.draw(mutated("stream")))


@settings(SETTINGS, max_examples=300)
@given(st.data())
def test_hrry_mutants(data: st.DataObject) -> None:
    _check("hrry", data.draw(mutated("hrry")))


@settings(SETTINGS, max_examples=200)
@given(st.data())
def test_kv_import_mutants(data: st.DataObject) -> None:
    _check("kv_import", data.draw(mutated("kv_import")))


@settings(SETTINGS, max_examples=300)
@given(st.data())
def test_convert_mutants(data: st.DataObject) -> None:
    _check("convert", data.draw(mutated("convert")))


@SETTINGS
@given(st.data())
def test_vir0_mutants(data: st.DataObject) -> None:
    _check("vir0", data.draw(mutated("vir0")))


@SETTINGS
@given(st.integers(0, 255), st.binary(max_size=200),
       st.sampled_from([v & 0xFFFFFFFF for v in INTERESTING]), st.integers(0, 64))
def test_descriptor_header_with_random_tail(ctl: int, tail: bytes, length: int,
                                            rank: int) -> None:
    head = b"HRRY\x01\x00" + length.to_bytes(4, "little") + bytes(4) + b"\x03\x01"
    _check("descriptor", bytes([ctl]) + head + rank.to_bytes(4, "little") + tail)


@SETTINGS
@given(st.integers(0, 255), st.binary(max_size=300))
def test_stream_of_random_bytes_after_a_prefix(ctl: int, tail: bytes) -> None:
    _check("stream", bytes([ctl]) + b"HRRY\x01\x00" + tail)


@SETTINGS
@given(st.sampled_from([0, 1, 4, 5]), st.binary(max_size=120))
def test_vir0_body_of_random_bytes(ctl: int, body: bytes) -> None:
    header = b"VYRE\x06\x00\x04\x00" + blake3.blake3(body).digest()
    _check("vir0", bytes([ctl | 2]) + header + body)

