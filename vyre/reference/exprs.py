"""Expression evaluation: depth-first, left to right, as ``eval_expr`` in the reference.

Select evaluates all three operands; Atomic evaluates index, expected, then value.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from vyre import ir
from vyre.reference.arith import eval_binop
from vyre.reference.atomics import apply_atomic
from vyre.reference.casts import cast_value
from vyre.reference.errors import ReferenceExecutionError
from vyre.reference.memory import Memory
from vyre.reference.unops import eval_unop
from vyre.reference.values import (
    BYTES,
    F32,
    U32,
    Value,
    as_index,
    canonical,
    describe,
    f32_from_bits,
    fraction_to_f32,
    truthy,
)

SUBGROUP_WIDTH = 32


class Evaluator:
    """Evaluates expressions for one lane (a :class:`Lane` or a :class:`LaneSnapshot`).

    Attributes:
        memory: the memory the expressions read.
        snapshots: per-lane round-start snapshots (subgroup programs only), else None.
        charge: called with a work amount for each subgroup lane evaluation (step budget).
    """

    def __init__(self, memory: Memory, snapshots: list | None,
                 charge: Callable[[int], None]) -> None:
        self.memory = memory
        self.snapshots = snapshots
        self.charge = charge

    def eval(self, expr: ir.Expr, lane: Any) -> Value:
        """Evaluate ``expr`` in ``lane``'s context.

        Raises:
            ReferenceExecutionError: any runtime error the reference defines.
        """
        handler = _HANDLERS.get(type(expr))
        if handler is None:
            raise ReferenceExecutionError(
                f"the reference interpreter does not support expression {type(expr).__name__}.",
                fix="lower extension expressions to core vyre expressions before running.",
            )
        return handler(self, expr, lane)


def _var(ev: Evaluator, e: ir.Var, lane: Any) -> Value:
    try:
        return lane.locals[e.name]
    except KeyError:
        raise ReferenceExecutionError(
            f"reference to undeclared variable `{e.name}`.", fix="add a Let before this use."
        ) from None


def _axis(values: tuple[int, int, int], axis: int) -> Value:
    if not 0 <= axis <= 2:
        raise ReferenceExecutionError(
            f"invocation/workgroup id axis {axis} out of range.", fix="use axis 0, 1 or 2."
        )
    return (U32, values[axis])


def _load(ev: Evaluator, e: ir.Load, lane: Any) -> Value:
    idx = as_index(ev.eval(e.index, lane), "load index")
    value = ev.memory.resolve(e.buffer).load(idx)
    if value[0] == BYTES and len(value[1]) > 4096:
        ev.charge(len(value[1]) >> 12)  # a Bytes-buffer load copies the whole tail
    return value


def _select(ev: Evaluator, e: ir.Select, lane: Any) -> Value:
    cond = truthy(ev.eval(e.cond, lane))
    t = ev.eval(e.true_val, lane)
    f = ev.eval(e.false_val, lane)
    return t if cond else f


def _fma_operand(v: Value, name: str) -> float:
    if v[0] == F32:
        return canonical(v[1])
    if v[0] == U32:
        return canonical(f32_from_bits(v[1]))  # Value::try_as_f32 reads u32 as f32 bits
    raise ReferenceExecutionError(
        f"fma operand `{name}` is {describe(v)}, not a float.", fix="cast to f32 before fma."
    )


def fma_f32(a: float, b: float, c: float) -> float:
    """``a*b + c`` with a single rounding to f32, then canonicalized."""
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)):
        return canonical(a * b + c)  # inf/NaN propagate exactly as IEEE fma does
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        prod_neg = math.copysign(1.0, a) * math.copysign(1.0, b) < 0
        c_neg = math.copysign(1.0, c) < 0
        both_neg_zero = a * b == 0 and c == 0 and prod_neg and c_neg
        return -0.0 if both_neg_zero else 0.0
    return canonical(fraction_to_f32(exact))


def _fma(ev: Evaluator, e: ir.Fma, lane: Any) -> Value:
    a = _fma_operand(ev.eval(e.a, lane), "a")
    b = _fma_operand(ev.eval(e.b, lane), "b")
    c = _fma_operand(ev.eval(e.c, lane), "c")
    return (F32, fma_f32(a, b, c))


def _atomic(ev: Evaluator, e: ir.Atomic, lane: Any) -> Value:
    if (e.op == ir.AtomicOp.COMPARE_EXCHANGE) != (e.expected is not None):
        apply_atomic(e.op, 0, None if e.expected is None else 0, 0)  # type: ignore[arg-type]
    idx = as_index(ev.eval(e.index, lane), "atomic index")
    expected = None
    if e.expected is not None:
        expected = as_index(ev.eval(e.expected, lane), "atomic expected value")
    value = as_index(ev.eval(e.value, lane), "atomic value")
    target = ev.memory.atomic_target(e.buffer)
    old = target.atomic_word(idx)
    if old is None:
        return (U32, 0)  # out of bounds: returns 0 and stores nothing
    target.set_atomic_word(idx, apply_atomic(e.op, old, expected, value))  # type: ignore[arg-type]
    return (U32, old)


def _call(ev: Evaluator, e: ir.Call, lane: Any) -> Value:
    raise ReferenceExecutionError(
        f"Call of operation `{e.op_id}` cannot be executed: the reference interpreter has no "
        "registered build program or CPU facet for it.",
        fix="inline the callee's IR into the program (wrap it in a Region) before running.",
    )


def _buffer_ref(ev: Evaluator, e: ir.BufferRef, lane: Any) -> Value:
    raise ReferenceExecutionError(
        f"BufferRef `{e.buffer}` has no value outside a Call argument.",
        fix="use Load/BufLen to read a buffer.",
    )


def _subgroup(name: str) -> Callable:
    def handler(ev: Evaluator, e: ir.Expr, lane: Any) -> Value:
        from vyre.reference import subgroups  # subgroups imports this module


        return getattr(subgroups, name)(ev, e, lane)

    return handler


_HANDLERS: dict[type, Callable[..., Value]] = {
    ir.LitU32: lambda ev, e, lane: (U32, e.value & 0xFFFFFFFF),
    ir.LitI32: lambda ev, e, lane: (1, e.value),
    ir.LitBool: lambda ev, e, lane: (3, bool(e.value)),
    ir.LitF32: lambda ev, e, lane: (F32, canonical(e.value)),
    ir.Var: _var,
    ir.Load: _load,
    ir.BufLen: lambda ev, e, lane: (U32, ev.memory.resolve(e.buffer).length),
    ir.InvocationId: lambda ev, e, lane: _axis(lane.gid, e.axis),
    ir.WorkgroupId: lambda ev, e, lane: _axis(lane.wid, e.axis),
    ir.LocalId: lambda ev, e, lane: _axis(lane.lid, e.axis),
    ir.Binary: lambda ev, e, lane: eval_binop(e.op, ev.eval(e.left, lane),
                                              ev.eval(e.right, lane)),
    ir.Unary: lambda ev, e, lane: eval_unop(e.op, ev.eval(e.operand, lane)),
    ir.Select: _select,
    ir.Cast: lambda ev, e, lane: cast_value(e.target, ev.eval(e.value, lane)),
    ir.Fma: _fma,
    ir.Atomic: _atomic,
    ir.Call: _call,
    ir.BufferRef: _buffer_ref,
    ir.SubgroupLocalId: lambda ev, e, lane: (U32, lane.lli % SUBGROUP_WIDTH),
    ir.SubgroupSize: lambda ev, e, lane: (U32, SUBGROUP_WIDTH),
    ir.SubgroupBallot: _subgroup("ballot"),
    ir.SubgroupShuffle: _subgroup("shuffle"),
    ir.SubgroupReduce: _subgroup("reduce"),
}
