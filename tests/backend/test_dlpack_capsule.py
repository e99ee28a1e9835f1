"""DLPack capsule lifetime: our own C destructor and deleter (no NumPy internals), exact header
layout, round trips through NumPy, torch and JAX (legacy and versioned), the deleter called from
other threads without the GIL, pending exceptions preserved, no leak under a stress loop, and a
clean interpreter exit with exports alive (deleters running during and after finalization)."""

from __future__ import annotations

import ctypes
import gc
import os
import subprocess
import sys
import textwrap
import threading
import tracemalloc
import weakref
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.sync.dlpack import DLManagedTensor, DLManagedTensorVersioned, live_exports
from tests._support import require_peer

_api = ctypes.pythonapi
_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))
_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_SetName", _api))
_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
VERSIONS = [None, (1, 0), (1, 1)]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), *sys.path])}


def _settled() -> int:
    gc.collect()
    return live_exports()


def _owner(t: hg.Tensor) -> weakref.ref[np.ndarray]:
    """A weak reference to the array owning the tensor's memory (nothing else refers to it)."""
    root = t.buffers[0].array
    while isinstance(root.base, np.ndarray):
        root = root.base
    return weakref.ref(root)


class _Wrap:
    """Hands a consumer one prepared capsule."""

    def __init__(self, cap: Any) -> None:
        self.cap = cap

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.cap

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


def _call_deleter(deleter: int, managed: int) -> None:
    """Call a DLPack deleter as a C consumer: ctypes releases the GIL around a foreign call."""
    _DELETER(deleter)(managed)


def _consume(cap: Any, versioned: bool) -> tuple[int, int]:
    """Take ownership as a C consumer does: rename the capsule; returns (managed, deleter)."""
    name = b"dltensor_versioned" if versioned else b"dltensor"
    managed = _get_pointer(cap, name)
    assert _set_name(cap, b"used_" + name) == 0
    struct = DLManagedTensorVersioned if versioned else DLManagedTensor
    deleter = ctypes.cast(struct.from_address(managed).deleter, ctypes.c_void_p).value
    assert deleter
    return managed, deleter


@pytest.mark.parametrize("max_version", VERSIONS)
def test_unconsumed_capsule_frees_the_tensor(max_version) -> None:
    t = hg.from_numpy(np.arange(64, dtype=np.float32))
    buf = _owner(t)
    before = _settled()
    caps = [t.__dlpack__(max_version=max_version) for _ in range(3)]
    assert live_exports() == before + 3
    del t
    assert buf() is not None  # the capsules keep the memory alive
    del caps
    assert _settled() == before and buf() is None


@pytest.mark.parametrize("max_version", VERSIONS)
def test_consumed_capsule_is_left_to_its_consumer(max_version) -> None:
    t = hg.from_numpy(np.arange(5, dtype=np.int32))
    buf = _owner(t)
    before = _settled()
    cap = t.__dlpack__(max_version=max_version)
    managed, deleter = _consume(cap, max_version is not None)
    del t, cap  # the renamed capsule's destructor must not free what the consumer owns
    gc.collect()
    assert buf() is not None and live_exports() == before + 1
    _call_deleter(deleter, managed)  # GIL released around the call
    assert _settled() == before and buf() is None


def test_header_layout_and_flags() -> None:
    from hurray_gpu.runtime.hostmem import aligned_empty

    base = hg.from_numpy(np.arange(8, dtype=np.float32))
    mem = aligned_empty(32, 64)
    mem[:] = base.buffers[0]
    mem.flags.writeable = False
    ro = hg.Tensor.from_parts(base.descriptor, [mem])
    assert ro.buffers[0].array.ctypes.data == mem.ctypes.data
    cap = ro.__dlpack__(max_version=(1, 1))
    m = DLManagedTensorVersioned.from_address(_get_pointer(cap, b"dltensor_versioned"))
    assert (m.version.major, m.version.minor) == (1, 1) and m.flags & 1  # read-only
    assert m.manager_ctx and ctypes.cast(m.deleter, ctypes.c_void_p).value
    dl = m.dl_tensor
    assert dl.ndim == 1 and dl.shape[0] == 8 and dl.strides[0] == 1
    assert (dl.dtype.code, dl.dtype.bits, dl.dtype.lanes) == (2, 32, 1)
    assert dl.data == ro.buffers[0].array.ctypes.data and dl.device.device_type == 1
    legacy = hg.from_numpy(np.zeros((3, 5), np.int16), order="F").__dlpack__()
    lm = DLManagedTensor.from_address(_get_pointer(legacy, b"dltensor"))
    ldl = lm.dl_tensor
    assert [ldl.shape[i] for i in range(2)] == [3, 5]
    assert [ldl.strides[i] for i in range(2)] == [1, 3]
    assert (ldl.dtype.code, ldl.dtype.bits) == (0, 16) and ldl.byte_offset == 0
    scalar = hg.from_numpy(np.float64(2.5)).__dlpack__()
    assert np.from_dlpack(_Wrap(scalar)).tolist() == 2.5


