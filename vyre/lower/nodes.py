"""Statement lowering: scopes, guarded stores, half-open loops, Return and Trap."""

from __future__ import annotations

from vyre import ir
from vyre.ir_types import MemoryOrdering
from vyre.lower.binops import truth
from vyre.lower.ctx import Ctx, Local, ctype, sanitize
from vyre.lower.errors import unsupported
from vyre.lower.exprs import as_u32_index, lower_expr, store_text
from vyre.lower.uniform import uniform_expr

__all__ = ["lower_nodes", "zero_fill"]

_REFUSED = {
    ir.IndirectDispatch: "the reference errors on IndirectDispatch; dispatch from the host.",
    ir.AsyncLoad: "async copies are not lowered; use Load/Store loops.",
    ir.AsyncStore: "async copies are not lowered; use Load/Store loops.",
    ir.AsyncWait: "async copies are not lowered; use Load/Store loops.",
    ir.Resume: "the reference errors on Resume.",
}


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
        ctx.features.add("return")
        ctx.emit("STORE(trapflag, 0u, 1u);")
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
    ctx.emit(f"{local.name} = {value.text};")


def _store(ctx: Ctx, node: ir.Store) -> None:
    index = as_u32_index(lower_expr(ctx, node.index))
    if index.kind != "u32":
        raise unsupported(f"{index.kind} store index", "index buffers with a u32 expression.")
    value = lower_expr(ctx, node.value)
    param, length, _, _ = ctx.buffer(node.buffer)
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
    ctx.open(f"for (u32 {var} = {start.text}; {var} < {stop.text}; {var}++)")
    ctx.scopes[-1][node.var] = Local(var, "u32", False)
    ctx.flow.append(ctx.flow[-1] and node.var not in ctx.nonuniform)
    lower_nodes(ctx, node.body)
    ctx.flow.pop()
    ctx.close()


def zero_fill(ctx: Ctx, arrays: list[tuple[str, int]]) -> None:
    """Zero the workgroup arrays (the reference zero-fills them per workgroup), then barrier."""
    wx, wy, wz = ctx.workgroup_size
    lli = ctx.temp("u32", f"(GLOBAL_ID(0) % {wx}u) + {wx}u * ((GLOBAL_ID(1) % {wy}u) + {wy}u * "
                          f"(GLOBAL_ID(2) % {wz}u))")
    for name, count in arrays:
        k = ctx.fresh("z")
        ctx.emit(f"for (u32 {k} = {lli.text}; {k} < {count}u; {k} += {wx * wy * wz}u) "
                 f"{{ STORE({name}, {k}, 0u); }}")
    ctx.emit("BARRIER();")
