"""GLSL 450 compute shaders for Vulkan: every buffer is an std430 SSBO of uint words.

Sub-word elements (8/16-bit) are read by shifting and written with atomicAnd/atomicOr on the
containing word, so neighbouring work items writing adjacent bytes never race.
"""

from __future__ import annotations

from typing import ClassVar

from hurray_gpu.kernels.dialect.kernel import KernelDef
from hurray_gpu.kernels.dialect.render import CStyleRenderer, value_type

__all__ = ["GLSLRenderer"]

_U8 = "(({b}[{i} >> 2u] >> (({i} & 3u) * 8u)) & 0xffu)"
_U16 = "(({b}[{i} >> 1u] >> (({i} & 1u) * 16u)) & 0xffffu)"
_PUT8 = ("u32 hg_s = ({i} & 3u) * 8u; atomicAnd({b}[{i} >> 2u], ~(0xffu << hg_s)); "
         "atomicOr({b}[{i} >> 2u], ({v} & 0xffu) << hg_s);")
_PUT16 = ("u32 hg_s = ({i} & 1u) * 16u; atomicAnd({b}[{i} >> 1u], ~(0xffffu << hg_s)); "
          "atomicOr({b}[{i} >> 1u], ({v} & 0xffffu) << hg_s);")


class GLSLRenderer(CStyleRenderer):
    """GLSL 450: SSBO bindings in buffer order (set 0), scalars as push-constant words."""

    dialect = "glsl"
    extension = "comp"
    prelude = "#version 450"
    soft_f16 = True
    function_prefix = ""
    index_expr = ("gl_GlobalInvocationID.x", "gl_GlobalInvocationID.y",
                  "gl_GlobalInvocationID.z")
    type_map: ClassVar[dict[str, str]] = {
        "u32": "uint", "i32": "int", "f32": "float", "bool": "bool"}
    op_map: ClassVar[dict[str, str]] = {
        "U32": "u32(", "I32": "i32(", "F32": "f32(", "FMA": "fma(", "FMIN": "min(",
        "FMAX": "max(", "SQRT": "sqrt(", "FLOOR": "floor(", "FABS": "abs(", "EXP2": "exp2(",
        "LOG2": "log2(", "AS_F32": "uintBitsToFloat(", "AS_U32": "floatBitsToUint(",
        "UMIN": "min(", "UMAX": "max(", "IMIN": "min(", "IMAX": "max("}
    load_map = {
        "u32": "{b}[{i}]", "i32": "I32({b}[{i}])", "f32": "AS_F32({b}[{i}])", "u8": _U8,
        "u16": _U16, "i8": "bitfieldExtract(I32({b}[{i} >> 2u]), I32(({i} & 3u) * 8u), 8)",
        "i16": "bitfieldExtract(I32({b}[{i} >> 1u]), I32(({i} & 1u) * 16u), 16)",
        "f16": "hg_f16_to_f32" + _U16, "bf16": "hg_bf16_to_f32" + _U16}
    store_map = {
        "u32": "{b}[{i}] = {v};", "i32": "{b}[{i}] = U32({v});",
        "f32": "{b}[{i}] = AS_U32({v});", "u8": _PUT8, "i8": _PUT8.replace("{v}", "U32({v})"),
        "u16": _PUT16, "i16": _PUT16.replace("{v}", "U32({v})"),
        "f16": _PUT16.replace("{v}", "hg_f32_to_f16({v})"),
        "bf16": _PUT16.replace("{v}", "hg_f32_to_bf16({v})")}

    def render_accessors(self, kernel: KernelDef) -> str:
        out = []
        for binding, param in enumerate(kernel.buffers):
            qual = "readonly " if param.access == "r" else ""
            out.append(f"layout(std430, set = 0, binding = {binding}) {qual}buffer "
                       f"hg_{param.name}_block {{ uint {param.name}[]; }};")
        if kernel.scalars:
            fields = " ".join(f"{self.type_map[p.dtype]} {p.name};" for p in kernel.scalars)
            out.append(f"layout(push_constant) uniform hg_push_block {{ {fields} }} hg_pc;")
        for param in kernel.buffers:
            vtype = self.type_map[value_type(param.dtype)]
            if param.access != "w":
                expr = self.translate(self.load_map[param.dtype].format(b=param.name, i="hg_i"))
                out.append(f"{vtype} load_{param.name}(uint hg_i) {{ return {expr}; }}")
            if param.access != "r":
                stmt = self.store_map[param.dtype].format(b=param.name, i="hg_i", v="hg_v")
                out.append(f"void store_{param.name}(uint hg_i, {vtype} hg_v) "
                           f"{{ {self.translate(stmt)} }}")
        return "\n".join(out)

    def render_entry(self, kernel: KernelDef) -> str:
        lx, ly, lz = kernel.local_size
        layout = f"layout(local_size_x = {lx}, local_size_y = {ly}, local_size_z = {lz}) in;"
        unpack = "".join(f"    {self.type_map[p.dtype]} {p.name} = hg_pc.{p.name};\n"
                         for p in kernel.scalars)
        return f"{layout}\n\nvoid main() {{\n{unpack}{self.body(kernel)}\n}}"
