"""Human-readable dumps of VIR0 blobs: header, digest check, buffers and the node tree."""

from __future__ import annotations

import dataclasses
import struct

import blake3

from vyre import ir
from vyre.errors import WireFormatError
from vyre.wire import HEADER_LEN, MAGIC
from vyre.wire.decode import from_wire
from vyre.wire.fingerprint import fingerprint

_INDENT = "  "


def format_dtype(dtype: ir.DataType) -> str:
    """A compact spelling of a DataType (``u32``, ``array<16>``, ``vec<f32, 4>``...)."""
    if isinstance(dtype, ir.Scalar):
        return dtype.name.lower()
    if isinstance(dtype, ir.Array):
        return f"array<{dtype.element_size}>"
    if isinstance(dtype, ir.Handle):
        return f"handle<{dtype.type_id}>"
    if isinstance(dtype, ir.Vec):
        return f"vec<{format_dtype(dtype.element)}, {dtype.count}>"
    if isinstance(dtype, ir.TensorShaped):
        return f"tensor<{format_dtype(dtype.element)}, {list(dtype.shape)}>"
    if isinstance(dtype, (ir.SparseCsr, ir.SparseCoo)):
        return f"{type(dtype).__name__.lower()}<{format_dtype(dtype.element)}>"
    if isinstance(dtype, ir.SparseBsr):
        return f"sparsebsr<{format_dtype(dtype.element)}, {dtype.block_rows}x{dtype.block_cols}>"
    if isinstance(dtype, ir.DeviceMesh):
        return f"mesh{list(dtype.axes)}"
    if isinstance(dtype, ir.Quantized):
        return (f"quantized<{format_dtype(dtype.storage)}, scale={dtype.scale.kind.name}"
                f"({dtype.scale.param}), zp={dtype.zero_point.kind.name}"
                f"({dtype.zero_point.param})>")
    if isinstance(dtype, ir.OpaqueType):
        return f"opaque<0x{dtype.id:08x}>"
    return repr(dtype)


def _op_name(op: object) -> str:
    if isinstance(op, ir.OpaqueOp):
        return f"opaque(0x{op.id:08x})"
    return str(getattr(op, "name", op))


def format_expr(e: ir.Expr) -> str:
    """A one-line rendering of an expression tree."""
    if isinstance(e, (ir.LitU32, ir.LitI32)):
        return f"{type(e).__name__[3:].lower()}({e.value})"
    if isinstance(e, ir.LitBool):
        return "true" if e.value else "false"
    if isinstance(e, ir.LitF32):
        return f"f32({e.value!r} bits=0x{e.bits:08x})"
    if isinstance(e, ir.Var):
        return f"var({e.name!r})"
    if isinstance(e, ir.Load):
        return f"load({e.buffer!r}, {format_expr(e.index)})"
    if isinstance(e, (ir.BufLen, ir.BufferRef)):
        return f"{'buf_len' if isinstance(e, ir.BufLen) else 'buffer_ref'}({e.buffer!r})"
    if isinstance(e, (ir.InvocationId, ir.WorkgroupId, ir.LocalId)):
        names = {ir.InvocationId: "invocation_id", ir.WorkgroupId: "workgroup_id"}
        return f"{names.get(type(e), 'local_id')}({e.axis})"
    if isinstance(e, ir.Binary):
        return f"binop.{_op_name(e.op)}({format_expr(e.left)}, {format_expr(e.right)})"
    if isinstance(e, ir.Unary):
        return f"unop.{_op_name(e.op)}({format_expr(e.operand)})"
    if isinstance(e, ir.Call):
        return f"call({e.op_id!r}, [{', '.join(format_expr(a) for a in e.args)}])"
    if isinstance(e, ir.Cast):
        return f"cast({format_dtype(e.target)}, {format_expr(e.value)})"
    if isinstance(e, ir.Atomic):
        expected = "" if e.expected is None else f", expected={format_expr(e.expected)}"
        return (f"atomic.{_op_name(e.op)}[{e.ordering.name}]({e.buffer!r}, "
                f"{format_expr(e.index)}{expected}, {format_expr(e.value)})")
    if isinstance(e, ir.SubgroupReduce):
        return f"subgroup_reduce.{e.op.name}({format_expr(e.value)})"
    if isinstance(e, ir.OpaqueExpr):
        return f"opaque({e.kind!r}, {e.payload.hex()})"
    return _generic(e)


def _generic(obj: object) -> str:
    parts = [
        format_expr(v) if isinstance(v, ir.Expr) else repr(v)
        for v in (getattr(obj, f.name) for f in dataclasses.fields(obj))  # type: ignore[arg-type]
    ]
    name = type(obj).__name__
    snake = "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")
    return f"{snake}({', '.join(parts)})"


