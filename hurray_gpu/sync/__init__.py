"""Streams, events, handoff (Hurray spec, Buffer Protocol) and DLPack exchange."""

from __future__ import annotations

from hurray_gpu.format.descriptor.buffers import SyncMode
from hurray_gpu.runtime.stream import Event, Stream, current_stream

__all__ = ["Event", "Stream", "SyncMode", "current_stream"]
