"""Tests of Hurray sub-byte packing and whole-byte buffer views (docs/format.md, Element types and sizes)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError
from hurray_gpu.format.dtypes import DTYPES, buffer_size, by_name, by_tag
from hurray_gpu.format.packing import (
    as_bytes,
    pack,
    pack_codes,
    to_codes,
    unpack,
    unpack_codes,
)

SUB_BYTE = ["bool", "int4", "uint4", "float4_e2m1", "int2", "uint2", "float6_e2m3",
            "float6_e3m2"]


def _reference_pack(codes: list[int], bits: int, size: int) -> bytes:
    # The packing rule (docs/format.md, Element types and sizes): element i occupies bits [i*B, i*B+B) of the LE bit stream
    stream = sum(code << (i * bits) for i, code in enumerate(codes))
    return stream.to_bytes(size, "little")


def test_worked_example_bool() -> None:
    assert pack([True, False, True, True, False], by_name("bool")).tobytes() == b"\x0d"
    got = unpack(b"\x0d", by_name("bool"), 5)
    assert got.dtype == np.bool_ and got.tolist() == [True, False, True, True, False]


def test_worked_example_uint4() -> None:
    assert pack(np.array([5, 12, 3]), by_name("uint4")).tobytes() == b"\xc5\x03"
    got = unpack(b"\xc5\x03", by_name("uint4"), 3)
    assert got.dtype == np.dtype(ml_dtypes.uint4) and got.astype(int).tolist() == [5, 12, 3]


def test_worked_example_uint2() -> None:
    assert pack(np.array([3, 1, 2]), by_name("uint2")).tobytes() == b"\x27"
    assert unpack(b"\x27", by_name("uint2"), 3).astype(int).tolist() == [3, 1, 2]


@pytest.mark.parametrize("name", ["float6_e2m3", "float6_e3m2"])
def test_worked_example_6bit(name: str) -> None:
    d = by_name(name)
    assert pack_codes(np.array([1, 2, 4, 8], np.uint8), d).tobytes() == b"\x81\x40\x20"
    assert unpack_codes(b"\x81\x40\x20", d, 4).tolist() == [1, 2, 4, 8]


def test_6bit_values_and_single_element_group() -> None:
    d = by_name("float6_e2m3")
    # codes 1, 2, 4, 8 of e2m3 are 0.125, 0.25, 0.5, 1.0
    assert pack(np.array([0.125, 0.25, 0.5, 1.0], np.float32), d).tobytes() == b"\x81\x40\x20"
    one = pack(np.array([7.5], np.float32), d)
    assert one.tobytes() == b"\x1f\x00\x00"  # N=1 still takes a whole 3-byte group
    assert unpack(one, d, 1).astype(np.float32).tolist() == [7.5]


def test_int4_and_float4_nibbles() -> None:
    assert pack(np.array([-1, 7, -8], np.int8), by_name("int4")).tobytes() == b"\x7f\x08"
    f4 = by_name("float4_e2m1")
    assert pack(np.array([0.5, -6.0, 1.5]), f4).tobytes() == b"\xf1\x03"
    assert unpack(b"\xf1\x03", f4, 3).astype(np.float32).tolist() == [0.5, -6.0, 1.5]


def test_sign_extension() -> None:
    got = unpack(bytes([0x98, 0xFE, 0x70]), by_name("int4"), 6).astype(np.int8)
    assert got.tolist() == [-8, -7, -2, -1, 0, 7]
    got2 = unpack(bytes([0b11100100]), by_name("int2"), 4).astype(np.int8)
    assert got2.tolist() == [0, 1, -2, -1]
    assert unpack(bytes([0b11100100]), by_name("uint2"), 4).astype(int).tolist() == [0, 1, 2, 3]
    assert pack(np.array([-2, -1, 0, 1]), by_name("int2")).tobytes() == bytes([0b01001110])


@pytest.mark.parametrize("name", SUB_BYTE)
@settings(max_examples=2000, deadline=None)
@given(data=st.data())
def test_round_trip_codes(name: str, data: st.DataObject) -> None:
    d = by_name(name)
    codes = data.draw(st.lists(st.integers(0, (1 << d.bits) - 1), max_size=200))
    packed = pack_codes(np.array(codes, np.uint8), d)
    assert packed.dtype == np.uint8 and packed.size == buffer_size(d, len(codes))
    assert packed.tobytes() == _reference_pack(codes, d.bits, packed.size)
    assert unpack_codes(packed, d, len(codes)).tolist() == codes
    values = unpack(packed, d, len(codes))
    assert values.dtype == d.numpy and values.size == len(codes)
    assert pack(values, d).tobytes() == packed.tobytes()


@pytest.mark.parametrize(("name", "count", "data"), [
    ("bool", 5, b"\x2d"), ("bool", 1, b"\x03"), ("bool", 7, b"\x80"),
    ("uint4", 3, b"\xc5\x13"), ("int4", 1, b"\xf0"), ("float4_e2m1", 3, b"\x00\x10"),
    ("uint2", 3, b"\xe7"), ("int2", 1, b"\x04"), ("uint2", 5, b"\x00\x04"),
    ("float6_e2m3", 1, b"\x00\x01\x00"), ("float6_e3m2", 2, b"\x00\x00\x01"),
    ("float6_e2m3", 3, b"\x00\x00\x80"), ("float6_e3m2", 5, b"\x00\x00\x00\x3f\x40\x00"),
])
def test_trailing_bits_rejected(name: str, count: int, data: bytes) -> None:
    d = by_name(name)
    with pytest.raises(HurrayFormatError) as info:
        unpack(data, d, count)
    assert info.value.field == "buffer" and "Fix:" in str(info.value)
    assert info.value.offset == len(data) - d.packing_group[1]
    assert unpack(data, d, count, strict=False).size == count
    assert unpack_codes(data, d, count, strict=False).size == count


@pytest.mark.parametrize("name", SUB_BYTE)
def test_trailing_bits_are_zero_when_packing(name: str) -> None:
    d = by_name(name)
    for n in range(1, 9):
        full = np.full(n, (1 << d.bits) - 1, np.uint8)
        packed = pack_codes(full, d)
        assert int.from_bytes(packed.tobytes(), "little") == (1 << (n * d.bits)) - 1
        unpack(packed, d, n)  # strict accepts it


def test_extra_bytes_past_the_size_are_ignored() -> None:
    assert unpack(b"\x27\xff\xff", by_name("uint2"), 3).astype(int).tolist() == [3, 1, 2]
    assert unpack(b"\x00\x3c\xff\xff", by_name("float16"), 1).tolist() == [1.0]


@pytest.mark.parametrize(("name", "count", "size"), [
    ("bool", 9, 1), ("int4", 3, 1), ("uint2", 5, 1), ("float6_e2m3", 1, 2),
    ("float6_e3m2", 5, 5), ("float32", 2, 7), ("complex128", 1, 15), ("int4", 1 << 60, 8),
])
def test_short_buffer_rejected_with_numbers(name: str, count: int, size: int) -> None:
    d = by_name(name)
    with pytest.raises(HurrayFormatError) as info:
        unpack(bytes(size), d, count)
    message = str(info.value)
    assert f"{size} bytes" in message and str(buffer_size(d, count)) in message
    assert "Fix:" in message and info.value.field == "buffer"


@pytest.mark.parametrize("count", [-1, 2.0, "3", None])
def test_bad_count_rejected(count: object) -> None:
    with pytest.raises(HurrayFormatError) as info:
        unpack(b"\x00" * 8, by_name("int4"), count)  # type: ignore[arg-type]
    assert info.value.field == "count"


@pytest.mark.parametrize("buf", [5, "text", None, 3.0, np.array([b"x"], object),
                                 memoryview(np.array([b"x"], object)),
                                 memoryview(np.zeros(8, np.uint8)[::2])])
def test_non_bytes_buffer_rejected(buf: object) -> None:
    with pytest.raises(HurrayFormatError):
        unpack(buf, by_name("uint8"), 0)


def test_as_bytes_accepts_views() -> None:
    assert as_bytes(b"\x01\x02").tolist() == [1, 2]
    assert as_bytes(bytearray(b"\x03")).tolist() == [3]
    assert as_bytes(memoryview(np.array([1], np.uint16))).tolist() == [1, 0]
    assert as_bytes(np.array([[1, 2]], np.uint16)).tolist() == [1, 0, 2, 0]
    assert as_bytes(np.arange(4, dtype=np.uint8)[::2]).tolist() == [0, 2]


def test_zero_elements() -> None:
    for name in SUB_BYTE + ["float32", "int64"]:
        d = by_name(name)
        assert pack(np.array([], d.numpy), d).size == 0
        assert unpack(b"", d, 0).size == 0


@pytest.mark.parametrize(("name", "values", "raw"), [
    ("float32", [1.0, -2.0], b"\x00\x00\x80\x3f\x00\x00\x00\xc0"),
    ("float16", [1.0], b"\x00\x3c"),
    ("bfloat16", [1.0], b"\x80\x3f"),
    ("int16", [-2, 258], b"\xfe\xff\x02\x01"),
    ("uint64", [1 << 63], b"\x00" * 7 + b"\x80"),
    ("complex64", [1 + 2j], b"\x00\x00\x80\x3f\x00\x00\x00\x40"),
    ("float8_e4m3", [448.0, -0.001953125], b"\x7e\x81"),
    ("float8_e5m2", [np.inf, 57344.0], b"\x7c\x7b"),
    ("float8_e8m0", [1.0, 2.0**-126, 2.0**127], b"\x7f\x01\xfe"),
])
def test_whole_byte_types(name: str, values: list[object], raw: bytes) -> None:
    d = by_name(name)
    packed = pack(np.array(values), d)
    assert packed.dtype == np.uint8 and packed.tobytes() == raw
    got = unpack(raw, d, len(values))
    assert got.dtype == d.numpy
    np.testing.assert_array_equal(got.astype(np.complex128), np.array(values, np.complex128))


def test_big_endian_input_is_written_little_endian() -> None:
    be = np.array([1, 2], dtype=">u4")
    assert pack(be, by_name("uint32")).tobytes() == b"\x01\x00\x00\x00\x02\x00\x00\x00"
    assert pack(np.array([1.0], ">f8"), by_name("float64")).tobytes() == pack(
        np.array([1.0]), by_name("float64")).tobytes()


def test_multidimensional_values_flatten_in_c_order() -> None:
    values = np.array([[1, 2], [3, 4]], np.uint8)
    assert pack(values, by_name("uint4")).tobytes() == b"\x21\x43"
    assert pack(values.T, by_name("uint8")).tobytes() == b"\x01\x03\x02\x04"


def test_unaligned_whole_byte_buffer() -> None:
    raw = b"\x00" + np.array([1.5, 2.5], np.float64).tobytes()
    got = unpack(np.frombuffer(raw, np.uint8)[1:], by_name("float64"), 2)
    assert got.tolist() == [1.5, 2.5]


def test_e8m0_forbidden_codes() -> None:
    d = by_name("float8_e8m0")
    for code in (0x00, 0xFF):
        with pytest.raises(HurrayFormatError, match=f"0x{code:02X}") as info:
            unpack(bytes([0x7F, code]), d, 2)
        assert info.value.offset == 1
        assert unpack(bytes([0x7F, code]), d, 2, strict=False).view(np.uint8)[1] == code
    for bad in (0.0, -1.0, np.nan):
        with pytest.raises(HurrayFormatError):
            pack(np.array([1.0, bad]), d)
    with pytest.raises(HurrayFormatError):
        pack(np.array([0x00], np.uint8).view(ml_dtypes.float8_e8m0fnu), d)


@pytest.mark.parametrize(("name", "values"), [
    ("int4", np.array([8])), ("int4", np.array([-9])), ("uint4", np.array([16])),
    ("uint4", np.array([-1])), ("int2", np.array([2])), ("uint2", np.array([4])),
    ("int8", np.array([128])), ("uint8", np.array([-1])), ("uint64", np.array([-1])),
    ("int64", np.array([1 << 63], np.uint64)), ("int4", np.array([1.0])),
    ("uint8", np.array([0.5])), ("bool", np.array([2])), ("bool", np.array([0.0])),
    ("float4_e2m1", np.array([np.nan])), ("float6_e2m3", np.array([np.inf])),
    ("float6_e3m2", np.array([-np.inf], np.float16)), ("float32", np.array([1j])),
    ("float4_e2m1", np.array([1 + 0j])),
])
def test_unrepresentable_values_rejected(name: str, values: np.ndarray) -> None:
    with pytest.raises(HurrayFormatError) as info:
        pack(values, by_name(name))
    assert info.value.field == "values" and "Fix:" in str(info.value)


def test_conversions_that_are_accepted() -> None:
    assert pack(np.array([1, 0, 1]), by_name("bool")).tobytes() == b"\x05"
    assert pack(np.array([True, False]), by_name("int4")).tobytes() == b"\x01"
    assert pack(np.array([6.2, 100.0]), by_name("float4_e2m1")).tobytes() == b"\x77"
    assert pack(np.array([1, 2], np.int64), by_name("float32")).tobytes() == pack(
        np.array([1.0, 2.0], np.float32), by_name("float32")).tobytes()
    assert pack(np.array([3], ml_dtypes.int4), by_name("int8")).tobytes() == b"\x03"
    assert pack(np.array([1.0], np.float32), by_name("complex64")).size == 8


def test_pack_codes_checks_its_codes() -> None:
    with pytest.raises(HurrayFormatError):
        pack_codes(np.array([16]), by_name("uint4"))
    with pytest.raises(HurrayFormatError):
        pack_codes(np.array([-1]), by_name("uint4"))
    with pytest.raises(HurrayFormatError):
        pack_codes(np.array([1.0]), by_name("uint4"))
    with pytest.raises(UnsupportedOpError):
        pack_codes(np.array([1]), by_name("uint8"))
    assert to_codes(np.array([-1, 1, -2]), by_name("int2")).tolist() == [3, 1, 2]


@pytest.mark.parametrize("dtype", [by_name("float128"), by_tag(0xF5),
                                   by_tag(0x05, permissive=True)])
def test_uninterpretable_types_refused(dtype: object) -> None:
    with pytest.raises(UnsupportedOpError) as info:
        pack(np.zeros(2), dtype)  # type: ignore[arg-type]
    assert "Fix:" in str(info.value)
    with pytest.raises(UnsupportedOpError):
        unpack(bytes(64), dtype, 2)  # type: ignore[arg-type]


def test_unmappable_source_dtype() -> None:
    with pytest.raises(HurrayFormatError):
        pack([[1, 2], [3]], by_name("uint8"))
    with pytest.raises(UnsupportedOpError):
        pack(np.array(["a"]), by_name("uint8"))


def test_every_interpretable_type_round_trips() -> None:
    for d in DTYPES.values():
        if d.numpy is None:
            continue
        codes = np.arange(1 << min(d.bits, 8), dtype=np.uint8)
        if d.name == "float8_e8m0":
            codes = codes[1:-1]
        values = np.resize(codes, 37 * max(1, d.bits // 8)).view(d.numpy)[:37]
        packed = pack(values, d)
        assert packed.size == buffer_size(d, values.size)
        back = unpack(packed, d, values.size)
        assert back.tobytes() == values.tobytes() or d.kind == "bool"


def test_pack_64m_int4_round_trip() -> None:
    # Large enough to catch any chunking or index-overflow slip; timings live in bench/, not here.
    d = by_name("int4")
    values = np.tile(np.arange(-8, 8, dtype=np.int8), 4 << 20)
    packed = pack(values, d)
    assert packed.size == 32 << 20 and packed[:2].tolist() == [0x98, 0xBA]
    back = unpack(packed, d, values.size)
    assert np.array_equal(back.astype(np.int8), values)
