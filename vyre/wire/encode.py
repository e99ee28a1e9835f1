"""``to_wire``: :class:`~vyre.ir.Program` -> VIR0 bytes, byte-identical with vyre 0.7.2.

The node and expression walk is iterative (an explicit stack), like vyre's ``put_expr``: no
recursion limit.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable
from typing import Any

import blake3

from vyre import ir
from vyre.errors import EncodeError, WireValidationError
from vyre.extensions import DEFAULT_REGISTRY, ExtensionRegistry, encode_extension
from vyre.ir import canonical_f32_bits
from vyre.wire import (
    FLAG_OPAQUE_ENDIAN_FIXED,
    MAGIC,
    MAX_DECODE_DEPTH,
    MAX_MESH_AXES,
    MAX_OPAQUE_PAYLOAD_LEN,
    MAX_SHAPE_PREDICATE_DEPTH,
    MAX_TENSOR_RANK,
    METADATA_MARKER,
    METADATA_OP_ID,
    OPAQUE_TAG,
    WIRE_FORMAT_VERSION,
    version_is_supported,
)
from vyre.wire.primitives import (
    U64_MAX,
    leb_bytes,
    put_i32,
    put_leb,
    put_leb_string,
    put_string,
    put_u8,
    put_u32,
    put_u64,
    u32_bytes,
)


def to_wire(
    program: ir.Program,
    *,
    version: int | None = None,
    registry: ExtensionRegistry | None = None,
) -> bytes:
    """Encode ``program`` exactly as vyre 0.7.2's ``Program::to_wire`` does.

    Args:
        program: the program.
        version: header version to write; default 6. 4 or 5 writes the older buffer record
            (for re-encoding a decoded old blob byte for byte) and refuses rev-6 fields.
        registry: extension encoders for typed extension nodes/exprs.

    Returns:
        The blob: 40-byte header (magic, version, flags=4, blake3(body)) then the body.

    Raises:
        EncodeError: the program is one the reference encoder refuses, or is not valid IR.
    """
    version = WIRE_FORMAT_VERSION if version is None else version
    if not version_is_supported(version):
        raise EncodeError(f"Fix: wire version {version} is not writable; use 4, 5 or 6.")
    if not isinstance(program, ir.Program):
        raise EncodeError(f"Fix: to_wire needs a vyre Program, got {type(program).__name__}.")
    check_encodable(program)
    try:
        body = encode_body(program, version, registry or DEFAULT_REGISTRY)
    except RecursionError:
        raise EncodeError(
            "Fix: a DataType or shape predicate is nested too deeply to encode; flatten it."
        ) from None
    header = MAGIC + struct.pack("<HH", version, FLAG_OPAQUE_ENDIAN_FIXED)
    blob = header + blake3.blake3(body).digest() + body
    if ir.check_depth(program.entry) >= MAX_DECODE_DEPTH // 2:
        # Deep enough that the decoder's depth bound may refuse it: never emit what from_wire
        # refuses. Decoding measures that bound exactly (data types count too).
        from vyre.wire.decode import from_wire

        try:
            from_wire(blob, preserve_unknown=True, registry=registry)
        except WireValidationError as exc:
            raise EncodeError(exc.detail) from None
    return blob


def encode_body(program: ir.Program, version: int, registry: ExtensionRegistry) -> bytes:
    """The body: node records, memory regions, output set."""
    out = bytearray()
    put_leb(out, len(program.entry) + 1)
    _put_record(out, METADATA_OP_ID, metadata_payload(program, version))
    payload = bytearray()
    for node in program.entry:
        payload.clear()
        put_tree(payload, node, registry)
        _put_record(out, node_op_id(node), payload)
    put_memory_regions(out, program.buffers)
    put_output_set(out, program.buffers)
    return bytes(out)


def node_op_id(node: object) -> str:
    """The record op id of a top-level node (the extension kind for Opaque nodes)."""
    if isinstance(node, ir.Node):
        return node.op_id
    raise EncodeError(f"Fix: entry item {node!r} is not a vyre Node.")


def _put_record(out: bytearray, op_id: str, payload: bytes | bytearray) -> None:
    put_leb_string(out, op_id)
    put_leb(out, len(payload))
    out += payload
    out.append(0)


def metadata_payload(program: ir.Program, version: int) -> bytes:
    """The metadata record payload."""
    out = bytearray(METADATA_MARKER)
    if program.entry_op_id is None:
        out.append(0)
    else:
        out.append(1)
        put_string(out, program.entry_op_id, "entry_op_id")
    if len(program.workgroup_size) != 3:
        raise EncodeError("Fix: workgroup_size must have exactly three axes.")
    for size in program.workgroup_size:
        put_u32(out, size, "workgroup size")
    out.append(1 if program.non_composable_with_self else 0)
    put_leb(out, len(program.buffers))
    for buf in program.buffers:
        put_buffer_record(out, buf, version)
    return bytes(out)


# -- buffers: metadata records, memory regions, output set -------------------------------------


def hints_bytes(hints: ir.MemoryHints) -> bytes:
    """The MemoryHints block: 6 or 7 bytes."""
    out = bytearray()
    if hints.coalesce_axis is None:
        out.append(0)
    else:
        out.append(1)
        put_u8(out, hints.coalesce_axis, "coalesce_axis")
    put_u32(out, hints.preferred_alignment, "preferred_alignment")
    out.append(_enum_byte(hints.cache_locality, ir.CacheLocality, "cache_locality"))
    return bytes(out)


def put_shape_predicate(out: bytearray, pred: ir.ShapePredicate | None, depth: int) -> None:
    """Append an optional ShapePredicate, bounded to MAX_SHAPE_PREDICATE_DEPTH."""
    if pred is None:
        out.append(0)
        return
    if depth >= MAX_SHAPE_PREDICATE_DEPTH:
        raise EncodeError(
            "Fix: shape predicate nests deeper than the wire limit; flatten the And/Or/Not tree."
        )
    if isinstance(pred, (ir.AtLeast, ir.AtMost, ir.Exactly, ir.MultipleOf)):
        out.append(pred.TAG)
        put_u32(out, pred.n, "shape predicate bound")
    elif isinstance(pred, ir.ModEquals):
        out.append(5)
        put_u32(out, pred.modulus, "shape predicate modulus")
        put_u32(out, pred.remainder, "shape predicate remainder")
    elif isinstance(pred, ir.AffineRange):
        out.append(6)
        for value in (pred.scale, pred.offset, pred.min, pred.max):
            if isinstance(value, bool) or not isinstance(value, int) or not (
                -(1 << 63) <= value < 1 << 63
            ):
                raise EncodeError(f"Fix: AffineRange parameter {value!r} does not fit i64.")
            put_leb(out, value & U64_MAX)
    elif isinstance(pred, (ir.PredicateAnd, ir.PredicateOr)):
        out.append(7 if isinstance(pred, ir.PredicateAnd) else 8)
        put_nested(out, pred.left, depth)
        put_nested(out, pred.right, depth)
    elif isinstance(pred, ir.PredicateNot):
        out.append(9)
        put_nested(out, pred.inner, depth)
    else:
        raise EncodeError(f"Fix: {pred!r} is not a ShapePredicate; unmapped variant.")


def put_nested(out: bytearray, pred: ir.ShapePredicate, depth: int) -> None:
    """An And/Or/Not operand, which must be present."""
    if pred is None:
        raise EncodeError("Fix: shape predicate connective has an absent operand.")
    put_shape_predicate(out, pred, depth + 1)


def put_buffer_record(out: bytearray, buf: ir.BufferDecl, version: int) -> None:
    """Append one metadata buffer record."""
    put_string(out, buf.name, "buffer name")
    put_u32(out, buf.binding, "binding")
    put_u32(out, buf.count, "buffer count")
    out.append(1 if buf.is_output else 0)
    out.append(1 if buf.pipeline_live_out else 0)
    if buf.output_byte_range is None:
        out.append(0)
    else:
        out.append(1)
        start, end = buf.output_byte_range
        put_leb(out, start, "output range start")
        put_leb(out, end, "output range end")
    out += hints_bytes(buf.hints)
    if version >= 6:
        out.append(_enum_byte(buf.linear_type, ir.LinearType, "linear_type"))
        out.append(1 if buf.bytes_extraction else 0)
        put_shape_predicate(out, buf.shape_predicate, 0)
    elif (
        buf.linear_type != ir.LinearType.UNRESTRICTED
        or buf.bytes_extraction
        or buf.shape_predicate is not None
    ):
        raise EncodeError(
            f"Fix: buffer `{buf.name}` uses rev-6 fields (linear_type, bytes_extraction, "
            f"shape_predicate) that wire version {version} cannot carry; encode at version 6."
        )


def dense_element(dtype: ir.DataType, count: int) -> tuple[int, bytes]:
    """(element tag, shape payload) of a memory-region element."""
    shape = bytearray(leb_bytes(count, "buffer count"))
    if type(dtype) is ir.Scalar:
        return int(dtype), bytes(shape)
    if isinstance(dtype, ir.Array):
        put_leb(shape, dtype.element_size, "array element_size")
        return 0x08, bytes(shape)
    if isinstance(dtype, ir.Handle):
        put_leb(shape, dtype.type_id, "handle type id")
        return 0x13, bytes(shape)
    if isinstance(dtype, ir.OpaqueType):
        put_leb(shape, dtype.id, "opaque DataType id")
        return OPAQUE_TAG, bytes(shape)
    if isinstance(dtype, ir.Quantized):
        if dtype.storage not in ir.QUANTIZED_STORAGE:
            raise EncodeError(
                "Fix: quantized memory-region storage must be "
                "I4/I8/I16/U8/U16/F8E4M3/F8E5M2/FP4/NF4."
            )
        check_quantized(dtype)
        put_leb(shape, int(dtype.storage))  # type: ignore[arg-type]
        for kind, param in ((dtype.scale.kind, dtype.scale.param),
                            (dtype.zero_point.kind, dtype.zero_point.param)):
            put_leb(shape, int(kind))
            put_leb(shape, param, "quantization parameter")
        return 0x1F, bytes(shape)
    if isinstance(dtype, (ir.Vec, ir.TensorShaped)):
        return (0x14 if isinstance(dtype, ir.Vec) else 0x15), bytes(shape)
    if isinstance(dtype, (ir.SparseCsr, ir.SparseCoo, ir.SparseBsr, ir.DeviceMesh)):
        raise EncodeError(
            "Fix: unknown DataType variant cannot be serialized into VYRE wire format. "
            "Sparse/Vec/TensorShaped/DeviceMesh types are not valid buffer elements in the dense "
            "memory-region encoder; lower to a supported scalar/array/handle/opaque first."
        )
    raise EncodeError(f"Fix: {dtype!r} is not a vyre DataType; unmapped variant.")


def put_memory_regions(out: bytearray, buffers: tuple[ir.BufferDecl, ...]) -> None:
    """Append the memory-region section."""
    put_leb(out, len(buffers))
    for index, buf in enumerate(buffers):
        put_leb(out, index)
        out.append(_enum_byte(buf.kind, ir.MemoryKind, "memory kind"))
        out.append(_enum_byte(buf.access, ir.BufferAccess, "buffer access"))
        tag, shape = dense_element(buf.element, buf.count)
        out.append(tag)
        out.append(0)
        put_leb(out, len(shape))
        out += shape
        hints = hints_bytes(buf.hints)
        put_leb(out, len(hints))
        out += hints


def put_output_set(out: bytearray, buffers: tuple[ir.BufferDecl, ...]) -> None:
    """Append the output set: indices of ReadWrite/WriteOnly buffers."""
    indices = [i for i, b in enumerate(buffers) if b.is_writable]
    put_leb(out, len(indices))
    for index in indices:
        put_leb(out, index)


def check_encodable(program: ir.Program) -> None:
    """vyre's ``reject_non_roundtrippable_shapes`` preconditions."""
    for axis, size in enumerate(program.workgroup_size):
        if size == 0:
            raise EncodeError(
                f"Fix: workgroup_size[{axis}] is 0. Encode only programs whose workgroup "
                "dimensions are >= 1."
            )
    for buf in program.buffers:
        _check_buffer(buf)


