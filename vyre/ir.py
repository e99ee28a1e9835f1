"""The vyre IR: expressions, statements and :class:`Program`, plus every type and enum.

One frozen dataclass per expression and node tag of the vyre 0.7.2 wire format; all IR objects
are immutable (frozen dataclasses, tuples for child lists). The data types, enums and buffer
declarations live in :mod:`vyre.ir_types` and are re-exported here.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, replace
from typing import ClassVar

from hurray_gpu.errors import HurrayGPUError
from vyre.ir_types import (
    QUANTIZED_STORAGE,
    AffineRange,
    Array,
    AtLeast,
    AtMost,
    AtomicOp,
    BinOp,
    BufferAccess,
    BufferDecl,
    CacheLocality,
    CollectiveOp,
    DataType,
    DeviceMesh,
    Exactly,
    Handle,
    LinearType,
    MemoryHints,
    MemoryKind,
    MemoryOrdering,
    ModEquals,
    MultipleOf,
    OpaqueOp,
    OpaqueType,
    PredicateAnd,
    PredicateNot,
    PredicateOr,
    Quantized,
    QuantScale,
    QuantScaleKind,
    Scalar,
    ShapePredicate,
    SparseBsr,
    SparseCoo,
    SparseCsr,
    SubgroupReduceOp,
    TensorShaped,
    UnOp,
    Vec,
    ZeroPoint,
    ZeroPointKind,
    default_memory_kind,
    fnv1a_extension_id,
    size_bytes,
)

# -- expressions -----------------------------------------------------------------------------


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


# -- statements ------------------------------------------------------------------------------


def _as_tuples(obj: object, *names: str) -> None:
    """Store list-valued child fields as tuples so IR objects stay immutable and hashable."""
    for name in names:
        value = getattr(obj, name)
        if not isinstance(value, tuple):
            object.__setattr__(obj, name, tuple(value))


class Node:
    """Base class of every statement; ``TAG`` is the wire tag, ``OP_ID`` the record op id."""

    __slots__ = ()
    TAG: ClassVar[int] = -1
    OP_ID: ClassVar[str] = ""

    @property
    def op_id(self) -> str:
        """The node-record op id (``node_op_id`` in vyre)."""
        return self.OP_ID


@dataclass(frozen=True, slots=True)
class Let(Node):
    """Introduce binding ``name`` = ``value``."""

    TAG: ClassVar[int] = 0
    OP_ID: ClassVar[str] = "vyre.node.let"
    name: str
    value: Expr


@dataclass(frozen=True, slots=True)
class Assign(Node):
    """Reassign an existing binding."""

    TAG: ClassVar[int] = 1
    OP_ID: ClassVar[str] = "vyre.node.assign"
    name: str
    value: Expr


@dataclass(frozen=True, slots=True)
class Store(Node):
    """``buffer[index] = value``."""

    TAG: ClassVar[int] = 2
    OP_ID: ClassVar[str] = "vyre.node.store"
    buffer: str
    index: Expr
    value: Expr


@dataclass(frozen=True, slots=True)
class If(Node):
    """Two-armed conditional."""

    TAG: ClassVar[int] = 3
    OP_ID: ClassVar[str] = "vyre.node.if"
    cond: Expr
    then: tuple[Node, ...]
    otherwise: tuple[Node, ...] = ()

    def __post_init__(self) -> None:
        _as_tuples(self, "then", "otherwise")


@dataclass(frozen=True, slots=True)
class Loop(Node):
    """``for var in from_ .. to: body`` (half-open, u32)."""

    TAG: ClassVar[int] = 4
    OP_ID: ClassVar[str] = "vyre.node.loop"
    var: str
    from_: Expr
    to: Expr
    body: tuple[Node, ...]

    def __post_init__(self) -> None:
        _as_tuples(self, "body")


@dataclass(frozen=True, slots=True)
class Return(Node):
    """Early exit of the invocation."""

    TAG: ClassVar[int] = 5
    OP_ID: ClassVar[str] = "vyre.node.return"


@dataclass(frozen=True, slots=True)
class Block(Node):
    """A nested statement sequence (a lexical scope)."""

    TAG: ClassVar[int] = 6
    OP_ID: ClassVar[str] = "vyre.node.block"
    nodes: tuple[Node, ...]

    def __post_init__(self) -> None:
        _as_tuples(self, "nodes")


@dataclass(frozen=True, slots=True)
class Barrier(Node):
    """Workgroup barrier with a memory ordering."""

    TAG: ClassVar[int] = 7
    OP_ID: ClassVar[str] = "vyre.node.barrier"
    ordering: MemoryOrdering = MemoryOrdering.SEQ_CST


@dataclass(frozen=True, slots=True)
class IndirectDispatch(Node):
    """Dispatch size read from ``count_buffer`` at byte ``count_offset`` (u64)."""

    TAG: ClassVar[int] = 8
    OP_ID: ClassVar[str] = "vyre.node.indirect_dispatch"
    count_buffer: str
    count_offset: int


@dataclass(frozen=True, slots=True)
class AsyncLoad(Node):
    """Asynchronous copy ``source`` -> ``destination`` tracked by ``tag``."""

    TAG: ClassVar[int] = 9
    OP_ID: ClassVar[str] = "vyre.node.async_load"
    source: str
    destination: str
    offset: Expr
    size: Expr
    tag: str


@dataclass(frozen=True, slots=True)
class AsyncWait(Node):
    """Wait for the async copy ``tag``."""

    TAG: ClassVar[int] = 10
    OP_ID: ClassVar[str] = "vyre.node.async_wait"
    tag: str


@dataclass(frozen=True, slots=True)
class Region(Node):
    """A named region; ``source_region`` is the optional GeneratorRef name."""

    TAG: ClassVar[int] = 11
    OP_ID: ClassVar[str] = "vyre.node.region"
    generator: str
    source_region: str | None
    body: tuple[Node, ...]

    def __post_init__(self) -> None:
        _as_tuples(self, "body")


@dataclass(frozen=True, slots=True)
class AsyncStore(Node):
    """Asynchronous store ``source`` -> ``destination`` tracked by ``tag``."""

    TAG: ClassVar[int] = 12
    OP_ID: ClassVar[str] = "vyre.node.async_store"
    source: str
    destination: str
    offset: Expr
    size: Expr
    tag: str


@dataclass(frozen=True, slots=True)
class Trap(Node):
    """Raise a trap at ``address`` with ``tag``."""

    TAG: ClassVar[int] = 13
    OP_ID: ClassVar[str] = "vyre.node.trap"
    address: Expr
    tag: str


@dataclass(frozen=True, slots=True)
class Resume(Node):
    """Resume after the trap ``tag``."""

    TAG: ClassVar[int] = 14
    OP_ID: ClassVar[str] = "vyre.node.resume"
    tag: str


@dataclass(frozen=True, slots=True)
class AllReduce(Node):
    """Collective in-place reduction of ``buffer`` over comm group ``group`` (0 = world)."""

    TAG: ClassVar[int] = 15
    OP_ID: ClassVar[str] = "vyre.node.all_reduce"
    buffer: str
    op: CollectiveOp
    group: int = 0


@dataclass(frozen=True, slots=True)
class AllGather(Node):
    """Collective gather of ``input`` into ``output``."""

    TAG: ClassVar[int] = 16
    OP_ID: ClassVar[str] = "vyre.node.all_gather"
    input: str
    output: str
    group: int = 0


@dataclass(frozen=True, slots=True)
class ReduceScatter(Node):
    """Collective reduce of ``input`` scattered into ``output``."""

    TAG: ClassVar[int] = 17
    OP_ID: ClassVar[str] = "vyre.node.reduce_scatter"
    input: str
    output: str
    op: CollectiveOp
    group: int = 0


@dataclass(frozen=True, slots=True)
class Broadcast(Node):
    """Collective broadcast of ``buffer`` from rank ``root``."""

    TAG: ClassVar[int] = 18
    OP_ID: ClassVar[str] = "vyre.node.broadcast"
    buffer: str
    root: int
    group: int = 0


@dataclass(frozen=True, slots=True)
class OpaqueNode(Node):
    """An extension statement kept as raw bytes (``preserve_unknown=True``)."""

    TAG: ClassVar[int] = 0x80
    kind: str
    payload: bytes

    @property
    def op_id(self) -> str:
        """Opaque records use the extension kind as their op id."""
        return self.kind


class ExtensionNode(Node):
    """Base for typed extension statements produced by a registered decoder.

    Subclasses define ``kind``; the registered encoder turns an instance back into bytes.
    """

    __slots__ = ()
    TAG: ClassVar[int] = 0x80
    kind: ClassVar[str] = ""

    @property
    def op_id(self) -> str:
        """Extension records use the extension kind as their op id."""
        return self.kind


NODE_CLASSES: tuple[type[Node], ...] = (
    Let, Assign, Store, If, Loop, Return, Block, Barrier, IndirectDispatch, AsyncLoad,
    AsyncWait, Region, AsyncStore, Trap, Resume, AllReduce, AllGather, ReduceScatter, Broadcast,
)

ROOT_REGION_GENERATOR = "vyre.program.root"
FOREVER_VAR = "__forever__"


def forever(body: tuple[Node, ...]) -> Loop:
    """``Node::forever``: a loop from 0 to u32::MAX."""
    return Loop(FOREVER_VAR, LitU32(0), LitU32(0xFFFFFFFF), tuple(body))


# -- programs --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Program:
    """A vyre program: metadata, buffer declarations and the entry statement list.

    ``wire_version`` remembers the header version a decoded program came from (4, 5 or 6) so
    that re-encoding can reproduce it; it does not take part in equality.

    The codec sits above the IR: encode, decode and identify programs with
    :func:`vyre.to_wire`, :func:`vyre.from_wire` and :func:`vyre.fingerprint`; vyre's
    ``PartialEq`` (buffer order ignored) is :func:`vyre.wire.fingerprint.structural_eq`.
    """

    buffers: tuple[BufferDecl, ...] = ()
    entry: tuple[Node, ...] = ()
    workgroup_size: tuple[int, int, int] = (1, 1, 1)
    entry_op_id: str | None = None
    non_composable_with_self: bool = False
    wire_version: int = field(default=6, compare=False)

    def __post_init__(self) -> None:
        for name in ("buffers", "entry", "workgroup_size"):
            value = getattr(self, name)
            if not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))
        check_depth(self.entry)


    @classmethod
    def wrapped(
        cls,
        buffers: tuple[BufferDecl, ...] | list[BufferDecl],
        workgroup_size: tuple[int, int, int] | list[int],
        entry: tuple[Node, ...] | list[Node],
        **kwargs: object,
    ) -> Program:
        """``Program::wrapped``: wrap ``entry`` in a root Region unless it is all Regions.

        Args:
            buffers: buffer declarations.
            workgroup_size: (x, y, z).
            entry: top-level statements.
            **kwargs: entry_op_id, non_composable_with_self.

        Returns:
            The program.
        """
        body = tuple(entry)
        if not body or not all(isinstance(n, Region) for n in body):
            body = (Region(ROOT_REGION_GENERATOR, None, body),)
        wg = tuple(workgroup_size)
        return cls(tuple(buffers), body, wg, **kwargs)  # type: ignore[arg-type]

    @property
    def output_buffer_indices(self) -> tuple[int, ...]:
        """Indices of the ReadWrite/WriteOnly buffers (the wire output set)."""
        return tuple(i for i, b in enumerate(self.buffers) if b.is_writable)

    def buffer(self, name: str) -> BufferDecl | None:
        """The first buffer named ``name``, or None."""
        for decl in self.buffers:
            if decl.name == name:
                return decl
        return None

    def with_(self, **changes: object) -> Program:
        """A copy with ``changes`` applied (``dataclasses.replace``)."""
        return replace(self, **changes)  # type: ignore[arg-type]



# Statements and expressions nested deeper than this are refused when a Program is built:
# ==, hash, repr and every pass over the tree recurse once per level, and Python's stack
# allows about a thousand frames (the validator refuses expressions over 128 deep; the wire
# format, MAX_DECODE_DEPTH, less).
MAX_PROGRAM_DEPTH = 160


class NestingError(HurrayGPUError, ValueError):
    """A program's statements and expressions are nested deeper than MAX_PROGRAM_DEPTH."""


