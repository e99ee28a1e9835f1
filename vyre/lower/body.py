"""Expression and statement lowering, with the subgroup emulation and the uniformity analysis.

Expressions lower depth-first, left to right, one temporary per operation: temporaries make
the reference's evaluation order explicit (it matters for atomics), make ``Select`` eager like
the reference, and keep every guard's index evaluated once. Statements lower to scopes,
guarded stores, half-open loops, Return and Trap.

Subgroup ops are emulated exactly as the reference simulates them: 32-lane slices of the
workgroup by linear local id, folded in lane order, through a workgroup scratch array. Each op
stores every lane's operand, meets a barrier, then reads its slice; so it needs
workgroup-uniform control flow (refused otherwise) and a device with work-groups. Uniformity
of locals is a conservative fixpoint over the whole program: a local is non-uniform when any
Let or Assign of it has a non-uniform value or runs under non-uniform control flow.
"""

from __future__ import annotations

from vyre import ir
from vyre.ir_types import AtomicOp, BinOp, MemoryOrdering, Scalar, SubgroupReduceOp, UnOp
from vyre.lower.ops import (
    MIN_I32,
    Ctx,
    Local,
    Value,
    canon,
    ctype,
    f32_lit,
    lower_binop,
    lower_cast,
    lower_unop,
    sanitize,
    truth,
    unsupported,
)
from vyre.lower.wide import (
    WIDE,
    WIDE_ELEMENTS,
    cast_wide,
    load_wide,
    wide_binop,
    wide_local,
    wide_select,
    wide_store,
    wide_unop,
    words_of,
)
from vyre.validate_types import expr_children, iter_exprs

__all__ = [
    "ELEMENT_KINDS", "PARAM_DTYPES", "SCRATCH", "as_u32_index", "load_value", "lower_expr",
    "lower_nodes", "nonuniform_locals", "store_text", "uniform_expr", "zero_fill"]

# -- expressions ----------------------------------------------------------------------

# Storage element -> the kind a Load yields (Bool buffers load the raw u32 word). 8- and
# 16-bit elements load as raw bytes (docs/vyre-semantics.md, Raw-byte loads): kind "bytes",
# held zero-extended.
# Keyed by object: lookups pass the wider DataType / op unions and treat a miss as "unsupported".
ELEMENT_KINDS: dict[object, str] = {
    Scalar.U32: "u32", Scalar.BOOL: "u32", Scalar.I32: "i32", Scalar.F32: "f32",
    Scalar.U8: "bytes8", Scalar.I8: "bytes8", Scalar.U16: "bytes16", Scalar.I16: "bytes16",
    Scalar.F16: "f16", Scalar.BF16: "bf16", Scalar.F8E4M3: "bytes8", Scalar.F8E5M2: "bytes8",
    **WIDE_ELEMENTS}
