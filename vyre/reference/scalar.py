"""The scalar interpreter: lanes step round-robin, one statement per lane per round.

GridSync segments run in order, workgroups in z/y/x order; barriers release when every live
lane waits, and Ifs holding a barrier must be uniform. STEP (docs/vyre-semantics.md, Lane
stepping) executes one statement, finishes one scoped frame or advances one Loop frame; the
unscoped root frame finishing does not count. Expressions evaluate depth-first, left to right,
as ``eval_expr`` does: Select evaluates all three operands, Atomic evaluates index, expected,
then value. Subgroup operations simulate vyre's 32-lane slices (docs/vyre-semantics.md,
Subgroups): every lane of ``[32*(lli//32), min(n, that+32))`` takes part whatever its control
flow; operands are evaluated with each lane's locals as they were at the start of the round,
against a throwaway copy of memory.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from vyre import ir
from vyre.ir import SubgroupReduceOp
from vyre.reference.memory import Buffer, Memory
from vyre.reference.prepare import expr_children
from vyre.reference.semantics import (
    BYTES,
    F32,
    MASK32,
    U32,
    ReferenceExecutionError,
    StepLimitExceeded,
    Value,
    apply_atomic,
    as_index,
    canonical,
    cast_value,
    check_deadline,
    describe,
    eval_binop,
    eval_unop,
    f32_from_bits,
    fraction_to_f32,
    round_f32,
    truthy,
    try_as_u32,
    try_as_u64,
)

SUBGROUP_WIDTH = 32


# -- lanes --------------------------------------------------------------------------------


class Lane:
    """One invocation of a workgroup (``HashmapInvocation`` in the reference).

    Attributes:
        gid, wid, lid: global, workgroup and local ids (3-tuples of u32).
        lli: linear local index ``lx + wx*(ly + wy*lz)`` (also the lane order).
        locals: every visible binding, flattened (shadowing is an error, so names are unique).
        scopes: names bound per open scope, innermost last.
        immutable: names of loop variables currently bound.
        frames: the frame stack; ``[0, nodes, index, scoped]`` or ``[1, var, next, to, body]``.
        returned, waiting: Return executed; waiting at a barrier.
        uniform_checks: If node id -> first cond seen, for Ifs with a barrier inside them.
        uniform_conflict: this lane saw two different conds for one such If.
        pending_async: tag -> (destination, byte start, payload, size) of an async copy.
    """

    __slots__ = ("gid", "wid", "lid", "lli", "locals", "scopes", "immutable", "frames",
                 "returned", "waiting", "uniform_checks", "uniform_conflict", "pending_async")

    def __init__(self, gid: tuple[int, int, int], wid: tuple[int, int, int],
                 lid: tuple[int, int, int], lli: int, entry: tuple) -> None:
        self.gid, self.wid, self.lid, self.lli = gid, wid, lid, lli
        self.locals: dict[str, Value] = {}
        self.scopes: list[list[str]] = [[]]
        self.immutable: set[str] = set()
        self.frames: list[list] = [[0, entry, 0, False]]
        self.returned = False
        self.waiting = False
        self.uniform_checks: dict[int, bool] = {}
        self.uniform_conflict = False
        self.pending_async: dict[str, tuple[str, int, bytes, int]] = {}

    @property
    def done(self) -> bool:
        """Returned, or every frame finished."""
        return self.returned or not self.frames

    def bind(self, name: str, value: Value) -> None:
        """``Let``: bind a new local in the innermost scope.

        Raises:
            ReferenceExecutionError: the name is already visible (shadowing is an error).
        """
        if name in self.locals:
            raise ReferenceExecutionError(
                f"duplicate local binding `{name}`.",
                fix="choose a unique local name; shadowing is not allowed.",
            )
        self.locals[name] = value
        self.scopes[-1].append(name)

    def assign(self, name: str, value: Value) -> None:
        """``Assign``: overwrite the visible binding ``name``.

        Raises:
            ReferenceExecutionError: the name is undeclared or a loop variable.
        """
        if name not in self.locals:
            raise ReferenceExecutionError(
                f"assignment to undeclared variable `{name}`.",
                fix="add a Let before assigning it.",
            )
        if name in self.immutable:
            raise ReferenceExecutionError(
                f"assignment to loop variable `{name}`.",
                fix="loop variables are immutable; copy it into a Let first.",
            )
        self.locals[name] = value

    def push_scope(self) -> None:
        """Open a child scope."""
        self.scopes.append([])

    def pop_scope(self) -> None:
        """Close the innermost scope, dropping its bindings."""
        for name in self.scopes.pop():
            del self.locals[name]
            self.immutable.discard(name)


class LaneSnapshot:
    """A lane's ids and locals frozen at the start of a scheduling round (for subgroup ops)."""

    __slots__ = ("gid", "wid", "lid", "lli", "locals")

    def __init__(self, lane: Lane) -> None:
        self.gid, self.wid, self.lid, self.lli = lane.gid, lane.wid, lane.lid, lane.lli
        self.locals = dict(lane.locals)


