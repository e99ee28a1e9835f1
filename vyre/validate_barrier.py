"""V055: a synchronizing loop must not let invocations return after its last barrier.

Ports ``validate/barrier.rs::check_loop_back_edge`` and ``barrier/exit_uniformity.rs``. The
exit analysis is bounded (nesting and work budget); past the bound the exit is "not proven".
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from vyre.ir import (
    AllGather,
    AllReduce,
    Assign,
    AsyncLoad,
    AsyncStore,
    Atomic,
    Barrier,
    Block,
    Broadcast,
    Expr,
    ExtensionNode,
    If,
    Let,
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
from vyre.validate_types import U32, Binding, Scope, is_uniform, iter_exprs

_ACQUIRING = (MemoryOrdering.ACQUIRE, MemoryOrdering.ACQ_REL, MemoryOrdering.SEQ_CST)
_MAX_NESTING = 64
_WORK_BUDGET = 200_000


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
        if depth > _MAX_NESTING or self.work > _WORK_BUDGET:
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
