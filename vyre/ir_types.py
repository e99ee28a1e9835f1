"""vyre IR enums, data types and buffer declarations (vyre-spec 0.7.2).

Enum values are the VIR0 wire tags. Scalars are :class:`Scalar` members, composites frozen
dataclasses; ``DataType`` is the union. A :class:`BufferDecl` carries all 13 fields of vyre's
``BufferDecl``, with :class:`MemoryHints` and the rev-6 :class:`ShapePredicate` tree.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Union


class BinOp(enum.IntEnum):
    """Binary operators with the operator sub-tags vyre-foundation 0.7.2's encoder writes."""

    ADD = 0x01
    SUB = 0x02
    MUL = 0x03
    DIV = 0x04
    MOD = 0x05
    BIT_AND = 0x06
    BIT_OR = 0x07
    BIT_XOR = 0x08
    SHL = 0x09
    SHR = 0x0A
    EQ = 0x0B
    NE = 0x0C
    LT = 0x0D
    GT = 0x0E
    LE = 0x0F
    GE = 0x10
    AND = 0x11
    OR = 0x12
    ABS_DIFF = 0x13
    MIN = 0x14
    MAX = 0x15
    SATURATING_ADD = 0x16
    SATURATING_SUB = 0x17
    SATURATING_MUL = 0x18
    SHUFFLE = 0x19
    BALLOT = 0x1A
    WAVE_REDUCE = 0x1B
    WAVE_BROADCAST = 0x1C
    ROTATE_LEFT = 0x1D
    ROTATE_RIGHT = 0x1E
    WRAPPING_ADD = 0x1F
    WRAPPING_SUB = 0x20
    MUL_HIGH = 0x21


class UnOp(enum.IntEnum):
    """Unary operators with their wire sub-tags."""

    NEGATE = 0x01
    BIT_NOT = 0x02
    LOGICAL_NOT = 0x03
    POPCOUNT = 0x04
    CLZ = 0x05
    CTZ = 0x06
    REVERSE_BITS = 0x07
    COS = 0x08
    SIN = 0x09
    ABS = 0x0A
    SQRT = 0x0B
    FLOOR = 0x0C
    CEIL = 0x0D
    ROUND = 0x0E
    TRUNC = 0x0F
    SIGN = 0x10
    IS_NAN = 0x11
    IS_INF = 0x12
    IS_FINITE = 0x13
    EXP = 0x14
    LOG = 0x15
    LOG2 = 0x16
    EXP2 = 0x17
    TAN = 0x18
    ACOS = 0x19
    ASIN = 0x1A
    ATAN = 0x1B
    TANH = 0x1C
    SINH = 0x1D
    COSH = 0x1E
    INVERSE_SQRT = 0x1F
    UNPACK4_LOW = 0x20
    UNPACK4_HIGH = 0x21
    UNPACK8_LOW = 0x22
    UNPACK8_HIGH = 0x23
    RECIPROCAL = 0x24


class AtomicOp(enum.IntEnum):
    """Atomic read-modify-write operators with their wire sub-tags."""

    ADD = 0x01
    OR = 0x02
    AND = 0x03
    XOR = 0x04
    MIN = 0x05
    MAX = 0x06
    EXCHANGE = 0x07
    COMPARE_EXCHANGE = 0x08
    COMPARE_EXCHANGE_WEAK = 0x09
    FETCH_NAND = 0x0A
    LRU_UPDATE = 0x0B


@dataclass(frozen=True, slots=True)
class OpaqueOp:
    """An extension operator usable wherever a BinOp, UnOp or AtomicOp is expected.

    ``id`` is a u32; the decoder only accepts ids with bit 31 set.
    """

    id: int


class MemoryOrdering(enum.IntEnum):
    """Memory ordering of Barrier nodes and Atomic expressions."""

    RELAXED = 0
    ACQUIRE = 1
    RELEASE = 2
    ACQ_REL = 3
    SEQ_CST = 4
    GRID_SYNC = 5


class CollectiveOp(enum.IntEnum):
    """Reduction operator of AllReduce / ReduceScatter."""

    SUM = 1
    MIN = 2
    MAX = 3
    BIT_AND = 4
    BIT_OR = 5
    BIT_XOR = 6


class SubgroupReduceOp(enum.IntEnum):
    """Reduction operator of SubgroupReduce."""

    ADD = 1
    MUL = 2
    MIN = 3
    MAX = 4
    AND = 5
    OR = 6
    XOR = 7