def _check_buffer(buf: ir.BufferDecl) -> None:
    name = buf.name
    if buf.count == 0 and buf.access == ir.BufferAccess.WORKGROUP:
        raise EncodeError(
            f"Fix: workgroup buffer `{name}` has count 0. Encode only positive-length "
            "shared-memory buffers."
        )
    if buf.count == 0 and buf.pipeline_live_out:
        raise EncodeError(
            f"Fix: live-out buffer `{name}` has count 0. Encode only positive-length "
            "externally-visible buffers."
        )
    if buf.output_byte_range is None:
        return
    start, end = buf.output_byte_range
    full = None
    if buf.count != 0:
        size = ir.size_bytes(buf.element)
        if size is None:
            raise EncodeError(
                f"Fix: static output buffer `{name}` uses a runtime-sized element type. Lower it "
                "to a fixed-width GPU storage type before wire encoding."
            )
        full = buf.count * size
        if full > U64_MAX:
            raise EncodeError(
                f"Fix: output buffer `{name}` byte size overflows u64 during wire encoding. "
                "Split the buffer before serialization."
            )
    if start > end:
        raise EncodeError(
            f"Fix: buffer `{name}` output byte range has start ({start}) > end ({end}). Encode "
            "only valid ranges."
        )
    if full is not None and end > full:
        raise EncodeError(
            f"Fix: buffer `{name}` output byte range end ({end}) exceeds full buffer size "
            f"({full}). Encode only ranges that fit within the declared buffer size."
        )


