"""Bounded-chunk copies between host arrays and device Buffers, with an optional progress bar.

Large transfers move at most ``memory.CHUNK`` bytes per step, so no copy holds more than one extra
chunk of host memory; the bar (``rich``, when installed) shows on a terminal for big transfers.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from hurray_gpu import config
from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.runtime import memory

if TYPE_CHECKING:
    from hurray_gpu.runtime.buffer import Buffer

__all__ = ["PROGRESS_THRESHOLD", "Progress", "copy_buffer", "download", "host_chunks",
           "show_progress", "upload"]
# Below this size a transfer finishes too fast for a bar to be worth drawing.
PROGRESS_THRESHOLD = 256 << 20


def show_progress(total: int, progress: bool | None = None, stream: Any = None) -> bool:
    """Decide whether a transfer of ``total`` bytes draws a progress bar.

    Args:
        total: bytes to move.
        progress: True/False force the bar on/off; None is automatic.
        stream: where the bar goes (default ``sys.stderr``).

    Returns:
        ``progress`` when given; otherwise False when ``HURRAY_GPU_PROGRESS=0``, and for
        transfers of at least PROGRESS_THRESHOLD bytes True when ``HURRAY_GPU_PROGRESS=1`` or
        the stream is a terminal.
    """
    if progress is not None:
        return bool(progress)
    env = config.progress()
    if env is False or total < PROGRESS_THRESHOLD:
        return False
    if env is True:
        return True
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class Progress:
    """A byte-count progress bar drawn with ``rich``; inert when disabled or rich is missing.

    Args:
        total: bytes the transfer will move.
        label: the description shown left of the bar.
        enabled: draw the bar (see :func:`show_progress`).
    """

    def __init__(self, total: int, label: str, enabled: bool) -> None:
        self.total = total
        self.done = 0
        self._bar: Any = None
        self._task: Any = None
        if enabled and total > 0:
            self._start(label)

    def _start(self, label: str) -> None:
        try:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                TransferSpeedColumn,
            )
            from rich.progress import Progress as RichProgress
        except ImportError:
            return  # the bar is optional: no rich, no bar
        self._bar = RichProgress("{task.description}", BarColumn(), DownloadColumn(),
                                 TransferSpeedColumn(), console=Console(stderr=True),
                                 transient=True)
        self._task = self._bar.add_task(label, total=self.total)
        self._bar.start()

    @property
    def active(self) -> bool:
        """True when a bar is being drawn."""
        return self._bar is not None

    def advance(self, nbytes: int) -> None:
        """Record ``nbytes`` more bytes moved."""
        self.done += nbytes
        if self._bar is not None:
            self._bar.update(self._task, advance=nbytes)

    def close(self) -> None:
        """Remove the bar (idempotent)."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _quiet(total: int) -> Progress:
    return Progress(total, "", False)


def host_chunks(buf: Any) -> Iterator[memoryview]:
    """The bytes of a host array or Buffer as host memoryviews of at most CHUNK bytes.

    A host array yields views of itself; a Buffer is copied out into one reused staging
    chunk, so each yielded view is valid only until the next one is requested.
    """
    host = _host_array(buf) if hasattr(buf, "allocation") else np.ascontiguousarray(buf)
    if host is not None:
        data = host.reshape(-1).view(np.uint8).data
        step = memory.CHUNK
        for off in range(0, data.nbytes, step):
            yield data[off:off + step]
        return
    allocator = buf.device.allocator
    staging = np.empty(min(buf.nbytes, memory.CHUNK), dtype=np.uint8)
    for _, part in allocator.pieces(buf.allocation):
        chunk = staging if part.nbytes == staging.size else np.empty(part.nbytes, np.uint8)
        allocator.copyout(chunk, part)
        yield chunk.data


def _check_sizes(dest: int, src: int) -> None:
    if dest != src:
        raise UnsupportedOpError(f"copy of a {src}-byte source into a {dest}-byte destination",
                                 fix="copy between buffers of one size (make a view first).")


def upload(dest: Buffer, src: Any, bar: Progress | None = None) -> None:
    """Copy host bytes ``src`` (a 1-D uint8 array or bytes-like) into ``dest`` chunk by chunk.

    Raises:
        UnsupportedOpError: the sizes differ, or ``dest`` was freed.
    """
    data = np.frombuffer(src, dtype=np.uint8) if not isinstance(src, np.ndarray) else src
    _check_sizes(dest.nbytes, data.size)
    bar = bar or _quiet(data.size)
    allocator = dest.device.allocator
    for off, part in allocator.pieces(dest.allocation):
        allocator.copyin(part, data[off:off + part.nbytes])
        bar.advance(part.nbytes)


def download(dest: np.ndarray, src: Buffer, bar: Progress | None = None) -> None:
    """Copy all of ``src`` into the writable 1-D uint8 array ``dest`` chunk by chunk.

    Raises:
        UnsupportedOpError: the sizes differ, or ``src`` was freed.
    """
    _check_sizes(dest.size, src.nbytes)
    bar = bar or _quiet(dest.size)
    allocator = src.device.allocator
    for off, part in allocator.pieces(src.allocation):
        allocator.copyout(dest[off:off + part.nbytes], part)
        bar.advance(part.nbytes)


def _host_array(buffer: Buffer) -> np.ndarray | None:
    """The host array over a buffer's memory when the host can address it, else None."""
    return buffer.device.allocator.host_array(buffer.allocation)


def copy_buffer(dest: Buffer, src: Buffer, *, progress: bool | None = None,
                bar: Progress | None = None) -> None:
    """Copy ``src`` into ``dest`` by the most direct path there is.

    One device: the allocator's device-side copy. Host-memory device to or from another
    device: one direct copyin/copyout. Otherwise staged through one host chunk at a time.

    Raises:
        UnsupportedOpError: the sizes differ, or either buffer was freed.
    """
    _check_sizes(dest.nbytes, src.nbytes)
    if bar is None:
        label = f"{src.device.spec} -> {dest.device.spec}"
        with Progress(src.nbytes, label, show_progress(src.nbytes, progress)) as own:
            copy_buffer(dest, src, bar=own)
        return
    if dest.device is src.device:
        allocator = dest.device.allocator
        for (_, d_part), (_, s_part) in zip(allocator.pieces(dest.allocation),
                                            allocator.pieces(src.allocation), strict=True):
            allocator.copy(d_part, s_part)
            bar.advance(s_part.nbytes)
        return
    src_host, dest_host = _host_array(src), _host_array(dest)
    if src_host is not None:
        upload(dest, src_host, bar)
    elif dest_host is not None:
        download(dest_host, src, bar)
    else:
        _staged(dest, src, bar)


def _staged(dest: Buffer, src: Buffer, bar: Progress) -> None:
    s_alloc, d_alloc = src.device.allocator, dest.device.allocator
    s_parts = list(s_alloc.pieces(src.allocation))
    d_parts = list(d_alloc.pieces(dest.allocation))
    if len(s_parts) != len(d_parts):  # one side has no views: stage the whole buffer once
        whole = np.empty(src.nbytes, dtype=np.uint8)
        download(whole, src, bar=_quiet(src.nbytes))
        upload(dest, whole, bar)
        return
    staging = np.empty(min(src.nbytes, memory.CHUNK), dtype=np.uint8)
    for (_, s_part), (_, d_part) in zip(s_parts, d_parts, strict=True):
        chunk = staging[:s_part.nbytes]
        s_alloc.copyout(chunk, s_part)
        d_alloc.copyin(d_part, chunk)
        bar.advance(s_part.nbytes)
