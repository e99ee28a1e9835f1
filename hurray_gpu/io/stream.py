"""Raw Hurray streams (docs/format.md, Raw streams): back-to-back
``[descriptor][buffer0][buffer1]...`` to EOF.

The reader never buffers the whole input: it reads the 10-byte prefix, checks the declared
length, then reads exactly what each descriptor declares. A tensor is returned only once all of
its bytes (and, for a composite head, all of its members) have arrived.
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Iterator
from typing import IO, Any

import numpy as np

from hurray_gpu.errors import HurrayFormatError
from hurray_gpu.format import codec as _codec
from hurray_gpu.format.composite import validate_members
from hurray_gpu.io.file_writer import check_depth
from hurray_gpu.io.framing import (
    DEFAULT_MAX_COMPOSITE_DEPTH,
    DEFAULT_MAX_DESCRIPTOR_SIZE,
    PREFIX_SIZE,
    descriptor_length,
)
from hurray_gpu.parts import (
    Placement,
    TensorLike,
    as_tensor,
    check_room,
    make_tensor,
    release,
    resolve_place,
)
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.hostmem import CHUNK, aligned_empty, host_alignment
from hurray_gpu.runtime.transfer import Progress, host_chunks, show_progress

_FIX_TRUNC = "the stream was cut short; re-send or re-write it completely."
# Sources of unknown length (pipes, sockets) are read in pieces of at most this many bytes
# when the size is not yet proven, so a hostile declared length allocates no more than what
# actually arrived plus one piece.
_PIECE = 1 << 20


def _open(source: Any, mode: str) -> tuple[IO[bytes], bool]:
    if isinstance(source, (str, os.PathLike)):
        return open(source, mode), True  # noqa: SIM115 - closed by close()
    if isinstance(source, (bytes, bytearray, memoryview)):
        return io.BytesIO(bytes(source)), True
    return source, False


class StreamReader:
    """Iterate over the tensors of a raw Hurray stream.

    Args:
        source: a readable binary file object, a path, or bytes.
        max_descriptor_size: largest descriptor accepted (default 16 MiB, as upstream).
        max_buffer_size: largest single buffer accepted, or None for no cap.
        max_composite_depth: deepest composite nesting accepted (default 8, spec MUST).
        cross_machine: reject buffers whose sync_mode is not 0 (producer synced).
        permissive: pass-through to the descriptor decoder's permissive mode.
        device: read buffers straight into this device's memory, one bounded host chunk at a
            time; tensors equal ``tensor.to(device, memory_class=memory_class)``.
        memory_class: the memory class on ``device``.
        progress: progress bar for large buffers on/off (None: on a terminal only).

    Raises:
        HurrayFormatError: from iteration, on any malformed or truncated input.
        BackendUnavailableError, UnsupportedOpError: ``device``/``memory_class`` is unusable.
    """

    def __init__(self, source: Any, *, max_descriptor_size: int = DEFAULT_MAX_DESCRIPTOR_SIZE,
                 max_buffer_size: int | None = None,
                 max_composite_depth: int = DEFAULT_MAX_COMPOSITE_DEPTH,
                 cross_machine: bool = False, permissive: bool = False, device: Any = None,
                 memory_class: Any = "standard", progress: bool | None = None) -> None:
        self._target = None if device is None else Placement(
            *resolve_place(device, memory_class), Progress(0, "", False))
        self.progress = progress
        self._file, self._owned = _open(source, "rb")
        self.max_descriptor_size = max_descriptor_size
        self.max_buffer_size = max_buffer_size
        self.max_composite_depth = max_composite_depth
        self.cross_machine = cross_machine
        self.permissive = permissive
        self.position = 0
        self._done = False

    def __enter__(self) -> StreamReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the source if this reader opened it."""
        if self._owned:
            self._file.close()

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        tensor = self.read()
        if tensor is None:
            raise StopIteration
        return tensor

    def read(self) -> Any:
        """Read the next complete tensor (a composite head comes with all its members).

        Returns:
            The tensor, or None at a clean end of stream.

        Raises:
            HurrayFormatError: malformed, truncated or over-limit input.
        """
        if self._done:
            return None
        try:
            tensor = self._read_tensor(depth=0)
        except HurrayFormatError:
            self._done = True  # the stream cannot be resynchronised after an error
            raise
        if tensor is None:
            self._done = True
        return tensor

    def _read_tensor(self, depth: int) -> Any:
        start = self.position
        prefix = self._read_exact(PREFIX_SIZE, "descriptor header", allow_eof=True)
        if prefix is None:
            return None
        length = descriptor_length(prefix, start, self.max_descriptor_size)
        rest = self._read_exact(length - PREFIX_SIZE, "descriptor")
        raw = bytes(prefix) + bytes(rest)  # type: ignore[arg-type]
        desc = _codec.decode(raw, offset=start, permissive=self.permissive)
        if _codec.is_unknown_layout(desc):
            raise HurrayFormatError(
                f"layout tag 0x{_codec.layout_tag(desc):02X} is unknown, so its buffer sizes "
                "cannot be located and the stream cannot be resynchronised",
                field="layout_tag", offset=start + 15,
                fix="read this stream with a hurray_gpu that knows the layout.")
        if self.cross_machine:
            _codec.require_producer_synced(desc, start)
        if _codec.is_head(desc):
            return self._read_composite(desc, raw, start, depth)
        if self._target is not None:
            return self._read_placed(desc, self._target)
        buffers = [Buffer.wrap(self._read_buffer(i, h), "cpu")
                   for i, h in enumerate(_codec.handles(desc))]
        return make_tensor(desc, buffers, raw=raw)

    def _read_placed(self, desc: Any, target: Placement) -> Any:
        new = target.retag(desc)
        raw = _codec.encode(new)  # validate the device table before allocating
        buffers: list[Buffer] = []
        host = target.device.allocator.host_memory and target.memory_class == 0
        try:
            for i, h in enumerate(_codec.handles(new)):
                if host:  # plain host memory: the bounded host path
                    buffers.append(Buffer.wrap(self._read_buffer(i, h), target.device))
                    continue
                self._check_buffer_size(i, h.byte_size)
                check_room(target.device, h.byte_size)
                buffers.append(target.alloc(h))
                self._read_to(buffers[-1], h.byte_size, f"buffers[{i}]")
        except BaseException:
            release(buffers)
            raise
        return make_tensor(new, buffers, raw=raw, device=target.device,
                           memory_class=target.memory_class)

    def _read_to(self, dest: Buffer, size: int, what: str) -> None:
        host = dest.device.allocator.host_array(dest.allocation)
        if host is not None:  # host memory: read straight into it
            self._read_into(host, what)
            return
        allocator = dest.device.allocator
        parts = list(allocator.pieces(dest.allocation))
        staging = np.empty(max(part.nbytes for _, part in parts) if parts else 0, np.uint8)
        with Progress(size, what, show_progress(size, self.progress)) as bar:
            for _, part in parts:
                chunk = staging[:part.nbytes]
                self._read_into(chunk, what)
                allocator.copyin(part, chunk)
                bar.advance(part.nbytes)

    def _read_composite(self, head: Any, raw: bytes, start: int, depth: int) -> Any:
        if depth + 1 > self.max_composite_depth:
            raise HurrayFormatError(
                f"composite nesting level {depth + 1} exceeds the limit of "
                f"{self.max_composite_depth}", field="layout_tag", offset=start + 15,
                fix="flatten the composite, or raise max_composite_depth if trusted.")
        count = _codec.member_count(head)
        members: list[TensorLike] = []
        offsets: list[int] = []
        for i in range(count):
            offsets.append(self.position)
            member = self._read_tensor(depth + 1)
            if member is None:
                raise HurrayFormatError(
                    f"torn composite: the stream ended after {i} of {count} members",
                    field="member_count", offset=self.position, fix=_FIX_TRUNC)
            members.append(member)
        validate_members(head, [m.descriptor for m in members], offsets)
        if self._target is None:
            return make_tensor(head, [], members=members, raw=raw)
        return make_tensor(head, [], members=members, raw=raw, device=self._target.device,
                           memory_class=self._target.memory_class)

    def _check_buffer_size(self, index: int, size: int) -> bool:
        """Apply max_buffer_size and, for regular files, the bytes left (before allocating)."""
        if self.max_buffer_size is not None and size > self.max_buffer_size:
            raise HurrayFormatError(
                f"buffers[{index}].byte_size {size} exceeds max_buffer_size "
                f"{self.max_buffer_size}", field=f"buffers[{index}].byte_size",
                offset=self.position, fix="raise max_buffer_size if this stream is trusted.")
        return self._check_remaining(size, index)

    def _read_buffer(self, index: int, handle: Any) -> np.ndarray:
        size = handle.byte_size
        verified = self._check_buffer_size(index, size)
        align = host_alignment(handle.alignment, size)
        if size <= CHUNK or verified:
            out = aligned_empty(size, align)
            self._read_into(out, f"buffers[{index}]")
            return out
        # Huge declared sizes are read chunk by chunk, so a short stream fails before the
        # whole size is allocated.
        chunks = []
        left = size
        while left:
            chunk = np.empty(min(left, CHUNK), dtype=np.uint8)
            self._read_into(chunk, f"buffers[{index}]")
            chunks.append(chunk)
            left -= chunk.size
        out = aligned_empty(size, align)
        np.concatenate(chunks, out=out)
        return out

    def _remaining(self) -> int | None:
        """Bytes left in the source when its size is known (regular files, in-memory
        buffers), else None (pipes, sockets, other file-like objects)."""
        source = self._file
        try:
            if isinstance(source, io.BytesIO):
                with source.getbuffer() as view:
                    end = view.nbytes
            else:
                info = os.fstat(source.fileno())
                if not stat.S_ISREG(info.st_mode):
                    return None  # pipes and sockets report no meaningful size
                end = info.st_size
            return max(end - source.tell(), 0)
        except (OSError, AttributeError, ValueError, BufferError, io.UnsupportedOperation):
            return None

    def _check_remaining(self, size: int, index: int) -> bool:
        """Compare a declared buffer size with the bytes left, when known, before allocating.

        Returns:
            True when the source is known to hold ``size`` more bytes, False when unknown.

        Raises:
            HurrayFormatError: the source is known to hold fewer than ``size`` bytes.
        """
        left = self._remaining()
        if left is None:
            return False
        if size > left:
            raise HurrayFormatError(
                f"stream truncated: buffers[{index}] declares {size} bytes but only "
                f"{left} remain", field=f"buffers[{index}].byte_size",
                offset=self.position, fix=_FIX_TRUNC)
        return True

    def _read_exact(self, n: int, what: str, allow_eof: bool = False) -> bytearray | None:
        """Read exactly ``n`` bytes, checking a known remaining length before allocating and
        reading sources of unknown length in bounded pieces.

        Returns:
            The bytes, or None at a clean end of input when ``allow_eof``.

        Raises:
            HurrayFormatError: the source holds fewer than ``n`` bytes.
        """
        left = self._remaining()
        if left is not None and left < n:
            if left == 0 and allow_eof and n:
                return None
            raise HurrayFormatError(
                f"stream truncated: {what} needs {n} bytes but only {left} remain",
                field=what, offset=self.position, fix=_FIX_TRUNC)
        if left is not None:
            out = bytearray(n)
            got = self._fill(memoryview(out))
        else:  # grow with what arrives, never ahead of it by more than one piece
            out, got = bytearray(), 0
            while got < n:
                step = min(n - got, _PIECE)
                out.extend(bytes(step))
                new = self._fill(memoryview(out)[got:])
                got += new
                if new < step:
                    break
        if got == 0 and allow_eof and n:
            return None
        if got < n:
            raise HurrayFormatError(
                f"stream truncated: {what} needs {n} bytes but only {got} remain",
                field=what, offset=self.position - got, fix=_FIX_TRUNC)
        return out

    def _read_into(self, out: np.ndarray, what: str) -> None:
        got = self._fill(out.data)
        if got < out.size:
            raise HurrayFormatError(
                f"stream truncated: {what} needs {out.size} bytes but only {got} remain",
                field=what, offset=self.position - got, fix=_FIX_TRUNC)

    def _fill(self, view: memoryview) -> int:
        got = 0
        reader = getattr(self._file, "readinto", None)
        while got < len(view):
            if reader is not None:
                n = reader(view[got:])
            else:
                data = self._file.read(len(view) - got)
                n = len(data) if data else 0
                view[got : got + n] = data
            if not n:
                break
            got += n
        self.position += got
        return got


