"""STEP: advance one lane by exactly one statement (semantics doc section 1.9).

A step executes one statement, finishes one scoped frame, or advances one Loop frame;
the unscoped root frame finishing does not count.
"""

from __future__ import annotations

from collections.abc import Callable

from vyre import ir
from vyre.reference.errors import ReferenceExecutionError
from vyre.reference.exprs import Evaluator
from vyre.reference.lanes import Lane
from vyre.reference.prepare import expr_children
from vyre.reference.values import U32, as_index, truthy, try_as_u64

_NODES, _LOOP = 0, 1


def contains_barrier(nodes: tuple, cache: dict[int, bool]) -> bool:
    """Whether ``nodes`` hold a Barrier, looking into If/Loop/Block but not Region (as vyre)."""
    for node in nodes:
        key = id(node)
        hit = cache.get(key)
        if hit is None:
            if isinstance(node, ir.Barrier):
                hit = True
            elif isinstance(node, ir.If):
                hit = contains_barrier(node.then, cache) or contains_barrier(node.otherwise, cache)
            elif isinstance(node, ir.Loop):
                hit = contains_barrier(node.body, cache)
            elif isinstance(node, ir.Block):
                hit = contains_barrier(node.nodes, cache)
            else:
                hit = False
            cache[key] = hit
        if hit:
            return True
    return False


class Stepper:
    """Executes statements of lanes against one evaluator's memory.

    Attributes:
        barrier_cache: ``contains_barrier`` results by node id.
    """

    def __init__(self) -> None:
        self.barrier_cache: dict[int, bool] = {}
        self.expr_cost: dict[int, int] = {}

    def _cost(self, node: ir.Node) -> int:
        """Extra budget a statement's own expressions cost (big expressions are not free)."""
        cost = self.expr_cost.get(id(node))
        if cost is None:
            count, stack = 0, expr_children(node)
            while stack:
                count += 1
                stack.extend(expr_children(stack.pop()))
            cost = self.expr_cost[id(node)] = count // 32
        return cost

    def step(self, lane: Lane, ev: Evaluator) -> None:
        """Advance ``lane`` by one step (or mark it done when only the root frame remains)."""
        frames = lane.frames
        while frames:
            frame = frames[-1]
            if frame[0] == _LOOP:
                frames.pop()
                nxt, to = frame[2], frame[3]
                if nxt < to:
                    frames.append([_LOOP, frame[1], nxt + 1, to, frame[4]])
                    lane.push_scope()
                    lane.bind(frame[1], (U32, nxt))
                    lane.immutable.add(frame[1])
                    frames.append([_NODES, frame[4], 0, True])
                return
            nodes, index = frame[1], frame[2]
            if index >= len(nodes):
                frames.pop()
                if frame[3]:
                    lane.pop_scope()
                    return
                continue  # the unscoped root frame finishing is not a step
            frame[2] = index + 1
            node = nodes[index]
            cost = self._cost(node)
            if cost:
                ev.charge(cost)
            handler = _NODE_HANDLERS.get(type(node))
            if handler is None:
                raise _unsupported_node(node)
            handler(self, lane, ev, node)
            return


def _let(st: Stepper, lane: Lane, ev: Evaluator, node: ir.Let) -> None:
    lane.bind(node.name, ev.eval(node.value, lane))


def _assign(st: Stepper, lane: Lane, ev: Evaluator, node: ir.Assign) -> None:
    lane.assign(node.name, ev.eval(node.value, lane))


def _store(st: Stepper, lane: Lane, ev: Evaluator, node: ir.Store) -> None:
    idx = as_index(ev.eval(node.index, lane), "store index")
    value = ev.eval(node.value, lane)
    ev.memory.resolve(node.buffer).store(idx, value)


def _if(st: Stepper, lane: Lane, ev: Evaluator, node: ir.If) -> None:
    cond = truthy(ev.eval(node.cond, lane))
    cache = st.barrier_cache
    has_barrier = contains_barrier(node.then, cache) or contains_barrier(node.otherwise, cache)
    # Entries are never cleared (as in the reference): the cond must never change for a lane.
    if has_barrier and lane.uniform_checks.setdefault(id(node), cond) != cond:
        lane.uniform_conflict = True
    lane.push_scope()
    lane.frames.append([_NODES, node.then if cond else node.otherwise, 0, True])


def _loop(st: Stepper, lane: Lane, ev: Evaluator, node: ir.Loop) -> None:
    lo = as_index(ev.eval(node.from_, lane), "loop lower bound")
    hi = as_index(ev.eval(node.to, lane), "loop upper bound")
    lane.frames.append([_LOOP, node.var, lo, hi, node.body])