# -- nodes, expressions and expression-context DataTypes ---------------------------------------


Item = Any
Handler = Callable[[bytearray, Any], tuple[Item, ...]]


def _enum_byte(value: object, enum_type: type[enum.IntEnum], label: str) -> int:
    if type(value) is not enum_type:
        raise EncodeError(f"Fix: {label} must be a {enum_type.__name__}, got {value!r}.")
    return int(value)  # type: ignore[call-overload]


def _put_op(out: bytearray, op: object, enum_type: type[enum.IntEnum], label: str) -> None:
    if isinstance(op, ir.OpaqueOp):
        out.append(OPAQUE_TAG)
        put_u32(out, op.id, f"opaque {label} id")
    else:
        out.append(_enum_byte(op, enum_type, label))


def _nodes(body: tuple[ir.Node, ...] | list[ir.Node]) -> tuple[Item, ...]:
    return (u32_bytes(len(body), "node count"), *body)


# -- statements -------------------------------------------------------------------------------

def _let(out: bytearray, n: ir.Let | ir.Assign) -> tuple[Item, ...]:
    out.append(n.TAG)
    put_string(out, n.name)
    return (n.value,)


def _store(out: bytearray, n: ir.Store) -> tuple[Item, ...]:
    out.append(2)
    put_string(out, n.buffer)
    return (n.index, n.value)


