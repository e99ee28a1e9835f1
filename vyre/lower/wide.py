"""64-bit and vector values in the lowering, as u32 words (docs/vyre-semantics.md, Casts).

The reference holds a U64 load or a cast to U64/I64 as a 64-bit integer (kind ``u64``), and an
I64, F64 or Vec2U32 load (8 bytes) or a Vec4U32 load (16 bytes) as raw little-endian bytes
(kinds ``b64`` and ``b128``). The lowering carries every one of them as two or four u32 words,
low word first, so each device runs them with 32-bit integer operations alone: no device needs
64-bit integer or f64 support (vyre has no f64 arithmetic, and its validator rejects 64-bit
integer arithmetic), and the bytes are the reference's on every one.
"""

from __future__ import annotations

from vyre.ir_types import BinOp, DataType, Scalar, UnOp
from vyre.lower.ops import Ctx, Value, bit_count, truth, unsupported

__all__ = ["WIDE", "WIDE_ELEMENTS", "cast_wide", "load_wide", "wide_binop", "wide_local",
           "wide_select", "wide_store", "wide_unop", "words_of"]

# Kind -> u32 words per value.
WIDE = {"u64": 2, "b64": 2, "b128": 4}
# Storage element -> the kind a load yields.
WIDE_ELEMENTS: dict[object, str] = {
    Scalar.U64: "u64", Scalar.I64: "b64", Scalar.F64: "b64", Scalar.VEC2_U32: "b64",
    Scalar.VEC4_U32: "b128"}
_TARGETS: dict[object, str] = {Scalar.U64: "u64", Scalar.I64: "u64", Scalar.VEC2_U32: "b64",
                               Scalar.VEC4_U32: "b128"}


def _temp(ctx: Ctx, kind: str, words: list[str]) -> Value:
    name = ctx.fresh("t")
    for k, text in enumerate(words):
        ctx.emit(f"u32 {name}w{k} = {text};")
    return Value(name, kind, tuple(f"{name}w{k}" for k in range(len(words))))


def wide_local(ctx: Ctx, name: str, kind: str, value: Value | None) -> Value:
    """Declare (``value`` given) or name the words of wide local ``name``."""
    words = tuple(f"{name}w{k}" for k in range(WIDE[kind]))
    if value is not None:
        for word, text in zip(words, value.words, strict=True):
            ctx.emit(f"u32 {word} = {text};")
    return Value(name, kind, words)


def words_of(value: Value, count: int) -> list[str]:
    """The first ``count`` u32 words of the value's little-endian bytes, zero-padded (the
    reference's ``fit_width(to_bytes(value))``)."""
    if value.words:
        words = list(value.words)
    elif value.kind == "i32":
        words = [f"U32({value.text})"]
    elif value.kind == "bool":
        words = [f"({value.text} ? 1u : 0u)"]
    elif value.kind == "f32":
        words = [f"AS_U32({value.text})"]
    else:  # u32, and raw 8/16-bit bytes held zero-extended
        words = [value.text]
    return (words + ["0u"] * count)[:count]


def load_wide(ctx: Ctx, param: str, length: str, kind: str, index: Value) -> Value:
    """A guarded load of a wide element: out of bounds reads zero words, as the reference."""
    count = WIDE[kind]
    inside = ctx.temp("bool", f"{index.text} < {length}")
    return _temp(ctx, kind, [f"{inside.text} ? LOAD({param}, {count}u * ({index.text})"
                             f"{f' + {k}u' if k else ''}) : 0u" for k in range(count)])


def wide_store(ctx: Ctx, param: str, length: str, kind: str, index: Value, value: Value) -> None:
    """A guarded store of ``value``'s bytes, fitted to the element's width."""
    count = WIDE[kind]
    stores = " ".join(f"STORE({param}, {count}u * ({index.text}){f' + {k}u' if k else ''}, "
                      f"{word});" for k, word in enumerate(words_of(value, count)))
    ctx.emit(f"if ({index.text} < {length}) {{ {stores} }}")


def wide_select(ctx: Ctx, cond: str, yes: Value, no: Value) -> Value:
    """Select per word (both operands already evaluated)."""
    return _temp(ctx, yes.kind, [f"{cond} ? {a} : {b}"
                                 for a, b in zip(yes.words, no.words, strict=True)])


def _trap_unless(ctx: Ctx, cond: str) -> None:
    ctx.needs_trap = True
    ctx.emit(f"if (!({cond})) {{ STORE(trapflag, 0u, 1u); }}")


