"""DLPack export: the ABI (ctypes structs, dtype codes) and the Hurray <-> DLPack device table
(docs/format.md, DLPack device mapping), capsules with C-level lifetimes, ``Tensor.__dlpack__``
for host and CUDA/ROCm tensors, and explicit views for consumers with their own rules.

Capsules: the destructor and the DLManagedTensor deleter are a few lines of C (``HELPER_C``)
built once by the cpu backend's compiler and cached like a kernel. The C code reaches the
interpreter only through a table of C-API function pointers filled at load, so it needs no
Python headers and no NumPy. An export is one C call: it copies a packed header template,
patches its pointers, and wraps it in a capsule. Zero-copy: the DLTensor points at buffer 0
with the descriptor's byte_offset applied; the capsule keeps the tensor alive until the
consumer calls the deleter (or drops the capsule).

CUDA/ROCm stream values follow the DLPack / array-API convention: None = legacy default,
-1 = no synchronization, CUDA 1 = legacy default, 2 = per-thread default, > 2 = a stream pointer
(0 is invalid); ROCm 0 = default stream, > 2 = a pointer (1 and 2 are invalid). The consumer's
stream is ordered, with an event, after what a handed-off tensor's handoff declares (its event
or its declared streams) and otherwise after the current stream. Pinned and managed memory
exported to a consumer that passes no stream (NumPy reads it on the host) waits for that
order on the host; the producer never synchronizes the whole device.
"""

from __future__ import annotations

import contextlib
import ctypes
import platform
import struct
import tempfile
import threading
from typing import Any

import numpy as np

from hurray_gpu.errors import HurrayGPUError
from hurray_gpu.format.descriptor.buffers import DeviceTag, MemoryClass, SyncMode
from hurray_gpu.runtime.hostmem import aligned_copy
from hurray_gpu.runtime.stream import current_stream
from hurray_gpu.sync.handoff import order_after

__all__ = [
    "DLDataType", "DLDevice", "DLManagedTensor", "DLManagedTensorVersioned", "DLPackError",
    "DLPackVersion", "DLPackView", "DLTensor", "NAME_LEGACY", "NAME_VERSIONED", "Template",
    "consumer_stream_handle", "device_view", "dlpack_device", "dlpack_view", "dtype_code",
    "element_strides", "export", "host_view", "hurray_dtype", "hurray_place", "live_exports",
]


# The DLPack version this module produces and understands.
DLPACK_VERSION = (1, 1)
FLAG_READ_ONLY = 1 << 0
FLAG_IS_COPIED = 1 << 1
FLAG_SUBBYTE_PADDED = 1 << 2

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_OPENCL, KDL_VULKAN = 1, 2, 3, 4, 7
KDL_METAL, KDL_ROCM, KDL_ROCM_HOST, KDL_CUDA_MANAGED = 8, 10, 11, 13
KDL_ONEAPI, KDL_WEBGPU, KDL_HEXAGON = 14, 15, 16
# Device memory the host reads in place (NumPy takes these, passing no stream).
HOST_READABLE = (KDL_CUDA_HOST, KDL_ROCM_HOST, KDL_CUDA_MANAGED)


class DLPackError(HurrayGPUError, BufferError):
    """A tensor, dtype, device or stream that DLPack cannot carry (a builtin BufferError)."""

    default_fix = "call .materialize() or .to('cpu') first, or use the native Hurray transport."


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensor(ctypes.Structure):
    pass


class DLManagedTensorVersioned(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", DELETER)]
DLManagedTensorVersioned._fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                                     ("deleter", DELETER), ("flags", ctypes.c_uint64),
                                     ("dl_tensor", DLTensor)]

_S, _P, _U, _R = (MemoryClass.STANDARD, MemoryClass.HOST_PINNED, MemoryClass.UNIFIED,
                  MemoryClass.PEER)
