"""Hypothesis strategies for valid-on-the-wire vyre programs, reusable by other suites.

``programs()`` draws programs that encode and decode back (Opaque kinds need preserve_unknown).
"""

from __future__ import annotations

import functools

from hypothesis import strategies as st

from vyre import ir

U32 = st.integers(0, 0xFFFFFFFF)
U8 = st.integers(0, 0xFF)
NAMES = st.one_of(
    st.sampled_from(["a", "b", "out", "i", "acc", "", "snow_雪", "nul\0name"]),
    st.text(alphabet="abcxyz_09", min_size=1, max_size=6),
)
OPAQUE_IDS = st.integers(0x80000000, 0xFFFFFFFF)
ORDERINGS = st.sampled_from(list(ir.MemoryOrdering))


def f32_bits(canonical: bool = False) -> st.SearchStrategy[int]:
    """Raw f32 bit patterns (optionally only ones the encoder leaves unchanged)."""
    raw = st.one_of(
        U32,
        st.sampled_from([0, 0x80000000, 0x7FC00000, 0x7F800001, 0xFF800000, 0x00000001,
                         0x3FC00000]),
    )
    return raw.map(ir.canonical_f32_bits) if canonical else raw


@functools.cache
def quantized() -> st.SearchStrategy[ir.Quantized]:
    """Valid Quantized types."""
    scale = st.one_of(
        st.just(ir.QuantScale()),
        U32.map(lambda a: ir.QuantScale(ir.QuantScaleKind.PER_CHANNEL, a)),
        st.integers(1, 0xFFFFFFFF).map(lambda g: ir.QuantScale(ir.QuantScaleKind.PER_GROUP, g)),
    )
    zero = st.one_of(
        st.sampled_from([ir.ZeroPoint(), ir.ZeroPoint(ir.ZeroPointKind.PER_TENSOR)]),
        U32.map(lambda a: ir.ZeroPoint(ir.ZeroPointKind.PER_CHANNEL, a)),
        st.integers(1, 0xFFFFFFFF).map(lambda g: ir.ZeroPoint(ir.ZeroPointKind.PER_GROUP, g)),
    )
    storage = st.sampled_from(sorted(ir.QUANTIZED_STORAGE))
    return st.builds(ir.Quantized, storage, scale, zero)


@functools.cache
def data_types() -> st.SearchStrategy[ir.DataType]:
    """Every DataType variant, composites nested a few levels (expression context)."""
    leaves = st.one_of(
        st.sampled_from(list(ir.Scalar)),
        st.builds(ir.Array, U32),
        st.builds(ir.Handle, U32),
        st.builds(ir.OpaqueType, OPAQUE_IDS),
        st.builds(ir.DeviceMesh, st.lists(U32, max_size=4).map(tuple)),
        quantized(),
    )

    def extend(inner: st.SearchStrategy[ir.DataType]) -> st.SearchStrategy[ir.DataType]:
        return st.one_of(
            st.builds(ir.Vec, inner, U8),
            st.builds(ir.TensorShaped, inner, st.lists(U32, max_size=4).map(tuple)),
            st.builds(ir.SparseCsr, inner),
            st.builds(ir.SparseCoo, inner),
            st.builds(ir.SparseBsr, inner, U32, U32),
        )

    return st.recursive(leaves, extend, max_leaves=3)


@functools.cache
def element_types() -> st.SearchStrategy[ir.DataType]:
    """DataTypes the dense memory-region encoding can carry and decode."""
    return st.one_of(
        st.sampled_from(list(ir.Scalar)),
        st.builds(ir.Array, st.integers(0, 1 << 31)),
        st.builds(ir.Handle, U32),
        st.builds(ir.OpaqueType, OPAQUE_IDS),
        quantized(),
    )


@functools.cache
def exprs(canonical_f32: bool = False, max_leaves: int = 5) -> st.SearchStrategy[ir.Expr]:
    """Every expression variant, nested at most ``max_leaves`` deep."""
    leaves = st.one_of(
        st.builds(ir.LitU32, U32),
        st.builds(ir.LitI32, st.integers(-(1 << 31), (1 << 31) - 1)),
        st.builds(ir.LitBool, st.booleans()),
        st.builds(ir.LitF32, f32_bits(canonical_f32)),
        st.builds(ir.Var, NAMES),
        st.builds(ir.BufLen, NAMES),
        st.builds(ir.BufferRef, NAMES),
        st.builds(ir.InvocationId, U8),
        st.builds(ir.WorkgroupId, U8),
        st.builds(ir.LocalId, U8),
        st.just(ir.SubgroupLocalId()),
        st.just(ir.SubgroupSize()),
        st.builds(ir.OpaqueExpr, NAMES, st.binary(max_size=12)),
    )
    bin_ops = st.one_of(st.sampled_from(list(ir.BinOp)), st.builds(ir.OpaqueOp, OPAQUE_IDS))
    un_ops = st.one_of(st.sampled_from(list(ir.UnOp)), st.builds(ir.OpaqueOp, OPAQUE_IDS))
    atomic_ops = st.one_of(
        st.sampled_from(list(ir.AtomicOp)), st.builds(ir.OpaqueOp, OPAQUE_IDS)
    )

    def extend(inner: st.SearchStrategy[ir.Expr]) -> st.SearchStrategy[ir.Expr]:
        return st.one_of(
            st.builds(ir.Load, NAMES, inner),
            st.builds(ir.Binary, bin_ops, inner, inner),
            st.builds(ir.Unary, un_ops, inner),
            st.builds(ir.Call, NAMES, st.lists(inner, max_size=3).map(tuple)),
            st.builds(ir.Select, inner, inner, inner),
            st.builds(ir.Cast, data_types(), inner),
            st.builds(ir.Atomic, atomic_ops, NAMES, inner, st.none() | inner, inner, ORDERINGS),
            st.builds(ir.Fma, inner, inner, inner),
            st.builds(ir.SubgroupReduce, st.sampled_from(list(ir.SubgroupReduceOp)), inner),
            st.builds(ir.SubgroupShuffle, inner, inner),
            st.builds(ir.SubgroupBallot, inner),
        )

    return st.recursive(leaves, extend, max_leaves=max_leaves)


