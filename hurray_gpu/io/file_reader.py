"""Lazy, memory-mapped ``.hrry`` reader (facts §6.1, §12.1-§12.4, §12.15-§12.17).

Opening parses only the header, trailer, KV section and index (with its CRC-32C). A tensor's
descriptor and buffers are touched only when that tensor is read.
"""

from __future__ import annotations

import bisect
import contextlib
import mmap
import os
import struct
from typing import Any

import numpy as np

from ..errors import HurrayFormatError
from ..tensor import Tensor
from . import _codec
from ._memory import aligned_empty
from .composite import validate_members
from .crc32c import crc32c
from .file_format import (
    FLAG_HAS_INDEX_CRC32C,
    HEADER_SIZE,
    MIN_FILE_SIZE,
    TRAILER_SIZE,
    FileHeader,
    IndexEntry,
    Trailer,
    align_up,
    decode_index,
)
from .file_writer import MEMBER_SEPARATOR
from .framing import DEFAULT_MAX_COMPOSITE_DEPTH
from .kv import decode_kv

_FIX = "the file is damaged or not a .hrry file; re-create it with a conforming writer."


class HrryFile:
    """An open ``.hrry`` file; use :func:`open_file`.

    Attributes:
        header: the decoded :class:`FileHeader`.
        trailer: the decoded :class:`Trailer`.
        entries: index entries in stored order.
    """

    def __init__(self, path: str | os.PathLike[str], *, permissive: bool = False,
                 max_composite_depth: int = DEFAULT_MAX_COMPOSITE_DEPTH) -> None:
        self.path = os.fspath(path)
        self.permissive = permissive
        self.max_composite_depth = max_composite_depth
        self._mm: mmap.mmap | None = None
        with open(self.path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size < MIN_FILE_SIZE:
                raise HurrayFormatError(
                    f"file is {size} bytes; the smallest .hrry file is {MIN_FILE_SIZE}",
                    field="file_size", offset=0, fix=_FIX)
            self._mm = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        self.size = size
        try:
            self._parse()
        except BaseException:
            self.close()
            raise

    def _parse(self) -> None:
        mm, size = self._map(), self.size
        self.header = FileHeader.decode(mm[:HEADER_SIZE], size)
        self.trailer = Trailer.decode(mm[size - TRAILER_SIZE :], size, self.header)
        t = self.trailer
        index = mm[t.index_offset : t.index_offset + t.index_length]
        if self.header.file_flags & FLAG_HAS_INDEX_CRC32C:
            actual = crc32c(index)
            if actual != t.index_crc32c:
                raise HurrayFormatError(
                    f"index CRC-32C mismatch: trailer says 0x{t.index_crc32c:08X}, the index "
                    f"bytes give 0x{actual:08X}", field="index_crc32c",
                    offset=size - TRAILER_SIZE + 28, fix=_FIX)
        region_end = t.kv_offset if t.has_kv else t.index_offset
        self.entries = decode_index(index, t.index_offset, region_end, self.header)
        self._region_end = region_end
        self._by_name = {e.name: e for e in self.entries}
        self.metadata: dict[str, Any] = (
            decode_kv(mm[t.kv_offset : t.kv_offset + t.kv_length], t.kv_offset)
            if t.has_kv else {})
        self._order: list[IndexEntry] | None = None

    # -- context management ---------------------------------------------------------------
    def __enter__(self) -> HrryFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the mapping. Zero-copy tensors keep it alive until they are freed."""
        if self._mm is not None:
            # Exported views (copy=False tensors) may still use it; then GC frees it later.
            with contextlib.suppress(BufferError):
                self._mm.close()
            self._mm = None

    def _map(self) -> mmap.mmap:
        if self._mm is None:
            raise HurrayFormatError("the file is closed", fix="read inside the `with` block.")
        return self._mm

    # -- queries -----------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        """Every tensor name in index order (composite members included)."""
        return [e.name for e in self.entries]

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __len__(self) -> int:
        return len(self.entries)

    def top_level_names(self) -> list[str]:
        """Names of the tensors that are not members of a composite, in file order.

        Reads every descriptor (but no buffer data).
        """
        order, members = self._ordered(), set[str]()
        pos = 0
        while pos < len(order):
            end = self._skip(pos, 0)
            members.update(e.name for e in order[pos + 1 : end])
            pos = end
        return [e.name for e in self.entries if e.name not in members]

    def entry(self, name: str) -> IndexEntry:
        """The index entry of ``name``.

        Raises:
            KeyError: no tensor has that name.
        """
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no tensor named {name!r} in {self.path}") from None

    def read(self, name: str, *, copy: bool = False) -> Tensor:
        """Read one tensor (a composite head comes with its members).

        Args:
            name: the tensor's index name.
            copy: copy buffers into fresh aligned memory. When False (default) the buffers are
                read-only zero-copy views of the mapping.

        Returns:
            The Tensor.

        Raises:
            KeyError: unknown name.
            HurrayFormatError: a malformed descriptor or buffer range, or a torn composite.
        """
        entry = self.entry(name)
        order = self._ordered()
        pos = bisect.bisect_left(self._offsets, entry.descriptor_offset)
        while order[pos] is not entry:
            pos += 1
        tensor, _ = self._read_at(pos, 0, copy)
        return tensor

    def descriptor(self, name: str) -> Any:
        """Decode only the descriptor of ``name`` (no buffer is touched)."""
        return self._descriptor(self.entry(name))[0]

    # -- internals -----------------------------------------------------------------------
    def _ordered(self) -> list[IndexEntry]:
        if self._order is None:
            self._order = sorted(self.entries, key=lambda e: e.descriptor_offset)
            self._offsets = [e.descriptor_offset for e in self._order]
        return self._order

    def _descriptor(self, entry: IndexEntry) -> tuple[Any, bytes]:
        mm = self._map()
        start = entry.descriptor_offset
        raw = mm[start : start + entry.descriptor_length]
        (own,) = struct.unpack_from("<I", raw, 6)
        if own != entry.descriptor_length:
            raise HurrayFormatError(
                f"tensor {entry.name!r}: index descriptor_length {entry.descriptor_length} != "
                f"the descriptor's own descriptor_length {own}", field="descriptor_length",
                offset=start + 6, fix=_FIX)
        desc = _codec.decode(raw, offset=start, permissive=self.permissive)
        return desc, raw

    def _read_at(self, pos: int, depth: int, copy: bool) -> tuple[Tensor, int]:
        order = self._ordered()
        entry = order[pos]
        desc, raw = self._descriptor(entry)
        if not _codec.is_head(desc):
            return Tensor._trusted(desc, self._buffers(entry, desc, copy), raw=raw), pos + 1
        self._check_depth(depth, entry)
        count = _codec.member_count(desc)
        members, offsets, nxt = [], [], pos + 1
        for i in range(count):
            if nxt >= len(order):
                raise HurrayFormatError(
                    f"torn composite {entry.name!r}: the file holds {i} of its {count} members",
                    field="member_count", offset=entry.descriptor_offset, fix=_FIX)
            offsets.append(order[nxt].descriptor_offset)
            member, nxt = self._read_at(nxt, depth + 1, copy)
            members.append(member)
        validate_members(desc, [m.descriptor for m in members], offsets)
        return Tensor._trusted(desc, [], members=members, raw=raw), nxt

    def _skip(self, pos: int, depth: int) -> int:
        """Position just past the tensor at ``pos`` and its members (descriptors only)."""
        order = self._ordered()
        desc, _ = self._descriptor(order[pos])
        if not _codec.is_head(desc):
            return pos + 1
        self._check_depth(depth, order[pos])
        nxt = pos + 1
        for _ in range(_codec.member_count(desc)):
            if nxt >= len(order):
                raise HurrayFormatError(
                    f"torn composite {order[pos].name!r}: members missing at end of file",
                    field="member_count", offset=order[pos].descriptor_offset, fix=_FIX)
            nxt = self._skip(nxt, depth + 1)
        return nxt

    def _check_depth(self, depth: int, entry: IndexEntry) -> None:
        if depth + 1 > self.max_composite_depth:
            raise HurrayFormatError(
                f"composite {entry.name!r} is nested {depth + 1} levels deep; the limit is "
                f"{self.max_composite_depth}", field="layout_tag",
                offset=entry.descriptor_offset + 15, fix="flatten the composite.")

    def _buffers(self, entry: IndexEntry, desc: Any, copy: bool) -> list[Any]:
        mm, align = self._map(), self.header.alignment
        handles = _codec.handles(desc)
        if _codec.is_unknown_layout(desc):
            raise HurrayFormatError(
                f"tensor {entry.name!r} has an unknown layout tag; its data cannot be read",
                field="layout_tag", offset=entry.descriptor_offset + 15,
                fix="use descriptor() to inspect it, or a hurray_gpu that knows the layout.")
        if handles and (entry.data_offset < entry.descriptor_offset + entry.descriptor_length
                        or entry.data_offset % align):
            raise HurrayFormatError(
                f"tensor {entry.name!r}: data_offset {entry.data_offset} must be a multiple of "
                f"the alignment {align} after its descriptor", field="data_offset",
                offset=entry.data_offset, fix=_FIX)
        spans, pos = [], entry.data_offset
        for i, handle in enumerate(handles):
            if i:
                pos = align_up(pos, align)
            if handle.byte_size > self._region_end - pos:
                raise HurrayFormatError(
                    f"tensor {entry.name!r}: buffers[{i}] ({handle.byte_size} bytes at {pos}) "
                    f"runs past the tensor region end {self._region_end}",
                    field=f"buffers[{i}].byte_size", offset=pos, fix=_FIX)
            spans.append((pos, handle.byte_size))
            pos += handle.byte_size
        if handles and pos != entry.data_offset + entry.data_length:
            raise HurrayFormatError(
                f"tensor {entry.name!r}: buffers end at {pos} but data_offset + data_length is "
                f"{entry.data_offset + entry.data_length}", field="data_length",
                offset=entry.data_offset, fix=_FIX)
        out = []
        for (start, n), handle in zip(spans, handles, strict=True):
            view = np.frombuffer(mm, dtype=np.uint8, count=n, offset=start)
            if copy:
                fresh = aligned_empty(n, min(max(handle.alignment, 64), 1 << 21))
                fresh[...] = view
                view = fresh
            out.append(view)
        return out


def open_file(path: str | os.PathLike[str], *, permissive: bool = False,
              max_composite_depth: int = DEFAULT_MAX_COMPOSITE_DEPTH) -> HrryFile:
    """Open a ``.hrry`` file lazily (memory-mapped); use as a context manager.

    Args:
        path: the file.
        permissive: pass-through to the descriptor decoder's permissive mode.
        max_composite_depth: deepest composite nesting accepted (default 8).

    Returns:
        An :class:`HrryFile` with ``.names``, ``.metadata`` and ``.read(name)``.

    Raises:
        HurrayFormatError: a malformed header, trailer, index, CRC or KV section.
        OSError: the file cannot be opened.
    """
    return HrryFile(path, permissive=permissive, max_composite_depth=max_composite_depth)


def load(path: str | os.PathLike[str], names: list[str] | None = None) -> dict[str, Tensor]:
    """Read tensors from a ``.hrry`` file into memory (buffers are copied).

    Args:
        path: the file.
        names: names to read (any index name, members included); None reads every tensor
            that is not a composite member (heads come with their members attached).

    Returns:
        name -> Tensor, in file (index) order or in the order of ``names``.

    Raises:
        KeyError: a requested name is missing.
        HurrayFormatError: malformed input.
    """
    with open_file(path) as f:
        wanted = f.top_level_names() if names is None else list(names)
        return {name: f.read(name, copy=True) for name in wanted}


__all__ = ["HrryFile", "MEMBER_SEPARATOR", "load", "open_file"]
