"""Fuzz harness for the raw stream reader (hurray_gpu.io.StreamReader).

Control byte: bits 0-1 source kind (0 bytes, 1 tmpfs file path, 2 pipe-like object with only
``read``, 3 BytesIO); bit 2 permissive; bit 3 cross_machine; bit 4 max_buffer_size 4096;
bits 5-7 max_composite_depth (0 keeps the default 8). Property: HurrayFormatError only;
bounded time and memory; a stream that reads whole is re-written byte for byte by
StreamWriter and re-reads to equal tensors.
"""

from __future__ import annotations

import io
from typing import Any

from hurray_gpu.errors import HurrayFormatError
from hurray_gpu.io import StreamReader, StreamWriter
from hurray_gpu.runtime.hostmem import CHUNK

from . import seeds
from ._engine import Bounds, FuzzFailure, Harness, Stats, guarded
from ._tmpfs import scratch_file

NAME = "stream"
BOUNDS = Bounds(seconds=2.0, mem_factor=64, mem_slack=1 << 20)
# Sources of unknown length (pipes) may read ahead before a short stream is detected: one
# descriptor piece (<= 1 MiB) or one buffer chunk (<= CHUNK), as hurray_gpu/io/stream.py
# documents. Sources of known length (bytes, BytesIO, files) are checked before allocating,
# and host buffers are padded to at most 1/16 of their size (plus 63 bytes) to align them.
READ_AHEAD = (1 << 20) + CHUNK
# No decoder bug is open; tests/fuzz/test_regressions.py replays every KNOWN_BUGS flag False.
KNOWN_BUGS: dict[str, bool] = {}


class _PipeLike:
    """A read-only file object with no fileno, seek or readinto (like a socket reader)."""

    def __init__(self, data: bytes) -> None:
        self._io = io.BytesIO(data)

    def read(self, n: int = -1) -> bytes:
        return self._io.read(min(n, 4093) if n > 0 else n)  # short reads on purpose


def _source(kind: int, payload: bytes) -> Any:
    if kind == 1:
        return scratch_file("stream", payload)
    if kind == 2:
        return _PipeLike(payload)
    if kind == 3:
        return io.BytesIO(payload)
    return payload


def options(ctl: int) -> dict[str, Any]:
    """StreamReader keyword arguments selected by the control byte."""
    opts: dict[str, Any] = {"permissive": bool(ctl & 4), "cross_machine": bool(ctl & 8)}
    if ctl & 0x10:
        opts["max_buffer_size"] = 4096
    if ctl >> 5:
        opts["max_composite_depth"] = ctl >> 5
    return opts


def memory_allowance(kind: int, payload: bytes) -> int:
    """Extra memory beyond ``mem_factor * len`` for this source kind (the documented
    read-ahead of sources whose length is unknown)."""
    del payload  # the allowance depends on the source kind only
    return READ_AHEAD if kind == 2 else 0


def one_input(data: bytes, *, measure_memory: bool = False, stats: Stats | None = None) -> bool:
    """Check every property on one input.

    Returns:
        True when the whole stream read.

    Raises:
        FuzzFailure: a property was broken.
    """
    if not data:
        return False
    ctl, payload = data[0], data[1:]
    kind, opts = ctl & 3, options(ctl)

    def decode() -> list[Any]:
        with StreamReader(_source(kind, payload), **opts) as reader:
            return list(reader)

    tensors = guarded(decode, HurrayFormatError, size=len(payload), bounds=BOUNDS,
                      measure_memory=measure_memory, stats=stats,
                      mem_extra=memory_allowance(kind, payload))
    if tensors is None:
        return False
    check_round_trip(tensors, payload, opts)
    return True


def check_round_trip(tensors: list[Any], payload: bytes, opts: dict[str, Any]) -> None:
    """StreamWriter re-writes the identical bytes, which re-read to equal tensors.

    Raises:
        FuzzFailure: the bytes or tensors differ, or the rewrite fails.
    """
    out = io.BytesIO()
    try:
        with StreamWriter(out) as writer:
            for t in tensors:
                writer.write(t)
        again = out.getvalue()
    except Exception as exc:
        raise FuzzFailure(f"a stream that read does not re-write: {exc!r}") from exc
    if again != payload:
        raise FuzzFailure(f"re-writing changed the stream ({len(payload)} -> {len(again)} bytes)")
    try:
        with StreamReader(again, **opts) as reader:
            back = list(reader)
    except Exception as exc:
        raise FuzzFailure(f"a re-written stream does not re-read: {exc!r}") from exc
    if back != tensors:
        raise FuzzFailure("a re-written stream re-read to different tensors")


HARNESS = Harness(NAME, lambda: list(seeds.stream_seeds()), one_input)
