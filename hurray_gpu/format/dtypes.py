"""Hurray element types (Hurray spec, Element Types): the tag table, lookups, buffer sizes
and value maps.

Everything here is pure data plus small pure functions; packing lives in ``packing.py``.
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError

__all__ = [
    "DTYPES",
    "DType",
    "TypeTag",
    "as_dtype",
    "buffer_size",
    "by_name",
    "coerce_dtype",
    "named_dtype",
    "by_tag",
    "extension_buffer_size",
    "from_numpy_dtype",
    "value_table",
]


class TypeTag(IntEnum):
    """Every assigned ``type_tag`` value (Hurray spec, Element Types). Tags only ever grow."""

    FLOAT16 = 0x01
    BFLOAT16 = 0x02
    FLOAT32 = 0x03
    FLOAT64 = 0x04
    INT8 = 0x10
    UINT8 = 0x11
    INT16 = 0x12
    UINT16 = 0x13
    INT32 = 0x14
    UINT32 = 0x15
    INT64 = 0x16
    UINT64 = 0x17
    BOOL = 0x20
    FLOAT8_E4M3 = 0x40
    FLOAT8_E5M2 = 0x41
    FLOAT8_E8M0 = 0x42
    FLOAT4_E2M1 = 0x43
    FLOAT6_E2M3 = 0x44
    FLOAT6_E3M2 = 0x45
    FLOAT128 = 0x46
    INT4 = 0x48
    UINT4 = 0x49
    INT2 = 0x4A
    UINT2 = 0x4B
    COMPLEX64 = 0x50
    COMPLEX128 = 0x51


RESERVED_TAG = 0x47  # held by the spec for a future Tier 2 type: never valid
PRIVATE_TAGS = range(0xF0, 0xFF)
RESERVED_TAGS = range(0x80, 0xF0)


@dataclass(frozen=True)
class DType:
    """One Hurray element type.

    Attributes:
        name: canonical string (``"float8_e4m3"``); ``"private_0xF3"``/``"unknown_0x30"`` for
            tags that cannot be interpreted.
        tag: the wire ``type_tag``.
        tier: 1 (mandatory) or 2 (optional); 0 for private extension tags.
        bits: bits per element; 0 for private and unknown tags (size comes from elsewhere).
        sub_byte: True for the packed types (bool, 2-, 4- and 6-bit).
        align: minimum alignment of one element, in bytes.
        signed: ``ElementType::is_signed`` (float8_e8m0 is unsigned).
        np_name: the NumPy dtype name of one *unpacked* element (``"ml_dtypes.int4"`` for an
            ml_dtypes type), or None (float128, private, unknown); see :attr:`numpy`.
        kind: ``"float"``, ``"int"``, ``"uint"``, ``"bool"``, ``"complex"``, ``"private"`` or
            ``"unknown"``.
        private: True for private extension tags 0xF0-0xFE (need the Extension Type section).
        unknown: True for an unassigned tag accepted by ``by_tag(..., permissive=True)``.
        dlpack: ``(code, bits)`` upstream hurray exports over DLPack, or None (BufferError).
        dlpack_ext: ``(code, bits)`` of the unpacked element in DLPack >= 1.1, or None.
    """

    name: str
    tag: int
    tier: int
    bits: int
    sub_byte: bool
    align: int
    signed: bool
    np_name: str | None
    kind: str = "float"
    private: bool = False
    unknown: bool = False
    dlpack: tuple[int, int] | None = None
    dlpack_ext: tuple[int, int] | None = None

    def __str__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        """Equal to the same DType, to its name (``"float32"``, or ``"float8_e4m3fn"`` as
        ml_dtypes spells it) and to the NumPy / ml_dtypes / torch dtype of one element
        (``t.dtype == np.float32``). Anything else compares unequal."""
        if type(other) is DType:  # table types are singletons: most checks end at a name
            return self is other or (self.name == other.name and _fields(self) == _fields(other))
        found = coerce_dtype(other)
        return found is not None and _fields(found) == _fields(self)

    def __hash__(self) -> int:
        # Equal DTypes share a name, and a name compares equal to its DType: hash by it.
        return hash(self.name)

    @property
    def numpy(self) -> np.dtype | None:
        """NumPy / ml_dtypes dtype of one *unpacked* element, or None (float128, private,
        unknown)."""
        return _numpy_dtype(self.np_name)

    @property
    def interpretable(self) -> bool:
        """True unless the tag is private or unknown (its data must not be interpreted)."""
        return not (self.private or self.unknown)

    @property
    def itemsize(self) -> int | None:
        """Bytes per element for whole-byte types, None for sub-byte or uninterpretable ones."""
        return self.bits // 8 if self.bits >= 8 else None

    @property
    def elements_per_byte(self) -> int | None:
        """The packing factor P for 1/2/4/8-bit types; None otherwise.

        Hurray spec, Memory Layout: Sub-Byte Types.

        6-bit types have no per-byte factor (4 elements per 3 bytes, see ``packing_group``).
        """
        return 8 // self.bits if self.bits in (1, 2, 4, 8) else None

    @property
    def packing_group(self) -> tuple[int, int]:
        """``(elements, bytes)`` of the smallest whole-byte group: (4, 3) for 6-bit types.

        Raises:
            UnsupportedOpError: for private and unknown tags.
        """
        _require_interpretable(self)
        if self.bits == 6:
            return (4, 3)
        if self.bits < 8:
            return (8 // self.bits, 1)
        return (1, self.bits // 8)


@functools.cache
def _numpy_dtype(name: str | None) -> np.dtype | None:
    if name is None:
        return None
    if name.startswith("ml_dtypes."):
        # Imported on first use: ml_dtypes' extension takes longer to load than the rest of
        # the package, and plain-NumPy users never need it.
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name.removeprefix("ml_dtypes.")))
    return np.dtype(name)


def _t(name: str, tag: int, bits: int, align: int, signed: bool, kind: str,
       np_name: str | None, dlpack: tuple[int, int] | None = None,
       dlpack_ext: tuple[int, int] | None = None) -> DType:
    tier = 1 if tag < 0x40 else 2
    return DType(name, tag, tier, bits, bits < 8, align, signed, np_name, kind,
                 dlpack=dlpack, dlpack_ext=dlpack_ext or dlpack)


_TABLE = (
    _t("float16", 0x01, 16, 2, True, "float", "float16", (2, 16)),
    _t("bfloat16", 0x02, 16, 2, True, "float", "ml_dtypes.bfloat16", (4, 16)),
    _t("float32", 0x03, 32, 4, True, "float", "float32", (2, 32)),
    _t("float64", 0x04, 64, 8, True, "float", "float64", (2, 64)),
    _t("int8", 0x10, 8, 1, True, "int", "int8", (0, 8)),
    _t("uint8", 0x11, 8, 1, False, "uint", "uint8", (1, 8)),
    _t("int16", 0x12, 16, 2, True, "int", "int16", (0, 16)),
    _t("uint16", 0x13, 16, 2, False, "uint", "uint16", (1, 16)),
    _t("int32", 0x14, 32, 4, True, "int", "int32", (0, 32)),
    _t("uint32", 0x15, 32, 4, False, "uint", "uint32", (1, 32)),
    _t("int64", 0x16, 64, 8, True, "int", "int64", (0, 64)),
    _t("uint64", 0x17, 64, 8, False, "uint", "uint64", (1, 64)),
    _t("bool", 0x20, 1, 1, False, "bool", "bool", None, (6, 8)),
    _t("float8_e4m3", 0x40, 8, 1, True, "float", "ml_dtypes.float8_e4m3fn", None, (10, 8)),
    _t("float8_e5m2", 0x41, 8, 1, True, "float", "ml_dtypes.float8_e5m2", None, (12, 8)),
    _t("float8_e8m0", 0x42, 8, 1, False, "float", "ml_dtypes.float8_e8m0fnu", None, (14, 8)),
    _t("float4_e2m1", 0x43, 4, 1, True, "float", "ml_dtypes.float4_e2m1fn", None, (17, 4)),
    _t("float6_e2m3", 0x44, 6, 1, True, "float", "ml_dtypes.float6_e2m3fn", None, (15, 6)),
    _t("float6_e3m2", 0x45, 6, 1, True, "float", "ml_dtypes.float6_e3m2fn", None, (16, 6)),
    # np.longdouble is x87 80-bit extended on x86, not binary128: no exact NumPy dtype exists.
    _t("float128", 0x46, 128, 16, True, "float", None),
    _t("int4", 0x48, 4, 1, True, "int", "ml_dtypes.int4"),
    _t("uint4", 0x49, 4, 1, False, "uint", "ml_dtypes.uint4"),
    _t("int2", 0x4A, 2, 1, True, "int", "ml_dtypes.int2"),
    _t("uint2", 0x4B, 2, 1, False, "uint", "ml_dtypes.uint2"),
    _t("complex64", 0x50, 64, 4, True, "complex", "complex64", (5, 64)),
    _t("complex128", 0x51, 128, 8, True, "complex", "complex128", (5, 128)),
)

DTYPES: dict[int, DType] = {d.tag: d for d in _TABLE}
_BY_NAME: dict[str, DType] = {d.name: d for d in _TABLE}
# Names other libraries use for the same element: ml_dtypes' and torch's (``float8_e4m3fn``,
# ``float8_e8m0fnu``, ``bool``); the canonical names above win.
_ALIASES: dict[str, DType] = {
    **{d.np_name.removeprefix("ml_dtypes."): d for d in _TABLE if d.np_name}, **_BY_NAME}


def _fields(d: DType) -> tuple[object, ...]:
    return (d.name, d.tag, d.tier, d.bits, d.sub_byte, d.align, d.signed, d.np_name, d.kind,
            d.private, d.unknown, d.dlpack, d.dlpack_ext)


def named_dtype(name: str) -> DType | None:
    """The DType of a canonical, ml_dtypes or torch name (``"torch.float16"``), or None."""
    return _ALIASES.get(name.removeprefix("torch."))


def coerce_dtype(x: object) -> DType | None:
    """The DType ``x`` names (see :func:`as_dtype`), or None; never raises."""
    if isinstance(x, DType):
        return x
    if isinstance(x, str):
        found = named_dtype(x)
        if found is not None or x.startswith("torch."):
            return found
    elif type(x).__module__ == "torch" and type(x).__name__ == "dtype":
        return _ALIASES.get(str(x).removeprefix("torch."))
    elif not (isinstance(x, np.dtype) or (isinstance(x, type) and issubclass(x, np.generic))):
        return None  # np.dtype(None) is float64 and np.dtype(int) int64: not element types
    try:
        return from_numpy_dtype(x)
    except UnsupportedOpError:
        return None


def as_dtype(x: object) -> DType:
    """The element type ``x`` names: a DType, a canonical name (``"float16"``), an ml_dtypes
    or torch spelling (``"float8_e4m3fn"``, ``torch.bfloat16``), or a NumPy / ml_dtypes dtype
    or scalar type (``np.float32``, ``"<f4"``).

    Raises:
        HurrayFormatError: (field ``"dtype"``) ``x`` names no Hurray element type.
    """
    found = coerce_dtype(x)
    if found is None:
        raise HurrayFormatError(
            f"dtype {x!r} is not a Hurray element type", field="dtype",
            fix=f"use one of: {', '.join(sorted(_BY_NAME))} (or the NumPy dtype of one).")
    return found
_TAG_FIX = "use an assigned type_tag (Hurray spec, Element Types) or a private tag 0xF0-0xFE."


def by_name(name: str) -> DType:
    """Look up an element type by its canonical name (``"int4"``, ``"float8_e4m3"``, ...).

    Args:
        name: the canonical name in the Hurray spec, Element Types (case-sensitive, no aliases).

    Returns:
        The DType.

    Raises:
        HurrayFormatError: (field ``"dtype"``) if the name is not a canonical Hurray type name.
    """
    found = _BY_NAME.get(name) if isinstance(name, str) else None
    if found is None:
        raise HurrayFormatError(
            f"unknown Hurray element type name {name!r}", field="dtype",
            fix=f"use one of: {', '.join(sorted(_BY_NAME))}.",
        )
    return found


def by_tag(tag: int, *, permissive: bool = False) -> DType:
    """Look up an element type by its wire ``type_tag``.

    Behaviour by range (Hurray spec, Element Types: Type Identifier Encoding): 0x00 and 0xFF
    are invalid; 0x47 and 0x80-0xEF are reserved; both always raise. Assigned tags return
    their DType. Private tags 0xF0-0xFE return a placeholder DType (``private=True``,
    ``bits=0``, ``tier=0``, ``numpy=None``) whose size and meaning come from the Extension
    Type section (Hurray spec, Metadata); the caller must check that the descriptor carries
    ``HAS_EXTENSION_TYPE``. Any other tag in 0x01-0x7F is unknown: it raises, unless
    ``permissive`` is set, in which case a placeholder DType with ``unknown=True`` and
    ``bits=0`` is returned whose data must not be interpreted (pack, unpack and buffer_size
    refuse it).

    Args:
        tag: the u8 tag value.
        permissive: accept unknown-but-unreserved tags in 0x01-0x7F.

    Returns:
        The DType (or a private/unknown placeholder, see above).

    Raises:
        HurrayFormatError: (field ``"type_tag"``) for invalid, reserved or unknown tags and for
            values outside 0..255.
    """
    try:
        value = operator.index(tag)
    except TypeError:
        raise HurrayFormatError(f"type_tag must be an integer, got {type(tag).__name__}",
                                field="type_tag", fix=_TAG_FIX) from None
    if value in DTYPES:
        return DTYPES[value]
    if value in PRIVATE_TAGS:
        return DType(f"private_0x{value:02X}", value, 0, 0, False, 1, False, None,
                     kind="private", private=True)
    _reject_tag(value, permissive)
    return DType(f"unknown_0x{value:02X}", value, 1 if value < 0x40 else 2, 0, False, 1, False,
                 None, kind="unknown", unknown=True)


def _reject_tag(value: int, permissive: bool) -> None:
    if not 0 <= value <= 0xFF:
        raise HurrayFormatError(f"type_tag {value} is outside the u8 range 0..255",
                                field="type_tag", fix=_TAG_FIX)
    if value in (0x00, 0xFF):
        reason = "is invalid (InvalidTypeTag)"
    elif value == RESERVED_TAG or value in RESERVED_TAGS:
        reason = "is reserved for the specification (ReservedTypeTag)"
    elif permissive:
        return
    else:
        reason = "is not assigned (UnknownTypeTag); only a permissive reader may accept it"
    raise HurrayFormatError(f"type_tag 0x{value:02X} {reason}", field="type_tag", fix=_TAG_FIX)


_NUMPY_FIX = ("convert the array to one of: bool, (u)int8..64, float16/32/64, complex64/128, "
              "or an ml_dtypes type (bfloat16, float8_e4m3fn, float8_e5m2, float8_e8m0fnu, "
              "float4_e2m1fn, float6_e2m3fn, float6_e3m2fn, int4, uint4, int2, uint2).")


def from_numpy_dtype(dt: object) -> DType:
    """Map a NumPy / ml_dtypes dtype (or anything ``np.dtype`` accepts) to its Hurray type.

    Byte order is ignored (``>f4`` maps to float32; packing writes little-endian).

    Args:
        dt: a dtype, scalar type or dtype string.

    Returns:
        The DType whose unpacked element is that dtype.

    Raises:
        UnsupportedOpError: for dtypes with no Hurray type (e.g. ``ml_dtypes.float8_e4m3``,
            ``np.longdouble``, strings, objects, structured dtypes).
    """
    try:
        npdt = np.dtype(dt)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        raise UnsupportedOpError(f"{dt!r} is not a NumPy dtype", fix=_NUMPY_FIX) from None
    if npdt.kind in "biufc" and npdt.byteorder not in "=|":
        npdt = npdt.newbyteorder("=")
    for d in _TABLE:
        # ml_dtypes types are user-defined NumPy types (isbuiltin 2): compare them only then,
        # so plain NumPy dtypes never load ml_dtypes.
        if d.np_name is not None and (npdt.isbuiltin == 2) == d.np_name.startswith(
                "ml_dtypes.") and _same_dtype(d.numpy, npdt):  # type: ignore[arg-type]
            return d
    hint = ""
    if npdt.isbuiltin == 2 and npdt == _numpy_dtype("ml_dtypes.float8_e4m3"):
        hint = " (this is the IEEE-like E4M3 with Inf; Hurray float8_e4m3 is float8_e4m3fn)"
    elif npdt.kind == "f" and npdt.itemsize > 8:
        hint = " (np.longdouble is not IEEE binary128; Hurray float128 has no NumPy dtype)"
    raise UnsupportedOpError(f"NumPy dtype {npdt} has no Hurray element type{hint}",
                             fix=_NUMPY_FIX)


def _same_dtype(ours: np.dtype, theirs: np.dtype) -> bool:
    if ours.kind in "biufc":  # match by kind and size: 'l' and 'q' are both int64 on Linux
        return theirs.kind == ours.kind and theirs.itemsize == ours.itemsize
    return theirs == ours


def _require_interpretable(dtype: DType) -> None:
    if not dtype.interpretable:
        raise UnsupportedOpError(
            f"element type {dtype.name} cannot be interpreted without its extension section",
            fix="size private types with extension_buffer_size() and the Extension Type "
                "section (Hurray spec, Metadata); unknown tags must not be read.",
        )


def _count(n: object, field: str = "count") -> int:
    try:
        value = operator.index(n)  # type: ignore[arg-type]
    except TypeError:
        raise HurrayFormatError(f"{field} must be an integer, got {type(n).__name__}",
                                field=field, fix="pass a non-negative int.") from None
    if value < 0:
        raise HurrayFormatError(f"{field} must be non-negative, got {value}", field=field,
                                fix="pass a non-negative int.")
    return value


def buffer_size(dtype: DType, n: int) -> int:
    """Bytes needed for ``n`` contiguous elements (docs/format.md, Element types and sizes).

    bits >= 8: ``n*bits/8``; bits in {1, 2, 4}: ``ceil(n*bits/8)``; 6-bit: ``ceil(n/4)*3``
    (whole 3-byte groups, as upstream does: n=1 needs 3 bytes).

    Args:
        dtype: the element type.
        n: the element count.

    Returns:
        The size in bytes.

    Raises:
        HurrayFormatError: if ``n`` is negative or not an integer.
        UnsupportedOpError: for private and unknown types.
    """
    _require_interpretable(dtype)
    count = _count(n)
    if dtype.bits == 6:
        return -(-count // 4) * 3
    return -(-count * dtype.bits // 8)


def extension_buffer_size(bit_width: int, n: int) -> int:
    """Bytes for ``n`` elements of a private extension type.

    docs/format.md, Extension Type section.

    Args:
        bit_width: the Extension Type section's bit_width (1, 2, 4 or a multiple of 8).
        n: the element count.

    Returns:
        ``n*bit_width/8`` for whole-byte widths, ``ceil(n/(8/bit_width))`` for sub-byte ones.

    Raises:
        HurrayFormatError: for an illegal bit width or a negative count.
    """
    width = _count(bit_width, "bit_width")
    if width not in (1, 2, 4) and (width == 0 or width % 8):
        raise HurrayFormatError(f"extension bit_width {width} is neither 1, 2, 4 nor a "
                                "positive multiple of 8", field="bit_width",
                                fix="write bit_width 1, 2, 4 or a multiple of 8 in the "
                                    "Extension Type section.")
    count = _count(n)
    if width < 8:
        return -(-count // (8 // width))
    return count * (width // 8)


# (exponent bits, mantissa bits, bias, specials): "fn" = all-ones code is NaN, no Inf;
# "ieee" = exponent all ones is Inf/NaN; "none" = every code finite; "e8m0" = 0xFF NaN.
_FLOAT_FORMATS: dict[str, tuple[int, int, int, str]] = {
    "float8_e4m3": (4, 3, 7, "fn"),
    "float8_e5m2": (5, 2, 15, "ieee"),
    "float8_e8m0": (8, 0, 127, "e8m0"),
    "float4_e2m1": (2, 1, 1, "none"),
    "float6_e2m3": (2, 3, 1, "none"),
    "float6_e3m2": (3, 2, 3, "none"),
}


def value_table(dtype: DType) -> np.ndarray:
    """The exact float32 value of every code of a type of 8 bits or fewer.

    Float codes follow the Hurray spec, Element Types, computed from the bit fields (not from
    ml_dtypes):
    float8_e4m3 ``0x7F``/``0xFF`` are NaN; float8_e5m2 has ±Inf and NaN; float8_e8m0 ``0xFF``
    is NaN and ``0x00`` is 2^-127 as in ml_dtypes, although Hurray forbids both codes in
    data (callers must reject them). Integer and bool types map each code to its integer value
    (two's complement for signed types).

    Args:
        dtype: an element type with ``bits <= 8`` (not private/unknown).

    Returns:
        A float32 array of length ``2**bits``, indexed by code.

    Raises:
        UnsupportedOpError: for wider, private or unknown types.
    """
    _require_interpretable(dtype)
    if dtype.bits > 8:
        raise UnsupportedOpError(f"value_table covers types of 8 bits or fewer, not {dtype}",
                                 fix="convert wider types with their NumPy dtype instead.")
    codes = np.arange(1 << dtype.bits, dtype=np.int64)
    if dtype.name not in _FLOAT_FORMATS:
        if dtype.signed:
            codes = np.where(codes >= 1 << (dtype.bits - 1), codes - (1 << dtype.bits), codes)
        return codes.astype(np.float32)
    return _float_values(codes, *_FLOAT_FORMATS[dtype.name])


def _float_values(codes: np.ndarray, ebits: int, mbits: int, bias: int,
                  specials: str) -> np.ndarray:
    exp = (codes >> mbits) & ((1 << ebits) - 1)
    man = (codes & ((1 << mbits) - 1)).astype(np.float64)
    frac = man / (1 << mbits)
    if specials == "e8m0":
        values = np.ldexp(1.0, exp - bias)
    else:
        values = np.where(exp == 0, np.ldexp(frac, 1 - bias), np.ldexp(1.0 + frac, exp - bias))
    emax = (1 << ebits) - 1
    if specials == "fn":
        values = np.where((exp == emax) & (man == (1 << mbits) - 1), np.nan, values)
    elif specials == "ieee":
        values = np.where(exp == emax, np.where(man == 0, np.inf, np.nan), values)
    elif specials == "e8m0":
        values = np.where(exp == emax, np.nan, values)
    if specials != "e8m0":  # e8m0 has no sign bit
        sign = (codes >> (ebits + mbits)) & 1
        values = np.where(sign == 1, -values, values)
    return values.astype(np.float32)
