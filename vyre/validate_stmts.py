"""Per-statement rules of the vyre validator, in the reference's order for each node kind."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vyre.ir import (
    AllGather,
    AllReduce,
    Assign,
    AsyncLoad,
    AsyncStore,
    AsyncWait,
    Barrier,
    Broadcast,
    BufferAccess,
    ExtensionNode,
    If,
    IndirectDispatch,
    Let,
    LitI32,
    LitU32,
    Loop,
    MemoryOrdering,
    Node,
    OpaqueNode,
    ReduceScatter,
    Region,
    Store,
)
from vyre.validate_barrier import back_edge_race
from vyre.validate_exprs import debug_identity, extension_problem
from vyre.validate_nodes import SELF_EXCLUSIVE_SUFFIX, Walker
from vyre.validate_report import Where
from vyre.validate_types import (
    BOOL,
    BYTES,
    U32,
    Binding,
    debug_name,
    is_uniform,
    store_compatible,
    type_name,
)

NODE, MEMORY = "Node", "Memory"
_WRITABLE = (BufferAccess.READ_WRITE, BufferAccess.WRITE_ONLY, BufferAccess.WORKGROUP)


def visit(w: Walker, node: Node, where: Where) -> None:
    """Apply the rules of one statement (called in pre-order by :class:`Walker`)."""
    handler = _HANDLERS.get(type(node))
    if handler is not None:
        handler(w, node, where)
    elif isinstance(node, (OpaqueNode, ExtensionNode)):
        _opaque(w, node, where)


def _let(w: Walker, node: Let, where: Where) -> None:
    memo = w.memo()
    w.validate_expr(node.value, where, "value", memo)
    if node.name in w.frame.lets:
        w.sink.error("V032", NODE, where, f"duplicate local binding `{node.name}` in the same "
                     "region", "rename one binding, or move one declaration into an inner "
                     "Block/Region/Loop if a new scope is intended.")
    else:
        w.frame.lets.add(node.name)
        _shadowing(w, node.name, where)
    ty = memo.type_of(node.value)
    w.bind(node.name, Binding(ty if ty is not None else U32, ty is not None, True,
                              is_uniform(node.value, w.scope)))
    w.expr_hazards(where, (node.value,), ())


def _shadowing(w: Walker, name: str, where: Where) -> None:
    if not w.options.allow_shadowing and name in w.scope:
        w.sink.error("V008", NODE, where, f"duplicate local binding `{name}` shadows a binding "
                     "that is still in scope", "choose a unique local name, or pass "
                     "`ValidationOptions(allow_shadowing=True)` to allow nested shadowing.")


def _assign(w: Walker, node: Assign, where: Where) -> None:
    memo, name = w.memo(), node.name
    binding = w.scope.get(name)
    if binding is not None:
        if not binding.mutable:
            w.sink.error("V011", NODE, where, f"assignment to loop variable `{name}`",
                         "loop variables are immutable, so rename instead.")
        value_ty = memo.type_of(node.value) if binding.ty_known else None
        if value_ty is not None and value_ty != binding.ty:
            w.sink.error("V045", NODE, where, f"assignment to `{name}` has type "
                         f"`{type_name(value_ty)}` but the binding was declared as "
                         f"`{type_name(binding.ty)}`", f"cast the value to "
                         f"`{type_name(binding.ty)}` or introduce a new binding with the "
                         "intended type.")
    elif name in w.buffers:
        decl = w.buffers[name]
        if decl.access != BufferAccess.READ_WRITE:
            w.sink.error("V119", NODE, where, f"assignment to buffer `{name}` requires read-write "
                         f"storage but declared access is `{debug_name(decl.access)}`",
                         "use a read-write/output buffer or store into a mutable local binding.")
        value_ty = memo.type_of(node.value)
        if value_ty is not None and not store_compatible(value_ty, decl.element):
            w.sink.error("V045", NODE, where, f"assignment to buffer `{name}` has type "
                         f"`{type_name(value_ty)}` but the buffer element type is "
                         f"`{type_name(decl.element)}`", f"cast the value to "
                         f"`{type_name(decl.element)}` or write to a buffer with the intended "
                         "element type.")
    else:
        w.sink.error("V120", NODE, where, f"assignment to undeclared variable `{name}`",
                     f"add `let {name} = ...;` before this assignment.")
    w.validate_expr(node.value, where, "value", memo)
    if binding is not None and name in w.scope:
        current = w.scope[name]
        current.uniform = current.uniform and is_uniform(node.value, w.scope)
    w.expr_hazards(where, (node.value,), ())


def _store(w: Walker, node: Store, where: Where) -> None:
    memo, buf = w.memo(), node.buffer
    decl = w.buffers.get(buf)
    if decl is None:
        w.sink.error("V064", MEMORY, where, f"store to unknown buffer `{buf}`",
                     "declare it in Program::buffers.")
    else:
        if decl.access not in _WRITABLE:
            w.sink.error("V063", MEMORY, where, f"store to non-writable buffer `{buf}`",
                         "declare it with BufferAccess::ReadWrite, BufferAccess::WriteOnly, or "
                         "BufferAccess::Workgroup.")
        if decl.element == BYTES and not decl.bytes_extraction:
            w.sink.error("V013", MEMORY, where, f"store to buffer `{buf}` with element type "
                         "`bytes` is not supported", "use a typed buffer (U32/I32/F32/...) for "
                         "stores, or declare the buffer with bytes_extraction=True.")
        value_ty = memo.type_of(node.value)
        if value_ty is not None and not store_compatible(value_ty, decl.element):
            w.sink.error("V121", NODE, where, f"Node::Store buffer `{buf}` value has type "
                         f"`{type_name(value_ty)}` but element type is "
                         f"`{type_name(decl.element)}`", "cast the value to the buffer element "
                         "type or use a compatible store type.")
        index_ty = memo.type_of(node.index)
        if index_ty is not None and index_ty != U32:
            w.sink.error("V122", NODE, where, f"Node::Store buffer `{buf}` index has type "
                         f"`{type_name(index_ty)}` but must be `u32`",
                         "cast the index to U32 before storing.")
        _constant_index(w, node, decl.count, where)
    w.validate_expr(node.index, where, "index", memo)
    w.validate_expr(node.value, where, "value", memo)
    w.expr_hazards(where, (node.index, node.value), (buf,))


def _constant_index(w: Walker, node: Store, count: int, where: Where) -> None:
    index = node.index
    if count <= 0 or not isinstance(index, (LitU32, LitI32)):
        return
    if index.value < 0 or index.value >= count:
        w.sink.error("V036", NODE, where, f"constant store index {index.value} is outside buffer "
                     f"`{node.buffer}` of {count} elements", "keep constant store indices "
                     "inside the declared element range.")


def _if(w: Walker, node: If, where: Where) -> None:
    memo = w.memo()
    w.validate_expr(node.cond, where, "cond", memo)
    cond_ty = memo.type_of(node.cond)
    if cond_ty is not None and cond_ty not in (U32, BOOL):
        w.sink.error("V123", NODE, where, f"Node::If condition has type `{type_name(cond_ty)}` "
                     "but must be `u32` or `bool`", "cast or rewrite the condition expression to "
                     "produce `u32` or `bool`.")
    w.last_uniform = is_uniform(node.cond, w.scope)
    w.expr_hazards(where, (node.cond,), (), extend=False)


def _loop(w: Walker, node: Loop, where: Where) -> None:
    memo = w.memo()
    w.validate_expr(node.from_, where, "from_", memo)
    w.validate_expr(node.to, where, "to", memo)
    for code, label, bound in (("V124", "from", node.from_), ("V125", "to", node.to)):
        ty = memo.type_of(bound)
        if ty is not None and ty != U32:
            w.sink.error(code, NODE, where, f"Node::Loop {label}-bound has type "
                         f"`{type_name(ty)}`; legal loop bound type is `u32`",
                         f"cast the `{label}` bound to `u32`.")
    _shadowing(w, node.var, where)
    if back_edge_race(node.body, w.scope):
        w.sink.error("V055", MEMORY, where, "an invocation can return from a synchronizing loop "
                     "body after its last barrier, so the exit and the next iteration's writes "
                     "are unordered across the back edge", "put an unconditional barrier after "
                     "the early exit as the last loop-body node, or make every return guard "
                     "workgroup-uniform.")
    w.last_uniform = is_uniform(node.from_, w.scope) and is_uniform(node.to, w.scope)
    w.expr_hazards(where, (node.from_, node.to), (), extend=False)


def _barrier(w: Walker, node: Barrier, where: Where) -> None:
    if w.frame.divergent:
        w.sink.error("V010", MEMORY, where, "barrier may be reached by only part of a workgroup",
                     "move the barrier to uniform control flow.")
    if node.ordering == MemoryOrdering.RELAXED:
        w.sink.error("V043", MEMORY, where, "barrier uses memory ordering `Relaxed`, but "
                     "barriers must synchronize memory", "use Acquire, Release, AcqRel, or "
                     "SeqCst; use no barrier at all for Relaxed.")
    w.clear_alias()


def _indirect(w: Walker, node: IndirectDispatch, where: Where) -> None:
    if node.count_offset % 4 != 0:
        w.sink.error("V126", NODE, where, f"indirect dispatch offset {node.count_offset} is not "
                     "4-byte aligned", "use an offset aligned to a u32 dispatch count tuple.")
    if node.count_buffer not in w.buffers:
        w.sink.error("V127", NODE, where, "indirect dispatch references unknown buffer "
                     f"`{node.count_buffer}`", "declare the count buffer before validation.")
    w.expr_hazards(where, (), (node.count_buffer,))


def _async_copy(w: Walker, node: AsyncLoad | AsyncStore, where: Where) -> None:
    if not node.tag:
        w.sink.error("V117", NODE, where, "async stream tag is empty", "use a stable non-empty "
                     "tag to pair AsyncLoad and AsyncWait nodes.")
    w.expr_hazards(where, (), (node.source, node.destination))


def _async_wait(w: Walker, node: AsyncWait, where: Where) -> None:
    if not node.tag:
        w.sink.error("V128", NODE, where, "async stream tag is empty", "use a stable non-empty "
                     "tag to pair AsyncLoad and AsyncWait nodes.")


def _collective(w: Walker, node: Node, where: Where) -> None:
    if not w.options.distributed_collectives:
        w.sink.error("V046", NODE, where, "distributed collective nodes require backend "
                     "collective support", "validate with BackendCapabilities { "
                     "supports_distributed_collectives: true, .. } or lower collectives before "
                     "this backend.")
    if isinstance(node, (AllReduce, Broadcast)):
        names: tuple[str, ...] = (node.buffer,)
    else:
        names = (node.input, node.output)  # type: ignore[attr-defined]
    for name in names:
        decl = w.buffers.get(name)
        if decl is None:
            w.sink.error("V046", NODE, where, f"collective references unknown buffer `{name}`",
                         "declare the collective buffer before validation.")
        elif decl.access == BufferAccess.WORKGROUP:
            w.sink.error("V046", NODE, where, f"collective buffer `{name}` is workgroup-local",
                         "use device/global storage visible to the distributed backend.")
    if len(names) == 2:
        src, dst = w.buffers.get(names[0]), w.buffers.get(names[1])
        if src is not None and dst is not None and src.element != dst.element:
            w.sink.error("V046", NODE, where, "collective input/output element mismatch: "
                         f"`{src.name}` is `{type_name(src.element)}`, `{dst.name}` is "
                         f"`{type_name(dst.element)}`", "use matching element types before "
                         "collective lowering.")
    w.expr_hazards(where, (), names)


def _region(w: Walker, node: Region, where: Where) -> None:
    if node.generator.endswith(SELF_EXCLUSIVE_SUFFIX):
        base = node.generator[: -len(SELF_EXCLUSIVE_SUFFIX)]
        w.self_exclusive.setdefault(base, []).append(where.location)


def _opaque(w: Walker, node: Node, where: Where) -> None:
    kind = getattr(node, "kind", "")
    identity = debug_identity(node, kind)
    fix = ("return a stable non-empty `extension_kind`, a human-readable `debug_identity`, and "
           "pass `validate_extension`.")
    if not kind:
        w.sink.error("V031", NODE, where, "opaque node extension has an empty extension_kind",
                     fix)
    if not identity:
        w.sink.error("V031", NODE, where, f"opaque node extension `{kind}` has an empty "
                     "debug_identity", fix)
    problem = extension_problem(node)
    if problem is not None:
        w.sink.error("V031", NODE, where, f"opaque node extension `{kind}`/`{identity}` failed "
                     f"validation: {problem}", fix)


# Trap, Resume, Return and Block have no rules of their own: they only run the limit check.
_HANDLERS: dict[type, Callable[[Walker, Any, Where], None]] = {
    Let: _let, Assign: _assign, Store: _store, If: _if, Loop: _loop, Barrier: _barrier,
    IndirectDispatch: _indirect, AsyncLoad: _async_copy, AsyncStore: _async_copy,
    AsyncWait: _async_wait, AllReduce: _collective, AllGather: _collective,
    ReduceScatter: _collective, Broadcast: _collective, Region: _region,
}
