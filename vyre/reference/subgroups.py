"""The reference's 32-lane subgroup simulator (semantics doc section 4).

Every lane of the slice ``[32*(lli//32), min(n, that+32))`` takes part whatever its control
flow; operands are evaluated with each lane's locals as they were at the start of the
round, against a throwaway copy of memory.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vyre import ir
from vyre.ir import SubgroupReduceOp
from vyre.reference.arith import eval_binop
from vyre.reference.errors import ReferenceExecutionError
from vyre.reference.exprs import SUBGROUP_WIDTH, Evaluator
from vyre.reference.values import F32, U32, Value, canonical, round_f32, truthy, try_as_u32

_MASK32 = 0xFFFFFFFF
_U32_IDENTITY = {
    SubgroupReduceOp.ADD: 0, SubgroupReduceOp.MUL: 1, SubgroupReduceOp.MIN: _MASK32,
    SubgroupReduceOp.MAX: 0, SubgroupReduceOp.AND: _MASK32, SubgroupReduceOp.OR: 0,
    SubgroupReduceOp.XOR: 0,
}
_U32_COMBINE: dict[SubgroupReduceOp, Callable[[int, int], int]] = {
    SubgroupReduceOp.ADD: lambda a, b: (a + b) & _MASK32,
    SubgroupReduceOp.MUL: lambda a, b: (a * b) & _MASK32,
    SubgroupReduceOp.MIN: min, SubgroupReduceOp.MAX: max,
    SubgroupReduceOp.AND: lambda a, b: a & b, SubgroupReduceOp.OR: lambda a, b: a | b,
    SubgroupReduceOp.XOR: lambda a, b: a ^ b,
}
_F32_IDENTITY = {
    SubgroupReduceOp.ADD: 0.0, SubgroupReduceOp.MUL: 1.0, SubgroupReduceOp.MIN: float("inf"),
    SubgroupReduceOp.MAX: float("-inf"),
}
_F32_BINOP = {
    SubgroupReduceOp.ADD: ir.BinOp.ADD, SubgroupReduceOp.MUL: ir.BinOp.MUL,
    SubgroupReduceOp.MIN: ir.BinOp.MIN, SubgroupReduceOp.MAX: ir.BinOp.MAX,
}


def _slice(ev: Evaluator, lane: Any) -> list:
    snapshots = ev.snapshots
    if snapshots is None:  # pragma: no cover - the scheduler snapshots subgroup programs
        raise ReferenceExecutionError(
            "subgroup expression evaluated without lane snapshots.",
            fix="report this as a reference-interpreter bug.",
        )
    start = (lane.lli // SUBGROUP_WIDTH) * SUBGROUP_WIDTH
    return snapshots[start:min(len(snapshots), start + SUBGROUP_WIDTH)]


def _lane_values(ev: Evaluator, expr: ir.Expr, lane: Any) -> list[Value]:
    values = []
    for snap in _slice(ev, lane):
        ev.charge(1)
        values.append(Evaluator(ev.memory.fork(), ev.snapshots, ev.charge).eval(expr, snap))
    return values


def _mixed(what: str) -> ReferenceExecutionError:
    return ReferenceExecutionError(
        f"{what} lanes have mixed or unsupported value types.",
        fix="cast every lane value to the same primitive u32 or f32 type before the subgroup op.",
    )


def ballot(ev: Evaluator, e: ir.SubgroupBallot, lane: Any) -> Value:
    """Bit k of the result is the truthiness of ``cond`` in slice lane k."""
    mask = 0
    for k, value in enumerate(_lane_values(ev, e.cond, lane)):
        if truthy(value):
            mask |= 1 << k
    return (U32, mask)


def shuffle(ev: Evaluator, e: ir.SubgroupShuffle, lane: Any) -> Value:
    """``value`` read from slice lane ``lane``; a source outside the slice gives 0."""
    values = _lane_values(ev, e.value, lane)
    sources = []
    for v in _lane_values(ev, e.lane, lane):
        src = try_as_u32(v)
        if src is None:
            raise ReferenceExecutionError(
                "subgroup_shuffle lane index is not a u32.", fix="use a scalar u32 lane argument."
            )
        sources.append(src)
    offset = lane.lli % SUBGROUP_WIDTH
    src = sources[offset] if offset < len(sources) else _MASK32
    for tag, zero in ((U32, 0), (F32, 0.0)):
        if all(v[0] == tag for v in values):
            return values[src] if src < len(values) else (tag, zero)
    raise _mixed("subgroup_shuffle")


def reduce(ev: Evaluator, e: ir.SubgroupReduce, lane: Any) -> Value:
    """Every lane receives the fold of the slice's values, in lane order."""
    values = _lane_values(ev, e.value, lane)
    op = e.op
    if all(v[0] == U32 for v in values):
        acc = _U32_IDENTITY[op]
        combine = _U32_COMBINE[op]
        for _, x in values:
            acc = combine(acc, x)
        return (U32, acc)
    if all(v[0] == F32 for v in values):
        if op not in _F32_IDENTITY:
            raise ReferenceExecutionError(
                f"subgroup reduce {op.name} is not defined for f32 lanes.",
                fix="use Add, Mul, Min or Max for f32 subgroup reductions.",
            )
        acc_v: Value = (F32, _F32_IDENTITY[op])
        for v in values:
            acc_v = (F32, canonical(round_f32(eval_binop(_F32_BINOP[op], acc_v, v)[1])))
        return acc_v
    raise _mixed("subgroup reduce")
