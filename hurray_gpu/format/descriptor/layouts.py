"""Typed layout objects and their wire encodings (Hurray spec, Memory Layout and
Metadata: Layout-Specific Fields).

Each layout class carries its tag; ``decode_layout`` reads the layout-specific block.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .reader import U32_MAX, Reader, Writer, fail

MAX_TILED_DEPTH = 8
_TILE_TAGS = {0x01: "row-major", 0x02: "col-major", 0x03: "strided"}


@dataclass(frozen=True, slots=True)
class RowMajor:
    """Row-major (0x01): implicit strides, dimension rank-1 fastest."""

    TAG: ClassVar[int] = 0x01


@dataclass(frozen=True, slots=True)
class ColMajor:
    """Column-major (0x02): implicit strides, dimension 0 fastest."""

    TAG: ClassVar[int] = 0x02


@dataclass(frozen=True, slots=True)
class Strided:
    """Strided (0x03): ``strides`` in logical elements (i64, may be negative or zero)."""

    strides: tuple[int, ...]
    TAG: ClassVar[int] = 0x03


@dataclass(frozen=True, slots=True)
class Tiled:
    """Tiled (0x04).

    Attributes:
        tile_shape: tile extent per dimension (each > 0).
        outer_layout: 0x01, 0x02 or 0x03 (layout of the tile grid).
        inner_layout: 0x01, 0x02, 0x03 or 0x04 (layout inside a tile; 0x04 = nested).
        outer_strides: strides in tiles, present iff outer_layout == 0x03.
        inner_strides: strides in elements, present iff inner_layout == 0x03.
        inner: the nested tiled block, present iff inner_layout == 0x04.
    """

    tile_shape: tuple[int, ...]
    outer_layout: int = 0x01
    inner_layout: int = 0x01
    outer_strides: tuple[int, ...] = ()
    inner_strides: tuple[int, ...] = ()
    inner: Tiled | None = None
    TAG: ClassVar[int] = 0x04

    def depth(self) -> int:
        """Number of tiled blocks in the chain (1 for an un-nested block)."""
        n, node = 1, self.inner
        while node is not None and n <= MAX_TILED_DEPTH:
            n, node = n + 1, node.inner
        return n


@dataclass(frozen=True, slots=True)
class Morton:
    """Morton / Z-order (0x05): ``bits`` per dimension (u32, each > 0)."""

    bits: tuple[int, ...]
    TAG: ClassVar[int] = 0x05


@dataclass(frozen=True, slots=True)
class COO:
    """COO (0x06): ``nnz`` entries; ``is_sorted`` is 1 (lexicographic) or 0."""

    nnz: int
    is_sorted: int = 0
    TAG: ClassVar[int] = 0x06


@dataclass(frozen=True, slots=True)
class CSR:
    """CSR (0x07), rank 2."""

    nnz: int
    TAG: ClassVar[int] = 0x07


@dataclass(frozen=True, slots=True)
class CSC:
    """CSC (0x08), rank 2."""

    nnz: int
    TAG: ClassVar[int] = 0x08


@dataclass(frozen=True, slots=True)
class CSF:
    """CSF (0x09), rank >= 3; level L stores logical dimension ``mode_order[L]``."""

    nnz: int
    mode_order: tuple[int, ...]
    TAG: ClassVar[int] = 0x09


@dataclass(frozen=True, slots=True)
class BlockPaged:
    """Block-paged KV cache (0x0A), rank 3 ``[total_tokens, num_heads, head_dim]``.

    Attributes:
        page_size: tokens per page (>= 1).
        num_pages: physical pages in the page pool.
        paged_axis: must be 0.
        num_seqs: sequences (seq_ptr holds num_seqs + 1 entries).
        kv_role: 0 key, 1 value, 2 fused/generic.
        layer_index: layer, or 0xFFFFFFFF when not layer-scoped.
        block_table_index_type: 0 = u32 block_table/seq_ptr, 1 = u64.
    """

    page_size: int
    num_pages: int
    paged_axis: int = 0
    num_seqs: int = 1
    kv_role: int = 2
    layer_index: int = U32_MAX
    block_table_index_type: int = 0
    TAG: ClassVar[int] = 0x0A


@dataclass(frozen=True, slots=True)
class Composite:
    """Composite head (0x0B): virtual, no buffers.

    Attributes:
        composition_rule: 1 partition, 2 overlay, 3 group (0xF0-0xFE private).
        combine_op: overlay: 1 replace, 2 add; 0 otherwise.
        member_count: number of members that follow (0xFFFFFFFF is reserved).
    """

    composition_rule: int
    combine_op: int
    member_count: int
    TAG: ClassVar[int] = 0x0B


@dataclass(frozen=True, slots=True)
class Hilbert:
    """Hilbert curve (0x40): every dimension is ``2**order``; ``hilbert_rank`` == rank >= 2."""

    order: int
    hilbert_rank: int
    TAG: ClassVar[int] = 0x40


@dataclass(frozen=True, slots=True)
class Extension:
    """Private extension layout (0xF0-0xFE); decoded but never interpreted."""

    tag: int
    layout_id: int
    data: bytes = b""

    @property
    def TAG(self) -> int:  # noqa: N802 - mirrors the ClassVar of the public layouts
        """The layout tag (per instance for private layouts)."""
        return self.tag


@dataclass(frozen=True, slots=True)
class UnknownLayout:
    """An unrecognised layout tag accepted by a permissive reader.

    docs/format.md, Descriptor decoding.

    Nothing after the layout block can be located, so ``payload`` keeps every byte after
    byte_offset and ``flags`` keeps the header flags; the tensor data must not be interpreted.
    """

    tag: int
    flags: int
    payload: bytes = b""

    @property
    def TAG(self) -> int:  # noqa: N802
        """The layout tag."""
        return self.tag


Layout = (RowMajor | ColMajor | Strided | Tiled | Morton | COO | CSR | CSC | CSF | BlockPaged
          | Composite | Hilbert | Extension | UnknownLayout)
DENSE_TAGS = frozenset({0x01, 0x02, 0x03, 0x04, 0x05, 0x40})
SPARSE_TAGS = frozenset({0x06, 0x07, 0x08, 0x09})


def own_buffer_count(layout: Layout, rank: int) -> int | None:
    """The layout's own buffer count L; None when unknowable (private).

    docs/format.md, Parameter buffers.
    """
    tag = layout.TAG
    if tag in DENSE_TAGS:
        return 1
    return {0x06: 2, 0x07: 3, 0x08: 3, 0x09: 2 * rank + 1, 0x0A: 3, 0x0B: 0}.get(tag)


def layout_tag_problem(tag: int) -> str | None:
    """Why ``tag`` is not a decodable public/private layout tag, or None if it is."""
    if tag in (0x00, 0xFF):
        return "is invalid (InvalidLayoutTag)"
    if 0x01 <= tag <= 0x0B or tag == 0x40 or 0xF0 <= tag <= 0xFE:
        return None
    return "is reserved (ReservedLayoutTag); only a permissive reader may accept it"


def decode_layout(r: Reader, tag: int, rank: int) -> Layout:
    """Read the layout-specific block for ``tag`` (a decodable tag) at the reader's cursor.

    Raises:
        HurrayFormatError: on truncation, reserved bytes or invalid layout fields.
    """
    if tag == 0x01:
        return _ROW
    if tag == 0x02:
        return _COL
    if tag == 0x03:
        return Strided(r.array("q", rank, 8, "strides"))
    if tag == 0x04:
        return _decode_tiled(r, rank, 0)
    if tag == 0x05:
        return _decode_morton(r, rank)
    if tag in (0x06, 0x07, 0x08):
        return _decode_sparse2(r, tag)
    if tag == 0x09:
        nnz = r.u64("nnz")
        order = r.array("I", rank, 4, "mode_order")
        r.zeros(8, "csf._reserved")
        return CSF(nnz, order)
    if tag == 0x0A:
        return _decode_block_paged(r)
    if tag == 0x0B:
        return _decode_composite(r)
    if tag == 0x40:
        return _decode_hilbert(r, rank)
    layout_id = r.u64("extension_layout_id")
    n = r.u32("extension_data_length")
    return Extension(tag, layout_id, r.raw(n, "extension_data"))


_ROW = RowMajor()
_COL = ColMajor()


def _decode_tiled(r: Reader, rank: int, depth: int) -> Tiled:
    if depth >= MAX_TILED_DEPTH:
        fail(f"tiled layout nests deeper than {MAX_TILED_DEPTH} blocks", "inner_layout",
             r.pos, "flatten the tiling to at most 8 tiled blocks (top level + 7 nested).")
    start = r.pos
    tile = r.array("Q", rank, 8, "tile_shape")
    for k, t in enumerate(tile):
        if t == 0:
            fail(f"tile_shape[{k}] is 0", "tile_shape", start + 8 * k,
                 "every tile extent must be at least 1.")
    pos = r.pos
    outer, inner = r.u8("outer_layout"), r.u8("inner_layout")
    r.zeros(2, "tiled._reserved")
    if outer not in _TILE_TAGS:
        fail(f"tiled outer_layout 0x{outer:02X} is not 0x01, 0x02 or 0x03", "outer_layout",
             pos, "use row-major, column-major or strided for the tile grid.")
    if inner not in _TILE_TAGS and inner != 0x04:
        fail(f"tiled inner_layout 0x{inner:02X} is not 0x01-0x04", "inner_layout", pos + 1,
             "use row-major, column-major, strided or nested tiled inside a tile.")
    outer_s = r.array("q", rank, 8, "outer_strides") if outer == 0x03 else ()
    inner_s = r.array("q", rank, 8, "inner_strides") if inner == 0x03 else ()
    nested = _decode_tiled(r, rank, depth + 1) if inner == 0x04 else None
    return Tiled(tile, outer, inner, outer_s, inner_s, nested)


def _decode_morton(r: Reader, rank: int) -> Morton:
    start = r.pos
    bits = r.array("I", rank, 4, "morton_bits")
    for k, b in enumerate(bits):
        if b == 0:
            fail(f"morton_bits[{k}] is 0", "morton_bits", start + 4 * k,
                 "use morton_bits[k] >= 1 with shape[k] <= 2**morton_bits[k].")
    return Morton(bits)


def _decode_sparse2(r: Reader, tag: int) -> COO | CSR | CSC:
    nnz = r.u64("nnz")
    if tag != 0x06:
        r.zeros(8, "sparse._reserved")
        return CSR(nnz) if tag == 0x07 else CSC(nnz)
    pos = r.pos
    is_sorted = r.u8("is_sorted")
    if is_sorted > 1:
        fail(f"COO is_sorted is {is_sorted}, must be 0 or 1", "is_sorted", pos,
             "write 1 for lexicographically sorted entries, 0 otherwise.")
    r.zeros(7, "coo._reserved")
    return COO(nnz, is_sorted)


def _decode_block_paged(r: Reader) -> BlockPaged:
    base = r.pos
    page_size, num_pages = r.u32("page_size"), r.u64("num_pages")
    paged_axis, num_seqs = r.u32("paged_axis"), r.u32("num_seqs")
    kv_role, layer = r.u8("kv_role"), r.u32("layer_index")
    index_type = r.u8("block_table_index_type")
    r.zeros(6, "block_paged._reserved")
    if page_size == 0:
        fail("block-paged page_size is 0", "page_size", base, "use page_size >= 1.")
    if kv_role > 2:
        fail(f"block-paged kv_role {kv_role} is not 0, 1 or 2", "kv_role", base + 20,
             "use 0 (key), 1 (value) or 2 (fused/generic).")
    if index_type > 1:
        fail(f"block_table_index_type {index_type} is not 0 (u32) or 1 (u64)",
             "block_table_index_type", base + 25, "use 0 for u32 or 1 for u64 page ids.")
    return BlockPaged(page_size, num_pages, paged_axis, num_seqs, kv_role, layer, index_type)


def _decode_composite(r: Reader) -> Composite:
    rule, op = r.u8("composition_rule"), r.u8("combine_op")
    r.zeros(2, "composite._reserved")
    return Composite(rule, op, r.u32("member_count"))


def _decode_hilbert(r: Reader, rank: int) -> Hilbert:
    base = r.pos
    order, h_rank = r.u32("hilbert_order"), r.u32("hilbert_rank")
    if order == 0:
        fail("hilbert_order is 0", "hilbert_order", base, "use hilbert_order >= 1.")
    if h_rank != rank or rank < 2:
        fail(f"hilbert_rank {h_rank} must equal the tensor rank {rank} and be >= 2",
             "hilbert_rank", base + 4, "write hilbert_rank = rank (>= 2).")
    return Hilbert(order, h_rank)


def encode_layout(w: Writer, layout: Layout) -> None:
    """Append the layout-specific block of ``layout`` (nothing for row/col-major)."""
    tag = layout.TAG
    if tag in (0x01, 0x02):
        return
    if isinstance(layout, Strided):
        w.array("q", layout.strides)
    elif isinstance(layout, Tiled):
        _encode_tiled(w, layout)
    elif isinstance(layout, Morton):
        w.array("I", layout.bits)
    elif isinstance(layout, COO):
        w.u64(layout.nnz)
        w.u8(layout.is_sorted)
        w.zeros(7)
    elif isinstance(layout, (CSR, CSC)):
        w.u64(layout.nnz)
        w.zeros(8)
    elif isinstance(layout, CSF):
        w.u64(layout.nnz)
        w.array("I", layout.mode_order)
        w.zeros(8)
    else:
        _encode_other(w, layout)


def _encode_tiled(w: Writer, t: Tiled) -> None:
    node: Tiled | None = t
    while node is not None:
        w.array("Q", node.tile_shape)
        w.u8(node.outer_layout)
        w.u8(node.inner_layout)
        w.zeros(2)
        w.array("q", node.outer_strides)
        w.array("q", node.inner_strides)
        node = node.inner


def _encode_other(w: Writer, layout: Layout) -> None:
    if isinstance(layout, BlockPaged):
        w.u32(layout.page_size)
        w.u64(layout.num_pages)
        w.u32(layout.paged_axis)
        w.u32(layout.num_seqs)
        w.u8(layout.kv_role)
        w.u32(layout.layer_index)
        w.u8(layout.block_table_index_type)
        w.zeros(6)
    elif isinstance(layout, Composite):
        w.u8(layout.composition_rule)
        w.u8(layout.combine_op)
        w.zeros(2)
        w.u32(layout.member_count)
    elif isinstance(layout, Hilbert):
        w.u32(layout.order)
        w.u32(layout.hilbert_rank)
    elif isinstance(layout, Extension):
        w.u64(layout.layout_id)
        w.u32(len(layout.data))
        w.raw(layout.data)
    elif isinstance(layout, UnknownLayout):
        w.raw(layout.payload)