# (device_tag, memory_class) -> DLPack device type; absent pairs are invalid or unsupported.
_TO_DL: dict[tuple[int, int], int] = {
    (DeviceTag.CPU, _S): KDL_CPU, (DeviceTag.CPU, _P): KDL_CPU, (DeviceTag.CPU, _U): KDL_CPU,
    (DeviceTag.CUDA, _S): KDL_CUDA, (DeviceTag.CUDA, _P): KDL_CUDA_HOST,
    (DeviceTag.CUDA, _U): KDL_CUDA_MANAGED,
    (DeviceTag.ROCM, _S): KDL_ROCM, (DeviceTag.ROCM, _P): KDL_ROCM_HOST,
    **{(DeviceTag.METAL, c): KDL_METAL for c in (_S, _P, _U)},
    **{(DeviceTag.VULKAN, c): KDL_VULKAN for c in (_S, _P, _U)},
    (DeviceTag.WEBGPU, _S): KDL_WEBGPU,
    **{(DeviceTag.HEXAGON, c): KDL_HEXAGON for c in (_S, _P, _U)},
    **{(DeviceTag.LEVEL_ZERO, c): KDL_ONEAPI for c in (_S, _P, _U)},
    **{(DeviceTag.OPENCL, c): KDL_OPENCL for c in (_S, _P, _U)},
}
_FROM_DL: dict[int, tuple[int, int]] = {
    KDL_CPU: (DeviceTag.CPU, _S), KDL_CUDA: (DeviceTag.CUDA, _S),
    KDL_CUDA_HOST: (DeviceTag.CUDA, _P), KDL_CUDA_MANAGED: (DeviceTag.CUDA, _U),
    KDL_ROCM: (DeviceTag.ROCM, _S), KDL_ROCM_HOST: (DeviceTag.ROCM, _P),
    KDL_OPENCL: (DeviceTag.OPENCL, _S), KDL_VULKAN: (DeviceTag.VULKAN, _S),
}


def dl_code(device_tag: int, memory_class: int) -> int:
    """The DLPack device type of a (device_tag, memory_class) pair.

    Raises:
        DLPackError: private tags, and pairs the mapping marks invalid or refused.
    """
    code = _TO_DL.get((int(device_tag), int(memory_class)))
    if code is None:
        raise DLPackError(
            f"device_tag 0x{int(device_tag):02X} with memory_class {int(memory_class)} has no "
            "DLPack device type", fix="move the tensor to standard memory or use the native "
                                      "Hurray transport (__hurray__).")
    return code


def dlpack_device(t: Any) -> tuple[int, int]:
    """``(DLDeviceType, device_id)`` of a tensor's buffers (the cpu for a bufferless one)."""
    handles = t.descriptor.buffers
    if not handles:
        return (KDL_CPU, 0)
    h = handles[0]
    index = 0 if t.is_host else int(t.device.index)
    return (dl_code(h.device_tag, h.memory_class), index)


def hurray_place(device_type: int) -> tuple[int, int]:
    """The (device_tag, memory_class) a DLPack device type imports as.

    Raises:
        DLPackError: device types hurray_gpu cannot hold.
    """
    place = _FROM_DL.get(int(device_type))
    if place is None:
        raise DLPackError(f"DLPack device type {device_type} is not supported",
                          fix="copy the array to the CPU before importing it.")
    return place


# Hurray dtype name -> (DLPack code, bits); the float8/6/4 codes need DLPack >= 1.1.
_DTYPE_CODES: dict[str, tuple[int, int]] = {
    "int8": (0, 8), "int16": (0, 16), "int32": (0, 32), "int64": (0, 64),
    "uint8": (1, 8), "uint16": (1, 16), "uint32": (1, 32), "uint64": (1, 64),
    "float16": (2, 16), "float32": (2, 32), "float64": (2, 64), "bfloat16": (4, 16),
    "complex64": (5, 64), "complex128": (5, 128), "bool": (6, 8),
    "int4": (0, 4), "uint4": (1, 4), "int2": (0, 2), "uint2": (1, 2),
    "float8_e4m3": (10, 8), "float8_e5m2": (12, 8), "float8_e8m0": (14, 8),
    "float6_e2m3": (15, 6), "float6_e3m2": (16, 6), "float4_e2m1": (17, 4),
}
_NEEDS_1_1 = {"float8_e4m3", "float8_e5m2", "float8_e8m0", "float6_e2m3", "float6_e3m2",
              "float4_e2m1", "int4", "uint4", "int2", "uint2"}