def format_node(node: ir.Node, depth: int = 0) -> list[str]:
    """Indented lines for ``node`` and its children."""
    pad = _INDENT * depth
    if isinstance(node, (ir.Let, ir.Assign)):
        return [f"{pad}{type(node).__name__} {node.name!r} = {format_expr(node.value)}"]
    if isinstance(node, ir.Store):
        return [f"{pad}Store {node.buffer!r}[{format_expr(node.index)}] = "
                f"{format_expr(node.value)}"]
    if isinstance(node, ir.If):
        return ([f"{pad}If {format_expr(node.cond)}", f"{pad}{_INDENT}then:"]
                + format_body(node.then, depth + 2)
                + [f"{pad}{_INDENT}otherwise:"] + format_body(node.otherwise, depth + 2))
    if isinstance(node, ir.Loop):
        head = f"{pad}Loop {node.var!r} in {format_expr(node.from_)}..{format_expr(node.to)}"
        return [head] + format_body(node.body, depth + 1)
    if isinstance(node, ir.Block):
        return [f"{pad}Block"] + format_body(node.nodes, depth + 1)
    if isinstance(node, ir.Region):
        source = "none" if node.source_region is None else repr(node.source_region)
        head = f"{pad}Region generator={node.generator!r} source_region={source}"
        return [head] + format_body(node.body, depth + 1)
    if isinstance(node, ir.OpaqueNode):
        return [f"{pad}Opaque {node.kind!r} payload={node.payload.hex()}"]
    return [pad + _generic(node)]


def format_body(nodes: tuple[ir.Node, ...], depth: int) -> list[str]:
    """Lines for a statement list (``(empty)`` when empty)."""
    if not nodes:
        return [_INDENT * depth + "(empty)"]
    lines: list[str] = []
    for node in nodes:
        lines.extend(format_node(node, depth))
    return lines


def format_buffer(index: int, b: ir.BufferDecl) -> str:
    """One line describing a buffer declaration."""
    rng = "none" if b.output_byte_range is None else f"{b.output_byte_range[0]}..{b.output_byte_range[1]}"
    hints = b.hints
    return (
        f"  [{index}] name={b.name!r} binding={b.binding} access={b.access.name} "
        f"kind={b.kind.name} element={format_dtype(b.element)} count={b.count} "
        f"is_output={b.is_output} live_out={b.pipeline_live_out} output_byte_range={rng} "
        f"hints(coalesce_axis={hints.coalesce_axis}, align={hints.preferred_alignment}, "
        f"locality={hints.cache_locality.name}) linear_type={b.linear_type.name} "
        f"bytes_extraction={b.bytes_extraction} shape_predicate={b.shape_predicate}"
    )


def format_header(data: bytes) -> list[str]:
    """Header fields and the digest check, for whatever bytes are present."""
    lines = [f"size: {len(data)} bytes"]
    if len(data) < HEADER_LEN:
        return lines + ["header: truncated (needs 40 bytes)"]
    version, flags = struct.unpack_from("<HH", data, 4)
    stored = data[8:HEADER_LEN].hex()
    actual = blake3.blake3(data[HEADER_LEN:]).hexdigest()
    magic_ok = "ok" if data[:4] == MAGIC else "BAD"
    return lines + [
        f"magic: {data[:4]!r} ({magic_ok})",
        f"version: {version}",
        f"flags: 0x{flags:04x}",
        f"digest: {stored}",
        f"body blake3: {actual} ({'ok' if stored == actual else 'MISMATCH'})",
    ]


def inspect_blob(data: bytes, *, preserve_unknown: bool = True) -> tuple[str, bool]:
    """The full report for a blob.

    Args:
        data: the VIR0 bytes.
        preserve_unknown: show unregistered extensions as opaque instead of failing.

    Returns:
        (report text, whether the blob decoded).
    """
    lines = format_header(data)
    try:
        prog = from_wire(data, preserve_unknown=preserve_unknown)
    except WireFormatError as exc:
        return "\n".join(lines + [f"decode: FAILED ({exc.kind})", str(exc)]), False
    lines += [
        "decode: ok",
        f"entry_op_id: {prog.entry_op_id or 'none'}",
        f"workgroup_size: {list(prog.workgroup_size)}",
        f"non_composable_with_self: {str(prog.non_composable_with_self).lower()}",
        f"fingerprint: {fingerprint(prog).hex()}",
        f"buffers ({len(prog.buffers)}):",
    ]
    lines += [format_buffer(i, b) for i, b in enumerate(prog.buffers)]
    lines.append(f"output set: {list(prog.output_buffer_indices)}")
    lines.append(f"entry ({len(prog.entry)} top-level nodes):")
    lines += format_body(prog.entry, 1)
    return "\n".join(lines), True