def _if(out: bytearray, n: ir.If) -> tuple[Item, ...]:
    out.append(3)
    return (n.cond, *_nodes(n.then), *_nodes(n.otherwise))


def _loop(out: bytearray, n: ir.Loop) -> tuple[Item, ...]:
    out.append(4)
    put_string(out, n.var)
    return (n.from_, n.to, *_nodes(n.body))


def _tag_only(out: bytearray, n: Any) -> tuple[Item, ...]:
    out.append(n.TAG)
    return ()


def _block(out: bytearray, n: ir.Block) -> tuple[Item, ...]:
    out.append(6)
    return _nodes(n.nodes)


def _barrier(out: bytearray, n: ir.Barrier) -> tuple[Item, ...]:
    out.append(7)
    out.append(_enum_byte(n.ordering, ir.MemoryOrdering, "memory ordering"))
    return ()


def _indirect(out: bytearray, n: ir.IndirectDispatch) -> tuple[Item, ...]:
    out.append(8)
    put_string(out, n.count_buffer)
    put_u64(out, n.count_offset, "count_offset")
    return ()


def _async(out: bytearray, n: ir.AsyncLoad | ir.AsyncStore) -> tuple[Item, ...]:
    out.append(n.TAG)
    put_string(out, n.source)
    put_string(out, n.destination)
    tail = bytearray()
    put_string(tail, n.tag)
    return (n.offset, n.size, bytes(tail))


def _string_only(out: bytearray, n: ir.AsyncWait | ir.Resume) -> tuple[Item, ...]:
    out.append(n.TAG)
    put_string(out, n.tag)
    return ()