def _scoped(body_of: Callable) -> Callable:
    def handler(st: Stepper, lane: Lane, ev: Evaluator, node: ir.Node) -> None:
        lane.push_scope()
        lane.frames.append([_NODES, body_of(node), 0, True])

    return handler


def _return(st: Stepper, lane: Lane, ev: Evaluator, node: ir.Return) -> None:
    lane.frames.clear()
    lane.returned = True


def _barrier(st: Stepper, lane: Lane, ev: Evaluator, node: ir.Barrier) -> None:
    if node.ordering == ir.MemoryOrdering.GRID_SYNC:
        raise ReferenceExecutionError(
            "GridSync barrier inside If or Loop cannot be segmented by the reference.",
            fix="put GridSync barriers only at top level or inside Block/Region.",
        )
    lane.waiting = True


def _byte_count(ev: Evaluator, expr: ir.Expr, lane: Lane, label: str) -> int:
    value = try_as_u64(ev.eval(expr, lane))
    if value is None:
        raise ReferenceExecutionError(
            f"{label} cannot be represented as u64.", fix="use a non-negative byte count."
        )
    return value


def _async(is_load: bool) -> Callable:
    def handler(st: Stepper, lane: Lane, ev: Evaluator, node: ir.AsyncLoad) -> None:
        offset = _byte_count(ev, node.offset, lane, "async offset")
        size = _byte_count(ev, node.size, lane, "async size")
        src = ev.memory.resolve(node.source).data
        ev.memory.resolve(node.destination)
        start = offset if is_load else 0
        # Keep only the bytes that exist; the zero padding is applied (bounded) at AsyncWait.
        payload = bytes(src[start:start + size]) if start < len(src) else b""
        ev.charge(len(payload) >> 12)  # copying is work too: keep hostile copies bounded
        if node.tag in lane.pending_async:
            raise ReferenceExecutionError(
                f"async transfer tag `{node.tag}` was started twice before a matching wait.",
                fix="reuse a tag only after AsyncWait completes.",
            )
        lane.pending_async[node.tag] = (node.destination, 0 if is_load else offset, payload, size)

    return handler


def _async_wait(st: Stepper, lane: Lane, ev: Evaluator, node: ir.AsyncWait) -> None:
    transfer = lane.pending_async.pop(node.tag, None)
    if transfer is None:
        raise ReferenceExecutionError(
            f"async wait for tag `{node.tag}` has no matching async transfer.",
            fix="emit AsyncLoad or AsyncStore before AsyncWait.",
        )
    dest_name, start, payload, size = transfer
    dest = ev.memory.resolve(dest_name).data
    if start >= len(dest):
        return
    n = min(size, len(dest) - start)
    dest[start:start + n] = payload[:n] + bytes(n - min(n, len(payload)))


def _trap(st: Stepper, lane: Lane, ev: Evaluator, node: ir.Trap) -> None:
    address = as_index(ev.eval(node.address, lane), "trap address")
    raise ReferenceExecutionError(
        f"reference dispatch trapped: address={address}, tag=`{node.tag}`.",
        fix="handle the trap condition, or run on a runtime with replay support.",
    )


def _unsupported_node(node: ir.Node) -> ReferenceExecutionError:
    what = {
        ir.Resume: "Resume needs a replay runtime",
        ir.IndirectDispatch: "IndirectDispatch needs runtime queue scheduling",
    }.get(type(node), "this node is not executable by the reference interpreter")
    return ReferenceExecutionError(
        f"{type(node).__name__}: {what}.",
        fix="lower it to core vyre nodes (or a static grid) before running the reference.",
    )


def _reject(st: Stepper, lane: Lane, ev: Evaluator, node: ir.Node) -> None:
    raise _unsupported_node(node)


_NODE_HANDLERS: dict[type, Callable] = {
    ir.Let: _let, ir.Assign: _assign, ir.Store: _store, ir.If: _if, ir.Loop: _loop,
    ir.Block: _scoped(lambda n: n.nodes), ir.Region: _scoped(lambda n: n.body),
    ir.Return: _return, ir.Barrier: _barrier, ir.AsyncLoad: _async(True),
    ir.AsyncStore: _async(False), ir.AsyncWait: _async_wait, ir.Trap: _trap,
    ir.Resume: _reject, ir.IndirectDispatch: _reject, ir.AllReduce: _reject,
    ir.AllGather: _reject, ir.ReduceScatter: _reject, ir.Broadcast: _reject,
}