class BufferAccess(enum.IntEnum):
    """How a kernel may access a buffer (wire tags)."""

    READ_ONLY = 0
    READ_WRITE = 1
    UNIFORM = 2
    WORKGROUP = 3
    WRITE_ONLY = 4


class MemoryKind(enum.IntEnum):
    """Memory class of a buffer, with the WIRE tags (the cache-key tags swap Push/Persistent)."""

    GLOBAL = 0
    SHARED = 1
    UNIFORM = 2
    LOCAL = 3
    READONLY = 4
    PUSH = 5
    PERSISTENT = 6

    @property
    def cache_tag(self) -> int:
        """The tag used by the canonical buffer key (vyre 0.7.2 wire format, fingerprint)."""
        return {MemoryKind.PUSH: 6, MemoryKind.PERSISTENT: 5}.get(self, int(self))


class CacheLocality(enum.IntEnum):
    """Cache behaviour hint."""

    STREAMING = 0
    TEMPORAL = 1
    RANDOM = 2


class LinearType(enum.IntEnum):
    """Substructural use discipline of a buffer (rev-6 field)."""

    LINEAR = 0
    AFFINE = 1
    RELEVANT = 2
    UNRESTRICTED = 3


class Scalar(enum.IntEnum):
    """Payload-free data types; the value is the DataType wire tag."""

    U32 = 0x01
    I32 = 0x02
    U64 = 0x03
    VEC2_U32 = 0x04
    VEC4_U32 = 0x05
    BOOL = 0x06
    BYTES = 0x07
    F16 = 0x09
    BF16 = 0x0A
    F32 = 0x0B
    F64 = 0x0C
    TENSOR = 0x0D
    U8 = 0x0E
    U16 = 0x0F
    I8 = 0x10
    I16 = 0x11
    I64 = 0x12
    F8E4M3 = 0x19
    F8E5M2 = 0x1A
    I4 = 0x1B
    FP4 = 0x1C
    NF4 = 0x1D


_SCALAR_SIZES: dict[Scalar, int | None] = {
    Scalar.U8: 1, Scalar.I8: 1, Scalar.F8E4M3: 1, Scalar.F8E5M2: 1, Scalar.I4: 1,
    Scalar.FP4: 1, Scalar.NF4: 1, Scalar.BYTES: 1,
    Scalar.U16: 2, Scalar.I16: 2, Scalar.F16: 2, Scalar.BF16: 2,
    Scalar.U32: 4, Scalar.I32: 4, Scalar.F32: 4, Scalar.BOOL: 4,
    Scalar.U64: 8, Scalar.I64: 8, Scalar.F64: 8, Scalar.VEC2_U32: 8,
    Scalar.VEC4_U32: 16, Scalar.TENSOR: None,
}

# Storage types a Quantized DataType may use (checked by both encoder and decoder).
QUANTIZED_STORAGE: frozenset[Scalar] = frozenset({
    Scalar.I4, Scalar.I8, Scalar.I16, Scalar.U8, Scalar.U16, Scalar.F8E4M3, Scalar.F8E5M2,
    Scalar.FP4, Scalar.NF4,
})


@dataclass(frozen=True, slots=True)
class Array:
    """Fixed-size opaque array element of ``element_size`` bytes."""

    element_size: int


@dataclass(frozen=True, slots=True)
class Handle:
    """An opaque handle identified by a u32 type id."""

    type_id: int


@dataclass(frozen=True, slots=True)
class Vec:
    """A short vector of ``count`` (u8) elements."""

    element: DataType
    count: int


@dataclass(frozen=True, slots=True)
class TensorShaped:
    """A tensor with a static shape (u32 dims, at most 4096 of them)."""

    element: DataType
    shape: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class SparseCsr:
    """Compressed-sparse-row matrix of ``element``."""

    element: DataType


@dataclass(frozen=True, slots=True)
class SparseCoo:
    """Coordinate-list sparse matrix of ``element``."""

    element: DataType


@dataclass(frozen=True, slots=True)
class SparseBsr:
    """Block-sparse-row matrix (element first on the wire, then block rows, cols)."""

    element: DataType
    block_rows: int
    block_cols: int


@dataclass(frozen=True, slots=True)
class DeviceMesh:
    """A device mesh with the given u32 axis sizes."""

    axes: tuple[int, ...]


class QuantScaleKind(enum.IntEnum):
    """Quantization scale granularity (wire tag)."""

    PER_TENSOR = 0
    PER_CHANNEL = 1
    PER_GROUP = 2


