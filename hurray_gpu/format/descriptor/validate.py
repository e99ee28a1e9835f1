"""Semantic validation of a decoded or hand-built descriptor (the spec's MUSTs; docs/format.md,
Validation policy).

Strict by default; ``permissive`` relaxes only what the spec lets a permissive reader skip.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

from hurray_gpu.format.descriptor.buffers import check_colocation
from hurray_gpu.format.descriptor.layouts import (
    COO,
    CSC,
    CSF,
    CSR,
    SPARSE_TAGS,
    BlockPaged,
    Composite,
    Extension,
    Hilbert,
    Morton,
    RowMajor,
    Strided,
    Tiled,
    UnknownLayout,
)
from hurray_gpu.format.descriptor.reader import U64_MAX, fail
from hurray_gpu.format.descriptor.sections import NNZ_VALID
from hurray_gpu.format.descriptor.validate_quant import (
    check_buffer_sizes,
    check_buffer_table,
    check_quantization,
)

if TYPE_CHECKING:
    from hurray_gpu.format.descriptor.model import TensorDescriptor

MAX_RANK = 64


class Where:
    """Absolute offsets of the descriptor's parts, for error messages (empty when encoding)."""

    __slots__ = ("marks",)

    def __init__(self, marks: dict[str, int] | None = None) -> None:
        self.marks = marks or {}

    def at(self, part: str, rel: int = 0) -> int | None:
        """Offset of ``part`` plus ``rel``, or None when unknown."""
        base = self.marks.get(part)
        return None if base is None else base + rel


def validate_descriptor(d: TensorDescriptor, *, permissive: bool = False,
                        where: Where | None = None) -> None:
    """Check every spec rule that is not already enforced by the wire decoder.

    Args:
        d: the descriptor.
        permissive: accept what only a permissive reader may accept.
        where: section offsets for messages (None when validating before encoding).

    Raises:
        HurrayFormatError: naming the broken rule.
    """
    hit = _PASSED.get(id(d))
    if hit is not None and hit[0] is d and (permissive or not hit[1]):
        return  # this very object passed before, as strictly: descriptors are immutable
    w = where or Where()
    _check_header(d, w)
    if isinstance(d.layout, UnknownLayout):
        if not permissive:
            fail(f"layout_tag 0x{d.layout.tag:02X} is not recognised", "layout_tag", w.at("h", 15),
                 "use an assigned layout tag; only permissive readers may skip unknown layouts.")
        return
    if d.dtype.unknown and not permissive:
        fail(f"type_tag 0x{d.dtype.tag:02X} is not recognised", "type_tag", w.at("h", 14),
             "use an assigned type tag; only permissive readers may accept unknown ones.")
    _check_layout(d, permissive, w)
    check_buffer_table(d, permissive, w)
    check_colocation(d.buffers, w.at("buffers"))
    if d.quantization is not None:
        check_quantization(d, permissive, w)
    _check_sections(d, w)
    check_buffer_sizes(d, w)
    with _PASSED_LOCK:
        _PASSED[id(d)] = (d, permissive)  # the object is kept, so its id is not reused
        while len(_PASSED) > _PASSED_MAX:
            _PASSED.popitem(last=False)


# Descriptors that passed, by identity: a tensor's descriptor goes through every op it meets
# (plan, launch, result), and re-checking an immutable object can only give the same answer.
_PASSED: OrderedDict[int, tuple[TensorDescriptor, bool]] = OrderedDict()
_PASSED_LOCK = threading.Lock()
_PASSED_MAX = 1024


def _check_header(d: TensorDescriptor, w: Where) -> None:
    if d.version_major != 1:
        fail(f"version_major {d.version_major} is not 1", "version_major", w.at("h", 4),
             "this reader supports Hurray descriptor format 1.x only.")
    if not 0 <= d.version_minor <= 0xFF:
        fail(f"version_minor {d.version_minor} is not a u8", "version_minor", w.at("h", 5),
             "use version_minor 0.")
    if d.trailing and d.version_minor == 0:
        fail("a 1.0 descriptor cannot carry trailing bytes", "descriptor_length", w.at("h", 6),
             "descriptor_length must equal the bytes of the 1.0 sections exactly.")
    if len(d.shape) > MAX_RANK:
        fail(f"rank {len(d.shape)} exceeds {MAX_RANK}", "rank", w.at("h", 16),
             "Hurray tensors have at most 64 dimensions.")
    for k, n in enumerate(d.shape):
        if n is not None and not 0 <= n < U64_MAX:
            fail(f"shape[{k}] = {n} is not a u64 size", "shape", w.at("shape", 8 * k),
                 "use sizes 0..2^64-2, or None for a dynamic dimension.")
    if not 0 <= d.byte_offset <= U64_MAX:
        fail(f"byte_offset {d.byte_offset} is not a u64", "byte_offset", w.at("byte_offset"),
             "use an offset that fits in u64.")
    if d.flags & ~0x1F:
        fail(f"flags 0x{d.flags:08X} set reserved bits 5-31", "flags", w.at("h", 10),
             "clear every descriptor flag bit above HAS_COMPOSITE_MEMBER (0x10).")
    private = 0xF0 <= d.dtype.tag <= 0xFE
    if private != (d.extension_type is not None) and not isinstance(d.layout, UnknownLayout):
        fail(f"type_tag 0x{d.dtype.tag:02X} {'needs' if private else 'must not carry'} an "
             "extension type section", "flags", w.at("h", 10),
             "set HAS_EXTENSION_TYPE exactly when type_tag is private (0xF0-0xFE).")


