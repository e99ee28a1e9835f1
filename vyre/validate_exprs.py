"""Expression rules of the vyre validator (``validate/expr_rules.rs``, ``typecheck/operands.rs``).

Children are validated before the parent's own typing checks, except the subgroup capability
(V041), buffer-reference (V051) and atomic rules, which the reference reports on entry.
``Call`` expressions are checked against the op-signature registry kept here: vyre resolves
op ids in a link-time ``OperationRegistry``; the Python port keeps an explicit registry
instead. It starts empty, so every call is V016 until its op is registered.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from vyre.ir import (
    Atomic,
    AtomicOp,
    Binary,
    BinOp,
    BufferAccess,
    BufferRef,
    BufLen,
    Call,
    Cast,
    DataType,
    Expr,
    ExtensionExpr,
    Fma,
    InvocationId,
    LitF32,
    LitI32,
    LitU32,
    Load,
    LocalId,
    MemoryOrdering,
    OpaqueExpr,
    OpaqueOp,
    Scalar,
    Select,
    SubgroupBallot,
    SubgroupLocalId,
    SubgroupReduce,
    SubgroupReduceOp,
    SubgroupShuffle,
    SubgroupSize,
    Unary,
    UnOp,
    Var,
    WorkgroupId,
)
from vyre.validate_types import (
    BOOL,
    BYTES,
    F32,
    FLOAT_UNOPS,
    I32,
    I64,
    U32,
    U64,
    UNPACK_UNOPS,
    Buffers,
    Sink,
    TypeMemo,
    ValidationOptions,
    Where,
    cast_is_narrowing,
    cast_is_valid,
    cast_target_set,
    debug_name,
    expr_children,
    extension_result_type,
    type_name,
)

MAX_EXPR_DEPTH = 128
EXPRESSION, MEMORY, LIMITS, TYPE = "Expression", "Memory", "Limits", "Type"
_SUBGROUP = (SubgroupBallot, SubgroupShuffle, SubgroupReduce, SubgroupLocalId, SubgroupSize)
_BITWISE_REDUCE = frozenset({SubgroupReduceOp.AND, SubgroupReduceOp.OR, SubgroupReduceOp.XOR})


class ExprValidator:
    """Validates the expressions of one statement against the current scope snapshot."""

    def __init__(self, buffers: Buffers, memo: TypeMemo, options: ValidationOptions,
                 sink: Sink) -> None:
        self.buffers = buffers
        self.memo = memo
        self.scope = memo.scope
        self.options = options
        self.sink = sink

    def validate(self, root: Expr, where: Where) -> None:
        """Validate ``root`` (depth 0) and every sub-expression up to depth 128."""
        # Frames: (expr, where, depth, is_call_arg, post). A post frame runs the parent's own
        # checks after its children, which is the reference's order.
        stack: list[tuple[Expr, Where, int, bool, bool]] = [(root, where, 0, False, False)]
        while stack:
            expr, at, depth, is_arg, post = stack.pop()
            if post:
                self._post(expr, at)
                continue
            if depth > MAX_EXPR_DEPTH:
                self.sink.error("V033", LIMITS, at, f"expression nesting depth {depth} exceeds "
                                f"max {MAX_EXPR_DEPTH}", "split the expression into intermediate "
                                "let-bindings before lowering.")
                continue
            self._pre(expr, at, is_arg)
            stack.append((expr, at, depth, is_arg, True))
            is_call = isinstance(expr, Call)
            for label, child in reversed(expr_children(expr)):
                stack.append((child, at.at(label), depth + 1, is_call, False))

    def _pre(self, expr: Expr, at: Where, is_arg: bool) -> None:
        sink = self.sink
        if isinstance(expr, Var):
            if expr.name not in self.scope:
                sink.error("V066", EXPRESSION, at, f"reference to undeclared variable "
                           f"`{expr.name}`", f"add `let {expr.name} = ...;` before this use.")
        elif isinstance(expr, BufferRef):
            if not is_arg:
                sink.error("V051", EXPRESSION, at, f"buffer reference `{expr.buffer}` is not a "
                           "value and is legal only as a call argument", "pass it directly as "
                           "an argument to a composite op, or use `Expr::Load { buffer: "
                           f"{expr.buffer}, index }}` to read an element.")
        elif isinstance(expr, Load):
            self._check_load(expr, at)
        elif isinstance(expr, BufLen):
            if expr.buffer not in self.buffers:
                sink.error("V067", EXPRESSION, at, f"buflen of unknown buffer `{expr.buffer}`",
                           "declare it in Program::buffers.")
        elif isinstance(expr, (InvocationId, WorkgroupId, LocalId)):
            if not 0 <= expr.axis <= 2:
                sink.error("V068", EXPRESSION, at, f"invocation/workgroup ID axis {expr.axis} "
                           "out of range", "use 0 (x), 1 (y), or 2 (z).")
        elif isinstance(expr, Atomic):
            check_atomic(expr, self.buffers, self.memo, sink, at)
        elif isinstance(expr, _SUBGROUP):
            self._check_subgroup(expr, at)
        elif isinstance(expr, (OpaqueExpr, ExtensionExpr)):
            self._check_opaque(expr, at)

    def _check_load(self, expr: Load, at: Where) -> None:
        decl = self.buffers.get(expr.buffer)
        if decl is None:
            self.sink.error("V065", MEMORY, at, f"load from unknown buffer `{expr.buffer}`",
                            "declare it in Program::buffers.")
        elif decl.element == BYTES and not decl.bytes_extraction:
            self.sink.error("V013", MEMORY, at, f"load from buffer `{expr.buffer}` with element "
                            "type `bytes` is not supported", "declare the buffer with a typed "
                            "element (U32/I32/F32/...) or with `.with_bytes_extraction(true)` "
                            "when the consuming op is a dedicated bytes-extraction op.")

    def _check_subgroup(self, expr: Expr, at: Where) -> None:
        if not self.options.subgroup_ops:
            self.sink.error("V041", EXPRESSION, at, "subgroup expressions require backend "
                            "subgroup-ops support", "Validate with ValidationOptions::"
                            "with_backend(backend) where backend.supports_subgroup_ops() == "
                            "true.")
        if (isinstance(expr, SubgroupReduce) and expr.op in _BITWISE_REDUCE
                and self.memo.type_of(expr.value) == F32):
            self.sink.error("V047", EXPRESSION, at, f"bitwise subgroup reduction "
                            f"`{expr.op.name.capitalize()}` given an f32 operand",
                            "use an integer operand for `And`/`Or`/`Xor`, or use "
                            "`Add`/`Mul`/`Min`/`Max` for a float reduction.")

    def _check_opaque(self, expr: Expr, at: Where) -> None:
        kind = getattr(expr, "kind", "")
        identity = debug_identity(expr, kind)
        fix = ("return a stable non-empty `extension_kind`, a human-readable `debug_identity`, "
               "and an explicit `result_type`, and pass `validate_extension`.")
        if not kind:
            self.sink.error("V030", EXPRESSION, at, "opaque expression extension has an empty "
                            "extension_kind", fix)
        if not identity:
            self.sink.error("V030", EXPRESSION, at, f"opaque expression extension `{kind}` has an "
                            "empty debug_identity", fix)
        if extension_result_type(expr) is None:
            self.sink.error("V030", EXPRESSION, at, f"opaque expression extension "
                            f"`{kind}`/`{identity}` has no static result type", fix)
        problem = extension_problem(expr)
        if problem is not None:
            self.sink.error("V030", EXPRESSION, at, f"opaque expression extension "
                            f"`{kind}`/`{identity}` failed validation: {problem}", fix)

    def _post(self, expr: Expr, at: Where) -> None:
        memo, sink = self.memo, self.sink
        if isinstance(expr, Binary):
            check_binop(expr.op, memo.type_of(expr.left), memo.type_of(expr.right), expr.right,
                        sink, at)
        elif isinstance(expr, Unary):
            check_unop(expr.op, memo.type_of(expr.operand), sink, at)
        elif isinstance(expr, Call):
            self._check_call(expr, at)
        elif isinstance(expr, Fma):
            for slot, operand in (("a", expr.a), ("b", expr.b), ("c", expr.c)):
                ty = memo.type_of(operand)
                if ty is not None and ty != F32:
                    sink.error("V028", TYPE, at, f"Fma requires three f32 operands. Fma operand "
                               f"`{slot}` has type `{type_name(ty)}`, must be `f32`", "cast the "
                               "operand to F32 before Fma, or use the integer mul/add form "
                               "explicitly.")
        elif isinstance(expr, Select):
            true_ty, false_ty = memo.type_of(expr.true_val), memo.type_of(expr.false_val)
            if true_ty is not None and false_ty is not None and true_ty != false_ty:
                sink.error("V029", EXPRESSION, at, "Select branches have mismatched types: "
                           f"true=`{type_name(true_ty)}`, false=`{type_name(false_ty)}`",
                           "cast both branches to the same type before Select.")
        elif isinstance(expr, Cast):
            self._check_cast(expr, at)

    def _check_cast(self, expr: Cast, at: Where) -> None:
        target, sink = expr.target, self.sink
        targets = self.options.cast_targets
        if targets is not None and target not in targets:
            sink.error("V034", EXPRESSION, at, f"backend does not support cast target "
                       f"`{type_name(target)}`", "choose a target type the backend supports, or "
                       "validate against a backend that advertises that cast support.")
        source = self.memo.type_of(expr.value)
        if source is None:
            return
        if target == BYTES and source != BYTES:
            sink.error("V023", EXPRESSION, at, "cast to Bytes is unsupported in target-text "
                       "lowering", "use buffer load/store directly for byte data.")
        elif not cast_is_valid(source, target):
            src = type_name(source)
            sink.error("V012", EXPRESSION, at, f"unsupported cast from `{src}` to "
                       f"`{type_name(target)}`. Source type `{src}` legal targets are "
                       f"{cast_target_set(source)}. Choose one of those targets or rewrite this "
                       "cast expression before validation", "rewrite the program to satisfy "
                       "this validation invariant.")
        elif cast_is_narrowing(source, target):
            src = type_name(source)
            sink.warning("V035", TYPE, at, f"narrowing cast from `{src}` to `{type_name(target)}` "
                         "may truncate high bits", "use a non-narrowing target, or prove the "
                         "source value fits before casting.")

    def _check_call(self, expr: Call, at: Where) -> None:
        sink, op_id = self.sink, expr.op_id
        signature = lookup_op(op_id)
        if signature is None or signature.inputs is None:
            sink.error("V016", EXPRESSION, at, f"call references unknown op `{op_id}`",
                       f"submit one canonical OperationRegistration for `{op_id}` or "
                       "inline/remove this call.")
            return
        params = signature.inputs
        if len(expr.args) != len(params):
            sink.error("V020", EXPRESSION, at, f"call `{op_id}` has {len(expr.args)} arguments "
                       f"but signature expects {len(params)}", f"pass exactly {len(params)} "
                       "arguments in the order declared by the op signature.")
            return
        for index, (arg, param) in enumerate(zip(expr.args, params, strict=True)):
            self._check_call_arg(op_id, index, arg, param.name, param.ty, at.at(f"args[{index}]"))

    def _check_call_arg(self, op_id: str, index: int, arg: Expr, pname: str, spelling: str,
                        at: Where) -> None:
        sink = self.sink
        is_buffer, expected = parse_spelling(spelling)
        if expected is None:
            sink.error("V021", EXPRESSION, at, f"call `{op_id}` signature input `{pname}` uses "
                       f"unknown type spelling `{spelling}`", "register a foundation-known "
                       "scalar/vector type spelling for this parameter or validate it in the "
                       "dialect layer.")
            return
        if is_buffer:
            if not isinstance(arg, BufferRef):
                sink.error("V053", EXPRESSION, at, f"call `{op_id}` argument {index} (`{pname}`) "
                           f"takes `{spelling}` but was passed a value", "pass "
                           "`Expr::buffer_ref(name)` naming the buffer the op should read.")
                return
            decl = self.buffers.get(arg.buffer)
            if decl is None:
                sink.error("V052", EXPRESSION, at, f"call `{op_id}` argument {index} references "
                           f"undeclared buffer `{arg.buffer}`", "declare the buffer in "
                           "`Program::buffers`.")
            elif decl.element != expected:
                sink.error("V054", EXPRESSION, at, f"call `{op_id}` argument {index} passes "
                           f"buffer `{arg.buffer}` of `{type_name(decl.element)}` for "
                           f"`{spelling}`", "pass a buffer whose element type matches "
                           "`buffer<T>`, or change the op signature.")
            return
        actual = self.memo.type_of(arg)
        if actual is not None and actual != expected:
            sink.error("V022", EXPRESSION, at, f"call `{op_id}` argument {index} (`{pname}`) has "
                       f"type `{type_name(actual)}` but signature expects "
                       f"`{type_name(expected)}`", "cast or rewrite the argument to match the "
                       "registered op signature.")


def debug_identity(ext: object, kind: str) -> str:
    """``debug_identity()`` of an extension (its kind when it has no hook; "" when it fails)."""
    hook = getattr(ext, "debug_identity", None)
    if callable(hook):
        try:
            value = hook()
        except Exception:  # noqa: BLE001 - a failing hook counts as "no identity"
            return ""
        return value if isinstance(value, str) else ""
    if isinstance(hook, str):
        return hook
    return kind


def extension_problem(ext: object) -> str | None:
    """The error ``validate_extension()`` reports, or None when it passes or is absent."""
    hook = getattr(ext, "validate_extension", None)
    if not callable(hook):
        return None
    try:
        result = hook()
    except Exception as exc:  # noqa: BLE001 - an extension's failure is its validation error
        return str(exc) or type(exc).__name__
    return result if isinstance(result, str) and result else None


# -- operand typing: binary, unary and atomic rules -------------------------------------------


NUMERIC_OPS = frozenset({
    BinOp.ADD, BinOp.SUB, BinOp.MUL, BinOp.DIV, BinOp.SATURATING_ADD, BinOp.SATURATING_SUB,
    BinOp.SATURATING_MUL, BinOp.MIN, BinOp.MAX, BinOp.ABS_DIFF,
})
_SATURATING = frozenset({BinOp.SATURATING_ADD, BinOp.SATURATING_SUB, BinOp.SATURATING_MUL})
_BITWISE = frozenset({BinOp.BIT_AND, BinOp.BIT_OR, BinOp.BIT_XOR})
_SHIFTS = frozenset({BinOp.SHL, BinOp.SHR, BinOp.ROTATE_LEFT, BinOp.ROTATE_RIGHT})
_COMPARISONS = frozenset({BinOp.EQ, BinOp.NE, BinOp.LT, BinOp.GT, BinOp.LE, BinOp.GE})
_WAVE = frozenset({BinOp.SHUFFLE, BinOp.BALLOT, BinOp.WAVE_REDUCE, BinOp.WAVE_BROADCAST})
_BIT_UNOPS = frozenset({UnOp.BIT_NOT, UnOp.POPCOUNT, UnOp.CLZ, UnOp.CTZ, UnOp.REVERSE_BITS})
_TYPED_UNOPS = _BIT_UNOPS | FLOAT_UNOPS | UNPACK_UNOPS | {UnOp.IS_NAN, UnOp.IS_INF, UnOp.IS_FINITE}
_NUMERIC_TYPES = (U32, I32, F32)
_INT32 = (U32, I32)


def is_static_zero(expr: Expr) -> bool:
    """A literal zero divisor, possibly under casts (u32 0, i32 0, f32 +-0.0)."""
    while isinstance(expr, Cast):
        expr = expr.value
    if isinstance(expr, (LitU32, LitI32)):
        return expr.value == 0
    if isinstance(expr, LitF32):
        return expr.value == 0.0
    return False


def check_binop(
    op: BinOp | OpaqueOp, left: DataType | None, right: DataType | None, divisor: Expr,
    sink: Sink, where: Where,
) -> None:
    """Operand typing of one binary operation (typecheck/operands.rs)."""
    if isinstance(op, OpaqueOp):
        return  # extension operators carry no foundation typing contract
    name = debug_name(op)
    if op in NUMERIC_OPS:
        _check_numeric(op, name, left, right, divisor, sink, where)
    elif op == BinOp.MOD:
        _check_mod(left, right, divisor, sink, where)
    elif op in _BITWISE:
        if left is not None and right is not None:
            if left not in _INT32:
                sink.error("V091", TYPE, where, f"binary operation `{name}` left operand has "
                           f"type `{type_name(left)}`; legal integer set is `u32` or `i32`",
                           "cast the left operand to U32 or I32.")
            if right not in _INT32:
                sink.error("V092", TYPE, where, f"binary operation `{name}` right operand has "
                           f"type `{type_name(right)}`; legal integer set is `u32` or `i32`",
                           "cast the right operand to U32 or I32.")
            if left != right:
                sink.error("V093", TYPE, where, f"binary operation `{name}` operands have "
                           f"mismatched integer types: left=`{type_name(left)}`, "
                           f"right=`{type_name(right)}`",
                           "cast both operands to the same integer type.")
    elif op in _SHIFTS:
        for side, ty in (("left", left), ("right", right)):
            if ty is not None and ty != U32:
                sink.error("V094", TYPE, where, f"binary operation `{name}` {side} operand has "
                           f"type `{type_name(ty)}`; shift/rotate operands must be `u32`",
                           "cast the operand to U32 before shifting/rotating.")
    elif op in (BinOp.AND, BinOp.OR):
        for side, ty in (("left", left), ("right", right)):
            if ty is not None and ty not in (U32, BOOL):
                sink.error("V095", TYPE, where, f"binary operation `{name}` {side} operand has "
                           f"type `{type_name(ty)}`; logical And/Or operands must be `u32` or "
                           "`bool`", "cast the operand to U32 or Bool.")
    elif op in _COMPARISONS:
        if left is not None and right is not None and left != right:
            sink.error("V096", TYPE, where, f"binary comparison `{name}` operands have "
                       f"mismatched types: left=`{type_name(left)}`, right=`{type_name(right)}`",
                       "cast both operands to the same type before comparing.")
    elif op in _WAVE:
        sink.error("V097", TYPE, where, f"binary operation `{name}` requires backend subgroup "
                   "semantics (`supports_subgroup_ops() == true`) before foundation validation "
                   "can guarantee safety", "validate with ValidationOptions::with_backend"
                   "(backend) where `backend.supports_subgroup_ops() == true`, or remove "
                   f"`{name}` before lowering.")


def _check_numeric(
    op: BinOp, name: str, left: DataType | None, right: DataType | None, divisor: Expr,
    sink: Sink, where: Where,
) -> None:
    if op == BinOp.DIV and is_static_zero(divisor):
        sink.error("V044", TYPE, where, "binary operation `Div` has a statically-zero divisor",
                   "guard the divisor, use Select to substitute a non-zero value, or reject "
                   "the input before building IR.")
    if left is not None and right is not None:
        lname, rname = type_name(left), type_name(right)
        if left in (U64, I64) or right in (U64, I64):
            sink.error("V084", TYPE, where, f"binary operation `{name}` received left=`{lname}`, "
                       f"right=`{rname}`. 64-bit integer arithmetic is outside vyre-foundation's "
                       "cross-backend arithmetic contract", "express the operation as a U32 pair "
                       "with explicit carry/borrow, or use a backend-specific op whose schema "
                       "declares native 64-bit arithmetic.")
        if op in _SATURATING and (left != U32 or right != U32):
            sink.error("V085", TYPE, where, f"Saturating arithmetic `{name}` received "
                       f"left=`{lname}`, right=`{rname}`; legal set is only U32 in the current "
                       "lowering", "cast both operands to U32, or clamp explicitly for I32/F32.")
        if op == BinOp.ABS_DIFF and I32 in (left, right):
            sink.error("V086", TYPE, where, f"AbsDiff has left=`{lname}`, right=`{rname}` and can "
                       "overflow (i32::MIN - i32::MAX invokes target-text signed-integer UB)",
                       "cast operands to U32 before AbsDiff, or rewrite as an explicit branch.")
    for side, ty in (("left", left), ("right", right)):
        if ty == BOOL:
            sink.error("V087", TYPE, where, f"binary operation `{name}` {side} operand has type "
                       "`bool`, but numeric arithmetic expects one of `u32`, `i32`, or `f32`",
                       "cast the operand to U32 or I32 before arithmetic, or rewrite to avoid "
                       "mixing logical and arithmetic operators.")
    if (left is not None and right is not None and left in _NUMERIC_TYPES
            and right in _NUMERIC_TYPES and left != right):
        sink.error("V088", TYPE, where, f"binary operation `{name}` operands have mismatched "
                   f"numeric types: left=`{type_name(left)}`, right=`{type_name(right)}` (legal "
                   "set: U32, I32, F32)", "cast one operand so both sides share a type "
                   "(target-text has no implicit promotion).")


def _check_mod(
    left: DataType | None, right: DataType | None, divisor: Expr, sink: Sink, where: Where
) -> None:
    if is_static_zero(divisor):
        sink.error("V044", TYPE, where, "binary operation `Mod` has a statically-zero divisor",
                   "guard the divisor, use Select to substitute a non-zero value, or reject "
                   "the input before building IR.")
    for side, ty in (("left", left), ("right", right)):
        if ty is not None and ty not in _INT32:
            sink.error("V089", TYPE, where, f"binary operation `Mod` {side} operand must be "
                       f"`u32` or `i32`, got `{type_name(ty)}`. Legal set for Mod is integer-only",
                       "cast both operands to the same integer type before modulo.")
    if left in _INT32 and right in _INT32 and left != right:
        sink.error("V090", TYPE, where, "binary operation `Mod` operands have mismatched integer "
                   f"types: left=`{type_name(left)}`, right=`{type_name(right)}`",  # type: ignore[arg-type]
                   "cast one operand so both sides share the same integer type.")


def check_unop(op: UnOp | OpaqueOp, ty: DataType | None, sink: Sink, where: Where) -> None:
    """Operand typing of one unary operation (checked only when the operand type is known)."""
    if ty is None:
        return
    name = debug_name(op) if isinstance(op, UnOp) else f"Opaque(0x{op.id:08x})"
    tname = type_name(ty)
    if op == UnOp.NEGATE:
        if ty == I32:
            sink.error("V098", TYPE, where, "unary operation `Negate` operand has type `i32`, but "
                       "legal total Negate types are `u32` and `f32`; raw i32 negation has the "
                       "i32::MIN overflow case", "use `0 - x` for wrapping i32 negation, cast to "
                       "U32 before Negate, or guard with Select(i32::MIN, 0, -x).")
        elif ty not in (U32, F32):
            sink.error("V099", TYPE, where, f"unary operation `Negate` operand has type `{tname}`, "
                       "but legal set is U32, I32, or F32", "cast or rewrite the operand to "
                       "U32/I32/F32.")
    elif op == UnOp.LOGICAL_NOT:
        if ty not in (U32, BOOL):
            sink.error("V100", TYPE, where, f"unary operation `LogicalNot` operand has type "
                       f"`{tname}`; legal set is `u32` or `bool`",
                       "cast or rewrite the operand to produce U32 or Bool.")
    elif op in _TYPED_UNOPS:
        _check_typed_unop(op, name, ty, tname, sink, where)
    else:
        sink.error("V104", TYPE, where, f"unary operation `{name}` is not recognized",
                   "use a known UnOp variant (Negate, LogicalNot, BitNot, Popcount, Clz, Ctz, "
                   "ReverseBits, the f32 math ops, IsNan, IsInf, IsFinite, Unpack4Low, "
                   "Unpack4High, Unpack8Low, Unpack8High).")


def _check_typed_unop(
    op: UnOp | OpaqueOp, name: str, ty: DataType, tname: str, sink: Sink, where: Where
) -> None:
    if op in _BIT_UNOPS:
        if ty not in (U32, I32, U64):
            sink.error("V101", TYPE, where, f"unary operation `{name}` operand has type "
                       f"`{tname}`; legal integer set is `u32`, `i32`, or `u64`",
                       "cast or rewrite the operand to produce U32, I32, or U64.")
    elif op in UNPACK_UNOPS:
        if ty not in _INT32:
            sink.error("V103", TYPE, where, f"unary operation `{name}` operand has type "
                       f"`{tname}`; unpack ops require a 32-bit integer (`u32` or `i32`) word",
                       "cast or rewrite the operand to produce U32 or I32.")
    elif ty != F32:
        sink.error("V102", TYPE, where, f"unary operation `{name}` operand has type `{tname}`; "
                   "legal set for math ops is `f32`", "cast or rewrite the operand to produce F32.")


def check_atomic(expr: Atomic, buffers: Buffers, memo: TypeMemo, sink: Sink, where: Where) -> None:
    """Atomic rules in reference order: V042, V027, V025/V009, V013, V014, V057-V060, V061."""
    op = debug_name(expr.op) if isinstance(expr.op, AtomicOp) else "Opaque"
    buf = expr.buffer
    if expr.ordering == MemoryOrdering.GRID_SYNC:
        sink.error("V042", MEMORY, where, f"atomic `{op}` on buffer `{buf}` uses invalid memory "
                   f"ordering `{debug_name(expr.ordering)}`", "use Relaxed, Acquire, Release, "
                   "AcqRel, or SeqCst for atomic read-modify-write operations.")
    index_ty = memo.type_of(expr.index)
    if index_ty is not None and index_ty != U32:
        sink.error("V027", MEMORY, where, f"atomic index on buffer `{buf}` has type "
                   f"`{type_name(index_ty)}`, must be `u32`",
                   "cast the index to U32 before the atomic operation.")
    decl = buffers.get(buf)
    if decl is None:
        sink.error("V061", MEMORY, where, f"atomic on unknown buffer `{buf}`",
                   "declare it in Program::buffers.")
        return
    if decl.access == BufferAccess.WORKGROUP:
        sink.error("V025", MEMORY, where, f"atomic `{op}` on workgroup buffer `{buf}` is "
                   "rejected by the current memory model", "use a storage ReadWrite buffer for "
                   "atomics.")
    elif decl.access != BufferAccess.READ_WRITE:
        sink.error("V009", MEMORY, where, f"atomic `{op}` targets {debug_name(decl.access)} "
                   f"buffer `{buf}`", f"declare `{buf}` with BufferAccess::ReadWrite before "
                   f"issuing `{op}`.")
    if decl.element == BYTES:
        sink.error("V013", MEMORY, where, f"operation on buffer `{buf}` with element type "
                   "`bytes` is not supported", "use a typed buffer.")
    if decl.element != U32:
        sink.error("V014", MEMORY, where, f"atomic on buffer `{buf}` with non-u32 element type "
                   f"`{type_name(decl.element)}`", "atomics only support U32 elements, so retype "
                   "the buffer.")
    value_ty = memo.type_of(expr.value)
    if value_ty is not None and value_ty != U32:
        sink.error("V057", MEMORY, where, f"atomic value type `{type_name(value_ty)}` does not "
                   "match required `u32`", "ensure the atomic operand is U32.")
    _check_expected(expr, memo, sink, where)


def _check_expected(expr: Atomic, memo: TypeMemo, sink: Sink, where: Where) -> None:
    is_cas = expr.op == AtomicOp.COMPARE_EXCHANGE and isinstance(expr.op, AtomicOp)
    if is_cas and expr.expected is not None:
        expected_ty = memo.type_of(expr.expected)
        if expected_ty is not None and expected_ty != U32:
            sink.error("V058", MEMORY, where, f"compare-exchange expected type "
                       f"`{type_name(expected_ty)}` does not match required `u32`",
                       "ensure Expr::Atomic.expected is U32.")
    elif is_cas:
        sink.error("V059", MEMORY, where, "compare-exchange atomic is missing expected value",
                   "set Expr::Atomic.expected for AtomicOp::CompareExchange.")
    elif expr.expected is not None:
        sink.error("V060", MEMORY, where, "non-compare-exchange atomic includes an expected value",
                   "use Expr::Atomic.expected only with AtomicOp::CompareExchange.")


# -- the op-signature registry ----------------------------------------------------------------


# Foundation-known signature spellings (validate/expr_rules.rs data_type_from_signature_spelling).
_SPELLINGS: dict[str, DataType] = {
    "u8": Scalar.U8, "U8": Scalar.U8, "u16": Scalar.U16, "U16": Scalar.U16,
    "u32": Scalar.U32, "U32": Scalar.U32, "u64": Scalar.U64, "U64": Scalar.U64,
    "i8": Scalar.I8, "I8": Scalar.I8, "i16": Scalar.I16, "I16": Scalar.I16,
    "i32": Scalar.I32, "I32": Scalar.I32, "i64": Scalar.I64, "I64": Scalar.I64,
    "f32": Scalar.F32, "F32": Scalar.F32, "bool": Scalar.BOOL, "Bool": Scalar.BOOL,
    "bytes": Scalar.BYTES, "Bytes": Scalar.BYTES, "vec2<u32>": Scalar.VEC2_U32,
    "Vec2U32": Scalar.VEC2_U32, "vec4<u32>": Scalar.VEC4_U32, "Vec4U32": Scalar.VEC4_U32,
}


@dataclass(frozen=True, slots=True)
class OpParam:
    """One declared input of an operation: its name and type spelling.

    ``ty`` is a scalar spelling (``"u32"``, ``"vec4<u32>"``, ...) or ``"buffer<T>"`` for a
    parameter that takes a whole buffer through ``BufferRef``.
    """

    name: str
    ty: str


@dataclass(frozen=True, slots=True)
class OpSignature:
    """The registered signature of one operation id.

    ``inputs`` is None for an op that is registered without a signature (also V016).
    """

    op_id: str
    inputs: tuple[OpParam, ...] | None


def parse_spelling(spelling: str) -> tuple[bool, DataType | None]:
    """Parse a parameter type spelling.

    Args:
        spelling: e.g. ``"u32"`` or ``"buffer<f32>"``.

    Returns:
        ``(is_buffer, element_type)``; the type is None when the spelling is unknown (V021).
    """
    if spelling.startswith("buffer<") and spelling.endswith(">"):
        return True, _SPELLINGS.get(spelling[len("buffer<"):-1])
    return False, _SPELLINGS.get(spelling)


_LOCK = threading.Lock()
_REGISTRY: dict[str, OpSignature] = {}


def register_op(op_id: str, inputs: list[tuple[str, str]] | None) -> OpSignature:
    """Register (or replace) the signature of ``op_id``.

    Args:
        op_id: the operation id a ``Call`` names.
        inputs: ``[(param_name, type_spelling), ...]``, or None for "no signature".

    Returns:
        The stored signature.

    Raises:
        TypeError: when ``op_id`` or a spelling is not a string.
    """
    if not isinstance(op_id, str):
        raise TypeError(f"op id must be a str, got {type(op_id).__name__}. Fix: pass the op id.")
    params = None
    if inputs is not None:
        params = tuple(OpParam(str(name), _require_str(ty)) for name, ty in inputs)
    signature = OpSignature(op_id, params)
    with _LOCK:
        _REGISTRY[op_id] = signature
    return signature


def _require_str(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(
            f"type spelling must be a str, got {type(value).__name__}. "
            "Fix: spell parameter types like 'u32' or 'buffer<u32>'."
        )
    return value


def unregister_op(op_id: str) -> None:
    """Remove ``op_id`` from the registry (no error when absent)."""
    with _LOCK:
        _REGISTRY.pop(op_id, None)


def lookup_op(op_id: str) -> OpSignature | None:
    """The registered signature of ``op_id``, or None."""
    with _LOCK:
        return _REGISTRY.get(op_id)
