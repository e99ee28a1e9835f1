"""Program identity: the canonical form, ``fingerprint`` and vyre's ``PartialEq``.

``fingerprint(program)`` is blake3 of the canonical wire bytes, as vyre 0.7.2's
``Program::fingerprint()`` computes it; ``structural_eq`` compares programs as vyre's
``PartialEq`` does (buffer declaration order ignored).
"""

from __future__ import annotations

import dataclasses

import blake3

from vyre import ir
from vyre.errors import WireFormatError
from vyre.extensions import DEFAULT_REGISTRY
from vyre.wire.encode import hints_bytes, put_data_type, put_shape_predicate, put_tree, to_wire

PROGRAM_WIRE_DIGEST_VERSION = "vyre-program-wire-vir0-blake3-v2"
_FALLBACK_DOMAIN = b"VYRE-PROGRAM-CANONICAL-WIRE-HASH-ERROR\0"
_U32_MAX = 0xFFFFFFFF

_COMMUTATIVE = frozenset({
    ir.BinOp.ADD, ir.BinOp.WRAPPING_ADD, ir.BinOp.SATURATING_ADD, ir.BinOp.MUL,
    ir.BinOp.SATURATING_MUL, ir.BinOp.BIT_AND, ir.BinOp.BIT_OR, ir.BinOp.BIT_XOR, ir.BinOp.EQ,
    ir.BinOp.NE, ir.BinOp.AND, ir.BinOp.OR, ir.BinOp.MIN, ir.BinOp.MAX, ir.BinOp.ABS_DIFF,
})
# Commutative ops whose non-literal operands are also ordered by their encoded bytes.
_ORDER_NON_LITERALS = _COMMUTATIVE - {ir.BinOp.ADD, ir.BinOp.MUL, ir.BinOp.MIN, ir.BinOp.MAX}
_LITERALS = (ir.LitU32, ir.LitI32, ir.LitF32, ir.LitBool)


def buffer_canonical_key(buf: ir.BufferDecl) -> bytes:
    """vyre's ``buffer_decl_canonical_key`` bytes (sorted lexicographically)."""
    out = bytearray()
    name = buf.name.encode("utf-8", "surrogatepass")
    out += len(name).to_bytes(4, "little") + name
    out += int(buf.binding).to_bytes(4, "little")
    out += bytes((int(buf.access), buf.kind.cache_tag))
    put_data_type(out, buf.element)
    out += int(buf.count).to_bytes(4, "little")
    out += bytes((int(buf.is_output), int(buf.pipeline_live_out)))
    if buf.output_byte_range is None:
        out.append(0)
    else:
        out.append(1)
        for value in buf.output_byte_range:
            out += min(value, _U32_MAX).to_bytes(4, "little")
    out += hints_bytes(buf.hints)
    out += bytes((int(buf.bytes_extraction), int(buf.linear_type)))
    put_shape_predicate(out, buf.shape_predicate, 0)
    return bytes(out)


def structural_eq(left: ir.Program, right: ir.Program) -> bool:
    """vyre's ``PartialEq``: buffer declaration order is ignored, entry trees must match.

    Buffers are compared by their sorted canonical keys (:func:`buffer_canonical_key`);
    entries, workgroup size, entry op id and ``non_composable_with_self`` exactly (no
    canonicalization). ``wire_version`` takes no part.

    Args:
        left: one program.
        right: the program to compare with.

    Returns:
        True when both programs are structurally equal.
    """
    if (left.entry, left.workgroup_size, left.entry_op_id, left.non_composable_with_self) != (
        right.entry, right.workgroup_size, right.entry_op_id, right.non_composable_with_self
    ):
        return False
    return sorted(map(buffer_canonical_key, left.buffers)) == sorted(
        map(buffer_canonical_key, right.buffers)
    )


def _expr_bytes(expr: ir.Expr) -> bytes:
    out = bytearray()
    put_tree(out, expr, DEFAULT_REGISTRY)
    return bytes(out)


def _should_swap(op: object, left: ir.Expr, right: ir.Expr) -> bool:
    left_lit, right_lit = isinstance(left, _LITERALS), isinstance(right, _LITERALS)
    if left_lit and not right_lit:
        return True
    if left_lit and right_lit:
        return _expr_bytes(left) > _expr_bytes(right)
    if not left_lit and not right_lit and op in _ORDER_NON_LITERALS:
        return _expr_bytes(left) > _expr_bytes(right)
    return False


def canonical_expr(expr: ir.Expr) -> ir.Expr:
    """Bottom-up rewrite that orders commutative BinOp operands."""
    if isinstance(expr, (ir.OpaqueExpr, ir.ExtensionExpr)):
        return expr
    if isinstance(expr, ir.Binary):
        left, right = canonical_expr(expr.left), canonical_expr(expr.right)
        if type(expr.op) is ir.BinOp and expr.op in _COMMUTATIVE and _should_swap(
            expr.op, left, right
        ):
            left, right = right, left
        return ir.Binary(expr.op, left, right)
    return _map_children(expr, canonical_expr)


def _map_children(obj, fn):
    values = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, ir.Expr):
            value = fn(value)
        elif isinstance(value, tuple) and value and isinstance(value[0], ir.Expr):
            value = tuple(fn(v) for v in value)
        values[f.name] = value
    return obj.__class__(**values)


def canonical_nodes(nodes: tuple[ir.Node, ...]) -> tuple[ir.Node, ...]:
    """Canonicalize each node, splicing Blocks none of whose direct children is a Let."""
    result: list[ir.Node] = []
    for node in nodes:
        node = canonical_node(node)
        if isinstance(node, ir.Block) and not any(isinstance(n, ir.Let) for n in node.nodes):
            result.extend(node.nodes)
        else:
            result.append(node)
    return tuple(result)


def canonical_node(node: ir.Node) -> ir.Node:
    """One node with canonical child lists and expressions."""
    if isinstance(node, (ir.OpaqueNode, ir.ExtensionNode)):
        return node
    changes: dict[str, object] = {}
    for f in dataclasses.fields(node):  # type: ignore[arg-type]
        name = f.name
        value = getattr(node, name)
        if isinstance(value, ir.Expr):
            changes[name] = canonical_expr(value)
        elif isinstance(value, tuple) and name in ("then", "otherwise", "body", "nodes"):
            changes[name] = canonical_nodes(value)
        else:
            changes[name] = value
    return node.__class__(**changes)


def canonicalized(program: ir.Program) -> ir.Program:
    """vyre's ``Program::canonicalized()``: sorted buffers, spliced Blocks, ordered operands."""
    buffers = tuple(sorted(program.buffers, key=buffer_canonical_key))
    return ir.Program(
        buffers, canonical_nodes(program.entry), program.workgroup_size, program.entry_op_id,
        program.non_composable_with_self,
    )


def fingerprint(program: ir.Program) -> bytes:
    """blake3 of ``to_wire(canonicalized(program))`` (whole blob, header included).

    Returns:
        32 raw digest bytes; a domain-separated fallback digest when encoding fails.
    """
    try:
        return blake3.blake3(to_wire(canonicalized(program))).digest()
    except (WireFormatError, RecursionError) as exc:
        detail = getattr(exc, "detail", str(exc)).encode("utf-8", "replace")
        structural = repr(program).encode("utf-8", "replace").hex().encode()
        return blake3.blake3(_FALLBACK_DOMAIN + detail + b"\0" + structural).digest()