def _need_rank(d: TensorDescriptor, ok: bool, what: str, w: Where) -> None:
    if not ok:
        fail(f"layout 0x{d.layout.TAG:02X} requires {what}, but rank is {d.rank}", "rank",
             w.at("h", 16), f"use a layout that allows rank {d.rank} (scalars: row-major only).")


def _check_lengths(name: str, values: tuple[int, ...], rank: int, w: Where) -> None:
    if len(values) != rank:
        fail(f"{name} has {len(values)} entries for rank {rank}", name, w.at("layout"),
             f"write exactly one {name} entry per dimension.")


def _check_layout(d: TensorDescriptor, permissive: bool, w: Where) -> None:
    lay, rank = d.layout, d.rank
    if rank == 0 and not isinstance(lay, (RowMajor, Composite)):
        _need_rank(d, False, "rank >= 1 (scalars must be row-major)", w)
    if d.byte_offset and (lay.TAG in SPARSE_TAGS or lay.TAG in (0x0A, 0x0B)):
        fail(f"byte_offset is {d.byte_offset} on a sparse/indirect/composite layout",
             "byte_offset", w.at("byte_offset"), "write byte_offset = 0 for this layout.")
    if isinstance(lay, Strided):
        _check_lengths("strides", lay.strides, rank, w)
    elif isinstance(lay, Tiled):
        _check_tiled(lay, rank, w)
    elif isinstance(lay, Morton):
        _check_morton(d, lay, w)
    elif isinstance(lay, Hilbert):
        _check_hilbert(d, lay, w)
    elif isinstance(lay, (COO, CSR, CSC, CSF)):
        _check_sparse(d, lay, permissive, w)
    elif isinstance(lay, BlockPaged):
        _need_rank(d, rank == 3, "rank 3 [tokens, heads, head_dim]", w)
        if lay.paged_axis != 0 and not permissive:
            fail(f"paged_axis is {lay.paged_axis}, must be 0", "paged_axis", w.at("layout", 12),
                 "block-paged tensors page along axis 0.")
        _check_u(lay.page_size >= 1 and 0 <= lay.kv_role <= 2
                 and lay.block_table_index_type in (0, 1), "page_size", w)
    elif isinstance(lay, Composite):
        _check_composite(d, lay, permissive, w)
    elif isinstance(lay, Extension):
        _check_u(0xF0 <= lay.tag <= 0xFE and 0 <= lay.layout_id <= U64_MAX, "layout_tag", w)


def _check_u(ok: bool, field: str, w: Where) -> None:
    if not ok:
        fail(f"layout field {field} is out of range", field, w.at("layout"),
             "use values within the field's wire range (Hurray spec, Metadata: "
             "Layout-Specific Fields).")


def _check_tiled(t: Tiled, rank: int, w: Where) -> None:
    if rank == 0:
        fail("tiled layout on a scalar", "rank", w.at("h", 16), "scalars must be row-major.")
    if t.depth() > 8:
        fail("tiled layout nests deeper than 8 blocks", "inner_layout", w.at("layout"),
             "flatten the tiling to at most 8 tiled blocks.")
    node: Tiled | None = t
    while node is not None:
        _check_lengths("tile_shape", node.tile_shape, rank, w)
        _check_u(all(k > 0 for k in node.tile_shape), "tile_shape", w)
        _check_u(node.outer_layout in (1, 2, 3) and node.inner_layout in (1, 2, 3, 4),
                 "outer_layout", w)
        _check_lengths("outer_strides", node.outer_strides, rank if node.outer_layout == 3
                       else 0, w)
        _check_lengths("inner_strides", node.inner_strides, rank if node.inner_layout == 3
                       else 0, w)
        _check_u((node.inner_layout == 4) == (node.inner is not None), "inner_layout", w)
        node = node.inner


def _check_morton(d: TensorDescriptor, m: Morton, w: Where) -> None:
    _check_lengths("morton_bits", m.bits, d.rank, w)
    _check_u(all(0 < b <= 0xFFFFFFFF for b in m.bits), "morton_bits", w)
    for k, (n, b) in enumerate(zip(d.shape, m.bits, strict=True)):
        if n is not None and b < 64 and n > 1 << b:
            fail(f"shape[{k}] = {n} exceeds 2**morton_bits[{k}] = {1 << b}", "morton_bits",
                 w.at("layout", 4 * k), "raise morton_bits[k] to ceil(log2(shape[k])).")


