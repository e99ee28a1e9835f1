"""Decoding of the node, expression and expression-context DataType payloads of VIR0."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from vyre import ir
from vyre.errors import WireValidationError
from vyre.extensions import ExtensionRegistry, decode_opaque
from vyre.wire import (
    MAX_ARGS,
    MAX_DECODE_DEPTH,
    MAX_MESH_AXES,
    MAX_NODES,
    MAX_OPAQUE_PAYLOAD_LEN,
    MAX_TENSOR_RANK,
)
from vyre.wire.reader import Reader
from vyre.wire.tags import OPAQUE_TAG, SCALAR_TAGS

T = TypeVar("T")
# Payload-free IR values are immutable, so hostile blobs full of them share one object each.
_RETURN = ir.Return()
_LANE_ID = ir.SubgroupLocalId()
_LANE_COUNT = ir.SubgroupSize()

_BIN_OPS = {int(op): op for op in ir.BinOp}
_UN_OPS = {int(op): op for op in ir.UnOp}
_ATOMIC_OPS = {int(op): op for op in ir.AtomicOp}
_ORDERINGS = {int(o): o for o in ir.MemoryOrdering}
_COLLECTIVES = {int(o): o for o in ir.CollectiveOp}
_SUBGROUP_OPS = {int(o): o for o in ir.SubgroupReduceOp}
_QUANT_SCALES = {int(k): k for k in ir.QuantScaleKind}
_ZERO_POINTS = {int(k): k for k in ir.ZeroPointKind}


def reject_reserved_extension_id(raw: int, surface: str) -> int:
    """Require bit 31 on an opaque op/DataType id (ids below it belong to core IR)."""
    if not raw & 0x80000000:
        raise WireValidationError(
            f"InvalidDiscriminant: {surface} opaque id 0x{raw:08x} collides with core IR. Fix: "
            "dialect extensions must use ids in 0x8000_0000..=0xffff_ffff."
        )
    return raw


def memory_ordering(tag: int) -> ir.MemoryOrdering:
    """Decode a MemoryOrdering byte (0..=5)."""
    found = _ORDERINGS.get(tag)
    if found is None:
        raise WireValidationError(
            f"InvalidDiscriminant: memory ordering tag {tag} is unknown. Fix: reserialize with "
            "a compatible VYRE wire schema."
        )
    return found


def _op(tag: int, table: Mapping[int, T], kind: str) -> T:
    found = table.get(tag)
    if found is None:
        raise WireValidationError(
            f"Fix: unknown {kind} op tag {tag}; use a compatible IR serializer."
        )
    return found


def _small_enum(tag: int, table: Mapping[int, T], name: str) -> T:
    found = table.get(tag)
    if found is None:
        raise WireValidationError(
            f"Fix: unknown {name} tag {tag}; use a Program serializer compatible with this vyre "
            "version."
        )
    return found


class IrDecoder:
    """Decodes nodes/exprs/DataTypes, resolving Opaque kinds through ``registry``.

    Args:
        registry: extension decoders for Opaque expressions and nodes.
        preserve_unknown: keep unregistered kinds as OpaqueExpr/OpaqueNode instead of failing.
    """

    def __init__(self, registry: ExtensionRegistry, preserve_unknown: bool) -> None:
        self.registry = registry
        self.preserve_unknown = preserve_unknown
        self._nodes: dict[int, Callable[[Reader], ir.Node]] = {
            0: self._let, 1: self._assign, 2: self._store, 3: self._if, 4: self._loop,
            5: lambda r: _RETURN, 6: lambda r: ir.Block(self.nodes(r)),
            7: lambda r: ir.Barrier(memory_ordering(r.u8())),
            8: lambda r: ir.IndirectDispatch(r.string(), r.u64()),
            9: lambda r: ir.AsyncLoad(*self._async_fields(r)),
            10: lambda r: ir.AsyncWait(r.string()), 11: self._region,
            12: lambda r: ir.AsyncStore(*self._async_fields(r)),
            13: lambda r: ir.Trap(self.expr(r), r.string()),
            14: lambda r: ir.Resume(r.string()), 15: self._all_reduce,
            16: lambda r: ir.AllGather(r.string(), r.string(), r.u32()),
            17: self._reduce_scatter, 18: lambda r: ir.Broadcast(r.string(), r.u32(), r.u32()),
            OPAQUE_TAG: self._opaque_node,
        }
        self._exprs: dict[int, Callable[[Reader], ir.Expr]] = {
            0: lambda r: ir.LitU32(r.u32()), 1: lambda r: ir.LitI32(r.i32()),
            2: lambda r: ir.LitBool(r.u8() != 0), 3: lambda r: ir.Var(r.string()),
            4: lambda r: ir.Load(r.string(), self.expr(r)),
            5: lambda r: ir.BufLen(r.string()), 6: lambda r: ir.InvocationId(r.u8()),
            7: lambda r: ir.WorkgroupId(r.u8()), 8: lambda r: ir.LocalId(r.u8()),
            9: self._binary, 10: self._unary, 11: self._call,
            12: lambda r: ir.Select(self.expr(r), self.expr(r), self.expr(r)),
            13: lambda r: ir.Cast(self.data_type(r), self.expr(r)), 14: self._atomic,
            15: lambda r: ir.LitF32(r.u32()),
            16: lambda r: ir.Fma(self.expr(r), self.expr(r), self.expr(r)),
            17: self._subgroup_reduce,
            18: lambda r: ir.SubgroupShuffle(self.expr(r), self.expr(r)),
            19: lambda r: ir.SubgroupBallot(self.expr(r)),
            20: lambda r: _LANE_ID, 21: lambda r: _LANE_COUNT,
            22: lambda r: ir.BufferRef(r.string()), OPAQUE_TAG: self._opaque_expr,
        }

    # -- statements -------------------------------------------------------------------------

    def nodes(self, r: Reader) -> tuple[ir.Node, ...]:
        """A ``list<Node>``: u32 count (at most MAX_NODES), then the nodes."""
        count = r.bounded_len(MAX_NODES, "node count")
        return tuple([self.node(r) for _ in range(count)])

    def node(self, r: Reader) -> ir.Node:
        """One statement (counts toward the shared depth limit)."""
        r.enter("node")
        tag = r.u8()
        handler = self._nodes.get(tag)
        if handler is None:
            raise WireValidationError(
                f"Fix: unknown IR node tag {tag}; use a Program serializer compatible with this "
                "vyre version."
            )
        node = handler(r)
        r.leave()
        return node

    def _let(self, r: Reader) -> ir.Node:
        return ir.Let(r.string(), self.expr(r))

    def _assign(self, r: Reader) -> ir.Node:
        return ir.Assign(r.string(), self.expr(r))

    def _store(self, r: Reader) -> ir.Node:
        return ir.Store(r.string(), self.expr(r), self.expr(r))

    def _if(self, r: Reader) -> ir.Node:
        return ir.If(self.expr(r), self.nodes(r), self.nodes(r))

    def _loop(self, r: Reader) -> ir.Node:
        return ir.Loop(r.string(), self.expr(r), self.expr(r), self.nodes(r))

    def _async_fields(self, r: Reader) -> tuple[str, str, ir.Expr, ir.Expr, str]:
        return r.string(), r.string(), self.expr(r), self.expr(r), r.string()

    def _region(self, r: Reader) -> ir.Node:
        generator = r.string()
        presence = r.u8()
        if presence > 1:
            raise WireValidationError(
                f"Fix: Region source_region presence byte must be 0 or 1, got {presence}"
            )
        source = r.string() if presence else None
        return ir.Region(generator, source, self.nodes(r))

    def _all_reduce(self, r: Reader) -> ir.Node:
        buffer = r.string()
        op = _small_enum(r.u8(), _COLLECTIVES, "CollectiveOp")
        return ir.AllReduce(buffer, op, r.u32())

    def _reduce_scatter(self, r: Reader) -> ir.Node:
        source, target = r.string(), r.string()
        op = _small_enum(r.u8(), _COLLECTIVES, "CollectiveOp")
        return ir.ReduceScatter(source, target, op, r.u32())

    def _opaque_payload(self, r: Reader, label: str) -> tuple[str, bytes]:
        kind = r.string()
        return kind, r.take(r.bounded_len(MAX_OPAQUE_PAYLOAD_LEN, label))

    def _opaque_node(self, r: Reader) -> ir.Node:
        kind, payload = self._opaque_payload(r, "opaque node payload")
        node = decode_opaque(self.registry, "node", kind, payload, self.preserve_unknown)
        return node  # type: ignore[return-value]

    # -- expressions ------------------------------------------------------------------------

    def expr(self, r: Reader) -> ir.Expr:
        """One expression (counts toward the shared depth limit)."""
        if r.depth >= MAX_DECODE_DEPTH:
            r.enter("expr")
        pos = r.pos
        if pos >= r.end:
            r.u8()
        tag = r.data[pos]
        r.pos = pos + 1
        handler = self._exprs.get(tag)
        if handler is None:
            raise WireValidationError(
                f"Fix: unknown IR expression tag {tag}; use a Program serializer compatible "
                "with this vyre version."
            )
        r.depth += 1
        expr = handler(r)
        r.depth -= 1
        return expr

    def _op_or_opaque(self, r: Reader, table: Mapping[int, Any], kind: str, surface: str) -> Any:
        tag = r.u8()
        if tag == OPAQUE_TAG:
            return ir.OpaqueOp(reject_reserved_extension_id(r.u32(), surface))
        return _op(tag, table, kind)

    def _binary(self, r: Reader) -> ir.Expr:
        op = self._op_or_opaque(r, _BIN_OPS, "binary", "BinOp")
        return ir.Binary(op, self.expr(r), self.expr(r))

    def _unary(self, r: Reader) -> ir.Expr:
        op = self._op_or_opaque(r, _UN_OPS, "unary", "UnOp")
        return ir.Unary(op, self.expr(r))

    def _call(self, r: Reader) -> ir.Expr:
        op_id = r.string()
        count = r.bounded_len(MAX_ARGS, "call argument count")
        return ir.Call(op_id, tuple([self.expr(r) for _ in range(count)]))

    def _atomic(self, r: Reader) -> ir.Expr:
        op = self._op_or_opaque(r, _ATOMIC_OPS, "atomic", "AtomicOp")
        ordering = memory_ordering(r.u8())
        buffer = r.string()
        index = self.expr(r)
        expected = self.expr(r) if r.u8() != 0 else None
        return ir.Atomic(op, buffer, index, expected, self.expr(r), ordering)

    def _subgroup_reduce(self, r: Reader) -> ir.Expr:
        op = _small_enum(r.u8(), _SUBGROUP_OPS, "SubgroupReduceOp")
        return ir.SubgroupReduce(op, self.expr(r))

    def _opaque_expr(self, r: Reader) -> ir.Expr:
        kind, payload = self._opaque_payload(r, "opaque expression payload")
        expr = decode_opaque(self.registry, "expr", kind, payload, self.preserve_unknown)
        return expr  # type: ignore[return-value]

    # -- data types -------------------------------------------------------------------------

    def data_type(self, r: Reader) -> ir.DataType:
        """An expression-context DataType (counts toward the shared depth limit)."""
        r.enter("data_type")
        result = self._data_type_inner(r)
        r.leave()
        return result

    def _data_type_inner(self, r: Reader) -> ir.DataType:
        tag = r.u8()
        scalar = SCALAR_TAGS.get(tag)
        if scalar is not None:
            return scalar
        if tag == 0x08:
            return ir.Array(r.u32())
        if tag == 0x13:
            return ir.Handle(r.u32())
        if tag == 0x14:
            return ir.Vec(self.data_type(r), r.u8())
        if tag == 0x15:
            element = self.data_type(r)
            rank = r.bounded_len(MAX_TENSOR_RANK, "tensor rank")
            return ir.TensorShaped(element, tuple([r.u32() for _ in range(rank)]))
        if tag in (0x16, 0x17):
            cls = ir.SparseCsr if tag == 0x16 else ir.SparseCoo
            return cls(self.data_type(r))
        if tag == 0x18:
            return ir.SparseBsr(self.data_type(r), r.u32(), r.u32())
        if tag == 0x1E:
            count = r.bounded_len(MAX_MESH_AXES, "device-mesh axes count")
            return ir.DeviceMesh(tuple([r.u32() for _ in range(count)]))
        if tag == 0x1F:
            return self._quantized(r)
        if tag == OPAQUE_TAG:
            return ir.OpaqueType(reject_reserved_extension_id(r.u32(), "DataType"))
        raise WireValidationError(
            f"Fix: unknown data type tag {tag}; use a compatible IR serializer."
        )

    def _quantized(self, r: Reader) -> ir.DataType:
        storage = self.data_type(r)
        if storage not in ir.QUANTIZED_STORAGE:
            raise WireValidationError(
                f"Fix: DataType::Quantized storage `{data_type_name(storage)}` is invalid; use "
                "I4/I8/I16/U8/U16/F8E4M3/F8E5M2/FP4/NF4 storage."
            )
        scale = quant_scale(r.u8(), r.u32(), dense=False)
        zero_point = quant_zero_point(r.u8(), r.u32(), dense=False)
        return ir.Quantized(storage, scale, zero_point)


def _quant_error(dense: bool, dense_text: str, expr_text: str) -> WireValidationError:
    if dense:
        return WireValidationError(
            f"InvalidDiscriminant: {dense_text}. Fix: reject non-canonical Program bytes."
        )
    return WireValidationError(f"Fix: {expr_text}.")


def quant_scale(tag: int, param: int, *, dense: bool) -> ir.QuantScale:
    """Decode a quantization scale (tag, param) pair with vyre's checks."""
    kind = _QUANT_SCALES.get(tag)
    if kind is None:
        if dense:
            raise WireValidationError(
                f"InvalidDiscriminant: unknown quantization scale tag {tag}. Fix: use a "
                "compatible IR serializer."
            )
        raise WireValidationError(
            f"Fix: unknown quantization scale tag {tag}; use a compatible IR serializer."
        )
    if kind == ir.QuantScaleKind.PER_TENSOR and param != 0:
        raise _quant_error(
            dense, f"PerTensor quantization scale parameter must be 0, got {param}",
            f"quantization PerTensor scale payload parameter must be 0, got {param}",
        )
    if kind == ir.QuantScaleKind.PER_GROUP and param == 0:
        raise _quant_error(
            dense, "PerGroup quantization scale requires group_size > 0",
            "quantization PerGroup scale requires group_size > 0",
        )
    return ir.QuantScale(kind, param)


