"""Expression lowering: depth-first, left to right, one temporary per operation.

Temporaries make the reference's evaluation order explicit (it matters for atomics), make
``Select`` eager like the reference, and keep every guard's index evaluated once.
"""

from __future__ import annotations

from vyre import ir
from vyre.ir_types import AtomicOp, BinOp, Scalar, UnOp
from vyre.lower.binops import lower_binop, truth
from vyre.lower.ctx import Ctx, Value
from vyre.lower.errors import unsupported
from vyre.lower.f32 import MIN_I32, canon, f32_lit
from vyre.lower.subgroups import lower_subgroup
from vyre.lower.unops import lower_cast, lower_unop

__all__ = ["ELEMENT_KINDS", "PARAM_DTYPES", "as_u32_index", "load_value", "lower_expr", "store_text"]

# Storage element -> the kind a Load yields (Bool buffers load the raw u32 word). 8- and
# 16-bit elements load as raw bytes (semantics doc gotcha 7): kind "bytes", held zero-extended.
# Keyed by object: lookups pass the wider DataType / op unions and treat a miss as "unsupported".
ELEMENT_KINDS: dict[object, str] = {
    Scalar.U32: "u32", Scalar.BOOL: "u32", Scalar.I32: "i32", Scalar.F32: "f32",
    Scalar.U8: "bytes8", Scalar.I8: "bytes8", Scalar.U16: "bytes16", Scalar.I16: "bytes16"}
# The kernel parameter type of each element: narrow ones unsigned, so loads zero-extend.
PARAM_DTYPES = {"bytes8": "u8", "bytes16": "u16"}
_ATOMICS: dict[object, str] = {AtomicOp.ADD: "ATOMIC_ADD", AtomicOp.OR: "ATOMIC_OR", AtomicOp.AND: "ATOMIC_AND",
            AtomicOp.XOR: "ATOMIC_XOR", AtomicOp.MIN: "ATOMIC_MIN", AtomicOp.MAX: "ATOMIC_MAX",
            AtomicOp.EXCHANGE: "ATOMIC_XCHG", AtomicOp.LRU_UPDATE: "ATOMIC_MAX",
            AtomicOp.COMPARE_EXCHANGE: "ATOMIC_CAS"}


def _literal(expr: ir.Expr) -> Value | None:
    if isinstance(expr, ir.LitU32):
        return Value(f"0x{expr.value & 0xFFFFFFFF:x}u", "u32")
    if isinstance(expr, ir.LitI32):
        value = expr.value
        text = MIN_I32 if value == -(2**31) else (f"({value})" if value < 0 else str(value))
        return Value(text, "i32")
    if isinstance(expr, ir.LitBool):
        return Value("(0u == 0u)" if expr.value else "(0u != 0u)", "bool")
    if isinstance(expr, ir.LitF32):
        return Value(f32_lit(expr.bits), "f32")
    return None


def _ids(ctx: Ctx, expr: ir.Expr) -> Value | None:
    if isinstance(expr, (ir.InvocationId, ir.WorkgroupId, ir.LocalId)):
        if expr.axis not in (0, 1, 2):
            raise unsupported(f"id axis {expr.axis}", "use axis 0, 1 or 2.")
        gid = f"GLOBAL_ID({expr.axis})"
        size = ctx.workgroup_size[expr.axis]
        if isinstance(expr, ir.InvocationId):
            return Value(gid, "u32")
        # The launch is exactly grid * workgroup items with no offset, so ids derive from gid.
        return Value(f"({gid} {'/' if isinstance(expr, ir.WorkgroupId) else '%'} {size}u)",
                     "u32")
    if isinstance(expr, ir.SubgroupSize):
        return Value("32u", "u32")
    if isinstance(expr, ir.SubgroupLocalId):
        wx, wy, _ = ctx.workgroup_size
        lli = (f"((GLOBAL_ID(0) % {wx}u) + {wx}u * ((GLOBAL_ID(1) % {wy}u) + {wy}u * "
               f"(GLOBAL_ID(2) % {ctx.workgroup_size[2]}u)))")
        return Value(f"({lli} & 31u)", "u32")
    return None


def load_value(ctx: Ctx, buffer: str, index: Value) -> Value:
    """A guarded load: out of bounds reads the element type's zero."""
    param, length, kind, _ = ctx.buffer(buffer)
    raw = ctx.temp("u32", f"({index.text} < {length}) ? LOAD({param}, {index.text}) : 0u")
    if kind == "u32":
        return raw
    if kind.startswith("bytes"):
        return Value(raw.text, "bytes")
    if kind == "i32":
        return ctx.temp("i32", f"I32({raw.text})")
    return canon(ctx, f"AS_F32({raw.text})")


