"""What every source reader shares: the untrusted source file (bounded ``pread``s only), the
planned tensor entry, the converted result, and the little-endian header cursor.

A source file is hostile input: every length, count and offset is checked against the bytes
that remain before anything is allocated or read.
"""

from __future__ import annotations

import errno
import math
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

import numpy as np

from hurray_gpu.errors import ConversionError, UnsupportedConversionError, open_for_reading
from hurray_gpu.format.descriptor import TensorDescriptor
from hurray_gpu.format.descriptor.validate import MAX_RANK
from hurray_gpu.parts import TensorLike, assemble
from hurray_gpu.runtime.hostmem import aligned_empty

__all__ = ["Converted", "Cursor", "MAX_HEADER_BYTES", "MAX_TENSORS", "SourceFile", "SourceTensor",
           "check_disjoint", "check_shape", "dense_tensor", "element_count", "refuse"]

# Headers (safetensors JSON, GGUF key/values and tensor infos) are parsed in memory: the
# largest real ones (tokenizers with ~250k entries) are tens of MiB, so 1 GiB bounds a hostile
# header's allocation while leaving every real checkpoint room.
MAX_HEADER_BYTES = 1 << 30
# Tensors one source may declare; each costs a Python entry in the plan before any is read.
MAX_TENSORS = 1 << 20
_COPY_CHUNK = 16 << 20  # bounded reads where copy_file_range cannot copy


# The Fix of a source path that does not exist.
SOURCE_FIX = "check the path of the checkpoint to convert."


@dataclass(frozen=True)
class SourceTensor:
    """One tensor of a source, planned and checked before any tensor is converted.

    Attributes:
        name: the tensor's name in the source.
        kind: its type as the source names it (``"F32"``, ``"Q4_0"``, ``"float16"``).
        shape: the logical shape, outermost dimension first (row-major).
        offset: absolute byte offset of its data in the file (-1: the reader loads by name).
        nbytes: bytes of source data (what the progress bar and throughput count).
    """

    name: str
    kind: str
    shape: tuple[int, ...]
    offset: int
    nbytes: int


@dataclass
class Converted:
    """A converted tensor and, for ``convert(device=...)`` checks, the source's own decoding.

    Attributes:
        tensor: the Hurray tensor (host memory) to write.
        expected: returns what the source tool decodes the tensor to: float32 for quantized
            types, the element array itself for plain types.
    """

    tensor: TensorLike
    expected: Callable[[], np.ndarray]


class SourceFile:
    """A source checkpoint opened for bounded positional reads.

    Args:
        path: the file.
        reuse: named scratch buffers (see :meth:`buffer`) are kept for the next tensor, so
            a result is valid only until the next one: the streaming converter's case, where
            a fresh buffer per tensor costs a page fault per 4 KiB (a third of its time).

    Raises:
        MissingFileError, UnreadableFileError: it cannot be opened (OSErrors).
    """

    def __init__(self, path: str | os.PathLike[str], reuse: bool = False) -> None:
        self.path = os.fspath(path)
        self._handle = open_for_reading(self.path, SOURCE_FIX)
        self.size = os.fstat(self._handle.fileno()).st_size
        self.reuse = reuse
        self._scratch: dict[str, np.ndarray] = {}

    def buffer(self, nbytes: int, scratch: str | None = None) -> np.ndarray:
        """A 64-byte aligned uint8 array of ``nbytes``: with ``reuse``, the one kept under the
        name ``scratch`` (``"read"`` for source bytes, ``"codes"`` for a mapping's output),
        grown as needed; otherwise a fresh one."""
        if scratch is None or not self.reuse:
            return aligned_empty(nbytes, 64)
        kept = self._scratch.get(scratch)
        if kept is None or kept.size < nbytes:
            self._scratch.pop(scratch, None)  # free the old one before allocating
            kept = self._scratch[scratch] = aligned_empty(nbytes, 64)
        return kept[:nbytes]

    def close(self) -> None:
        """Close the file (idempotent)."""
        self._handle.close()

    def fail(self, message: str, *, tensor: str | None = None, kind: str | None = None,
             offset: int | None = None, fix: str | None = None) -> ConversionError:
        """A ConversionError about this file (the default hint: the file is damaged)."""
        return ConversionError(message, source=self.path, tensor=tensor, source_type=kind,
                               offset=offset, fix=fix or "the file is damaged or truncated: "
                               "download or export it again, and check its checksum.")

    def check_span(self, offset: int, nbytes: int, what: str, *, tensor: str | None = None,
                   kind: str | None = None) -> None:
        """Raise ConversionError unless ``[offset, offset + nbytes)`` lies inside the file."""
        if offset < 0 or nbytes < 0 or offset + nbytes > self.size:
            raise self.fail(f"{what} of {nbytes} bytes at offset {offset} runs past the end of "
                            f"the {self.size}-byte file", tensor=tensor, kind=kind, offset=offset)

    def read(self, offset: int, nbytes: int, what: str, *, tensor: str | None = None,
             kind: str | None = None, scratch: str | None = None) -> np.ndarray:
        """``nbytes`` bytes at ``offset`` into :meth:`buffer` (``scratch`` passed on).

        Raises:
            ConversionError: the span is outside the file, or the file shrank while read.
        """
        self.check_span(offset, nbytes, what, tensor=tensor, kind=kind)
        out = self.buffer(nbytes, scratch)
        view, got = out.data, 0
        while got < nbytes:
            step = os.preadv(self._handle.fileno(), [view[got:]], offset + got)
            if not step:
                raise self.fail(f"the file ended at byte {offset + got} inside a read of {what}"
                                " (was it truncated while converting?)", tensor=tensor,
                                kind=kind, offset=offset + got)
            got += step
        return out


    def copy_to(self, out: IO[bytes], offset: int, nbytes: int, what: str, *,
                tensor: str | None = None, kind: str | None = None) -> None:
        """Write the file's ``[offset, offset + nbytes)`` to ``out`` at its position: by
        ``os.copy_file_range`` (the kernel copies, nothing passes through this process),
        else by bounded reads where the platform or the file systems cannot.

        Raises:
            ConversionError: the span is outside the file, or the file shrank meanwhile.
        """
        self.check_span(offset, nbytes, what, tensor=tensor, kind=kind)
        done = 0
        try:
            out_fd = out.fileno() if hasattr(os, "copy_file_range") else None
        except (OSError, ValueError):  # not backed by a file descriptor (io.BytesIO)
            out_fd = None
        if out_fd is not None:
            out.flush()  # what the handle buffered goes first
            try:
                while done < nbytes:
                    step = os.copy_file_range(self._handle.fileno(), out_fd, nbytes - done,
                                              offset + done)
                    if not step:
                        raise self.fail(f"the file ended at byte {offset + done} inside "
                                        f"{what}", tensor=tensor, kind=kind, offset=offset + done)
                    done += step
            except OSError as exc:  # no such copy between these file systems or file types
                if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP,
                                     errno.EBADF):
                    raise
            finally:
                out.seek(0, os.SEEK_CUR)  # the handle takes its position from the fd again
        for at in range(offset + done, offset + nbytes, _COPY_CHUNK):
            out.write(self.read(at, min(_COPY_CHUNK, offset + nbytes - at), what,
                                tensor=tensor, kind=kind, scratch="copy").data)


