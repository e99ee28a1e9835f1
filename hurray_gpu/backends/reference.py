"""The NumPy reference implementations exposed as device ``"reference"``.

An oracle for tests, never a fallback: nothing picks it unless asked for by name.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from hurray_gpu.backends.cpu import CPUAllocator
from hurray_gpu.dialect.kernel import KernelDef, numpy_dtype
from hurray_gpu.errors import DeviceError, UnsupportedOpError
from hurray_gpu.runtime.cache import NullKernelCache
from hurray_gpu.runtime.device import Device
from hurray_gpu.runtime.memory import Allocation, MemoryClass
from hurray_gpu.runtime.program import Compiler, Program

__all__ = ["DEVICE", "RefAllocator", "RefCompiler", "RefDevice", "RefProgram", "check"]


def check(status: int, what: str = "reference call") -> None:
    """Raise DeviceError for a non-zero status (the reference has no driver; kept for shape)."""
    if status != 0:
        raise DeviceError(f"{what} failed with status {status}",
                          fix="the reference device has no driver; pass it valid arguments.")


class RefAllocator(CPUAllocator):
    """Host memory, exactly as the cpu device."""


class RefCompiler(Compiler):
    """"Compiles" nothing: the binary is the kernel name; no disk cache is involved."""

    backend = "reference"

    def __init__(self, identity: str) -> None:
        super().__init__(identity, cache=NullKernelCache())

    def compile(self, source: str, options: Sequence[str] = ()) -> bytes:
        return source.encode()


class RefProgram(Program):
    """Runs the kernel's NumPy reference on typed views of the device buffers."""

    def _launch(self, buffers: list[Allocation], scalars: Sequence[np.generic],
                global_size: tuple[int, int, int], local_size: tuple[int, int, int],
                wait: bool) -> float | None:
        args: dict[str, Any] = {p.name: s.item() for p, s in zip(self.kernel.scalars, scalars,
                                                                  strict=True)}
        natural = tuple(self.kernel.grid(args)) + (1, 1)
        if tuple(natural[:3]) != global_size:
            raise UnsupportedOpError(
                f"the reference of {self.kernel.name} runs its whole grid {natural[:3]}, "
                f"not {global_size}", fix="omit global_size on the reference device.")
        for param, alloc in zip(self.kernel.buffers, buffers, strict=True):
            dtype = numpy_dtype(param.dtype)
            raw = alloc.raw if alloc.nbytes else np.empty(0, np.uint8)
            usable = alloc.nbytes - alloc.nbytes % dtype.itemsize
            args[param.name] = raw[:usable].view(dtype)
        start = time.perf_counter()
        self.kernel.reference(args)
        return time.perf_counter() - start if wait else None


class RefDevice(Device):
    """Device ``"reference"``: host memory plus the NumPy oracle of every kernel."""

    tag = 0x00
    kind = "reference"
    dialect = "reference"
    program_cls = RefProgram

    def __init__(self, index: int = 0) -> None:
        super().__init__(index, "numpy reference", RefAllocator(self),
                         RefCompiler("reference"), (MemoryClass.STANDARD,))

    @classmethod
    def count(cls) -> int:
        return 1

    @property
    def spec(self) -> str:
        return "reference"

    def render(self, kernel: KernelDef) -> str:
        return f"reference:{kernel.name}"


DEVICE = RefDevice
