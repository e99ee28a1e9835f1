"""Render a vyre Program in Rust's ``{:#?}`` Debug format, to compare with the golden dumps.

The golden ``NAME.txt`` files are vyre 0.7.2's Debug output; matching them proves that every
decoded tag maps to the variant and field names the reference uses.
"""

from __future__ import annotations

import dataclasses
import enum
import math

import numpy as np

from vyre import ir

_SCALAR_NAMES = {s: s.name.replace("_", "") for s in ir.Scalar}
_SCALAR_NAMES.update({
    ir.Scalar.VEC2_U32: "Vec2U32", ir.Scalar.VEC4_U32: "Vec4U32", ir.Scalar.BOOL: "Bool",
    ir.Scalar.BYTES: "Bytes", ir.Scalar.TENSOR: "Tensor",
})
_IDENT_FIELDS = {
    "name", "buffer", "var", "count_buffer", "source", "destination", "tag", "generator",
    "input", "output", "op_id",
}
_EXPR_NAMES = {ir.Binary: "BinOp", ir.Unary: "UnOp"}
_FIELD_NAMES = {"from_": "from"}


class D:
    """A Debug tree node: kind is 'struct', 'tuple', 'list' or 'raw'."""

    def __init__(self, kind: str, name: str = "", items: list | None = None) -> None:
        self.kind, self.name, self.items = kind, name, items or []


def raw(text: str) -> D:
    return D("raw", text)


def tup(name: str, *values: D) -> D:
    return D("tuple", name, list(values))


def struct(name: str, fields: list[tuple[str, D]]) -> D:
    return D("struct", name, fields)


def camel(member: enum.Enum) -> str:
    if isinstance(member, ir.Scalar):
        return _SCALAR_NAMES[member]
    return "".join(p[:1] + p[1:].lower() for p in member.name.split("_"))


def rust_str(text: str) -> str:
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\0":
            out.append("\\0")
        elif ch in "\n\t\r":
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def rust_f32(bits: int) -> str:
    value = float(np.frombuffer(bits.to_bytes(4, "little"), dtype="<f4")[0])
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0:
        return "-0.0" if bits >> 31 else "0.0"
    f = np.float32(value)
    if 1e-4 <= abs(value) < 1e16:
        text = np.format_float_positional(f, unique=True)
        return text + "0" if text.endswith(".") else text
    mantissa, exponent = np.format_float_scientific(f, unique=True).split("e")
    return f"{mantissa.rstrip('.')}e{int(exponent)}"


def option(value: object) -> D:
    return raw("None") if value is None else tup("Some", to_debug(value))


def to_debug(obj: object, field: str = "") -> D:
    """The Debug tree of an IR value."""
    if isinstance(obj, bool):
        return raw("true" if obj else "false")
    if isinstance(obj, enum.Enum):
        return raw(camel(obj))
    if isinstance(obj, int):
        return raw(str(obj))
    if isinstance(obj, str):
        return tup("Ident", raw(rust_str(obj))) if field in _IDENT_FIELDS else raw(rust_str(obj))
    if isinstance(obj, tuple):
        return D("list", items=[to_debug(v) for v in obj])
    special = _special(obj)
    if special is not None:
        return special
    fields = [
        (_FIELD_NAMES.get(f.name, f.name), _field(obj, f.name)) for f in dataclasses.fields(obj)
    ]
    name = _EXPR_NAMES.get(type(obj), type(obj).__name__)
    return struct(name, fields) if fields else raw(name)


def _field(obj: object, name: str) -> D:
    value = getattr(obj, name)
    if name == "expected" or (name == "shape_predicate" and isinstance(obj, ir.BufferDecl)):
        return option(value)
    if name == "coalesce_axis":
        return raw("None") if value is None else tup("Some", raw(str(value)))
    if name == "output_byte_range":
        return raw("None") if value is None else tup("Some", raw(f"{value[0]}..{value[1]}"))
    if name == "group":
        return tup("CommGroup", raw(str(value)))
    if name == "source_region":
        if value is None:
            return raw("None")
        return tup("Some", struct("GeneratorRef", [("name", raw(rust_str(value)))]))
    if name == "entry_op_id":
        return raw("None") if value is None else tup("Some", raw(rust_str(value)))
    if isinstance(obj, ir.BufferDecl) and name == "name":
        return raw(rust_str(value))
    return to_debug(value, name)


def _special(obj: object) -> D | None:
    if isinstance(obj, (ir.LitU32, ir.LitI32, ir.LitBool)):
        return tup(type(obj).__name__, to_debug(obj.value))
    if isinstance(obj, ir.LitF32):
        return tup("LitF32", raw(rust_f32(obj.bits)))
    if isinstance(obj, ir.Var):
        return tup("Var", to_debug(obj.name, "name"))
    if isinstance(obj, ir.Block):
        return tup("Block", to_debug(obj.nodes))
    if isinstance(obj, ir.Handle):
        return tup("Handle", tup("TypeId", raw(str(obj.type_id))))
    if isinstance(obj, (ir.AtLeast, ir.AtMost, ir.Exactly, ir.MultipleOf)):
        return tup(type(obj).__name__, raw(str(obj.n)))
    if isinstance(obj, (ir.PredicateAnd, ir.PredicateOr)):
        name = "And" if isinstance(obj, ir.PredicateAnd) else "Or"
        return tup(name, to_debug(obj.left), to_debug(obj.right))
    if isinstance(obj, ir.PredicateNot):
        return tup("Not", to_debug(obj.inner))
    if isinstance(obj, ir.QuantScale):
        return _quant(obj.kind, obj.param)
    if isinstance(obj, ir.ZeroPoint):
        return _quant(obj.kind, obj.param)
    return None


def _quant(kind: enum.Enum, param: int) -> D:
    name = camel(kind)
    if name == "PerChannel":
        return struct(name, [("axis", raw(str(param)))])
    if name == "PerGroup":
        return struct(name, [("group_size", raw(str(param)))])
    return raw(name)


def program_debug(program: ir.Program) -> D:
    """The Debug tree of the dump's meaningful Program fields, in the dump's order."""
    return struct("Program", [
        ("entry_op_id", _field(program, "entry_op_id")),
        ("workgroup_size", raw("[" + ", ".join(map(str, program.workgroup_size)) + "]")),
        ("non_composable_with_self", to_debug(program.non_composable_with_self)),
        ("buffers", D("list", items=[_buffer(b) for b in program.buffers])),
        ("entry", to_debug(program.entry)),
    ])


def _buffer(buf: ir.BufferDecl) -> D:
    order = [
        "name", "binding", "access", "kind", "element", "count", "is_output",
        "pipeline_live_out", "output_byte_range", "hints", "bytes_extraction", "linear_type",
        "shape_predicate",
    ]
    return struct("BufferDecl", [(name, _field(buf, name)) for name in order])


def render(d: D, indent: int = 0) -> str:
    """Rust's pretty Debug text of ``d``."""
    pad, inner = " " * indent, " " * (indent + 4)
    if d.kind == "raw":
        return d.name
    if d.kind == "list":
        if not d.items:
            return "[]"
        body = "".join(f"{inner}{render(v, indent + 4)},\n" for v in d.items)
        return f"[\n{body}{pad}]"
    if d.kind == "tuple":
        body = "".join(f"{inner}{render(v, indent + 4)},\n" for v in d.items)
        return f"{d.name}(\n{body}{pad})"
    body = "".join(f"{inner}{k}: {render(v, indent + 4)},\n" for k, v in d.items)
    return f"{d.name} {{\n{body}{pad}}}"
