"""Single-pass ``.hrry`` writer laid out byte-for-byte like upstream's (docs/format.md,
.hrry files).

Per tensor: descriptor, zero padding to A, buffer 0, (padding to A, buffer i)..., padding to 8.
Then the KV section (8-aligned), the index, and the 40-byte trailer right after the index.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from typing import IO, Any

import numpy as np

from hurray_gpu.errors import ArgumentTypeError, HurrayFormatError
from hurray_gpu.io.crc32c import crc32c
from hurray_gpu.io.file_format import (
    DEFAULT_ALIGNMENT,
    FLAG_HAS_INDEX_CRC32C,
    FLAG_SORTED_INDEX,
    HEADER_SIZE,
    MAX_ALIGNMENT,
    MIN_ALIGNMENT,
    FileHeader,
    IndexEntry,
    Trailer,
    align_up,
    encode_index,
)
from hurray_gpu.io.framing import DEFAULT_MAX_COMPOSITE_DEPTH
from hurray_gpu.io.kv import encode_kv
from hurray_gpu.parts import TensorLike, as_tensor
from hurray_gpu.runtime.transfer import host_chunks

_ZEROS = bytes(MAX_ALIGNMENT)
MEMBER_SEPARATOR = "/"


class FileWriter:
    """Write named tensors to a ``.hrry`` file in one forward pass.

    Args:
        destination: a writable binary file object, or a path (written in place).
        alignment: data_buffer_alignment A, a power of two in [4096, 2097152].
        sorted_index: sort index entries by UTF-8 name bytes (sets SORTED_INDEX).

    Raises:
        HurrayFormatError: a bad alignment.
    """

    def __init__(self, destination: Any, *, alignment: int = DEFAULT_ALIGNMENT,
                 sorted_index: bool = False) -> None:
        if alignment & (alignment - 1) or not MIN_ALIGNMENT <= alignment <= MAX_ALIGNMENT:
            raise HurrayFormatError(
                f"alignment {alignment} is not a power of two in [4096, 2097152]",
                field="data_buffer_alignment", fix="use 4096 (the default) or a larger power of two.")
        if isinstance(destination, (str, os.PathLike)):
            self._file: IO[bytes] = open(destination, "wb")  # noqa: SIM115 - closed by close()
            self._owned = True
        else:
            self._file, self._owned = destination, False
        self.alignment = alignment
        self.sorted_index = sorted_index
        self._entries: list[IndexEntry] = []
        self._names: set[str] = set()
        self._metadata: dict[str, Any] = {}
        self._pos = 0
        self._closed = False
        flags = FLAG_HAS_INDEX_CRC32C | (FLAG_SORTED_INDEX if sorted_index else 0)
        self._emit(FileHeader(flags, alignment).encode())

    def __enter__(self) -> FileWriter:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None:
            self.close()
        elif self._owned:
            self._file.close()

    def _emit(self, data: bytes | memoryview) -> None:
        self._file.write(data)
        self._pos += len(data)

    def _pad_to(self, alignment: int) -> None:
        pad = align_up(self._pos, alignment) - self._pos
        if pad:
            self._emit(_ZEROS[:pad])

    def set_metadata(self, metadata: Mapping[str, Any]) -> None:
        """Set the KV section written by :meth:`close` (validated now).

        Raises:
            HurrayFormatError: a key or value the KV section cannot hold.
        """
        encode_kv(dict(metadata))
        self._metadata = dict(metadata)

    def write(self, name: str, tensor: TensorLike | np.ndarray) -> None:
        """Append a named tensor. A composite head is followed by its members, named
        ``name/0``, ``name/1``, ... (recursively for nested heads).

        Args:
            name: a unique, non-empty name of at most 65535 UTF-8 bytes.
            tensor: a Tensor, or a NumPy / ml_dtypes array (converted with from_numpy).

        Raises:
            HurrayFormatError: a bad or duplicate name, a closed writer, or a composite nested
                deeper than readers accept.
        """
        if self._closed:
            raise HurrayFormatError("write() after close()", fix="open a new FileWriter.")
        t: TensorLike = as_tensor(tensor)
        check_depth(t)
        self._check_name(name)
        self._names.add(name)
        self._write_one(name, t)
        for i, member in enumerate(t.members):
            self.write(f"{name}{MEMBER_SEPARATOR}{i}", member)

    def _check_name(self, name: str) -> None:
        raw = name.encode("utf-8") if isinstance(name, str) else b""
        if not 1 <= len(raw) <= 0xFFFF:
            raise HurrayFormatError(f"tensor name {name!r} must be a str of 1..65535 UTF-8 bytes",
                                    field="name", fix="pass a non-empty str name.")
        if name in self._names:
            raise HurrayFormatError(f"duplicate tensor name {name!r}", field="name",
                                    fix="give every tensor (and composite member) a unique name.")

    def write_copied(self, name: str, descriptor: Any,
                     copy: Callable[[IO[bytes]], None]) -> None:
        """Append a tensor whose buffer 0 (its only one) ``copy`` writes to the file itself,
        at the file's current position: a byte range of another file, which the kernel can
        copy without passing it through this process (hg.convert's direct types).

        Args:
            name: as in :meth:`write`.
            descriptor: the tensor's TensorDescriptor (one buffer, no members).
            copy: writes exactly ``descriptor.buffers[0].byte_size`` bytes to the handle.

        Raises:
            HurrayFormatError: a bad or duplicate name, or a closed writer.
        """
        if self._closed:
            raise HurrayFormatError("write_copied() after close()", fix="open a new FileWriter.")
        self._check_name(name)
        self._names.add(name)
        raw = descriptor.encode()
        desc_offset = self._pos
        self._emit(raw)
        self._pad_to(self.alignment)
        data_offset = self._pos
        self._file.flush()
        copy(self._file)
        length = descriptor.buffers[0].byte_size
        self._pos += length
        self._pad_to(8)
        self._entries.append(IndexEntry(name, desc_offset, len(raw), data_offset, length))

    def _write_one(self, name: str, tensor: TensorLike) -> None:
        raw = tensor.descriptor_bytes
        desc_offset = self._pos
        self._emit(raw)
        self._pad_to(self.alignment)
        data_offset = self._pos
        for i, buf in enumerate(tensor.buffers):
            if i:
                self._pad_to(self.alignment)
            for chunk in host_chunks(buf):  # device Buffers are copied out chunk by chunk
                self._emit(chunk)
        data_length = self._pos - data_offset
        self._pad_to(8)
        self._entries.append(IndexEntry(name, desc_offset, len(raw), data_offset, data_length))

    def close(self) -> None:
        """Write the KV section, the index and the trailer, then close an owned file."""
        if self._closed:
            return
        self._closed = True
        kv_offset = kv_length = 0
        if self._metadata:
            kv = encode_kv(self._metadata)
            kv_offset, kv_length = self._pos, len(kv)
            self._emit(kv)
            self._pad_to(8)
        entries = self._entries
        if self.sorted_index:
            entries = sorted(entries, key=lambda e: e.name.encode("utf-8"))
        index = encode_index(entries)
        index_offset = self._pos
        self._emit(index)
        self._emit(Trailer(index_offset, len(index), kv_offset, kv_length,
                           crc32c(index)).encode())
        self._file.flush()
        if self._owned:
            self._file.close()


def save(path: str | os.PathLike[str], tensors: Mapping[str, TensorLike | np.ndarray],
         metadata: Mapping[str, Any] | None = None, *, alignment: int = DEFAULT_ALIGNMENT,
         sorted_index: bool = False) -> None:
    """Write tensors (and optional KV metadata) to a ``.hrry`` file, atomically.

    The file is written to a temporary file in the same directory and renamed over ``path``, so
    a crash never leaves a half-written file behind.

    Args:
        path: destination path.
        tensors: name -> Tensor or NumPy / ml_dtypes array, written in dict order.
        metadata: KV metadata (str, int, UInt64, float, bool, bytes, or lists of those).
        alignment: data_buffer_alignment A.
        sorted_index: write the index sorted by name.

    Raises:
        HurrayFormatError: bad names, values or alignment.
        UnsupportedOpError: an array dtype with no Hurray element type.
    """
    if not isinstance(tensors, Mapping):
        raise ArgumentTypeError(f"save() takes a mapping of names to tensors, not "
                                f"{type(tensors).__name__}",
                                fix="pass a dict: hg.save(path, {'name': tensor, ...}).")
    with atomic_output(path) as handle:
        writer = FileWriter(handle, alignment=alignment, sorted_index=sorted_index)
        if metadata:
            writer.set_metadata(metadata)
        for name, tensor in tensors.items():
            writer.write(name, tensor)
        writer.close()


def check_depth(tensor: TensorLike, limit: int = DEFAULT_MAX_COMPOSITE_DEPTH) -> None:
    """Raise HurrayFormatError for composites nested more than ``limit`` levels deep:
    writers never emit what StreamReader and open_file refuse."""
    level = [tensor]
    for _ in range(limit):  # heads in generation g are nested g + 1 levels deep
        level = [m for t in level for m in t.members]
    if any(t.is_composite for t in level):
        raise HurrayFormatError(f"composite nested more than {limit} levels deep; readers "
                                "refuse it", field="layout_tag", fix="flatten the composite.")


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike[str]) -> Iterator[IO[bytes]]:
    """A binary handle on a temporary file that replaces ``path`` when the block succeeds
    (OSError when it cannot be written). The file is fsynced before the rename and the folder
    after it, so no crash leaves a partial ``path``; on an error ``path`` is left as it was."""
    target = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(target))
    fd, tmp = tempfile.mkstemp(prefix=".hrry-", suffix=".tmp", dir=folder)
    try:
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; give the file ordinary permissions
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # directories cannot be opened everywhere (Windows)
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


__all__ = ["FileWriter", "HEADER_SIZE", "atomic_output", "check_depth", "save"]
