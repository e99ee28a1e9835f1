"""Lazy, memory-mapped ``.hrry`` reader (docs/format.md, .hrry files).

Opening parses only the header, trailer, KV section and index (with its CRC-32C). A tensor's
descriptor and buffers are touched only when that tensor is read.

Another process may rewrite or truncate the file in place while it is open (hurray_gpu.save
replaces files atomically, other writers may not). Touching a mapped page past the new end of
the file kills the process with SIGBUS, so everything but zero-copy views is read with
``pread`` (a short read is an error, never a signal), and every access first checks that the
file's size, inode and modification time are those seen at open (docs/reliability.md).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import struct
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

import numpy as np

from hurray_gpu.errors import (
    ArgumentTypeError,
    HurrayFormatError,
    TensorNotFoundError,
    open_for_reading,
)
from hurray_gpu.format import codec as _codec
from hurray_gpu.format.composite import validate_members
from hurray_gpu.io.crc32c import crc32c
from hurray_gpu.io.file_format import (
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
from hurray_gpu.io.file_writer import MEMBER_SEPARATOR
from hurray_gpu.io.framing import DEFAULT_MAX_COMPOSITE_DEPTH
from hurray_gpu.io.kv import decode_kv
from hurray_gpu.parts import Placement, TensorLike, make_tensor, place_tensor, placement
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.hostmem import aligned_empty, host_alignment

_FIX = "the file is damaged or not a .hrry file; re-create it with a conforming writer."


_T = TypeVar("_T")  # the tensor class (hg.HrryFile is HrryFile[Tensor] to type checkers)


class HrryFile(Mapping[str, _T]):
    """An open ``.hrry`` file; use :func:`open_file`.

    A read-only mapping from index names to tensors, like safetensors' ``safe_open``:
    ``f.keys()``, ``f["name"]`` (:meth:`read` with its defaults: zero-copy views of the
    mapping), ``"name" in f``, ``len(f)``, iteration, ``.items()``, ``.values()`` and
    ``.get()``. The keys are every index name, composite members (``head/0``) included; a
    missing name raises :class:`~hurray_gpu.errors.TensorNotFoundError`, a KeyError. Two
    file objects compare equal only when they are the same object (comparing contents would
    read every tensor).

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
        self._handle = open_for_reading(self.path,
                                        "check the path; hg.save(path, tensors) writes one.")
        self._fd = self._handle.fileno()
        try:
            info = os.fstat(self._fd)
            self._identity = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
            self.size = size = info.st_size
            if size < MIN_FILE_SIZE:
                raise HurrayFormatError(
                    f"file is {size} bytes; the smallest .hrry file is {MIN_FILE_SIZE}",
                    field="file_size", offset=0, fix=_FIX)
            self._mm = mmap.mmap(self._fd, 0, access=mmap.ACCESS_READ)
            self._parse()
        except BaseException:
            self.close()
            raise

    def _parse(self) -> None:
        size = self.size
        self.header = FileHeader.decode(self._read(0, HEADER_SIZE), size)
        self.trailer = Trailer.decode(self._read(size - TRAILER_SIZE, TRAILER_SIZE), size,
                                      self.header)
        t = self.trailer
        index = self._read(t.index_offset, t.index_length)
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
            decode_kv(self._read(t.kv_offset, t.kv_length), t.kv_offset)
            if t.has_kv else {})
        self._order: list[IndexEntry] | None = None

    # -- context management ---------------------------------------------------------------
    def __enter__(self) -> HrryFile[_T]:
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
        self._handle.close()

    def fileno(self) -> int:
        """The file's descriptor (closed by :meth:`close`)."""
        return self._fd

    def file_offset(self, view: np.ndarray) -> int | None:
        """Where ``view`` (a buffer of a tensor read from this file without a copy) begins in
        the file; None when it is not a view of this file's mapping (or the file is closed)."""
        if self._mm is None:
            return None
        at = view.ctypes.data - np.frombuffer(self._mm, np.uint8).ctypes.data
        return at if at >= 0 and at + view.nbytes <= self.size else None

    def _map(self) -> mmap.mmap:
        if self._mm is None:
            raise HurrayFormatError("the file is closed", fix="read inside the `with` block.")
        info = os.fstat(self._fd)
        if (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns) != self._identity:
            raise HurrayFormatError(
                f"{self.path} changed on disk while open (now {info.st_size} bytes, was "
                f"{self.size})", field="file_size", offset=None,
                fix="reopen the file, and replace .hrry files atomically (hurray_gpu.save) "
                    "instead of rewriting them in place.")
        return self._mm

    def _read(self, start: int, n: int, out: Any = None) -> Any:
        """``n`` bytes at ``start`` (into ``out`` when given) by pread, after _map's check."""
        self._map()
        view = memoryview(bytearray(n) if out is None else out).cast("B")
        got = 0
        while got < n:
            step = os.preadv(self._fd, [view[got:]], start + got)
            if not step:
                self._map()  # names the change when the file shrank since the check
                raise HurrayFormatError(f"{self.path} ends at byte {start + got} inside a read "
                                        f"of {n} bytes at {start}", offset=start + got, fix=_FIX)
            got += step
        return bytes(view) if out is None else out

    # -- queries -----------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        """Every tensor name in index order (composite members included)."""
        return [e.name for e in self.entries]

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __getitem__(self, name: str) -> _T:
        return self.read(name)  # type: ignore[no-any-return]

    def __eq__(self, other: object) -> bool:
        return self is other

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        state = "closed" if self._mm is None else f"{len(self)} tensors"
        return f"<HrryFile {self.path!r}: {state}>"

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
            TensorNotFoundError: no tensor has that name (a KeyError; its Fix lists the
                closest names).
        """
        try:
            return self._by_name[name]
        except (KeyError, TypeError):
            if not isinstance(name, str):
                raise ArgumentTypeError(f"tensor names are str, not {type(name).__name__}",
                                        fix="pass the name as a str (f.keys() lists them)."
                                        ) from None
            raise TensorNotFoundError(name, self.path, self.names) from None

    def read(self, name: str, *, copy: bool = False, device: Any = None,
             memory_class: Any = "standard", progress: bool | None = None) -> _T:
        """Read one tensor (a composite head comes with its members).

        Args:
            name: the tensor's index name.
            copy: copy buffers into fresh aligned memory. When False (default) the buffers are
                read-only zero-copy views of the mapping.
            device: stream the buffers straight from the mapping into this device's memory
                (bounded chunks; the file is never materialised on the host). The result
                equals ``read(name).to(device, memory_class=memory_class)``.
            memory_class: the memory class on ``device``.
            progress: progress bar on/off (None: large transfers on a terminal).

        Returns:
            The Tensor.

        Raises:
            TensorNotFoundError: unknown name (a KeyError).
            HurrayFormatError: a malformed descriptor or buffer range, or a torn composite
                (all checked before device memory is allocated for the tensor).
            BackendUnavailableError, UnsupportedOpError, OutOfMemoryError: from the device.
        """
        if device is None:
            return self._read_at(self._position(name), 0, copy, None)[0]
        with self.placement(device, memory_class, progress, [name]) as target:
            return self._read_at(self._position(name), 0, copy, target)[0]

    def placement(self, device: Any, memory_class: Any, progress: bool | None,
                  names: list[str]) -> Placement:
        """A device target for reading ``names`` (room checked; the bar covers their data).

        Use as a context manager: leaving it closes the progress bar.
        """
        total = sum(self._subtree_bytes(self._position(n)) for n in names)
        return placement(device, memory_class, total, f"{os.path.basename(self.path)} ->",
                         progress)

    def _position(self, name: str) -> int:
        self.entry(name)  # KeyError for an unknown name
        self._ordered()
        return self._positions[name]

    def _subtree_bytes(self, pos: int) -> int:
        return sum(e.data_length for e in self._ordered()[pos:self._skip(pos, 0)])

    def descriptor(self, name: str) -> Any:
        """Decode only the descriptor of ``name`` (no buffer is touched)."""
        return self._descriptor(self.entry(name))[0]

    # -- internals -----------------------------------------------------------------------
    def _ordered(self) -> list[IndexEntry]:
        if self._order is None:
            # decode_index rejects overlapping descriptors, so the offsets are distinct.
            self._order = sorted(self.entries, key=lambda e: e.descriptor_offset)
            self._positions = {e.name: i for i, e in enumerate(self._order)}
        return self._order

    def _descriptor(self, entry: IndexEntry) -> tuple[Any, bytes]:
        start = entry.descriptor_offset
        raw = self._read(start, entry.descriptor_length)
        (own,) = struct.unpack_from("<I", raw, 6)
        if own != entry.descriptor_length:
            raise HurrayFormatError(
                f"tensor {entry.name!r}: index descriptor_length {entry.descriptor_length} != "
                f"the descriptor's own descriptor_length {own}", field="descriptor_length",
                offset=start + 6, fix=_FIX)
        desc = _codec.decode(raw, offset=start, permissive=self.permissive)
        return desc, raw

    def _read_at(self, pos: int, depth: int, copy: bool,
                 target: Placement | None) -> tuple[Any, int]:
        order = self._ordered()
        entry = order[pos]
        desc, raw = self._descriptor(entry)
        if not _codec.is_head(desc):
            if target is not None:  # straight from the mapping into device memory
                views = self._buffers(entry, desc, False)
                return place_tensor(desc, views, target), pos + 1
            return make_tensor(desc, self._buffers(entry, desc, copy), raw=raw), pos + 1
        self._check_depth(depth, entry)
        count = _codec.member_count(desc)
        members: list[TensorLike] = []
        offsets, nxt = [], pos + 1
        for i in range(count):
            if nxt >= len(order):
                raise HurrayFormatError(
                    f"torn composite {entry.name!r}: the file holds {i} of its {count} members",
                    field="member_count", offset=entry.descriptor_offset, fix=_FIX)
            offsets.append(order[nxt].descriptor_offset)
            member, nxt = self._read_at(nxt, depth + 1, copy, target)
            members.append(member)
        validate_members(desc, [m.descriptor for m in members], offsets)
        if target is None:
            return make_tensor(desc, [], members=members, raw=raw), nxt
        return make_tensor(desc, [], members=members, raw=raw, device=target.device,
                           memory_class=target.memory_class), nxt

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

    def _buffers(self, entry: IndexEntry, desc: Any, copy: bool) -> list[Buffer]:
        """cpu Buffers over the tensor's bytes: read-only views of the mapping, or copies."""
        align = self.header.alignment
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
            if copy:  # pread: a file truncated meanwhile is an error, not SIGBUS
                view = self._read(start, n, aligned_empty(n, host_alignment(handle.alignment, n)))
            else:
                view = np.frombuffer(self._map(), dtype=np.uint8, count=n, offset=start)
            out.append(Buffer.wrap(view, "cpu"))
        return out