# jax.dlpack asks for (and takes) only the legacy capsule.
@pytest.mark.parametrize(("consumer", "max_version"), [
    *[("numpy", v) for v in VERSIONS], *[("torch", v) for v in VERSIONS], ("jax", None)])
def test_round_trip_is_zero_copy_and_frees(consumer: str, max_version) -> None:
    values = np.arange(24, dtype=np.float32).reshape(4, 6) * 0.5 - 3.0
    # From a copy: from_numpy is zero-copy for a 64-byte aligned array, and `values` stays
    # referenced here, so the owner watched below must be memory only the tensor holds.
    t = hg.from_numpy(values.copy())
    buf, ptr = _owner(t), t.buffers[0].array.ctypes.data
    before = _settled()
    cap = t.__dlpack__(max_version=max_version)
    if consumer == "numpy":
        got = np.from_dlpack(_Wrap(cap))
        addr, host = got.ctypes.data, got
    elif consumer == "torch":
        require_peer("torch")
        from torch.utils.dlpack import from_dlpack

        got = from_dlpack(cap)
        addr, host = got.data_ptr(), got.numpy()
    else:
        jax = require_peer("jax")
        got = jax.dlpack.from_dlpack(_Wrap(cap))
        addr, host = int(got.unsafe_buffer_pointer()), np.asarray(got)
    assert addr == ptr
    np.testing.assert_array_equal(host, values)
    back = hg.from_dlpack(got)  # and back: still the same memory
    assert back.buffers[0].array.ctypes.data == ptr
    del t, cap, back, host
    gc.collect()
    assert buf() is not None and live_exports() == before + 1  # the consumer holds it
    del got
    assert _settled() == before and buf() is None


def test_torch_tensor_freed_in_another_thread() -> None:
    torch = require_peer("torch")
    t = hg.from_numpy(np.arange(100, dtype=np.int64))
    buf = _owner(t)
    before = _settled()
    tensors = [torch.from_dlpack(t) for _ in range(8)]
    del t
    assert live_exports() == before + 8
    box = [tensors]
    del tensors

    def drop() -> None:
        box.clear()  # the last references: torch calls our deleter on this thread

    th = threading.Thread(target=drop)
    th.start()
    th.join()
    assert _settled() == before and buf() is None


@pytest.mark.parametrize("max_version", [None, (1, 1)])
def test_deleter_without_the_gil_from_threads(max_version) -> None:
    tensors = [hg.from_numpy(np.full(16, i, np.float32)) for i in range(8)]
    owners = [_owner(t) for t in tensors]
    before = _settled()
    taken = [_consume(t.__dlpack__(max_version=max_version), max_version is not None)
             for t in tensors for _ in range(25)]
    del tensors
    gc.collect()
    assert live_exports() == before + 200 and all(o() is not None for o in owners)
    errors: list[BaseException] = []

    def free(part: list[tuple[int, int]]) -> None:
        try:
            for managed, deleter in part:
                _call_deleter(deleter, managed)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=free, args=(taken[i::4],)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors and _settled() == before
    assert all(o() is None for o in owners)


def test_rejecting_consumer_keeps_its_exception(capfd) -> None:
    bf = hg.from_numpy(np.array([1, 2], ml_dtypes.bfloat16))
    before = _settled()
    # NumPy before 2.5 refuses bf16 and drops our capsule while its own error is set: the
    # capsule's C destructor runs then, and NumPy's exception must come through untouched.
    # NumPy 2.5 takes bfloat16 (as ml_dtypes' dtype), zero-copy.
    if np.lib.NumpyVersion(np.__version__) < "2.5.0":
        with pytest.raises(RuntimeError, match="Unsupported dtype in DLTensor"):
            np.from_dlpack(bf)
    else:
        assert np.from_dlpack(bf).view(np.uint16).tolist() == [0x3F80, 0x4000]

    def drop_while_raising() -> None:
        cap = bf.__dlpack__()  # noqa: F841 - freed during the unwinding below
        raise KeyError("mine")

    with pytest.raises(KeyError, match="mine"):
        drop_while_raising()
    assert _settled() == before
    assert "Exception ignored" not in capfd.readouterr().err


