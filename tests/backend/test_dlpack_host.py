"""DLPack export/import on the CPU: zero-copy (pointer equality), strides, byte_offset, dtypes,
stream legality and capsule lifetime, against NumPy and PyTorch (JAX when installed)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu import Tensor
from hurray_gpu.format.descriptor.buffers import BufferHandle, DeviceTag, MemoryClass
from hurray_gpu.format.descriptor.layouts import RowMajor
from hurray_gpu.format.descriptor.model import TensorDescriptor
from hurray_gpu.runtime.hostmem import aligned_empty
from hurray_gpu.sync.dlpack import (
    DLPackError,
    consumer_stream_handle,
    dl_code,
    hurray_place,
    live_exports,
)
from hurray_gpu.sync.dlpack_import import _get_name
from tests._support import require_peer, skip_or_fail

torch = require_peer("torch")


def _aligned(values: np.ndarray) -> np.ndarray:
    out = aligned_empty(values.nbytes, 64).view(values.dtype).reshape(values.shape)
    out[...] = values
    return out


def _ptr(t: Tensor) -> int:
    return t.buffers[0].array.ctypes.data


def test_export_zero_copy_to_numpy_and_torch() -> None:
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = hg.from_numpy(a)
    before = live_exports()
    n = np.from_dlpack(t)
    x = torch.from_dlpack(t)
    assert n.ctypes.data == _ptr(t) == x.data_ptr()
    np.testing.assert_array_equal(n, a)
    np.testing.assert_array_equal(x.numpy(), a)
    x[0, 0] = 42.0  # shared memory: the write shows through the tensor
    assert t.numpy()[0, 0] == 42.0
    del n, x
    assert live_exports() == before


def test_export_applies_byte_offset_and_strides() -> None:
    raw = _aligned(np.arange(8, dtype=np.float32)).view(np.uint8)
    desc = TensorDescriptor(hg.by_name("float32"), (4,), RowMajor(), (BufferHandle(32),), 16)
    t = Tensor.from_parts(desc, [raw])
    np.testing.assert_array_equal(np.from_dlpack(t), [4, 5, 6, 7])
    assert torch.from_dlpack(t).data_ptr() == raw.ctypes.data + 16
    col = hg.from_numpy(np.arange(6, dtype=np.int16).reshape(2, 3), order="F")
    got = np.from_dlpack(col)
    assert got.strides == (2, 4)
    np.testing.assert_array_equal(got, np.arange(6).reshape(2, 3))
    src = torch.arange(12, dtype=torch.float64).reshape(3, 4)
    strided = hg.from_dlpack(src.T)
    assert strided.layout_name == "strided"
    back = torch.from_dlpack(strided)
    assert back.stride() == (1, 4) and back.data_ptr() == src.data_ptr()
    assert torch.equal(back, src.T)


def test_capsule_versions_and_flags() -> None:
    t = hg.from_numpy(np.ones(4, np.uint8))
    assert _get_name(t.__dlpack__()) == b"dltensor"
    assert _get_name(t.__dlpack__(max_version=(0, 8))) == b"dltensor"
    assert _get_name(t.__dlpack__(max_version=(1, 0))) == b"dltensor_versioned"
    ro = t.buffers[0].array.copy()
    ro.flags.writeable = False
    rt = Tensor.from_parts(t.descriptor, [_aligned(ro)])
    rt.buffers[0].array.flags.writeable = False
    imported = hg.from_dlpack(rt.__dlpack__(max_version=(1, 0)))
    assert not imported.buffers[0].array.flags.writeable  # the read-only flag travelled
    with pytest.raises(BufferError, match="read-only"):
        rt.__dlpack__(copy=False)


def test_capsule_consumed_twice_raises() -> None:
    cap = hg.from_numpy(np.arange(3, dtype=np.int32)).__dlpack__(max_version=(1, 1))
    np.testing.assert_array_equal(hg.from_dlpack(cap).numpy(), [0, 1, 2])
    with pytest.raises(BufferError, match="consumed once"):
        hg.from_dlpack(cap)


def test_dtypes_bf16_fp8_bool() -> None:
    bf = hg.from_numpy(np.array([1.5, -2, 3], ml_dtypes.bfloat16))
    x = torch.from_dlpack(bf)
    assert x.dtype == torch.bfloat16 and x.data_ptr() == _ptr(bf)
    assert x.float().tolist() == [1.5, -2.0, 3.0]
    back = hg.from_dlpack(x)
    assert back.dtype.name == "bfloat16" and _ptr(back) == _ptr(bf)
    f8 = hg.from_numpy(np.array([1, -2, 448], ml_dtypes.float8_e4m3fn))
    with pytest.raises(BufferError, match="float8_e4m3 needs DLPack >= 1.1"):
        f8.__dlpack__(max_version=(1, 0))
    imported = hg.from_dlpack(f8.__dlpack__(max_version=(1, 1)))
    assert imported.dtype.name == "float8_e4m3" and _ptr(imported) == _ptr(f8)
    b = hg.from_numpy(np.array([True, False, True, True]))
    np.testing.assert_array_equal(np.from_dlpack(b), [True, False, True, True])
    with pytest.raises(BufferError, match="bool is bit-packed"):
        b.__dlpack__(copy=False)
    assert hg.from_dlpack(np.array([False, True])).numpy().tolist() == [False, True]
    with pytest.raises(BufferError, match="float128 has no DLPack dtype"):
        from hurray_gpu.sync.dlpack import dtype_code

        dtype_code("float128", (1, 1))


def test_import_zero_copy_numpy_torch_and_strided() -> None:
    a = _aligned(np.arange(24, dtype=np.int32).reshape(4, 6))
    t = hg.from_dlpack(a)
    assert _ptr(t) == a.ctypes.data and t.layout_name == "row_major"
    rev = hg.from_dlpack(a[::-1, ::2])
    assert rev.layout_name == "strided"
    np.testing.assert_array_equal(rev.numpy(), a[::-1, ::2])
    x = torch.arange(10, dtype=torch.int64)
    tx = hg.from_dlpack(x)
    assert _ptr(tx) == x.data_ptr()
    # numpy -> hurray -> torch -> hurray -> numpy: one memory throughout.
    y = torch.from_dlpack(t)
    assert y.data_ptr() == a.ctypes.data
    assert np.from_dlpack(hg.from_dlpack(y)).ctypes.data == a.ctypes.data


def test_import_alignment_and_copy() -> None:
    a = _aligned(np.arange(17, dtype=np.uint8))[1:]
    with pytest.raises(BufferError, match="not 64-byte aligned"):
        hg.from_dlpack(a, copy=False)
    t = hg.from_dlpack(a)
    assert _ptr(t) != a.ctypes.data and t.numpy().tolist() == list(range(1, 17))
    b = _aligned(np.arange(4, dtype=np.float32))
    c = hg.from_dlpack(b, copy=True)
    assert _ptr(c) != b.ctypes.data and c.numpy().tolist() == [0, 1, 2, 3]


def test_layouts_that_are_not_strided_raise() -> None:
    t = hg.from_numpy(np.arange(16, dtype=np.float32).reshape(4, 4))
    sparse = hg.sparsify(t, "csr")
    with pytest.raises(BufferError, match="materialize"):
        sparse.__dlpack__()


def test_stream_legality() -> None:
    t = hg.from_numpy(np.zeros(2, np.float32))
    t.__dlpack__(stream=None)
    t.__dlpack__(stream=-1)
    for bad in (0, 1, 2, 12345, "s", 1.5):
        with pytest.raises(BufferError):
            t.__dlpack__(stream=bad)
    cuda, rocm = DeviceTag.CUDA, DeviceTag.ROCM
    assert consumer_stream_handle(cuda, None) == 1
    assert consumer_stream_handle(cuda, -1) is None
    assert [consumer_stream_handle(cuda, s) for s in (1, 2, 0x7F00)] == [1, 2, 0x7F00]
    with pytest.raises(BufferError, match="ambiguous"):
        consumer_stream_handle(cuda, 0)
    assert consumer_stream_handle(rocm, None) == 0 and consumer_stream_handle(rocm, 0) == 0
    assert consumer_stream_handle(rocm, -1) is None
    for bad in (1, 2, -7):
        with pytest.raises(BufferError):
            consumer_stream_handle(rocm, bad)


def test_device_table_and_dl_device() -> None:
    assert dl_code(DeviceTag.CUDA, MemoryClass.HOST_PINNED) == 3
    assert dl_code(DeviceTag.CUDA, MemoryClass.UNIFIED) == 13
    assert dl_code(DeviceTag.ROCM, MemoryClass.STANDARD) == 10
    assert dl_code(DeviceTag.OPENCL, MemoryClass.UNIFIED) == 4
    for tag, cls in ((DeviceTag.CPU, MemoryClass.PEER), (DeviceTag.ROCM, MemoryClass.UNIFIED),
                     (DeviceTag.CUDA, MemoryClass.PEER), (0xF0, 0)):
        with pytest.raises(BufferError):
            dl_code(tag, cls)
    assert hurray_place(13) == (DeviceTag.CUDA, MemoryClass.UNIFIED)
    t = hg.from_numpy(np.ones(3, np.float32))
    assert t.__dlpack_device__() == (1, 0)
    assert np.from_dlpack(t, device="cpu").tolist() == [1, 1, 1]
    with pytest.raises(BufferError):
        t.__dlpack__(dl_device=(2, 0))
    assert isinstance(DLPackError("x"), hg.HurrayGPUError)


def test_opencl_tensor_dlpack(request) -> None:
    from hurray_gpu.runtime.registry import is_available

    if not is_available(0x08):
        skip_or_fail("no OpenCL device", "install pocl-opencl-icd and pip install pyopencl")
    t = hg.from_numpy(np.arange(5, dtype=np.float32)).to("opencl:0")
    assert t.__dlpack_device__() == (4, 0)
    with pytest.raises(BufferError, match="opaque handles"):
        t.__dlpack__()
    host = hg.from_dlpack(t.__dlpack__(max_version=(1, 1), dl_device=(1, 0), copy=True))
    assert host.numpy().tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(BufferError):
        t.__dlpack__(dl_device=(1, 0), copy=False)


def test_jax_roundtrip() -> None:
    jnp = require_peer("jax.numpy", "jax[cpu]")
    x = jnp.arange(16, dtype=jnp.float32)
    t = hg.from_dlpack(x)
    np.testing.assert_array_equal(t.numpy(), np.arange(16, dtype=np.float32))


def test_repeated_exports_stay_zero_copy_and_release_every_capsule() -> None:
    """After the first export the tensor reuses a cached export template (bench/dlpack.py
    times that path): every later export, legacy or versioned, must still hand out a new
    capsule over the same memory, see the latest data, and leave no export alive."""
    t = hg.from_numpy(np.zeros(16, np.float32))
    before = live_exports()
    for i in range(1, 301):
        x = torch.from_dlpack(t)
        n = np.from_dlpack(t)
        legacy = hg.from_dlpack(t.__dlpack__(max_version=None))
        assert x.data_ptr() == n.ctypes.data == _ptr(legacy) == _ptr(t)
        assert x[0].item() == n[0] == legacy.numpy()[0] == i - 1  # the previous write
        x[0] = float(i)
        del x, n, legacy
    assert t.numpy()[0] == 300.0
    assert live_exports() == before