class Cursor:
    """Little-endian reads of a header from file offset ``base`` on, pulled from the file in
    growing chunks (never more than MAX_HEADER_BYTES); every read and every count is checked
    against the bytes the file has left."""

    def __init__(self, src: SourceFile, base: int = 0) -> None:
        self.src, self.base, self.pos = src, base, 0
        self.data = bytearray()

    @property
    def remaining(self) -> int:
        """Bytes of the file after the current position."""
        return self.src.size - self.base - self.pos

    def _fill(self, end: int) -> None:
        if end > MAX_HEADER_BYTES:
            raise self.src.fail(f"the header is larger than {MAX_HEADER_BYTES} bytes",
                                offset=self.base, fix="no real checkpoint has a header this "
                                "large: the file is damaged or was crafted.")
        want = min(max(end, 2 * len(self.data), 1 << 20), MAX_HEADER_BYTES,
                   self.src.size - self.base)
        more = self.src.read(self.base + len(self.data), want - len(self.data), "the header")
        self.data += more.tobytes()

    def take(self, n: int, what: str) -> bytes:
        """The next ``n`` bytes."""
        if n < 0 or n > self.remaining:
            raise self.src.fail(f"{what} needs {n} bytes but only {self.remaining} remain",
                                offset=self.base + self.pos)
        if self.pos + n > len(self.data):
            self._fill(self.pos + n)
        out = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return out

    def unpack(self, fmt: str, what: str) -> Any:
        """One value of struct format ``fmt`` (little-endian)."""
        return struct.unpack("<" + fmt, self.take(struct.calcsize(fmt), what))[0]

    def peek_u32(self) -> int | None:
        """The next little-endian u32 without consuming it (None at the end of the file)."""
        if self.remaining < 4:
            return None
        value = self.unpack("I", "a type field")
        self.pos -= 4
        return int(value)

    def count(self, fmt: str, min_each: int, what: str) -> int:
        """A count field, checked so that ``count * min_each`` bytes can still follow."""
        at, n = self.pos, self.unpack(fmt, what)
        if n * min_each > self.remaining:
            raise self.src.fail(f"{what} {n} cannot fit in the {self.remaining} bytes that "
                                "remain", offset=self.base + at)
        return int(n)


def check_shape(src: SourceFile, name: str, kind: str, shape: tuple[int, ...]) -> None:
    """Raise unless ``shape`` has a rank Hurray holds and no negative dimension."""
    if len(shape) > MAX_RANK or any(d < 0 for d in shape):
        raise src.fail(f"shape {list(shape)} has a negative dimension or more than {MAX_RANK} "
                       "dimensions", tensor=name, kind=kind)


def element_count(shape: tuple[int, ...]) -> int:
    """The number of elements of ``shape`` (Python ints: no overflow)."""
    return math.prod(shape)


def refuse(src: SourceFile, entry: SourceTensor | tuple[str, str], why: str,
           fix: str) -> UnsupportedConversionError:
    """The error for a well-formed tensor this converter does not map."""
    name, kind = (entry.name, entry.kind) if isinstance(entry, SourceTensor) else entry
    return UnsupportedConversionError(why, source=src.path, tensor=name, source_type=kind,
                                      fix=fix)


def dense_tensor(dtype: Any, shape: tuple[int, ...], data: np.ndarray) -> TensorLike:
    """A row-major host tensor over ``data``, the element bytes exactly as stored (no copy when
    ``data`` is aligned)."""
    return assemble(TensorDescriptor.dense(dtype, shape), [data])


def check_disjoint(src: SourceFile, entries: list[SourceTensor]) -> None:
    """Raise unless the tensors' data spans are pairwise disjoint: overlapping spans would let
    a small crafted file expand into an output many times its size."""
    spans = sorted((e.offset, e.offset + e.nbytes, e.name) for e in entries if e.nbytes)
    for (_, end0, name0), (begin1, end1, name1) in zip(spans, spans[1:], strict=False):
        if begin1 < end0:
            raise src.fail(f"its data [{begin1}, {end1}) overlaps that of tensor {name0!r} "
                           f"(ending at {end0})", tensor=name1, offset=begin1)
