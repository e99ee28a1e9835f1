"""The vyre validator's shared vocabulary: diagnostics, type names and casts, static typing.

Diagnostics and options are what :func:`vyre.validate` reports; the cast and store tables
follow vyre 0.7.2's validator. Every walk here is iterative so that hostile, deeply nested
expressions never hit Python's recursion limit. Expressions are keyed by ``id()`` because
hashing a frozen IR tree recurses; only scalar types take part in the non-identity cast
rules, so composite types are never hashed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from vyre.ir import (
    Array,
    Atomic,
    Binary,
    BinOp,
    BufferDecl,
    BufferRef,
    BufLen,
    Call,
    Cast,
    DataType,
    DeviceMesh,
    Expr,
    ExtensionExpr,
    Fma,
    Handle,
    InvocationId,
    LitBool,
    LitF32,
    LitI32,
    LitU32,
    Load,
    LocalId,
    OpaqueExpr,
    OpaqueType,
    Quantized,
    QuantScaleKind,
    Scalar,
    Select,
    SparseBsr,
    SparseCoo,
    SparseCsr,
    SubgroupBallot,
    SubgroupLocalId,
    SubgroupReduce,
    SubgroupShuffle,
    SubgroupSize,
    TensorShaped,
    Unary,
    UnOp,
    Var,
    Vec,
    WorkgroupId,
    ZeroPointKind,
)

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One validator finding.

    Attributes:
        code: the reference rule code (``"V105"``, ``"V041"``, ...).
        severity: ``"error"`` or ``"warning"`` (only V035 is a warning).
        message: what is wrong; ends with a ``Fix:`` hint.
        location: path of the offending statement or declaration, e.g. ``"entry[0].body[3]"``,
            ``"buffers[2]"``, ``"workgroup_size[0]"``, or ``"entry"`` / ``"program"``.
        node: pre-order index of the statement (the reference's ``Node(n)`` /
            ``Expression { node: n }``); for V105 the reference's traversal ordinal (the index
            of the offending top-level node, 0 for an empty entry); None for the other
            program-level findings.
        expr_path: path of the offending sub-expression inside that statement, e.g.
            ``"value.args[4]"``; empty when the finding is about the statement itself.
        phase: the reference's validation phase (Program, Node, Expression, Type, Memory,
            Limits, Composition).
    """

    code: str
    severity: str
    message: str
    location: str
    node: int | None = None
    expr_path: str = ""
    phase: str = "Program"

    @property
    def is_error(self) -> bool:
        """True for errors, False for warnings."""
        return self.severity == ERROR

    def __str__(self) -> str:
        where = self.location + (f" ({self.expr_path})" if self.expr_path else "")
        return f"{self.code} {self.severity} at {where}: {self.message}"


@dataclass(frozen=True, slots=True)
class ValidationOptions:
    """The reference's ``ValidationOptions``; the defaults are ``ValidationOptions::default()``.

    Attributes:
        allow_shadowing: nested Let/loop names may shadow outer ones (V008 off; V032 stays).
        subgroup_ops: the backend supports subgroup expressions (V041 off).
        distributed_collectives: the backend supports collective nodes (V046 capability off).
        cast_targets: when not None, the backend's supported cast targets (V034 otherwise).
    """

    allow_shadowing: bool = False
    subgroup_ops: bool = False
    distributed_collectives: bool = False
    cast_targets: frozenset[DataType] | None = None


@dataclass(slots=True)
class Where:
    """Where the walk currently is: statement path, its pre-order index, expression path."""

    location: str
    node: int | None = None
    expr_path: str = ""

    def at(self, label: str) -> Where:
        """The same statement, one expression field deeper."""
        path = f"{self.expr_path}.{label}" if self.expr_path else label
        return Where(self.location, self.node, path)


@dataclass(slots=True)
class Sink:
    """Collects diagnostics in the order the reference reports them."""

    items: list[Diagnostic] = field(default_factory=list)

    def error(self, code: str, phase: str, where: Where, cause: str, fix: str) -> None:
        """Record an error; the message is ``cause. Fix: fix``."""
        self._add(code, ERROR, phase, where, cause, fix)

    def warning(self, code: str, phase: str, where: Where, cause: str, fix: str) -> None:
        """Record a warning."""
        self._add(code, WARNING, phase, where, cause, fix)

    def _add(self, code: str, severity: str, phase: str, where: Where, cause: str,
             fix: str) -> None:
        message = f"{cause.rstrip('.')}. Fix: {fix}"
        self.items.append(
            Diagnostic(code, severity, message, where.location, where.node, where.expr_path,
                       phase)
        )


