"""The null device: no memory, no compiler, launches recorded; for scheduling and cache tests.

Its programs do nothing; its compiler "compiles" host C text into itself, counted and cached.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np

from hurray_gpu.errors import DeviceError
from hurray_gpu.runtime.device import Device
from hurray_gpu.runtime.memory import Allocation, Allocator, MemoryClass
from hurray_gpu.runtime.program import Compiler, Program

__all__ = ["DEVICE", "NullAllocator", "NullCompiler", "NullDevice", "NullProgram", "check"]

# Recorded launches and copies kept per device; older entries are dropped.
MAX_RECORDS = 1024


def check(status: int, what: str = "null call") -> None:
    """Raise DeviceError for a non-zero status."""
    if status != 0:
        raise DeviceError(f"{what} failed with status {status}",
                          fix="the null device only records calls; pass it valid arguments.")


class NullAllocator(Allocator):
    """Hands out integer handles; copies are recorded and move no data (copyout writes 0s)."""

    stores_data = False  # stores nothing, so debug canaries could never read back

    def __init__(self, device: Device) -> None:
        super().__init__(device)
        self._ids = itertools.count(1)
        self.records: deque[tuple[str, int]] = deque(maxlen=MAX_RECORDS)

    def _alloc(self, nbytes: int, memory_class: MemoryClass) -> int:
        return next(self._ids)

    def _free(self, raw: Any, nbytes: int, memory_class: MemoryClass) -> None:
        self.records.append(("free", nbytes))

    def _copyin(self, raw: Any, src: memoryview) -> None:
        self.records.append(("copyin", src.nbytes))

    def _copyout(self, dest: memoryview, raw: Any) -> None:
        dest[:] = bytes(dest.nbytes)
        self.records.append(("copyout", dest.nbytes))

    def _offset(self, raw: Any, offset: int, nbytes: int) -> Any:
        return (raw, offset)


class NullCompiler(Compiler):
    """Returns the source bytes as the binary; counts compiles like a real compiler."""

    backend = "null"

    def version(self) -> str:
        return "null-1"

    def compile(self, source: str, options: Sequence[str] = ()) -> bytes:
        return source.encode()


class NullProgram(Program):
    """Records ``(kernel name, global size)`` and does nothing."""

    def _launch(self, buffers: list[Allocation], scalars: Sequence[np.generic],
                global_size: tuple[int, int, int], local_size: tuple[int, int, int],
                wait: bool) -> float | None:
        device: NullDevice = self.device  # type: ignore[assignment]
        device.launches.append((self.kernel.name, global_size))
        return 0.0 if wait else None


class NullDevice(Device):
    """Device ``"null"``: offers every memory class; renders host C; runs nothing."""

    tag = 0x00
    kind = "null"
    dialect = "c"
    program_cls = NullProgram

    def __init__(self, index: int = 0) -> None:
        self.launches: deque[tuple[str, tuple[int, int, int]]] = deque(maxlen=MAX_RECORDS)
        super().__init__(index, "null", NullAllocator(self), NullCompiler("null"),
                         tuple(MemoryClass))

    @classmethod
    def count(cls) -> int:
        return 1


DEVICE = NullDevice