def cast_wide(ctx: Ctx, target: DataType, v: Value) -> Value | None:
    """Casts to or from a wide kind (None: neither side is wide).

    Raises:
        UnsupportedOpError: a cast the reference rejects for every value of the operand's
            type (bytes wider than the target, f32 to a 64-bit integer, u64 to f32).
    """
    kind = _TARGETS.get(target)
    if kind is None and v.kind not in WIDE:
        return None
    what = f"Cast of {v.kind} to {getattr(target, 'name', target)}"
    if kind is not None:
        if v.kind == "f32" and kind == "u64" or v.kind == "b128" and kind == "u64":
            raise unsupported(f"{what} (the reference errors)", "Cast to u32 first.")
        if v.kind == "i32" and kind == "u64":  # sign-extended
            return _temp(ctx, kind, [f"U32({v.text})", f"({v.text} < 0) ? 0xffffffffu : 0u"])
        return _temp(ctx, kind, words_of(v, WIDE[kind]))
    lo = v.words[0]
    if target == Scalar.BOOL:
        return ctx.temp("bool", truth(v))
    if v.kind == "b128" or v.kind == "b64" and target in (Scalar.U32, Scalar.I32) or \
            target not in (Scalar.U32, Scalar.I32, Scalar.U8, Scalar.U16, Scalar.I8, Scalar.I16):
        raise unsupported(f"{what} (the reference errors, or the validator rejects it)",
                          "Cast the value to U64 first, then to u32.")
    if target in (Scalar.U32, Scalar.I32):
        _trap_unless(ctx, f"{v.words[1]} == 0u")  # the reference errors past u32::MAX
        return ctx.temp("u32" if target == Scalar.U32 else "i32",
                        lo if target == Scalar.U32 else f"I32({lo})")
    return _narrow(ctx, target, lo)


def _narrow(ctx: Ctx, target: DataType, lo: str) -> Value:
    width = 8 if target in (Scalar.U8, Scalar.I8) else 16
    if target in (Scalar.U8, Scalar.U16):
        return ctx.temp("u32", f"{lo} & 0x{(1 << width) - 1:x}u")
    return ctx.temp("i32", f"I32({lo} << {32 - width}u) >> {32 - width}")


_U64_CMP = {BinOp.EQ, BinOp.NE, BinOp.LT, BinOp.GT, BinOp.LE, BinOp.GE}
_U64_BITS = {BinOp.BIT_AND: "&", BinOp.BIT_OR: "|", BinOp.BIT_XOR: "^"}


def wide_binop(ctx: Ctx, op: BinOp, a: Value, b: Value) -> Value:
    """u64 comparisons and bitwise ops on the words.

    Raises:
        UnsupportedOpError: raw bytes (the reference errors), mismatched kinds, or 64-bit
            arithmetic (the validator rejects it).
    """
    if a.kind != b.kind or a.kind != "u64":
        raise unsupported(f"{op.name} of {a.kind} and {b.kind} (the reference errors on raw "
                          "bytes and mismatched operands)", "Cast both operands to U64 first.")
    (alo, ahi), (blo, bhi) = a.words, b.words
    if op in _U64_BITS:
        sym = _U64_BITS[op]
        return _temp(ctx, "u64", [f"{alo} {sym} {blo}", f"{ahi} {sym} {bhi}"])
    if op in (BinOp.EQ, BinOp.NE):
        same = f"({alo} == {blo}) && ({ahi} == {bhi})"
        return ctx.temp("bool", same if op == BinOp.EQ else f"!({same})")
    if op in _U64_CMP:
        x, y = (a, b) if op in (BinOp.LT, BinOp.GE) else (b, a)
        less = (f"({x.words[1]} < {y.words[1]}) || (({x.words[1]} == {y.words[1]}) && "
                f"({x.words[0]} < {y.words[0]}))")
        return ctx.temp("bool", less if op in (BinOp.LT, BinOp.GT) else f"!({less})")
    raise unsupported(f"u64 {op.name} (64-bit arithmetic: the validator rejects it)",
                      "express it on u32 words with explicit carries.")


def wide_unop(ctx: Ctx, op: UnOp, v: Value) -> Value:
    """u64 BitNot, Popcount, Clz, Ctz, ReverseBits and LogicalNot on the words.

    Raises:
        UnsupportedOpError: raw bytes or an op the validator rejects on u64.
    """
    if v.kind != "u64":
        raise unsupported(f"{op.name} of {v.kind} raw bytes (the reference errors)",
                          "Cast the value to U64 first.")
    lo, hi = v.words
    if op == UnOp.BIT_NOT:
        return _temp(ctx, "u64", [f"~{lo}", f"~{hi}"])
    if op == UnOp.LOGICAL_NOT:
        return ctx.temp("bool", f"!{truth(v)}")
    if op == UnOp.POPCOUNT:
        total = f"{bit_count(ctx, op, lo).text} + {bit_count(ctx, op, hi).text}"
        return _temp(ctx, "u64", [total, "0u"])
    if op in (UnOp.CLZ, UnOp.CTZ):
        first, second = (hi, lo) if op == UnOp.CLZ else (lo, hi)
        a, b = bit_count(ctx, op, first), bit_count(ctx, op, second)
        return _temp(ctx, "u64", [f"({first} != 0u) ? {a.text} : 32u + {b.text}", "0u"])
    if op == UnOp.REVERSE_BITS:
        return _temp(ctx, "u64", [bit_count(ctx, op, hi).text, bit_count(ctx, op, lo).text])
    raise unsupported(f"u64 {op.name} (the validator rejects it)", "Cast to u32 first.")
