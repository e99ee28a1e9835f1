"""Composite-call inlining (semantics doc section 1.7, ``inline_composite_calls``).

A ``Call`` whose op id has a callee program is replaced by that program's body, spliced in
before the statement that uses it; the call evaluates to ``_vyre_inl{N}_result``.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any

from vyre import ir
from vyre.reference.errors import ReferenceExecutionError

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