_FROM_CODES = {v: k for k, v in _DTYPE_CODES.items()}


def dtype_code(name: str, version: tuple[int, int]) -> tuple[int, int]:
    """The (code, bits) of a Hurray dtype for a consumer of DLPack ``version``.

    Raises:
        DLPackError: no DLPack code, or one newer than the consumer understands.
    """
    code = _DTYPE_CODES.get(name)
    if code is None:
        raise DLPackError(f"{name} has no DLPack dtype code",
                          fix="export the raw bytes (t.buffers) or convert to float64 first.")
    if name in _NEEDS_1_1 and version < (1, 1):
        raise DLPackError(
            f"{name} needs DLPack >= 1.1 but the consumer asked for {version[0]}.{version[1]}",
            fix="pass max_version=(1, 1), export a same-width uint view, or call "
                ".unpack('float32') first.")
    return code


def hurray_dtype(code: int, bits: int, lanes: int) -> str:
    """The Hurray dtype name of a DLPack (code, bits, lanes).

    Raises:
        DLPackError: vector lanes or codes without a Hurray type.
    """
    name = _FROM_CODES.get((int(code), int(bits)))
    if lanes != 1 or name is None:
        raise DLPackError(f"DLPack dtype (code {code}, bits {bits}, lanes {lanes}) has no "
                          "Hurray type", fix="convert the array to a standard dtype first.")
    return name


NAME_LEGACY, NAME_VERSIONED = b"dltensor", b"dltensor_versioned"
# Layouts (DLPack 1.x ABI, 64-bit pointers): legacy = DLTensor(48) + manager_ctx + deleter;
# versioned = version(8) + manager_ctx + deleter + flags + DLTensor(48). HELPER_C hard-codes
# the same offsets; shape and strides follow the header in the same block.
assert ctypes.sizeof(DLManagedTensor) == 64 and ctypes.sizeof(DLManagedTensorVersioned) == 80
_TENSOR_HEAD = struct.Struct("<QiiiBBH")  # data, device type/id, ndim, dtype code/bits/lanes
_Q = struct.Struct("<Q")

# The interpreter functions HELPER_C calls, in the order of its `api` struct.
_API = ("Py_IsInitialized", "PyGILState_Ensure", "PyGILState_Release", "PyMem_Malloc",
        "PyMem_Free", "Py_IncRef", "Py_DecRef", "PyCapsule_New", "PyCapsule_IsValid",
        "PyCapsule_GetPointer", "PyErr_Fetch", "PyErr_Restore", "PyErr_NoMemory")
