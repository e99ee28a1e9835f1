"""UnOp and Cast lowering with the reference's semantics (semantics doc sections 2.4, 2.5)."""

from __future__ import annotations

from vyre.ir_types import DataType, Scalar, UnOp
from vyre.lower.binops import truth
from vyre.lower.ctx import Ctx, Value
from vyre.lower.errors import unsupported
from vyre.lower.f32 import MIN_I32, canon, f32_rounding, is_nan

__all__ = ["lower_cast", "lower_unop"]

_TRANSCENDENTAL = frozenset({UnOp.SIN, UnOp.COS, UnOp.TAN, UnOp.ASIN, UnOp.ACOS, UnOp.ATAN,
                             UnOp.SINH, UnOp.COSH, UnOp.TANH, UnOp.EXP, UnOp.EXP2, UnOp.LOG,
                             UnOp.LOG2})
_UNPACK = {UnOp.UNPACK4_LOW: "{x} & 0xfu", UnOp.UNPACK4_HIGH: "({x} >> 4u) & 0xfu",
           UnOp.UNPACK8_LOW: "{x} & 0xffu", UnOp.UNPACK8_HIGH: "({x} >> 24u) & 0xffu"}


def _popcount(ctx: Ctx, x: str) -> Value:
    t = ctx.temp("u32", f"{x} - (({x} >> 1u) & 0x55555555u)")
    t = ctx.temp("u32", f"({t.text} & 0x33333333u) + (({t.text} >> 2u) & 0x33333333u)")
    t = ctx.temp("u32", f"({t.text} + ({t.text} >> 4u)) & 0x0f0f0f0fu")
    return ctx.temp("u32", f"({t.text} * 0x01010101u) >> 24u")


def _clz(ctx: Ctx, x: str) -> Value:
    # Binary search; clz(0) = 32.
    n = ctx.temp("u32", f"({x} == 0u) ? 32u : 0u")
    y = ctx.temp("u32", x)
    for limit, shift in ((0x0000FFFF, 16), (0x00FFFFFF, 8), (0x0FFFFFFF, 4), (0x3FFFFFFF, 2),
                         (0x7FFFFFFF, 1)):
        ctx.emit(f"if (({y.text} != 0u) && ({y.text} <= 0x{limit:08x}u)) "
                 f"{{ {n.text} = {n.text} + {shift}u; {y.text} = {y.text} << {shift}u; }}")
    return n


def _reverse(ctx: Ctx, x: str) -> Value:
    t = ctx.temp("u32", x)
    for mask, shift in ((0x55555555, 1), (0x33333333, 2), (0x0F0F0F0F, 4), (0x00FF00FF, 8)):
        ctx.emit(f"{t.text} = (({t.text} >> {shift}u) & 0x{mask:08x}u) | "
                 f"(({t.text} & 0x{mask:08x}u) << {shift}u);")
    return ctx.temp("u32", f"({t.text} >> 16u) | ({t.text} << 16u)")


def _bits(ctx: Ctx, op: UnOp, v: Value) -> Value:
    x = v.text if v.kind == "u32" else f"U32({v.text})"
    if op == UnOp.POPCOUNT:
        out = _popcount(ctx, x)
    elif op == UnOp.CLZ:
        out = _clz(ctx, x)
    elif op == UnOp.CTZ:
        low = ctx.temp("u32", f"({x} & (0u - {x})) - 1u")  # ones below the lowest set bit
        out = _popcount(ctx, low.text)
    else:
        out = _reverse(ctx, x)
    return out if v.kind == "u32" else ctx.temp("i32", f"I32({out.text})")


def _float(ctx: Ctx, op: UnOp, v: Value) -> Value:
    x = v.text
    if op == UnOp.NEGATE:
        return canon(ctx, f"-{x}")
    if op == UnOp.ABS:
        return ctx.temp("f32", f"AS_F32(AS_U32({x}) & 0x7fffffffu)")
    if op == UnOp.SQRT:
        return canon(ctx, f"SQRT({x})")
    if op == UnOp.RECIPROCAL:
        return canon(ctx, f"1.0f / {x}")
    if op == UnOp.INVERSE_SQRT:
        root = canon(ctx, f"SQRT({x})")
        return canon(ctx, f"1.0f / {root.text}")
    modes = {UnOp.FLOOR: "floor", UnOp.CEIL: "ceil", UnOp.TRUNC: "trunc", UnOp.ROUND: "round"}
    if op in modes:
        return f32_rounding(ctx, modes[op], v)
    if op == UnOp.SIGN:
        nan = is_nan(ctx, v)
        # Built from the bits alone: a compare/select chain is pattern-matched to fsign by
        # some compilers (llvmpipe), which keeps the sign of zero; the reference gives +0.0.
        sign = f"(AS_U32({x}) & 0x80000000u) | 0x3f800000u"
        return ctx.temp("f32", f"AS_F32({nan.text} ? 0x7fc00000u : (((AS_U32({x}) & "
                               f"0x7fffffffu) == 0u) ? 0u : ({sign})))")
    if op == UnOp.IS_NAN:
        return is_nan(ctx, v)
    if op in (UnOp.IS_INF, UnOp.IS_FINITE):
        rel = "==" if op == UnOp.IS_INF else "<"
        return ctx.temp("bool", f"(AS_U32({x}) & 0x7fffffffu) {rel} 0x7f800000u")
    if op in _TRANSCENDENTAL:
        # f32(libm_f64(x)), the reference's own recipe; only host C calls the very libm the
        # interpreter calls (launchers refuse the "libm" feature on other dialects).
        ctx.features.add("libm")
        return canon(ctx, ctx.temp("f32", f"LIBM_{op.name}({x})").text)
    raise unsupported(f"f32 {op.name} (the reference errors)", "use a float operation.")