# --- type names ---------------------------------------------------------------------------


U32, I32, U64, I64, F32, BOOL, BYTES = (
    Scalar.U32, Scalar.I32, Scalar.U64, Scalar.I64, Scalar.F32, Scalar.BOOL, Scalar.BYTES,
)

_SCALAR_NAMES: dict[Scalar, str] = {
    Scalar.U32: "u32", Scalar.I32: "i32", Scalar.U64: "u64", Scalar.VEC2_U32: "vec2<u32>",
    Scalar.VEC4_U32: "vec4<u32>", Scalar.BOOL: "bool", Scalar.BYTES: "bytes", Scalar.F16: "f16",
    Scalar.BF16: "bf16", Scalar.F32: "f32", Scalar.F64: "f64", Scalar.TENSOR: "tensor",
    Scalar.U8: "u8", Scalar.U16: "u16", Scalar.I8: "i8", Scalar.I16: "i16", Scalar.I64: "i64",
    Scalar.F8E4M3: "f8e4m3", Scalar.F8E5M2: "f8e5m2", Scalar.I4: "i4", Scalar.FP4: "fp4",
    Scalar.NF4: "nf4",
}


def type_name(dtype: DataType) -> str:
    """The reference's ``Display`` spelling of a DataType (``u32``, ``vec<f32;4>``, ...).

    Args:
        dtype: the data type.

    Returns:
        Its display string.
    """
    parts: list[str] = []
    stack: list[object] = [dtype]
    # Iterative so that a hostile, deeply nested Vec<Vec<...>> cannot recurse.
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, Scalar):
            parts.append(_SCALAR_NAMES.get(item, item.name.lower()))
        elif isinstance(item, Array):
            parts.append(f"array<{item.element_size}B>")
        elif isinstance(item, Handle):
            parts.append(f"handle<0x{item.type_id:08x}>")
        elif isinstance(item, Vec):
            stack.extend([f";{item.count}>", item.element, "vec<"])
        elif isinstance(item, TensorShaped):
            dims = "x".join(str(d) for d in item.shape)
            stack.extend([f";{dims}>", item.element, "tensor<"])
        elif isinstance(item, (SparseCsr, SparseCoo)):
            prefix = "sparse_csr<" if isinstance(item, SparseCsr) else "sparse_coo<"
            stack.extend([">", item.element, prefix])
        elif isinstance(item, SparseBsr):
            stack.extend([f";{item.block_rows}x{item.block_cols}>", item.element, "sparse_bsr<"])
        elif isinstance(item, DeviceMesh):
            parts.append("device_mesh<" + "x".join(str(a) for a in item.axes) + ">")
        elif isinstance(item, Quantized):
            stack.extend([f";{_scale_name(item)};{_zero_point_name(item)}>", item.storage,
                          "quantized<"])
        elif isinstance(item, OpaqueType):
            parts.append(f"opaque<0x{item.id:08x}>")
        else:
            parts.append(repr(item))
    return "".join(parts)


def _scale_name(dtype: Quantized) -> str:
    kind = dtype.scale.kind
    if kind == QuantScaleKind.PER_CHANNEL:
        return f"scale:per_channel(axis={dtype.scale.param})"
    if kind == QuantScaleKind.PER_GROUP:
        return f"scale:per_group(size={dtype.scale.param})"
    return "scale:per_tensor"


def _zero_point_name(dtype: Quantized) -> str:
    kind = dtype.zero_point.kind
    if kind == ZeroPointKind.PER_TENSOR:
        return "zp:per_tensor"
    if kind == ZeroPointKind.PER_CHANNEL:
        return f"zp:per_channel(axis={dtype.zero_point.param})"
    if kind == ZeroPointKind.PER_GROUP:
        return f"zp:per_group(size={dtype.zero_point.param})"
    return "zp:absent"


def debug_name(member: object) -> str:
    """Rust ``Debug`` spelling of an enum member (``SATURATING_ADD`` -> ``SaturatingAdd``)."""
    name = getattr(member, "name", None)
    if not isinstance(name, str):
        return repr(member)
    return "".join(part.capitalize() for part in name.split("_"))


