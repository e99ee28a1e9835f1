"""Optional descriptor sections: shard, statistics, extension type, composite member (Hurray spec,
Metadata)."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .reader import Reader, Writer, fail

STATS_SIZE = 72
EXT_TYPE_SIZE = 20
MEMBER_SIZE = 16
NNZ_VALID, SPARSITY_VALID, VALUE_RANGE_VALID = 0x01, 0x02, 0x04
VALUE_STATS_VALID, NM_SPARSITY_VALID, NAN_INF_VALID = 0x08, 0x10, 0x20
_STATS = struct.Struct("<IIQddddddBBBBI")
_EXT = struct.Struct("<IBBBBBBHIBBH")


def _at(base: int | None, rel: int) -> int | None:
    return None if base is None else base + rel


@dataclass(frozen=True, slots=True)
class Shard:
    """This tensor is the box ``[shard_offset, shard_offset + shape)`` of ``parent_shape``."""

    parent_shape: tuple[int, ...]
    shard_offset: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Statistics:
    """Advisory statistics (72 bytes); a field is meaningful only when its mask bit is set.

    Attributes:
        computed_mask: bits 0-5 (NNZ, SPARSITY, VALUE_RANGE, VALUE_STATS, NM_SPARSITY, NAN_INF).
        nnz, sparsity_ratio, value_min, value_max, value_abs_max, value_mean, value_stddev,
        nm_n, nm_m, has_nan, has_inf: the section's fields (raw bytes kept as integers so that
            fields whose bit is clear re-encode unchanged).
    """

    computed_mask: int = 0
    nnz: int = 0
    sparsity_ratio: float = 0.0
    value_min: float = 0.0
    value_max: float = 0.0
    value_abs_max: float = 0.0
    value_mean: float = 0.0
    value_stddev: float = 0.0
    nm_n: int = 0
    nm_m: int = 0
    has_nan: int = 0
    has_inf: int = 0

    def check(self, base: int | None = None) -> None:
        """Reject reserved mask bits and invalid values of fields whose bit is set."""
        if self.computed_mask & ~0x3F:
            fail(f"statistics computed_mask 0x{self.computed_mask:08X} sets reserved bits 6-31",
                 "computed_mask", _at(base, 0), "set only mask bits 0-5.")
        m = self.computed_mask
        if m & VALUE_STATS_VALID and not self.value_stddev >= 0.0:
            fail(f"value_stddev {self.value_stddev!r} is negative or NaN", "value_stddev",
                 _at(base, 56), "write the population standard deviation (>= 0).")
        if m & NM_SPARSITY_VALID and self.nm_n > self.nm_m:
            fail(f"N:M sparsity has nm_n {self.nm_n} > nm_m {self.nm_m}", "nm_n", _at(base, 64),
                 "write N <= M (e.g. 2:4).")
        if m & NAN_INF_VALID and (self.has_nan > 1 or self.has_inf > 1):
            fail(f"has_nan/has_inf are {self.has_nan}/{self.has_inf}, must be 0 or 1", "has_nan",
                 _at(base, 66), "write booleans as 0x00 or 0x01.")


@dataclass(frozen=True, slots=True)
class ExtensionType:
    """Private element type description (20 bytes), required iff type_tag is 0xF0-0xFE.

    Attributes:
        bit_width: bits per element: 1, 2, 4 or a multiple of 8.
        packing_factor: 8 // bit_width for sub-byte widths, else 1.
        is_float, is_signed, sign_bits, exponent_bits, mantissa_bits, exponent_bias, has_nan,
        has_inf: the format description (booleans are 0 or 1).
    """

    bit_width: int
    packing_factor: int = 1
    is_float: int = 0
    is_signed: int = 0
    sign_bits: int = 0
    exponent_bits: int = 0
    mantissa_bits: int = 0
    exponent_bias: int = 0
    has_nan: int = 0
    has_inf: int = 0

    def check(self, base: int | None = None) -> None:
        """Apply the reader rules of docs/format.md, Extension Type section."""
        bw, pf = self.bit_width, self.packing_factor
        if bw == 0 or (bw >= 8 and bw % 8) or (bw < 8 and bw not in (1, 2, 4)):
            fail(f"extension bit_width {bw} is not 1, 2, 4 or a multiple of 8", "bit_width",
                 _at(base, 0), "use a whole-byte width or 1, 2 or 4 bits.")
        want = 1 if bw >= 8 else 8 // bw
        if pf != want:
            fail(f"extension packing_factor {pf} must be {want} for bit_width {bw}",
                 "packing_factor", _at(base, 4), "write packing_factor = 8 // bit_width (1 if "
                 ">= 8 bits).")
        for name, rel in (("is_float", 5), ("is_signed", 6), ("has_nan", 16), ("has_inf", 17)):
            if getattr(self, name) > 1:
                fail(f"extension {name} is {getattr(self, name)}, must be 0 or 1", name,
                     _at(base, rel), "write booleans as 0x00 or 0x01.")
        if self.sign_bits > 1:
            fail(f"extension sign_bits {self.sign_bits} > 1", "sign_bits", _at(base, 7),
                 "use 0 or 1 sign bits.")
        if self.is_float and self.is_signed:
            fail("extension float type has is_signed = 1", "is_signed", _at(base, 6),
                 "floats carry their sign in sign_bits; write is_signed = 0.")
        if not self.is_float and (self.sign_bits or self.exponent_bits or self.mantissa_bits
                                  or self.exponent_bias):
            fail("extension integer type has non-zero float fields", "exponent_bits",
                 _at(base, 7), "integer types write sign/exponent/mantissa bits and bias as 0.")


@dataclass(frozen=True, slots=True)
class CompositeMember:
    """Overlay member marker: ``member_role`` 0x01 = base, 0x00 = correction."""

    member_role: int

    def check(self, base: int | None = None) -> None:
        """Reject roles other than 0 and 1."""
        if self.member_role > 1:
            fail(f"member_role 0x{self.member_role:02X} is not 0x00 or 0x01", "member_role",
                 base, "use 0x01 for the base and 0x00 for corrections.")


def decode_shard(r: Reader, rank: int) -> Shard:
    """Read ``parent_shape`` and ``shard_offset`` (8*rank bytes each)."""
    return Shard(r.array("Q", rank, 8, "parent_shape"), r.array("Q", rank, 8, "shard_offset"))


def decode_statistics(r: Reader) -> Statistics:
    """Read and check the 72-byte statistics section."""
    base = r.need(STATS_SIZE, "statistics")
    v = _STATS.unpack_from(r.data, base)
    r.pos = base + STATS_SIZE
    if v[1] or v[13]:
        rel = 4 if v[1] else 68
        fail("statistics reserved field is non-zero", "statistics._reserved", base + rel,
             "write the reserved statistics fields as zero.")
    s = Statistics(v[0], *v[2:13])
    s.check(base)
    return s


def decode_extension_type(r: Reader) -> ExtensionType:
    """Read and check the 20-byte extension type section."""
    base = r.need(EXT_TYPE_SIZE, "extension_type")
    v = _EXT.unpack_from(r.data, base)
    r.pos = base + EXT_TYPE_SIZE
    if v[7] or v[11]:
        fail("extension type reserved bytes are non-zero", "extension_type._reserved",
             base + (10 if v[7] else 18), "write the reserved bytes as zero.")
    e = ExtensionType(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[8], v[9], v[10])
    e.check(base)
    return e


def decode_member(r: Reader) -> CompositeMember:
    """Read and check the 16-byte composite member section."""
    base = r.pos
    m = CompositeMember(r.u8("member_role"))
    r.zeros(15, "composite_member._reserved")
    m.check(base)
    return m


def encode_sections(w: Writer, shard: Shard | None, stats: Statistics | None,
                    ext: ExtensionType | None, member: CompositeMember | None) -> None:
    """Append the present sections in wire order (shard, statistics, extension, member)."""
    if shard is not None:
        w.array("Q", shard.parent_shape)
        w.array("Q", shard.shard_offset)
    if stats is not None:
        s = stats
        w.raw(_STATS.pack(s.computed_mask, 0, s.nnz, s.sparsity_ratio, s.value_min, s.value_max,
                          s.value_abs_max, s.value_mean, s.value_stddev, s.nm_n, s.nm_m,
                          s.has_nan, s.has_inf, 0))
    if ext is not None:
        e = ext
        w.raw(_EXT.pack(e.bit_width, e.packing_factor, e.is_float, e.is_signed, e.sign_bits,
                        e.exponent_bits, e.mantissa_bits, 0, e.exponent_bias, e.has_nan,
                        e.has_inf, 0))
    if member is not None:
        w.u8(member.member_role)
        w.zeros(15)
