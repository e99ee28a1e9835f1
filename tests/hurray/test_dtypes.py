"""Tests of the Hurray element-type table, tag lookups, buffer sizes and value maps (Hurray spec, Element Types)."""

from __future__ import annotations

import pickle

import ml_dtypes
import numpy as np
import pytest

from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError
from hurray_gpu.format.dtypes import (
    DTYPES,
    DType,
    TypeTag,
    buffer_size,
    by_name,
    by_tag,
    extension_buffer_size,
    from_numpy_dtype,
    value_table,
)

# The Hurray spec's element type table: tag, name, tier, bits, sub-byte, align, signed
TABLE = [
    (0x01, "float16", 1, 16, False, 2, True),
    (0x02, "bfloat16", 1, 16, False, 2, True),
    (0x03, "float32", 1, 32, False, 4, True),
    (0x04, "float64", 1, 64, False, 8, True),
    (0x10, "int8", 1, 8, False, 1, True),
    (0x11, "uint8", 1, 8, False, 1, False),
    (0x12, "int16", 1, 16, False, 2, True),
    (0x13, "uint16", 1, 16, False, 2, False),
    (0x14, "int32", 1, 32, False, 4, True),
    (0x15, "uint32", 1, 32, False, 4, False),
    (0x16, "int64", 1, 64, False, 8, True),
    (0x17, "uint64", 1, 64, False, 8, False),
    (0x20, "bool", 1, 1, True, 1, False),
    (0x40, "float8_e4m3", 2, 8, False, 1, True),
    (0x41, "float8_e5m2", 2, 8, False, 1, True),
    (0x42, "float8_e8m0", 2, 8, False, 1, False),
    (0x43, "float4_e2m1", 2, 4, True, 1, True),
    (0x44, "float6_e2m3", 2, 6, True, 1, True),
    (0x45, "float6_e3m2", 2, 6, True, 1, True),
    (0x46, "float128", 2, 128, False, 16, True),
    (0x48, "int4", 2, 4, True, 1, True),
    (0x49, "uint4", 2, 4, True, 1, False),
    (0x4A, "int2", 2, 2, True, 1, True),
    (0x4B, "uint2", 2, 2, True, 1, False),
    (0x50, "complex64", 2, 64, False, 4, True),
    (0x51, "complex128", 2, 128, False, 8, True),
]

NUMPY = {
    "float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32,
    "float64": np.float64, "int8": np.int8, "uint8": np.uint8, "int16": np.int16,
    "uint16": np.uint16, "int32": np.int32, "uint32": np.uint32, "int64": np.int64,
    "uint64": np.uint64, "bool": np.bool_, "float8_e4m3": ml_dtypes.float8_e4m3fn,
    "float8_e5m2": ml_dtypes.float8_e5m2, "float8_e8m0": ml_dtypes.float8_e8m0fnu,
    "float4_e2m1": ml_dtypes.float4_e2m1fn, "float6_e2m3": ml_dtypes.float6_e2m3fn,
    "float6_e3m2": ml_dtypes.float6_e3m2fn, "int4": ml_dtypes.int4, "uint4": ml_dtypes.uint4,
    "int2": ml_dtypes.int2, "uint2": ml_dtypes.uint2, "complex64": np.complex64,
    "complex128": np.complex128,
}


@pytest.mark.parametrize(("tag", "name", "tier", "bits", "sub", "align", "signed"), TABLE)
def test_table_row(tag: int, name: str, tier: int, bits: int, sub: bool, align: int,
                   signed: bool) -> None:
    d = by_tag(tag)
    assert (d.tag, d.name, d.tier, d.bits, d.sub_byte, d.align, d.signed) == (
        tag, name, tier, bits, sub, align, signed)
    assert by_name(name) is d and DTYPES[tag] is d and TypeTag[name.upper()] == tag
    assert str(d) == name and d.interpretable and not d.private and not d.unknown


def test_table_is_exactly_the_assigned_tags() -> None:
    assert sorted(DTYPES) == [row[0] for row in TABLE]
    assert {int(t) for t in TypeTag} == set(DTYPES)


@pytest.mark.parametrize("name", sorted(NUMPY))
def test_numpy_mapping(name: str) -> None:
    d = by_name(name)
    assert d.numpy == np.dtype(NUMPY[name])
    assert from_numpy_dtype(NUMPY[name]) is d
    assert from_numpy_dtype(np.dtype(NUMPY[name])) is d


def test_float128_has_no_numpy_dtype() -> None:
    assert by_name("float128").numpy is None
    with pytest.raises(UnsupportedOpError, match="binary128") as info:
        from_numpy_dtype(np.longdouble)
    assert "Fix:" in str(info.value)