class StreamWriter:
    """Write tensors as a raw Hurray stream (no header, padding or end marker).

    Args:
        destination: a writable binary file object or a path (created/truncated).
        cross_machine: refuse tensors whose buffers are not producer-synced (sync_mode 0).
    """

    def __init__(self, destination: Any, *, cross_machine: bool = False) -> None:
        self._file, self._owned = _open(destination, "wb")
        self.cross_machine = cross_machine
        self.bytes_written = 0

    def __enter__(self) -> StreamWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Flush, and close the destination if this writer opened it."""
        self._file.flush()
        if self._owned:
            self._file.close()

    def write(self, tensor: TensorLike | np.ndarray) -> int:
        """Append one tensor (a composite head is followed by its members, pre-order).

        Args:
            tensor: a Tensor, or a NumPy / ml_dtypes array (converted with from_numpy).

        Returns:
            The number of bytes written.

        Raises:
            HurrayFormatError: cross_machine is set and a buffer is not producer-synced, or a
                composite is nested deeper than readers accept.
        """
        t: TensorLike = as_tensor(tensor)
        check_depth(t)
        if self.cross_machine:
            _codec.require_producer_synced(t.descriptor, None)
        before = self.bytes_written
        self._emit(t.descriptor_bytes)
        for buf in t.buffers:
            for chunk in host_chunks(buf):  # device Buffers are copied out chunk by chunk
                self._emit(chunk)
        for member in t.members:
            self.write(member)
        return self.bytes_written - before

    def _emit(self, data: bytes | memoryview) -> None:
        self._file.write(data)
        self.bytes_written += len(data)