HELPER_C = r"""
#include <stddef.h>
#include <string.h>
typedef struct hg_object PyObject; /* opaque: only passed through */
typedef void (*hg_destructor)(PyObject *);
_Static_assert(sizeof(void *) == 8, "DLPack headers are laid out for 64-bit pointers");
static struct { /* _API's functions, in order; PyGILState_STATE is an int-sized enum */
    int (*is_initialized)(void); int (*gil_ensure)(void); void (*gil_release)(int);
    void *(*mem_malloc)(size_t); void (*mem_free)(void *);
    void (*incref)(PyObject *); void (*decref)(PyObject *);
    PyObject *(*capsule_new)(void *, const char *, hg_destructor);
    int (*capsule_is_valid)(PyObject *, const char *);
    void *(*capsule_get_pointer)(PyObject *, const char *);
    void (*err_fetch)(PyObject **, PyObject **, PyObject **);
    void (*err_restore)(PyObject *, PyObject *, PyObject *);
    PyObject *(*err_no_memory)(void);
} api;
static long long created, freed;
void hg_dlpack_init(void *const *table) { memcpy(&api, table, sizeof api); }
long long hg_dlpack_live(void) {
    return __atomic_load_n(&created, __ATOMIC_RELAXED) - __atomic_load_n(&freed, __ATOMIC_RELAXED);
}

/* The DLManagedTensor deleter: any thread, GIL held or not. Once the interpreter is
   finalizing (or gone) nothing of Python may be touched: the block and its reference leak. */
static void release(unsigned char *block, size_t ctx_at) {
    PyObject *ctx, *type, *value, *trace;
    if (!api.is_initialized()) return;
    int state = api.gil_ensure();
    api.err_fetch(&type, &value, &trace); /* the decref may run Python code */
    memcpy(&ctx, block + ctx_at, sizeof ctx);
    api.mem_free(block);
    api.decref(ctx);
    __atomic_add_fetch(&freed, 1, __ATOMIC_RELAXED);
    api.err_restore(type, value, trace);
    api.gil_release(state);
}
static void delete_legacy(void *block) { release(block, 48); }
static void delete_versioned(void *block) { release(block, 8); }

/* The capsule destructor: a consumer renames the capsule ("used_...") when it takes
   ownership; only an unconsumed capsule calls its tensor's deleter. */
static void destroy(PyObject *capsule) {
    unsigned char *block;
    void (*deleter)(void *);
    size_t at = 56;
    if (api.capsule_is_valid(capsule, "dltensor")) {
        block = api.capsule_get_pointer(capsule, "dltensor");
    } else if (api.capsule_is_valid(capsule, "dltensor_versioned")) {
        block = api.capsule_get_pointer(capsule, "dltensor_versioned"), at = 16;
    } else {
        return;
    }
    memcpy(&deleter, block + at, sizeof deleter);
    if (deleter) deleter(block);
}

/* One capsule from a header template (GIL held): the block is the template with the shape,
   strides, manager_ctx (a new reference to keep) and deleter pointers filled in. */
PyObject *hg_dlpack_export(const unsigned char *tmpl, int versioned, PyObject *keep) {
    size_t header = versioned ? 80 : 64, shape_at = versioned ? 56 : 24;
    void (*deleter)(void *) = versioned ? delete_versioned : delete_legacy;
    int ndim;
    memcpy(&ndim, tmpl + shape_at - 8, sizeof ndim);
    size_t slots = ndim > 0 ? (size_t)ndim : 1;
    unsigned char *block = api.mem_malloc(header + 16 * slots), *at;
    if (!block) return api.err_no_memory();
    memcpy(block, tmpl, header + 16 * slots);
    at = block + header, memcpy(block + shape_at, &at, sizeof at);
    at = block + header + 8 * slots, memcpy(block + shape_at + 8, &at, sizeof at);
    memcpy(block + (versioned ? 8 : 48), &keep, sizeof keep);
    memcpy(block + (versioned ? 16 : 56), &deleter, sizeof deleter);
    PyObject *capsule = api.capsule_new(block, versioned ? "dltensor_versioned" : "dltensor",
                                        destroy);
    if (!capsule) { api.mem_free(block); return NULL; }
    api.incref(keep);
    __atomic_add_fetch(&created, 1, __ATOMIC_RELAXED);
    return capsule;
}
"""
_HELPER: list[Any] = []  # [export function, live counter], once loaded
_LOCK = threading.Lock()


