"""The neutral kernel description: typed buffer and scalar parameters plus a portable C body.

Bodies use the portable subset documented in :mod:`hurray_gpu.dialect`.
"""

from __future__ import annotations

import functools
import importlib
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.format.dtypes import by_name

__all__ = ["BUFFER_DTYPES", "FLOAT_TYPES", "KERNELS", "SCALAR_DTYPES", "KernelDef", "Param",
           "get_kernel", "kernel_names", "numpy_dtype", "register"]

# Element types a buffer parameter may have. 16-bit floats are storage-only: bodies load them
# as f32 and store f32 (pocl and GLSL 450 core have no fp16 arithmetic).
# Values are Hurray element type names (bfloat16's NumPy type loads ml_dtypes on first use).
BUFFER_DTYPES: dict[str, str] = {
    "u8": "uint8", "i8": "int8", "u16": "uint16", "i16": "int16",
    "u32": "uint32", "i32": "int32", "f32": "float32",
    "f16": "float16", "bf16": "bfloat16",
}
# Hurray float output types -> kernel buffer types: the dtypes every dequantize, convert and
# overlay kernel can write.
FLOAT_TYPES: dict[str, str] = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}
# Scalars are one 32-bit word each so every backend can pass them the same way
# (ctypes array, kernel args, or Vulkan push constants).
SCALAR_DTYPES: dict[str, Any] = {"u32": np.uint32, "i32": np.int32, "f32": np.float32}
ACCESS = ("r", "w", "rw")
BUILTIN_KERNELS = "hurray_gpu.kernels"
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,30}$")
# Names the renderers use themselves, or that are keywords in one of the dialects.
_RESERVED = frozenset({
    "n_", "gid", "main", "buffer", "uniform", "in", "out", "inout", "half", "float", "int",
    "uint", "char", "short", "long", "double", "kernel", "global", "local", "constant",
    "private", "shared", "sample", "input", "output", "filter", "common", "partition",
    "active", "pc", "u8", "i8", "u16", "i16", "u32", "i32", "f32", "f16", "bf16",
})


def numpy_dtype(name: str) -> np.dtype[Any]:
    """Return the NumPy dtype of a kernel element type name (``"f16"`` etc.)."""
    if name in BUFFER_DTYPES:
        return by_name(BUFFER_DTYPES[name]).numpy  # type: ignore[return-value]
    if name not in SCALAR_DTYPES:
        raise ValueError(f"unknown kernel dtype {name!r}; expected one of "
                         f"{sorted({**BUFFER_DTYPES, **SCALAR_DTYPES})}")
    return np.dtype(SCALAR_DTYPES[name])


@dataclass(frozen=True)
class Param:
    """One kernel parameter.

    Args:
        name: lowercase identifier used in the body.
        dtype: element type (buffers) or scalar type.
        kind: ``"buffer"`` or ``"scalar"``.
        access: for buffers, ``"r"``, ``"w"`` or ``"rw"``.
    """

    name: str
    dtype: str
    kind: str = "buffer"
    access: str = "r"

    def __post_init__(self) -> None:
        if not _NAME.match(self.name) or self.name in _RESERVED or self.name.startswith("hg_"):
            raise ValueError(f"bad kernel parameter name {self.name!r}")
        table = BUFFER_DTYPES if self.kind == "buffer" else SCALAR_DTYPES
        if self.kind not in ("buffer", "scalar") or self.dtype not in table:
            raise ValueError(f"bad {self.kind} parameter {self.name}: {self.dtype}")
        if self.kind == "buffer" and self.access not in ACCESS:
            raise ValueError(f"bad access {self.access!r} for {self.name}")

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return numpy_dtype(self.dtype).itemsize


def buf(name: str, dtype: str, access: str = "r") -> Param:
    """Shorthand for a buffer parameter."""
    return Param(name, dtype, "buffer", access)


def scalar(name: str, dtype: str = "u32") -> Param:
    """Shorthand for a scalar parameter."""
    return Param(name, dtype, "scalar")


GridFn = Callable[[Mapping[str, Any]], tuple[int, ...]]
ExtentFn = Callable[[Mapping[str, Any]], Mapping[str, int]]
ReferenceFn = Callable[[dict[str, Any]], None]
# A KernelDef tag: each work item walks a long run of elements (the dequant kernels' ``ept``,
# about a thousand on CPUs), so host C hands a thread fewer items at a time (see cstyle.py).
LONG_ITEMS = "long_items"


