"""Linear algebra and f32 maps (vyre-libs 0.7.2 math/, nn/): the tiled dot product with its
workgroup tree reduction, u32 matmul (plain and shared-memory tiled), f32 square and softmax.
"""

from __future__ import annotations

from vyre import builder as b
from vyre import ir

__all__ = ["dot_program", "matmul_program", "matmul_tiled_program", "softmax_program",
           "square_program"]

_LID, _WID, _GID = b.local_id(0), b.workgroup_id(0), b.invocation_id(0)
F32_MIN_BITS = 0xFF7FFFFF  # f32::MIN, the max-pass start value


def _tree(scratch: str, lanes: int, combine: object, guard: ir.Expr | None = None) -> list:
    """``scratch[l] = combine(scratch[l], scratch[l+stride])`` for stride = lanes/2 .. 1."""
    nodes: list[ir.Node] = []
    stride = lanes // 2
    while stride:
        cond = b.lt(b.var("local"), stride)
        nodes += [b.if_(cond if guard is None else b.and_(guard, cond), [
            b.if_(b.lt(b.add(b.var("local"), stride), lanes), [b.store(scratch, b.var("local"),
                  combine(b.load(scratch, b.var("local")),  # type: ignore[operator]
                          b.load(scratch, b.add(b.var("local"), stride))))])]),
            b.barrier()]
        stride //= 2
    return nodes


def dot_program(n: int, lanes: int = 256) -> ir.Program:
    """vyre-libs ``dot``: workgroup 0 accumulates ``lhs[i]*rhs[i]`` strided over its lanes,
    then reduces in ``dot_scratch`` (u32, wrapping). Other workgroups only hit barriers.

    Buffers: ``lhs`` u32[n], ``rhs`` u32[n], workgroup ``dot_scratch[lanes]``, ``out`` output
    u32[1]. Workgroup (lanes, 1, 1).
    """
    v = b.var
    first = b.eq(_WID, 0)
    body = [b.let("local", _LID),
            b.if_(first, [
                b.let("acc", 0),
                b.loop("chunk", 0, -(-n // lanes), [
                    b.let("idx", b.add(b.mul(v("chunk"), lanes), v("local"))),
                    b.if_(b.lt(v("idx"), n), [b.assign("acc", b.add(v("acc"), b.mul(
                        b.load("lhs", v("idx")), b.load("rhs", v("idx")))))])]),
                b.store("dot_scratch", v("local"), v("acc"))]),
            b.barrier(),
            *_tree("dot_scratch", lanes, b.add, guard=first),
            b.if_(b.and_(first, b.eq(v("local"), 0)),
                  [b.store("out", 0, b.load("dot_scratch", 0))])]
    return b.program([b.read("lhs", 0, b.U32, n), b.read("rhs", 1, b.U32, n),
                      b.workgroup("dot_scratch", lanes, b.U32), b.output("out", 2, b.U32, 1)],
                     body, workgroup_size=(lanes, 1, 1))


def matmul_program(n: int, tile: int = 16) -> ir.Program:
    """``out[r*n+c] = sum_k a[r*n+k] * b[k*n+c]`` (u32, wrapping): one invocation per output,
    (tile, tile) workgroups; grid (ceil(n/tile), ceil(n/tile), 1)."""
    r, c, k = b.var("r"), b.var("c"), b.var("k")
    acc = b.add(b.var("acc"), b.mul(b.load("a", b.add(b.mul(r, n), k)),
                                    b.load("b", b.add(b.mul(k, n), c))))
    body = [b.let("c", b.invocation_id(0)), b.let("r", b.invocation_id(1)),
            b.if_(b.and_(b.lt(r, n), b.lt(c, n)), [
                b.let("acc", 0),
                b.loop("k", 0, n, [b.assign("acc", acc)]),
                b.store("out", b.add(b.mul(r, n), c), b.var("acc"))])]
    return b.program([b.read("a", 0, b.U32, n * n), b.read("b", 1, b.U32, n * n),
                      b.output("out", 2, b.U32, n * n)], body, workgroup_size=(tile, tile, 1))