@functools.cache
def nodes(depth: int = 2, canonical_f32: bool = False) -> st.SearchStrategy[ir.Node]:
    """Every statement variant; bodies nest at most ``depth`` levels."""
    e = exprs(canonical_f32)
    flat = st.one_of(
        st.builds(ir.Let, NAMES, e),
        st.builds(ir.Assign, NAMES, e),
        st.builds(ir.Store, NAMES, e, e),
        st.just(ir.Return()),
        st.builds(ir.Barrier, ORDERINGS),
        st.builds(ir.IndirectDispatch, NAMES, st.integers(0, (1 << 64) - 1)),
        st.builds(ir.AsyncLoad, NAMES, NAMES, e, e, NAMES),
        st.builds(ir.AsyncStore, NAMES, NAMES, e, e, NAMES),
        st.builds(ir.AsyncWait, NAMES),
        st.builds(ir.Trap, e, NAMES),
        st.builds(ir.Resume, NAMES),
        st.builds(ir.AllReduce, NAMES, st.sampled_from(list(ir.CollectiveOp)), U32),
        st.builds(ir.AllGather, NAMES, NAMES, U32),
        st.builds(ir.ReduceScatter, NAMES, NAMES, st.sampled_from(list(ir.CollectiveOp)), U32),
        st.builds(ir.Broadcast, NAMES, U32, U32),
        st.builds(ir.OpaqueNode, NAMES, st.binary(max_size=12)),
    )
    if depth <= 0:
        return flat
    body = st.lists(nodes(depth - 1, canonical_f32), max_size=2).map(tuple)
    return st.one_of(
        flat,
        st.builds(ir.If, e, body, body),
        st.builds(ir.Loop, NAMES, e, e, body),
        st.builds(ir.Block, body),
        st.builds(ir.Region, NAMES, st.none() | NAMES, body),
    )


@functools.cache
def shape_predicates(depth: int = 2) -> st.SearchStrategy[ir.ShapePredicate]:
    """Every ShapePredicate variant, connectives nested at most ``depth`` deep."""
    i64 = st.integers(-(1 << 63), (1 << 63) - 1)
    leaves = st.one_of(
        st.builds(ir.AtLeast, U32), st.builds(ir.AtMost, U32), st.builds(ir.Exactly, U32),
        st.builds(ir.MultipleOf, U32), st.builds(ir.ModEquals, U32, U32),
        st.builds(ir.AffineRange, i64, i64, i64, i64),
    )
    if depth <= 0:
        return leaves
    inner = shape_predicates(depth - 1)
    return st.one_of(
        leaves,
        st.builds(ir.PredicateAnd, inner, inner),
        st.builds(ir.PredicateOr, inner, inner),
        st.builds(ir.PredicateNot, inner),
    )


@st.composite
def buffers(draw: st.DrawFn) -> ir.BufferDecl:
    """A BufferDecl satisfying every encoder and decoder precondition."""
    access = draw(st.sampled_from(list(ir.BufferAccess)))
    element = draw(element_types())
    is_output = draw(st.booleans())
    live_out = draw(st.booleans())
    needs_count = is_output or live_out or access == ir.BufferAccess.WORKGROUP
    count = draw(st.integers(1 if needs_count else 0, 0xFFFFFFFF))
    size = ir.size_bytes(element)
    byte_range = None
    if size is not None and count > 0 and draw(st.booleans()):
        end = draw(st.integers(0, count * size))
        byte_range = (draw(st.integers(0, end)), end)
    hints = ir.MemoryHints(
        draw(st.none() | U8), draw(U32), draw(st.sampled_from(list(ir.CacheLocality)))
    )
    return ir.BufferDecl(
        draw(NAMES), draw(U32), access, draw(st.sampled_from(list(ir.MemoryKind))), element,
        count, is_output, live_out, byte_range, hints, draw(st.booleans()),
        draw(st.sampled_from(list(ir.LinearType))), draw(st.none() | shape_predicates()),
    )


@st.composite
def programs(draw: st.DrawFn, canonical_f32: bool = False, max_nodes: int = 3) -> ir.Program:
    """A program that encodes and decodes (with ``preserve_unknown=True``)."""
    return ir.Program(
        tuple(draw(st.lists(buffers(), max_size=3))),
        tuple(draw(st.lists(nodes(2, canonical_f32), max_size=max_nodes))),
        (draw(st.integers(1, 1024)), draw(st.integers(1, 64)), draw(st.integers(1, 64))),
        draw(st.none() | NAMES),
        draw(st.booleans()),
    )