@pytest.mark.parametrize("spelling", [">f4", "<f4", "=f4", "f4", "float32"])
def test_from_numpy_ignores_byte_order(spelling: str) -> None:
    assert from_numpy_dtype(spelling).name == "float32"
    assert from_numpy_dtype(">i8").name == "int64"
    assert from_numpy_dtype(np.longlong).name == "int64"
    assert from_numpy_dtype(">c16").name == "complex128"


@pytest.mark.parametrize("bad", [ml_dtypes.float8_e4m3, ml_dtypes.float8_e4m3fnuz,
                                 ml_dtypes.int1, "U3", "S4", object, "M8[s]",
                                 np.dtype([("a", "<i4")]), "not a dtype", 3.5])
def test_from_numpy_rejects_unmappable(bad: object) -> None:
    with pytest.raises(UnsupportedOpError) as info:
        from_numpy_dtype(bad)
    assert "Fix:" in str(info.value)


def test_from_numpy_explains_ieee_e4m3() -> None:
    with pytest.raises(UnsupportedOpError, match="float8_e4m3fn"):
        from_numpy_dtype(ml_dtypes.float8_e4m3)


@pytest.mark.parametrize("tag", [0x00, 0xFF, 0x47, *range(0x80, 0xF0)])
@pytest.mark.parametrize("permissive", [False, True])
def test_invalid_and_reserved_tags_always_raise(tag: int, permissive: bool) -> None:
    with pytest.raises(HurrayFormatError) as info:
        by_tag(tag, permissive=permissive)
    assert info.value.field == "type_tag"
    assert f"0x{tag:02X}" in str(info.value) and "Fix:" in str(info.value)


UNKNOWN = [t for t in range(0x01, 0x80) if t not in DTYPES and t != 0x47]


def test_unknown_tag_classification() -> None:
    assert len(UNKNOWN) == 127 - 26 - 1
    for tag in UNKNOWN:
        with pytest.raises(HurrayFormatError, match="UnknownTypeTag"):
            by_tag(tag)
        d = by_tag(tag, permissive=True)
        assert d.unknown and not d.interpretable and d.bits == 0 and d.numpy is None
        assert d.tag == tag and d.tier == (1 if tag < 0x40 else 2)
        assert d.name == f"unknown_0x{tag:02X}"


@pytest.mark.parametrize("permissive", [False, True])
def test_private_tags(permissive: bool) -> None:
    for tag in range(0xF0, 0xFF):
        d = by_tag(tag, permissive=permissive)
        assert d.private and not d.unknown and not d.interpretable
        assert (d.bits, d.tier, d.numpy, d.kind) == (0, 0, None, "private")
        assert d.name == f"private_0x{tag:02X}"


def test_reserved_messages() -> None:
    with pytest.raises(HurrayFormatError, match="InvalidTypeTag"):
        by_tag(0)
    with pytest.raises(HurrayFormatError, match="ReservedTypeTag"):
        by_tag(0x47)
    with pytest.raises(HurrayFormatError, match="ReservedTypeTag"):
        by_tag(0x80)


@pytest.mark.parametrize("bad", [-1, 256, 1 << 70, "1", 1.0, None])
def test_tag_out_of_range_or_wrong_type(bad: object) -> None:
    with pytest.raises(HurrayFormatError) as info:
        by_tag(bad)  # type: ignore[arg-type]
    assert info.value.field == "type_tag"


def test_tag_accepts_numpy_integers() -> None:
    assert by_tag(np.uint8(0x48)).name == "int4"


@pytest.mark.parametrize("bad", ["float8_e4m3fn", "Float32", "", "int3", None, 3])
def test_by_name_rejects(bad: object) -> None:
    with pytest.raises(HurrayFormatError) as info:
        by_name(bad)  # type: ignore[arg-type]
    assert info.value.field == "dtype" and "Fix:" in str(info.value)


# buffer sizes for n = 0..5 (docs/format.md, Element types and sizes)
SIZES = {
    1: [0, 1, 1, 1, 1, 1],
    2: [0, 1, 1, 1, 1, 2],
    4: [0, 1, 1, 2, 2, 3],
    6: [0, 3, 3, 3, 3, 6],
    8: [0, 1, 2, 3, 4, 5],
    16: [0, 2, 4, 6, 8, 10],
    32: [0, 4, 8, 12, 16, 20],
    64: [0, 8, 16, 24, 32, 40],
    128: [0, 16, 32, 48, 64, 80],
}


@pytest.mark.parametrize("name", [row[1] for row in TABLE])
def test_buffer_size_small_counts(name: str) -> None:
    d = by_name(name)
    assert [buffer_size(d, n) for n in range(6)] == SIZES[d.bits]


