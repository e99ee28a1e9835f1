"""Tests of the .hrry KV section codec and the CRC-32C used by the index."""

from __future__ import annotations

import os
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hurray_gpu.errors import HurrayFormatError
from hurray_gpu.io import UInt64, crc32c, decode_kv, encode_kv
from hurray_gpu.io.crc32c import _update_bytes


def test_crc32c_known_vectors() -> None:
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0
    assert crc32c(bytes(32)) == 0x8A9136AA  # RFC 3720 B.4
    assert crc32c(b"\xff" * 32) == 0x62A8AB43


@pytest.mark.parametrize("n", [1, 100, 16383, 16384, 16385, 70001, 1 << 20])
def test_crc32c_lanes_match_bytewise(n: int) -> None:
    data = os.urandom(n)
    assert crc32c(data) == _update_bytes(0xFFFFFFFF, data) ^ 0xFFFFFFFF
    half = n // 2
    assert crc32c(data[half:], crc32c(data[:half])) == crc32c(data)
    assert crc32c(np.frombuffer(data, np.uint8)) == crc32c(data)


def test_kv_exact_bytes() -> None:
    raw = encode_kv({"a": 1, "s": "hé", "b": True, "u": UInt64(5), "arr": [1.0]})
    expected = (struct.pack("<I", 5)
                + b"\x01\x00a\x02" + struct.pack("<q", 1)
                + b"\x01\x00s\x01" + struct.pack("<I", 3) + "hé".encode()
                + b"\x01\x00b\x05\x01"
                + b"\x01\x00u\x03" + struct.pack("<Q", 5)
                + b"\x03\x00arr\x07\x04" + struct.pack("<Id", 1, 1.0))
    assert raw == expected


def test_kv_numpy_scalars_and_big_ints() -> None:
    back = decode_kv(encode_kv({"i": np.int32(-3), "f": np.float32(0.5), "b": np.bool_(True),
                                "big": 2**63, "neg": -(2**63)}))
    assert back == {"i": -3, "f": 0.5, "b": True, "big": 2**63, "neg": -(2**63)}
    assert type(back["big"]) is UInt64 and type(back["b"]) is bool
    with pytest.raises(HurrayFormatError):
        encode_kv({"x": 2**64})
    with pytest.raises(HurrayFormatError):
        encode_kv({"x": [UInt64(1), -1]})
    with pytest.raises(HurrayFormatError):
        encode_kv({"": 1})
    with pytest.raises(HurrayFormatError):
        encode_kv({"x": object()})
    with pytest.raises(HurrayFormatError):
        encode_kv({"x": [[1]]})


def test_kv_empty_array_is_read_but_not_written() -> None:
    raw = struct.pack("<I", 1) + b"\x01\x00e\x07\x02" + struct.pack("<I", 0)
    assert decode_kv(raw) == {"e": []}
    with pytest.raises(HurrayFormatError):
        encode_kv({"e": []})


def test_kv_trailing_bytes_are_ignored() -> None:
    assert decode_kv(encode_kv({"k": 1}) + b"\xaa\xbb") == {"k": 1}


@pytest.mark.parametrize(("raw", "field"), [
    (b"\x01\x00", "kv_count"),
    (struct.pack("<I", 10**9) + bytes(8), "kv_count"),
    (struct.pack("<I", 1) + b"\x00\x00" + bytes(8), "key_length"),
    (struct.pack("<I", 1) + b"\x05\x00ab" + bytes(2), "key"),
    (struct.pack("<I", 1) + b"\x01\x00\xff\x02" + bytes(8), "key"),
    (struct.pack("<I", 1) + b"\x01\x00k\x08" + bytes(8), "value_tag"),
    (struct.pack("<I", 1) + b"\x01\x00k\xf0" + bytes(8), "value_tag"),
    (struct.pack("<I", 1) + b"\x01\x00k\x05\x02", "kv_value"),
    (struct.pack("<I", 1) + b"\x01\x00k\x01" + struct.pack("<I", 99) + b"ab", "kv_value"),
    (struct.pack("<I", 1) + b"\x01\x00k\x01" + struct.pack("<I", 1) + b"\xff", "kv_value"),
    (struct.pack("<I", 1) + b"\x01\x00k\x02" + bytes(3), "kv_value"),
    (struct.pack("<I", 1) + b"\x01\x00k\x07\x07" + bytes(4), "array_elem_tag"),
    (struct.pack("<I", 1) + b"\x01\x00k\x07\x02" + struct.pack("<I", 2**31) + bytes(8),
     "array_count"),
    (struct.pack("<I", 2) + b"\x01\x00k\x05\x01\x01\x00k\x05\x00", "key"),
])
def test_kv_hostile_input(raw: bytes, field: str) -> None:
    with pytest.raises(HurrayFormatError) as err:
        decode_kv(raw, base=1000)
    assert err.value.field == field
    assert err.value.offset is not None and err.value.offset >= 1000


def test_kv_every_truncation() -> None:
    raw = encode_kv({"s": "abc", "l": [b"x", b"yz"], "n": -1.5, "u": UInt64(3)})
    for cut in range(len(raw)):
        with pytest.raises(HurrayFormatError):
            decode_kv(raw[:cut])


_SCALARS = st.one_of(
    st.text(max_size=8), st.integers(-(2**63), 2**63 - 1),
    st.integers(0, 2**64 - 1).map(UInt64), st.floats(allow_nan=False), st.booleans(),
    st.binary(max_size=8))
_VALUES = st.one_of(
    _SCALARS,
    st.lists(st.text(max_size=4), min_size=1, max_size=4),
    st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=4),
    st.lists(st.floats(allow_nan=False), min_size=1, max_size=4),
    st.lists(st.booleans(), min_size=1, max_size=4),
    st.lists(st.binary(max_size=4), min_size=1, max_size=4))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=8), _VALUES, max_size=6))
def test_hypothesis_kv_round_trip(metadata: dict) -> None:
    assert decode_kv(encode_kv(metadata)) == metadata
