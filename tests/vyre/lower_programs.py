"""Programs for the lowering tests: many ops per program (one compile per device), plus the
devices to run them on and a parity check against the reference interpreter."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

# Keep test compiles out of the user's cache; set before any device opens its compiler.
os.environ.setdefault("HURRAY_GPU_CACHE_DIR", tempfile.mkdtemp(prefix="hurray_gpu_test_cache_"))

from vyre import builder as b  # noqa: E402
from vyre import ir, reference  # noqa: E402
from vyre.ir import BinOp, Scalar, UnOp  # noqa: E402

if TYPE_CHECKING:
    from hurray_gpu.dialect.kernel import KernelDef

LANES = 32
GOLDEN = Path(__file__).parents[1] / "golden" / "vyre"
KINDS = {Scalar.U32: "u32", Scalar.I32: "i32", Scalar.F32: "f32", Scalar.BOOL: "bool"}
U32_BINOPS = [BinOp.ADD, BinOp.SUB, BinOp.MUL, BinOp.DIV, BinOp.MOD, BinOp.BIT_AND,
              BinOp.BIT_OR, BinOp.BIT_XOR, BinOp.SHL, BinOp.SHR, BinOp.EQ, BinOp.NE, BinOp.LT,
              BinOp.GT, BinOp.LE, BinOp.GE, BinOp.AND, BinOp.OR, BinOp.ABS_DIFF, BinOp.MIN,
              BinOp.MAX, BinOp.SATURATING_ADD, BinOp.SATURATING_SUB, BinOp.SATURATING_MUL,
              BinOp.ROTATE_LEFT, BinOp.ROTATE_RIGHT, BinOp.WRAPPING_ADD, BinOp.WRAPPING_SUB,
              BinOp.MUL_HIGH]
I32_BINOPS = [BinOp.ADD, BinOp.SUB, BinOp.MUL, BinOp.BIT_AND, BinOp.BIT_OR, BinOp.BIT_XOR,
              BinOp.EQ, BinOp.NE, BinOp.LT, BinOp.GT, BinOp.LE, BinOp.GE, BinOp.MIN, BinOp.MAX, BinOp.WRAPPING_ADD, BinOp.WRAPPING_SUB]
I32_DIVOPS = [BinOp.DIV, BinOp.MOD]
F32_BINOPS = [BinOp.ADD, BinOp.SUB, BinOp.MUL, BinOp.DIV, BinOp.MIN, BinOp.MAX, BinOp.EQ,
              BinOp.NE, BinOp.LT, BinOp.GT, BinOp.LE, BinOp.GE]
U32_UNOPS = [UnOp.NEGATE, UnOp.BIT_NOT, UnOp.LOGICAL_NOT, UnOp.POPCOUNT, UnOp.CLZ, UnOp.CTZ,
             UnOp.REVERSE_BITS, UnOp.UNPACK4_LOW, UnOp.UNPACK4_HIGH, UnOp.UNPACK8_LOW,
             UnOp.UNPACK8_HIGH]
I32_UNOPS = [UnOp.BIT_NOT, UnOp.POPCOUNT, UnOp.CLZ, UnOp.CTZ,
             UnOp.REVERSE_BITS, UnOp.UNPACK8_HIGH]
F32_UNOPS = [UnOp.NEGATE, UnOp.ABS, UnOp.SQRT, UnOp.FLOOR, UnOp.CEIL, UnOp.ROUND, UnOp.TRUNC,
             UnOp.SIGN, UnOp.IS_NAN, UnOp.IS_INF, UnOp.IS_FINITE, UnOp.RECIPROCAL]
CASTS = [(Scalar.U32, Scalar.I32), (Scalar.U32, Scalar.F32), (Scalar.U32, Scalar.BOOL),
         (Scalar.U32, Scalar.U8), (Scalar.U32, Scalar.I8), (Scalar.U32, Scalar.U16),
         (Scalar.U32, Scalar.I16), (Scalar.I32, Scalar.U32), (Scalar.I32, Scalar.F32),
         (Scalar.I32, Scalar.BOOL), (Scalar.I32, Scalar.I8), (Scalar.F32, Scalar.U32),
         (Scalar.F32, Scalar.I32), (Scalar.F32, Scalar.BOOL)]

# Edge values first; random draws fill the rest of each buffer.
U32_EDGES = [0, 1, 2, 31, 32, 33, 63, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFE, 12345,
             0xDEADBEEF, 0x00F00000, 65535, 65536]
F32_EDGES = [0x00000000, 0x80000000, 0x7FC00000, 0xFFC00001, 0x7F800001, 0x7F800000,
             0xFF800000, 0x00000001, 0x807FFFFF, 0x00800000, 0x3F800000, 0xBF800000,
             0x40200000, 0xC0200000, 0x3F000000, 0xBF000000, 0x3EFFFFFF, 0x4B000001,
             0x4F800000, 0xCF000000, 0x4F000000, 0x7F7FFFFF, 0x3FC00000, 0x40490FDB]


def elementwise(elem: Scalar, exprs: Sequence[tuple[ir.Expr, str]]) -> ir.Program:
    """Lane i stores exprs[k] (over locals x = a[i], y = b[i]) at slot i*K + k of ``out``
    (u32; bool and i32 results cast to u32) or, for f32 results, of ``fout`` (f32)."""
    k = len(exprs)
    body: list[ir.Node] = [
        b.let("i", b.invocation_id(0)),
        b.let("x", b.load("a", b.var("i"))),
        b.let("y", b.load("b", b.var("i"))),
    ]
    for slot, (expr, kind) in enumerate(exprs):
        index = b.add(b.mul(b.var("i"), k), slot)
        if kind == "f32":
            body.append(b.store("fout", index, expr))
        else:
            value = expr if kind == "u32" else b.cast(Scalar.U32, expr)
            body.append(b.store("out", index, value))
    return b.program(
        [b.read("a", 0, elem), b.read("b", 1, elem), b.output("out", 2, Scalar.U32, LANES * k),
         ir.BufferDecl.storage("fout", 3, ir.BufferAccess.WRITE_ONLY, Scalar.F32, LANES * k)],
        body, workgroup_size=(8, 1, 1))


def binop_program(elem: Scalar, ops: Sequence[BinOp]) -> ir.Program:
    """Every op in ``ops`` applied to (a[i], b[i])."""
    exprs = []
    for op in ops:
        bool_result = op in (BinOp.EQ, BinOp.NE, BinOp.LT, BinOp.GT, BinOp.LE, BinOp.GE,
                             BinOp.AND, BinOp.OR)
        exprs.append((b.binop(op, b.var("x"), b.var("y")),
                      "bool" if bool_result else KINDS[elem]))
    return elementwise(elem, exprs)


def unop_program(elem: Scalar, ops: Sequence[UnOp]) -> ir.Program:
    """Every op in ``ops`` applied to a[i]."""
    exprs = []
    for op in ops:
        is_bool = op in (UnOp.LOGICAL_NOT, UnOp.IS_NAN, UnOp.IS_INF, UnOp.IS_FINITE)
        exprs.append((b.unop(op, b.var("x")), "bool" if is_bool else KINDS[elem]))
    return elementwise(elem, exprs)


def cast_program(source: Scalar, pairs: Sequence[tuple[Scalar, Scalar]]) -> ir.Program:
    """Every cast from ``source`` in ``pairs`` applied to a[i]."""
    exprs = []
    for src, dst in pairs:
        if src == source:
            cast = b.cast(dst, b.var("x"))
            if dst not in KINDS:  # narrow targets: widen back to a storable u32
                exprs.append((b.cast(Scalar.U32, cast), "u32"))
            else:
                exprs.append((cast, KINDS[dst]))
    return elementwise(source, exprs)


def kernel_devices() -> list:
    """Every available compiling hurray_gpu device (cpu, opencl, vulkan, ...)."""
    from hurray_gpu.runtime.registry import devices

    return [d for d in devices() if d.kind != "reference" and d.compiler is not None]


def assert_parity(program: ir.Program, inputs: Mapping[str, object], device: object,
                  grid: tuple[int, int, int] | None = (LANES // 8, 1, 1)) -> dict:
    """The device's output bytes equal the reference interpreter's."""
    from vyre.execute import run_bytes

    want = reference.run_bytes(program, inputs, grid=grid)
    got = run_bytes(program, inputs, grid=grid, device=device)
    assert got.keys() == want.keys()
    for name in want:
        if got[name] != want[name]:
            g = np.frombuffer(got[name], "<u4")
            w = np.frombuffer(want[name], "<u4")
            bad = np.nonzero(g != w)[0][:8]
            raise AssertionError(f"{name} differs at words {bad.tolist()}: device "
                                 f"{[hex(v) for v in g[bad]]} reference "
                                 f"{[hex(v) for v in w[bad]]}")
    return got


def fill(edges: Sequence[int], rng: np.random.Generator, draw: Callable[[int], np.ndarray],
         offset: int = 0) -> np.ndarray:
    """LANES u32 words: the edge values (rotated by ``offset``) then random draws."""
    out = draw(LANES).astype(np.uint32)
    rotated = list(edges[offset % len(edges):]) + list(edges[:offset % len(edges)])
    out[:len(rotated)] = np.array(rotated[:LANES], dtype=np.uint64).astype(np.uint32)
    return out


def corpus_kernels() -> list[KernelDef]:
    """Every distinct kernel the vyre test programs lower to (the known-answer cases, the op
    and workgroup programs, every correctly rounded function, the golden KATs): what
    the offline compile checks build beside the built-in kernels."""
    from tests.vyre.program_cases import all_cases
    from tests.vyre.test_lower_crmath import PROGRAM as CRMATH
    from tests.vyre.test_lower_ops import PROGRAMS
    from tests.vyre.test_lower_workgroup import prefix_scan, subgroup_program, tiled_dot
    from vyre import from_wire
    from vyre import programs as P
    from vyre.execute import lower_cached

    programs = [c.build() for c in all_cases()] + [p for p, _ in PROGRAMS.values()]
    from tests.vyre.test_lower_barrier_loops import loop_reduce, uniform_if_barrier
    from tests.vyre.test_lower_half import half_program
    from tests.vyre.test_lower_wide import WIDE, u64_ops, u64_workgroup, wide_copy

    programs += [P.blake3_chunks_program(), P.blake3_parents_program(), prefix_scan(64),
                 tiled_dot(), subgroup_program(48), loop_reduce(64, 3), uniform_if_barrier(),
                 u64_ops(), u64_workgroup(), *(wide_copy(e) for e in WIDE), half_program(), CRMATH]
    x, y = b.var("x"), b.var("y")
    # x*y+x and x*x+y*y as a multiply then an add (contractible in plain C; vyre's per-op
    # float canonicalization already keeps them apart), and an explicit fma.
    programs.append(elementwise(Scalar.F32, [(b.add(b.mul(x, y), x), "f32"),
                                             (b.add(b.mul(x, x), b.mul(y, y)), "f32")]))
    programs.append(elementwise(Scalar.F32, [(b.fma(x, y, x), "f32")]))
    for kat in sorted(GOLDEN.glob("k*.kat.json")):
        wire = GOLDEN / json.loads(kat.read_text())["program"]
        programs.append(from_wire(wire.read_bytes()))
    kernels: dict[str, KernelDef] = {}
    for program in programs:
        lowered = lower_cached(program)
        for kernel in lowered.kernels:
            kernels.setdefault(kernel.name, kernel)
    return list(kernels.values())