def matmul_tiled_program(n: int, tile: int = 16) -> ir.Program:
    """The same product through (tile x tile) workgroup-memory tiles and barriers."""
    v = b.var
    lx, ly = b.local_id(0), b.local_id(1)
    slot = b.add(b.mul(ly, tile), lx)
    a_col, b_row = b.add(b.mul(v("t"), tile), lx), b.add(b.mul(v("t"), tile), ly)
    step = [
        b.store("ta", slot, b.select(b.and_(b.lt(v("r"), n), b.lt(a_col, n)),
                                     b.load("a", b.add(b.mul(v("r"), n), a_col)), 0)),
        b.store("tb", slot, b.select(b.and_(b.lt(b_row, n), b.lt(v("c"), n)),
                                     b.load("b", b.add(b.mul(b_row, n), v("c"))), 0)),
        b.barrier(),
        b.loop("k", 0, tile, [b.assign("acc", b.add(v("acc"), b.mul(
            b.load("ta", b.add(b.mul(ly, tile), v("k"))),
            b.load("tb", b.add(b.mul(v("k"), tile), lx)))))]),
        b.barrier()]
    body = [b.let("c", b.invocation_id(0)), b.let("r", b.invocation_id(1)), b.let("acc", 0),
            b.loop("t", 0, -(-n // tile), step),
            b.if_(b.and_(b.lt(v("r"), n), b.lt(v("c"), n)),
                  [b.store("out", b.add(b.mul(v("r"), n), v("c")), v("acc"))])]
    return b.program([b.read("a", 0, b.U32, n * n), b.read("b", 1, b.U32, n * n),
                      b.output("out", 2, b.U32, n * n), b.workgroup("ta", tile * tile, b.U32),
                      b.workgroup("tb", tile * tile, b.U32)], body,
                     workgroup_size=(tile, tile, 1))


def square_program(n: int) -> ir.Program:
    """vyre-libs ``square``: ``out[i] = in[i] * in[i]`` (f32); workgroup (64, 1, 1)."""
    i = b.var("i")
    return b.program([b.read("in", 0, b.F32, n), b.output("out", 1, b.F32, n)],
                     [b.let("i", _GID), b.if_(b.lt(i, n), [
                         b.store("out", i, b.mul(b.load("in", i), b.load("in", i)))])],
                     workgroup_size=(64, 1, 1))


def softmax_program(n: int, lanes: int = 256) -> ir.Program:
    """vyre-libs tiled softmax over ``in`` f32[n] in one workgroup: a strided max pass and a
    tree max, a strided ``exp(x - max)`` sum and a tree sum, then ``exp(x - max) / sum``.

    Buffers: ``in`` f32[n], ``out`` output f32[n], workgroup ``softmax_scratch[lanes]`` and
    ``softmax_max[1]``. Grid (1, 1, 1).
    """
    v = b.var
    chunks = -(-n // lanes)

    def strided(update: ir.Node) -> ir.Node:
        return b.loop("chunk", 0, chunks, [
            b.let("idx", b.add(b.mul(v("chunk"), lanes), v("local"))),
            b.if_(b.lt(v("idx"), n), [b.let("x", b.load("in", v("idx"))), update])])

    def fmax(x: ir.Expr, y: ir.Expr) -> ir.Expr:
        return b.select(b.gt(x, y), x, y)

    body = [
        b.let("local", _LID),
        b.let("acc", b.lit_f32_bits(F32_MIN_BITS)),
        strided(b.assign("acc", fmax(v("x"), v("acc")))),
        b.store("softmax_scratch", v("local"), v("acc")), b.barrier(),
        *_tree("softmax_scratch", lanes, fmax),
        b.if_(b.eq(v("local"), 0), [b.store("softmax_max", 0, b.load("softmax_scratch", 0))]),
        b.barrier(),
        b.let("m", b.load("softmax_max", 0)),
        b.let("sum", b.lit_f32(0.0)),
        strided(b.assign("sum", b.add(v("sum"), b.exp(b.sub(v("x"), v("m")))))),
        b.store("softmax_scratch", v("local"), v("sum")), b.barrier(),
        *_tree("softmax_scratch", lanes, b.add),
        b.let("total", b.load("softmax_scratch", 0)),
        strided(b.store("out", v("idx"), b.div(b.exp(b.sub(v("x"), v("m"))), v("total"))))]
    return b.program([b.read("in", 0, b.F32, n), b.output("out", 1, b.F32, n),
                      b.workgroup("softmax_scratch", lanes, b.F32),
                      b.workgroup("softmax_max", 1, b.F32)], body,
                     workgroup_size=(lanes, 1, 1))
