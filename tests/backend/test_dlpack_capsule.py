"""DLPack capsule lifetime: C-level destructor/deleter (no sweep), exact header layout, pending
exceptions preserved, no leak, and a clean interpreter shutdown with exports still alive."""

from __future__ import annotations

import ctypes
import gc
import subprocess
import sys
import threading
import weakref

import ml_dtypes
import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.sync.dlpack_capsule import live_exports
from hurray_gpu.sync.dlpack_types import DLManagedTensor, DLManagedTensorVersioned
from tests._support import require_peer

_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


def _settled() -> int:
    gc.collect()
    return live_exports()


@pytest.mark.parametrize("max_version", [None, (1, 0), (1, 1)])
def test_unconsumed_capsule_frees_the_tensor(max_version) -> None:
    t = hg.from_numpy(np.arange(64, dtype=np.float32))
    root = t.buffers[0]
    while isinstance(root.base, np.ndarray):
        root = root.base
    buf = weakref.ref(root)  # the array owning the memory; nothing else refers to it
    del root
    before = _settled()
    caps = [t.__dlpack__(max_version=max_version) for _ in range(3)]
    assert live_exports() == before + 3
    del t
    assert buf() is not None  # the capsules keep the memory alive
    del caps
    assert _settled() == before and buf() is None


def test_header_layout_and_flags() -> None:
    from hurray_gpu.io._memory import aligned_empty

    base = hg.from_numpy(np.arange(8, dtype=np.float32))
    mem = aligned_empty(32, 64)
    mem[:] = base.buffers[0]
    mem.flags.writeable = False
    ro = hg.Tensor.from_parts(base.descriptor, [mem])
    assert ro.buffers[0].ctypes.data == mem.ctypes.data
    cap = ro.__dlpack__(max_version=(1, 1))
    m = DLManagedTensorVersioned.from_address(_get_pointer(cap, b"dltensor_versioned"))
    assert (m.version.major, m.version.minor) == (1, 1) and m.flags & 1  # read-only
    dl = m.dl_tensor
    assert dl.ndim == 1 and dl.shape[0] == 8 and dl.strides[0] == 1
    assert (dl.dtype.code, dl.dtype.bits, dl.dtype.lanes) == (2, 32, 1)
    assert dl.data == ro.buffers[0].ctypes.data and dl.device.device_type == 1
    legacy = hg.from_numpy(np.zeros((3, 5), np.int16), order="F").__dlpack__()
    lm = DLManagedTensor.from_address(_get_pointer(legacy, b"dltensor"))
    ldl = lm.dl_tensor
    assert [ldl.shape[i] for i in range(2)] == [3, 5]
    assert [ldl.strides[i] for i in range(2)] == [1, 3]
    scalar = hg.from_numpy(np.float64(2.5)).__dlpack__()
    assert np.from_dlpack(_Wrap(scalar)).tolist() == 2.5


class _Wrap:
    def __init__(self, cap) -> None:
        self.cap = cap

    def __dlpack__(self, **kwargs):
        return self.cap

    def __dlpack_device__(self):
        return (1, 0)


def test_rejecting_consumer_keeps_its_exception(capfd) -> None:
    bf = hg.from_numpy(np.array([1, 2], ml_dtypes.bfloat16))
    before = _settled()
    # NumPy refuses bf16 and drops our capsule while its own error is set: the capsule's C
    # destructor runs then, and NumPy's exception must come through untouched.
    with pytest.raises(RuntimeError, match="Unsupported dtype in DLTensor"):
        np.from_dlpack(bf)

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
                assert torch.from_dlpack(t).data_ptr() == t.buffers[0].ctypes.data
                np.from_dlpack(t)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors and _settled() == before


def test_interpreter_shutdown_with_live_exports() -> None:
    code = (
        "import numpy as np, torch, hurray_gpu as hg\n"
        "t = hg.from_numpy(np.arange(16, dtype=np.float32))\n"
        "kept = torch.from_dlpack(t)\n"
        "cap = t.__dlpack__(max_version=(1, 1))\n"
        "class C:\n"
        "    pass\n"
        "c = C(); c.self = c; c.cap = t.__dlpack__()\n"
        "print(float(kept.sum()))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "120.0"
    assert "Exception ignored" not in done.stderr and "Error" not in done.stderr