# --- casts (validate/cast.rs) -------------------------------------------------------------

_INTEGER_LIKE = frozenset({
    Scalar.U8, Scalar.U16, Scalar.U32, Scalar.U64, Scalar.I8, Scalar.I16, Scalar.I32, Scalar.I64,
    Scalar.BOOL,
})
V2, V4 = Scalar.VEC2_U32, Scalar.VEC4_U32
_EXTRA_CASTS = frozenset({
    (U32, V2), (U32, V4), (I32, V2), (I32, V4), (BOOL, V2), (BOOL, V4), (U64, V2),
    (V2, U32), (V2, I32), (V2, U64), (V2, BOOL), (V4, U32), (V4, I32), (V4, V2), (V4, BOOL),
    (V4, U64), (U32, F32), (I32, F32), (BOOL, F32), (F32, U32), (F32, I32), (F32, BOOL),
    (F32, Scalar.F16), (F32, Scalar.BF16), (Scalar.F16, F32), (Scalar.BF16, F32),
})
_INT_BITS = {
    Scalar.U8: 8, Scalar.I8: 8, Scalar.U16: 16, Scalar.I16: 16, Scalar.U32: 32, Scalar.I32: 32,
    Scalar.U64: 64, Scalar.I64: 64,
}
# Candidate order of the legal-target list in V012/V035 messages (identity first).
_CAST_CANDIDATES: tuple[Scalar, ...] = (
    Scalar.U8, Scalar.U16, Scalar.U32, Scalar.U64, Scalar.I8, Scalar.I16, Scalar.I32, Scalar.I64,
    Scalar.BOOL, Scalar.BYTES, V2, V4, Scalar.F16, Scalar.BF16, F32,
)


def cast_is_valid(source: DataType, target: DataType) -> bool:
    """Whether ``source -> target`` is in the reference's closed cast matrix."""
    if source == target:
        return True
    # Only scalars can take part in the non-identity casts; testing that first avoids
    # hashing composite types.
    if not (isinstance(source, Scalar) and isinstance(target, Scalar)):
        return False
    if source in _INTEGER_LIKE and target in _INTEGER_LIKE:
        return True
    return (source, target) in _EXTRA_CASTS


def cast_is_narrowing(source: DataType, target: DataType) -> bool:
    """Whether an integer cast drops high bits (V035, a warning)."""
    if not (isinstance(source, Scalar) and isinstance(target, Scalar)):
        return False
    src, dst = _INT_BITS.get(source), _INT_BITS.get(target)
    return src is not None and dst is not None and dst < src


def cast_target_set(source: DataType) -> str:
    """The legal targets of ``source`` formatted as in the reference's diagnostics."""
    targets: list[DataType] = []
    for target in (source, *_CAST_CANDIDATES):
        if cast_is_valid(source, target) and target not in targets:
            targets.append(target)
    return "[" + ", ".join(f"`{type_name(t)}`" for t in targets) + "]"


_STORE_PAIRS = frozenset({
    (U32, BYTES), (BYTES, U32), (U32, BOOL), (BOOL, U32), (U32, I32), (I32, U32), (U64, I64),
    (I64, U64),
})


def store_compatible(value: DataType, element: DataType) -> bool:
    """Store compatibility: equal, or U32<->Bytes/Bool/I32, or U64<->I64 (vyre 0.7.2 validator)."""
    if value == element:
        return True
    return isinstance(value, Scalar) and isinstance(element, Scalar) and (
        (value, element) in _STORE_PAIRS
    )


@dataclass(slots=True)
class Binding:
    """A visible local: its static type, whether that type was inferred, mutability, uniformity."""

    ty: DataType
    ty_known: bool
    mutable: bool
    uniform: bool


Scope = dict[str, Binding]
Buffers = dict[str, BufferDecl]


# --- expression children ------------------------------------------------------------------


