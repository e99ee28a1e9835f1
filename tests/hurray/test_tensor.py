"""Tests of hurray_gpu.Tensor: from_numpy / from_parts validation / numpy()."""

from __future__ import annotations

import glob
import json
import os

import ml_dtypes
import numpy as np
import pytest

from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError
from hurray_gpu.format import descriptor as d
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.tensor import Tensor

from _io_samples import (
    NUMPY_SAMPLES,
    coo,
    head,
    layout_samples,
    member,
    partition,
    quantized_per_channel,
    strided,
)

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "golden", "hurray")


@pytest.mark.parametrize("name", sorted(NUMPY_SAMPLES))
def test_from_numpy_round_trip_every_dtype(name: str) -> None:
    arr = NUMPY_SAMPLES[name]
    t = Tensor.from_numpy(arr)
    assert t.dtype.name == name
    assert t.shape == arr.shape
    assert t.layout_name == "row_major"
    out = t.numpy()
    assert out.dtype == arr.dtype and out.shape == arr.shape
    assert out.tobytes() == np.ascontiguousarray(arr).tobytes()
    assert t.buffers[0].array.ctypes.data % 64 == 0


def test_sub_byte_packing_matches_spec_examples() -> None:
    assert Tensor.from_numpy(np.array([True, False, True, True, False])).buffers[0].array.tolist() == [
        0x0D]
    assert Tensor.from_numpy(np.array([5, 12, 3], dtype=ml_dtypes.uint4)).buffers[0].array.tolist() == [
        0xC5, 0x03]
    assert Tensor.from_numpy(np.array([3, 1, 2], dtype=ml_dtypes.uint2)).buffers[0].array.tolist() == [
        0x27]
    six = Tensor.from_numpy(np.array([0.125, 0.25, 0.5, 1.0], dtype=ml_dtypes.float6_e2m3fn))
    assert six.buffers[0].array.tolist() == [0x81, 0x40, 0x20]  # codes [1, 2, 4, 8]


def test_from_numpy_column_major_and_scalar() -> None:
    arr = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = Tensor.from_numpy(arr, order="F")
    assert t.layout_name == "col_major"
    assert t.buffers[0].array.view("<i4").tolist() == [0, 3, 1, 4, 2, 5]
    np.testing.assert_array_equal(t.numpy(), arr)
    s = Tensor.from_numpy(np.float64(2.5))
    assert s.shape == () and s.numpy().shape == () and float(s.numpy()) == 2.5
    with pytest.raises(HurrayFormatError, match="order"):
        Tensor.from_numpy(arr, order="K")


def test_from_numpy_non_contiguous_and_big_endian() -> None:
    arr = np.arange(12, dtype=">i4").reshape(3, 4)[:, ::2]
    t = Tensor.from_numpy(arr)
    assert t.buffers[0].array.view("<i4").tolist() == [0, 2, 4, 6, 8, 10]
    np.testing.assert_array_equal(t.numpy(), arr)


def test_from_numpy_rejects_unmapped_dtype() -> None:
    with pytest.raises(UnsupportedOpError):
        Tensor.from_numpy(np.array(["a"]))
    with pytest.raises(UnsupportedOpError):
        Tensor.from_numpy(np.array([1.0], dtype=ml_dtypes.float8_e4m3))


def _golden() -> list[tuple[str, dict]]:
    with open(os.path.join(GOLDEN, "manifest.json")) as f:
        manifest = json.load(f)
    return [(e["file"], e["expect"]) for e in manifest["descriptors"]]


@pytest.mark.parametrize(("path", "expect"), _golden())
def test_from_parts_golden_descriptors(path: str, expect: dict) -> None:
    with open(os.path.join(GOLDEN, path), "rb") as f:
        raw = f.read()
    sizes = expect["buffer_byte_sizes"]
    bufs = [np.arange(n, dtype=np.uint8) for n in sizes]
    t = Tensor.from_parts(raw, bufs)
    assert t.descriptor_bytes == raw
    assert list(t.shape) == expect["shape"]
    assert t.dtype.name == expect["element_type"]
    assert [b.nbytes for b in t.buffers] == sizes
    with pytest.raises(HurrayFormatError, match="buffer_count|buffers given"):
        Tensor.from_parts(raw, bufs + [b""])
    if sizes[0]:
        with pytest.raises(HurrayFormatError) as err:
            Tensor.from_parts(raw, [np.zeros(sizes[0] + 1, np.uint8)])
        assert err.value.field == "buffers[0].byte_size"


