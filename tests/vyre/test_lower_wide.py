"""64-bit and vector storage (u64, i64, f64, vec2/vec4<u32>) in lowered programs: what vyre's
validator accepts on them (copies, casts, u64 comparisons, bit ops, Select, workgroup arrays),
byte-identical to the reference on every device (docs/vyre-semantics.md, Casts)."""

from __future__ import annotations

import numpy as np
import pytest

from tests._support import stable_rng
from tests.vyre.lower_programs import assert_parity, kernel_devices
from vyre import builder as b
from vyre import ir
from vyre.execute import run
from vyre.ir import BinOp, Scalar, UnOp
from vyre.lower import TrapError, UnsupportedOpError, lower

DEVICES = kernel_devices()
ON_DEVICES = pytest.mark.parametrize("device", DEVICES, ids=[d.spec for d in DEVICES])
WIDE = [Scalar.U64, Scalar.I64, Scalar.F64, Scalar.VEC2_U32, Scalar.VEC4_U32]
GID = b.invocation_id(0)
# 64-bit edges (as two words) first: zero, word boundaries, the sign bit, all ones.
U64_EDGES = [0, 1, 0xFFFFFFFF, 1 << 32, (1 << 32) + 1, 1 << 63, (1 << 64) - 1, 0x7FFFFFFF,
             0x80000000, 0xDEADBEEF00000000, 0x00000000CAFEBABE, 0x8000000000000001]


def wide_copy(element: Scalar) -> ir.Program:
    """out[i] = a[i] over the buffer, plus one load past the end (the element's zero)."""
    n = b.buf_len("a")
    return b.program([b.read("a", 0, element), b.read_write("o", 1, element)],
                     [b.if_(b.lt(GID, n), [b.store("o", GID, b.load("a", GID))]),
                      b.if_(b.eq(GID, n), [b.store("o", GID, b.load("a", b.add(n, 5)))])],
                     workgroup_size=(8, 1, 1))


def u64_ops() -> ir.Program:
    """Comparisons, bit unops, Select, casts in and out of u64 over (x, y) = (a[i], b[i])."""
    x, y, k = b.var("x"), b.var("y"), b.var("k")
    cmps = [b.binop(op, x, y) for op in (BinOp.EQ, BinOp.NE, BinOp.LT, BinOp.GT, BinOp.LE,
                                         BinOp.GE)]
    bits = [b.unop(op, x) for op in (UnOp.BIT_NOT, UnOp.POPCOUNT, UnOp.CLZ, UnOp.CTZ,
                                     UnOp.REVERSE_BITS)]
    words: list[ir.Expr] = [b.cast(Scalar.U32, c) for c in cmps]
    words += [b.cast(Scalar.U32, b.cast(Scalar.BOOL, x)), b.cast(Scalar.U32, b.cast(Scalar.U8, x)),
              b.cast(Scalar.U32, b.cast(Scalar.I16, x)), b.cast(Scalar.U32, b.cast(Scalar.U16, y))]
    wides: list[ir.Expr] = [*bits, b.select(b.lt(x, y), x, y),
                            b.cast(Scalar.U64, b.cast(Scalar.I32, b.load("w", GID))),
                            b.cast(Scalar.U64, b.load("w", GID)),
                            b.cast(Scalar.U64, b.cast(Scalar.VEC2_U32, x)),
                            b.cast(Scalar.U64, b.cast(Scalar.BOOL, y))]
    body: list[ir.Node] = [b.let("x", b.load("a", GID)), b.let("y", b.load("b", GID)),
                           b.let("k", b.mul(GID, len(wides)))]
    body += [b.store("o", b.add(k, j), e) for j, e in enumerate(wides)]
    body += [b.store("ow", b.add(b.mul(GID, len(words)), j), e) for j, e in enumerate(words)]
    body += [b.store("v4", GID, b.cast(Scalar.VEC4_U32, b.load("w", GID))),
             b.store("v2", GID, b.cast(Scalar.VEC2_U32, b.load("v4in", GID))),
             b.store("i64", GID, b.cast(Scalar.I64, b.load("w", GID)))]
    n = len(U64_EDGES)
    return b.program(
        [b.read("a", 0, Scalar.U64), b.read("b", 1, Scalar.U64), b.read("w", 2, Scalar.U32),
         b.read("v4in", 3, Scalar.VEC4_U32), b.output("o", 4, Scalar.U64, n * len(wides)),
         b.read_write("ow", 5, Scalar.U32), b.read_write("v4", 6, Scalar.VEC4_U32),
         b.read_write("v2", 7, Scalar.VEC2_U32), b.read_write("i64", 8, Scalar.I64)],
        body, workgroup_size=(4, 1, 1))