def expr_children(expr: Expr) -> tuple[tuple[str, Expr], ...]:
    """The direct sub-expressions of ``expr`` with their field labels, in declared order."""
    if isinstance(expr, Binary):
        return (("left", expr.left), ("right", expr.right))
    if isinstance(expr, Unary):
        return (("operand", expr.operand),)
    if isinstance(expr, Load):
        return (("index", expr.index),)
    if isinstance(expr, Cast):
        return (("value", expr.value),)
    if isinstance(expr, Call):
        return tuple((f"args[{i}]", arg) for i, arg in enumerate(expr.args))
    if isinstance(expr, Select):
        return (("cond", expr.cond), ("true_val", expr.true_val), ("false_val", expr.false_val))
    if isinstance(expr, Fma):
        return (("a", expr.a), ("b", expr.b), ("c", expr.c))
    if isinstance(expr, Atomic):
        if expr.expected is None:
            return (("index", expr.index), ("value", expr.value))
        return (("index", expr.index), ("expected", expr.expected), ("value", expr.value))
    if isinstance(expr, SubgroupReduce):
        return (("value", expr.value),)
    if isinstance(expr, SubgroupShuffle):
        return (("value", expr.value), ("lane", expr.lane))
    if isinstance(expr, SubgroupBallot):
        return (("cond", expr.cond),)
    return ()


def iter_exprs(root: Expr) -> Iterator[Expr]:
    """Every expression under ``root`` (pre-order, iterative)."""
    stack = [root]
    while stack:
        expr = stack.pop()
        yield expr
        stack.extend(child for _, child in reversed(expr_children(expr)))


# --- expr_type (validate/typecheck/expr_type.rs) -------------------------------------------

_U32_LEAVES = (LitU32, BufLen, InvocationId, WorkgroupId, LocalId, SubgroupLocalId, SubgroupSize)
_PREDICATE_OPS = frozenset({
    BinOp.EQ, BinOp.NE, BinOp.LT, BinOp.GT, BinOp.LE, BinOp.GE, BinOp.AND, BinOp.OR,
})
ARITH_RESULT_OPS = frozenset({
    BinOp.ADD, BinOp.SUB, BinOp.MUL, BinOp.DIV, BinOp.SATURATING_ADD, BinOp.SATURATING_SUB,
    BinOp.SATURATING_MUL, BinOp.MIN, BinOp.MAX,
})
SAME_TYPE_UNOPS = frozenset({
    UnOp.NEGATE, UnOp.BIT_NOT, UnOp.POPCOUNT, UnOp.CLZ, UnOp.CTZ, UnOp.REVERSE_BITS,
})
BOOL_UNOPS = frozenset({UnOp.LOGICAL_NOT, UnOp.IS_NAN, UnOp.IS_INF, UnOp.IS_FINITE})
FLOAT_UNOPS = frozenset({
    UnOp.SIN, UnOp.COS, UnOp.EXP, UnOp.LOG, UnOp.LOG2, UnOp.EXP2, UnOp.TAN, UnOp.ACOS,
    UnOp.ASIN, UnOp.ATAN, UnOp.TANH, UnOp.SINH, UnOp.COSH, UnOp.ABS, UnOp.SQRT,
    UnOp.INVERSE_SQRT, UnOp.RECIPROCAL, UnOp.FLOOR, UnOp.CEIL, UnOp.ROUND, UnOp.TRUNC,
    UnOp.SIGN,
})
UNPACK_UNOPS = frozenset({
    UnOp.UNPACK4_LOW, UnOp.UNPACK4_HIGH, UnOp.UNPACK8_LOW, UnOp.UNPACK8_HIGH,
})


def extension_result_type(expr: Expr) -> DataType | None:
    """``result_type()`` of an extension expression; raw opaque payloads have none."""
    hook = getattr(expr, "result_type", None)
    if callable(hook):
        try:
            result = hook()
        except Exception:  # noqa: BLE001 - a broken extension hook means "no static type"
            return None
        return result  # type: ignore[no-any-return]
    return None


def _combine(expr: Expr, kids: list[DataType | None]) -> DataType | None:
    """The type of ``expr`` given the types of its children (same order as expr_children)."""
    if isinstance(expr, Binary):
        if isinstance(expr.op, BinOp) and expr.op in _PREDICATE_OPS:
            return BOOL
        if isinstance(expr.op, BinOp) and expr.op in ARITH_RESULT_OPS:
            left, right = kids
            return left if left is not None and left == right else U32
        return U32
    if isinstance(expr, Unary):
        op = expr.op
        if isinstance(op, UnOp) and op in SAME_TYPE_UNOPS:
            return kids[0]
        if isinstance(op, UnOp) and op in BOOL_UNOPS:
            return BOOL
        if isinstance(op, UnOp) and op in FLOAT_UNOPS:
            return F32
        return None
    if isinstance(expr, Cast):
        return expr.target
    if isinstance(expr, Select):
        return kids[1] if kids[1] == kids[2] else None
    if isinstance(expr, Fma):
        return F32 if all(k == F32 for k in kids) else None
    if isinstance(expr, (Atomic, SubgroupBallot)):
        return U32
    if isinstance(expr, (SubgroupShuffle, SubgroupReduce)):
        return kids[0]
    return None


