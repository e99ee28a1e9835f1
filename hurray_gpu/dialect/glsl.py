"""GLSL 450 compute shaders for Vulkan: every buffer is an std430 SSBO of uint words.

Sub-word elements (8/16-bit) are read by shifting and written with atomicAnd/atomicOr on the
containing word, so neighbouring work items writing adjacent bytes never race.
"""

from __future__ import annotations

from typing import ClassVar

from hurray_gpu.dialect.crmath import CR_FUNCS
from hurray_gpu.dialect.glsl_fma import FMA_RN_GLSL
from hurray_gpu.dialect.kernel import KernelDef
from hurray_gpu.dialect.render import CStyleRenderer, atomics_used, value_type

__all__ = ["GLSLRenderer"]

_U8 = "(({b}[{i} >> 2u] >> (({i} & 3u) * 8u)) & 0xffu)"
_U16 = "(({b}[{i} >> 1u] >> (({i} & 1u) * 16u)) & 0xffffu)"
_PUT8 = ("u32 hg_s = ({i} & 3u) * 8u; atomicAnd({b}[{i} >> 2u], ~(0xffu << hg_s)); "
         "atomicOr({b}[{i} >> 2u], ({v} & 0xffu) << hg_s);")
_PUT16 = ("u32 hg_s = ({i} & 1u) * 16u; atomicAnd({b}[{i} >> 1u], ~(0xffffu << hg_s)); "
          "atomicOr({b}[{i} >> 1u], ({v} & 0xffffu) << hg_s);")


_GLSL_ATOMICS = {"ATOMIC_ADD": "atomicAdd", "ATOMIC_OR": "atomicOr", "ATOMIC_AND": "atomicAnd",
                 "ATOMIC_XOR": "atomicXor", "ATOMIC_MIN": "atomicMin", "ATOMIC_MAX": "atomicMax",
                 "ATOMIC_XCHG": "atomicExchange"}


class GLSLRenderer(CStyleRenderer):
    """GLSL 450: SSBO bindings in buffer order (set 0), scalars as push-constant words."""

    dialect = "glsl"
    extension = "comp"
    prelude = "#version 450"
    soft_f16 = True
    function_prefix = ""
    # Private arrays are module-scope variables (per invocation in a compute shader), so the
    # accessor functions can reach them.
    private_decl = ""
    index_expr = ("gl_GlobalInvocationID.x", "gl_GlobalInvocationID.y",
                  "gl_GlobalInvocationID.z")
    type_map: ClassVar[dict[str, str]] = {
        "u32": "uint", "i32": "int", "f32": "float", "bool": "bool", "f64": "double"}
    f64_helpers = ("double hg_pow2_64(int k) {\n"
                   "    return packDouble2x32(uvec2(0u, uint(k + 1023) << 20u));\n}\n"
                   "uint hg_f64_hi(double x) { return unpackDouble2x32(x).y; }\n"
                   "uint hg_f64_lo(double x) { return unpackDouble2x32(x).x; }\n"
                   "double hg_as_f64(uint h, uint l) { return packDouble2x32(uvec2(l, h)); }")
    f64_suffix = "lf"
    op_map: ClassVar[dict[str, str]] = {
        "U32": "u32(", "I32": "i32(", "F32": "f32(", "FMA": "fma(", "FMIN": "min(",
        "FMAX": "max(", "SQRT": "sqrt(", "FLOOR": "floor(", "FABS": "abs(", "EXP2": "exp2(",
        "LOG2": "log2(", "AS_F32": "uintBitsToFloat(", "AS_U32": "floatBitsToUint(",
        "UMIN": "min(", "UMAX": "max(", "IMIN": "min(", "IMAX": "max(", "UMULHI": "hg_umulhi(",
        "BARRIER": "memoryBarrierShared(); memoryBarrierBuffer(); barrier(",
        "F16_BITS_TO_F32": "hg_f16_to_f32(", "BF16_BITS_TO_F32": "hg_bf16_to_f32(",
        "F32_TO_F16_BITS": "hg_f32_to_f16(", "F32_TO_BF16_BITS": "hg_f32_to_bf16(",
        "FMA_RN": "hg_fma_rn(", "F64": "f64(", "SQRT64": "sqrt(", "POW2_64": "hg_pow2_64(",
        "F64_HI": "hg_f64_hi(", "F64_LO": "hg_f64_lo(", "AS_F64": "hg_as_f64(",
        **{f"CR_{n}": f"hg_cr_{n.lower()}(" for n in CR_FUNCS}}
    intrinsic_helpers: ClassVar[dict[str, str]] = {
        "FMA_RN": FMA_RN_GLSL,
        "UMULHI": "uint hg_umulhi(uint a, uint b) {\n"
                  "    uint hi;\n    uint lo;\n    umulExtended(a, b, hi, lo);\n    return hi;\n}"}
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
        for name, count in kernel.shared:
            # Shared arrays are never rebased: subclasses' load_map is for bound buffers.
            out.append(f"shared uint {name}[{count}];")
            out.append(f"uint load_{name}(uint hg_i) {{ return {name}[hg_i]; }}")
            out.append(f"void store_{name}(uint hg_i, uint hg_v) {{ {name}[hg_i] = hg_v; }}")
        for name, dtype, count in kernel.private:
            vtype = self.type_map[dtype]
            out.append(f"{vtype} {name}[{count}];")
            out.append(f"{vtype} load_{name}(uint hg_i) {{ return {name}[hg_i]; }}")
            out.append(f"void store_{name}(uint hg_i, {vtype} hg_v) {{ {name}[hg_i] = hg_v; }}")
        out += self.render_atomics(kernel)
        return "\n".join(out)

    def render_atomics(self, kernel: KernelDef) -> list[str]:
        """``atomic_<op>_<b>`` functions; the element is addressed as ``load_map`` does, so a
        subclass that rebases subscripts rebases these too."""
        out = []
        for op, name in atomics_used(kernel):
            element = self.load_map["u32"].format(b=name, i="hg_i")
            if op == "ATOMIC_CAS":
                out.append(f"uint atomic_cas_{name}(uint hg_i, uint hg_e, uint hg_v) "
                           f"{{ return atomicCompSwap({element}, hg_e, hg_v); }}")
            else:
                out.append(f"uint {op.lower()}_{name}(uint hg_i, uint hg_v) "
                           f"{{ return {_GLSL_ATOMICS[op]}({element}, hg_v); }}")
        return out

    def render_entry(self, kernel: KernelDef) -> str:
        lx, ly, lz = kernel.local_size
        layout = f"layout(local_size_x = {lx}, local_size_y = {ly}, local_size_z = {lz}) in;"
        unpack = "".join(f"    {self.type_map[p.dtype]} {p.name} = hg_pc.{p.name};\n"
                         for p in kernel.scalars)
        return f"{layout}\n\nvoid main() {{\n{unpack}{self.body(kernel)}\n}}"
