"""f32 in the portable subset: bit-exact canonicalization, literals, rounding helpers.

Every f32 value the lowering produces is canonical (NaN -> 0x7FC00000, subnormal -> signed
zero), so operands never need re-canonicalizing; results are canonicalized on their bits.
"""

from __future__ import annotations

from vyre.lower.ctx import Ctx, Value

__all__ = ["canon", "f32_lit", "is_nan", "canonical_bits", "f32_rounding"]

MIN_I32 = "(-2147483647 - 1)"


def canonical_bits(bits: int) -> int:
    """The reference's runtime canonical form (keeps the sign of zero, unlike the encoder)."""
    bits &= 0xFFFFFFFF
    if (bits & 0x7FFFFFFF) > 0x7F800000:
        return 0x7FC00000
    if bits & 0x7F800000 == 0:
        return bits & 0x80000000
    return bits


def f32_lit(bits: int) -> str:
    """An exact f32 literal: the bit pattern through AS_F32."""
    return f"AS_F32(0x{canonical_bits(bits):08x}u)"


def canon(ctx: Ctx, text: str) -> Value:
    """Canonicalize the f32 ``text`` on its bits and return the canonical temporary."""
    bits = ctx.temp("u32", f"AS_U32({text})")
    fixed = (f"(({bits.text} & 0x7fffffffu) > 0x7f800000u) ? 0x7fc00000u : "
             f"(((({bits.text} & 0x7f800000u) == 0u)) ? ({bits.text} & 0x80000000u) : "
             f"{bits.text})")
    return ctx.temp("f32", f"AS_F32({fixed})")


def is_nan(ctx: Ctx, value: Value) -> Value:
    """``value`` is a NaN, tested on the bits (immune to fast-math compare folding)."""
    return ctx.temp("bool", f"(AS_U32({value.text}) & 0x7fffffffu) > 0x7f800000u")


def f32_rounding(ctx: Ctx, mode: str, x: Value) -> Value:
    """floor, ceil, trunc or round (half away from zero, Rust ``f32::round``) of canonical x."""
    if mode == "floor":
        return canon(ctx, f"FLOOR({x.text})")
    if mode == "ceil":
        return canon(ctx, f"-FLOOR(-{x.text})")
    trunc = ctx.temp("f32", f"({x.text} < 0.0f) ? -FLOOR(-{x.text}) : FLOOR({x.text})")
    if mode == "trunc":
        return canon(ctx, trunc.text)
    # x - trunc(x) is exact, so the half-way test is exact too.
    step = ctx.temp("f32", f"({x.text} < 0.0f) ? -1.0f : 1.0f")
    return canon(ctx, f"(FABS({x.text} - {trunc.text}) >= 0.5f) ? {trunc.text} + {step.text} "
                      f": {trunc.text}")
