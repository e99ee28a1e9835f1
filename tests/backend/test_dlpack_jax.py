"""Zero-copy DLPack chains through JAX: numpy/torch/jax -> hurray_gpu -> numpy/torch/jax on the
CPU, proven by pointer equality, for float32, bf16 and fp8 (JAX and ml_dtypes)."""

from __future__ import annotations

import gc

import ml_dtypes
import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.runtime.hostmem import aligned_empty
from hurray_gpu.sync.dlpack import dlpack_view, live_exports
from tests._support import require_peer

jax = require_peer("jax", "jax[cpu]")
jnp = require_peer("jax.numpy", "jax[cpu]")
torch = require_peer("torch")


def _ptr(t: hg.Tensor) -> int:
    return int(t.buffers[0].array.ctypes.data)


def _jptr(x) -> int:
    return int(x.unsafe_buffer_pointer())


def _aligned(values: np.ndarray) -> np.ndarray:
    out = aligned_empty(values.nbytes, 64).view(values.dtype).reshape(values.shape)
    out[...] = values
    return out


def test_jax_asks_for_the_legacy_capsule_with_no_stream() -> None:
    t = hg.from_numpy(np.arange(8, dtype=np.float32))
    asked = []

    class Spy:
        def __dlpack__(self, **kwargs):
            asked.append(kwargs)
            return t.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return t.__dlpack_device__()

    y = jax.dlpack.from_dlpack(Spy())
    assert _jptr(y) == _ptr(t)
    assert all(k.get("max_version") is None and k.get("stream") is None for k in asked)


@pytest.mark.parametrize("source", ["numpy", "torch", "jax"])
def test_float32_chains_are_zero_copy(source: str) -> None:
    values = np.arange(24, dtype=np.float32).reshape(4, 6)
    if source == "numpy":
        x = _aligned(values)
        ptr = x.ctypes.data
    elif source == "torch":
        x = torch.from_numpy(_aligned(values))
        ptr = x.data_ptr()
    else:
        x = jnp.asarray(values)
        ptr = _jptr(x)
    before = live_exports()
    t = hg.from_dlpack(x)
    assert _ptr(t) == ptr and t.layout_name == "row_major"
    n, y, j = np.from_dlpack(t), torch.from_dlpack(t), jax.dlpack.from_dlpack(t)
    assert n.ctypes.data == y.data_ptr() == _jptr(j) == ptr
    np.testing.assert_array_equal(np.asarray(j), values)
    np.testing.assert_array_equal(y.numpy(), values)
    # And back again: the memory never moved.
    assert _ptr(hg.from_dlpack(j)) == _ptr(hg.from_dlpack(y)) == ptr
    del n, y, j
    gc.collect()
    assert live_exports() == before


def test_bf16_through_jax_torch_and_ml_dtypes() -> None:
    values = np.array([1.5, -2.0, 3.25, 0.0, 65280.0], ml_dtypes.bfloat16)
    t = hg.from_numpy(_aligned(values))
    j = jax.dlpack.from_dlpack(t)
    assert j.dtype == jnp.bfloat16 and _jptr(j) == _ptr(t)
    y = torch.from_dlpack(j)
    assert y.dtype == torch.bfloat16 and y.data_ptr() == _ptr(t)
    back = hg.from_dlpack(y)
    assert back.dtype.name == "bfloat16" and _ptr(back) == _ptr(t)
    # NumPy cannot take bf16 over DLPack: a uint16 view it re-tags, still the same memory.
    n = np.from_dlpack(dlpack_view(back, as_uint=True))
    assert n.dtype == np.uint16 and n.ctypes.data == _ptr(t)
    np.testing.assert_array_equal(n.view(ml_dtypes.bfloat16), values)
    jb = jnp.asarray(values)
    tb = hg.from_dlpack(jb)
    assert tb.dtype.name == "bfloat16" and _ptr(tb) == _jptr(jb)
    np.testing.assert_array_equal(tb.numpy(), values)


@pytest.mark.parametrize(("jdt", "mdt", "name", "tdt"), [
    ("float8_e4m3fn", "float8_e4m3fn", "float8_e4m3", "float8_e4m3fn"),
    ("float8_e5m2", "float8_e5m2", "float8_e5m2", "float8_e5m2"),
])
def test_fp8_through_jax_ml_dtypes_and_torch(jdt: str, mdt: str, name: str, tdt: str) -> None:
    values = np.array([1, -2, 0.5, 0, 3, -0.25, 8, 16], getattr(ml_dtypes, mdt))
    x = jnp.asarray(values)
    t = hg.from_dlpack(x)
    assert t.dtype.name == name and _ptr(t) == _jptr(x)
    np.testing.assert_array_equal(t.numpy(), values)
    # The protocol default refuses fp8 to a legacy consumer; the explicit view carries the
    # DLPack 1.1 codes JAX reads, zero-copy.
    with pytest.raises(BufferError, match="needs DLPack >= 1.1"):
        jax.dlpack.from_dlpack(t)
    j = jax.dlpack.from_dlpack(dlpack_view(t, codes=(1, 1)))
    assert j.dtype == getattr(jnp, jdt) and _jptr(j) == _ptr(t)
    n = np.from_dlpack(dlpack_view(t, as_uint=True)).view(getattr(ml_dtypes, mdt))
    assert n.ctypes.data == _ptr(t)
    np.testing.assert_array_equal(n, values)
    y = torch.from_dlpack(dlpack_view(t, as_uint=True)).view(getattr(torch, tdt))
    assert y.data_ptr() == _ptr(t)
    np.testing.assert_array_equal(y.float().numpy(), values.astype(np.float32))
    # ml_dtypes -> hurray -> jax
    m = hg.from_numpy(_aligned(values))
    jm = jax.dlpack.from_dlpack(dlpack_view(m, codes=(1, 1)))
    assert _jptr(jm) == _ptr(m)
    np.testing.assert_array_equal(np.asarray(jm), values)


def test_view_errors() -> None:
    t = hg.from_numpy(np.arange(4, dtype=np.float32))
    with pytest.raises(BufferError, match="codes must be"):
        dlpack_view(t, codes=[1, 1])
    with pytest.raises(BufferError, match="zero-copy"):
        dlpack_view(t).__dlpack__(copy=True)
    with pytest.raises(BufferError, match="not valid for a CPU tensor"):
        dlpack_view(t).__dlpack__(stream=3)
    packed = hg.from_numpy(np.array([1, -2, 3], ml_dtypes.int4))
    with pytest.raises(BufferError, match="no same-width unsigned view"):
        np.from_dlpack(dlpack_view(packed, as_uint=True))