def _load() -> list[Any]:
    from hurray_gpu.backends.cpu import CPUCompiler
    from hurray_gpu.backends.hostcc import INSTALL_FIX

    try:
        binary = CPUCompiler(f"dlpack-helper|{platform.machine()}").compile_cached(
            HELPER_C, ("-O2", "-std=c11"))
    except HurrayGPUError as exc:
        raise DLPackError(f"the DLPack capsule helper could not be built: {exc}",
                          fix=INSTALL_FIX) from exc
    with tempfile.NamedTemporaryFile(prefix="hurray_gpu_dlpack_", suffix=".so") as handle:
        handle.write(binary)
        handle.flush()
        # Never unloaded (ctypes does not dlclose): consumers may call the deleter until exit.
        lib = ctypes.CDLL(handle.name)
    table = (ctypes.c_void_p * len(_API))(
        *[ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value for name in _API])
    lib.hg_dlpack_init(table)
    export = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_char_p, ctypes.c_int,
                               ctypes.py_object)(("hg_dlpack_export", lib))
    return [export, ctypes.PYFUNCTYPE(ctypes.c_longlong)(("hg_dlpack_live", lib))]


def _helper() -> list[Any]:
    """``[export(template, versioned, keep) -> capsule, live() -> int]`` from the C helper.

    Raises:
        DLPackError: no C compiler to build it (the first time on this machine).
    """
    if not _HELPER:
        with _LOCK:
            if not _HELPER:
                _HELPER.extend(_load())
    return _HELPER


def live_exports() -> int:
    """How many exported capsules (or the consumers' arrays) still hold their memory."""
    return int(_helper()[1]()) if _HELPER else 0


class Template:
    """Everything of one export that does not change per capsule; calling it makes one.

    The capsule destructor calls the deleter of a capsule nobody consumed (one renamed
    ``used_dltensor``/``used_dltensor_versioned`` was consumed and is left alone); the deleter
    (a no-op once ``Py_IsInitialized`` is false, so shutdown is safe; it takes the GIL from any
    thread) frees the one ``PyMem_Malloc`` block holding the struct, shape and strides, then
    drops ``manager_ctx``, a reference to the memory's owner.

    Args:
        view: the DLTensor fields (data, device, shape, strides, code, bits, byte_offset,
            readonly, copied, keep).
        version: the DLPack version to produce; None for the legacy capsule.
        copied: the data is a copy made for this export (sets the IS_COPIED flag).

    Raises:
        DLPackError: the C helper cannot be built (no C compiler).
    """

    __slots__ = ("block", "export", "keep", "versioned")

    def __init__(self, view: dict[str, Any], version: tuple[int, int] | None,
                 copied: bool) -> None:
        shape, strides = tuple(view["shape"]), tuple(view["strides"])
        ndim = len(shape)
        self.export = _helper()[0]
        self.keep, self.versioned = view["keep"], int(version is not None)
        head = _TENSOR_HEAD.pack(int(view["data"]), *view["device"], ndim, view["code"],
                                 view["bits"], 1)
        # Pointer fields stay zero here: the helper fills them per capsule. A 0-d tensor still
        # gets valid (unread) shape/strides slots.
        tail = _Q.pack(int(view["byte_offset"])) + (
            struct.pack(f"<{ndim}q{ndim}q", *shape, *strides) if ndim else bytes(16))
        if version is not None:
            flags = (FLAG_READ_ONLY if view["readonly"] else 0) | (
                FLAG_IS_COPIED if copied or view["copied"] else 0)
            self.block = (struct.pack("<II", *version) + bytes(16) + _Q.pack(flags) + head
                          + bytes(16) + tail)
        else:
            self.block = head + bytes(16) + tail[:8] + bytes(16) + tail[8:]

    def __call__(self) -> Any:
        """A new capsule over the template's memory (owned by the consumer once consumed).

        Raises:
            DLPackError: the host has no memory left for the 64-100 byte header.
        """
        try:
            return self.export(self.block, self.versioned, self.keep)
        except MemoryError:
            raise DLPackError("out of host memory for a DLPack header",
                              fix="free memory and retry.") from None


