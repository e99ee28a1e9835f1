"""vyre IR expressions: one frozen dataclass per expression tag of the vyre 0.7.2 wire format."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import ClassVar

from vyre.ir_types import (
    AtomicOp,
    BinOp,
    DataType,
    MemoryOrdering,
    OpaqueOp,
    SubgroupReduceOp,
    UnOp,
)


class Expr:
    """Base class of every expression; ``TAG`` is the wire tag."""

    __slots__ = ()
    TAG: ClassVar[int] = -1


@dataclass(frozen=True, slots=True)
class LitU32(Expr):
    """A u32 literal."""

    TAG: ClassVar[int] = 0
    value: int


@dataclass(frozen=True, slots=True)
class LitI32(Expr):
    """An i32 literal, stored as a signed Python int."""

    TAG: ClassVar[int] = 1
    value: int


@dataclass(frozen=True, slots=True)
class LitBool(Expr):
    """A boolean literal."""

    TAG: ClassVar[int] = 2
    value: bool


@dataclass(frozen=True, slots=True)
class Var(Expr):
    """A reference to a Let binding or loop variable."""

    TAG: ClassVar[int] = 3
    name: str


@dataclass(frozen=True, slots=True)
class Load(Expr):
    """``buffer[index]``."""

    TAG: ClassVar[int] = 4
    buffer: str
    index: Expr


@dataclass(frozen=True, slots=True)
class BufLen(Expr):
    """Element count of ``buffer``."""

    TAG: ClassVar[int] = 5
    buffer: str


@dataclass(frozen=True, slots=True)
class InvocationId(Expr):
    """Global invocation id on ``axis`` (a u8; the validator wants 0..2)."""

    TAG: ClassVar[int] = 6
    axis: int


@dataclass(frozen=True, slots=True)
class WorkgroupId(Expr):
    """Workgroup id on ``axis``."""

    TAG: ClassVar[int] = 7
    axis: int


@dataclass(frozen=True, slots=True)
class LocalId(Expr):
    """Local invocation id on ``axis``."""

    TAG: ClassVar[int] = 8
    axis: int


@dataclass(frozen=True, slots=True)
class Binary(Expr):
    """``Expr::BinOp``: ``op(left, right)``."""

    TAG: ClassVar[int] = 9
    op: BinOp | OpaqueOp
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class Unary(Expr):
    """``Expr::UnOp``: ``op(operand)``."""

    TAG: ClassVar[int] = 10
    op: UnOp | OpaqueOp
    operand: Expr


@dataclass(frozen=True, slots=True)
class Call(Expr):
    """A call of a registered operation by id."""

    TAG: ClassVar[int] = 11
    op_id: str
    args: tuple[Expr, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.args, tuple):
            object.__setattr__(self, "args", tuple(self.args))


@dataclass(frozen=True, slots=True)
class Select(Expr):
    """``cond ? true_val : false_val``."""

    TAG: ClassVar[int] = 12
    cond: Expr
    true_val: Expr
    false_val: Expr


@dataclass(frozen=True, slots=True)
class Cast(Expr):
    """Conversion of ``value`` to ``target``."""

    TAG: ClassVar[int] = 13
    target: DataType
    value: Expr


@dataclass(frozen=True, slots=True)
class Atomic(Expr):
    """Atomic RMW on ``buffer[index]``; ``expected`` is only for compare-exchange."""

    TAG: ClassVar[int] = 14
    op: AtomicOp | OpaqueOp
    buffer: str
    index: Expr
    expected: Expr | None
    value: Expr
    ordering: MemoryOrdering = MemoryOrdering.SEQ_CST


@dataclass(frozen=True, slots=True)
class LitF32(Expr):
    """An f32 literal kept as raw u32 ``bits`` (a double round trip could alter NaN payloads)."""

    TAG: ClassVar[int] = 15
    bits: int

    @classmethod
    def from_float(cls, value: float) -> LitF32:
        """Build from a Python float (rounded to f32)."""
        return cls(struct.unpack("<I", struct.pack("<f", value))[0])

    @property
    def value(self) -> float:
        """The literal as a Python float."""
        return float(struct.unpack("<f", struct.pack("<I", self.bits))[0])

    def canonical_bits(self) -> int:
        """The bits the encoder writes (vyre 0.7.2 wire format, LitF32 canonicalization)."""
        return canonical_f32_bits(self.bits)


def canonical_f32_bits(bits: int) -> int:
    """Canonicalize f32 bits: NaN -> 0x7FC00000; subnormals and -0.0 -> 0."""
    exponent = (bits >> 23) & 0xFF
    mantissa = bits & 0x7FFFFF
    if exponent == 0xFF and mantissa:
        return 0x7FC00000
    if exponent == 0:
        return 0
    return bits


def is_nan_bits(bits: int) -> bool:
    """True when f32 ``bits`` encode a NaN."""
    return math.isnan(struct.unpack("<f", struct.pack("<I", bits))[0])


@dataclass(frozen=True, slots=True)
class Fma(Expr):
    """Fused multiply-add ``a * b + c``."""

    TAG: ClassVar[int] = 16
    a: Expr
    b: Expr
    c: Expr


@dataclass(frozen=True, slots=True)
class SubgroupReduce(Expr):
    """Subgroup-wide reduction of ``value``."""

    TAG: ClassVar[int] = 17
    op: SubgroupReduceOp
    value: Expr


@dataclass(frozen=True, slots=True)
class SubgroupShuffle(Expr):
    """``value`` read from subgroup lane ``lane``."""

    TAG: ClassVar[int] = 18
    value: Expr
    lane: Expr


@dataclass(frozen=True, slots=True)
class SubgroupBallot(Expr):
    """Bit mask of lanes where ``cond`` holds."""

    TAG: ClassVar[int] = 19
    cond: Expr


@dataclass(frozen=True, slots=True)
class SubgroupLocalId(Expr):
    """Lane index within the subgroup."""

    TAG: ClassVar[int] = 20


@dataclass(frozen=True, slots=True)
class SubgroupSize(Expr):
    """Number of lanes in a subgroup."""

    TAG: ClassVar[int] = 21


@dataclass(frozen=True, slots=True)
class BufferRef(Expr):
    """A whole buffer passed as a Call argument (rev 5)."""

    TAG: ClassVar[int] = 22
    buffer: str


@dataclass(frozen=True, slots=True)
class OpaqueExpr(Expr):
    """An extension expression kept as raw bytes (``preserve_unknown=True``)."""

    TAG: ClassVar[int] = 0x80
    kind: str
    payload: bytes


class ExtensionExpr(Expr):
    """Base for typed extension expressions produced by a registered decoder.

    Subclasses define ``kind`` (the extension_kind string); the registered encoder turns an
    instance back into its payload bytes.
    """

    __slots__ = ()
    TAG: ClassVar[int] = 0x80
    kind: ClassVar[str] = ""


EXPR_CLASSES: tuple[type[Expr], ...] = (
    LitU32, LitI32, LitBool, Var, Load, BufLen, InvocationId, WorkgroupId, LocalId, Binary,
    Unary, Call, Select, Cast, Atomic, LitF32, Fma, SubgroupReduce, SubgroupShuffle,
    SubgroupBallot, SubgroupLocalId, SubgroupSize, BufferRef,
)
