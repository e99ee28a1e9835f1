"""DLPack capsules with C-level lifetimes: our own capsule destructor and DLManagedTensor deleter.

Both are a few lines of C (``HELPER_C``) built once by the cpu backend's compiler and cached
like a kernel. The C code reaches the interpreter only through a table of C-API function
pointers filled at load, so it needs no Python headers and no NumPy. An export is one C call:
it copies a packed header template, patches its pointers, and wraps it in a capsule.
"""

from __future__ import annotations

import ctypes
import platform
import struct
import tempfile
import threading
from typing import Any

from hurray_gpu.errors import HurrayGPUError
from hurray_gpu.sync.dlpack_types import (
    FLAG_IS_COPIED,
    FLAG_READ_ONLY,
    DLManagedTensor,
    DLManagedTensorVersioned,
    DLPackError,
)

__all__ = ["NAME_LEGACY", "NAME_VERSIONED", "Template", "live_exports"]

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

    try:
        binary = CPUCompiler(f"dlpack-helper|{platform.machine()}").compile_cached(
            HELPER_C, ("-O2", "-std=c11"))
    except HurrayGPUError as exc:
        raise DLPackError(f"the DLPack capsule helper could not be built: {exc}",
                          fix="install gcc or clang (apt-get install gcc), or set "
                              "HURRAY_GPU_CC=/path/to/cc.") from exc
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
