"""The statement walk of the vyre validator and its per-statement rules.

Mirrors ``PreorderValidator``: one pre-order pass with an explicit stack keeps the scopes,
divergence, the limits (V018/V019) and the fusion-alias state (V116), and applies each
statement's rules in the reference's order for its kind. V055 (a synchronizing loop must not
let invocations return after its last barrier) ports ``validate/barrier.rs::
check_loop_back_edge`` and ``barrier/exit_uniformity.rs``; that exit analysis is bounded
(nesting and work budget), and past the bound the exit is "not proven".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from vyre.ir import (
    AllGather,
    AllReduce,
    Assign,
    AsyncLoad,
    AsyncStore,
    AsyncWait,
    Atomic,
    Barrier,
    Block,
    Broadcast,
    BufferAccess,
    Expr,
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
    Return,
    Store,
    Trap,
)
from vyre.validate_exprs import ExprValidator, debug_identity, extension_problem
from vyre.validate_types import (
    BOOL,
    BYTES,
    U32,
    Binding,
    Buffers,
    Scope,
    Sink,
    TypeMemo,
    ValidationOptions,
    Where,
    collect_accesses,
    debug_name,
    is_uniform,
    iter_exprs,
    store_compatible,
    type_name,
)

MAX_NESTING_DEPTH = 64
MAX_NODE_COUNT = 100_000
LIMITS, COMPOSITION, NODE, MEMORY = "Limits", "Composition", "Node", "Memory"
SELF_EXCLUSIVE_SUFFIX = "#self-exclusive"


@dataclass(slots=True)
class Frame:
    """One open statement sequence: its scope log, sibling Let names and divergence."""

    path: str
    nodes: tuple[Node, ...]
    divergent: bool
    depth: int
    log: list[tuple[str, Binding | None]] = field(default_factory=list)
    lets: set[str] = field(default_factory=set)


class Walker:
    """Walks the entry, keeping the state every statement rule reads."""

    def __init__(self, buffers: Buffers, options: ValidationOptions, sink: Sink) -> None:
        self.buffers = buffers
        self.options = options
        self.sink = sink
        self.scope: Scope = {}
        self.frames: list[Frame] = []
        self.node_count = 0
        self.count_reported = False
        self.depth_reported = False
        self.reads: set[str] = set()
        self.atomics: set[str] = set()
        self.alias_stack: list[tuple[set[str], set[str]]] = []
        self.pending: list[tuple[set[str], set[str]]] = []
        self.self_exclusive: dict[str, list[str]] = {}

    # --- helpers used by the statement rules ------------------------------------------------

    @property
    def frame(self) -> Frame:
        """The innermost open sequence."""
        return self.frames[-1]

    def memo(self) -> TypeMemo:
        """A type oracle for the current scope."""
        return TypeMemo(self.buffers, self.scope)

    def validate_expr(self, expr: Expr, where: Where, label: str, memo: TypeMemo) -> None:
        """Run the expression rules on one statement field."""
        ExprValidator(self.buffers, memo, self.options, self.sink).validate(expr, where.at(label))

    def bind(self, name: str, binding: Binding) -> None:
        """Insert a binding, logging the old one so the sequence end restores it."""
        self.frame.log.append((name, self.scope.get(name)))
        self.scope[name] = binding

    def hazards(self, where: Where, reads: set[str], atomics: set[str], extend: bool) -> None:
        """V116: atomic vs non-atomic access to one buffer since the last barrier."""
        hazards = sorted((atomics & self.reads) | (reads & self.atomics))
        for buffer in hazards:
            self.sink.error("V116", COMPOSITION, where, f"fusion hazard on buffer `{buffer}`: one "
                            "node reads it non-atomically while another issues an atomic access "
                            "without an explicit barrier", "insert `Node::barrier()` between the "
                            "read path and the atomic path, or rename the buffers before fusion.")
        if extend:
            self.reads |= reads
            self.atomics |= atomics
        else:
            self.pending.append((reads, atomics))

    def expr_hazards(self, where: Where, exprs: tuple[Expr, ...], extra_reads: tuple[str, ...],
                     extend: bool = True) -> None:
        """Collect the accesses of ``exprs`` (plus ``extra_reads``) and check V116."""
        reads: set[str] = set(extra_reads)
        atomics: set[str] = set()
        for expr in exprs:
            collect_accesses(expr, reads, atomics)
        self.hazards(where, reads, atomics, extend)

    def clear_alias(self) -> None:
        """A barrier orders everything before it."""
        self.reads.clear()
        self.atomics.clear()

    # --- the walk ---------------------------------------------------------------------------

    def run(self, entry: tuple[Node, ...]) -> None:
        """Walk ``entry`` (the program's top-level statements) in pre-order, applying each
        statement's rules."""
        stack: list[tuple[object, ...]] = [("pop_scope",)]
        stack.extend(("child", n, f"entry[{i}]") for i, n in reversed(list(enumerate(entry))))
        stack.append(("push_alias",))
        stack.append(("push_scope", Frame("entry", tuple(entry), False, 0)))
        while stack:
            item = stack.pop()
            kind = item[0]
            if kind == "child":
                self._child(item[1], item[2], stack)  # type: ignore[arg-type]
            elif kind == "post":
                reads, atomics = self.pending.pop()
                self.reads |= reads
                self.atomics |= atomics
            elif kind == "push_scope":
                self.frames.append(item[1])  # type: ignore[arg-type]
            elif kind == "pop_scope":
                self._pop_scope()
            elif kind == "push_alias":
                self.alias_stack.append((self.reads, self.atomics))
                self.reads, self.atomics = set(), set()
            elif kind == "pop_alias":
                self.reads, self.atomics = self.alias_stack.pop()
            elif kind == "loop_var":
                self.bind(item[1], item[2])  # type: ignore[arg-type]

    def _child(self, node: Node, path: str, stack: list[tuple[object, ...]]) -> None:
        where = Where(path, self.node_count)
        self._check_limits(where)
        visit(self, node, where)
        depth = self.frame.depth + 1
        divergent = self.frame.divergent
        if isinstance(node, If):
            branch_divergent = divergent or not self.last_uniform
            stack.append(("post",))
            _push_sequence(stack, f"{path}.otherwise", node.otherwise, branch_divergent, depth)
            _push_sequence(stack, f"{path}.then", node.then, branch_divergent, depth)
        elif isinstance(node, Loop):
            bounds_uniform = self.last_uniform
            stack.append(("post",))
            var = Binding(U32, True, False, bounds_uniform and not divergent)
            _push_sequence(stack, f"{path}.body", node.body, divergent or not bounds_uniform,
                           depth, ("loop_var", node.var, var))
        elif isinstance(node, Block):
            _push_sequence(stack, f"{path}.nodes", node.nodes, divergent, depth)
        elif isinstance(node, Region):
            _push_sequence(stack, f"{path}.body", node.body, divergent, depth)

    # Set by the If/Loop rules: whether the condition / both bounds are uniform.
    last_uniform: bool = True

    def _check_limits(self, where: Where) -> None:
        self.node_count += 1
        depth = self.frame.depth
        if self.node_count > MAX_NODE_COUNT and not self.count_reported:
            self.count_reported = True
            self.sink.error("V019", LIMITS, where, f"program node count exceeds limit "
                            f"{MAX_NODE_COUNT}", "split the program into smaller kernels or run "
                            "an optimization pass before lowering.")
        if depth > MAX_NESTING_DEPTH and not self.depth_reported:
            self.depth_reported = True
            self.sink.error("V018", LIMITS, where, f"program nesting depth {depth} exceeds max "
                            f"{MAX_NESTING_DEPTH}", "flatten nested If/Loop/Block structures or "
                            "split the program before lowering.")

    def _pop_scope(self) -> None:
        frame = self.frames.pop()
        for name, old in reversed(frame.log):
            if old is None:
                self.scope.pop(name, None)
            else:
                self.scope[name] = old
        for i, node in enumerate(frame.nodes):
            if isinstance(node, Return):
                if i != len(frame.nodes) - 1:
                    self.sink.error("V112", NODE, Where(f"{frame.path}[{i}]"), "unreachable "
                                    "statements after `return`", "remove statements after "
                                    "`return` or reorder them.")
                break

    def report_self_exclusive(self) -> None:
        """V115, after the walk, sorted by generator (reference order)."""
        for base in sorted(self.self_exclusive):
            paths = self.self_exclusive[base]
            if len(paths) > 1:
                self.sink.error("V115", COMPOSITION, Where(paths[1]), f"region `{base}` is marked "
                                "non-composable with itself but appears multiple times in one "
                                "fused program", "split the parser into separate dispatches, or "
                                "give each instance distinct scratch storage before fusion.")


def _push_sequence(stack: list[tuple[object, ...]], path: str, nodes: tuple[Node, ...],
                   divergent: bool, depth: int, pre: tuple[object, ...] | None = None) -> None:
    """Push the frames that open, walk and close one nested sequence."""
    stack.append(("pop_scope",))
    stack.append(("pop_alias",))
    stack.extend(("child", n, f"{path}[{i}]") for i, n in reversed(list(enumerate(nodes))))
    if pre is not None:
        stack.append(pre)
    stack.append(("push_alias",))
    stack.append(("push_scope", Frame(path, tuple(nodes), divergent, depth)))


# -- statement rules --------------------------------------------------------------------------


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


# -- V055: returns after the last barrier of a loop -------------------------------------------


_ACQUIRING = (MemoryOrdering.ACQUIRE, MemoryOrdering.ACQ_REL, MemoryOrdering.SEQ_CST)
_MAX_EXIT_NESTING = 64
_EXIT_WORK_BUDGET = 200_000


def node_children(node: Node) -> tuple[Node, ...]:
    """Every direct child statement of ``node`` (both If arms, loop/block/region bodies)."""
    if isinstance(node, If):
        return tuple(node.then) + tuple(node.otherwise)
    if isinstance(node, (Loop, Region)):
        return tuple(node.body)
    if isinstance(node, Block):
        return tuple(node.nodes)
    return ()


def iter_nodes(node: Node) -> Iterator[Node]:
    """``node`` and all its descendants (pre-order, iterative)."""
    stack = [node]
    while stack:
        item = stack.pop()
        yield item
        stack.extend(reversed(node_children(item)))


def _splice(body: tuple[Node, ...]) -> list[Node]:
    """Flatten Block/Region (unconditional, in order) into one straight-line step list."""
    steps: list[Node] = []
    stack: list[Node] = list(reversed(body))
    while stack:
        node = stack.pop()
        if isinstance(node, Block):
            stack.extend(reversed(node.nodes))
        elif isinstance(node, Region):
            stack.extend(reversed(node.body))
        else:
            steps.append(node)
    return steps


def back_edge_race(body: tuple[Node, ...], scope: Scope) -> bool:
    """True when V055 applies to a loop with this body (see barrier.rs check_loop_back_edge)."""
    steps = _splice(body)
    if not any(isinstance(n, Barrier) for step in steps for n in iter_nodes(step)):
        return False
    exits = [i for i, step in enumerate(steps)
             if any(isinstance(n, Return) for n in iter_nodes(step))]
    if not exits:
        return False
    last_exit = exits[-1]
    if any(isinstance(step, Barrier) for step in steps[last_exit + 1:]):
        return False
    return not _exits_are_uniform(steps[: last_exit + 1], scope)


@dataclass(slots=True)
class _State:
    scope: dict[str, Binding]
    dirty: set[str] = field(default_factory=set)
    loads_settled: bool = False
    unknown_write: bool = False

    def copy(self) -> _State:
        return _State(dict(self.scope), set(self.dirty), self.loads_settled, self.unknown_write)

    def key(self) -> tuple[object, ...]:
        uniform = tuple(sorted((k, v.uniform) for k, v in self.scope.items()))
        return (uniform, tuple(sorted(self.dirty)), self.loads_settled, self.unknown_write)


class _Budget(Exception):
    """Raised when the analysis exceeds its nesting or work bound (the exit is not proven)."""


@dataclass(slots=True)
class _Proof:
    has_return: bool = False
    all_collective: bool = True

    def merge(self, other: _Proof) -> None:
        self.has_return |= other.has_return
        self.all_collective &= other.all_collective


def _exits_are_uniform(steps: list[Node], scope: Scope) -> bool:
    barriers = [i for i, step in enumerate(steps) if isinstance(step, Barrier)]
    if not barriers:
        return False
    last = barriers[-1]
    ordering = steps[last].ordering  # type: ignore[attr-defined]
    state = _State(dict(scope), set(), ordering in _ACQUIRING, False)
    analyzer = _ExitAnalyzer()
    proof = _Proof()
    try:
        for node in steps[last + 1:]:
            proof.merge(analyzer.node(node, state, True, 0))
    except _Budget:
        return False
    return proof.has_return and proof.all_collective


def _merge(left: _State, right: _State) -> _State:
    scope = {
        name: Binding(b.ty, b.ty_known, b.mutable, b.uniform and right.scope[name].uniform)
        for name, b in left.scope.items() if name in right.scope
    }
    return _State(scope, left.dirty | right.dirty, left.loads_settled and right.loads_settled,
                  left.unknown_write or right.unknown_write)


class _ExitAnalyzer:
    """Abstract interpretation of the statements after the last barrier."""

    def __init__(self) -> None:
        self.work = 0

    def _uniform(self, expr: Expr, state: _State) -> bool:
        def settled(buffer: str) -> bool:
            return state.loads_settled and not state.unknown_write and buffer not in state.dirty

        return is_uniform(expr, state.scope, settled)

    @staticmethod
    def _invalidate(expr: Expr, state: _State) -> None:
        state.dirty.update(e.buffer for e in iter_exprs(expr) if isinstance(e, Atomic))

    def sequence(self, nodes: tuple[Node, ...], state: _State, path_uniform: bool,
                 depth: int) -> _Proof:
        proof = _Proof()
        for node in nodes:
            proof.merge(self.node(node, state, path_uniform, depth))
        return proof

    def node(self, node: Node, state: _State, path_uniform: bool, depth: int) -> _Proof:
        self.work += 1
        if depth > _MAX_EXIT_NESTING or self.work > _EXIT_WORK_BUDGET:
            raise _Budget
        if isinstance(node, (Let, Assign)):
            uniform = self._uniform(node.value, state)
            self._invalidate(node.value, state)
            if isinstance(node, Let):
                state.scope[node.name] = Binding(U32, False, True, uniform)
            elif node.name in state.scope:
                old = state.scope[node.name]
                state.scope[node.name] = Binding(old.ty, old.ty_known, old.mutable, uniform)
        elif isinstance(node, Store):
            self._invalidate(node.index, state)
            self._invalidate(node.value, state)
            state.dirty.add(node.buffer)
        elif isinstance(node, If):
            return self._if(node, state, path_uniform, depth)
        elif isinstance(node, Loop):
            return self._loop(node, state, path_uniform, depth)
        elif isinstance(node, (AsyncLoad, AsyncStore)):
            self._invalidate(node.offset, state)
            self._invalidate(node.size, state)
            state.dirty.add(node.destination)
        elif isinstance(node, Trap):
            self._invalidate(node.address, state)
        elif isinstance(node, (AllReduce, Broadcast)):
            state.dirty.add(node.buffer)
        elif isinstance(node, (AllGather, ReduceScatter)):
            state.dirty.add(node.output)
        elif isinstance(node, Return):
            return _Proof(True, path_uniform)
        elif isinstance(node, Barrier):
            if node.ordering in _ACQUIRING:
                state.dirty.clear()
                state.loads_settled = True
                state.unknown_write = False
        elif isinstance(node, Block):
            return self.sequence(node.nodes, state, path_uniform, depth + 1)
        elif isinstance(node, Region):
            return self.sequence(node.body, state, path_uniform, depth + 1)
        elif isinstance(node, (OpaqueNode, ExtensionNode)):
            state.unknown_write = True
        return _Proof()

    def _if(self, node: If, state: _State, path_uniform: bool, depth: int) -> _Proof:
        cond_uniform = self._uniform(node.cond, state)
        self._invalidate(node.cond, state)
        then_state, else_state = state.copy(), state.copy()
        inner = path_uniform and cond_uniform
        proof = self.sequence(node.then, then_state, inner, depth + 1)
        proof.merge(self.sequence(node.otherwise, else_state, inner, depth + 1))
        merged = _merge(then_state, else_state)
        state.scope, state.dirty = merged.scope, merged.dirty
        state.loads_settled, state.unknown_write = merged.loads_settled, merged.unknown_write
        return proof

    def _loop(self, node: Loop, state: _State, path_uniform: bool, depth: int) -> _Proof:
        bounds_uniform = self._uniform(node.from_, state) and self._uniform(node.to, state)
        self._invalidate(node.from_, state)
        self._invalidate(node.to, state)
        entry = state.copy()
        proof = _Proof()
        while True:
            body_state = entry.copy()
            body_state.scope[node.var] = Binding(U32, True, False, bounds_uniform)
            proof.merge(self.sequence(node.body, body_state, path_uniform and bounds_uniform,
                                      depth + 1))
            body_state.scope.pop(node.var, None)
            following = _merge(entry, body_state)
            if following.key() == entry.key():
                break
            entry = following
        merged = _merge(state, entry)
        state.scope, state.dirty = merged.scope, merged.dirty
        state.loads_settled, state.unknown_write = merged.loads_settled, merged.unknown_write
        return proof
