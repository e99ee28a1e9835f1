"""Streams, events, handoff (Hurray spec, Buffer Protocol) and DLPack exchange."""

from __future__ import annotations

from hurray_gpu.format.descriptor.buffers import SyncMode
from hurray_gpu.sync.event import Event
from hurray_gpu.sync.stream import Stream, current_stream

__all__ = ["Event", "Stream", "SyncMode", "current_stream"]