def test_buffer_size_larger_counts() -> None:
    assert buffer_size(by_name("bool"), 8) == 1
    assert buffer_size(by_name("bool"), 9) == 2
    assert buffer_size(by_name("uint2"), 9) == 3
    assert buffer_size(by_name("int4"), 128 * 128) == 8192
    six = by_name("float6_e3m2")
    assert [buffer_size(six, n) for n in (6, 7, 8, 9)] == [6, 6, 6, 9]
    assert buffer_size(six, 1) == 3  # upstream's whole-group rule, not ceil(6/8) == 1
    assert buffer_size(by_name("float64"), 1 << 62) == 1 << 65  # no overflow


@pytest.mark.parametrize("bad", [-1, -100])
def test_buffer_size_rejects_negative(bad: int) -> None:
    with pytest.raises(HurrayFormatError) as info:
        buffer_size(by_name("int4"), bad)
    assert info.value.field == "count"


def test_buffer_size_rejects_non_integer_and_private() -> None:
    with pytest.raises(HurrayFormatError):
        buffer_size(by_name("int4"), 2.0)  # type: ignore[arg-type]
    with pytest.raises(UnsupportedOpError):
        buffer_size(by_tag(0xF3), 4)
    with pytest.raises(UnsupportedOpError):
        buffer_size(by_tag(0x30, permissive=True), 4)


def test_extension_buffer_size() -> None:
    assert [extension_buffer_size(1, n) for n in range(10)] == [0, 1, 1, 1, 1, 1, 1, 1, 1, 2]
    assert [extension_buffer_size(2, n) for n in range(6)] == [0, 1, 1, 1, 1, 2]
    assert [extension_buffer_size(4, n) for n in range(4)] == [0, 1, 1, 2]
    assert extension_buffer_size(8, 5) == 5
    assert extension_buffer_size(24, 5) == 15
    for width in (0, 3, 5, 6, 7, 12, -8):
        with pytest.raises(HurrayFormatError):
            extension_buffer_size(width, 1)


def test_shape_properties() -> None:
    assert by_name("bool").packing_group == (8, 1)
    assert by_name("int4").packing_group == (2, 1)
    assert by_name("uint2").packing_group == (4, 1)
    assert by_name("float6_e2m3").packing_group == (4, 3)
    assert by_name("float32").packing_group == (1, 4)
    assert [by_name(n).elements_per_byte for n in ("bool", "int2", "int4", "int8")] == [8, 4, 2, 1]
    assert by_name("float6_e2m3").elements_per_byte is None
    assert by_name("float16").elements_per_byte is None
    assert by_name("complex128").itemsize == 16 and by_name("int4").itemsize is None
    with pytest.raises(UnsupportedOpError):
        _ = by_tag(0xF0).packing_group


def test_dlpack_codes() -> None:
    assert by_name("bfloat16").dlpack == (4, 16)
    assert by_name("complex128").dlpack == (5, 128)
    assert by_name("uint16").dlpack == (1, 16)
    assert by_name("bool").dlpack is None and by_name("bool").dlpack_ext == (6, 8)
    assert by_name("float8_e4m3").dlpack_ext == (10, 8)
    assert by_name("float4_e2m1").dlpack_ext == (17, 4)
    assert by_name("int4").dlpack is None and by_name("int4").dlpack_ext is None


def test_dtype_is_frozen_and_picklable() -> None:
    d = by_name("int4")
    with pytest.raises(AttributeError):
        d.bits = 8  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(d)) == d
    assert isinstance(d, DType) and hash(d) == hash(by_tag(0x48))


