"""The operation-signature registry the validator checks ``Call`` expressions against.

vyre resolves ``Expr::Call`` op ids in a link-time ``OperationRegistry``; the Python port keeps
an explicit registry instead. It starts empty, so every call is V016 until its op is registered.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from vyre.ir import DataType, Scalar

# Foundation-known signature spellings (validate/expr_rules.rs data_type_from_signature_spelling).
_SPELLINGS: dict[str, DataType] = {
    "u8": Scalar.U8, "U8": Scalar.U8, "u16": Scalar.U16, "U16": Scalar.U16,
    "u32": Scalar.U32, "U32": Scalar.U32, "u64": Scalar.U64, "U64": Scalar.U64,
    "i8": Scalar.I8, "I8": Scalar.I8, "i16": Scalar.I16, "I16": Scalar.I16,
    "i32": Scalar.I32, "I32": Scalar.I32, "i64": Scalar.I64, "I64": Scalar.I64,
    "f32": Scalar.F32, "F32": Scalar.F32, "bool": Scalar.BOOL, "Bool": Scalar.BOOL,
    "bytes": Scalar.BYTES, "Bytes": Scalar.BYTES, "vec2<u32>": Scalar.VEC2_U32,
    "Vec2U32": Scalar.VEC2_U32, "vec4<u32>": Scalar.VEC4_U32, "Vec4U32": Scalar.VEC4_U32,
}


@dataclass(frozen=True, slots=True)
class OpParam:
    """One declared input of an operation: its name and type spelling.

    ``ty`` is a scalar spelling (``"u32"``, ``"vec4<u32>"``, ...) or ``"buffer<T>"`` for a
    parameter that takes a whole buffer through ``BufferRef``.
    """

    name: str
    ty: str


@dataclass(frozen=True, slots=True)
class OpSignature:
    """The registered signature of one operation id.

    ``inputs`` is None for an op that is registered without a signature (also V016).
    """

    op_id: str
    inputs: tuple[OpParam, ...] | None


def parse_spelling(spelling: str) -> tuple[bool, DataType | None]:
    """Parse a parameter type spelling.

    Args:
        spelling: e.g. ``"u32"`` or ``"buffer<f32>"``.

    Returns:
        ``(is_buffer, element_type)``; the type is None when the spelling is unknown (V021).
    """
    if spelling.startswith("buffer<") and spelling.endswith(">"):
        return True, _SPELLINGS.get(spelling[len("buffer<"):-1])
    return False, _SPELLINGS.get(spelling)


_LOCK = threading.Lock()
_REGISTRY: dict[str, OpSignature] = {}


def register_op(op_id: str, inputs: list[tuple[str, str]] | None) -> OpSignature:
    """Register (or replace) the signature of ``op_id``.

    Args:
        op_id: the operation id a ``Call`` names.
        inputs: ``[(param_name, type_spelling), ...]``, or None for "no signature".

    Returns:
        The stored signature.

    Raises:
        TypeError: when ``op_id`` or a spelling is not a string.
    """
    if not isinstance(op_id, str):
        raise TypeError(f"op id must be a str, got {type(op_id).__name__}. Fix: pass the op id.")
    params = None
    if inputs is not None:
        params = tuple(OpParam(str(name), _require_str(ty)) for name, ty in inputs)
    signature = OpSignature(op_id, params)
    with _LOCK:
        _REGISTRY[op_id] = signature
    return signature


def _require_str(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(
            f"type spelling must be a str, got {type(value).__name__}. "
            "Fix: spell parameter types like 'u32' or 'buffer<u32>'."
        )
    return value


def unregister_op(op_id: str) -> None:
    """Remove ``op_id`` from the registry (no error when absent)."""
    with _LOCK:
        _REGISTRY.pop(op_id, None)


def lookup_op(op_id: str) -> OpSignature | None:
    """The registered signature of ``op_id``, or None."""
    with _LOCK:
        return _REGISTRY.get(op_id)