def _check_hilbert(d: TensorDescriptor, h: Hilbert, w: Where) -> None:
    _need_rank(d, d.rank >= 2 and h.hilbert_rank == d.rank, "hilbert_rank == rank >= 2", w)
    _check_u(0 < h.order <= 0xFFFFFFFF, "hilbert_order", w)
    side = 1 << h.order if h.order < 64 else None
    for k, n in enumerate(d.shape):
        if n is not None and n != side:
            fail(f"shape[{k}] = {n} is not 2**hilbert_order", "hilbert_order", w.at("layout"),
                 "Hilbert layouts need every dimension equal to 2**order.")


def _check_sparse(d: TensorDescriptor, lay: COO | CSR | CSC | CSF, permissive: bool,
                  w: Where) -> None:
    _check_u(0 <= lay.nnz <= U64_MAX, "nnz", w)
    if isinstance(lay, COO):
        _need_rank(d, d.rank >= 1, "rank >= 1", w)
        _check_u(lay.is_sorted in (0, 1), "is_sorted", w)
    elif isinstance(lay, (CSR, CSC)):
        _need_rank(d, d.rank == 2, "rank 2", w)
    else:
        _need_rank(d, d.rank >= 3, "rank >= 3", w)
        _check_lengths("mode_order", lay.mode_order, d.rank, w)
        if not permissive and sorted(lay.mode_order) != list(range(d.rank)):
            fail(f"CSF mode_order {list(lay.mode_order)} is not a permutation of 0..{d.rank - 1}",
                 "mode_order", w.at("layout", 8), "list every dimension exactly once.")
    s = d.statistics
    if s is not None and s.computed_mask & NNZ_VALID and s.nnz != lay.nnz:
        fail(f"statistics nnz {s.nnz} differs from the layout's nnz {lay.nnz}", "nnz",
             w.at("statistics", 8), "copy the layout's (authoritative) nnz into statistics.")


def _check_composite(d: TensorDescriptor, c: Composite, permissive: bool, w: Where) -> None:
    rule, op = c.composition_rule, c.combine_op
    private = 0xF0 <= rule <= 0xFE
    if rule not in (1, 2, 3) and not (private and permissive):
        fail(f"composition_rule 0x{rule:02X} is invalid, reserved or private", "composition_rule",
             w.at("layout"), "use 1 (partition), 2 (overlay) or 3 (group).")
    if (rule == 2 and op not in (1, 2)) or (rule in (1, 3) and op != 0) or not 0 <= op <= 255:
        fail(f"combine_op {op} is invalid for composition_rule {rule}", "combine_op",
             w.at("layout", 1), "overlay uses 1 (replace) or 2 (add); other rules use 0.")
    if c.member_count == 0xFFFFFFFF or not 0 <= c.member_count <= 0xFFFFFFFF:
        fail("member_count 0xFFFFFFFF (open composite) is reserved", "member_count",
             w.at("layout", 4), "write the definite number of members.")
    if rule == 2 and c.member_count == 0:
        fail("overlay composite with member_count 0", "member_count", w.at("layout", 4),
             "an overlay needs at least its base member.")
    if d.buffers or d.quantization is not None or d.composite_member is not None:
        fail("composite head carries buffers, quantization or a composite member section",
             "buffer_count" if d.buffers else "flags", w.at("buffer_count"),
             "a head has buffer_count 0 and no HAS_QUANTIZATION / HAS_COMPOSITE_MEMBER.")


def _check_sections(d: TensorDescriptor, w: Where) -> None:
    sh = d.shard
    if sh is not None:
        _check_shard(d, w)
    if d.statistics is not None:
        d.statistics.check(w.at("statistics"))
    if d.extension_type is not None:
        d.extension_type.check(w.at("extension_type"))
    if d.composite_member is not None:
        d.composite_member.check(w.at("composite_member"))


def _check_shard(d: TensorDescriptor, w: Where) -> None:
    sh = d.shard
    assert sh is not None
    if isinstance(d.layout, (BlockPaged, CSF)):
        fail("shard section on a block-paged or CSF tensor", "flags", w.at("h", 10),
             "block-paged and CSF tensors cannot be sharded; drop HAS_SHARD.")
    _check_lengths("parent_shape", sh.parent_shape, d.rank, w)
    _check_lengths("shard_offset", sh.shard_offset, d.rank, w)
    for k in range(d.rank):
        n, p, o = d.shape[k], sh.parent_shape[k], sh.shard_offset[k]
        if n is None or p == U64_MAX or o == U64_MAX:
            fail(f"shard uses a dynamic dimension at axis {k}", "parent_shape",
                 w.at("shard", 8 * k), "shards must have fully static shapes.")
        if not (0 <= p <= U64_MAX and 0 <= o <= U64_MAX) or o + n > p:
            fail(f"shard_offset[{k}] {o} + shape[{k}] {n} exceeds parent_shape[{k}] {p}",
                 "shard_offset", w.at("shard", 8 * (d.rank + k)),
                 "the shard box must lie inside the parent shape.")