def _region(out: bytearray, n: ir.Region) -> tuple[Item, ...]:
    out.append(11)
    put_string(out, n.generator)
    if n.source_region is None:
        out.append(0)
    else:
        out.append(1)
        put_string(out, n.source_region)
    return _nodes(n.body)


def _trap(out: bytearray, n: ir.Trap) -> tuple[Item, ...]:
    out.append(13)
    tail = bytearray()
    put_string(tail, n.tag)
    return (n.address, bytes(tail))


def _all_reduce(out: bytearray, n: ir.AllReduce) -> tuple[Item, ...]:
    out.append(15)
    put_string(out, n.buffer)
    out.append(_enum_byte(n.op, ir.CollectiveOp, "collective op"))
    put_u32(out, n.group, "comm group")
    return ()


def _all_gather(out: bytearray, n: ir.AllGather) -> tuple[Item, ...]:
    out.append(16)
    put_string(out, n.input)
    put_string(out, n.output)
    put_u32(out, n.group, "comm group")
    return ()


def _reduce_scatter(out: bytearray, n: ir.ReduceScatter) -> tuple[Item, ...]:
    out.append(17)
    put_string(out, n.input)
    put_string(out, n.output)
    out.append(_enum_byte(n.op, ir.CollectiveOp, "collective op"))
    put_u32(out, n.group, "comm group")
    return ()


def _broadcast(out: bytearray, n: ir.Broadcast) -> tuple[Item, ...]:
    out.append(18)
    put_string(out, n.buffer)
    put_u32(out, n.root, "broadcast root")
    put_u32(out, n.group, "comm group")
    return ()


# -- expressions ------------------------------------------------------------------------------

def _lit_u32(out: bytearray, e: ir.LitU32) -> tuple[Item, ...]:
    out.append(0)
    put_u32(out, e.value, "LitU32 value")
    return ()


def _lit_i32(out: bytearray, e: ir.LitI32) -> tuple[Item, ...]:
    out.append(1)
    put_i32(out, e.value, "LitI32 value")
    return ()


def _lit_bool(out: bytearray, e: ir.LitBool) -> tuple[Item, ...]:
    out += b"\x02\x01" if e.value else b"\x02\x00"
    return ()


def _lit_f32(out: bytearray, e: ir.LitF32) -> tuple[Item, ...]:
    out.append(15)
    put_u32(out, e.bits, "LitF32 bits")
    out[-4:] = u32_bytes(canonical_f32_bits(e.bits))
    return ()


def _named(out: bytearray, e: Any) -> tuple[Item, ...]:
    out.append(e.TAG)
    put_string(out, e.name if isinstance(e, ir.Var) else e.buffer)
    return ()


def _load(out: bytearray, e: ir.Load) -> tuple[Item, ...]:
    out.append(4)
    put_string(out, e.buffer)
    return (e.index,)


def _axis(out: bytearray, e: Any) -> tuple[Item, ...]:
    out.append(e.TAG)
    put_u8(out, e.axis, "axis")
    return ()


def _binary(out: bytearray, e: ir.Binary) -> tuple[Item, ...]:
    out.append(9)
    _put_op(out, e.op, ir.BinOp, "BinOp")
    return (e.left, e.right)


def _unary(out: bytearray, e: ir.Unary) -> tuple[Item, ...]:
    out.append(10)
    _put_op(out, e.op, ir.UnOp, "UnOp")
    return (e.operand,)


def _call(out: bytearray, e: ir.Call) -> tuple[Item, ...]:
    out.append(11)
    put_string(out, e.op_id)
    put_u32(out, len(e.args), "call argument count")
    return tuple(e.args)


def _children(out: bytearray, e: Any) -> tuple[Item, ...]:
    out.append(e.TAG)
    if isinstance(e, ir.Select):
        return (e.cond, e.true_val, e.false_val)
    if isinstance(e, ir.Fma):
        return (e.a, e.b, e.c)
    if isinstance(e, ir.SubgroupShuffle):
        return (e.value, e.lane)
    return (e.cond,)


def _cast(out: bytearray, e: ir.Cast) -> tuple[Item, ...]:
    out.append(13)
    put_data_type(out, e.target)
    return (e.value,)