def _leaf_type(expr: Expr, buffers: Buffers, scope: Scope) -> tuple[bool, DataType | None]:
    """(is_leaf, type) for expressions whose type does not depend on children."""
    if isinstance(expr, _U32_LEAVES):
        return True, U32
    if isinstance(expr, LitI32):
        return True, I32
    if isinstance(expr, LitF32):
        return True, F32
    if isinstance(expr, LitBool):
        return True, BOOL
    if isinstance(expr, Var):
        binding = scope.get(expr.name)
        return True, None if binding is None else binding.ty
    if isinstance(expr, Load):
        decl = buffers.get(expr.buffer)
        return True, None if decl is None else decl.element
    if isinstance(expr, (Call, BufferRef)):
        return True, None
    if isinstance(expr, (OpaqueExpr, ExtensionExpr)):
        return True, extension_result_type(expr)
    return False, None


class TypeMemo:
    """Memoized ``expr_type`` for one scope snapshot (keyed by ``id`` of each expression)."""

    def __init__(self, buffers: Buffers, scope: Scope) -> None:
        self.buffers = buffers
        self.scope = scope
        self._types: dict[int, DataType | None] = {}

    def type_of(self, root: Expr) -> DataType | None:
        """The static type of ``root``, or None when it cannot be inferred."""
        key = id(root)
        if key in self._types:
            return self._types[key]
        stack: list[tuple[Expr, bool]] = [(root, False)]
        while stack:
            expr, expanded = stack.pop()
            if id(expr) in self._types:
                continue
            is_leaf, leaf_ty = _leaf_type(expr, self.buffers, self.scope)
            if is_leaf:
                self._types[id(expr)] = leaf_ty
                continue
            children = expr_children(expr)
            if expanded or not children:
                kids = [self._types.get(id(child)) for _, child in children]
                self._types[id(expr)] = _combine(expr, kids)
                continue
            stack.append((expr, True))
            stack.extend((child, False) for _, child in reversed(children))
        return self._types[key]


def expr_type(expr: Expr, buffers: Buffers, scope: Scope) -> DataType | None:
    """The static type of ``expr`` as vyre 0.7.2's validator infers it, or None if unknown."""
    return TypeMemo(buffers, scope).type_of(expr)


# --- uniformity (validate/uniformity.rs) ---------------------------------------------------

_UNIFORM_LEAVES = (LitU32, LitI32, LitF32, LitBool, BufLen, WorkgroupId)
_UNIFORM_INNER = (Binary, Unary, Cast, Select, Fma)


def is_uniform(
    expr: Expr, scope: Scope, load_policy: Callable[[str], bool] | None = None
) -> bool:
    """Whether ``expr`` is provably workgroup-uniform.

    Args:
        expr: the expression.
        scope: visible bindings (a Var is uniform only when its binding says so).
        load_policy: when given, a Load whose index is uniform and whose buffer the policy
            accepts counts as uniform (the barrier-settled loads of the V055 analysis).

    Returns:
        True only when every leaf is uniform.
    """
    stack = [expr]
    while stack:
        item = stack.pop()
        if isinstance(item, _UNIFORM_LEAVES):
            continue
        if isinstance(item, Var):
            binding = scope.get(item.name)
            if binding is None or not binding.uniform:
                return False
            continue
        if isinstance(item, _UNIFORM_INNER):
            stack.extend(child for _, child in expr_children(item))
            continue
        if isinstance(item, Load) and load_policy is not None and load_policy(item.buffer):
            stack.append(item.index)
            continue
        return False
    return True


# --- buffer accesses (validate/fusion_safety.rs) -------------------------------------------


def collect_accesses(expr: Expr, reads: set[str], atomics: set[str]) -> None:
    """Add the buffers ``expr`` reads non-atomically (Load, BufLen) and atomically."""
    for item in iter_exprs(expr):
        if isinstance(item, (Load, BufLen)):
            reads.add(item.buffer)
        elif isinstance(item, Atomic):
            atomics.add(item.buffer)
