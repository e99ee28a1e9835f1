"""Reductions and atomics, as vyre-primitives and vyre-libs 0.7.2 build them: histograms
(owner-computes and atomic scatter), the serial atomic programs that trace old values, the
subgroup add composition and the element-wise u32 maps of vyre-libs.
"""

from __future__ import annotations

from collections.abc import Callable

from vyre import builder as b
from vyre import ir
from vyre.ir import AtomicOp

__all__ = ["ELEMENTWISE", "atomic_compare_exchange_program", "atomic_serial_program",
           "elementwise_program", "histogram_atomic_program", "histogram_program",
           "subgroup_add_program", "subgroup_reduce_add_program"]

_GID = b.invocation_id(0)


def histogram_program(count: int, bins: int) -> ir.Program:
    """vyre-primitives ``histogram``: lane ``t`` counts the inputs equal to ``t``.

    Buffers: ``input`` u32[count], ``output`` ReadWrite u32[bins] (pass zeros). Workgroup
    (256, 1, 1).
    """
    v = b.var
    body = [b.let("t", _GID), b.if_(b.lt(v("t"), bins), [
        b.let("total", 0),
        b.loop("i", 0, b.buf_len("input"), [b.assign("total", b.add(v("total"), b.select(
            b.eq(b.load("input", v("i")), v("t")), 1, 0)))]),
        b.store("output", v("t"), v("total"))])]
    return b.program([b.read("input", 0, b.U32, count), b.read_write("output", 1, b.U32, bins)],
                     body, workgroup_size=(256, 1, 1))


def histogram_atomic_program(count: int, bins: int) -> ir.Program:
    """``histogram_atomic_scatter``: invocation ``t`` atomically bumps the bin of input ``t``."""
    v = b.var
    body = [b.let("t", _GID), b.if_(b.lt(v("t"), count), [
        b.let("bin", b.load("input", v("t"))),
        b.if_(b.lt(v("bin"), bins), [b.let("_prev", b.atomic_add("output", v("bin"), 1))])])]
    return b.program([b.read("input", 0, b.U32, count), b.read_write("output", 1, b.U32, bins)],
                     body, workgroup_size=(256, 1, 1))


def atomic_serial_program(op: AtomicOp, n: int) -> ir.Program:
    """``build_atomic_serial``: gid 0 applies ``op`` with each value in turn to ``state[0]``
    and records every old value in ``trace``.

    Buffers: ``values`` u32[n], ``state`` ReadWrite u32[1], ``trace`` output u32[n].
    """
    v = b.var
    body = [b.if_(b.eq(_GID, 0), [b.loop("i", 0, b.buf_len("values"), [
        b.let("old", b.atomic(op, "state", 0, b.load("values", v("i")))),
        b.store("trace", v("i"), v("old"))])])]
    return b.program([b.read("values", 0, b.U32, n), b.read_write("state", 1, b.U32, 1),
                      b.output("trace", 2, b.U32, n)], body)


def atomic_compare_exchange_program(n: int) -> ir.Program:
    """The CompareExchange serial program: buffers ``expected``, ``desired``, ``state``
    ReadWrite u32[1], ``trace`` output u32[n]."""
    v = b.var
    body = [b.if_(b.eq(_GID, 0), [b.loop("i", 0, b.buf_len("expected"), [
        b.let("old", b.atomic(AtomicOp.COMPARE_EXCHANGE, "state", 0,
                              b.load("desired", v("i")), expected=b.load("expected", v("i")))),
        b.store("trace", v("i"), v("old"))])])]
    return b.program([b.read("expected", 0, b.U32, n), b.read("desired", 1, b.U32, n),
                      b.read_write("state", 2, b.U32, 1), b.output("trace", 3, b.U32, n)], body)


def subgroup_add_program(n: int, workgroup: int = 64) -> ir.Program:
    """vyre-intrinsics ``subgroup_add`` as registered: each lane sums the 32-aligned group of
    ``values`` it belongs to, with plain loads (no subgroup op)."""
    v = b.var
    body = [b.let("idx", _GID), b.if_(b.lt(v("idx"), n), [
        b.let("base", b.mul(b.div(v("idx"), 32), 32)),
        b.let("sum", 0),
        b.loop("lane", 0, 32, [b.let("peer", b.add(v("base"), v("lane"))), b.if_(
            b.lt(v("peer"), b.buf_len("values")),
            [b.assign("sum", b.add(v("sum"), b.load("values", v("peer"))))])]),
        b.store("out", v("idx"), v("sum"))])]
    return b.program([b.read("values", 0, b.U32, n), b.output("out", 1, b.U32, n)], body,
                     workgroup_size=(workgroup, 1, 1))


def subgroup_reduce_add_program(n: int, workgroup: int = 64) -> ir.Program:
    """The same sums through ``SubgroupReduce(Add)`` (32-lane subgroups), in uniform flow."""
    v = b.var
    body = [b.let("idx", _GID),
            b.let("sum", b.subgroup_add(b.select(b.lt(v("idx"), n), b.load("values", v("idx")),
                                                 0))),
            b.if_(b.lt(v("idx"), n), [b.store("out", v("idx"), v("sum"))])]
    return b.program([b.read("values", 0, b.U32, n), b.output("out", 1, b.U32, n)], body,
                     workgroup_size=(workgroup, 1, 1))


def _avg_floor(x: ir.Expr, y: ir.Expr) -> ir.Expr:
    return b.add(b.bit_and(x, y), b.shr(b.bit_xor(x, y), 1))


# name -> (input buffer names, f(*loaded inputs)); vyre-libs math/*.rs.
ELEMENTWISE: dict[str, tuple[tuple[str, ...], Callable[..., ir.Expr]]] = {
    "clamp_u32": (("input", "lo", "hi"), lambda x, lo, hi: b.min_(b.max_(x, lo), hi)),
    "avg_floor": (("a", "b"), _avg_floor),
    "wrapping_neg": (("a",), lambda x: b.sub(0, x)),
    "lzcnt_u32": (("a",), b.clz),
    "tzcnt_u32": (("a",), b.ctz),
}


def elementwise_program(name: str, n: int) -> ir.Program:
    """``build_elementwise_unary/binary``: ``out[i] = f(inputs[i]...)`` for ``i < n``.

    Args:
        name: a key of :data:`ELEMENTWISE`.
        n: element count.

    Raises:
        ValueError: an unknown name.
    """
    if name not in ELEMENTWISE:
        raise ValueError(f"unknown element-wise program {name!r}; known: {sorted(ELEMENTWISE)}")
    inputs, fn = ELEMENTWISE[name]
    i = b.var("i")
    decls = [b.read(x, k, b.U32, n) for k, x in enumerate(inputs)]
    decls.append(b.output("out", len(inputs), b.U32, n))
    body = [b.let("i", _GID), b.if_(b.lt(i, n), [
        b.store("out", i, fn(*(b.load(x, i) for x in inputs)))])]
    return b.program(decls, body, workgroup_size=(64, 1, 1))