def store_text(ctx: Ctx, buffer: str, value: Value, kind: str | None = None) -> str:
    """The u32 word a Store of ``value`` writes into ``buffer`` (the reference's encoding);
    ``kind`` overrides the buffer's element kind."""
    if kind is None:
        _, _, kind, writable = ctx.buffer(buffer)
        if not writable:
            raise unsupported(f"store to read-only buffer {buffer!r}", "declare it ReadWrite.")
    if kind.startswith("bytes"):
        # Narrow memory keeps the low bytes of the value's little-endian encoding.
        word = store_text(ctx, "", value, "u32")
        return f"({word}) & {'0xffu' if kind == 'bytes8' else '0xffffu'}"
    if value.kind == "f32":
        return f"AS_U32({value.text})"
    if kind == "f32":
        if value.kind != "u32":
            return "0u"  # the reference stores 0.0 for an i32 or bool value in f32 memory
        # A u32 stored into f32 memory is its bit pattern, canonicalized as an f32.
        return f"AS_U32({canon(ctx, f'AS_F32({value.text})').text})"
    if value.kind == "bool":
        return f"({value.text} ? 1u : 0u)"
    return value.text if value.kind in ("u32", "bytes") else f"U32({value.text})"


def _atomic(ctx: Ctx, expr: ir.Atomic) -> Value:
    name = _ATOMICS.get(expr.op)
    if name is None:
        raise unsupported(f"atomic {getattr(expr.op, 'name', expr.op)} (the reference errors)",
                          "use CompareExchange or another atomic op.")
    param, length, kind, writable = ctx.buffer(expr.buffer)
    if kind != "u32" or not writable:
        raise unsupported(f"atomic on {kind} buffer {expr.buffer!r}", "use a ReadWrite u32 buffer.")
    index = lower_expr(ctx, expr.index)
    args = [index]
    if expr.expected is not None:
        args.append(lower_expr(ctx, expr.expected))
    args.append(lower_expr(ctx, expr.value))
    if any(a.kind != "u32" for a in args):
        raise unsupported("atomic operand that is not u32", "cast the operands to u32.")
    old = ctx.temp("u32", "0u")
    call = f"{name}({param}, {', '.join(a.text for a in args)})"
    ctx.emit(f"if ({index.text} < {length}) {{ {old.text} = {call}; }}")
    ctx.features.add("atomics")
    return old


def lower_expr(ctx: Ctx, expr: ir.Expr) -> Value:
    """Lower ``expr``, emitting its temporaries, and return its value.

    Raises:
        UnsupportedOpError: the expression cannot be lowered with the reference's semantics.
    """
    value = _literal(expr) or _ids(ctx, expr)
    if value is not None:
        return value
    if isinstance(expr, ir.Var):
        local = ctx.lookup(expr.name)
        return Value(local.name, local.kind)
    if isinstance(expr, ir.BufLen):
        return Value(ctx.buffer(expr.buffer)[1], "u32")
    if isinstance(expr, ir.Load):
        return load_value(ctx, expr.buffer, _index(ctx, expr.index))
    if isinstance(expr, ir.Binary):
        if not isinstance(expr.op, BinOp):
            raise unsupported(f"opaque binop {expr.op!r}", "use a core BinOp.")
        left = lower_expr(ctx, expr.left)
        return lower_binop(ctx, expr.op, left, lower_expr(ctx, expr.right))
    if isinstance(expr, ir.Unary):
        if not isinstance(expr.op, UnOp):
            raise unsupported(f"opaque unop {expr.op!r}", "use a core UnOp.")
        return lower_unop(ctx, expr.op, lower_expr(ctx, expr.operand))
    if isinstance(expr, ir.Cast):
        return lower_cast(ctx, expr.target, lower_expr(ctx, expr.value))
    if isinstance(expr, ir.Select):
        return _select(ctx, expr)
    if isinstance(expr, ir.Fma):
        a, b, c = (lower_expr(ctx, e) for e in (expr.a, expr.b, expr.c))
        if not a.kind == b.kind == c.kind == "f32":
            raise unsupported("Fma of non-f32 operands", "cast the operands to f32.")
        ctx.features.add("fma")
        return canon(ctx, f"FMA_RN({a.text}, {b.text}, {c.text})")
    if isinstance(expr, ir.Atomic):
        return _atomic(ctx, expr)
    if isinstance(expr, (ir.SubgroupReduce, ir.SubgroupShuffle, ir.SubgroupBallot)):
        return lower_subgroup(ctx, expr, lower_expr, ctx.flow[-1])
    raise unsupported(f"{type(expr).__name__} expressions are not lowered",
                      _FIXES.get(type(expr), "run the program on device='reference'."))


_FIXES: dict[type, str] = {
    ir.Call: "pass callees= so the call is inlined before lowering.",
}


def as_u32_index(value: Value) -> Value:
    """Raw bytes index and bound like their zero-extended u32 (the reference's try_as_u32)."""
    return Value(value.text, "u32") if value.kind == "bytes" else value


def _index(ctx: Ctx, expr: ir.Expr) -> Value:
    index = as_u32_index(lower_expr(ctx, expr))
    if index.kind != "u32":
        raise unsupported(f"{index.kind} index", "index buffers with a u32 expression.")
    return index


def _select(ctx: Ctx, expr: ir.Select) -> Value:
    # The reference evaluates all three operands, in order, before choosing.
    cond = lower_expr(ctx, expr.cond)
    yes = lower_expr(ctx, expr.true_val)
    no = lower_expr(ctx, expr.false_val)
    if yes.kind != no.kind:
        raise unsupported(f"Select of {yes.kind} and {no.kind}", "make both arms one type.")
    return ctx.temp(yes.kind, f"{truth(cond)} ? {yes.text} : {no.text}")