@dataclass(frozen=True)
class KernelDef:
    """A kernel written once in the portable C subset.

    Args:
        name: the entry point name (lowercase identifier).
        params: buffers and scalars, in call order.
        body: the portable C body; ``return`` ends the work item.
        grid: maps scalar values to the 1-3 dimensional global size (in work items).
        extents: maps scalar values to the minimum element count of each buffer, checked
            before every launch so a kernel never reads or writes outside its buffers.
        reference: NumPy implementation; receives a dict of 1-D typed arrays (buffers) and
            Python numbers (scalars) and writes its outputs in place.
        local_size: the work-group shape (fixed at compile time; GLSL needs it there).
        doc: one line saying what the kernel does.
        shared: work-group memory, ``(name, count)`` arrays of u32 words, reached with
            LOAD/STORE like buffers; contents are undefined until the body writes them.
        private: per-work-item arrays, ``(name, type, count)`` with type u32, i32 or f32,
            reached with LOAD/STORE like buffers (no atomics); contents are undefined until
            the body writes them. Keep them small (GPUs spill dynamically indexed ones to
            local memory).
    """

    name: str
    params: tuple[Param, ...]
    body: str
    grid: GridFn
    extents: ExtentFn
    reference: ReferenceFn
    local_size: tuple[int, int, int] = (64, 1, 1)
    doc: str = ""
    tags: tuple[str, ...] = field(default=())
    shared: tuple[tuple[str, int], ...] = field(default=())
    private: tuple[tuple[str, str, int], ...] = field(default=())

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"bad kernel name {self.name!r}")
        for name, count in self.shared:
            if not _NAME.match(name) or name in _RESERVED or not 1 <= count <= 2**20:
                raise ValueError(f"kernel {self.name}: bad shared array {name!r}[{count}]")
        for name, dtype, count in self.private:
            if (not _NAME.match(name) or name in _RESERVED or name.startswith("hg_")
                    or dtype not in SCALAR_DTYPES or not 1 <= count <= 1024):
                raise ValueError(f"kernel {self.name}: bad private array {dtype} {name}[{count}]")
        names = [p.name for p in self.params] + [name for name, _ in self.shared]
        names += [name for name, _, _ in self.private]
        if len(set(names)) != len(names):
            raise ValueError(f"kernel {self.name}: duplicate parameter names {names}")
        if len(self.local_size) != 3 or any(d < 1 for d in self.local_size):
            raise ValueError(f"kernel {self.name}: bad local_size {self.local_size}")

    @functools.cached_property
    def buffers(self) -> tuple[Param, ...]:
        """The buffer parameters, in order (their binding order on every backend)."""
        return tuple(p for p in self.params if p.kind == "buffer")

    @functools.cached_property
    def scalars(self) -> tuple[Param, ...]:
        """The scalar parameters, in order (their push-constant/word order)."""
        return tuple(p for p in self.params if p.kind == "scalar")


# Every kernel by name: the built-in ones register when hurray_gpu.kernels is imported (a
# lookup by name imports it first), so ``device.run("fill_u32", ...)`` finds them.
KERNELS: dict[str, KernelDef] = {}


def register(kernel: KernelDef) -> KernelDef:
    """Add ``kernel`` to the registry and return it.

    Raises:
        ValueError: a different kernel of the same name is already registered.
    """
    existing = KERNELS.get(kernel.name)
    if existing is not None and existing is not kernel:
        raise ValueError(f"kernel {kernel.name!r} is already registered")
    KERNELS[kernel.name] = kernel
    return kernel


def get_kernel(name: str) -> KernelDef:
    """Return the registered kernel called ``name``.

    Raises:
        UnsupportedOpError: no such kernel.
    """
    kernel = KERNELS.get(name) or _builtins().get(name)
    if kernel is None:
        raise UnsupportedOpError(f"no kernel named {name!r}",
                                 fix=f"use one of {sorted(KERNELS)}.")
    return kernel


def kernel_names() -> list[str]:
    """The registered kernel names, sorted (the built-in kernels included)."""
    return sorted(_builtins())


def _builtins() -> dict[str, KernelDef]:
    # The built-in kernels register themselves when their package (a higher layer) is
    # imported; a lookup by name must find them even if nothing imported it yet. This is the
    # one by-name load from a higher layer (docs/architecture.md).
    if BUILTIN_KERNELS not in sys.modules:
        importlib.import_module(BUILTIN_KERNELS)
    return KERNELS