def lower_unop(ctx: Ctx, op: UnOp, v: Value) -> Value:
    """Lower ``op(v)``.

    Raises:
        UnsupportedOpError: a combination the reference rejects, or a transcendental.
    """
    if v.kind == "bytes":
        raise unsupported(f"{op.name} of raw bytes from an 8/16-bit buffer (the reference "
                          "errors)", "Cast the loaded value to u32 or i32 first.")
    if v.kind == "f32":
        return _float(ctx, op, v)
    if op == UnOp.LOGICAL_NOT:
        return ctx.temp("bool", f"!{truth(v)}")
    if v.kind == "bool":
        raise unsupported(f"bool {op.name} (the reference errors)", "cast to u32 first.")
    if op == UnOp.NEGATE:
        text = f"0u - {v.text}" if v.kind == "u32" else f"I32(0u - U32({v.text}))"
        return ctx.temp(v.kind, text)
    if op == UnOp.BIT_NOT:
        return ctx.temp(v.kind, f"~{v.text}")
    if op in (UnOp.POPCOUNT, UnOp.CLZ, UnOp.CTZ, UnOp.REVERSE_BITS):
        return _bits(ctx, op, v)
    if op in _UNPACK:
        x = v.text if v.kind == "u32" else f"U32({v.text})"
        return ctx.temp("u32", _UNPACK[op].format(x=x))
    raise unsupported(f"{v.kind} {op.name} (the reference errors)", "use an f32 operand.")


def _from_f32(ctx: Ctx, target: str, v: Value) -> Value:
    nan = is_nan(ctx, v)
    x = v.text
    if target == "u32":
        # Rust `as`: truncate, saturate, NaN -> 0.
        return ctx.temp("u32", f"({nan.text} || {x} <= 0.0f) ? 0u : (({x} >= 4294967296.0f) ? "
                               f"0xffffffffu : U32({x}))")
    return ctx.temp("i32", f"{nan.text} ? 0 : (({x} <= -2147483648.0f) ? {MIN_I32} : "
                           f"(({x} >= 2147483648.0f) ? 2147483647 : I32({x})))")


_TARGETS: dict[object, str] = {Scalar.U32: "u32", Scalar.I32: "i32", Scalar.F32: "f32", Scalar.BOOL: "bool"}


def lower_cast(ctx: Ctx, target: DataType, v: Value) -> Value:
    """Lower ``Cast{target, v}``.

    Raises:
        UnsupportedOpError: a 64-bit, vector or sub-f32 float target, or a cast the
            reference rejects.
    """
    if v.kind == "bytes":
        if target == Scalar.F32:
            raise unsupported("Cast of raw bytes to f32 (the reference errors)",
                              "Cast to u32 first.")
        v = Value(v.text, "u32")  # raw bytes are their zero-extended integer
    if target in (Scalar.U8, Scalar.U16, Scalar.I8, Scalar.I16) and v.kind != "f32":
        width = 8 if target in (Scalar.U8, Scalar.I8) else 16
        x = v.text if v.kind == "u32" else (f"({v.text} ? 1u : 0u)" if v.kind == "bool"
                                            else f"U32({v.text})")
        if target in (Scalar.U8, Scalar.U16):
            return ctx.temp("u32", f"{x} & 0x{(1 << width) - 1:x}u")
        return ctx.temp("i32", f"I32({x} << {32 - width}u) >> {32 - width}")
    kind = _TARGETS.get(target)
    if kind is None:
        raise unsupported(f"cast to {target!r} (64-bit, vector and narrow float types are not "
                          "lowered)", "cast to u32, i32, f32 or bool.")
    if kind == v.kind:
        return v
    if kind == "bool":
        return ctx.temp("bool", truth(v))
    if v.kind == "bool":
        one, zero = {"u32": ("1u", "0u"), "i32": ("1", "0"), "f32": ("1.0f", "0.0f")}[kind]
        return ctx.temp(kind, f"{v.text} ? {one} : {zero}")
    if v.kind == "f32":
        return _from_f32(ctx, kind, v)
    if kind == "f32":
        return canon(ctx, f"F32({v.text})")
    return ctx.temp(kind, f"{kind.upper()}({v.text})")