# -- expressions ------------------------------------------------------------------------------


class Evaluator:
    """Evaluates expressions for one lane (a :class:`Lane` or a :class:`LaneSnapshot`).

    Attributes:
        memory: the memory the expressions read.
        snapshots: per-lane round-start snapshots (subgroup programs only), else None.
        charge: called with a work amount for each subgroup lane evaluation (step budget).
    """

    def __init__(self, memory: Memory, snapshots: list | None,
                 charge: Callable[[int], None]) -> None:
        self.memory = memory
        self.snapshots = snapshots
        self.charge = charge

    def eval(self, expr: ir.Expr, lane: Any) -> Value:
        """Evaluate ``expr`` in ``lane``'s context.

        Raises:
            ReferenceExecutionError: any runtime error the reference defines.
        """
        self.charge(1)  # expressions are work too: a step over a huge expression is not cheap
        handler = _HANDLERS.get(type(expr))
        if handler is None:
            raise ReferenceExecutionError(
                f"the reference interpreter does not support expression {type(expr).__name__}.",
                fix="lower extension expressions to core vyre expressions before running.",
            )
        return handler(self, expr, lane)


def _var(ev: Evaluator, e: ir.Var, lane: Any) -> Value:
    try:
        return lane.locals[e.name]
    except KeyError:
        raise ReferenceExecutionError(
            f"reference to undeclared variable `{e.name}`.", fix="add a Let before this use."
        ) from None


def _axis(values: tuple[int, int, int], axis: int) -> Value:
    if not 0 <= axis <= 2:
        raise ReferenceExecutionError(
            f"invocation/workgroup id axis {axis} out of range.", fix="use axis 0, 1 or 2."
        )
    return (U32, values[axis])


def _load(ev: Evaluator, e: ir.Load, lane: Any) -> Value:
    idx = as_index(ev.eval(e.index, lane), "load index")
    value = ev.memory.resolve(e.buffer).load(idx)
    if value[0] == BYTES and len(value[1]) > 4096:
        ev.charge(len(value[1]) >> 12)  # a Bytes-buffer load copies the whole tail
    return value


def _select(ev: Evaluator, e: ir.Select, lane: Any) -> Value:
    cond = truthy(ev.eval(e.cond, lane))
    t = ev.eval(e.true_val, lane)
    f = ev.eval(e.false_val, lane)
    return t if cond else f


def _fma_operand(v: Value, name: str) -> float:
    if v[0] == F32:
        return canonical(v[1])
    if v[0] == U32:
        return canonical(f32_from_bits(v[1]))  # Value::try_as_f32 reads u32 as f32 bits
    raise ReferenceExecutionError(
        f"fma operand `{name}` is {describe(v)}, not a float.", fix="cast to f32 before fma."
    )


