"""BinOp lowering with the reference's semantics (semantics doc section 2.3)."""

from __future__ import annotations

from vyre.ir_types import BinOp
from vyre.lower.ctx import Ctx, Value
from vyre.lower.errors import unsupported
from vyre.lower.f32 import MIN_I32, canon

__all__ = ["lower_binop", "truth"]

_CMP = {BinOp.EQ: "==", BinOp.NE: "!=", BinOp.LT: "<", BinOp.GT: ">", BinOp.LE: "<=",
        BinOp.GE: ">="}
_U32_SIMPLE = {BinOp.ADD: "+", BinOp.WRAPPING_ADD: "+", BinOp.SUB: "-", BinOp.WRAPPING_SUB: "-",
               BinOp.MUL: "*", BinOp.BIT_AND: "&", BinOp.BIT_OR: "|", BinOp.BIT_XOR: "^"}
_I32_WRAP = {BinOp.ADD: "+", BinOp.WRAPPING_ADD: "+", BinOp.SUB: "-", BinOp.WRAPPING_SUB: "-",
             BinOp.MUL: "*"}
_F32_ARITH = {BinOp.ADD: "+", BinOp.SUB: "-", BinOp.MUL: "*", BinOp.DIV: "/"}


def truth(v: Value) -> str:
    """The reference's truthiness of ``v`` as subset bool text (f32 NaN is true)."""
    if v.kind == "bool":
        return v.text
    if v.kind == "f32":
        return f"!({v.text} == 0.0f)"
    return f"({v.text} != 0{'' if v.kind == 'i32' else 'u'})"


def lower_binop(ctx: Ctx, op: BinOp, a: Value, b: Value) -> Value:
    """Lower ``op(a, b)`` (both already evaluated, left first).

    Raises:
        UnsupportedOpError: a combination the reference rejects at run time.
    """
    if "bytes" in (a.kind, b.kind):
        raise unsupported(f"{op.name} of raw bytes from an 8/16-bit buffer (the reference "
                          "errors)", "Cast the loaded value to u32 or i32 first.")
    if op in (BinOp.AND, BinOp.OR):
        if a.kind != b.kind or a.kind not in ("u32", "bool", "i32"):
            raise unsupported(f"{op.name} of {a.kind} and {b.kind} (the reference errors)",
                              "convert both sides to bool or both to u32.")
        joiner = "&&" if op == BinOp.AND else "||"
        return ctx.temp("bool", f"{truth(a)} {joiner} {truth(b)}")
    if a.kind != b.kind:
        raise unsupported(f"{op.name} of mismatched {a.kind} and {b.kind} operands "
                          "(the reference errors)", "cast one side so both types agree.")
    handler = {"u32": _u32, "i32": _i32, "f32": _f32, "bool": _bool}[a.kind]
    return handler(ctx, op, a, b)


def _u32(ctx: Ctx, op: BinOp, a: Value, b: Value) -> Value:
    x, y = a.text, b.text
    if op in _U32_SIMPLE:
        return ctx.temp("u32", f"{x} {_U32_SIMPLE[op]} {y}")
    if op in _CMP:
        return ctx.temp("bool", f"{x} {_CMP[op]} {y}")
    table = {
        BinOp.DIV: f"({y} == 0u) ? 0xffffffffu : {x} / (({y} == 0u) ? 1u : {y})",
        BinOp.MOD: f"({y} == 0u) ? 0u : {x} % (({y} == 0u) ? 1u : {y})",
        BinOp.SHL: f"{x} << ({y} & 31u)",
        BinOp.SHR: f"{x} >> ({y} & 31u)",
        BinOp.ROTATE_LEFT: f"({x} << ({y} & 31u)) | ({x} >> ((32u - ({y} & 31u)) & 31u))",
        BinOp.ROTATE_RIGHT: f"({x} >> ({y} & 31u)) | ({x} << ((32u - ({y} & 31u)) & 31u))",
        BinOp.ABS_DIFF: f"({x} > {y}) ? {x} - {y} : {y} - {x}",
        BinOp.MIN: f"UMIN({x}, {y})",
        BinOp.MAX: f"UMAX({x}, {y})",
        BinOp.SATURATING_ADD: f"({x} + {y} < {x}) ? 0xffffffffu : {x} + {y}",
        BinOp.SATURATING_SUB: f"({x} > {y}) ? {x} - {y} : 0u",
        BinOp.SATURATING_MUL: f"(UMULHI({x}, {y}) != 0u) ? 0xffffffffu : {x} * {y}",
        BinOp.MUL_HIGH: f"UMULHI({x}, {y})",
    }
    if op not in table:
        raise unsupported(f"u32 {op.name}", "use the subgroup expressions instead.")
    return ctx.temp("u32", table[op])