def test_concurrent_exports_are_counted_and_freed() -> None:
    torch = require_peer("torch")
    t = hg.from_numpy(np.arange(256, dtype=np.int32))
    before = _settled()
    errors = []

    def work() -> None:
        try:
            for _ in range(300):
                assert torch.from_dlpack(t).data_ptr() == t.buffers[0].array.ctypes.data
                np.from_dlpack(t)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors and _settled() == before


def test_stress_loop_does_not_grow_memory() -> None:
    torch = require_peer("torch")
    t = hg.from_numpy(np.arange(4096, dtype=np.float32).reshape(64, 64))

    def rounds(n: int) -> None:
        for i in range(n):
            np.from_dlpack(t)
            torch.from_dlpack(t)
            t.__dlpack__(max_version=(1, 1) if i % 2 else None)  # dropped unconsumed

    before = _settled()
    rounds(2000)  # warm: templates cached, allocator pools filled
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        rounds(20000)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    # Each leaked header is >= 80 traced bytes (PyMem_Malloc), 60000 exports: >= 4.8 MB.
    assert grown < 64 * 1024, f"traced memory grew by {grown} bytes over 60000 exports"
    assert live_exports() == before


def test_interpreter_exit_with_live_exports() -> None:
    code = (
        "import numpy as np, torch, jax, threading, hurray_gpu as hg\n"
        "t = hg.from_numpy(np.arange(16, dtype=np.float32))\n"
        "kept = torch.from_dlpack(t)\n"
        "j = jax.dlpack.from_dlpack(t)\n"
        "cap = t.__dlpack__(max_version=(1, 1))\n"
        "class C:\n"
        "    pass\n"
        "c = C(); c.self = c; c.cap = t.__dlpack__()\n"
        "ev = threading.Event()\n"
        "def hold(x=torch.from_dlpack(t)):\n"
        "    ev.wait()\n"
        "threading.Thread(target=hold, daemon=True).start()\n"
        "print(float(kept.sum()), float(j.sum()))\n"
    )
    require_peer("torch"), require_peer("jax")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=180, env=ENV)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["120.0", "120.0"]
    assert "Exception ignored" not in done.stderr and "Error" not in done.stderr


def test_deleter_after_finalization_does_not_touch_python(tmp_path) -> None:
    # A C consumer releasing a tensor from libc's atexit (after Py_FinalizeEx, as a C++ static
    # destructor would): the deleter must return without taking the GIL.
    from hurray_gpu import config

    cc = config.c_compiler()
    if cc is None:
        pytest.skip("no C compiler")
    lib = tmp_path / "late.so"
    src = textwrap.dedent("""\
        #include <stdio.h>
        #include <stdlib.h>
        static void *managed[2];
        static void (*deleters[2])(void *);
        static void late(void) {
            for (int i = 0; i < 2; i++) deleters[i](managed[i]);
            fputs("late deleters returned\\n", stderr);
        }
        int arm(void *m0, void (*d0)(void *), void *m1, void (*d1)(void *)) {
            managed[0] = m0; deleters[0] = d0; managed[1] = m1; deleters[1] = d1;
            return atexit(late);
        }
    """)
    subprocess.run([cc, "-shared", "-fPIC", "-x", "c", "-", "-o", str(lib)], input=src,
                   text=True, check=True, timeout=120)
    code = textwrap.dedent(f"""\
        import ctypes, numpy as np, hurray_gpu as hg
        from tests.backend.test_dlpack_capsule import _consume
        t = hg.from_numpy(np.arange(16, dtype=np.float32))
        m0, d0 = _consume(t.__dlpack__(), False)
        m1, d1 = _consume(t.__dlpack__(max_version=(1, 1)), True)
        assert ctypes.CDLL({str(lib)!r}).arm(*map(ctypes.c_void_p, (m0, d0, m1, d1))) == 0
        print("armed")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=180, env=ENV)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "armed"
    assert done.stderr.strip() == "late deleters returned"