def fma_f32(a: float, b: float, c: float) -> float:
    """``a*b + c`` with a single rounding to f32, then canonicalized."""
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)):
        return canonical(a * b + c)  # inf/NaN propagate exactly as IEEE fma does
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        prod_neg = math.copysign(1.0, a) * math.copysign(1.0, b) < 0
        c_neg = math.copysign(1.0, c) < 0
        both_neg_zero = a * b == 0 and c == 0 and prod_neg and c_neg
        return -0.0 if both_neg_zero else 0.0
    return canonical(fraction_to_f32(exact))


def _fma(ev: Evaluator, e: ir.Fma, lane: Any) -> Value:
    a = _fma_operand(ev.eval(e.a, lane), "a")
    b = _fma_operand(ev.eval(e.b, lane), "b")
    c = _fma_operand(ev.eval(e.c, lane), "c")
    return (F32, fma_f32(a, b, c))


def _atomic(ev: Evaluator, e: ir.Atomic, lane: Any) -> Value:
    if (e.op == ir.AtomicOp.COMPARE_EXCHANGE) != (e.expected is not None):
        apply_atomic(e.op, 0, None if e.expected is None else 0, 0)  # type: ignore[arg-type]
    idx = as_index(ev.eval(e.index, lane), "atomic index")
    expected = None
    if e.expected is not None:
        expected = as_index(ev.eval(e.expected, lane), "atomic expected value")
    value = as_index(ev.eval(e.value, lane), "atomic value")
    target = ev.memory.atomic_target(e.buffer)
    old = target.atomic_word(idx)
    if old is None:
        return (U32, 0)  # out of bounds: returns 0 and stores nothing
    target.set_atomic_word(idx, apply_atomic(e.op, old, expected, value))  # type: ignore[arg-type]
    return (U32, old)


def _call(ev: Evaluator, e: ir.Call, lane: Any) -> Value:
    raise ReferenceExecutionError(
        f"Call of operation `{e.op_id}` cannot be executed: the reference interpreter has no "
        "registered build program or CPU facet for it.",
        fix="inline the callee's IR into the program (wrap it in a Region) before running.",
    )


def _buffer_ref(ev: Evaluator, e: ir.BufferRef, lane: Any) -> Value:
    raise ReferenceExecutionError(
        f"BufferRef `{e.buffer}` has no value outside a Call argument.",
        fix="use Load/BufLen to read a buffer.",
    )


# -- subgroups --------------------------------------------------------------------------------


_U32_IDENTITY = {
    SubgroupReduceOp.ADD: 0, SubgroupReduceOp.MUL: 1, SubgroupReduceOp.MIN: MASK32,
    SubgroupReduceOp.MAX: 0, SubgroupReduceOp.AND: MASK32, SubgroupReduceOp.OR: 0,
    SubgroupReduceOp.XOR: 0,
}
_U32_COMBINE: dict[SubgroupReduceOp, Callable[[int, int], int]] = {
    SubgroupReduceOp.ADD: lambda a, b: (a + b) & MASK32,
    SubgroupReduceOp.MUL: lambda a, b: (a * b) & MASK32,
    SubgroupReduceOp.MIN: min, SubgroupReduceOp.MAX: max,
    SubgroupReduceOp.AND: lambda a, b: a & b, SubgroupReduceOp.OR: lambda a, b: a | b,
    SubgroupReduceOp.XOR: lambda a, b: a ^ b,
}
_F32_IDENTITY = {
    SubgroupReduceOp.ADD: 0.0, SubgroupReduceOp.MUL: 1.0, SubgroupReduceOp.MIN: float("inf"),
    SubgroupReduceOp.MAX: float("-inf"),
}
_F32_BINOP = {
    SubgroupReduceOp.ADD: ir.BinOp.ADD, SubgroupReduceOp.MUL: ir.BinOp.MUL,
    SubgroupReduceOp.MIN: ir.BinOp.MIN, SubgroupReduceOp.MAX: ir.BinOp.MAX,
}


