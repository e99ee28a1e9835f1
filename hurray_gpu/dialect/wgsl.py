"""WGSL compute shaders for WebGPU: the portable subset, parsed (csubset.py) and written out.

What WGSL does differently, handled here:

- no 8/16-bit storage types: every buffer is an array of u32 words, sub-word elements are
  shifted out of their word and written with atomicAnd/atomicOr on it (as the GLSL path does),
  so such buffers (and those a body uses ATOMIC_* on) are ``array<atomic<u32>>``;
- no 64-bit integers and no f16 arithmetic are used: 16-bit floats convert with the portable
  helpers (bit-exact with NumPy), UMULHI is built from 16-bit halves;
- every buffer access goes through ``load_<b>``/``store_<b>``, which check the word index
  against the bound window (``arrayLength``) and set the fault word instead of touching memory
  outside it: the bounds never depend on WebGPU's robust-access clamping;
- a launch may be split into dispatches over windows of big buffers (as on Vulkan): the
  uniform block carries the work-item base per axis and, per buffer, the words from the bound
  window's start to its element 0 (modulo 2**32), then the scalars;
- ``?:`` becomes ``select`` when neither branch touches memory, else an ``if`` writing a
  temporary (only the chosen branch runs, as in C); mixed operators are parenthesised.
"""

from __future__ import annotations

import functools
import re
import struct
from typing import ClassVar

from hurray_gpu.dialect.crmath import CR_FUNCS, crmath_helpers
from hurray_gpu.dialect.csubset import (
    INT,
    Binary,
    Call,
    Cond,
    Expr,
    Func,
    Lit,
    Name,
    Stmt,
    Unary,
    parse_body,
    parse_functions,
)
from hurray_gpu.dialect.glsl_fma import FMA_RN_WGSL
from hurray_gpu.dialect.helpers import HELPERS, helpers_for
from hurray_gpu.dialect.kernel import KernelDef
from hurray_gpu.dialect.render import (
    ATOMICS,
    HELPER_INTRINSICS,
    INTRINSICS,
    CStyleRenderer,
    atomics_used,
    expand_block8,
    expand_scale8,
    lint_body,
    value_type,
)
from hurray_gpu.dialect.softf64 import SOFT_F64
from hurray_gpu.errors import UnsupportedOpError

__all__ = ["SUBWORD", "WGSLRenderer", "uniform_words"]

# Uniform words before the per-buffer deltas: the work-item base on each axis.
HEADER_WORDS = 3
SUBWORD = ("u8", "i8", "u16", "i16", "f16", "bf16")
# Result types of the intrinsics and their argument types (None: a buffer, or any type).
_RESULTS = {
    "U32": "u32", "I32": "i32", "F32": "f32", "AS_F32": "f32", "AS_U32": "u32", "FMA": "f32",
    "FMA_RN": "f32", "FMIN": "f32", "FMAX": "f32", "UMIN": "u32", "UMAX": "u32", "IMIN": "i32",
    "IMAX": "i32", "SQRT": "f32", "FLOOR": "f32", "FABS": "f32", "EXP2": "f32", "LOG2": "f32",
    "UMULHI": "u32", "F16_BITS_TO_F32": "f32", "BF16_BITS_TO_F32": "f32",
    "F32_TO_F16_BITS": "u32", "F32_TO_BF16_BITS": "u32", "LOAD": "", "STORE": "void",
    "BARRIER": "void", **{op: "u32" for op in ATOMICS}, "F64": "f64", "SQRT64": "f64",
    "POW2_64": "f64", "F64_HI": "u32", "F64_LO": "u32", "AS_F64": "f64",
    **{f"CR_{n}": "f32" for n in CR_FUNCS}}