def test_golden_numpy_values() -> None:
    with open(os.path.join(GOLDEN, "descriptors", "row_major_int8_5.bin"), "rb") as f:
        t = Tensor.from_parts(f.read(), [bytes([1, 2, 253, 4, 5])])
    assert t.numpy().tolist() == [1, 2, -3, 4, 5]
    with open(os.path.join(GOLDEN, "descriptors", "strided_f32_3x4.bin"), "rb") as f:
        raw = f.read()
    vals = np.arange(12, dtype="<f4")
    st = Tensor.from_parts(raw, [vals.tobytes()])
    np.testing.assert_array_equal(st.numpy(), vals.reshape(3, 4))


def test_from_parts_copies_misaligned_memory_only() -> None:
    raw = np.zeros(200, dtype=np.uint8)
    start = 64 - raw.ctypes.data % 64
    aligned = raw[start : start + 48]
    misaligned = raw[start + 1 : start + 49]
    desc = d.TensorDescriptor.dense("float32", (3, 4))
    assert np.shares_memory(Tensor.from_parts(desc, [aligned]).buffers[0], raw)
    t = Tensor.from_parts(desc, [misaligned])
    assert not np.shares_memory(t.buffers[0], raw)
    assert t.buffers[0].array.ctypes.data % 64 == 0


def test_from_parts_rejects_bad_descriptors_and_buffers() -> None:
    with pytest.raises(HurrayFormatError, match="magic"):
        Tensor.from_parts(b"XXXX" + bytes(57), [bytes(48)])
    desc = d.TensorDescriptor.dense("float32", (3, 4))
    with pytest.raises(HurrayFormatError, match="bytes-like"):
        Tensor.from_parts(desc, [object()])
    with pytest.raises(HurrayFormatError, match="members"):
        Tensor.from_parts(desc, [bytes(48)], [Tensor.from_numpy(np.zeros(1))])


def test_strided_numpy_and_layout_errors() -> None:
    np.testing.assert_array_equal(strided().numpy(), np.arange(6).reshape(2, 3).T)
    neg = d.TensorDescriptor(by_name("int16"), (4,), d.Strided((-1,)), (d.BufferHandle(8),),
                             byte_offset=6)
    t = Tensor.from_parts(neg, [np.arange(4, dtype="<i2").view(np.uint8)])
    assert t.numpy().tolist() == [3, 2, 1, 0]
    nib = d.TensorDescriptor(by_name("uint4"), (2, 2), d.Strided((1, 2)), (d.BufferHandle(2),))
    t4 = Tensor.from_parts(nib, [bytes([0x21, 0x43])])  # codes 1, 2, 3, 4
    assert t4.numpy().astype(int).tolist() == [[1, 3], [2, 4]]
    for t in (coo(), quantized_per_channel(), partition()):
        with pytest.raises(UnsupportedOpError):
            t.numpy()


def test_numpy_of_generated_col_major_and_strided() -> None:
    samples = layout_samples()
    col = samples["col_major"]
    raw = col.buffers[0].array.view("<f4")
    np.testing.assert_array_equal(col.numpy(), raw.reshape(4, 3).T)
    st = samples["strided"]  # strides (4, -1), byte_offset 6 over 12 int16 values
    vals = st.buffers[0].array.view("<i2")
    expected = [[vals[3 + 4 * i - j] for j in range(4)] for i in range(3)]
    assert st.numpy().tolist() == expected
    for name in ("tiled", "morton", "hilbert", "csr", "block_paged", "extension_layout",
                 "private_dtype", "per_block", "nf4", "mxfp"):
        with pytest.raises(UnsupportedOpError):
            samples[name].numpy()
    assert samples["scalar"].numpy().shape == ()


def test_numpy_copy_is_writable() -> None:
    t = Tensor.from_parts(d.TensorDescriptor.dense("int8", (3,)), [bytes([1, 2, 3])])
    out = t.numpy(copy=True)
    out[0] = 9
    assert t.numpy().tolist() == [1, 2, 3]