def element_strides(t: Any) -> tuple[int, ...]:
    """Strides in elements for a row-major, column-major or strided descriptor.

    Raises:
        DLPackError: any other layout, or a composite/quantized/dynamic-shape tensor.
    """
    desc = t.descriptor
    if t.is_composite or desc.layout_tag not in (0x01, 0x02, 0x03):
        raise DLPackError(f"layout {t.layout_name} is not expressible with DLPack strides",
                          fix="call .materialize() for a dense row-major copy first.")
    if desc.quantization is not None:
        raise DLPackError("a quantized tensor has no DLPack form",
                          fix="call .dequantize('float32') first.")
    if None in desc.shape:
        raise DLPackError("a dynamic dimension cannot be exported",
                          fix="resolve the shape (slice the tensor) first.")
    if desc.layout_tag == 0x03:
        return tuple(int(s) for s in desc.layout.strides)
    return _dense_strides(tuple(int(d) for d in desc.shape), desc.layout_tag == 0x01)


def host_view(t: Any, version: tuple[int, int] | None, copy: bool | None) -> dict[str, Any]:
    """The DLTensor fields for a host tensor, copying only where DLPack needs it.

    Raises:
        DLPackError: a layout, dtype or read-only buffer the consumer cannot take.
    """
    strides = element_strides(t)
    shape = tuple(int(d) for d in t.descriptor.shape)
    dtype = t.dtype
    if dtype.name == "bool":
        # DLPack bool is one byte per element; Hurray packs 8 per byte: only a copy works.
        if copy is False:
            raise DLPackError("bool is bit-packed in Hurray but one byte per element in DLPack",
                              fix="pass copy=None or True to export an unpacked copy.")
        arr = np.ascontiguousarray(t.numpy())
        return _view(arr.reshape(-1).view(np.uint8), shape, _dense_strides(shape), (6, 8), 0,
                     False, True, arr)
    code, bits = dtype_code(dtype.name, version or (0, 0))
    if dtype.sub_byte and t.descriptor.layout_tag != 0x01:
        raise DLPackError(f"packed {dtype.name} is exported only row-major",
                          fix="call .materialize() first.")
    buf = t.buffers[0].array if t.buffers else np.empty(0, np.uint8)
    readonly = not buf.flags.writeable
    copied = bool(copy) or (readonly and version is None and copy is None)
    if readonly and version is None and copy is False:
        raise DLPackError("a read-only buffer cannot be flagged in a legacy DLPack capsule",
                          fix="pass max_version=(1, 0) or copy=True.")
    if copied:
        buf = aligned_copy(buf.copy(), 64)
        readonly = False
    return _view(buf, shape, strides, (code, bits), int(t.descriptor.byte_offset), readonly,
                 copied, (t, buf))


def _dense_strides(shape: tuple[int, ...], row_major: bool = True) -> tuple[int, ...]:
    strides, step = [0] * len(shape), 1
    for axis in reversed(range(len(shape))) if row_major else range(len(shape)):
        strides[axis] = step
        step *= max(shape[axis], 1)
    return tuple(strides)


def _view(buf: np.ndarray, shape: tuple[int, ...], strides: tuple[int, ...],
          code: tuple[int, int], byte_offset: int, readonly: bool, copied: bool,
          keep: Any) -> dict[str, Any]:
    data = buf.ctypes.data if buf.size else 0
    return {"data": data, "device": (KDL_CPU, 0), "shape": shape, "strides": strides,
            "code": code[0], "bits": code[1], "byte_offset": byte_offset,
            "readonly": readonly, "copied": copied, "keep": keep}


CUDA_LEGACY_STREAM, CUDA_PER_THREAD_STREAM = 1, 2


