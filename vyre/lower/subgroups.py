"""Subgroup ops emulated exactly as the reference simulates them: 32-lane slices of the
workgroup by linear local id, folded in lane order, through a workgroup scratch array.

Each op stores every lane's operand, meets a barrier, then reads its slice; so it needs
workgroup-uniform control flow (refused otherwise) and a device with work-groups.
"""

from __future__ import annotations

from vyre import ir
from vyre.ir_types import BinOp, SubgroupReduceOp
from vyre.lower.binops import lower_binop, truth
from vyre.lower.ctx import Ctx, Value
from vyre.lower.errors import unsupported
from vyre.lower.f32 import f32_lit

__all__ = ["SCRATCH", "lower_subgroup"]

SCRATCH = "sgscratch"
_BINOPS = {SubgroupReduceOp.ADD: BinOp.ADD, SubgroupReduceOp.MUL: BinOp.MUL,
           SubgroupReduceOp.MIN: BinOp.MIN, SubgroupReduceOp.MAX: BinOp.MAX,
           SubgroupReduceOp.AND: BinOp.BIT_AND, SubgroupReduceOp.OR: BinOp.BIT_OR,
           SubgroupReduceOp.XOR: BinOp.BIT_XOR}
_U32_IDENTITY = {SubgroupReduceOp.ADD: "0u", SubgroupReduceOp.MUL: "1u",
                 SubgroupReduceOp.MIN: "0xffffffffu", SubgroupReduceOp.MAX: "0u",
                 SubgroupReduceOp.AND: "0xffffffffu", SubgroupReduceOp.OR: "0u",
                 SubgroupReduceOp.XOR: "0u"}
_F32_IDENTITY = {SubgroupReduceOp.ADD: 0, SubgroupReduceOp.MUL: 0x3F800000,
                 SubgroupReduceOp.MIN: 0x7F800000, SubgroupReduceOp.MAX: 0xFF800000}


def _has_atomic(expr: ir.Expr) -> bool:
    from vyre.validate_types import iter_exprs

    return any(isinstance(e, ir.Atomic) for e in iter_exprs(expr))


def _publish(ctx: Ctx, value: Value) -> tuple[Value, Value, Value]:
    """Store this lane's word, barrier; return (lli, slice start, slice end)."""
    wx, wy, wz = ctx.workgroup_size
    total = wx * wy * wz
    lli = ctx.temp("u32", f"(GLOBAL_ID(0) % {wx}u) + {wx}u * ((GLOBAL_ID(1) % {wy}u) + {wy}u * "
                          f"(GLOBAL_ID(2) % {wz}u))")
    word = f"AS_U32({value.text})" if value.kind == "f32" else value.text
    ctx.emit("BARRIER();")  # earlier readers of the scratch are done
    ctx.emit(f"STORE({SCRATCH}, {lli.text}, {word});")
    ctx.emit("BARRIER();")
    base = ctx.temp("u32", f"{lli.text} - ({lli.text} % 32u)")
    end = ctx.temp("u32", f"UMIN({base.text} + 32u, {total}u)")
    return lli, base, end


def lower_subgroup(ctx: Ctx, expr: ir.Expr, lower_expr: object, uniform: bool) -> Value:
    """Lower SubgroupReduce, SubgroupShuffle or SubgroupBallot.

    Raises:
        UnsupportedOpError: non-uniform control flow, an atomic in the operand, or lane
            types the reference rejects.
    """
    if not uniform:
        raise unsupported(f"{type(expr).__name__} under control flow that may diverge within "
                          "the workgroup (the emulation needs barriers)",
                          "move the subgroup op to workgroup-uniform control flow.")
    if any(_has_atomic(e) for e in (getattr(expr, f, None) for f in ("value", "cond", "lane"))
           if e is not None):
        raise unsupported("an atomic inside a subgroup operand (the reference evaluates "
                          "operands on a throwaway copy of memory)", "hoist the atomic out.")
    ctx.features.update({"subgroups", "barrier"})
    lower = lower_expr  # type: ignore[assignment]
    if isinstance(expr, ir.SubgroupBallot):
        cond = lower(ctx, expr.cond)  # type: ignore[operator]
        _, base, end = _publish(ctx, Value(f"({truth(cond)} ? 1u : 0u)", "u32"))
        mask = ctx.temp("u32", "0u")
        k = ctx.fresh("k")
        ctx.emit(f"for (u32 {k} = {base.text}; {k} < {end.text}; {k}++) {{ {mask.text} = "
                 f"{mask.text} | (LOAD({SCRATCH}, {k}) << ({k} - {base.text})); }}")
        return mask
    value = lower(ctx, expr.value)  # type: ignore[attr-defined, operator]
    if value.kind not in ("u32", "f32"):
        raise unsupported(f"subgroup op on {value.kind} lanes (the reference errors)",
                          "cast the lane values to u32 or f32.")
    if isinstance(expr, ir.SubgroupShuffle):
        lane = lower(ctx, expr.lane)  # type: ignore[operator]
        if lane.kind != "u32":
            raise unsupported("a shuffle lane that is not u32", "cast the lane to u32.")
        _, base, end = _publish(ctx, value)
        word = ctx.temp("u32", f"({lane.text} < {end.text} - {base.text}) ? "
                               f"LOAD({SCRATCH}, {base.text} + {lane.text}) : 0u")
        return word if value.kind == "u32" else ctx.temp("f32", f"AS_F32({word.text})")
    return _reduce(ctx, expr, value)  # type: ignore[arg-type]


def _reduce(ctx: Ctx, expr: ir.SubgroupReduce, value: Value) -> Value:
    if value.kind == "f32" and expr.op not in _F32_IDENTITY:
        raise unsupported(f"subgroup {expr.op.name} of f32 lanes (the reference errors)",
                          "use Add, Mul, Min or Max.")
    _, base, end = _publish(ctx, value)
    identity = (_U32_IDENTITY[expr.op] if value.kind == "u32"
                else f32_lit(_F32_IDENTITY[expr.op]))
    acc = ctx.temp(value.kind, identity)
    k = ctx.fresh("k")
    ctx.open(f"for (u32 {k} = {base.text}; {k} < {end.text}; {k}++)")
    word = f"LOAD({SCRATCH}, {k})"
    lane = Value(word if value.kind == "u32" else f"AS_F32({word})", value.kind)
    # The reference folds from the identity in lane order, canonicalizing each f32 step.
    step = lower_binop(ctx, _BINOPS[expr.op], acc, lane)
    ctx.emit(f"{acc.text} = {step.text};")
    ctx.close()
    return acc
