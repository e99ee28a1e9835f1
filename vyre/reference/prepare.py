"""What the reference does before executing (semantics doc section 1.8).

Re-wrap a non-Region entry, lower WORLD collectives, validate, and scan the program's needs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from vyre import ir
from vyre.reference.inline import inline_calls
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