def _slice(ev: Evaluator, lane: Any) -> list:
    snapshots = ev.snapshots
    if snapshots is None:  # pragma: no cover - the scheduler snapshots subgroup programs
        raise ReferenceExecutionError(
            "subgroup expression evaluated without lane snapshots.",
            fix="report this as a reference-interpreter bug.",
        )
    start = (lane.lli // SUBGROUP_WIDTH) * SUBGROUP_WIDTH
    return snapshots[start:min(len(snapshots), start + SUBGROUP_WIDTH)]


def _lane_values(ev: Evaluator, expr: ir.Expr, lane: Any) -> list[Value]:
    values = []
    for snap in _slice(ev, lane):
        ev.charge(1)
        values.append(Evaluator(ev.memory.fork(), ev.snapshots, ev.charge).eval(expr, snap))
    return values


def _mixed(what: str) -> ReferenceExecutionError:
    return ReferenceExecutionError(
        f"{what} lanes have mixed or unsupported value types.",
        fix="cast every lane value to the same primitive u32 or f32 type before the subgroup op.",
    )


def ballot(ev: Evaluator, e: ir.SubgroupBallot, lane: Any) -> Value:
    """Bit k of the result is the truthiness of ``cond`` in slice lane k."""
    mask = 0
    for k, value in enumerate(_lane_values(ev, e.cond, lane)):
        if truthy(value):
            mask |= 1 << k
    return (U32, mask)


def shuffle(ev: Evaluator, e: ir.SubgroupShuffle, lane: Any) -> Value:
    """``value`` read from slice lane ``lane``; a source outside the slice gives 0."""
    values = _lane_values(ev, e.value, lane)
    sources = []
    for v in _lane_values(ev, e.lane, lane):
        src = try_as_u32(v)
        if src is None:
            raise ReferenceExecutionError(
                "subgroup_shuffle lane index is not a u32.", fix="use a scalar u32 lane argument."
            )
        sources.append(src)
    offset = lane.lli % SUBGROUP_WIDTH
    src = sources[offset] if offset < len(sources) else MASK32
    for tag, zero in ((U32, 0), (F32, 0.0)):
        if all(v[0] == tag for v in values):
            return values[src] if src < len(values) else (tag, zero)
    raise _mixed("subgroup_shuffle")


def reduce(ev: Evaluator, e: ir.SubgroupReduce, lane: Any) -> Value:
    """Every lane receives the fold of the slice's values, in lane order."""
    values = _lane_values(ev, e.value, lane)
    op = e.op
    if all(v[0] == U32 for v in values):
        acc = _U32_IDENTITY[op]
        combine = _U32_COMBINE[op]
        for _, x in values:
            acc = combine(acc, x)
        return (U32, acc)
    if all(v[0] == F32 for v in values):
        if op not in _F32_IDENTITY:
            raise ReferenceExecutionError(
                f"subgroup reduce {op.name} is not defined for f32 lanes.",
                fix="use Add, Mul, Min or Max for f32 subgroup reductions.",
            )
        acc_v: Value = (F32, _F32_IDENTITY[op])
        for v in values:
            acc_v = (F32, canonical(round_f32(eval_binop(_F32_BINOP[op], acc_v, v)[1])))
        return acc_v
    raise _mixed("subgroup reduce")


# The expression table comes after the subgroup handlers it names.
_HANDLERS: dict[type, Callable[..., Value]] = {
    ir.LitU32: lambda ev, e, lane: (U32, e.value & 0xFFFFFFFF),
    ir.LitI32: lambda ev, e, lane: (1, e.value),
    ir.LitBool: lambda ev, e, lane: (3, bool(e.value)),
    ir.LitF32: lambda ev, e, lane: (F32, canonical(e.value)),
    ir.Var: _var,
    ir.Load: _load,
    ir.BufLen: lambda ev, e, lane: (U32, ev.memory.resolve(e.buffer).length),
    ir.InvocationId: lambda ev, e, lane: _axis(lane.gid, e.axis),
    ir.WorkgroupId: lambda ev, e, lane: _axis(lane.wid, e.axis),
    ir.LocalId: lambda ev, e, lane: _axis(lane.lid, e.axis),
    ir.Binary: lambda ev, e, lane: eval_binop(e.op, ev.eval(e.left, lane),
                                              ev.eval(e.right, lane)),
    ir.Unary: lambda ev, e, lane: eval_unop(e.op, ev.eval(e.operand, lane)),
    ir.Select: _select,
    ir.Cast: lambda ev, e, lane: cast_value(e.target, ev.eval(e.value, lane)),
    ir.Fma: _fma,
    ir.Atomic: _atomic,
    ir.Call: _call,
    ir.BufferRef: _buffer_ref,
    ir.SubgroupLocalId: lambda ev, e, lane: (U32, lane.lli % SUBGROUP_WIDTH),
    ir.SubgroupSize: lambda ev, e, lane: (U32, SUBGROUP_WIDTH),
    ir.SubgroupBallot: ballot,
    ir.SubgroupShuffle: shuffle,
    ir.SubgroupReduce: reduce,
}


# -- statements -------------------------------------------------------------------------------


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


# -- the dispatch loop ------------------------------------------------------------------------


class Dispatch:
    """Runs one program over a grid.

    Attributes:
        steps: lane steps and evaluated expression nodes (plus lane creations and subgroup
            lane evaluations) so far.
        max_steps: the budget; exceeding it raises :class:`StepLimitExceeded`.
        deadline: the ``time.monotonic()`` past which the run raises the same error.
    """

    def __init__(self, program: ir.Program, memory: Memory, workgroup_decls: list[ir.BufferDecl],
                 *, max_steps: int, reverse_lanes: bool, uses_subgroups: bool,
                 deadline: float = math.inf) -> None:
        self.program = program
        self.memory = memory
        self.workgroup_decls = workgroup_decls
        self.max_steps = max_steps
        self.reverse_lanes = reverse_lanes
        self.uses_subgroups = uses_subgroups
        self.steps = 0
        self.deadline = deadline
        self._clock_at = 0  # the step count at which the clock is read next
        self.stepper = Stepper()

    def charge(self, amount: int) -> None:
        """Spend ``amount`` of the step budget.

        Raises:
            StepLimitExceeded: the budget is exhausted.
        """
        self.steps += amount
        if self.steps > self.max_steps:
            raise StepLimitExceeded(
                f"the dispatch exceeded max_steps={self.max_steps} lane steps "
                "(an endless loop, or a very large grid).",
            )
        if self.steps >= self._clock_at:  # reading the clock every step would cost too much
            self._clock_at = self.steps + 4096
            check_deadline(self.deadline)

    def run(self, segments: list[tuple[ir.Node, ...]], grid: tuple[int, int, int]) -> None:
        """Run every segment over the whole grid, in order.

        Raises:
            ReferenceExecutionError: a runtime error of the program.
            StepLimitExceeded: the step budget ran out.
        """
        gx, gy, gz = grid
        for segment in segments:
            for z in range(gz):
                for y in range(gy):
                    for x in range(gx):
                        self._run_workgroup(segment, (x, y, z))

    def _make_lanes(self, entry: tuple, wid: tuple[int, int, int]) -> list[Lane]:
        wx, wy, wz = self.program.workgroup_size
        self.charge(wx * wy * wz)
        base = (wid[0] * wx, wid[1] * wy, wid[2] * wz)
        if max(base[0] + wx, base[1] + wy, base[2] + wz) - 1 > MASK32:
            raise ReferenceExecutionError(
                "workgroup id * workgroup size overflows the u32 global invocation id.",
                fix="reduce the grid or the workgroup size.",
            )
        lanes: list[Lane] = []
        for lz in range(wz):
            for ly in range(wy):
                for lx in range(wx):
                    gid = (base[0] + lx, base[1] + ly, base[2] + lz)
                    lanes.append(Lane(gid, wid, (lx, ly, lz), len(lanes), entry))
        return lanes

    def _run_workgroup(self, entry: tuple, wid: tuple[int, int, int]) -> None:
        self.memory.workgroup = {  # zero-filled for every workgroup (and every segment)
            d.name: Buffer(d, bytearray(d.count * (ir.size_bytes(d.element) or 0)))
            for d in self.workgroup_decls
        }
        lanes = self._make_lanes(entry, wid)
        order = lanes[::-1] if self.reverse_lanes else lanes
        step, memory, charge = self.stepper.step, self.memory, self.charge
        while True:
            live = [lane for lane in lanes if not lane.done]
            if not live:
                break
            snapshots = [LaneSnapshot(lane) for lane in lanes] if self.uses_subgroups else None
            ev = Evaluator(memory, snapshots, charge)
            progressed = False
            for lane in order:
                if lane.returned or lane.waiting or not lane.frames:
                    continue
                charge(1)
                step(lane, ev)
                progressed = True
            self._verify_uniform(lanes)
            if self._release_barrier(lanes):
                continue
            if not progressed and any(lane.waiting for lane in lanes if not lane.done):
                raise ReferenceExecutionError(
                    "not every live invocation reached the same barrier.",
                    fix="move Barrier to uniform control flow.",
                )
        for lane in lanes:
            if lane.pending_async:
                tag = next(iter(lane.pending_async))
                raise ReferenceExecutionError(
                    f"invocation {lane.gid} finished with async transfer `{tag}` still pending.",
                    fix="add AsyncWait for every AsyncLoad/AsyncStore tag.",
                )

    @staticmethod
    def _release_barrier(lanes: list[Lane]) -> bool:
        live = [lane for lane in lanes if not lane.done]
        if live and all(lane.waiting for lane in live):
            for lane in lanes:
                lane.waiting = False
            return True
        return False

    @staticmethod
    def _verify_uniform(lanes: list[Lane]) -> None:
        observed: dict[int, bool] = {}
        for lane in lanes:
            if lane.done or not lane.uniform_checks:
                continue
            conflict = lane.uniform_conflict
            for key, value in lane.uniform_checks.items():
                conflict = conflict or observed.setdefault(key, value) != value
                if conflict:
                    raise ReferenceExecutionError(
                        "Barrier appears inside an If whose condition differs across the "
                        "workgroup (or across iterations).",
                        fix="make the condition uniform or move Barrier outside the branch.",
                    )


def split_grid_sync(entry: tuple[ir.Node, ...]) -> list[tuple[ir.Node, ...]]:
    """Split the top-level body at GridSync barriers (Blocks/Regions holding one are flattened).

    Args:
        entry: the program's entry statements.

    Returns:
        The segments, in order (just ``[entry]`` when there is no GridSync).
    """
    if not any(_has_grid_sync(n) for n in entry):
        return [entry]
    segments: list[list[ir.Node]] = [[]]

    def walk(nodes: tuple[ir.Node, ...]) -> None:
        for node in nodes:
            if isinstance(node, ir.Barrier) and node.ordering == ir.MemoryOrdering.GRID_SYNC:
                segments.append([])
            elif isinstance(node, (ir.Block, ir.Region)) and _has_grid_sync(node):
                walk(node.nodes if isinstance(node, ir.Block) else node.body)
            else:
                segments[-1].append(node)

    walk(entry)
    return [tuple(s) for s in segments]


def _has_grid_sync(node: ir.Node) -> bool:
    if isinstance(node, ir.Barrier):
        return node.ordering == ir.MemoryOrdering.GRID_SYNC
    if isinstance(node, ir.Block):
        return any(_has_grid_sync(n) for n in node.nodes)
    if isinstance(node, ir.Region):
        return any(_has_grid_sync(n) for n in node.body)
    return False
