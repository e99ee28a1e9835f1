"""Expression rules of the vyre validator (``validate/expr_rules.rs``).

Children are validated before the parent's own typing checks, except the subgroup capability
(V041), buffer-reference (V051) and atomic rules, which the reference reports on entry.
"""

from __future__ import annotations

from vyre.ir import (
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
    Load,
    LocalId,
    OpaqueExpr,
    Select,
    SubgroupBallot,
    SubgroupLocalId,
    SubgroupReduce,
    SubgroupReduceOp,
    SubgroupShuffle,
    SubgroupSize,
    Unary,
    Var,
    WorkgroupId,
)
from vyre.validate_operands import check_atomic, check_binop, check_unop
from vyre.validate_ops import lookup_op, parse_spelling
from vyre.validate_report import Sink, ValidationOptions, Where
from vyre.validate_types import (
    BYTES,
    F32,
    Buffers,
    TypeMemo,
    cast_is_narrowing,
    cast_is_valid,
    cast_target_set,
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
        identity = _debug_identity(expr, kind)
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
        problem = _extension_problem(expr)
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


def _debug_identity(ext: object, kind: str) -> str:
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


def _extension_problem(ext: object) -> str | None:
    """The error ``validate_extension()`` reports, or None when it passes or is absent."""
    hook = getattr(ext, "validate_extension", None)
    if not callable(hook):
        return None
    try:
        result = hook()
    except Exception as exc:  # noqa: BLE001 - an extension's failure is its validation error
        return str(exc) or type(exc).__name__
    return result if isinstance(result, str) and result else None


def debug_identity(ext: object, kind: str) -> str:
    """Public alias used by the node rules for Opaque nodes."""
    return _debug_identity(ext, kind)


def extension_problem(ext: object) -> str | None:
    """Public alias used by the node rules for Opaque nodes."""
    return _extension_problem(ext)