def consumer_stream_handle(device_tag: int, stream: Any) -> int | None:
    """The native stream handle to order, or None for ``stream=-1`` (no synchronization).

    Raises:
        DLPackError: a value the DLPack convention forbids for this device type.
    """
    if stream == -1:
        return None
    if stream is None:
        return CUDA_LEGACY_STREAM if device_tag == DeviceTag.CUDA else 0
    if stream < -1:
        raise DLPackError(f"stream={stream} is not a valid stream value",
                          fix="pass None, -1 or a stream pointer.")
    if device_tag == DeviceTag.CUDA and stream == 0:
        raise DLPackError("stream=0 is ambiguous for CUDA and not allowed by DLPack",
                          fix="pass 1 (legacy default), 2 (per-thread) or a stream pointer.")
    if device_tag != DeviceTag.CUDA and stream in (1, 2):
        raise DLPackError(f"stream={stream} is not allowed for ROCm by DLPack",
                          fix="pass 0 (default stream) or a hipStream_t pointer.")
    return int(stream)


def device_view(t: Any, stream: Any, version: tuple[int, int] | None,
                copy: bool | None) -> dict[str, Any]:
    """DLTensor fields for a CUDA/ROCm tensor; orders the consumer stream after our writes.

    Raises:
        DLPackError: layouts/dtypes DLPack cannot carry, copy=True, or a bad stream.
    """
    if copy:
        raise DLPackError("copy=True on the device is not supported",
                          fix="export without copy, or with dl_device=(1, 0) for a host copy.")
    strides = element_strides(t)
    dtype = t.dtype
    if dtype.name == "bool":
        raise DLPackError("bool is bit-packed in Hurray but one byte per element in DLPack",
                          fix="call .unpack('uint8') first.")
    code, bits = dtype_code(dtype.name, version or (0, 0))
    handle = consumer_stream_handle(t.descriptor.buffers[0].device_tag, stream)
    device = dlpack_device(t)
    buf = _ready(t, handle, stream is None and device[0] in HOST_READABLE)
    data = buf.allocation.raw.ptr if buf.nbytes else 0
    return {"data": data, "device": device,
            "shape": tuple(int(d) for d in t.descriptor.shape), "strides": strides,
            "code": code, "bits": bits, "byte_offset": int(t.descriptor.byte_offset),
            "readonly": False, "copied": False, "keep": t}


def _ready(t: Any, handle: int | None, host: bool) -> Any:
    """Buffer 0 of a CUDA/ROCm tensor once its consumer may read it: stream ``handle`` (None:
    the consumer orders itself), or the current stream and then the host when ``host``.

    The consumer is ordered after what the tensor's handoff declares (the automatic accept,
    ``handoff.on_use``, runs on it: the event, or the declared streams), or after the current
    stream for a tensor that was not handed off.
    """
    if handle is None and not host:
        return t.buffers[0]
    dev, state = t.device, t.sync_state
    producer = consumer = current_stream(dev)
    if not host:
        known = [producer, *(state.streams if state is not None else ())]
        found = next((s for s in known if s.handle == handle), None)
        if found is None:
            # The consumer's stream is lent for this call only (DLPack): ordered, never kept.
            found = dev.stream_class()(dev, ptr=handle)
            found.borrowed = True
        consumer = found
    if state is None or state.mode == SyncMode.PRODUCER_SYNCED:
        order_after(consumer, producer)
    with consumer:
        buf = t.buffers[0]
    if host:
        consumer.synchronize()  # the producer's stream only, not the whole device
    return buf


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
            # Stream ordering happens per export, so device templates are not cached.
            return Template(device_view(t, stream, version, copy), version, copied)()
        raise DLPackError(
            f"{t.device} buffers are opaque handles, not pointers DLPack consumers can use",
            fix="call .to('cpu') first, or __dlpack__(dl_device=(1, 0), copy=True).")
    view = host_view(t, version, copy)
    template = Template(view, version, copied)
    if not (copied or view["copied"]) and copy is None and dl_device is None:
        _remember(t, max_version, template)
    return template()


