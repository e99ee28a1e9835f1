"""The vyre IR: Program plus re-exports of every node, expression, type and enum.

All IR objects are immutable (frozen dataclasses, tuples for child lists).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from vyre.ir_buffer import (
    AffineRange,
    AtLeast,
    AtMost,
    BufferDecl,
    Exactly,
    MemoryHints,
    ModEquals,
    MultipleOf,
    PredicateAnd,
    PredicateNot,
    PredicateOr,
    ShapePredicate,
    default_memory_kind,
)
from vyre.ir_expr import (
    EXPR_CLASSES,
    Atomic,
    Binary,
    BufferRef,
    BufLen,
    Call,
    Cast,
    Expr,
    ExtensionExpr,
    Fma,
    InvocationId,
    LitBool,
    LitF32,
    LitI32,
    LitU32,
    Load,
    LocalId,
    OpaqueExpr,
    Select,
    SubgroupBallot,
    SubgroupLocalId,
    SubgroupReduce,
    SubgroupShuffle,
    SubgroupSize,
    Unary,
    Var,
    WorkgroupId,
    canonical_f32_bits,
)
from vyre.ir_node import (
    NODE_CLASSES,
    ROOT_REGION_GENERATOR,
    AllGather,
    AllReduce,
    Assign,
    AsyncLoad,
    AsyncStore,
    AsyncWait,
    Barrier,
    Block,
    Broadcast,
    ExtensionNode,
    If,
    IndirectDispatch,
    Let,
    Loop,
    Node,
    OpaqueNode,
    ReduceScatter,
    Region,
    Resume,
    Return,
    Store,
    Trap,
    forever,
)
from vyre.ir_types import (
    QUANTIZED_STORAGE,
    Array,
    AtomicOp,
    BinOp,
    BufferAccess,
    CacheLocality,
    CollectiveOp,
    DataType,
    DeviceMesh,
    Handle,
    LinearType,
    MemoryKind,
    MemoryOrdering,
    OpaqueOp,
    OpaqueType,
    Quantized,
    QuantScale,
    QuantScaleKind,
    Scalar,
    SparseBsr,
    SparseCoo,
    SparseCsr,
    SubgroupReduceOp,
    TensorShaped,
    UnOp,
    Vec,
    ZeroPoint,
    ZeroPointKind,
    fnv1a_extension_id,
    size_bytes,
)


@dataclass(frozen=True, slots=True)
class Program:
    """A vyre program: metadata, buffer declarations and the entry statement list.

    ``wire_version`` remembers the header version a decoded program came from (4, 5 or 6) so
    that re-encoding can reproduce it; it does not take part in equality.
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

    def structural_eq(self, other: Program) -> bool:
        """vyre's ``PartialEq``: buffer declaration order is ignored, entry trees must match.

        Args:
            other: the program to compare with.

        Returns:
            True when both programs are structurally equal.
        """
        from vyre.wire.fingerprint import buffer_canonical_key

        if (self.entry, self.workgroup_size, self.entry_op_id, self.non_composable_with_self) != (
            other.entry, other.workgroup_size, other.entry_op_id, other.non_composable_with_self
        ):
            return False
        return sorted(map(buffer_canonical_key, self.buffers)) == sorted(
            map(buffer_canonical_key, other.buffers)
        )

    def with_(self, **changes: object) -> Program:
        """A copy with ``changes`` applied (``dataclasses.replace``)."""
        return replace(self, **changes)  # type: ignore[arg-type]

    def to_wire(self, *, version: int | None = None) -> bytes:
        """Encode to VIR0 bytes; see :func:`vyre.wire.encode.to_wire`."""
        from vyre.wire.encode import to_wire

        return to_wire(self, version=version)

    @classmethod
    def from_wire(cls, data: bytes, *, preserve_unknown: bool = False) -> Program:
        """Decode VIR0 bytes; see :func:`vyre.wire.decode.from_wire`."""
        from vyre.wire.decode import from_wire

        return from_wire(data, preserve_unknown=preserve_unknown)

    def fingerprint(self) -> bytes:
        """blake3 of the canonical wire bytes; 32 raw bytes."""
        from vyre.wire.fingerprint import fingerprint

        return fingerprint(self)


__all__ = [
    "EXPR_CLASSES", "NODE_CLASSES", "QUANTIZED_STORAGE", "ROOT_REGION_GENERATOR",
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
