"""What the reference does before executing (docs/vyre-semantics.md, Before execution).

Re-wrap a non-Region entry, lower WORLD collectives, inline composite calls, validate, and scan
the program's needs. A ``Call`` whose op id has a callee program is replaced by that program's
body, spliced in before the statement that uses it; the call evaluates to
``_vyre_inl{N}_result`` (``inline_composite_calls``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from vyre import ir
from vyre.reference.semantics import ReferenceExecutionError
from vyre.validate import ValidationOptions, validate

REFERENCE_OPTIONS = ValidationOptions(subgroup_ops=True)
_SUBGROUP_EXPRS = (ir.SubgroupBallot, ir.SubgroupShuffle, ir.SubgroupReduce)


@dataclass(frozen=True, slots=True)
class Prepared:
    """A program ready to execute, with the facts the dispatch needs.

    Attributes:
        program: the (re-wrapped, collective-lowered) program.
        uses_subgroups: it contains a subgroup ballot/shuffle/reduce (lanes are snapshotted).
        has_atomics: it contains an ``Atomic`` expression (forces full-span grid inference).
    """

    program: ir.Program
    uses_subgroups: bool
    has_atomics: bool


def rewrap(program: ir.Program) -> ir.Program:
    """``program_for_interpreter``: wrap a non-Region entry unless empty or led by a Store."""
    entry = program.entry
    if not entry or isinstance(entry[0], ir.Store) or all(isinstance(n, ir.Region) for n in entry):
        return program
    return program.with_(entry=(ir.Region(ir.ROOT_REGION_GENERATOR, None, tuple(entry)),))


class _CollectiveLowering:
    """``lower_single_rank_collectives``: WORLD collectives become no-ops or per-lane copies."""

    def __init__(self) -> None:
        self.counter = 0

    def nodes(self, nodes: tuple[ir.Node, ...]) -> tuple[ir.Node, ...]:
        out: list[ir.Node] = []
        for node in nodes:
            lowered = self.node(node)
            if lowered is not None:
                out.append(lowered)
        return tuple(out)

    def node(self, node: ir.Node) -> ir.Node | None:
        if isinstance(node, ir.AllReduce) and node.group == 0:
            return None
        if isinstance(node, ir.Broadcast) and node.group == 0 and node.root == 0:
            return None
        if isinstance(node, (ir.AllGather, ir.ReduceScatter)) and node.group == 0:
            return self._copy(node.input, node.output)
        if isinstance(node, ir.If):
            return ir.If(node.cond, self.nodes(node.then), self.nodes(node.otherwise))
        if isinstance(node, ir.Loop):
            return ir.Loop(node.var, node.from_, node.to, self.nodes(node.body))
        if isinstance(node, ir.Block):
            return ir.Block(self.nodes(node.nodes))
        if isinstance(node, ir.Region):
            return ir.Region(node.generator, node.source_region, self.nodes(node.body))
        return node

    def _copy(self, src: str, dst: str) -> ir.Node:
        self.counter += 1
        i = ir.Var(f"__vyre_collective_i{self.counter}")
        lt = ir.BinOp.LT
        copy = ir.Store(dst, i, ir.Load(src, i))
        inner = ir.If(ir.Binary(lt, i, ir.BufLen(src)), (copy,))
        return ir.Block((ir.Let(i.name, ir.InvocationId(0)),
                         ir.If(ir.Binary(lt, i, ir.BufLen(dst)), (inner,))))


def _has_collectives(nodes: tuple[ir.Node, ...]) -> bool:
    kinds = (ir.AllReduce, ir.AllGather, ir.ReduceScatter, ir.Broadcast)
    return any(isinstance(n, kinds) for n in walk_nodes(nodes))


def walk_nodes(nodes: tuple[ir.Node, ...]) -> Iterator[ir.Node]:
    """Every statement in ``nodes``, pre-order (iterative, so deep trees cannot overflow)."""
    stack = list(reversed(nodes))
    while stack:
        node = stack.pop()
        yield node
        for child in _child_lists(node):
            stack.extend(reversed(child))


def _child_lists(node: ir.Node) -> tuple[tuple[ir.Node, ...], ...]:
    if isinstance(node, ir.If):
        return (node.then, node.otherwise)
    if isinstance(node, ir.Loop):
        return (node.body,)
    if isinstance(node, ir.Block):
        return (node.nodes,)
    if isinstance(node, ir.Region):
        return (node.body,)
    return ()


def walk_exprs(nodes: tuple[ir.Node, ...]) -> Iterator[ir.Expr]:
    """Every expression under ``nodes`` (iterative)."""
    stack: list[object] = []
    for node in walk_nodes(nodes):
        stack.extend(expr_children(node))
        while stack:
            expr = stack.pop()
            yield expr  # type: ignore[misc]
            stack.extend(expr_children(expr))


def expr_children(obj: object) -> list[ir.Expr]:
    """The expressions held directly by a statement or expression (not by child statements)."""
    if not dataclasses.is_dataclass(obj):
        return []
    out: list[ir.Expr] = []
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, ir.Expr):
            out.append(value)
        elif isinstance(value, tuple):
            out.extend(v for v in value if isinstance(v, ir.Expr))
    return out


def prepare(program: ir.Program, *, check: bool = True,
            callees: Mapping[str, ir.Program] | None = None) -> Prepared:
    """Re-wrap, lower collectives, inline calls, validate (subgroup ops on) and scan ``program``.

    Args:
        program: the program to run.
        check: run the validator (the reference always does; tests of runtime errors on
            programs the validator would reject may turn it off).
        callees: op id -> callee program, for ``Call`` inlining (the registry's builds).

    Returns:
        The prepared program.

    Raises:
        vyre.ValidationError: the validator rejects the program.
    """
    program = rewrap(program)
    if _has_collectives(program.entry):
        program = program.with_(entry=_CollectiveLowering().nodes(program.entry))
    if callees:
        program = inline_calls(program, callees)
    if check:
        validate(program, raise_on_error=True, options=REFERENCE_OPTIONS)
    uses_subgroups = has_atomics = False
    for expr in walk_exprs(program.entry):
        uses_subgroups = uses_subgroups or isinstance(expr, _SUBGROUP_EXPRS)
        has_atomics = has_atomics or isinstance(expr, ir.Atomic)
    return Prepared(program, uses_subgroups, has_atomics)


# -- composite-call inlining ------------------------------------------------------------------


_FORBIDDEN = (ir.InvocationId, ir.WorkgroupId, ir.LocalId, ir.SubgroupBallot,
              ir.SubgroupShuffle, ir.SubgroupReduce, ir.SubgroupLocalId, ir.SubgroupSize)
_PARAM_ACCESS = (ir.BufferAccess.READ_ONLY, ir.BufferAccess.UNIFORM)
_ZERO: dict[Any, ir.Expr] = {
    ir.Scalar.I32: ir.LitI32(0), ir.Scalar.F32: ir.LitF32(0), ir.Scalar.BOOL: ir.LitBool(False),
}


def map_expr(expr: ir.Expr, fn: Callable[[ir.Expr], ir.Expr]) -> ir.Expr:
    """Rebuild ``expr`` bottom-up, applying ``fn`` to every node after its children."""
    changes: dict[str, object] = {}
    for f in dataclasses.fields(expr):  # type: ignore[arg-type]
        value = getattr(expr, f.name)
        if isinstance(value, ir.Expr):
            changes[f.name] = map_expr(value, fn)
        elif isinstance(value, tuple) and value and isinstance(value[0], ir.Expr):
            changes[f.name] = tuple(map_expr(v, fn) for v in value)
    rebuilt = dataclasses.replace(expr, **changes) if changes else expr  # type: ignore[type-var]
    return fn(rebuilt)


def _map_node_exprs(node: ir.Node, fn: Callable[[ir.Expr], ir.Expr]) -> ir.Node:
    changes = {f.name: map_expr(getattr(node, f.name), fn)
               for f in dataclasses.fields(node)  # type: ignore[arg-type]
               if isinstance(getattr(node, f.name), ir.Expr)}
    return dataclasses.replace(node, **changes) if changes else node  # type: ignore[type-var]


def _map_children(node: ir.Node, fn: Callable[[tuple], tuple]) -> ir.Node:
    if isinstance(node, ir.If):
        return dataclasses.replace(node, then=fn(node.then), otherwise=fn(node.otherwise))
    if isinstance(node, ir.Loop):
        return dataclasses.replace(node, body=fn(node.body))
    if isinstance(node, ir.Block):
        return dataclasses.replace(node, nodes=fn(node.nodes))
    if isinstance(node, ir.Region):
        return dataclasses.replace(node, body=fn(node.body))
    return node


class Inliner:
    """Inlines calls to the programs in ``callees`` (op id -> callee program)."""

    def __init__(self, callees: Mapping[str, ir.Program]) -> None:
        self.callees = callees
        self.counter = 0

    def nodes(self, nodes: tuple[ir.Node, ...], stack: tuple[str, ...] = ()) -> tuple:
        """Inline every resolvable call in ``nodes`` (and their children)."""
        out: list[ir.Node] = []
        for node in nodes:
            prefix: list[ir.Node] = []
            node = _map_node_exprs(node, functools.partial(self._call, prefix=prefix, stack=stack))
            node = _map_children(node, lambda body: self.nodes(body, stack))
            out.extend(prefix)
            out.append(node)
        return tuple(out)

    def _call(self, expr: ir.Expr, *, prefix: list[ir.Node], stack: tuple[str, ...]) -> ir.Expr:
        if not isinstance(expr, ir.Call) or expr.op_id not in self.callees:
            return expr
        if expr.op_id in stack:
            raise ReferenceExecutionError(
                f"recursive call of `{expr.op_id}`.", fix="break the call cycle."
            )
        callee = self.callees[expr.op_id]
        params = sorted((d for d in callee.buffers if d.access in _PARAM_ACCESS),
                        key=lambda d: d.binding)
        if len(params) != len(expr.args):
            raise ReferenceExecutionError(
                f"call `{expr.op_id}` passes {len(expr.args)} arguments to {len(params)} "
                "parameters (V021).", fix="pass one argument per callee input buffer.")
        outputs = [d for d in callee.buffers if d.is_output]
        self.counter += 1
        tag = f"_vyre_inl{self.counter}_"
        result = tag + "result"
        zero = _ZERO.get(outputs[0].element, ir.LitU32(0)) if outputs else ir.LitU32(0)
        binding = dict(zip((p.name for p in params), expr.args, strict=True))
        out_name = outputs[0].name if outputs else None
        body = self._rewrite_body(callee.entry, tag, binding, out_name, result, expr.op_id)
        prefix.append(ir.Let(result, zero))
        prefix.extend(self.nodes(body, (*stack, expr.op_id)))
        return ir.Var(result)

    def _rewrite_body(self, nodes: tuple, tag: str, binding: dict[str, ir.Expr],
                      out_name: str | None, result: str, op_id: str) -> tuple:
        def expr_fn(e: ir.Expr) -> ir.Expr:
            if isinstance(e, _FORBIDDEN):
                raise ReferenceExecutionError(
                    f"callee `{op_id}` uses {type(e).__name__}, which a callee may not use.",
                    fix="pass invocation ids and subgroup values in as arguments.")
            if isinstance(e, ir.Var):
                return ir.Var(tag + e.name)
            if isinstance(e, (ir.Load, ir.BufLen)) and e.buffer in binding:
                arg = binding[e.buffer]
                if isinstance(arg, ir.BufferRef):
                    return dataclasses.replace(e, buffer=arg.buffer)
                return arg if isinstance(e, ir.Load) else ir.LitU32(1)
            return e

        def node_fn(n: ir.Node) -> ir.Node:
            n = _map_node_exprs(n, expr_fn)
            if isinstance(n, (ir.Let, ir.Assign)):
                n = dataclasses.replace(n, name=tag + n.name)
            elif isinstance(n, ir.Loop):
                n = dataclasses.replace(n, var=tag + n.var)
            elif isinstance(n, ir.Store) and n.buffer == out_name:
                n = ir.Assign(result, n.value)
            return _map_children(n, lambda body: tuple(node_fn(c) for c in body))

        return tuple(node_fn(n) for n in nodes)


def inline_calls(program: ir.Program, callees: Mapping[str, ir.Program]) -> ir.Program:
    """``program`` with every call to an op in ``callees`` inlined.

    Raises:
        ReferenceExecutionError: recursion, an arity mismatch, or a callee using ids.
    """
    if not callees:
        return program
    return program.with_(entry=Inliner(callees).nodes(program.entry))
