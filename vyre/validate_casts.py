"""Type names and the cast / store-compatibility tables of the vyre validator.

Only scalar types take part in the non-identity rules, so composite types are never hashed.
"""

from __future__ import annotations

from vyre.ir import (
    Array,
    DataType,
    DeviceMesh,
    Handle,
    OpaqueType,
    Quantized,
    QuantScaleKind,
    Scalar,
    SparseBsr,
    SparseCoo,
    SparseCsr,
    TensorShaped,
    Vec,
    ZeroPointKind,
)

U32, I32, U64, I64, F32, BOOL, BYTES = (
    Scalar.U32, Scalar.I32, Scalar.U64, Scalar.I64, Scalar.F32, Scalar.BOOL, Scalar.BYTES,
)

_SCALAR_NAMES: dict[Scalar, str] = {
    Scalar.U32: "u32", Scalar.I32: "i32", Scalar.U64: "u64", Scalar.VEC2_U32: "vec2<u32>",
    Scalar.VEC4_U32: "vec4<u32>", Scalar.BOOL: "bool", Scalar.BYTES: "bytes", Scalar.F16: "f16",
    Scalar.BF16: "bf16", Scalar.F32: "f32", Scalar.F64: "f64", Scalar.TENSOR: "tensor",
    Scalar.U8: "u8", Scalar.U16: "u16", Scalar.I8: "i8", Scalar.I16: "i16", Scalar.I64: "i64",
    Scalar.F8E4M3: "f8e4m3", Scalar.F8E5M2: "f8e5m2", Scalar.I4: "i4", Scalar.FP4: "fp4",
    Scalar.NF4: "nf4",
}


def type_name(dtype: DataType) -> str:
    """The reference's ``Display`` spelling of a DataType (``u32``, ``vec<f32;4>``, ...).

    Args:
        dtype: the data type.

    Returns:
        Its display string.
    """
    parts: list[str] = []
    stack: list[object] = [dtype]
    # Iterative so that a hostile, deeply nested Vec<Vec<...>> cannot recurse.
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, Scalar):
            parts.append(_SCALAR_NAMES.get(item, item.name.lower()))
        elif isinstance(item, Array):
            parts.append(f"array<{item.element_size}B>")
        elif isinstance(item, Handle):
            parts.append(f"handle<0x{item.type_id:08x}>")
        elif isinstance(item, Vec):
            stack.extend([f";{item.count}>", item.element, "vec<"])
        elif isinstance(item, TensorShaped):
            dims = "x".join(str(d) for d in item.shape)
            stack.extend([f";{dims}>", item.element, "tensor<"])
        elif isinstance(item, (SparseCsr, SparseCoo)):
            prefix = "sparse_csr<" if isinstance(item, SparseCsr) else "sparse_coo<"
            stack.extend([">", item.element, prefix])
        elif isinstance(item, SparseBsr):
            stack.extend([f";{item.block_rows}x{item.block_cols}>", item.element, "sparse_bsr<"])
        elif isinstance(item, DeviceMesh):
            parts.append("device_mesh<" + "x".join(str(a) for a in item.axes) + ">")
        elif isinstance(item, Quantized):
            stack.extend([f";{_scale_name(item)};{_zero_point_name(item)}>", item.storage,
                          "quantized<"])
        elif isinstance(item, OpaqueType):
            parts.append(f"opaque<0x{item.id:08x}>")
        else:
            parts.append(repr(item))
    return "".join(parts)


def _scale_name(dtype: Quantized) -> str:
    kind = dtype.scale.kind
    if kind == QuantScaleKind.PER_CHANNEL:
        return f"scale:per_channel(axis={dtype.scale.param})"
    if kind == QuantScaleKind.PER_GROUP:
        return f"scale:per_group(size={dtype.scale.param})"
    return "scale:per_tensor"


def _zero_point_name(dtype: Quantized) -> str:
    kind = dtype.zero_point.kind
    if kind == ZeroPointKind.PER_TENSOR:
        return "zp:per_tensor"
    if kind == ZeroPointKind.PER_CHANNEL:
        return f"zp:per_channel(axis={dtype.zero_point.param})"
    if kind == ZeroPointKind.PER_GROUP:
        return f"zp:per_group(size={dtype.zero_point.param})"
    return "zp:absent"


