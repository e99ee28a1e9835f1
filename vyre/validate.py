"""The vyre program validator: ``vyre_foundation::validate::validate`` ported to Python.

``validate(program)`` returns every finding as a :class:`Diagnostic` with the reference's rule
code (V008-V130, as vyre 0.7.2's validator numbers them); ``raise_on_error=True`` raises
:class:`ValidationError`. The program-level rules (entry shape, buffers, linear types, shape
predicates) live here; the statement walk is :mod:`vyre.validate_nodes`, the expression rules
:mod:`vyre.validate_exprs`, the shared types and diagnostics :mod:`vyre.validate_types`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hurray_gpu.errors import HurrayGPUError
from vyre.ir import (
    AffineRange,
    AllGather,
    AllReduce,
    Array,
    Assign,
    AsyncLoad,
    AsyncStore,
    AtLeast,
    AtMost,
    Atomic,
    Broadcast,
    BufferAccess,
    BufferDecl,
    BufferRef,
    BufLen,
    Exactly,
    Expr,
    If,
    IndirectDispatch,
    Let,
    LinearType,
    Load,
    Loop,
    ModEquals,
    MultipleOf,
    Node,
    PredicateAnd,
    PredicateNot,
    PredicateOr,
    Program,
    ReduceScatter,
    Region,
    Scalar,
    ShapePredicate,
    Store,
    Trap,
)
from vyre.validate_exprs import OpParam, OpSignature, lookup_op, register_op, unregister_op
from vyre.validate_nodes import Walker, iter_nodes
from vyre.validate_types import (
    ERROR,
    WARNING,
    Buffers,
    Diagnostic,
    Sink,
    ValidationOptions,
    Where,
    iter_exprs,
    type_name,
)

DEFAULT_OPTIONS = ValidationOptions()
_RAISE_FIX = "correct the program as each diagnostic's Fix: says, then validate again."


class ValidationError(HurrayGPUError, ValueError):
    """A program the validator rejects.

    Attributes:
        diagnostics: every finding (errors first-to-last in reference order, warnings included).
        errors: only the error-severity findings.
    """

    default_fix = _RAISE_FIX

    def __init__(self, message: str, *, diagnostics: tuple[Diagnostic, ...] = (),
                 fix: str | None = None) -> None:
        self.diagnostics = tuple(diagnostics)
        self.errors = tuple(d for d in self.diagnostics if d.is_error)
        super().__init__(message, fix=fix)
        self._args: tuple[Any, ...] = (message,)
        self._kwargs: dict[str, Any] = {"diagnostics": self.diagnostics, "fix": fix}


def validate(
    program: Program,
    *,
    raise_on_error: bool = False,
    options: ValidationOptions | None = None,
) -> list[Diagnostic]:
    """Validate ``program`` with the reference validator's rules.

    Args:
        program: the program to check.
        raise_on_error: raise :class:`ValidationError` when any error-severity diagnostic is
            found (warnings alone never raise).
        options: backend capabilities and shadowing policy; the default is the reference's
            ``ValidationOptions::default()`` (no subgroup ops, no collectives, no shadowing).

    Returns:
        All diagnostics in the reference's order: program-level rules, then the statement
        walk (pre-order), then V115, V070 and V083. An empty list means the program is valid.

    Raises:
        ValidationError: when ``raise_on_error`` is true and an error was found.
        TypeError: when ``program`` is not a :class:`vyre.ir.Program`.
    """
    if not isinstance(program, Program):
        raise TypeError(
            f"validate() needs a vyre Program, got {type(program).__name__}. "
            "Fix: decode bytes with vyre.from_wire() or build a Program first."
        )
    opts = DEFAULT_OPTIONS if options is None else options
    sink = Sink()
    buffers = check_program(program, sink)
    walker = Walker(buffers, opts, sink)
    walker.run(tuple(program.entry))
    walker.report_self_exclusive()
    check_linear_types(program, sink)
    check_shape_predicates(program, sink)
    diagnostics = list(sink.items)
    if raise_on_error and any(d.is_error for d in diagnostics):
        raise _rejection(diagnostics)
    return diagnostics


def errors_of(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Only the error-severity diagnostics (what the reference's ``validate`` returns)."""
    return [d for d in diagnostics if d.is_error]


def _rejection(diagnostics: list[Diagnostic]) -> ValidationError:
    errors = errors_of(diagnostics)
    first = errors[0]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    head = first.message.split(" Fix: ", 1)[0]
    first_fix = first.message.split(" Fix: ", 1)[1] if " Fix: " in first.message else _RAISE_FIX
    message = f"IR validation rejected the program: {first.code} at {first.location}: {head}{more}"
    return ValidationError(message, diagnostics=tuple(diagnostics), fix=first_fix)