class ZeroPointKind(enum.IntEnum):
    """Quantization zero-point granularity (wire tag)."""

    ABSENT = 0
    PER_TENSOR = 1
    PER_CHANNEL = 2
    PER_GROUP = 3


@dataclass(frozen=True, slots=True)
class QuantScale:
    """Scale of a Quantized type: ``param`` is the axis (PerChannel) or group size (PerGroup)."""

    kind: QuantScaleKind = QuantScaleKind.PER_TENSOR
    param: int = 0


@dataclass(frozen=True, slots=True)
class ZeroPoint:
    """Zero point of a Quantized type: ``param`` is the axis or the group size."""

    kind: ZeroPointKind = ZeroPointKind.ABSENT
    param: int = 0


@dataclass(frozen=True, slots=True)
class Quantized:
    """Quantized storage with scale and zero point."""

    storage: DataType
    scale: QuantScale = QuantScale()
    zero_point: ZeroPoint = ZeroPoint()


@dataclass(frozen=True, slots=True)
class OpaqueType:
    """An extension data type identified by a u32 id (bit 31 must be set to decode)."""

    id: int


DataType = Union[  # noqa: UP007 - runtime alias used in isinstance-free annotations
    Scalar, Array, Handle, Vec, TensorShaped, SparseCsr, SparseCoo, SparseBsr, DeviceMesh,
    Quantized, OpaqueType,
]


def size_bytes(dtype: DataType) -> int | None:
    """Byte size of one element of ``dtype``, or None for variable-width types.

    Args:
        dtype: the data type.

    Returns:
        The size as vyre-spec's ``size_bytes`` defines it (Handle and DeviceMesh are 4).
    """
    if isinstance(dtype, Scalar):
        return _SCALAR_SIZES[dtype]
    if isinstance(dtype, Array):
        return dtype.element_size
    if isinstance(dtype, (Handle, DeviceMesh)):
        return 4
    if isinstance(dtype, Quantized):
        return size_bytes(dtype.storage)
    return None


def fnv1a_extension_id(name: str) -> int:
    """The conventional extension id for ``name``: 32-bit FNV-1a of UTF-8, OR 0x8000_0000.

    Args:
        name: the extension's name.

    Returns:
        A u32 id with bit 31 set.
    """
    h = 0x811C9DC5
    for byte in name.encode("utf-8"):
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h | 0x80000000


# -- buffer declarations ----------------------------------------------------------------------


class ShapePredicate:
    """Base of the static element-count predicates attached to a buffer (rev 6)."""

    __slots__ = ()
    TAG: int = -1

    def holds(self, count: int) -> bool:  # pragma: no cover - overridden
        """Whether the predicate holds for ``count`` elements."""
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class AtLeast(ShapePredicate):
    """``count >= n``."""

    n: int
    TAG = 1

    def holds(self, count: int) -> bool:
        """Whether ``count >= n``."""
        return count >= self.n


@dataclass(frozen=True, slots=True)
class AtMost(ShapePredicate):
    """``count <= n``."""

    n: int
    TAG = 2

    def holds(self, count: int) -> bool:
        """Whether ``count <= n``."""
        return count <= self.n


@dataclass(frozen=True, slots=True)
class Exactly(ShapePredicate):
    """``count == n``."""

    n: int
    TAG = 3

    def holds(self, count: int) -> bool:
        """Whether ``count == n``."""
        return count == self.n


@dataclass(frozen=True, slots=True)
class MultipleOf(ShapePredicate):
    """``count % n == 0``; MultipleOf(0) never holds."""

    n: int
    TAG = 4

    def holds(self, count: int) -> bool:
        """Whether ``count`` is a multiple of ``n`` (false for n == 0)."""
        return self.n != 0 and count % self.n == 0


@dataclass(frozen=True, slots=True)
class ModEquals(ShapePredicate):
    """``count % modulus == remainder``; false when modulus is 0 or remainder >= modulus."""

    modulus: int
    remainder: int
    TAG = 5

    def holds(self, count: int) -> bool:
        """Whether ``count % modulus == remainder``."""
        if self.modulus == 0 or self.remainder >= self.modulus:
            return False
        return count % self.modulus == self.remainder


@dataclass(frozen=True, slots=True)
class AffineRange(ShapePredicate):
    """``min <= count * scale + offset <= max`` with i64 parameters (evaluated exactly)."""

    scale: int
    offset: int
    min: int
    max: int
    TAG = 6

    def holds(self, count: int) -> bool:
        """Whether the affine image of ``count`` lies in ``[min, max]``."""
        value = count * self.scale + self.offset
        return self.min <= value <= self.max