def _i32_div(ctx: Ctx, op: BinOp, x: str, y: str) -> Value:
    # The reference errors on x/0 and MIN/-1 (and the same for %): set the trap flag.
    bad = ctx.temp("bool", f"({y} == 0) || (({x} == {MIN_I32}) && ({y} == -1))")
    ctx.needs_trap = True
    ctx.emit(f"if ({bad.text}) {{ STORE(trapflag, 0u, 1u); }}")
    sym = "/" if op == BinOp.DIV else "%"
    return ctx.temp("i32", f"{bad.text} ? 0 : {x} {sym} ({bad.text} ? 1 : {y})")


def _i32(ctx: Ctx, op: BinOp, a: Value, b: Value) -> Value:
    x, y = a.text, b.text
    if op in _I32_WRAP:
        # Signed overflow is undefined in C: wrap in u32.
        return ctx.temp("i32", f"I32(U32({x}) {_I32_WRAP[op]} U32({y}))")
    if op in _CMP:
        return ctx.temp("bool", f"{x} {_CMP[op]} {y}")
    if op in (BinOp.DIV, BinOp.MOD):
        return _i32_div(ctx, op, x, y)
    table = {
        BinOp.BIT_AND: f"{x} & {y}", BinOp.BIT_OR: f"{x} | {y}", BinOp.BIT_XOR: f"{x} ^ {y}",
        BinOp.SHL: f"I32(U32({x}) << (U32({y}) & 31u))",
        BinOp.SHR: f"{x} >> I32(U32({y}) & 31u)",
        BinOp.MIN: f"IMIN({x}, {y})", BinOp.MAX: f"IMAX({x}, {y})",
    }
    if op == BinOp.ABS_DIFF:
        return ctx.temp("u32", f"({x} > {y}) ? U32({x}) - U32({y}) : U32({y}) - U32({x})")
    if op not in table:
        raise unsupported(f"i32 {op.name} (the reference errors or the validator forbids it)",
                          "compute it in u32.")
    return ctx.temp("i32", table[op])


def _f32(ctx: Ctx, op: BinOp, a: Value, b: Value) -> Value:
    x, y = a.text, b.text
    if op == BinOp.DIV:
        # Division by zero is undefined in GLSL, and lavapipe constant-folds x / 0.0 to 0:
        # build the IEEE result (NaN for 0/0 and NaN/0, else signed infinity) from the bits.
        mag = f"(AS_U32({x}) & 0x7fffffffu)"
        by_zero = (f"AS_F32(({mag} == 0u || {mag} > 0x7f800000u) ? 0x7fc00000u : "
                   f"(((AS_U32({x}) ^ AS_U32({y})) & 0x80000000u) | 0x7f800000u))")
        return canon(ctx, f"(({y} == 0.0f) ? {by_zero} : {x} / {y})")
    if op in _F32_ARITH:
        return canon(ctx, f"{x} {_F32_ARITH[op]} {y}")
    if op == BinOp.NE:
        # !(a == b): true for NaN operands even where != is emitted as an ordered compare.
        return ctx.temp("bool", f"!({x} == {y})")
    if op in _CMP:
        return ctx.temp("bool", f"{x} {_CMP[op]} {y}")
    if op in (BinOp.MIN, BinOp.MAX):
        # Rust f32::min/max as the reference defines them: NaN loses, a tie (+-0) keeps the
        # first operand. fmin/fmax leave the tie unspecified, so select explicitly.
        rel = "<" if op == BinOp.MIN else ">"
        nan_x = f"((AS_U32({x}) & 0x7fffffffu) > 0x7f800000u)"
        nan_y = f"((AS_U32({y}) & 0x7fffffffu) > 0x7f800000u)"
        return ctx.temp("f32", f"AS_F32({nan_x} ? AS_U32({y}) : (({nan_y} || !({y} {rel} {x})) "
                               f"? AS_U32({x}) : AS_U32({y})))")
    raise unsupported(f"f32 {op.name} (the reference errors)", "use u32 or i32 arithmetic.")


def _bool(ctx: Ctx, op: BinOp, a: Value, b: Value) -> Value:
    if op in (BinOp.EQ, BinOp.NE):
        return ctx.temp("bool", f"{a.text} {_CMP[op]} {b.text}")
    raise unsupported(f"bool {op.name} (the reference errors)", "cast to u32 first.")
