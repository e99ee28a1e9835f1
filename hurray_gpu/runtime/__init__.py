"""The runtime core: memory, compilation, launches, streams and events, buffers, devices.

Bottom to top (each module imports only those before it): ``cache`` (kernel binaries in memory
and on disk), ``memory`` (Allocation, Allocator), ``registry`` (backends and the one device
resolver), ``stream`` (Stream, Event and their host versions), ``program`` (Compiler,
Program), ``canary`` (the debug bounds checker, as an Allocator and a Program wrapper),
``device`` (Device), ``transfer`` (bounded-chunk copies between devices), ``buffer``
(Buffer). Backends subclass these; nothing here imports a backend except by name, through
the registry.
"""

from __future__ import annotations

from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.device import Device
from hurray_gpu.runtime.memory import Allocation, Allocator, MemoryClass
from hurray_gpu.runtime.program import Compiler, Program, compile_stats
from hurray_gpu.runtime.registry import (
    default_device,
    describe_devices,
    devices,
    is_available,
    resolve_device,
)
from hurray_gpu.runtime.stream import Event, Stream, current_stream

__all__ = [
    "Allocation",
    "Allocator",
    "Buffer",
    "Compiler",
    "Device",
    "Event",
    "MemoryClass",
    "Program",
    "Stream",
    "compile_stats",
    "current_stream",
    "default_device",
    "describe_devices",
    "devices",
    "is_available",
    "resolve_device",
]