def test_composite_validation() -> None:
    p = partition()
    assert p.is_composite and len(p.members) == 2 and p.buffers == ()
    left, right = p.members
    with pytest.raises(HurrayFormatError, match="member_count"):
        Tensor.from_parts(head(1, 2), [], [left])
    gap = member(np.zeros((2, 1)), (2, 4), (0, 2))
    with pytest.raises(HurrayFormatError, match="gap"):
        Tensor.from_parts(head(1, 2), [], [left, gap])
    with pytest.raises(HurrayFormatError, match="overlap"):
        Tensor.from_parts(head(1, 2), [], [left, left])
    wrong_parent = member(np.zeros((2, 2)), (2, 5), (0, 2))
    with pytest.raises(HurrayFormatError, match="parent_shape"):
        Tensor.from_parts(head(1, 2), [], [left, wrong_parent])
    with pytest.raises(HurrayFormatError, match="base"):
        Tensor.from_parts(head(2, 2, combine=1), [],
                          [member(np.zeros((2, 4)), (2, 4), (0, 0), role=0),
                           member(np.zeros((1, 1)), (2, 4), (0, 0), role=0)])
    ints = Tensor.from_parts(d.TensorDescriptor(
        by_name("int32"), (2, 2), d.RowMajor(), (d.BufferHandle(16),),
        shard=d.Shard((2, 4), (0, 2))), [bytes(16)])
    with pytest.raises(HurrayFormatError, match="type_tag"):
        Tensor.from_parts(head(1, 2), [], [left, ints])


def test_equality_and_repr() -> None:
    a = Tensor.from_numpy(np.arange(3, dtype=np.int8))
    b = Tensor.from_numpy(np.arange(3, dtype=np.int8))
    c = Tensor.from_numpy(np.array([0, 1, 5], dtype=np.int8))
    assert a == b and a != c and a != 3
    assert repr(a) == "Tensor(dtype=int8, shape=(3,), layout=row_major, buffers=[3])"


def test_golden_files_exist() -> None:
    assert len(glob.glob(os.path.join(GOLDEN, "descriptors", "*.bin"))) >= 7


def test_exact_cover_matches_brute_force() -> None:
    """The corner-weight cover check agrees with counting every element's covering boxes,
    and the element it names is covered 0 times (gap) or 2+ times (overlap)."""
    from hurray_gpu.format import composite

    rng = np.random.default_rng(7)
    verdicts = {"ok": 0, "gap": 0, "overlap": 0}
    for _ in range(600):
        shape = tuple(int(x) for x in rng.integers(1, 5, rng.integers(0, 4)))
        boxes = []
        for _ in range(int(rng.integers(1, 6))):
            lo = tuple(int(rng.integers(0, s)) for s in shape)
            hi = tuple(int(rng.integers(a, s + 1)) for a, s in zip(lo, shape, strict=True))
            boxes.append((lo, hi))
        if rng.random() < 0.3:  # an exact tiling: split the head along one axis
            cut = int(rng.integers(0, shape[0] + 1)) if shape else 0
            boxes = [((0,) * len(shape), shape)] if not shape else [
                ((0,) + (0,) * (len(shape) - 1), (cut,) + shape[1:]),
                ((cut,) + (0,) * (len(shape) - 1), shape)]
        count = np.zeros(shape, dtype=np.int64)
        for lo, hi in boxes:
            count[tuple(slice(a, b) for a, b in zip(lo, hi, strict=True))] += 1
        members = [d.TensorDescriptor(by_name("uint8"), tuple(b - a for a, b in zip(lo, hi,
                                                                                   strict=True)),
                                      d.Strided((0,) * len(shape)), (d.BufferHandle(1),),
                                      shard=d.Shard(shape, lo)) for lo, hi in boxes]
        try:
            composite._check_exact_cover(shape, members)
            verdict = "ok"
        except HurrayFormatError as err:
            verdict = "overlap" if "overlap" in str(err) else "gap"
            element = tuple(int(v) for v in str(err).split("element [")[1].split("]")[0]
                            .split(",") if v.strip())
            assert (count[element] > 1) == (verdict == "overlap") and count[element] != 1
        assert verdict == "ok" if np.all(count == 1) else verdict != "ok"
        verdicts[verdict] += 1
    assert min(verdicts.values()) > 50  # every outcome is exercised
