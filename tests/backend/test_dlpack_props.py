"""Property test: any strided NumPy view survives NumPy -> hurray_gpu -> NumPy/torch over
DLPack with the same values, sharing memory with the original."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import hurray_gpu as hg
from hurray_gpu.runtime.hostmem import aligned_empty
from tests._support import require_peer

DTYPES = [np.int8, np.uint16, np.int32, np.float32, np.float64, np.complex64]


@st.composite
def views(draw):
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    base = aligned_empty(int(np.prod(shape)) * dtype.itemsize, 64).view(dtype).reshape(shape)
    base[...] = np.arange(base.size).reshape(shape).astype(dtype)
    index = tuple(slice(None, None, draw(st.sampled_from([1, 2, -1, -2]))) for _ in shape)
    return base, base[index]


@settings(max_examples=60, deadline=None)
@given(views())
def test_strided_views_roundtrip(pair) -> None:
    torch = require_peer("torch")

    base, view = pair
    t = hg.from_dlpack(view)
    np.testing.assert_array_equal(t.numpy(), view)
    back = np.from_dlpack(t)
    np.testing.assert_array_equal(back, view)
    lowest = view.ctypes.data + sum(min(0, (d - 1) * stride) for d, stride in
                                    zip(view.shape, view.strides, strict=True))
    if lowest % 64 == 0:  # Hurray needs 64-byte aligned buffers: zero-copy exactly then
        assert np.shares_memory(back, base) and back.ctypes.data == view.ctypes.data
    else:
        assert not np.shares_memory(back, base)
    # torch aborts the process on negative DLPack strides (NumPy's own export too), so only
    # non-negative views go to torch.
    if all(s >= 0 for s in view.strides):
        x = torch.from_dlpack(t)
        np.testing.assert_array_equal(x.numpy(), view)