def quant_zero_point(tag: int, param: int, *, dense: bool) -> ir.ZeroPoint:
    """Decode a quantization zero-point (tag, param) pair with vyre's checks."""
    kind = _ZERO_POINTS.get(tag)
    if kind is None:
        if dense:
            raise WireValidationError(
                f"InvalidDiscriminant: unknown quantization zero-point tag {tag}. Fix: use a "
                "compatible IR serializer."
            )
        raise WireValidationError(
            f"Fix: unknown quantization zero-point tag {tag}; use a compatible IR serializer."
        )
    if kind in (ir.ZeroPointKind.ABSENT, ir.ZeroPointKind.PER_TENSOR) and param != 0:
        which = "absent" if kind == ir.ZeroPointKind.ABSENT else "PerTensor"
        raise _quant_error(
            dense, f"{which} quantization zero-point parameter must be 0, got {param}",
            f"quantization {which} zero-point payload parameter must be 0, got {param}",
        )
    if kind == ir.ZeroPointKind.PER_GROUP and param == 0:
        raise _quant_error(
            dense, "PerGroup quantization zero-point requires group_size > 0",
            "quantization PerGroup zero-point requires group_size > 0",
        )
    return ir.ZeroPoint(kind, param)


_DISPLAY_NAMES = {
    ir.Scalar.VEC2_U32: "vec2<u32>", ir.Scalar.VEC4_U32: "vec4<u32>",
    ir.Scalar.F8E4M3: "f8e4m3", ir.Scalar.F8E5M2: "f8e5m2",
}


def data_type_name(dtype: ir.DataType) -> str:
    """A short lower-case spelling of ``dtype`` for diagnostics (``u32``, ``f32``, ...)."""
    if isinstance(dtype, ir.Scalar):
        return _DISPLAY_NAMES.get(dtype, dtype.name.lower())
    return type(dtype).__name__