_ARGS: dict[str, tuple[str | None, ...]] = {
    "U32": (None,), "I32": (None,), "F32": (None,), "AS_F32": (None,), "AS_U32": ("f32",),
    **{n: ("f32",) * 3 for n in ("FMA", "FMA_RN", "FMIN", "FMAX", "SQRT", "FLOOR", "FABS",
                                   "EXP2", "LOG2")},
    "UMIN": ("u32", "u32"), "UMAX": ("u32", "u32"), "UMULHI": ("u32", "u32"),
    "IMIN": ("i32", "i32"), "IMAX": ("i32", "i32"), "F16_BITS_TO_F32": ("u32",),
    "BF16_BITS_TO_F32": ("u32",), "F32_TO_F16_BITS": ("f32",), "F32_TO_BF16_BITS": ("f32",),
    "LOAD": (None, "u32"), **{op: (None, "u32", "u32", "u32") for op in ATOMICS},
    "F64": (None,), "SQRT64": ("f64",), "POW2_64": ("i32",), "F64_HI": ("f64",),
    "F64_LO": ("f64",), "AS_F64": ("u32", "u32"), **{f"CR_{n}": ("f32",) for n in CR_FUNCS}}
_FUNCS = {"FMA": "fma", "FMIN": "min", "FMAX": "max", "UMIN": "min", "UMAX": "max",
          "IMIN": "min", "IMAX": "max", "SQRT": "sqrt", "FLOOR": "floor", "FABS": "abs",
          "EXP2": "exp2", "LOG2": "log2", "UMULHI": "hg_umulhi", "FMA_RN": "hg_fma_rn",
          "SQRT64": "hg_d_sqrt", "POW2_64": "hg_d_pow2", **HELPER_INTRINSICS,
          **{f"CR_{n}": f"hg_cr_{n.lower()}" for n in CR_FUNCS}}
# f64 (no WGSL type) is vec2<u32> (low word, high word), its operations calls of softf64.py's
# functions: by operator, and conversions by the type converted from or to.
_F64_OPS = {"+": "hg_d_add", "-": "hg_d_sub", "*": "hg_d_mul", "/": "hg_d_div",
            "<": "hg_d_lt", "<=": "hg_d_le", "==": "hg_d_eq"}
_F64_SWAPPED = {">": "<", ">=": "<="}
_F64_FROM = {"f32": "hg_d_from_f32", "i32": "hg_d_from_i32", "u32": "hg_d_from_u32"}
_F64_TO = {"F32": "hg_d_to_f32", "I32": "hg_d_to_i32"}
_ATOMIC_FNS = {"ATOMIC_ADD": "atomicAdd", "ATOMIC_OR": "atomicOr", "ATOMIC_AND": "atomicAnd",
               "ATOMIC_XOR": "atomicXor", "ATOMIC_MIN": "atomicMin", "ATOMIC_MAX": "atomicMax",
               "ATOMIC_XCHG": "atomicExchange"}
_UMULHI = """\
fn hg_umulhi(a: u32, b: u32) -> u32 {
    // The high word of the 64-bit product from 16-bit halves (WGSL has no umulExtended).
    let al = a & 0xffffu;
    let ah = a >> 16u;
    let bl = b & 0xffffu;
    let bh = b >> 16u;
    let lh = al * bh;
    let hl = ah * bl;
    let mid = ((al * bl) >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);
    return ah * bh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u);
}"""
# Words WGSL reserves (keywords, reserved words, types) and the built-ins this renderer calls:
# a body name among them gets a trailing underscore.
_RESERVED_WORDS = """
alias break case const const_assert continue continuing default diagnostic discard else enable
false fn for if let loop override requires return struct switch true var while NULL Self
abstract active alignas alignof as asm asm_fragment async attribute auto await become
binding_array cast catch class co_await co_return co_yield coherent column_major common compile
compile_fragment concept const_cast consteval constexpr constinit crate debugger decltype delete
demote demote_to_helper do dynamic_cast enum explicit export extends extern external fallthrough
filter final finally friend from fxgroup get goto groupshared highp impl implements import inline
instanceof interface layout lowp macro macro_rules match mediump meta mod module move mut mutable
namespace new nil noexcept noinline nointerpolation noperspective null nullptr of operator
package packoffset partition pass patch pixelfragment precise precision premerge priv protected
pub public readonly ref regardless register reinterpret_cast require resource restrict self set
shared sizeof smooth snorm static static_assert static_cast std subroutine super target template
this thread_local throw trait try type typedef typeid typename typeof union unless unorm unsafe
unsized use using varying virtual volatile wgsl where with writeonly yield array atomic ptr
vec2 vec3 vec4 mat2x2 mat3x3 mat4x4 f16 sampler select bitcast min max abs sqrt floor exp2 log2
fma arrayLength extractBits atomicLoad atomicStore atomicAnd atomicOr atomicAdd atomicXor
atomicMin atomicMax atomicExchange atomicCompareExchangeWeak workgroupBarrier storageBarrier
main"""
_RESERVED = frozenset(_RESERVED_WORDS.split())
_WGSL_TYPES = {"u32": "u32", "i32": "i32", "f32": "f32", "bool": "bool", INT: "i32",
               "f64": "vec2<u32>"}