def debug_name(member: object) -> str:
    """Rust ``Debug`` spelling of an enum member (``SATURATING_ADD`` -> ``SaturatingAdd``)."""
    name = getattr(member, "name", None)
    if not isinstance(name, str):
        return repr(member)
    return "".join(part.capitalize() for part in name.split("_"))


# --- casts (validate/cast.rs) -------------------------------------------------------------

_INTEGER_LIKE = frozenset({
    Scalar.U8, Scalar.U16, Scalar.U32, Scalar.U64, Scalar.I8, Scalar.I16, Scalar.I32, Scalar.I64,
    Scalar.BOOL,
})
V2, V4 = Scalar.VEC2_U32, Scalar.VEC4_U32
_EXTRA_CASTS = frozenset({
    (U32, V2), (U32, V4), (I32, V2), (I32, V4), (BOOL, V2), (BOOL, V4), (U64, V2),
    (V2, U32), (V2, I32), (V2, U64), (V2, BOOL), (V4, U32), (V4, I32), (V4, V2), (V4, BOOL),
    (V4, U64), (U32, F32), (I32, F32), (BOOL, F32), (F32, U32), (F32, I32), (F32, BOOL),
    (F32, Scalar.F16), (F32, Scalar.BF16), (Scalar.F16, F32), (Scalar.BF16, F32),
})
_INT_BITS = {
    Scalar.U8: 8, Scalar.I8: 8, Scalar.U16: 16, Scalar.I16: 16, Scalar.U32: 32, Scalar.I32: 32,
    Scalar.U64: 64, Scalar.I64: 64,
}
# Candidate order of the legal-target list in V012/V035 messages (identity first).
_CAST_CANDIDATES: tuple[Scalar, ...] = (
    Scalar.U8, Scalar.U16, Scalar.U32, Scalar.U64, Scalar.I8, Scalar.I16, Scalar.I32, Scalar.I64,
    Scalar.BOOL, Scalar.BYTES, V2, V4, Scalar.F16, Scalar.BF16, F32,
)


def cast_is_valid(source: DataType, target: DataType) -> bool:
    """Whether ``source -> target`` is in the reference's closed cast matrix."""
    if source == target:
        return True
    # Only scalars can take part in the non-identity casts; testing that first avoids
    # hashing composite types.
    if not (isinstance(source, Scalar) and isinstance(target, Scalar)):
        return False
    if source in _INTEGER_LIKE and target in _INTEGER_LIKE:
        return True
    return (source, target) in _EXTRA_CASTS


def cast_is_narrowing(source: DataType, target: DataType) -> bool:
    """Whether an integer cast drops high bits (V035, a warning)."""
    if not (isinstance(source, Scalar) and isinstance(target, Scalar)):
        return False
    src, dst = _INT_BITS.get(source), _INT_BITS.get(target)
    return src is not None and dst is not None and dst < src


def cast_target_set(source: DataType) -> str:
    """The legal targets of ``source`` formatted as in the reference's diagnostics."""
    targets: list[DataType] = []
    for target in (source, *_CAST_CANDIDATES):
        if cast_is_valid(source, target) and target not in targets:
            targets.append(target)
    return "[" + ", ".join(f"`{type_name(t)}`" for t in targets) + "]"


_STORE_PAIRS = frozenset({
    (U32, BYTES), (BYTES, U32), (U32, BOOL), (BOOL, U32), (U32, I32), (I32, U32), (U64, I64),
    (I64, U64),
})


def store_compatible(value: DataType, element: DataType) -> bool:
    """Store compatibility: equal, or U32<->Bytes/Bool/I32, or U64<->I64 (vyre 0.7.2 validator)."""
    if value == element:
        return True
    return isinstance(value, Scalar) and isinstance(element, Scalar) and (
        (value, element) in _STORE_PAIRS
    )