# -- program-level rules ----------------------------------------------------------------------


PROGRAM = "Program"
_REGION_FIX = ("construct runnable programs with `Program::wrapped(...)` or wrap the body in "
               "`Node::Region` before validation, interpretation, or dispatch.")


def check_program(program: Program, sink: Sink) -> Buffers:
    """V105, V106, the per-buffer rules (V107-V110, V130) and V022, in reference order.

    Returns:
        The name -> declaration map the walk uses (a later duplicate replaces an earlier one,
        as the reference's map does).
    """
    entry = tuple(program.entry)
    if not entry:
        sink.error("V105", PROGRAM, Where("entry", 0), "program entry has no top-level Region",
                   _REGION_FIX)
    else:
        for i, node in enumerate(entry):
            if not isinstance(node, Region):
                sink.error("V105", PROGRAM, Where(f"entry[{i}]", i), f"program entry node {i} is "
                           f"`{node.op_id}` instead of `Node::Region`", _REGION_FIX)
                break
    for axis, size in enumerate(tuple(program.workgroup_size)[:3]):
        if size == 0:
            sink.error("V106", PROGRAM, Where(f"workgroup_size[{axis}]"),
                       f"workgroup_size[{axis}] is 0", "all workgroup dimensions must be >= 1.")
    names: set[str] = set()
    bindings: set[int] = set()
    buffers: Buffers = {}
    outputs = 0
    for i, decl in enumerate(program.buffers):
        _check_buffer(decl, Where(f"buffers[{i}]"), names, bindings, sink)
        buffers[decl.name] = decl
        outputs += bool(decl.is_output)
    if outputs > 1:
        sink.error("V022", "Expression", Where("buffers"), f"program declares {outputs} output "
                   "buffers", "mark at most one result buffer with BufferDecl.output(...).")
    return buffers


def _check_buffer(decl: BufferDecl, where: Where, names: set[str], bindings: set[int],
                  sink: Sink) -> None:
    name = decl.name
    if name in names:
        sink.error("V107", PROGRAM, where, f"duplicate buffer name `{name}`",
                   "each buffer must have a unique name.")
    names.add(name)
    workgroup = decl.access == BufferAccess.WORKGROUP
    if not workgroup:
        if decl.binding in bindings:
            sink.error("V108", PROGRAM, where, f"duplicate binding slot "
                       f"{decl.binding} (buffer `{name}`)",
                       "each buffer must have a unique binding.")
        bindings.add(decl.binding)
    count = decl.count
    if workgroup and count == 0:
        sink.error("V109", PROGRAM, where, f"workgroup buffer `{name}` has count 0",
                   "declare a positive element count.")
    if decl.is_output:
        element = decl.element
        if isinstance(element, Array) or element == Scalar.TENSOR:
            sink.error("V110", PROGRAM, where, f"output buffer `{name}` uses unsupported element "
                       f"type `{type_name(element)}`", "output buffers must use fixed-width "
                       "scalar or vector element types, not Array or Tensor.")
        if count == 0 and decl.output_byte_range is None:
            sink.error("V130", PROGRAM, where, f"backend-allocated output buffer `{name}` has no "
                       "static element count or output byte range", "declare the output with a "
                       "count, or use output_byte_range=(0, 0) for a genuinely empty output.")


# --- after the walk -----------------------------------------------------------------------


def _node_exprs(node: Node) -> tuple[Expr, ...]:
    if isinstance(node, (Let, Assign)):
        return (node.value,)
    if isinstance(node, Store):
        return (node.index, node.value)
    if isinstance(node, If):
        return (node.cond,)
    if isinstance(node, Loop):
        return (node.from_, node.to)
    if isinstance(node, (AsyncLoad, AsyncStore)):
        return (node.offset, node.size)
    if isinstance(node, Trap):
        return (node.address,)
    return ()


def _node_buffer_uses(node: Node) -> tuple[str, ...]:
    if isinstance(node, Store):
        return (node.buffer,)
    if isinstance(node, IndirectDispatch):
        return (node.count_buffer,)
    if isinstance(node, (AsyncLoad, AsyncStore)):
        return (node.source, node.destination)
    if isinstance(node, (AllReduce, Broadcast)):
        return (node.buffer,)
    if isinstance(node, (AllGather, ReduceScatter)):
        return (node.input, node.output)
    return ()


def _all_nodes(entry: tuple[Node, ...]) -> Iterator[Node]:
    for node in entry:
        yield from iter_nodes(node)