def open_file(path: str | os.PathLike[str], *, permissive: bool = False,
              max_composite_depth: int = DEFAULT_MAX_COMPOSITE_DEPTH) -> HrryFile[Any]:
    """Open a ``.hrry`` file lazily (memory-mapped); use as a context manager.

    Args:
        path: the file.
        permissive: pass-through to the descriptor decoder's permissive mode.
        max_composite_depth: deepest composite nesting accepted (default 8).

    Returns:
        An :class:`HrryFile`: a read-only mapping of names to tensors, with ``.metadata``
        and ``.read(name, copy=..., device=...)``.

    Raises:
        HurrayFormatError: a malformed header, trailer, index, CRC or KV section.
        MissingFileError: no file at ``path`` (a FileNotFoundError).
        OSError: the file cannot be opened otherwise (permissions, a directory).
    """
    return HrryFile(path, permissive=permissive, max_composite_depth=max_composite_depth)


def load(path: str | os.PathLike[str], names: list[str] | None = None, *, device: Any = None,
         memory_class: Any = "standard", progress: bool | None = None) -> dict[str, Any]:
    """Read tensors from a ``.hrry`` file into memory (buffers are copied).

    Args:
        path: the file.
        names: names to read (any index name, members included); None reads every tensor
            that is not a composite member (heads come with their members attached).
        device: put the buffers on this device instead of the host, streaming each from the
            file mapping in bounded chunks (the file is never materialised on the host).
            ``load(p, device=d)`` equals ``{k: v.to(d) for k, v in load(p).items()}``.
        memory_class: the memory class on ``device``.
        progress: progress bar on/off (None: large transfers on a terminal;
            ``HURRAY_GPU_PROGRESS=0`` disables it).

    Returns:
        name -> Tensor, in file (index) order or in the order of ``names``.

    Raises:
        TensorNotFoundError: a requested name is missing (a KeyError).
        HurrayFormatError: malformed input.
        BackendUnavailableError, UnsupportedOpError, OutOfMemoryError: from the device.
    """
    with open_file(path) as f:
        wanted = f.top_level_names() if names is None else list(names)
        if device is None:
            return {name: f.read(name, copy=True) for name in wanted}
        with f.placement(device, memory_class, progress, wanted) as target:
            return {name: f._read_at(f._position(name), 0, False, target)[0]
                    for name in wanted}


__all__ = ["HrryFile", "MEMBER_SEPARATOR", "load", "open_file"]