# The kernel parameter type of each element: narrow ones unsigned, so loads zero-extend (f16
# and bf16 too: their bits are converted in the body, exactly as the reference converts them).
PARAM_DTYPES = {"bytes8": "u8", "bytes16": "u16", "f16": "u16", "bf16": "u16"}
_ATOMICS: dict[object, str] = {
    AtomicOp.ADD: "ATOMIC_ADD", AtomicOp.OR: "ATOMIC_OR", AtomicOp.AND: "ATOMIC_AND",
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
    if kind in WIDE:
        return load_wide(ctx, param, length, kind, index)
    raw = ctx.temp("u32", f"({index.text} < {length}) ? LOAD({param}, {index.text}) : 0u")
    if kind == "u32":
        return raw
    if kind.startswith("bytes"):
        return Value(raw.text, "bytes")
    if kind == "f16":  # exact in f32 (f16 subnormals are f32 normals), then canonical
        return canon(ctx, f"F16_BITS_TO_F32({raw.text})")
    if kind == "bf16":
        return canon(ctx, f"AS_F32({raw.text} << 16u)")
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
    if kind in ("f16", "bf16"):
        if value.kind == "f32":  # f16 rounds to nearest even as NumPy does; bf16 truncates
            return (f"F32_TO_F16_BITS({value.text})" if kind == "f16"
                    else f"AS_U32({value.text}) >> 16u")
        kind = "bytes16"
    if kind.startswith("bytes"):
        # Narrow memory keeps the low bytes of the value's little-endian encoding.
        word = store_text(ctx, "", value, "u32")
        return f"({word}) & {'0xffu' if kind == 'bytes8' else '0xffffu'}"
    if value.words:  # the low word, as the reference fits the bytes; f32 memory stores 0.0
        return "0u" if kind == "f32" else words_of(value, 1)[0]
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
        if local.kind in WIDE:
            return wide_local(ctx, local.name, local.kind, None)
        return Value(local.name, local.kind)
    if isinstance(expr, ir.BufLen):
        return Value(ctx.buffer(expr.buffer)[1], "u32")
    if isinstance(expr, ir.Load):
        return load_value(ctx, expr.buffer, _index(ctx, expr.index))
    if isinstance(expr, ir.Binary):
        if not isinstance(expr.op, BinOp):
            raise unsupported(f"opaque binop {expr.op!r}", "use a core BinOp.")
        left = lower_expr(ctx, expr.left)
        right = lower_expr(ctx, expr.right)
        if left.words or right.words:
            return wide_binop(ctx, expr.op, left, right)
        return lower_binop(ctx, expr.op, left, right)
    if isinstance(expr, ir.Unary):
        if not isinstance(expr.op, UnOp):
            raise unsupported(f"opaque unop {expr.op!r}", "use a core UnOp.")
        operand = lower_expr(ctx, expr.operand)
        if operand.words:
            return wide_unop(ctx, expr.op, operand)
        return lower_unop(ctx, expr.op, operand)
    if isinstance(expr, ir.Cast):
        value = lower_expr(ctx, expr.value)
        if expr.target in (Scalar.F16, Scalar.BF16) and value.kind == "f32":
            return _cast_half(ctx, expr.target, value)
        return cast_wide(ctx, expr.target, value) or lower_cast(ctx, expr.target, value)
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
        return lower_subgroup(ctx, expr, ctx.flow[-1])
    raise unsupported(f"{type(expr).__name__} expressions are not lowered",
                      _FIXES.get(type(expr), "run the program on device='reference'."))


_FIXES: dict[type, str] = {
    ir.Call: "pass callees= so the call is inlined before lowering."}


def _cast_half(ctx: Ctx, target: object, value: Value) -> Value:
    """f32 rounded to f16 or bf16 (nearest even; NaN and infinities kept), held as an f32."""
    if target == Scalar.F16:
        return canon(ctx, f"F16_BITS_TO_F32(F32_TO_F16_BITS({value.text}))")
    bits = ctx.temp("u32", f"AS_U32({value.text})")
    special = f"({bits.text} & 0x7f800000u) == 0x7f800000u"
    rounded = f"({bits.text} + 0x7fffu + (({bits.text} >> 16u) & 1u)) & 0xffff0000u"
    return canon(ctx, f"AS_F32({special} ? {bits.text} : {rounded})")


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
    if yes.words:
        return wide_select(ctx, truth(cond), yes, no)
    return ctx.temp(yes.kind, f"{truth(cond)} ? {yes.text} : {no.text}")


# -- subgroups --------------------------------------------------------------------------------


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


def lower_subgroup(ctx: Ctx, expr: ir.Expr, uniform: bool) -> Value:
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
    if isinstance(expr, ir.SubgroupBallot):
        cond = lower_expr(ctx, expr.cond)
        _, base, end = _publish(ctx, Value(f"({truth(cond)} ? 1u : 0u)", "u32"))
        mask = ctx.temp("u32", "0u")
        k = ctx.fresh("k")
        ctx.open_loop(k, base.text, end.text)
        ctx.emit(f"{mask.text} = {mask.text} | (LOAD({SCRATCH}, {k}) << ({k} - {base.text}));")
        ctx.close_loop()
        return mask
    value = lower_expr(ctx, expr.value)  # type: ignore[attr-defined]
    if value.kind not in ("u32", "f32"):
        raise unsupported(f"subgroup op on {value.kind} lanes (the reference errors)",
                          "cast the lane values to u32 or f32.")
    if isinstance(expr, ir.SubgroupShuffle):
        lane = lower_expr(ctx, expr.lane)
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
    ctx.open_loop(k, base.text, end.text)
    word = f"LOAD({SCRATCH}, {k})"
    lane = Value(word if value.kind == "u32" else f"AS_F32({word})", value.kind)
    # The reference folds from the identity in lane order, canonicalizing each f32 step.
    step = lower_binop(ctx, _BINOPS[expr.op], acc, lane)
    ctx.emit(f"{acc.text} = {step.text};")
    ctx.close_loop()
    return acc


# -- statements -------------------------------------------------------------------------------


_REFUSED = {
    ir.IndirectDispatch: "the reference errors on IndirectDispatch; dispatch from the host.",
    ir.AsyncLoad: "async copies are not lowered; use Load/Store loops.",
    ir.AsyncStore: "async copies are not lowered; use Load/Store loops.",
    ir.AsyncWait: "async copies are not lowered; use Load/Store loops.",
    ir.Resume: "the reference errors on Resume."}


def lower_nodes(ctx: Ctx, nodes: tuple[ir.Node, ...]) -> None:
    """Lower a statement list into the current scope.

    Raises:
        UnsupportedOpError: a statement cannot be lowered with the reference's semantics.
    """
    for node in nodes:
        _lower_node(ctx, node)


def _lower_node(ctx: Ctx, node: ir.Node) -> None:
    if isinstance(node, ir.Let):
        value = lower_expr(ctx, node.value)
        local = ctx.bind(node.name, value.kind)
        if value.words:
            wide_local(ctx, local.name, value.kind, value)
        else:
            ctx.emit(f"{ctype(value.kind)} {local.name} = {value.text};")
    elif isinstance(node, ir.Assign):
        _assign(ctx, node)
    elif isinstance(node, ir.Store):
        _store(ctx, node)
    elif isinstance(node, ir.If):
        cond = lower_expr(ctx, node.cond)
        ctx.flow.append(ctx.flow[-1] and uniform_expr(node.cond, ctx.nonuniform, ctx.read_only))
        ctx.open(f"if ({truth(cond)})")
        lower_nodes(ctx, node.then)
        if node.otherwise:
            ctx.close("} else {")
            ctx.scopes.append({})
            ctx.depth += 1
            lower_nodes(ctx, node.otherwise)
        ctx.close()
        ctx.flow.pop()
    elif isinstance(node, ir.Loop):
        _loop(ctx, node)
    elif isinstance(node, (ir.Block, ir.Region)):
        ctx.open("")
        lower_nodes(ctx, node.nodes if isinstance(node, ir.Block) else node.body)
        ctx.close()
    elif isinstance(node, ir.Return):
        ctx.features.add("return")
        ctx.emit("return;")
    elif isinstance(node, ir.Trap):
        lower_expr(ctx, node.address)
        ctx.needs_trap = True
        ctx.emit("STORE(trapflag, 0u, 1u);")
        if not ctx.synchronizing:
            ctx.features.add("return")
            ctx.emit("return;")
    elif isinstance(node, ir.Barrier):
        if node.ordering == MemoryOrdering.GRID_SYNC:
            raise unsupported("GridSync inside If or Loop (the reference only splits the "
                              "top level into segments)", "move the GridSync to the top level.")
        ctx.features.add("barrier")
        ctx.emit("BARRIER();")
    else:
        fix = _REFUSED.get(type(node), "run the program on device='reference'.")
        raise unsupported(f"{type(node).__name__} statements", fix)


def _assign(ctx: Ctx, node: ir.Assign) -> None:
    value = lower_expr(ctx, node.value)
    local = ctx.lookup(node.name)
    if not local.mutable:
        raise unsupported(f"assignment to loop variable {node.name!r}", "use another local.")
    if local.kind != value.kind:
        raise unsupported(f"assignment of {value.kind} to {local.kind} local {node.name!r}",
                          "cast the value to the local's type.")
    if value.words:
        for word, text in zip(wide_local(ctx, local.name, local.kind, None).words, value.words,
                              strict=True):
            ctx.emit(f"{word} = {text};")
        return
    ctx.emit(f"{local.name} = {value.text};")


def _store(ctx: Ctx, node: ir.Store) -> None:
    index = as_u32_index(lower_expr(ctx, node.index))
    if index.kind != "u32":
        raise unsupported(f"{index.kind} store index", "index buffers with a u32 expression.")
    value = lower_expr(ctx, node.value)
    param, length, kind, writable = ctx.buffer(node.buffer)
    if kind in WIDE:
        if not writable:
            raise unsupported(f"store to read-only buffer {node.buffer!r}",
                              "declare it ReadWrite.")
        wide_store(ctx, param, length, kind, index, value)
        return
    word = store_text(ctx, node.buffer, value)
    ctx.emit(f"if ({index.text} < {length}) {{ STORE({param}, {index.text}, {word}); }}")


def _loop(ctx: Ctx, node: ir.Loop) -> None:
    lo = as_u32_index(lower_expr(ctx, node.from_))
    hi = as_u32_index(lower_expr(ctx, node.to))
    if lo.kind != "u32" or hi.kind != "u32":
        raise unsupported("Loop bounds that are not u32", "cast the bounds to u32.")
    # Bounds are evaluated once, at entry; the range is half-open and never wraps.
    start = ctx.temp("u32", lo.text)
    stop = ctx.temp("u32", hi.text)
    var = ctx.fresh(f"l_{sanitize(node.var)}_")
    uniform = ctx.flow[-1] and node.var not in ctx.nonuniform
    ctx.open_loop(var, start.text, stop.text, counter="upasses" if uniform else "passes")
    ctx.scopes[-1][node.var] = Local(var, "u32", False)
    ctx.flow.append(ctx.flow[-1] and node.var not in ctx.nonuniform)
    lower_nodes(ctx, node.body)
    ctx.flow.pop()
    ctx.close_loop()


def zero_fill(ctx: Ctx, arrays: list[tuple[str, int]]) -> None:
    """Zero the workgroup arrays (the reference zero-fills them per workgroup), then barrier."""
    wx, wy, wz = ctx.workgroup_size
    lli = ctx.temp("u32", f"(GLOBAL_ID(0) % {wx}u) + {wx}u * ((GLOBAL_ID(1) % {wy}u) + {wy}u * "
                          f"(GLOBAL_ID(2) % {wz}u))")
    for name, count in arrays:
        k = ctx.fresh("z")
        ctx.open_loop(k, lli.text, f"{count}u", f"{wx * wy * wz}u")
        ctx.emit(f"STORE({name}, {k}, 0u);")
        ctx.close_loop()
    ctx.emit("BARRIER();")


# -- workgroup-uniformity of locals -----------------------------------------------------------


_UNIFORM_LEAVES = (ir.LitU32, ir.LitI32, ir.LitF32, ir.LitBool, ir.BufLen, ir.WorkgroupId,
                   ir.SubgroupSize)
_INNER = (ir.Binary, ir.Unary, ir.Cast, ir.Select, ir.Fma)
_READ_ONLY = (ir.BufferAccess.READ_ONLY, ir.BufferAccess.UNIFORM)


def uniform_expr(expr: ir.Expr, nonuniform: set[str], read_only: set[str]) -> bool:
    """``expr`` has one value across the workgroup (loads only from read-only buffers)."""
    stack = [expr]
    while stack:
        item = stack.pop()
        if isinstance(item, _UNIFORM_LEAVES):
            continue
        if isinstance(item, ir.Var):
            if item.name in nonuniform:
                return False
            continue
        if isinstance(item, _INNER):
            stack.extend(child for _, child in expr_children(item))
            continue
        if isinstance(item, ir.Load) and item.buffer in read_only:
            stack.append(item.index)
            continue
        return False
    return True


def _walk(nodes: tuple[ir.Node, ...], flow: bool, bad: set[str], read_only: set[str]) -> None:
    for node in nodes:
        if isinstance(node, (ir.Let, ir.Assign)):
            if not flow or not uniform_expr(node.value, bad, read_only):
                bad.add(node.name)
        elif isinstance(node, ir.If):
            inner = flow and uniform_expr(node.cond, bad, read_only)
            _walk(node.then, inner, bad, read_only)
            _walk(node.otherwise, inner, bad, read_only)
        elif isinstance(node, ir.Loop):
            inner = flow and uniform_expr(node.from_, bad, read_only) and \
                uniform_expr(node.to, bad, read_only)
            if not inner:
                bad.add(node.var)
            _walk(node.body, inner, bad, read_only)
        elif isinstance(node, ir.Block):
            _walk(node.nodes, flow, bad, read_only)
        elif isinstance(node, ir.Region):
            _walk(node.body, flow, bad, read_only)


def nonuniform_locals(program: ir.Program) -> set[str]:
    """Names of locals that may differ between invocations of a workgroup."""
    read_only = {d.name for d in program.buffers if d.access in _READ_ONLY}
    bad: set[str] = set()
    while True:
        before = len(bad)
        _walk(tuple(program.entry), True, bad, read_only)
        if len(bad) == before:
            return bad