def buffer_use_counts(program: Program) -> dict[str, int]:
    """Every reference to each buffer, per occurrence, in both If arms (V070's "uses")."""
    counts: dict[str, int] = {}
    for node in _all_nodes(tuple(program.entry)):
        for name in _node_buffer_uses(node):
            counts[name] = counts.get(name, 0) + 1
        for root in _node_exprs(node):
            for expr in iter_exprs(root):
                if isinstance(expr, (Load, BufLen, BufferRef, Atomic)):
                    counts[expr.buffer] = counts.get(expr.buffer, 0) + 1
    return counts


def check_linear_types(program: Program, sink: Sink) -> None:
    """V070: Linear needs exactly one use, Affine at most one, Relevant at least one."""
    if all(d.linear_type == LinearType.UNRESTRICTED for d in program.buffers):
        return
    counts = buffer_use_counts(program)
    for i, decl in enumerate(program.buffers):
        uses, kind = counts.get(decl.name, 0), decl.linear_type
        if kind == LinearType.LINEAR and uses != 1:
            rule = f"must be used exactly once but was used {uses} time(s)"
        elif kind == LinearType.AFFINE and uses > 1:
            rule = f"must be used at most once but was used {uses} time(s)"
        elif kind == LinearType.RELEVANT and uses == 0:
            rule = "must be used at least once but was unused"
        else:
            continue
        label = kind.name.capitalize()
        sink.error("V070", PROGRAM, Where(f"buffers[{i}]"), f"buffer `{decl.name}` declared "
                   f"`LinearType::{label}` {rule}", "add or delete buffer uses to satisfy the "
                   "discipline, or select the intended `LinearType`.")


def describe_predicate(predicate: ShapePredicate) -> str:
    """``ShapePredicate::describe`` (iterative; nested predicates are parenthesised)."""
    parts: list[str] = []
    stack: list[object] = [predicate]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, PredicateAnd | PredicateOr):
            joiner = ") && (" if isinstance(item, PredicateAnd) else ") || ("
            stack.extend([")", item.right, joiner, item.left, "("])
        elif isinstance(item, PredicateNot):
            stack.extend([")", item.inner, "!("])
        else:
            parts.append(_describe_leaf(item))
    return "".join(parts)


def _describe_leaf(item: object) -> str:
    if isinstance(item, AtLeast):
        return f"count >= {item.n}"
    if isinstance(item, AtMost):
        return f"count <= {item.n}"
    if isinstance(item, Exactly):
        return f"count == {item.n}"
    if isinstance(item, MultipleOf):
        return f"count % {item.n} == 0"
    if isinstance(item, ModEquals):
        return f"count % {item.modulus} == {item.remainder}"
    if isinstance(item, AffineRange):
        return f"{item.min} <= count * {item.scale} + {item.offset} <= {item.max}"
    return repr(item)


def predicate_holds(predicate: ShapePredicate, count: int) -> bool:
    """``ShapePredicate::holds`` evaluated iteratively (hostile nesting cannot recurse)."""
    # Post-order evaluation with an explicit value stack.
    values: list[bool] = []
    stack: list[tuple[object, bool]] = [(predicate, False)]
    while stack:
        item, expanded = stack.pop()
        if isinstance(item, PredicateAnd | PredicateOr):
            if expanded:
                right, left = values.pop(), values.pop()
                values.append(left and right if isinstance(item, PredicateAnd) else left or right)
            else:
                stack.extend([(item, True), (item.right, False), (item.left, False)])
        elif isinstance(item, PredicateNot):
            if expanded:
                values.append(not values.pop())
            else:
                stack.extend([(item, True), (item.inner, False)])
        else:
            values.append(bool(item.holds(count)))  # type: ignore[attr-defined]
    return values[-1]


def check_shape_predicates(program: Program, sink: Sink) -> None:
    """V083: a declared shape predicate that does not hold for the static ``count``."""
    for i, decl in enumerate(program.buffers):
        predicate = decl.shape_predicate
        if predicate is None or predicate_holds(predicate, decl.count):
            continue
        sink.error("V083", PROGRAM, Where(f"buffers[{i}]"), f"buffer `{decl.name}` declared "
                   f"shape predicate `{describe_predicate(predicate)}` but has "
                   f"count={decl.count}", "change the count to satisfy the predicate, or relax "
                   "the predicate.")


__all__ = [
    "DEFAULT_OPTIONS", "ERROR", "WARNING", "Diagnostic", "OpParam", "OpSignature",
    "ValidationError", "ValidationOptions", "errors_of", "lookup_op", "register_op",
    "unregister_op", "validate",
]
