"""DLPack export: ``Tensor.__dlpack__`` builds a (versioned or legacy) capsule over the buffers.

Zero-copy: the DLTensor points at buffer 0 with the descriptor's byte_offset applied; the
capsule keeps the tensor alive until the consumer calls the deleter (or drops the capsule).
"""

from __future__ import annotations

import ctypes
import sys
import threading
from typing import Any

import numpy as np

from hurray_gpu.format.descriptor.buffers import DeviceTag
from hurray_gpu.sync.dlpack_types import (
    DELETER,
    DLPACK_VERSION,
    FLAG_IS_COPIED,
    FLAG_READ_ONLY,
    KDL_CPU,
    DLManagedTensor,
    DLManagedTensorVersioned,
    DLPackError,
    dlpack_device,
)

__all__ = ["export"]

_LIVE: dict[int, Any] = {}  # managed-tensor address -> what it keeps alive
_LIVE_LOCK = threading.Lock()
NAME_LEGACY, NAME_VERSIONED = b"dltensor", b"dltensor_versioned"

# No capsule destructor: a Python-level one would run while a consumer that rejected the
# capsule still has its exception pending, and clobber it. Abandoned capsules are found instead
# by a sweep (only our own references left, name still unconsumed) and freed there.
_new_capsule = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_void_p)(("PyCapsule_New", ctypes.pythonapi))
_get_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(
    ("PyCapsule_GetName", ctypes.pythonapi))
_PENDING: list[tuple[Any, int]] = []  # (capsule, managed address) not yet seen consumed
_ORPHAN_REFS = 3  # the pending tuple, the local variable and getrefcount's argument


@DELETER
def _deleter(address: int) -> None:
    # Called by the consumer (possibly from another thread) when it is done with the memory.
    with _LIVE_LOCK:
        _LIVE.pop(address, None)


def sweep() -> None:
    """Forget consumed capsules and free the ones nobody holds any more (unconsumed)."""
    with _LIVE_LOCK:
        pending = list(_PENDING)
        _PENDING.clear()
    keep, orphans = [], []
    for entry in pending:
        capsule = entry[0]
        if _get_name(capsule) not in (NAME_LEGACY, NAME_VERSIONED):
            continue  # consumed: the consumer now owns it and calls the deleter
        if sys.getrefcount(capsule) <= _ORPHAN_REFS:
            orphans.append(entry[1])
        else:
            keep.append(entry)
        del capsule
    with _LIVE_LOCK:
        _PENDING.extend(keep)
    for address in orphans:
        _deleter(address)


def _consumer_version(max_version: Any) -> tuple[int, int] | None:
    """The version to produce (None: the legacy unversioned capsule)."""
    if max_version is None:
        return None
    try:
        major, minor = (int(v) for v in max_version)
    except (TypeError, ValueError):
        raise DLPackError(f"max_version must be a (major, minor) pair, got {max_version!r}",
                          fix="pass max_version=(1, 1) or None.") from None
    if major < 1:
        return None
    return DLPACK_VERSION if (major, minor) >= DLPACK_VERSION else (1, 0)


def check_stream(device_type: int, stream: Any) -> None:
    """Reject stream values the DLPack convention does not allow for ``device_type``.

    Raises:
        DLPackError: a stream for the CPU other than None/-1, or a non-integer stream.
    """
    if stream is None:
        return
    if isinstance(stream, bool) or not isinstance(stream, int):
        raise DLPackError(f"stream must be None or an int, got {stream!r}",
                          fix="pass the consumer stream's integer handle, -1 or None.")
    if device_type == KDL_CPU and stream != -1:
        raise DLPackError(f"stream={stream} is not valid for a CPU tensor",
                          fix="pass stream=None (or -1) for CPU tensors.")


def export(t: Any, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
           copy: bool | None = None) -> Any:
    """Implement ``Tensor.__dlpack__``; see :meth:`hurray_gpu.Tensor.__dlpack__`."""
    if copy not in (None, True, False):
        raise DLPackError(f"copy must be None, True or False, got {copy!r}",
                          fix="pass copy=None.")
    version = _consumer_version(max_version)
    own = dlpack_device(t)
    check_stream(own[0], stream)
    copied = False
    if dl_device is not None and tuple(dl_device) != own:
        if tuple(dl_device) != (KDL_CPU, 0) or copy is False:
            raise DLPackError(f"cannot export a tensor on DLPack device {own} to {dl_device}",
                              fix="export on its own device, or pass dl_device=(1, 0) with "
                                  "copy=True or None for a host copy.")
        t, copied = t.to("cpu"), True
    if not t.is_host:
        tag = t.descriptor.buffers[0].device_tag
        if tag in (DeviceTag.CUDA, DeviceTag.ROCM):
            from hurray_gpu.sync.dlpack_cuda import device_view

            view = device_view(t, stream, version, copy)
            return _capsule(view, version, copied)
        raise DLPackError(
            f"{t.device} buffers are opaque handles, not pointers DLPack consumers can use",
            fix="call .to('cpu') first, or __dlpack__(dl_device=(1, 0), copy=True).")
    from hurray_gpu.sync.dlpack_host import host_view

    return _capsule(host_view(t, version, copy), version, copied)


def _capsule(view: dict[str, Any], version: tuple[int, int] | None, copied: bool) -> Any:
    """Wrap ``view`` (data, device, shape, strides, code, bits, byte_offset, flags, keep)."""
    shape = (ctypes.c_int64 * max(1, len(view["shape"])))(*view["shape"])
    strides = (ctypes.c_int64 * max(1, len(view["strides"])))(*view["strides"])
    managed = DLManagedTensorVersioned() if version is not None else DLManagedTensor()
    dl = managed.dl_tensor
    dl.data = view["data"]
    dl.device.device_type, dl.device.device_id = view["device"]
    dl.ndim = len(view["shape"])
    dl.dtype.code, dl.dtype.bits, dl.dtype.lanes = view["code"], view["bits"], 1
    dl.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    dl.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
    dl.byte_offset = view["byte_offset"]
    managed.deleter = _deleter
    address = ctypes.addressof(managed)
    if version is not None:
        managed.version.major, managed.version.minor = version
        flags = FLAG_READ_ONLY if view["readonly"] else 0
        managed.flags = flags | (FLAG_IS_COPIED if copied or view["copied"] else 0)
    with _LIVE_LOCK:
        _LIVE[address] = (managed, shape, strides, view["keep"])
    name = NAME_VERSIONED if version is not None else NAME_LEGACY
    sweep()
    capsule = _new_capsule(address, name, None)
    with _LIVE_LOCK:
        _PENDING.append((capsule, address))
    return capsule


def live_exports() -> int:
    """How many exported capsules are still holding their tensors (for leak checks)."""
    sweep()
    with _LIVE_LOCK:
        return len(_LIVE)


def as_uint8(array: np.ndarray) -> np.ndarray:
    """A 1-D uint8 view of a contiguous array."""
    return array.reshape(-1).view(np.uint8)
