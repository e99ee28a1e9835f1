"""Static analysis helpers of the vyre validator: expression types, uniformity, accesses.

Every walk here is iterative so that hostile, deeply nested expressions never hit Python's
recursion limit. Expressions are keyed by ``id()`` because hashing a frozen IR tree recurses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from vyre.ir import (
    Atomic,
    Binary,
    BinOp,
    BufferDecl,
    BufferRef,
    BufLen,
    Call,
    Cast,
    DataType,
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
    UnOp,
    Var,
    WorkgroupId,
)
from vyre.validate_casts import (
    BOOL,
    BYTES,
    F32,
    I32,
    I64,
    U32,
    U64,
    cast_is_narrowing,
    cast_is_valid,
    cast_target_set,
    debug_name,
    store_compatible,
    type_name,
)

__all__ = [
    "ARITH_RESULT_OPS", "BOOL", "BOOL_UNOPS", "BYTES", "F32", "FLOAT_UNOPS", "I32", "I64",
    "SAME_TYPE_UNOPS", "U32", "U64", "UNPACK_UNOPS", "Binding", "Buffers", "Scope", "TypeMemo",
    "cast_is_narrowing", "cast_is_valid", "cast_target_set", "collect_accesses", "debug_name",
    "expr_children", "expr_type", "extension_result_type", "is_uniform", "iter_exprs",
    "store_compatible", "type_name",
]


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
