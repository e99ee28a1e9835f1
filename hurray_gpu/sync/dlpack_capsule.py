"""DLPack capsules with C-level lifetimes (NumPy's own capsule destructor and deleter): no
Python destructor, no sweep, no leak; a packed header template makes an export one memmove.
"""

from __future__ import annotations

import ctypes
import itertools
import struct
from typing import Any

import numpy as np

from hurray_gpu.sync.dlpack_types import (
    FLAG_IS_COPIED,
    FLAG_READ_ONLY,
    DLManagedTensor,
    DLManagedTensorVersioned,
    DLPackError,
)

__all__ = ["NAME_LEGACY", "NAME_VERSIONED", "Template", "live_exports"]

NAME_LEGACY, NAME_VERSIONED = b"dltensor", b"dltensor_versioned"
_api = ctypes.pythonapi
_malloc = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_size_t)(("PyMem_Malloc", _api))
_mem_free = ctypes.PYFUNCTYPE(None, ctypes.c_void_p)(("PyMem_Free", _api))
_incref = ctypes.PYFUNCTYPE(None, ctypes.py_object)(("Py_IncRef", _api))
_decref = ctypes.PYFUNCTYPE(None, ctypes.py_object)(("Py_DecRef", _api))
_new_capsule = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_void_p)(("PyCapsule_New", _api))
_get_destructor = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object)(
    ("PyCapsule_GetDestructor", _api))
_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))

# Layouts (DLPack 1.x ABI): legacy = DLTensor(48) + manager_ctx + deleter;
# versioned = version(8) + manager_ctx + deleter + flags + DLTensor(48).
_LEGACY_SIZE, _VERSIONED_SIZE = 64, 80
_TENSOR_HEAD = struct.Struct("<QiiiBBH")  # data, device type/id, ndim, dtype code/bits/lanes
_Q, _QQ = struct.Struct("<Q"), struct.Struct("<QQ")
_CREATED, _FREED = itertools.count(), itertools.count()


def _numpy_hooks(versioned: bool) -> tuple[int, int]:
    """(capsule destructor, DLManagedTensor deleter) addresses of NumPy's exports."""
    name = NAME_VERSIONED if versioned else NAME_LEGACY
    try:
        capsule = np.empty(1, np.uint8).__dlpack__(max_version=(1, 0) if versioned else None)
    except TypeError as exc:  # NumPy < 2.1 has no versioned export
        raise DLPackError(f"NumPy {np.__version__} cannot export DLPack 1.x capsules ({exc})",
                          fix="pip install 'numpy>=2.1'.") from None
    managed = _get_pointer(capsule, name)
    offset = 16 if versioned else 56
    deleter = ctypes.c_void_p.from_address(managed + offset).value
    destructor = _get_destructor(capsule)
    if not destructor or not deleter:
        raise DLPackError("NumPy's DLPack capsules carry no destructor/deleter",
                          fix="install numpy >= 2.1 (hurray_gpu's DLPack export reuses them).")
    return int(destructor), int(deleter)


assert ctypes.sizeof(DLManagedTensor) == _LEGACY_SIZE
assert ctypes.sizeof(DLManagedTensorVersioned) == _VERSIONED_SIZE
_HOOKS: dict[bool, tuple[int, int]] = {}  # filled on first use, so importing stays cheap


class _Export:
    """``manager_ctx`` of one capsule: keeps the memory owner alive until the deleter runs."""

    __slots__ = ("keep",)

    def __init__(self, keep: Any) -> None:
        self.keep = keep
        next(_CREATED)

    def __del__(self, _next: Any = next, _freed: Any = _FREED) -> None:
        # Runs from NumPy's C deleter (pending exceptions are saved by tp_finalize).
        _next(_freed)


def live_exports() -> int:
    """How many exported capsules (or the consumers' arrays) still hold their memory."""
    return int(_CREATED.__reduce__()[1][0]) - int(_FREED.__reduce__()[1][0])


class Template:
    """Everything of one export that does not change per capsule; calling it makes one.

    The capsule destructor and the DLManagedTensor deleter are NumPy's C functions (found
    once through the public capsule API): the destructor calls the deleter of a capsule
    nobody consumed, saving any pending exception around it; the deleter (a no-op once
    ``Py_IsInitialized`` is false, so shutdown is safe) frees the one ``PyMem_Malloc`` block
    holding the struct, shape and strides, then drops ``manager_ctx``.

    Args:
        view: the DLTensor fields (data, device, shape, strides, code, bits, byte_offset,
            readonly, copied, keep).
        version: the DLPack version to produce; None for the legacy capsule.
        copied: the data is a copy made for this export (sets the IS_COPIED flag).
    """

    __slots__ = ("keep", "name", "destructor", "size", "header", "stride_at", "pieces",
                 "versioned")

    def __init__(self, view: dict[str, Any], version: tuple[int, int] | None,
                 copied: bool) -> None:
        shape, strides = tuple(view["shape"]), tuple(view["strides"])
        ndim = len(shape)
        self.versioned = version is not None
        hooks = _HOOKS.get(self.versioned)
        if hooks is None:
            hooks = _HOOKS[self.versioned] = _numpy_hooks(self.versioned)
        destructor, deleter = hooks
        self.destructor, self.keep = destructor, view["keep"]
        self.name = NAME_VERSIONED if self.versioned else NAME_LEGACY
        self.header = _VERSIONED_SIZE if self.versioned else _LEGACY_SIZE
        slots = max(ndim, 1)  # a 0-d tensor still gets valid (unread) shape/strides pointers
        self.stride_at = self.header + 8 * slots
        self.size = self.header + 16 * slots
        dtype_head = _TENSOR_HEAD.pack(int(view["data"]), *view["device"], ndim,
                                       view["code"], view["bits"], 1)
        arrays = struct.pack(f"<{ndim}q{ndim}q", *shape, *strides) if ndim else bytes(16)
        offset = _Q.pack(int(view["byte_offset"]))
        if self.versioned:
            assert version is not None
            flags = (FLAG_READ_ONLY if view["readonly"] else 0) | (
                FLAG_IS_COPIED if copied or view["copied"] else 0)
            # [version | ctx | deleter flags head | shape strides | offset arrays]
            self.pieces = (struct.pack("<II", *version),
                           _Q.pack(deleter) + _Q.pack(flags) + dtype_head, offset + arrays)
        else:
            # [head | shape strides | offset | ctx | deleter arrays]
            self.pieces = (dtype_head, offset, _Q.pack(deleter) + arrays)

    def __call__(self) -> Any:
        """A new capsule over the template's memory (owned by the consumer once consumed).

        Raises:
            DLPackError: the host has no memory left for the 64-100 byte header.
        """
        addr = _malloc(self.size)
        if not addr:
            raise DLPackError("out of host memory for a DLPack header",
                              fix="free memory and retry.")
        ctx = _Export(self.keep)
        pointers = _QQ.pack(addr + self.header, addr + self.stride_at)
        a, b, c = self.pieces
        if self.versioned:
            block = a + _Q.pack(id(ctx)) + b + pointers + c
        else:
            block = a + pointers + b + _Q.pack(id(ctx)) + c
        ctypes.memmove(addr, block, self.size)
        _incref(ctx)  # the deleter's Py_XDECREF(manager_ctx) owns this reference
        try:
            return _new_capsule(addr, self.name, self.destructor)
        except BaseException:
            _decref(ctx)
            _mem_free(addr)
            raise