@dataclass(frozen=True, slots=True)
class PredicateAnd(ShapePredicate):
    """Both predicates hold."""

    left: ShapePredicate
    right: ShapePredicate
    TAG = 7

    def holds(self, count: int) -> bool:
        """Whether both operands hold."""
        return self.left.holds(count) and self.right.holds(count)


@dataclass(frozen=True, slots=True)
class PredicateOr(ShapePredicate):
    """Either predicate holds."""

    left: ShapePredicate
    right: ShapePredicate
    TAG = 8

    def holds(self, count: int) -> bool:
        """Whether either operand holds."""
        return self.left.holds(count) or self.right.holds(count)


@dataclass(frozen=True, slots=True)
class PredicateNot(ShapePredicate):
    """The predicate does not hold."""

    inner: ShapePredicate
    TAG = 9

    def holds(self, count: int) -> bool:
        """Whether the operand does not hold."""
        return not self.inner.holds(count)


@dataclass(frozen=True, slots=True)
class MemoryHints:
    """Backend hints; the default encodes as ``00 00000000 01``."""

    coalesce_axis: int | None = None
    preferred_alignment: int = 0
    cache_locality: CacheLocality = CacheLocality.TEMPORAL


_DEFAULT_KIND = {
    BufferAccess.READ_ONLY: MemoryKind.READONLY,
    BufferAccess.UNIFORM: MemoryKind.UNIFORM,
    BufferAccess.WORKGROUP: MemoryKind.SHARED,
}


def default_memory_kind(access: BufferAccess) -> MemoryKind:
    """The MemoryKind ``BufferDecl::storage`` picks for ``access``."""
    return _DEFAULT_KIND.get(access, MemoryKind.GLOBAL)


@dataclass(frozen=True, slots=True)
class BufferDecl:
    """One buffer of a Program: all 13 fields of vyre's ``BufferDecl``.

    ``output_byte_range`` is a half-open ``(start, end)`` byte range or None.
    """

    name: str
    binding: int = 0
    access: BufferAccess = BufferAccess.READ_WRITE
    kind: MemoryKind = MemoryKind.GLOBAL
    element: DataType = Scalar.U32
    count: int = 0
    is_output: bool = False
    pipeline_live_out: bool = False
    output_byte_range: tuple[int, int] | None = None
    hints: MemoryHints = MemoryHints()
    bytes_extraction: bool = False
    linear_type: LinearType = LinearType.UNRESTRICTED
    shape_predicate: ShapePredicate | None = None

    @classmethod
    def storage(
        cls, name: str, binding: int, access: BufferAccess, element: DataType, count: int = 0
    ) -> BufferDecl:
        """``BufferDecl::storage``: the memory kind follows from ``access``.

        Args:
            name: buffer name.
            binding: binding slot.
            access: access mode.
            element: element type.
            count: element count (0 = sized at dispatch).

        Returns:
            The declaration.
        """
        return cls(name, binding, access, default_memory_kind(access), element, count)

    @classmethod
    def read(cls, name: str, binding: int, element: DataType, count: int = 0) -> BufferDecl:
        """A ReadOnly storage buffer."""
        return cls.storage(name, binding, BufferAccess.READ_ONLY, element, count)

    @classmethod
    def read_write(cls, name: str, binding: int, element: DataType, count: int = 0) -> BufferDecl:
        """A ReadWrite storage buffer."""
        return cls.storage(name, binding, BufferAccess.READ_WRITE, element, count)

    @classmethod
    def output(cls, name: str, binding: int, element: DataType, count: int = 0) -> BufferDecl:
        """``BufferDecl::output``: ReadWrite with is_output and pipeline_live_out set."""
        decl = cls.storage(name, binding, BufferAccess.READ_WRITE, element, count)
        return replace(decl, is_output=True, pipeline_live_out=True)

    @classmethod
    def workgroup(cls, name: str, count: int, element: DataType) -> BufferDecl:
        """``BufferDecl::workgroup``: shared memory, binding 0."""
        return cls(name, 0, BufferAccess.WORKGROUP, MemoryKind.SHARED, element, count)

    def with_(self, **changes: object) -> BufferDecl:
        """A copy with ``changes`` applied (``dataclasses.replace``)."""
        return replace(self, **changes)  # type: ignore[arg-type]

    @property
    def is_writable(self) -> bool:
        """True for ReadWrite and WriteOnly buffers (the wire output set)."""
        return self.access in (BufferAccess.READ_WRITE, BufferAccess.WRITE_ONLY)