def _remember(t: Any, max_version: Any, template: Template) -> None:
    """Cache the template on the (immutable) tensor for the next export with these args."""
    cache = getattr(t, "_dl", None)
    if cache is None:
        cache = {}
        object.__setattr__(t, "_dl", cache)
    with contextlib.suppress(TypeError):  # an unhashable max_version (a list): not cached
        cache[max_version] = template


_UINT_CODE = 1


class DLPackView:
    """Exports a host tensor's bytes with a re-tagged dtype or newer dtype codes.

    Build one with :func:`dlpack_view`; pass it to ``np/torch/jax.from_dlpack``.
    """

    __slots__ = ("tensor", "as_uint", "codes", "_templates")

    def __init__(self, tensor: Any, as_uint: bool, codes: tuple[int, int] | None) -> None:
        self.tensor, self.as_uint, self.codes = tensor, as_uint, codes
        self._templates: dict[Any, Template] = {}

    def __dlpack_device__(self) -> tuple[int, int]:
        """The tensor's own DLPack device."""
        return self.tensor.__dlpack_device__()  # type: ignore[no-any-return]

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None,
                   dl_device: Any = None, copy: bool | None = None) -> Any:
        """A zero-copy capsule per the view's rules (see :func:`dlpack_view`).

        Raises:
            BufferError: a copy or another device was asked for, or the tensor cannot be
                exported (see ``Tensor.__dlpack__``).
        """
        if copy or (dl_device is not None and tuple(dl_device) != self.__dlpack_device__()):
            raise DLPackError("a DLPack view is zero-copy on the tensor's own device",
                              fix="call Tensor.__dlpack__ for copies.")
        check_stream(self.__dlpack_device__()[0], stream)
        try:
            template = self._templates.get(max_version)
        except TypeError:  # an unhashable max_version: not cached
            return self._template(max_version)()
        if template is None:
            template = self._templates[max_version] = self._template(max_version)
        return template()

    def _template(self, max_version: Any) -> Template:
        version = _consumer_version(max_version)
        codes = self.codes or version or (0, 0)
        if version is not None and codes > version:
            codes = version  # a versioned consumer gets exactly the codes it understands
        t = self.tensor
        if self.as_uint:
            dtype = t.dtype
            if dtype.sub_byte or dtype.bits not in (8, 16, 32, 64) or dtype.name == "bool":
                raise DLPackError(f"{dtype.name} has no same-width unsigned view",
                                  fix="call .unpack('float32') first.")
            view = host_view(t, DLPACK_VERSION, False)
            view["code"], view["bits"] = _UINT_CODE, dtype.bits
        else:
            view = host_view(t, codes, False)
        return Template(view, version, False)


def dlpack_view(tensor: Any, *, as_uint: bool = False,
                codes: tuple[int, int] | None = None) -> DLPackView:
    """An exporter of ``tensor`` for consumers with their own DLPack rules (zero-copy).

    Args:
        tensor: a host Tensor (row-major, col-major or strided).
        as_uint: tag the data as the same-width unsigned integer (bf16 -> uint16, fp8 ->
            uint8): for NumPy and torch, which re-tag it with ``.view(dtype)``.
        codes: the DLPack version whose dtype codes to use even in a legacy capsule:
            ``(1, 1)`` gives JAX (which asks for the legacy capsule) the fp8 codes it reads.

    Returns:
        An object with ``__dlpack__`` and ``__dlpack_device__``.

    Raises:
        DLPackError: a device tensor, or ``codes`` that is not a (major, minor) pair.
    """
    if not tensor.is_host:
        raise DLPackError("DLPack views are for host tensors",
                          fix="call .to('cpu') first, or export the tensor itself.")
    if codes is not None:
        if (not isinstance(codes, tuple) or len(codes) != 2
                or not all(isinstance(v, int) for v in codes)):
            raise DLPackError(f"codes must be a (major, minor) pair, got {codes!r}",
                              fix="pass codes=(1, 1).")
        codes = min(codes, DLPACK_VERSION)
    return DLPackView(tensor, as_uint, codes)