def uniform_words(kernel: KernelDef) -> int:
    """Words of a launch's uniform block: 3 bases, one delta per buffer, one per scalar."""
    return HEADER_WORDS + len(kernel.buffers) + len(kernel.scalars)


def _ident(name: str) -> str:
    return f"{name}_" if name in _RESERVED else name


def _paren(text: str) -> str:
    return text if re.fullmatch(r"[\w.]+(\(.*\))?", text) and _balanced(text) else f"({text})"


def _balanced(text: str) -> bool:
    depth = 0
    for k, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and ch == ")" and k != len(text) - 1:
            return False
    return depth == 0


class _Emitter:
    """Writes statements of one function; temporaries for lazy ``?:`` and ``&&`` get
    ``hg_t<n>`` names."""

    def __init__(self, renderer: WGSLRenderer, memory: frozenset[str]) -> None:
        self.r, self.memory, self.temps = renderer, memory, 0

    # -- expressions: (statements to run first, the expression) ---------------------------------
    def expr(self, e: Expr, pre: list[str]) -> str:
        if isinstance(e, Lit):
            return self.literal(e)
        if isinstance(e, Name):
            return e.name if e.name in ("true", "false") else _ident(e.name)
        if isinstance(e, Unary):
            if e.type == "f64":
                if isinstance(e.arg, Lit):
                    return self.literal(Lit(f"-{e.arg.value}", "f64"))
                return f"hg_d_neg({self.expr(e.arg, pre)})"
            return f"{e.op}{_paren(self.expr(e.arg, pre))}"
        if isinstance(e, Binary):
            if e.op in ("&&", "||"):
                return self.logical(e, pre)
            left, right = self.expr(e.left, pre), self.expr(e.right, pre)
            if e.left.type == "f64" and e.op in _F64_SWAPPED:
                return f"{_F64_OPS[_F64_SWAPPED[e.op]]}({right}, {left})"
            if e.left.type == "f64" and e.op == "!=":
                return f"!hg_d_eq({left}, {right})"
            if e.left.type == "f64":
                if e.op not in _F64_OPS:
                    raise UnsupportedOpError(f"operator {e.op} on f64 has no meaning",
                                             fix="use + - * / and comparisons on f64.")
                return f"{_F64_OPS[e.op]}({left}, {right})"
            return f"{_paren(left)} {e.op} {_paren(right)}"
        if isinstance(e, Cond):
            return self.cond(e, pre)
        return self.call(e, pre)

    def literal(self, e: Lit) -> str:
        if e.type == "f64":  # the words of the nearest double, as a C compiler rounds it
            lo, hi = struct.unpack("<II", struct.pack("<d", float(str(e.value))))
            return f"vec2<u32>({lo:#x}u, {hi:#x}u)"
        if e.type == "f32":
            text = str(e.value)
            return text + ("f" if not text.endswith("f") else "")
        value = int(e.value)
        if e.type == "u32":
            value &= 0xFFFFFFFF
            return f"{value:#x}u" if value >= 256 else f"{value}u"
        if value == -(2**31):
            return "i32(-2147483647 - 1)"
        return f"{value}i" if value >= 0 else f"({value}i)"

    def touches_memory(self, e: Expr) -> bool:
        if isinstance(e, Call):
            if e.name in ("LOAD", "STORE") or e.name.startswith("ATOMIC_"):
                return True
            return any(self.touches_memory(a) for a in e.args)
        if isinstance(e, Unary):
            return self.touches_memory(e.arg)
        if isinstance(e, Binary):
            return self.touches_memory(e.left) or self.touches_memory(e.right)
        if isinstance(e, Cond):
            return any(self.touches_memory(x) for x in (e.cond, e.then, e.other))
        return False

    def temp(self, type_: str, pre: list[str]) -> str:
        name = f"hg_t{self.temps}"
        self.temps += 1
        pre.append(f"var {name}: {_WGSL_TYPES[type_]};")
        return name

    def cond(self, e: Cond, pre: list[str]) -> str:
        cond = self.expr(e.cond, pre)
        if not (self.touches_memory(e.then) or self.touches_memory(e.other)):
            then_pre: list[str] = []
            other_pre: list[str] = []
            then, other = self.expr(e.then, then_pre), self.expr(e.other, other_pre)
            if not then_pre and not other_pre:
                return f"select({other}, {then}, {cond})"
        name = self.temp(e.type, pre)
        then_pre, other_pre = [], []
        then, other = self.expr(e.then, then_pre), self.expr(e.other, other_pre)
        pre.append(f"if ({cond}) {{")
        pre += ["    " + line for line in [*then_pre, f"{name} = {then};"]]
        pre.append("} else {")
        pre += ["    " + line for line in [*other_pre, f"{name} = {other};"]]
        pre.append("}")
        return name

    def logical(self, e: Binary, pre: list[str]) -> str:
        left = self.expr(e.left, pre)
        right_pre: list[str] = []
        right = self.expr(e.right, right_pre)
        if not right_pre:  # WGSL's && and || short-circuit as C's do
            return f"{_paren(left)} {e.op} {_paren(right)}"
        name = self.temp("bool", pre)
        pre.append(f"{name} = {left};")
        pre.append(f"if ({'' if e.op == '&&' else '!'}{name}) {{")
        pre += ["    " + line for line in [*right_pre, f"{name} = {right};"]]
        pre.append("}")
        return name

    def call(self, e: Call, pre: list[str]) -> str:
        name = e.name
        if name in ("LOAD", "STORE") or name.startswith("ATOMIC_"):
            buf = e.args[0]
            assert isinstance(buf, Name)
            args = ", ".join(self.expr(a, pre) for a in e.args[1:])
            return f"{name.lower()}_{buf.name}({args})"
        args_text = [self.expr(a, pre) for a in e.args]
        if name == "BARRIER":
            return "storageBarrier(); workgroupBarrier()"
        if name in ("U32", "I32", "F32") and e.args[0].type == "f64":
            if name not in _F64_TO:
                raise UnsupportedOpError("U32 of an f64 has no WGSL rendering",
                                         fix="convert with I32, or F32.")
            return f"{_F64_TO[name]}({args_text[0]})"
        if name in ("U32", "I32", "F32"):
            return f"{name.lower()}({args_text[0]})"
        if name == "F64":
            arg = e.args[0]
            if arg.type == "f64":
                return args_text[0]
            if isinstance(arg, Lit) and arg.type == "f32":  # exact: f32 widens to f64
                return self.literal(Lit(str(arg.value), "f64"))
            if arg.type not in _F64_FROM:
                raise UnsupportedOpError(f"F64 of a {arg.type} has no WGSL rendering",
                                         fix="convert an f32, i32 or u32.")
            return f"{_F64_FROM[arg.type]}({args_text[0]})"
        if name in ("F64_HI", "F64_LO"):
            return f"{_paren(args_text[0])}.{'y' if name == 'F64_HI' else 'x'}"
        if name == "AS_F64":
            return f"vec2<u32>({args_text[1]}, {args_text[0]})"
        if name == "AS_F32":
            return f"bitcast<f32>({args_text[0]})"
        if name == "AS_U32":
            return f"bitcast<u32>({args_text[0]})"
        return f"{_FUNCS.get(name, name)}({', '.join(args_text)})"

    # -- statements ---------------------------------------------------------------------------
    def block(self, stmts: list[Stmt]) -> list[str]:
        out: list[str] = []
        for s in stmts:
            out += self.stmt(s)
        return out

    def stmt(self, s: Stmt) -> list[str]:
        pre: list[str] = []
        if s.kind == "block":
            inner = self.block(s.body)
            return inner if s.op == "flat" else ["{", *_indent(inner), "}"]
        if s.kind == "decl":
            init = "" if s.expr is None else f" = {self.expr(s.expr, pre)}"
            return [*pre, f"var {_ident(s.name)}: {_WGSL_TYPES[s.type]}{init};"]
        if s.kind == "assign":
            assert s.expr is not None
            if s.op != "=" and s.expr.type == "f64":  # no compound assignment on vec2<u32>
                whole = Binary(s.op[:-1], Name(s.name, "f64"), s.expr, "f64")
                value = self.expr(whole, pre)
                return [*pre, f"{_ident(s.name)} = {value};"]
            value = self.expr(s.expr, pre)
            return [*pre, f"{_ident(s.name)} {s.op} {value};"]
        if s.kind == "incr":
            return [f"{_ident(s.name)}{s.op};"]
        if s.kind == "call":
            assert s.expr is not None
            text = self.expr(s.expr, pre)
            if isinstance(s.expr, Call) and s.expr.name.startswith("ATOMIC_"):
                text = f"_ = {text}"
            return [*pre, f"{text};"]
        if s.kind in ("break", "continue"):
            return [f"{s.kind};"]
        if s.kind == "return":
            value = "" if s.expr is None else " " + self.expr(s.expr, pre)
            return [*pre, f"return{value};"]
        if s.kind == "if":
            assert s.expr is not None
            cond = self.expr(s.expr, pre)
            out = [*pre, f"if ({cond}) {{", *_indent(self.block(s.body))]
            if s.other is None:
                return [*out, "}"]
            other = self.block(s.other)
            if other and other[0].startswith("if (") and len(s.other) == 1:
                return [*out, "} else " + other[0], *other[1:]]
            return [*out, "} else {", *_indent(other), "}"]
        if s.kind in ("while", "for", "do"):
            return self.loop(s)
        raise UnsupportedOpError(f"statement {s.kind} has no WGSL rendering",
                                 fix="write the body in the portable subset.")

    def loop(self, s: Stmt) -> list[str]:
        pre: list[str] = []
        cond = None if s.expr is None else self.expr(s.expr, pre)
        body = self.block(s.body)
        if s.kind == "do":
            return ["loop {", *_indent(body), "    continuing {",
                    *_indent(_indent([*pre, f"break if !{_paren(cond or 'true')};"])), "    }",
                    "}"]
        init, step = self.block(s.init), self.block(s.step)
        if not pre and len(init) <= 1 and len(step) <= 1:
            if s.kind == "while":
                return [f"while ({cond}) {{", *_indent(body), "}"]
            head = (f"{init[0].rstrip(';') if init else ''}; {cond or ''}; "
                    f"{step[0].rstrip(';') if step else ''}")
            return [f"for ({head}) {{", *_indent(body), "}"]
        check = [*pre, f"if (!{_paren(cond)}) {{ break; }}"] if cond else []
        inner = ["loop {", *_indent(check + body)]
        if step:
            inner += ["    continuing {", *_indent(_indent(step)), "    }"]
        inner.append("}")
        return ["{", *_indent(init + inner), "}"] if init else inner


