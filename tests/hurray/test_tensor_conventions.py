"""Tensor's Python and NumPy conventions: ``__array__``, dtype comparison, ``to(device,
dtype)``, ``len``/iteration, basic indexing as views, ``cpu()``, the repr, and the file object
as a read-only mapping."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.format.dtypes import by_name, by_tag
from tests._support import require_peer, stable_rng


def _shares(t: hg.Tensor, arr: np.ndarray) -> bool:
    return bool(np.shares_memory(arr, t.buffers[0].array))


# -- __array__ ---------------------------------------------------------------------------------
def test_asarray_of_a_host_tensor_is_zero_copy_and_honours_copy() -> None:
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    t = hg.from_numpy(x)
    view = np.asarray(t)
    assert np.array_equal(view, x) and _shares(t, view)
    assert _shares(t, np.asarray(t, copy=False))
    fresh = np.array(t, copy=True)
    assert np.array_equal(fresh, x) and not _shares(t, fresh) and fresh.flags.writeable
    as64 = np.asarray(t, dtype=np.float64)
    assert as64.dtype == np.float64 and np.array_equal(as64, x)


def test_asarray_of_packed_data_copies_and_refuses_copy_false() -> None:
    codes = np.array([1, -2, 3, -4, 5], dtype=np.int8)
    t = hg.from_numpy(codes.astype(ml_dtypes.int4))
    assert np.asarray(t).astype(np.int8).tolist() == codes.tolist()
    with pytest.raises(hg.CopyRequiredError):
        np.asarray(t, copy=False)
    with pytest.raises(ValueError):  # NumPy's protocol: copy=False that needs a copy
        np.asarray(t, copy=False)


# -- dtype comparison ----------------------------------------------------------------------------
def test_dtype_compares_with_numpy_dtypes_and_names() -> None:
    t = hg.from_numpy(np.zeros(3, np.float32))
    for same in (np.float32, np.dtype("float32"), "float32", "<f4", by_name("float32")):
        assert t.dtype == same and same == t.dtype and (t.dtype != same) is False, same
    for other in (np.float16, "float16", np.dtype("int32"), "bogus", None, 0, float, object()):
        assert t.dtype != other and (t.dtype == other) is False, other
    bf16 = hg.from_numpy(np.zeros(2, ml_dtypes.bfloat16)).dtype
    assert bf16 == ml_dtypes.bfloat16 and bf16 == "bfloat16" and bf16 != np.float16
    fp8 = by_name("float8_e4m3")
    assert fp8 == "float8_e4m3fn" and fp8 == ml_dtypes.float8_e4m3fn
    assert fp8 != ml_dtypes.float8_e4m3  # the IEEE-like E4M3 with Inf is another type
    assert by_name("bool") == np.bool_ and by_name("int4") == ml_dtypes.int4


def test_dtype_keeps_its_identity_and_hashes_like_its_name() -> None:
    f32 = by_name("float32")
    assert f32 is by_tag(0x03) and f32 == by_tag(0x03) and f32 != by_name("float64")
    assert by_tag(0x30, permissive=True) == by_tag(0x30, permissive=True)
    assert by_tag(0x30, permissive=True) != by_tag(0x31, permissive=True)
    assert {f32: "x"}["float32"] == "x" and "float32" in {f32} and f32 in {"float32"}
    assert hash(f32) == hash("float32")


def test_dtype_compares_with_torch_dtypes() -> None:
    torch = require_peer("torch")
    assert by_name("bfloat16") == torch.bfloat16 and by_name("float32") != torch.float16
    assert by_name("float8_e8m0") == torch.float8_e8m0fnu


# -- to(device, dtype) ---------------------------------------------------------------------------
def test_to_takes_torch_argument_order() -> None:
    x = stable_rng("to-dtype").standard_normal((5, 7)).astype(np.float32)
    t = hg.from_numpy(x)
    for half in (t.to("cpu", "float16"), t.to("cpu", np.float16), t.to(np.float16),
                 t.to(dtype="float16")):
        assert half.dtype == np.float16 and half.shape == (5, 7)
        assert np.array_equal(half.numpy(), x.astype(np.float16))
    assert t.to("cpu") is t and t.to(dtype="float32") is t and t.cpu() is t
    bf = t.to("cpu", ml_dtypes.bfloat16)
    assert np.array_equal(bf.numpy(), x.astype(ml_dtypes.bfloat16))
    pinned = t.to("cpu", memory_class="host_pinned")
    assert pinned.memory_class == hg.MemoryClass.HOST_PINNED
    assert pinned.to(dtype="float16").memory_class == hg.MemoryClass.HOST_PINNED  # kept
    assert pinned.cpu().memory_class == hg.MemoryClass.STANDARD


def test_to_dtype_dequantizes_like_dequantize() -> None:
    x = stable_rng("to-deq").standard_normal((4, 64)).astype(np.float32)
    q = hg.quantize(x, "per_block", axis=1, block_size=32, dtype="int4")
    want = hg.dequantize(q, "float16").numpy()
    for got in (q.to("cpu", "float16"), q.to(dtype=np.float16)):
        assert got.quantization is None and np.array_equal(got.numpy(), want)
    assert np.array_equal(q.to(dtype="float32").numpy(), hg.dequantize(q).numpy())


def test_to_memory_class_confusion_names_the_keyword() -> None:
    t = hg.from_numpy(np.zeros(2, np.float32))
    with pytest.raises(hg.ArgumentTypeError, match="memory_class='host_pinned'"):
        t.to("cpu", "host_pinned")


# -- len, iteration, indexing --------------------------------------------------------------------
def test_len_and_iteration_follow_dimension_zero() -> None:
    x = np.arange(12, dtype=np.int16).reshape(3, 4)
    t = hg.from_numpy(x)
    assert len(t) == 3
    rows = list(t)
    assert len(rows) == 3 and all(np.array_equal(r.numpy(), x[i]) for i, r in enumerate(rows))
    assert [int(v.numpy()) for v in rows[1]] == x[1].tolist()


def test_truth_is_numpys_one_element_truth() -> None:
    # Rank 0 (which has no len()) and every size-1 shape: the element's truth, as NumPy's.
    for value in (np.float32(2.5), np.float32(0.0), np.float32(np.nan), np.int8(-1),
                  np.uint16(0), np.bool_(True), np.bool_(False)):
        for shape in ((), (1,), (1, 1, 1)):
            x = np.full(shape, value)
            assert bool(hg.from_numpy(x)) is bool(x), (value, shape)
    assert bool(hg.from_numpy(np.arange(12, dtype=np.int16).reshape(3, 4)[1:2, 0:1])) is True
    assert not hg.from_numpy(np.zeros((1, 1), ml_dtypes.bfloat16))
    assert hg.from_numpy(np.array([5], np.int8).astype(ml_dtypes.int4))  # packed: decoded
    for shape in ((2,), (3, 4), (0,), (2, 0)):
        with pytest.raises(hg.AmbiguousTruthError, match="ambiguous") as err:
            bool(hg.from_numpy(np.ones(shape, np.float32)))
        assert isinstance(err.value, ValueError) and "Fix:" in str(err.value)
        with pytest.raises(ValueError):  # as NumPy's, which raises ValueError too
            bool(np.ones(shape, np.float32))


def _keys(rng: np.random.Generator, shape: tuple[int, ...], count: int) -> list[Any]:
    keys: list[Any] = [0, -1, (0, 1), (slice(None), 2), (..., 1), (None, 1),
                       (slice(None, None, -1),), (1, slice(None), None),
                       (slice(1, None, 2), slice(None, None, -2)), (slice(3, 1),)]
    for _ in range(count):
        parts: list[Any] = []
        for dim in shape[: int(rng.integers(1, len(shape) + 1))]:
            if rng.random() < 0.3:
                parts.append(int(rng.integers(-dim, dim)))
            else:
                lo, hi = (int(v) for v in rng.integers(-dim - 1, dim + 2, size=2))
                step = int(rng.choice([-3, -2, -1, 1, 2, 3]))
                parts.append(slice(lo, hi, step))
        keys.append(tuple(parts))
    return keys


@pytest.mark.parametrize("order", ["C", "F"])
def test_basic_indexing_matches_numpy_and_shares_the_buffer(order: str) -> None:
    rng = stable_rng("index", order)
    x = rng.integers(-1000, 1000, size=(4, 5, 6)).astype(np.int32)
    t = hg.from_numpy(x, order=order)
    stored = np.asarray(x, order=order)  # NumPy's own view of the same storage order
    for key in _keys(rng, x.shape, 60):
        v = t[key]
        want = stored[key]
        assert v.shape == want.shape, key
        assert np.array_equal(v.numpy(), want), key
        assert v.buffers[0] is t.buffers[0], key  # a view: the same buffer
        dense = want.flags.c_contiguous or want.flags.f_contiguous
        assert (v.layout_name != "strided") == (dense or not want.size), key
    nested = t[1:, ::-1][0, 1:4]  # a view of a strided view
    assert np.array_equal(nested.numpy(), x[1:, ::-1][0, 1:4])
    assert _shares(t, np.asarray(t[:, 1, ::2], copy=False))  # strided: still no copy


def test_scalar_index_gives_a_rank0_row_major_tensor() -> None:
    t = hg.from_numpy(np.arange(6, dtype=np.float64).reshape(2, 3))
    s = t[1, 2]
    assert s.shape == () and s.layout_name == "row_major" and float(s.numpy()) == 5.0


def test_packed_views_start_on_a_byte() -> None:
    codes = np.arange(-8, 8, dtype=np.int8)
    t = hg.from_numpy(codes.reshape(4, 4).astype(ml_dtypes.int4))
    assert np.array_equal(t[1].numpy().astype(np.int8), codes[4:8])
    assert np.array_equal(t[:, ::2].numpy().astype(np.int8), codes.reshape(4, 4)[:, ::2])
    with pytest.raises(hg.UnsupportedOpError, match="inside a byte"):
        t[0, 1:]


def test_indexed_views_materialize_on_the_cpu_device() -> None:
    x = np.arange(48, dtype=np.float32).reshape(6, 8)
    v = hg.from_numpy(x)[::-2, 1:7:3]
    dense = hg.materialize(v)
    assert dense.layout_name == "row_major" and np.array_equal(dense.numpy(), x[::-2, 1:7:3])


# -- repr and cpu ------------------------------------------------------------------------------
def test_repr_shows_layout_and_quantization() -> None:
    q = hg.quantize(np.ones((2, 32), np.float32), "per_block", axis=1, block_size=32,
                    dtype="int4")
    text = repr(q)
    assert "layout=row_major" in text and "quantization=per_block(axis=1, block_size=32)" in text
    v = hg.from_numpy(np.zeros((3, 4), np.uint8))[:, ::2]
    assert "layout=strided(4, 2)" in repr(v)


# -- the file object ----------------------------------------------------------------------------
def test_file_is_a_read_only_mapping(tmp_path: Path) -> None:
    a, b = np.arange(4, dtype=np.float32), np.ones((2, 2), np.int8)
    hg.save(tmp_path / "m.hrry", {"a": a, "b": b})
    with hg.open_file(tmp_path / "m.hrry") as f:
        assert list(f) == ["a", "b"] == list(f.keys()) and len(f) == 2
        assert "a" in f and "c" not in f and 3 not in f
        assert np.array_equal(f["a"].numpy(), a) and np.array_equal(f["b"].numpy(), b)
        assert {k: v.numpy().tolist() for k, v in f.items()} == {"a": a.tolist(),
                                                                 "b": b.tolist()}
        with hg.open_file(tmp_path / "m.hrry") as g:
            assert f == f and f != g  # identity: comparing contents would read every tensor
        assert "2 tensors" in repr(f)
        with pytest.raises(TypeError):
            f["a"] = f["b"]  # type: ignore[index]
