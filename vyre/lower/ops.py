"""The lowering's state and operators: emitted lines and scopes, the errors of the lowering
path, exact f32 in the portable subset, and BinOp/UnOp/Cast with the reference's semantics
(docs/vyre-semantics.md, BinOps, UnOps and Casts).

Every f32 value the lowering produces is canonical (NaN -> 0x7FC00000, subnormal -> signed
zero), so operands never need re-canonicalizing; results are canonicalized on their bits.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass, field
from typing import Any

from hurray_gpu.errors import UnsupportedOpError
from vyre.ir_types import BinOp, DataType, Scalar, UnOp
from vyre.reference.semantics import ReferenceExecutionError

__all__ = [
    "DEFAULT_MAX_LOOP_PASSES", "MIN_I32", "Ctx", "Local", "LoopBudgetError", "TrapError",
    "UnsupportedOpError", "Value", "bit_count", "canon", "canonical_bits", "ctype", "f32_lit",
    "f32_rounding", "is_nan", "loop_passes", "lower_binop", "lower_cast", "lower_unop",
    "sanitize", "truth", "unsupported"]


# Loop passes one invocation may run (vyre.run's max_loop_passes), on devices without a driver
# loop budget: a runaway loop ends (LoopBudgetError) after this many passes per invocation
# instead of never, so the launch returns and Ctrl-C is handled. Far above what the bundled
# programs and benchmarks need per invocation; callers pass max_loop_passes to raise it.
DEFAULT_MAX_LOOP_PASSES = 1 << 24


class TrapError(ReferenceExecutionError):
    """A lowered program hit a construct the reference aborts on (i32 division by zero,
    ``MIN / -1``, a ``Trap`` node); the device set the trap flag and the outputs are void."""


class LoopBudgetError(UnsupportedOpError):
    """A loop of a lowered program was ended early, so the outputs are void: by its device's
    loop budget (``Device.loop_budget``), or, on devices without one, by the kernel's own
    bound of ``max_loop_passes`` loop passes per invocation (a runaway loop)."""


def loop_passes(value: Any) -> int:
    """``max_loop_passes`` checked: an integer in [1, 2**32), else UnsupportedOpError."""
    passes = operator.index(value) if hasattr(value, "__index__") else 0
    if isinstance(value, bool) or not 1 <= passes <= 0xFFFFFFFF:
        raise unsupported(f"max_loop_passes={value!r} is not an integer in [1, 2**32)",
                          f"pass a pass count such as {DEFAULT_MAX_LOOP_PASSES}.")
    return passes


def unsupported(what: str, fix: str) -> UnsupportedOpError:
    """An UnsupportedOpError naming the construct that cannot be lowered exactly."""
    return UnsupportedOpError(f"vyre lowering: {what}", fix=fix)


# -- lowering state ---------------------------------------------------------------------------


# The dynamic value kinds the lowering tracks (the reference's Value tags it supports).
KINDS = ("u32", "i32", "f32", "bool")
_NON_WORD = re.compile(r"[^a-z0-9]+")


def sanitize(name: str, limit: int = 16) -> str:
    """A lowercase identifier fragment of ``name`` with no double underscore."""
    text = _NON_WORD.sub("_", name.lower()).strip("_")[:limit].strip("_")
    return text or "x"


def ctype(kind: str) -> str:
    """The subset type holding a value of ``kind`` (raw bytes live zero-extended in a u32)."""
    return "u32" if kind == "bytes" else kind


@dataclass(frozen=True)
class Value:
    """A lowered expression: subset text and its kind (``u32``, ``i32``, ``f32``, ``bool``)."""

    text: str
    kind: str
    # The u32 words, low first, of a 64-bit or vector value (vyre.lower.wide).
    words: tuple[str, ...] = ()


@dataclass(frozen=True)
class Local:
    """A vyre local bound in the body: its subset name, kind and mutability."""

    name: str
    kind: str
    mutable: bool


@dataclass
class Ctx:
    """Mutable state of one lowering.

    Attributes:
        lines: emitted body lines.
        depth: current indentation depth.
        scopes: stack of ``{vyre name: Local}``.
        buffers: vyre buffer name -> (param name, length text, element kind, writable).
        workgroup_size: the program's workgroup shape.
        needs_trap: the body writes the trap flags (word 0: a trap, word 1: a loop cut).
        pass_budget: vyre loops charge their passes to a counter bounded by the ``passmax``
            scalar (workgroup-uniform loops on ``upasses``, the others on ``passes``, so a
            barrier inside a uniform loop is met by every lane of the workgroup).
        counters: the pass counters the body uses (declared at its top).
    """

    buffers: dict[str, tuple[str, str, str, bool]]
    workgroup_size: tuple[int, int, int]
    lines: list[str] = field(default_factory=list)
    depth: int = 1
    scopes: list[dict[str, Local]] = field(default_factory=lambda: [{}])
    needs_trap: bool = False
    features: set[str] = field(default_factory=set)
    # Workgroup-uniformity: locals that may differ across lanes, read-only buffers, and a
    # stack saying whether the current control flow is uniform.
    nonuniform: set[str] = field(default_factory=set)
    read_only: set[str] = field(default_factory=set)
    flow: list[bool] = field(default_factory=lambda: [True])
    pass_budget: bool = False
    counters: set[str] = field(default_factory=set)
    # The program meets barriers (Barrier nodes, subgroup emulation): a Trap sets its flag and
    # the lane goes on (the outputs are void either way), so no lane leaves before a barrier.
    synchronizing: bool = False
    _counter: int = 0
    _loops: list[tuple[str, str]] = field(default_factory=list)

    def emit(self, line: str) -> None:
        """Append one body line at the current depth."""
        self.lines.append("    " * (self.depth - 1) + line)

    def fresh(self, hint: str = "t") -> str:
        """A new unique subset identifier."""
        self._counter += 1
        return f"{hint}{self._counter}"

    def temp(self, kind: str, text: str) -> Value:
        """Bind ``text`` to a new temporary of ``kind`` and return it."""
        name = self.fresh("t")
        self.emit(f"{ctype(kind)} {name} = {text};")
        return Value(name, kind)

    def open(self, header: str) -> None:
        """Emit ``header {`` and enter a new scope."""
        self.emit(f"{header} {{".lstrip())
        self.depth += 1
        self.scopes.append({})

    def close(self, trailer: str = "}") -> None:
        """Leave the current scope and emit ``trailer``."""
        self.scopes.pop()
        self.depth -= 1
        self.emit(trailer)

    def open_loop(self, var: str, start: str, stop: str, step: str = "",
                  counter: str = "") -> None:
        """Open ``for (u32 var = start; var < stop; var++)`` (``var += step``); the counter
        outlives the loop, for :meth:`close_loop` to test. With ``pass_budget`` and a pass
        ``counter`` (vyre Loops; the lowering's own loops are bounded by the workgroup), the
        loop's passes are charged to the counter at entry, and the loop ends where the
        counter would pass ``passmax``: nothing is added per pass, and it never wraps."""
        self.emit(f"u32 {var} = {start};")
        end = stop
        if self.pass_budget and counter:
            self.counters.add(counter)
            left, span = f"(passmax - {counter})", f"({stop} - {start})"
            end = self.temp("u32", f"{stop} > {start} ? {start} + ({span} < {left} ? {span} "
                                   f": {left}) : {start}").text
            self.emit(f"{counter} = {counter} + ({end} - {start});")
        self.open(f"for (; {var} < {end}; {var}{' += ' + step if step else '++'})")
        self._loops.append((var, stop))
    def close_loop(self) -> None:
        """Close the innermost loop; a counter still below its stop means the loop was ended
        early (the device's loop budget, or ``passmax``): set trap flag word 1."""
        var, stop = self._loops.pop()
        self.close()
        self.needs_trap = True
        self.emit(f"if ({var} < {stop}) {{ STORE(trapflag, 1u, 1u); }}")

    def lookup(self, name: str) -> Local:
        """The visible binding of vyre local ``name``.

        Raises:
            UnsupportedOpError: the name is not bound (the validator rejects this).
        """
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise unsupported(f"read of unbound local {name!r}", "bind it with Let first.")

    def bind(self, name: str, kind: str, mutable: bool = True) -> Local:
        """Declare vyre local ``name`` in the current scope."""
        local = Local(self.fresh(f"l_{sanitize(name)}_"), kind, mutable)
        self.scopes[-1][name] = local
        return local

    def buffer(self, name: str) -> tuple[str, str, str, bool]:
        """(param, length text, element kind, writable) of a storage buffer.

        Raises:
            UnsupportedOpError: unknown buffer.
        """
        entry = self.buffers.get(name)
        if entry is None:
            raise unsupported(f"access to unknown buffer {name!r}", "declare the buffer.")
        return entry


# -- f32 in the portable subset ---------------------------------------------------------------


MIN_I32 = "(-2147483647 - 1)"


def canonical_bits(bits: int) -> int:
    """The reference's runtime canonical form (keeps the sign of zero, unlike the encoder)."""
    bits &= 0xFFFFFFFF
    if (bits & 0x7FFFFFFF) > 0x7F800000:
        return 0x7FC00000
    if bits & 0x7F800000 == 0:
        return bits & 0x80000000
    return bits


def f32_lit(bits: int) -> str:
    """An exact f32 literal: the bit pattern through AS_F32."""
    return f"AS_F32(0x{canonical_bits(bits):08x}u)"


def canon(ctx: Ctx, text: str) -> Value:
    """Canonicalize the f32 ``text`` on its bits and return the canonical temporary."""
    bits = ctx.temp("u32", f"AS_U32({text})")
    fixed = (f"(({bits.text} & 0x7fffffffu) > 0x7f800000u) ? 0x7fc00000u : "
             f"(((({bits.text} & 0x7f800000u) == 0u)) ? ({bits.text} & 0x80000000u) : "
             f"{bits.text})")
    return ctx.temp("f32", f"AS_F32({fixed})")


def is_nan(ctx: Ctx, value: Value) -> Value:
    """``value`` is a NaN, tested on the bits (immune to fast-math compare folding)."""
    return ctx.temp("bool", f"(AS_U32({value.text}) & 0x7fffffffu) > 0x7f800000u")


def f32_rounding(ctx: Ctx, mode: str, x: Value) -> Value:
    """floor, ceil, trunc or round (half away from zero, Rust ``f32::round``) of canonical x."""
    if mode == "floor":
        return canon(ctx, f"FLOOR({x.text})")
    if mode == "ceil":
        return canon(ctx, f"-FLOOR(-{x.text})")
    trunc = ctx.temp("f32", f"({x.text} < 0.0f) ? -FLOOR(-{x.text}) : FLOOR({x.text})")
    if mode == "trunc":
        return canon(ctx, trunc.text)
    # x - trunc(x) is exact, so the half-way test is exact too.
    step = ctx.temp("f32", f"({x.text} < 0.0f) ? -1.0f : 1.0f")
    return canon(ctx, f"(FABS({x.text} - {trunc.text}) >= 0.5f) ? {trunc.text} + {step.text} "
                      f": {trunc.text}")


# -- BinOp (docs/vyre-semantics.md, BinOps) --------------------------------------------------


_CMP = {BinOp.EQ: "==", BinOp.NE: "!=", BinOp.LT: "<", BinOp.GT: ">", BinOp.LE: "<=",
        BinOp.GE: ">="}
_U32_SIMPLE = {BinOp.ADD: "+", BinOp.WRAPPING_ADD: "+", BinOp.SUB: "-", BinOp.WRAPPING_SUB: "-",
               BinOp.MUL: "*", BinOp.BIT_AND: "&", BinOp.BIT_OR: "|", BinOp.BIT_XOR: "^"}
_I32_WRAP = {BinOp.ADD: "+", BinOp.WRAPPING_ADD: "+", BinOp.SUB: "-", BinOp.WRAPPING_SUB: "-",
             BinOp.MUL: "*"}
_F32_ARITH = {BinOp.ADD: "+", BinOp.SUB: "-", BinOp.MUL: "*", BinOp.DIV: "/"}


def truth(v: Value) -> str:
    """The reference's truthiness of ``v`` as subset bool text (f32 NaN is true; raw bytes
    longer than a word are always true)."""
    if v.words:
        return f"(({v.words[0]} | {v.words[1]}) != 0u)" if v.kind == "u64" else "(0u == 0u)"
    if v.kind == "bool":
        return v.text
    if v.kind == "f32":
        return f"!({v.text} == 0.0f)"
    return f"({v.text} != 0{'' if v.kind == 'i32' else 'u'})"


def lower_binop(ctx: Ctx, op: BinOp, a: Value, b: Value) -> Value:
    """Lower ``op(a, b)`` (both already evaluated, left first).

    Raises:
        UnsupportedOpError: a combination the reference rejects at run time.
    """
    if "bytes" in (a.kind, b.kind):
        raise unsupported(f"{op.name} of raw bytes from an 8/16-bit buffer (the reference "
                          "errors)", "Cast the loaded value to u32 or i32 first.")
    if op in (BinOp.AND, BinOp.OR):
        if a.kind != b.kind or a.kind not in ("u32", "bool", "i32"):
            raise unsupported(f"{op.name} of {a.kind} and {b.kind} (the reference errors)",
                              "convert both sides to bool or both to u32.")
        joiner = "&&" if op == BinOp.AND else "||"
        return ctx.temp("bool", f"{truth(a)} {joiner} {truth(b)}")
    if a.kind != b.kind:
        raise unsupported(f"{op.name} of mismatched {a.kind} and {b.kind} operands "
                          "(the reference errors)", "cast one side so both types agree.")
    handler = {"u32": _u32, "i32": _i32, "f32": _f32, "bool": _bool}[a.kind]
    return handler(ctx, op, a, b)


def _u32(ctx: Ctx, op: BinOp, a: Value, b: Value) -> Value:
    x, y = a.text, b.text
    if op in _U32_SIMPLE:
        return ctx.temp("u32", f"{x} {_U32_SIMPLE[op]} {y}")
    if op in _CMP:
        return ctx.temp("bool", f"{x} {_CMP[op]} {y}")
    table = {
        BinOp.DIV: f"({y} == 0u) ? 0xffffffffu : {x} / (({y} == 0u) ? 1u : {y})",
        BinOp.MOD: f"({y} == 0u) ? 0u : {x} % (({y} == 0u) ? 1u : {y})",
        BinOp.SHL: f"{x} << ({y} & 31u)",
        BinOp.SHR: f"{x} >> ({y} & 31u)",
        BinOp.ROTATE_LEFT: f"({x} << ({y} & 31u)) | ({x} >> ((32u - ({y} & 31u)) & 31u))",
        BinOp.ROTATE_RIGHT: f"({x} >> ({y} & 31u)) | ({x} << ((32u - ({y} & 31u)) & 31u))",
        BinOp.ABS_DIFF: f"({x} > {y}) ? {x} - {y} : {y} - {x}",
        BinOp.MIN: f"UMIN({x}, {y})",
        BinOp.MAX: f"UMAX({x}, {y})",
        BinOp.SATURATING_ADD: f"({x} + {y} < {x}) ? 0xffffffffu : {x} + {y}",
        BinOp.SATURATING_SUB: f"({x} > {y}) ? {x} - {y} : 0u",
        BinOp.SATURATING_MUL: f"(UMULHI({x}, {y}) != 0u) ? 0xffffffffu : {x} * {y}",
        BinOp.MUL_HIGH: f"UMULHI({x}, {y})"}
    if op not in table:
        raise unsupported(f"u32 {op.name}", "use the subgroup expressions instead.")
    return ctx.temp("u32", table[op])


def _i32_div(ctx: Ctx, op: BinOp, x: str, y: str) -> Value:
    # The reference errors on x/0 and MIN/-1 (and the same for %): set the trap flag.
    bad = ctx.temp("bool", f"({y} == 0) || (({x} == {MIN_I32}) && ({y} == -1))")
    ctx.needs_trap = True
    ctx.emit(f"if ({bad.text}) {{ STORE(trapflag, 0u, 1u); }}")
    sym = "/" if op == BinOp.DIV else "%"
    return ctx.temp("i32", f"{bad.text} ? 0 : {x} {sym} ({bad.text} ? 1 : {y})")


def _i32(ctx: Ctx, op: BinOp, a: Value, b: Value) -> Value:
    x, y = a.text, b.text
    if op in _I32_WRAP:
        # Signed overflow is undefined in C: wrap in u32.
        return ctx.temp("i32", f"I32(U32({x}) {_I32_WRAP[op]} U32({y}))")
    if op in _CMP:
        return ctx.temp("bool", f"{x} {_CMP[op]} {y}")
    if op in (BinOp.DIV, BinOp.MOD):
        return _i32_div(ctx, op, x, y)
    table = {
        BinOp.BIT_AND: f"{x} & {y}", BinOp.BIT_OR: f"{x} | {y}", BinOp.BIT_XOR: f"{x} ^ {y}",
        BinOp.SHL: f"I32(U32({x}) << (U32({y}) & 31u))",
        BinOp.SHR: f"{x} >> I32(U32({y}) & 31u)",
        BinOp.MIN: f"IMIN({x}, {y})", BinOp.MAX: f"IMAX({x}, {y})"}
    if op == BinOp.ABS_DIFF:
        return ctx.temp("u32", f"({x} > {y}) ? U32({x}) - U32({y}) : U32({y}) - U32({x})")
    if op not in table:
        raise unsupported(f"i32 {op.name} (the reference errors or the validator forbids it)",
                          "compute it in u32.")
    return ctx.temp("i32", table[op])


def _f32(ctx: Ctx, op: BinOp, a: Value, b: Value) -> Value:
    x, y = a.text, b.text
    if op == BinOp.DIV:
        # Division by zero is undefined in GLSL, and lavapipe constant-folds x / 0.0 to 0:
        # build the IEEE result (NaN for 0/0 and NaN/0, else signed infinity) from the bits.
        mag = f"(AS_U32({x}) & 0x7fffffffu)"
        by_zero = (f"AS_F32(({mag} == 0u || {mag} > 0x7f800000u) ? 0x7fc00000u : "
                   f"(((AS_U32({x}) ^ AS_U32({y})) & 0x80000000u) | 0x7f800000u))")
        return canon(ctx, f"(({y} == 0.0f) ? {by_zero} : {x} / {y})")
    if op in _F32_ARITH:
        return canon(ctx, f"{x} {_F32_ARITH[op]} {y}")
    if op == BinOp.NE:
        # !(a == b): true for NaN operands even where != is emitted as an ordered compare.
        return ctx.temp("bool", f"!({x} == {y})")
    if op in _CMP:
        return ctx.temp("bool", f"{x} {_CMP[op]} {y}")
    if op in (BinOp.MIN, BinOp.MAX):
        # Rust f32::min/max as the reference defines them: NaN loses, a tie (+-0) keeps the
        # first operand. fmin/fmax leave the tie unspecified, so select explicitly.
        rel = "<" if op == BinOp.MIN else ">"
        nan_x = f"((AS_U32({x}) & 0x7fffffffu) > 0x7f800000u)"
        nan_y = f"((AS_U32({y}) & 0x7fffffffu) > 0x7f800000u)"
        return ctx.temp("f32", f"AS_F32({nan_x} ? AS_U32({y}) : (({nan_y} || !({y} {rel} {x})) "
                               f"? AS_U32({x}) : AS_U32({y})))")
    raise unsupported(f"f32 {op.name} (the reference errors)", "use u32 or i32 arithmetic.")


def _bool(ctx: Ctx, op: BinOp, a: Value, b: Value) -> Value:
    if op in (BinOp.EQ, BinOp.NE):
        return ctx.temp("bool", f"{a.text} {_CMP[op]} {b.text}")
    raise unsupported(f"bool {op.name} (the reference errors)", "cast to u32 first.")


# -- UnOp and Cast (docs/vyre-semantics.md, UnOps and Casts) ---------------------------------


# Ops lowered to a correctly rounded CR_<name> (the reference keeps vyre's libm results: they
# agree but where libm's f64 value double-rounds, and InverseSqrt, which the reference rounds
# twice, within 1 ULP).
_CORRECTLY_ROUNDED = {UnOp.SIN: "SIN", UnOp.COS: "COS", UnOp.TAN: "TAN", UnOp.ASIN: "ASIN",
                      UnOp.ACOS: "ACOS", UnOp.ATAN: "ATAN", UnOp.SINH: "SINH", UnOp.COSH: "COSH", UnOp.TANH: "TANH", UnOp.EXP: "EXP",
                      UnOp.EXP2: "EXP2", UnOp.LOG: "LOG", UnOp.LOG2: "LOG2",
                      UnOp.INVERSE_SQRT: "RSQRT"}
_UNPACK = {UnOp.UNPACK4_LOW: "{x} & 0xfu", UnOp.UNPACK4_HIGH: "({x} >> 4u) & 0xfu",
           UnOp.UNPACK8_LOW: "{x} & 0xffu", UnOp.UNPACK8_HIGH: "({x} >> 24u) & 0xffu"}


def _popcount(ctx: Ctx, x: str) -> Value:
    t = ctx.temp("u32", f"{x} - (({x} >> 1u) & 0x55555555u)")
    t = ctx.temp("u32", f"({t.text} & 0x33333333u) + (({t.text} >> 2u) & 0x33333333u)")
    t = ctx.temp("u32", f"({t.text} + ({t.text} >> 4u)) & 0x0f0f0f0fu")
    return ctx.temp("u32", f"({t.text} * 0x01010101u) >> 24u")


def _clz(ctx: Ctx, x: str) -> Value:
    # Binary search; clz(0) = 32.
    n = ctx.temp("u32", f"({x} == 0u) ? 32u : 0u")
    y = ctx.temp("u32", x)
    for limit, shift in ((0x0000FFFF, 16), (0x00FFFFFF, 8), (0x0FFFFFFF, 4), (0x3FFFFFFF, 2),
                         (0x7FFFFFFF, 1)):
        ctx.emit(f"if (({y.text} != 0u) && ({y.text} <= 0x{limit:08x}u)) "
                 f"{{ {n.text} = {n.text} + {shift}u; {y.text} = {y.text} << {shift}u; }}")
    return n


def _reverse(ctx: Ctx, x: str) -> Value:
    t = ctx.temp("u32", x)
    for mask, shift in ((0x55555555, 1), (0x33333333, 2), (0x0F0F0F0F, 4), (0x00FF00FF, 8)):
        ctx.emit(f"{t.text} = (({t.text} >> {shift}u) & 0x{mask:08x}u) | "
                 f"(({t.text} & 0x{mask:08x}u) << {shift}u);")
    return ctx.temp("u32", f"({t.text} >> 16u) | ({t.text} << 16u)")


def bit_count(ctx: Ctx, op: UnOp, x: str) -> Value:
    """Popcount, Clz, Ctz or ReverseBits of the u32 text ``x``."""
    if op == UnOp.POPCOUNT:
        return _popcount(ctx, x)
    if op == UnOp.CLZ:
        return _clz(ctx, x)
    if op == UnOp.CTZ:
        low = ctx.temp("u32", f"({x} & (0u - {x})) - 1u")  # ones below the lowest set bit
        return _popcount(ctx, low.text)
    return _reverse(ctx, x)


def _bits(ctx: Ctx, op: UnOp, v: Value) -> Value:
    x = v.text if v.kind == "u32" else f"U32({v.text})"
    out = bit_count(ctx, op, x)
    return out if v.kind == "u32" else ctx.temp("i32", f"I32({out.text})")


def _float(ctx: Ctx, op: UnOp, v: Value) -> Value:
    x = v.text
    if op == UnOp.NEGATE:
        return canon(ctx, f"-{x}")
    if op == UnOp.ABS:
        return ctx.temp("f32", f"AS_F32(AS_U32({x}) & 0x7fffffffu)")
    if op == UnOp.SQRT:
        return canon(ctx, f"SQRT({x})")
    if op == UnOp.RECIPROCAL:
        return canon(ctx, f"1.0f / {x}")
    if op in _CORRECTLY_ROUNDED:
        # Correctly rounded (dialect/crmath.py): the same bits on every device, in f64.
        ctx.features.add("fp64")
        return canon(ctx, ctx.temp("f32", f"CR_{_CORRECTLY_ROUNDED[op]}({x})").text)
    modes = {UnOp.FLOOR: "floor", UnOp.CEIL: "ceil", UnOp.TRUNC: "trunc", UnOp.ROUND: "round"}
    if op in modes:
        return f32_rounding(ctx, modes[op], v)
    if op == UnOp.SIGN:
        nan = is_nan(ctx, v)
        # Built from the bits alone: a compare/select chain is pattern-matched to fsign by
        # some compilers (llvmpipe), which keeps the sign of zero; the reference gives +0.0.
        sign = f"(AS_U32({x}) & 0x80000000u) | 0x3f800000u"
        return ctx.temp("f32", f"AS_F32({nan.text} ? 0x7fc00000u : (((AS_U32({x}) & "
                               f"0x7fffffffu) == 0u) ? 0u : ({sign})))")
    if op == UnOp.IS_NAN:
        return is_nan(ctx, v)
    if op in (UnOp.IS_INF, UnOp.IS_FINITE):
        rel = "==" if op == UnOp.IS_INF else "<"
        return ctx.temp("bool", f"(AS_U32({x}) & 0x7fffffffu) {rel} 0x7f800000u")
    raise unsupported(f"f32 {op.name} (the reference errors)", "use a float operation.")


def lower_unop(ctx: Ctx, op: UnOp, v: Value) -> Value:
    """Lower ``op(v)``.

    Raises:
        UnsupportedOpError: a combination the reference rejects, or a transcendental.
    """
    if v.kind == "bytes":
        raise unsupported(f"{op.name} of raw bytes from an 8/16-bit buffer (the reference "
                          "errors)", "Cast the loaded value to u32 or i32 first.")
    if v.kind == "f32":
        return _float(ctx, op, v)
    if op == UnOp.LOGICAL_NOT:
        return ctx.temp("bool", f"!{truth(v)}")
    if v.kind == "bool":
        raise unsupported(f"bool {op.name} (the reference errors)", "cast to u32 first.")
    if op == UnOp.NEGATE:
        text = f"0u - {v.text}" if v.kind == "u32" else f"I32(0u - U32({v.text}))"
        return ctx.temp(v.kind, text)
    if op == UnOp.BIT_NOT:
        return ctx.temp(v.kind, f"~{v.text}")
    if op in (UnOp.POPCOUNT, UnOp.CLZ, UnOp.CTZ, UnOp.REVERSE_BITS):
        return _bits(ctx, op, v)
    if op in _UNPACK:
        x = v.text if v.kind == "u32" else f"U32({v.text})"
        return ctx.temp("u32", _UNPACK[op].format(x=x))
    raise unsupported(f"{v.kind} {op.name} (the reference errors)", "use an f32 operand.")


def _from_f32(ctx: Ctx, target: str, v: Value) -> Value:
    nan = is_nan(ctx, v)
    x = v.text
    if target == "u32":
        # Rust `as`: truncate, saturate, NaN -> 0.
        return ctx.temp("u32", f"({nan.text} || {x} <= 0.0f) ? 0u : (({x} >= 4294967296.0f) ? "
                               f"0xffffffffu : U32({x}))")
    return ctx.temp("i32", f"{nan.text} ? 0 : (({x} <= -2147483648.0f) ? {MIN_I32} : "
                           f"(({x} >= 2147483648.0f) ? 2147483647 : I32({x})))")


_TARGETS: dict[object, str] = {Scalar.U32: "u32", Scalar.I32: "i32", Scalar.F32: "f32",
                               Scalar.BOOL: "bool"}


def lower_cast(ctx: Ctx, target: DataType, v: Value) -> Value:
    """Lower ``Cast{target, v}``.

    Raises:
        UnsupportedOpError: a 64-bit, vector or sub-f32 float target, or a cast the
            reference rejects.
    """
    if v.kind == "bytes":
        if target == Scalar.F32:
            raise unsupported("Cast of raw bytes to f32 (the reference errors)",
                              "Cast to u32 first.")
        v = Value(v.text, "u32")  # raw bytes are their zero-extended integer
    if target in (Scalar.U8, Scalar.U16, Scalar.I8, Scalar.I16) and v.kind != "f32":
        width = 8 if target in (Scalar.U8, Scalar.I8) else 16
        x = v.text if v.kind == "u32" else (f"({v.text} ? 1u : 0u)" if v.kind == "bool"
                                            else f"U32({v.text})")
        if target in (Scalar.U8, Scalar.U16):
            return ctx.temp("u32", f"{x} & 0x{(1 << width) - 1:x}u")
        return ctx.temp("i32", f"I32({x} << {32 - width}u) >> {32 - width}")
    kind = _TARGETS.get(target)
    if kind is None:
        raise unsupported(f"cast of {v.kind} to {target!r} (the reference errors, or the type "
                          "is not lowered)", "cast to u32, i32, f32 or bool.")
    if kind == v.kind:
        return v
    if kind == "bool":
        return ctx.temp("bool", truth(v))
    if v.kind == "bool":
        one, zero = {"u32": ("1u", "0u"), "i32": ("1", "0"), "f32": ("1.0f", "0.0f")}[kind]
        return ctx.temp(kind, f"{v.text} ? {one} : {zero}")
    if v.kind == "f32":
        return _from_f32(ctx, kind, v)
    if kind == "f32":
        return canon(ctx, f"F32({v.text})")
    return ctx.temp(kind, f"{kind.upper()}({v.text})")