def _guard(name: str, word: str, zero: str) -> str:
    """The start of an accessor: ``hg_k``, the word in the bound window, or a fault (noted in
    the work item's ``hg_bad``; ``main`` sets the fault word once, on its way out)."""
    return (f"    let hg_k = {word} + hg_w_{name}.x;\n"
            f"    if (hg_k >= hg_w_{name}.y) {{\n"
            f"        hg_bad = 1u;\n        return{zero};\n    }}\n")


def _indent(lines: list[str]) -> list[str]:
    return ["    " + line if line else line for line in lines]


class WGSLRenderer(CStyleRenderer):
    """WGSL for WebGPU (naga, Tint): storage bindings in buffer order, then the uniform block
    (``HEADER_WORDS`` bases, a delta per buffer, the scalars), then the fault word."""

    dialect = "wgsl"
    extension = "wgsl"
    soft_f16 = True
    soft_f64 = True
    type_map: ClassVar[dict[str, str]] = dict(_WGSL_TYPES)

    def render(self, kernel: KernelDef) -> str:
        """Return the complete WGSL module for ``kernel``.

        Raises:
            UnsupportedOpError: the body is outside the portable subset.
        """
        lint_body(kernel)
        text = expand_block8(expand_scale8(re.sub(r"//[^\n]*", "", kernel.body)))
        calls = dict(_RESULTS)
        arg_types = dict(_ARGS)
        # The portable helpers, in the subset like bodies: parsed, then written as WGSL.
        used = [(p.dtype, p.access) for p in kernel.buffers]
        wanted = helpers_for(used, True)
        wanted += [h for name, h in HELPER_INTRINSICS.items() if f"{name}(" in text
                   and h not in wanted]
        funcs: list[Func] = []
        for h in HELPERS:
            if h in wanted:
                funcs += parse_functions(kernel.name, HELPERS[h],
                                         calls, arg_types)
        # f64 arithmetic (the CR_* functions' and the body's own): softf64.py's functions.
        called = set(re.findall(r"\b([A-Z][A-Z0-9_]*)\s*\(", text))
        cr = crmath_helpers(called)
        soft = bool(cr) or bool(re.search(r"\bf64\b|\b(?:F64|SQRT64|POW2_64)\(", text))
        for part in ([SOFT_F64] if soft else []) + cr:
            funcs += parse_functions(kernel.name, part, calls, arg_types)
        for name in HELPER_INTRINSICS:
            calls[name] = _RESULTS[name]
        memory = self.atomic_arrays(kernel)
        buffers = {p.name: value_type(p.dtype) for p in kernel.buffers}
        buffers.update({name: "u32" for name, _ in kernel.shared})
        buffers.update({name: dtype for name, dtype, _ in kernel.private})
        scalars = {p.name: p.dtype for p in kernel.scalars}
        scalars.update({f"hg_gid{d}": "u32" for d in range(HEADER_WORDS)})
        known = set(INTRINSICS) | set(ATOMICS) | {"LOAD", "STORE", "BARRIER"}
        calls = {k: v for k, v in calls.items() if k in known or k.startswith("hg_")}
        body = parse_body(kernel.name, self.ids(text), scalars, calls, arg_types, buffers)
        parts = [self.render_bindings(kernel, memory)]
        if "UMULHI(" in text or "FMA_RN(" in text or soft:
            parts.append(_UMULHI)
        if "FMA_RN(" in text:  # WGSL's fma may round twice (as Vulkan's)
            parts.append(FMA_RN_WGSL)
        parts += [self.render_function(f, memory) for f in funcs]
        parts.append(self.render_accessors_wgsl(kernel, memory))
        parts.append(self.render_main(kernel, body, memory))
        return "\n\n".join(p for p in parts if p) + "\n"

    @staticmethod
    def ids(text: str) -> str:
        """GLOBAL_ID(d) as a name the parser knows (``hg_gid<d>``, a u32)."""
        return re.sub(r"\bGLOBAL_ID\(\s*([012])\s*\)", r"hg_gid\1", text)

    @staticmethod
    def atomic_arrays(kernel: KernelDef) -> frozenset[str]:
        """Buffers and shared arrays whose words are ``atomic<u32>``: sub-word outputs
        (read-modify-write of their word) and those a body uses ATOMIC_* on."""
        names = {p.name for p in kernel.buffers if p.dtype in SUBWORD and p.access != "r"}
        names |= {name for _, name in atomics_used(kernel)}
        return frozenset(names)

    def render_bindings(self, kernel: KernelDef, memory: frozenset[str]) -> str:
        """Storage arrays (bindings 0..n-1), the uniform block (n), the fault word (n + 1),
        then shared and private arrays and the global id."""
        n = len(kernel.buffers)
        out = []
        for binding, p in enumerate(kernel.buffers):
            elem = "atomic<u32>" if p.name in memory else "u32"
            out.append(f"@group(0) @binding({binding}) var<storage, read_write> hg_m_{p.name}: "
                       f"array<{elem}>;")
        fields = [f"hg_base{d}: u32" for d in range(HEADER_WORDS)]
        fields += [f"hg_d_{p.name}: u32" for p in kernel.buffers]
        fields += [f"hg_a_{p.name}: {p.dtype}" for p in kernel.scalars]
        out.append("struct HgUniform {\n" + "".join(f"    {f},\n" for f in fields) + "}")
        out.append(f"@group(0) @binding({n}) var<uniform> hg_u: HgUniform;")
        out.append(f"@group(0) @binding({n + 1}) var<storage, read_write> hg_fault: "
                   "atomic<u32>;")
        # Each buffer's (delta, bound words), read once per work item: private copies stay in
        # registers, where the uniform block and arrayLength would be read again after every
        # store (the compiler cannot tell a store does not change them).
        out += [f"var<private> hg_w_{p.name}: vec2<u32>;" for p in kernel.buffers]
        # An access outside its window, noted per work item: an atomicOr on the fault word in
        # every accessor, though never taken, cost lavapipe ~40% of a dequantization's time
        # (it runs the masked-off atomic lane by lane).
        out.append("var<private> hg_bad: u32;")
        for name, count in kernel.shared:
            elem = "atomic<u32>" if name in memory else "u32"
            out.append(f"var<workgroup> hg_s_{name}: array<{elem}, {count}>;")
        for name, dtype, count in kernel.private:
            out.append(f"var<private> hg_p_{name}: array<{dtype}, {count}>;")
        return "\n".join(out)

    def render_function(self, func: Func, memory: frozenset[str]) -> str:
        # WGSL parameters are immutable: one the body assigns is copied into a var first.
        assigned = _assigned(func.body)
        params = ", ".join(f"{'hg_arg_' + n if n in assigned else _ident(n)}: "
                           f"{_WGSL_TYPES[t]}" for n, t in func.params)
        lines = [f"var {_ident(n)}: {_WGSL_TYPES[t]} = hg_arg_{n};"
                 for n, t in func.params if n in assigned]
        lines += _Emitter(self, memory).block(func.body)
        return "\n".join([f"fn {func.name}({params}) -> {_WGSL_TYPES[func.type]} {{",
                          *_indent(lines), "}"])

    def render_accessors_wgsl(self, kernel: KernelDef, memory: frozenset[str]) -> str:
        """``load_<b>``/``store_<b>``/``atomic_<op>_<b>`` per buffer and array."""
        out = []
        for p in kernel.buffers:
            atomic = p.name in memory
            arr = f"hg_m_{p.name}"
            vtype = value_type(p.dtype)
            per = 4 if p.dtype in ("u8", "i8") else 2 if p.dtype in SUBWORD else 1
            word = "hg_i" if per == 1 else f"(hg_i >> {per.bit_length() - 1}u)"
            guard = functools.partial(_guard, p.name, word)
            read = f"atomicLoad(&{arr}[hg_k])" if atomic else f"{arr}[hg_k]"
            if p.access != "w":
                zero = {"u32": " 0u", "i32": " 0i", "f32": " 0.0f"}[vtype]
                out.append(f"fn load_{p.name}(hg_i: u32) -> {vtype} {{\n"
                           + guard(zero)
                           + f"    return {self.unpack(p.dtype, read, per)};\n}}")
            if p.access != "r":
                out.append(f"fn store_{p.name}(hg_i: u32, hg_v: {vtype}) {{\n"
                           + guard("") + self.pack(p.dtype, arr, per, atomic) + "}")
        for op, name in atomics_used(kernel):
            shared = name in {n for n, _ in kernel.shared}
            arr = f"hg_s_{name}" if shared else f"hg_m_{name}"
            head = "    let hg_k = hg_i;\n" if shared else _guard(name, "hg_i", " 0u")
            if op == "ATOMIC_CAS":
                # WGSL's exchange is weak (may fail spuriously): retried until it either
                # swapped or saw another value, as C's strong compare-exchange.
                out.append(f"fn atomic_cas_{name}(hg_i: u32, hg_e: u32, hg_v: u32) -> u32 {{\n"
                           + head + "    var hg_old: u32;\n    loop {\n"
                           f"        let hg_r = atomicCompareExchangeWeak(&{arr}[hg_k], hg_e, "
                           "hg_v);\n        hg_old = hg_r.old_value;\n"
                           "        if (hg_r.exchanged || hg_old != hg_e) { break; }\n    }\n"
                           "    return hg_old;\n}")
            else:
                out.append(f"fn {op.lower()}_{name}(hg_i: u32, hg_v: u32) -> u32 {{\n" + head
                           + f"    return {_ATOMIC_FNS[op]}(&{arr}[hg_k], hg_v);\n}}")
        for name, _ in kernel.shared:
            arr = f"hg_s_{name}"
            if name in memory:
                out.append(f"fn load_{name}(hg_i: u32) -> u32 {{ return atomicLoad(&{arr}[hg_i]); }}")
                out.append(f"fn store_{name}(hg_i: u32, hg_v: u32) {{ atomicStore(&{arr}[hg_i], "
                           "hg_v); }")
            else:
                out.append(f"fn load_{name}(hg_i: u32) -> u32 {{ return {arr}[hg_i]; }}")
                out.append(f"fn store_{name}(hg_i: u32, hg_v: u32) {{ {arr}[hg_i] = hg_v; }}")
        for name, dtype, _ in kernel.private:
            arr = f"hg_p_{name}"
            out.append(f"fn load_{name}(hg_i: u32) -> {dtype} {{ return {arr}[hg_i]; }}")
            out.append(f"fn store_{name}(hg_i: u32, hg_v: {dtype}) {{ {arr}[hg_i] = hg_v; }}")
        return "\n".join(out)

    @staticmethod
    def unpack(dtype: str, word: str, per: int) -> str:
        """The value of element ``hg_i`` from its ``word``."""
        if per == 1:
            return {"u32": word, "i32": f"bitcast<i32>({word})", "f32": f"bitcast<f32>({word})"
                    }[dtype]
        bits = 32 // per
        shift = f"(hg_i & {per - 1}u) * {bits}u"
        if dtype in ("i8", "i16"):
            return f"extractBits(bitcast<i32>({word}), {shift}, {bits}u)"
        raw = f"(({word} >> ({shift})) & {(1 << bits) - 1:#x}u)"
        return {"f16": f"hg_f16_to_f32{raw}", "bf16": f"hg_bf16_to_f32{raw}"}.get(dtype, raw)

    @staticmethod
    def pack(dtype: str, arr: str, per: int, atomic: bool) -> str:
        """Statements writing ``hg_v`` to element ``hg_i`` (word ``hg_k``)."""
        if per == 1:
            value = {"u32": "hg_v", "i32": "bitcast<u32>(hg_v)", "f32": "bitcast<u32>(hg_v)"}[dtype]
            if atomic:
                return f"    atomicStore(&{arr}[hg_k], {value});\n"
            return f"    {arr}[hg_k] = {value};\n"
        bits = 32 // per
        mask = f"{(1 << bits) - 1:#x}u"
        value = {"f16": "hg_f32_to_f16(hg_v)", "bf16": "hg_f32_to_bf16(hg_v)"}.get(
            dtype, "bitcast<u32>(hg_v)" if dtype in ("i8", "i16") else "hg_v")
        return (f"    let hg_s = (hg_i & {per - 1}u) * {bits}u;\n"
                f"    atomicAnd(&{arr}[hg_k], ~({mask} << hg_s));\n"
                f"    atomicOr(&{arr}[hg_k], ({value} & {mask}) << hg_s);\n")

    def render_main(self, kernel: KernelDef, body: list[Stmt], memory: frozenset[str]) -> str:
        lx, ly, lz = kernel.local_size
        assigned = _assigned(body)
        head = []
        for p in kernel.buffers:
            head.append(f"hg_w_{p.name} = vec2<u32>(hg_u.hg_d_{p.name}, "
                        f"arrayLength(&hg_m_{p.name}));")
        for d, axis in enumerate("xyz"):
            head.append(f"let hg_gid{d} = hg_id.{axis} + hg_u.hg_base{d};")
        for p in kernel.scalars:
            kind = "var" if p.name in assigned else "let"
            head.append(f"{kind} {_ident(p.name)}: {p.dtype} = hg_u.hg_a_{p.name};")
        lines = _Emitter(self, memory).block(body)
        # The body in a function of its own, so every return of it comes back to main.
        return "\n".join(["fn hg_main(hg_id: vec3<u32>) {", *_indent(head + lines), "}", "",
                          f"@compute @workgroup_size({lx}, {ly}, {lz})",
                          "fn main(@builtin(global_invocation_id) hg_id: vec3<u32>) {",
                          "    hg_main(hg_id);", "    if (hg_bad != 0u) {",
                          "        atomicOr(&hg_fault, 1u);", "    }", "}"])


def _assigned(stmts: list[Stmt]) -> set[str]:
    """Names assigned (or incremented) anywhere in ``stmts``."""
    out: set[str] = set()
    for s in stmts:
        if s.kind in ("assign", "incr"):
            out.add(s.name)
        for inner in (s.body, s.other or [], s.init, s.step):
            out |= _assigned(inner)
    return out