def _atomic(out: bytearray, e: ir.Atomic) -> tuple[Item, ...]:
    out.append(14)
    _put_op(out, e.op, ir.AtomicOp, "AtomicOp")
    out.append(_enum_byte(e.ordering, ir.MemoryOrdering, "memory ordering"))
    put_string(out, e.buffer)
    if e.expected is None:
        return (e.index, b"\x00", e.value)
    return (e.index, b"\x01", e.expected, e.value)


def _subgroup_reduce(out: bytearray, e: ir.SubgroupReduce) -> tuple[Item, ...]:
    out.append(17)
    out.append(_enum_byte(e.op, ir.SubgroupReduceOp, "subgroup reduce op"))
    return (e.value,)


_HANDLERS: dict[type, Handler] = {
    ir.Let: _let, ir.Assign: _let, ir.Store: _store, ir.If: _if, ir.Loop: _loop,
    ir.Return: _tag_only, ir.Block: _block, ir.Barrier: _barrier, ir.IndirectDispatch: _indirect,
    ir.AsyncLoad: _async, ir.AsyncWait: _string_only, ir.Region: _region, ir.AsyncStore: _async,
    ir.Trap: _trap, ir.Resume: _string_only, ir.AllReduce: _all_reduce,
    ir.AllGather: _all_gather, ir.ReduceScatter: _reduce_scatter, ir.Broadcast: _broadcast,
    ir.LitU32: _lit_u32, ir.LitI32: _lit_i32, ir.LitBool: _lit_bool, ir.Var: _named,
    ir.Load: _load, ir.BufLen: _named, ir.InvocationId: _axis, ir.WorkgroupId: _axis,
    ir.LocalId: _axis, ir.Binary: _binary, ir.Unary: _unary, ir.Call: _call,
    ir.Select: _children, ir.Cast: _cast, ir.Atomic: _atomic, ir.LitF32: _lit_f32,
    ir.Fma: _children, ir.SubgroupReduce: _subgroup_reduce, ir.SubgroupShuffle: _children,
    ir.SubgroupBallot: _children, ir.SubgroupLocalId: _tag_only, ir.SubgroupSize: _tag_only,
    ir.BufferRef: _named,
}


def _put_extension(out: bytearray, item: Any, registry: ExtensionRegistry) -> None:
    surface = "node" if isinstance(item, ir.Node) else "expr"
    kind, payload = encode_extension(registry, surface, item)
    if len(payload) > MAX_OPAQUE_PAYLOAD_LEN:
        what = "node" if surface == "node" else "expression"
        raise EncodeError(
            f"opaque {what} payload{len(payload)} exceeds {MAX_OPAQUE_PAYLOAD_LEN}. Fix: split "
            f"the payload across multiple opaque {what}s or reduce the extension data size."
        )
    out.append(OPAQUE_TAG)
    put_string(out, kind, "extension kind")
    put_u32(out, len(payload))
    out += payload


def put_tree(out: bytearray, root: ir.Node | ir.Expr, registry: ExtensionRegistry) -> None:
    """Append the encoding of a node or expression tree to ``out``.

    Raises:
        EncodeError: an unmapped variant, out-of-range field or unencodable extension.
    """
    stack: list[Item] = [root]
    handlers = _HANDLERS
    while stack:
        item = stack.pop()
        if type(item) is bytes:
            out += item
            continue
        handler = handlers.get(type(item))
        if handler is not None:
            children = handler(out, item)
            if children:
                stack.extend(reversed(children))
        elif isinstance(item, (ir.ExtensionExpr, ir.ExtensionNode, ir.OpaqueExpr, ir.OpaqueNode)):
            _put_extension(out, item, registry)
        else:
            raise EncodeError(
                f"Fix: {type(item).__name__} is not a vyre IR node or expression; unmapped "
                "variants cannot be serialized."
            )


# -- data types -------------------------------------------------------------------------------

