"""Tensor conventions on every device: NumPy conversion copies a device tensor to the host (and
refuses ``copy=False``), views index device memory and materialize there, and ``to(device,
dtype)`` converts on the device."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.runtime.device import Device
from tests._support import stable_rng


def test_asarray_copies_device_tensors_and_refuses_copy_false(device: Device) -> None:
    x = stable_rng("asarray", device.spec).standard_normal((5, 6)).astype(np.float32)
    t = hg.from_numpy(x).to(device)
    assert np.array_equal(np.asarray(t), x)
    assert np.array_equal(np.array(t, dtype=np.float64), x.astype(np.float64))
    if not t.is_host:
        with pytest.raises(hg.CopyRequiredError, match="t.cpu"):
            np.asarray(t, copy=False)
        with pytest.raises(hg.UnsupportedOpError):
            t.numpy()  # numpy() never moves data off a device
    assert np.array_equal(t.cpu().numpy(), x)


def test_truth_of_a_one_element_device_tensor(device: Device) -> None:
    for value in (3, 0):
        t = hg.from_numpy(np.full((1, 1), value, np.int32)).to(device)
        assert bool(t) is bool(value) and t.device == device
    with pytest.raises(hg.AmbiguousTruthError):
        bool(hg.from_numpy(np.ones(2, np.int32)).to(device))


def test_views_of_device_tensors_materialize_on_the_device(kernel_device: Device) -> None:
    x = stable_rng("views", kernel_device.spec).integers(-99, 99, (6, 10)).astype(np.int32)
    t = hg.from_numpy(x).to(kernel_device)
    for key in [(slice(1, 5), slice(None, None, 3)), (slice(None, None, -1), 2),
                (..., slice(2, 8)), (3,), (None, slice(None), slice(9, 0, -4))]:
        view = t[key]
        assert view.device == kernel_device and view.buffers[0] is t.buffers[0]
        dense = hg.materialize(view)
        assert dense.device == kernel_device and dense.layout_name == "row_major"
        assert np.array_equal(dense.cpu().numpy(), x[key]), key


def test_to_dtype_converts_on_the_device(kernel_device: Device) -> None:
    x = stable_rng("to-dtype", kernel_device.spec).standard_normal((8, 64)).astype(np.float32)
    q = hg.quantize(x, "per_block", axis=1, block_size=32, dtype="int4")
    want = hg.dequantize(q, "bfloat16").numpy()
    got = q.to(kernel_device, "bfloat16")  # compact int4 moves, then dequantizes there
    assert got.device == kernel_device and got.dtype == ml_dtypes.bfloat16
    assert np.array_equal(got.cpu().numpy().view(np.uint16), want.view(np.uint16))
    half = hg.from_numpy(x).to(kernel_device).to("cpu", np.float16)  # narrowed, then moved
    assert half.is_host and np.array_equal(half.numpy(), x.astype(np.float16))
