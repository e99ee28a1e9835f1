"""vyre IR statements: one frozen dataclass per node tag of the vyre 0.7.2 wire format."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from vyre.ir_expr import Expr, LitU32
from vyre.ir_types import CollectiveOp, MemoryOrdering


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