def u64_workgroup() -> ir.Program:
    """Each lane stores its u64 into a workgroup array; after a barrier it reads its
    neighbour's (wrapping within the group)."""
    lid = b.local_id(0)
    return b.program(
        [b.read("a", 0, Scalar.U64), b.workgroup("s", 8, Scalar.U64),
         b.read_write("o", 1, Scalar.U64)],
        [b.store("s", lid, b.load("a", GID)), b.barrier(),
         b.store("o", GID, b.load("s", b.bit_and(b.add(lid, 1), 7)))],
        workgroup_size=(8, 1, 1))


def _u64_words(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=np.uint64)


@ON_DEVICES
@pytest.mark.parametrize("element", WIDE, ids=[e.name for e in WIDE])
def test_wide_copies_are_the_references_bytes(element: Scalar, device: object) -> None:
    size = ir.size_bytes(element) or 0
    data = stable_rng("wide copy", element.name).integers(0, 256, 13 * size + 3, np.uint8)
    inputs = {"a": data.tobytes(), "o": b"\xab" * (14 * size + 3)}
    got = assert_parity(wide_copy(element), inputs, device, grid=(2, 1, 1))
    assert got["o"][:13 * size] == data.tobytes()[:13 * size]
    assert got["o"][13 * size:14 * size] == bytes(size)  # the load past the end reads zero
    assert got["o"][14 * size:] == b"\xab" * 3  # the partial element is never written


@ON_DEVICES
def test_u64_comparisons_casts_and_bit_ops(device: object) -> None:
    rng = stable_rng("u64 ops")
    n = len(U64_EDGES)
    a = _u64_words(U64_EDGES)
    bm = np.roll(a, 3)
    bm[:4] = a[:4]  # equal pairs
    w = np.array([0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF] + [5] * (n - 5), np.uint32)
    inputs = {"a": a, "b": bm, "w": w,
              "v4in": rng.integers(0, 2**32, 4 * n, dtype=np.uint64).astype(np.uint32),
              "ow": np.zeros(4 * n, np.uint32), "v4": np.zeros(4 * n, np.uint32),
              "v2": np.zeros(2 * n, np.uint32), "i64": np.zeros(n, np.uint64)}
    got = assert_parity(u64_ops(), inputs, device, grid=(n // 4, 1, 1))
    popcount = np.frombuffer(got["o"], "<u8")[1::10]
    assert popcount.tolist() == [bin(int(v)).count("1") for v in a]


@ON_DEVICES
def test_u64_workgroup_array(device: object) -> None:
    a = _u64_words([(k << 33) | (k * 7) for k in range(16)])
    got = assert_parity(u64_workgroup(), {"a": a, "o": np.zeros(16, np.uint64)}, device,
                        grid=(2, 1, 1))
    want = [int(a[(k // 8) * 8 + (k + 1) % 8]) for k in range(16)]
    assert np.frombuffer(got["o"], "<u8").tolist() == want


@ON_DEVICES
def test_u64_to_u32_past_u32_max_traps(device: object) -> None:
    prog = b.program([b.read("a", 0, Scalar.U64), b.read_write("o", 1, Scalar.U32)],
                     [b.store("o", GID, b.cast(Scalar.U32, b.load("a", GID)))],
                     workgroup_size=(4, 1, 1))
    fits = {"a": _u64_words([1, 2, 0xFFFFFFFF, 7]), "o": np.zeros(4, np.uint32)}
    assert run(prog, fits, grid=(1, 1, 1), device=device)["o"].tolist() == [1, 2, 0xFFFFFFFF, 7]
    with pytest.raises(TrapError):
        run(prog, {"a": _u64_words([1, 1 << 32, 0, 0]), "o": np.zeros(4, np.uint32)},
            grid=(1, 1, 1), device=device)


def test_wide_constructs_the_reference_rejects_are_refused() -> None:
    cases = [b.cast(Scalar.U32, b.load("v", GID)),  # 8 raw bytes do not fit a u32
             b.cast(Scalar.U32, b.cast(Scalar.U64, b.load("q", GID)))]  # 16 bytes into a u64
    for expr in cases:
        prog = b.program([b.read("v", 0, Scalar.VEC2_U32), b.read("q", 1, Scalar.VEC4_U32),
                          b.read_write("o", 2, Scalar.U32)], [b.store("o", GID, expr)])
        with pytest.raises(UnsupportedOpError, match="Fix:"):
            lower(prog, validate=False)