def check_depth(entry: tuple[Node, ...], limit: int = MAX_PROGRAM_DEPTH) -> int:
    """The nesting depth of ``entry`` (each statement and expression level counts), measured
    without recursion; over ``limit`` raises NestingError."""
    stack: list[tuple[object, int]] = [(x, 1) for x in entry]
    deepest = 0
    while stack:
        obj, depth = stack.pop()
        if depth > limit:
            raise NestingError(f"the program nests statements and expressions more than {limit} "
                               "levels deep", fix="flatten it: bind inner expressions with Let, "
                               "and move nested blocks into sequential statements.")
        deepest = max(deepest, depth)
        for name in getattr(obj, "__dataclass_fields__", ()):
            value = getattr(obj, name)
            for child in value if isinstance(value, tuple) else (value,):
                if isinstance(child, (Node, Expr)):
                    stack.append((child, depth + 1))
    return deepest


__all__ = [
    "EXPR_CLASSES", "MAX_PROGRAM_DEPTH", "NODE_CLASSES", "NestingError", "check_depth", "QUANTIZED_STORAGE", "ROOT_REGION_GENERATOR",
    "AffineRange", "AllGather", "AllReduce", "Array", "Assign", "AsyncLoad", "AsyncStore",
    "AsyncWait", "AtLeast", "AtMost", "Atomic", "AtomicOp", "Barrier", "BinOp", "Binary",
    "Block", "Broadcast", "BufLen", "BufferAccess", "BufferDecl", "BufferRef", "CacheLocality",
    "Call", "Cast", "CollectiveOp", "DataType", "DeviceMesh", "Exactly", "Expr", "ExtensionExpr",
    "ExtensionNode", "Fma", "Handle", "If", "IndirectDispatch", "InvocationId", "Let",
    "LinearType", "LitBool", "LitF32", "LitI32", "LitU32", "Load", "LocalId", "Loop",
    "MemoryHints", "MemoryKind", "MemoryOrdering", "ModEquals", "MultipleOf", "Node",
    "OpaqueExpr", "OpaqueNode", "OpaqueOp", "OpaqueType", "PredicateAnd", "PredicateNot",
    "PredicateOr", "Program", "QuantScale", "QuantScaleKind", "Quantized", "ReduceScatter",
    "Region", "Resume", "Return", "Scalar", "Select", "ShapePredicate", "SparseBsr",
    "SparseCoo", "SparseCsr", "Store", "SubgroupBallot", "SubgroupLocalId", "SubgroupReduce",
    "SubgroupReduceOp", "SubgroupShuffle", "SubgroupSize", "TensorShaped", "Trap", "UnOp",
    "Unary", "Var", "Vec", "WorkgroupId", "ZeroPoint", "ZeroPointKind", "canonical_f32_bits",
    "default_memory_kind", "fnv1a_extension_id", "forever", "size_bytes",
]