def put_data_type(out: bytearray, dtype: ir.DataType) -> None:
    """Append an expression-context DataType."""
    if type(dtype) is ir.Scalar:
        out.append(int(dtype))
        return
    if isinstance(dtype, ir.Array):
        out.append(0x08)
        put_u32(out, dtype.element_size, "array element_size")
    elif isinstance(dtype, ir.Handle):
        out.append(0x13)
        put_u32(out, dtype.type_id, "handle type id")
    elif isinstance(dtype, ir.Vec):
        out.append(0x14)
        put_data_type(out, dtype.element)
        put_u8(out, dtype.count, "vector count")
    elif isinstance(dtype, ir.TensorShaped):
        _put_tensor_shaped(out, dtype)
    elif isinstance(dtype, (ir.SparseCsr, ir.SparseCoo)):
        out.append(0x16 if isinstance(dtype, ir.SparseCsr) else 0x17)
        put_data_type(out, dtype.element)
    elif isinstance(dtype, ir.SparseBsr):
        out.append(0x18)
        put_data_type(out, dtype.element)
        put_u32(out, dtype.block_rows, "block_rows")
        put_u32(out, dtype.block_cols, "block_cols")
    elif isinstance(dtype, ir.DeviceMesh):
        _put_device_mesh(out, dtype)
    elif isinstance(dtype, ir.Quantized):
        out.append(0x1F)
        check_quantized(dtype)
        put_data_type(out, dtype.storage)
        for kind, param in ((dtype.scale.kind, dtype.scale.param),
                            (dtype.zero_point.kind, dtype.zero_point.param)):
            out.append(int(kind))
            put_u32(out, param, "quantization parameter")
    elif isinstance(dtype, ir.OpaqueType):
        out.append(OPAQUE_TAG)
        put_u32(out, dtype.id, "opaque DataType id")
    else:
        raise EncodeError(f"Fix: {dtype!r} is not a vyre DataType; unmapped variant.")


def _put_tensor_shaped(out: bytearray, dtype: ir.TensorShaped) -> None:
    out.append(0x15)
    put_data_type(out, dtype.element)
    if len(dtype.shape) > MAX_TENSOR_RANK:
        raise EncodeError(
            f"Fix: tensor shape rank {len(dtype.shape)} exceeds the wire-format limit "
            f"{MAX_TENSOR_RANK}; cap rank before serialization (the decoder rejects ranks above "
            "this)."
        )
    put_u32(out, len(dtype.shape))
    for dim in dtype.shape:
        put_u32(out, dim, "tensor dimension")


def _put_device_mesh(out: bytearray, dtype: ir.DeviceMesh) -> None:
    out.append(0x1E)
    if len(dtype.axes) > MAX_MESH_AXES:
        raise EncodeError(
            f"Fix: device-mesh axes count {len(dtype.axes)} exceeds the wire-format limit "
            f"{MAX_MESH_AXES}; cap mesh rank before serialization (the decoder rejects counts "
            "above this)."
        )
    put_u32(out, len(dtype.axes))
    for axis in dtype.axes:
        put_u32(out, axis, "mesh axis")


def check_quantized(dtype: ir.Quantized) -> None:
    """Encoder checks on a Quantized type: storage kind and non-zero group sizes."""
    if dtype.storage not in ir.QUANTIZED_STORAGE:
        raise EncodeError(
            "Fix: DataType::Quantized storage must be I4/I8/I16/U8/U16/F8E4M3/F8E5M2/FP4/NF4."
        )
    if type(dtype.scale.kind) is not ir.QuantScaleKind:
        raise EncodeError("Fix: quantization scale kind must be a QuantScaleKind.")
    if type(dtype.zero_point.kind) is not ir.ZeroPointKind:
        raise EncodeError("Fix: quantization zero-point kind must be a ZeroPointKind.")
    if dtype.scale.kind == ir.QuantScaleKind.PER_GROUP and dtype.scale.param == 0:
        raise EncodeError("Fix: quantized PerGroup scale requires group_size > 0.")
    if dtype.zero_point.kind == ir.ZeroPointKind.PER_GROUP and dtype.zero_point.param == 0:
        raise EncodeError("Fix: quantized PerGroup zero-point requires group_size > 0.")
    if dtype.scale.kind == ir.QuantScaleKind.PER_TENSOR and dtype.scale.param != 0:
        raise EncodeError("Fix: quantized PerTensor scale carries no parameter; use param 0.")
    if dtype.zero_point.kind in (ir.ZeroPointKind.ABSENT, ir.ZeroPointKind.PER_TENSOR) and (
        dtype.zero_point.param != 0
    ):
        raise EncodeError("Fix: this quantization zero-point kind carries no parameter; use 0.")
