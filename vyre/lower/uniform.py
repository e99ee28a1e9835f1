"""Workgroup-uniformity of locals, for the subgroup emulation (which needs barriers).

A conservative fixpoint over the whole program: a local is non-uniform when any Let or
Assign of it has a non-uniform value or runs under non-uniform control flow.
"""

from __future__ import annotations

from vyre import ir
from vyre.validate_types import expr_children

__all__ = ["nonuniform_locals", "uniform_expr"]

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