# the value maps of the small float types (Hurray spec, Element Types)
FLOAT4 = [0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
FLOAT6_E2M3 = [0, .125, .25, .375, .5, .625, .75, .875, 1, 1.125, 1.25, 1.375, 1.5, 1.625, 1.75,
               1.875, 2, 2.25, 2.5, 2.75, 3, 3.25, 3.5, 3.75, 4, 4.5, 5, 5.5, 6, 6.5, 7, 7.5]
FLOAT6_E3M2 = [0, .0625, .125, .1875, .25, .3125, .375, .4375, .5, .625, .75, .875, 1, 1.25, 1.5,
               1.75, 2, 2.5, 3, 3.5, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28]
NaN = float("nan")
FLOAT8_E4M3 = [
    [0, 0.001953125, 0.00390625, 0.005859375, 0.0078125, 0.009765625, 0.01171875, 0.013671875],
    [0.015625, 0.017578125, 0.01953125, 0.021484375, 0.0234375, 0.025390625, 0.02734375,
     0.029296875],
    [0.03125, 0.03515625, 0.0390625, 0.04296875, 0.046875, 0.05078125, 0.0546875, 0.05859375],
    [0.0625, 0.0703125, 0.078125, 0.0859375, 0.09375, 0.1015625, 0.109375, 0.1171875],
    [0.125, 0.140625, 0.15625, 0.171875, 0.1875, 0.203125, 0.21875, 0.234375],
    [0.25, 0.28125, 0.3125, 0.34375, 0.375, 0.40625, 0.4375, 0.46875],
    [0.5, 0.5625, 0.625, 0.6875, 0.75, 0.8125, 0.875, 0.9375],
    [1, 1.125, 1.25, 1.375, 1.5, 1.625, 1.75, 1.875],
    [2, 2.25, 2.5, 2.75, 3, 3.25, 3.5, 3.75],
    [4, 4.5, 5, 5.5, 6, 6.5, 7, 7.5],
    [8, 9, 10, 11, 12, 13, 14, 15],
    [16, 18, 20, 22, 24, 26, 28, 30],
    [32, 36, 40, 44, 48, 52, 56, 60],
    [64, 72, 80, 88, 96, 104, 112, 120],
    [128, 144, 160, 176, 192, 208, 224, 240],
    [256, 288, 320, 352, 384, 416, 448, NaN],
]


def _signed(positive: list[float]) -> np.ndarray:
    half = np.array(positive, np.float32)
    return np.concatenate([half, -half])


def _same_bits(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok].view(np.uint32), want[ok].view(np.uint32))


@pytest.mark.parametrize(("name", "positive"), [
    ("float4_e2m1", FLOAT4), ("float6_e2m3", FLOAT6_E2M3), ("float6_e3m2", FLOAT6_E3M2),
    ("float8_e4m3", [v for row in FLOAT8_E4M3 for v in row]),
])
def test_value_table_matches_facts(name: str, positive: list[float]) -> None:
    _same_bits(value_table(by_name(name)), _signed(positive))


def test_value_table_e5m2_facts() -> None:
    t = value_table(by_name("float8_e5m2"))
    assert t[0x7C] == np.inf and t[0xFC] == -np.inf
    assert np.isnan(t[[0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF]]).all()
    assert not np.isnan(t[:0x7C]).any() and not np.isnan(t[0x80:0xFC]).any()
    assert list(t[15 * 4:16 * 4]) == [1, 1.25, 1.5, 1.75]
    assert list(t[30 * 4:31 * 4]) == [32768, 40960, 49152, 57344]
    assert t[1] == 2.0**-16 and t[4] == 2.0**-14 and np.nanmax(t) == np.inf
    assert np.nanmax(t[np.isfinite(t)]) == 57344


def test_value_table_e8m0_facts() -> None:
    t = value_table(by_name("float8_e8m0"))
    assert t[0x01] == 2.0**-126 and t[0x7F] == 1.0 and t[0xFE] == 2.0**127
    assert np.isnan(t[0xFF]) and t[0x00] == 2.0**-127  # 0x00 is invalid in Hurray data
    np.testing.assert_array_equal(t[1:255], np.ldexp(1.0, np.arange(1, 255) - 127))


def test_value_table_e4m3_extremes() -> None:
    t = value_table(by_name("float8_e4m3"))
    assert np.isnan(t[[0x7F, 0xFF]]).all() and np.isnan(t).sum() == 2
    assert np.nanmax(t) == 448 and t[0x08] == 0.015625 and t[0x01] == 0.001953125
    assert np.signbit(t[0x80]) and t[0x80] == 0


@pytest.mark.parametrize("name", ["float8_e4m3", "float8_e5m2", "float8_e8m0", "float4_e2m1",
                                  "float6_e2m3", "float6_e3m2", "int4", "uint4", "int2",
                                  "uint2", "int8", "uint8"])
def test_value_table_matches_ml_dtypes(name: str) -> None:
    d = by_name(name)
    codes = np.arange(1 << d.bits, dtype=np.uint8)
    _same_bits(value_table(d), codes.view(d.numpy).astype(np.float32))


def test_value_table_integers_and_bool() -> None:
    assert list(value_table(by_name("int2"))) == [0, 1, -2, -1]
    assert list(value_table(by_name("int4"))) == [*range(8), *range(-8, 0)]
    assert list(value_table(by_name("uint4"))) == list(range(16))
    assert list(value_table(by_name("bool"))) == [0, 1]


@pytest.mark.parametrize("dtype", [by_name("float16"), by_name("float128"), by_tag(0xF1)])
def test_value_table_rejects(dtype: DType) -> None:
    with pytest.raises(UnsupportedOpError):
        value_table(dtype)
