"""materialize() of sparse, quantized and composite tensors on every device vs NumPy oracles;
hostile index buffers (one test per invariant); element(), relayout() and sparsify()."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError
from hurray_gpu.format.addressing import coo_to_dense, csc_to_dense, csf_to_dense, csr_to_dense
from hurray_gpu.format.descriptor import BufferHandle, TensorDescriptor
from hurray_gpu.format.descriptor.layouts import (
    COO,
    CSR,
    ColMajor,
    Composite,
    Hilbert,
    Morton,
    Strided,
    Tiled,
)
from hurray_gpu.format.descriptor.sections import CompositeMember, Shard
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.format.packing import unpack
from hurray_gpu.ops.dequantize import dequantize
from hurray_gpu.ops.host import element, relayout, sparsify
from hurray_gpu.ops.materialize import materialize
from hurray_gpu.ops.quantize import random_quantized
from hurray_gpu.tensor import Tensor


def _kernels(device) -> None:
    """Every device runs these, the reference device through the kernels' NumPy references."""


def _u64(a) -> np.ndarray:
    return np.asarray(a, dtype="<u8").view(np.uint8)


def _sparse(dtype: str, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    mask = rng.random(shape) < 0.3
    npdt = by_name(dtype).numpy
    if dtype.startswith("float"):
        vals = rng.standard_normal(shape).astype(np.float32)
    else:
        vals = rng.integers(1, 7, shape)
    return np.where(mask, vals, 0).astype(npdt)


def _oracle(t: Tensor) -> np.ndarray:
    """The NumPy reference (addressing_sparse) applied to the host buffers."""
    d, b = t.descriptor, [np.asarray(x) for x in t.to("cpu").buffers]
    vals = unpack(b[0], d.dtype, int(d.layout.nnz))
    idx = [x.view("<u8") for x in b[1:]]
    lay = d.layout
    if lay.TAG == 0x06:
        return coo_to_dense(d.shape, vals, idx[0], is_sorted=bool(lay.is_sorted))
    if lay.TAG == 0x07:
        return csr_to_dense(d.shape, vals, idx[0], idx[1])
    if lay.TAG == 0x08:
        return csc_to_dense(d.shape, vals, idx[0], idx[1])
    return csf_to_dense(d.shape, lay.mode_order, vals, idx)


CASES = [("coo", (7, 9), "float32"), ("coo", (7, 9), "int4"), ("csr", (7, 9), "float16"),
         ("csr", (7, 9), "float6_e2m3"), ("csr", (5, 6), "float64"), ("csc", (8, 5), "int8"),
         ("csc", (8, 5), "uint2"), ("coo", (3, 4, 5), "float16"), ("csf", (3, 4, 5), "float32"),
         ("csf", (3, 4, 5), "int4"), ("csf_perm", (4, 3, 2, 5), "int8"),
         ("csf_perm", (4, 3, 2, 5), "float64")]


@pytest.mark.parametrize(("fmt", "shape", "dtype"), CASES)
def test_sparse_to_dense(device, fmt: str, shape: tuple[int, ...], dtype: str) -> None:
    _kernels(device)
    rng = np.random.default_rng(len(shape) * 31 + len(fmt))
    dense = _sparse(dtype, rng, shape)
    modes = (2, 0, 3, 1) if fmt == "csf_perm" else None
    t = sparsify(Tensor.from_numpy(dense), fmt[:3], mode_order=modes).to(device)
    got = materialize(t).to("cpu").numpy()
    assert np.array_equal(got, _oracle(t)) and np.array_equal(got, dense)
    for index in [(0,) * len(shape), tuple(n - 1 for n in shape), tuple(n // 2 for n in shape)]:
        assert element(t, index) == dense[index]


def test_unsorted_coo(device) -> None:
    _kernels(device)
    idx = np.array([[2, 1], [0, 3], [1, 0]])
    vals = np.array([5, 6, 7], np.float32)
    desc = TensorDescriptor(by_name("float32"), (3, 4), COO(3, 0),
                            (BufferHandle(12, 64), BufferHandle(48, 64)))
    t = Tensor.from_parts(desc, [vals.view(np.uint8), _u64(idx.reshape(-1))]).to(device)
    want = np.zeros((3, 4), np.float32)
    want[2, 1], want[0, 3], want[1, 0] = 5, 6, 7
    assert np.array_equal(materialize(t).to("cpu").numpy(), want)


def _csr(col, ptr, shape=(3, 4)) -> Tensor:
    vals = np.arange(1, len(col) + 1, dtype=np.float32)
    desc = TensorDescriptor(by_name("float32"), shape, CSR(len(col)),
                            (BufferHandle(4 * len(col), 64), BufferHandle(8 * len(col), 64),
                             BufferHandle(8 * len(ptr), 64)))
    return Tensor.from_parts(desc, [vals.view(np.uint8), _u64(col), _u64(ptr)],)


def _coo(idx, shape=(3, 4), is_sorted=1) -> Tensor:
    idx = np.asarray(idx)
    n = idx.shape[0]
    desc = TensorDescriptor(by_name("float32"), shape, COO(n, is_sorted),
                            (BufferHandle(4 * n, 64), BufferHandle(8 * idx.size, 64)))
    vals = np.arange(1, n + 1, dtype=np.float32)
    return Tensor.from_parts(desc, [vals.view(np.uint8), _u64(idx.reshape(-1))])


HOSTILE = {
    "csr_ptr_first_nonzero": lambda: _csr([0, 1], [1, 1, 2, 2]),
    "csr_ptr_last_not_nnz": lambda: _csr([0, 1], [0, 1, 1, 1]),
    "csr_ptr_decreasing": lambda: _csr([0, 1], [0, 2, 1, 2]),
    "csr_col_out_of_bounds": lambda: _csr([0, 4], [0, 1, 2, 2]),
    "csr_cols_not_increasing": lambda: _csr([2, 1], [0, 2, 2, 2]),
    "csr_huge_index": lambda: _csr([0, 1 << 40], [0, 1, 2, 2]),
    "coo_out_of_bounds": lambda: _coo([[0, 0], [3, 1]]),
    "coo_sorted_but_unsorted": lambda: _coo([[1, 0], [0, 1]]),
    "coo_sorted_duplicate": lambda: _coo([[1, 1], [1, 1]]),
    "coo_unsorted_duplicate": lambda: _coo([[2, 1], [0, 0], [2, 1]], is_sorted=0),
}


def _csf_corrupt(buffer: int, entry: int, value: int) -> Tensor:
    dense = np.zeros((2, 3, 4), np.float32)
    dense[0, 1, 2], dense[0, 2, 0], dense[1, 0, 3], dense[1, 2, 1] = 1, 2, 3, 4
    t = sparsify(Tensor.from_numpy(dense), "csf")
    bufs = [np.array(b, copy=True) for b in t.buffers]
    bufs[buffer].view("<u8")[entry] = value
    return Tensor.from_parts(t.descriptor, bufs)


# CSF buffers: 1 pos_0, 2 crd_0, 3 pos_1, 4 crd_1, 5 pos_2, 6 crd_2.
HOSTILE.update({
    "csf_pos0_last_wrong": lambda: _csf_corrupt(1, 1, 1),
    "csf_pos1_decreasing": lambda: _csf_corrupt(3, 1, 3),
    "csf_crd1_not_increasing": lambda: _csf_corrupt(4, 1, 1),
    "csf_leaf_out_of_bounds": lambda: _csf_corrupt(6, 0, 4),
    "csf_crd0_out_of_bounds": lambda: _csf_corrupt(2, 1, 2),
})


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_index_buffers(device, case: str) -> None:
    _kernels(device)
    t = HOSTILE[case]().to(device)
    with pytest.raises(HurrayFormatError):
        materialize(t)


LAYOUTS = [ColMajor(), Tiled((2, 16)), Tiled((3, 8), outer_layout=2, inner_layout=2),
           Morton((3, 6)), Strided((-64, 1))]


@pytest.mark.parametrize("scheme", ["per_block", "per_channel", "nf4"])
@pytest.mark.parametrize("layout", range(len(LAYOUTS)))
def test_quantized_fused(device, layout: int, scheme: str) -> None:
    _kernels(device)
    rng = np.random.default_rng(layout * 7 + len(scheme))
    storage = "nf4" if scheme == "nf4" else "int4"
    t = random_quantized(rng, scheme, "uint4" if storage == "nf4" else "int4", (8, 64),
                         axis=1 if scheme != "per_channel" else 0, block_size=32)
    want = dequantize(t, "float16").numpy()
    moved = relayout(t, LAYOUTS[layout]).to(device)
    got = materialize(moved, "float16").to("cpu").numpy()
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16))


def test_quantized_hilbert_default_float32(device) -> None:
    _kernels(device)
    rng = np.random.default_rng(5)
    t = random_quantized(rng, "per_tensor", "int8", (16, 16))
    got = materialize(relayout(t, Hilbert(4, 2)).to(device)).to("cpu").numpy()
    assert got.dtype == np.float32
    assert np.array_equal(got.view(np.uint32), dequantize(t).numpy().view(np.uint32))


def _member(t: Tensor, parent: tuple[int, ...], offset: tuple[int, ...],
            role: int | None = None) -> Tensor:
    desc = dataclasses.replace(t.descriptor, shard=Shard(parent, offset),
                               composite_member=None if role is None else CompositeMember(role))
    return Tensor.from_parts(desc, list(t.buffers))


def test_partition_and_group(device) -> None:
    _kernels(device)
    full = np.arange(6 * 8, dtype=np.float32).reshape(6, 8)
    parts = [((0, 0), full[:4, :5]), ((0, 5), full[:4, 5:]), ((4, 0), full[4:])]
    members = [_member(relayout(Tensor.from_numpy(np.ascontiguousarray(p)), ColMajor()),
                       (6, 8), off) for off, p in parts]
    head = TensorDescriptor(by_name("float32"), (6, 8), Composite(1, 0, 3), ())
    t = Tensor.from_parts(head, [], members).to(device)
    assert np.array_equal(materialize(t).to("cpu").numpy(), full)
    group = Tensor.from_parts(TensorDescriptor(by_name("float32"), (6, 8), Composite(3, 0, 3),
                                               ()), [], members).to(device)
    with pytest.raises(UnsupportedOpError, match="materialize the members one by one"):
        materialize(group)  # a group has no single dense value
    outs = [materialize(m) for m in group.members]
    assert len(outs) == 3 and np.array_equal(outs[2].to("cpu").numpy(), full[4:])


@pytest.mark.parametrize("op", [1, 2])
def test_overlay_int4_base_with_f16_coo(device, op: int) -> None:
    _kernels(device)
    rng = np.random.default_rng(op)
    base = random_quantized(rng, "per_block", "int4", (8, 64), axis=1, block_size=32)
    base_vals = dequantize(base, "float16").numpy()
    corr = np.zeros((4, 16), np.float16)
    corr[1, 3], corr[2, 15], corr[3, 0] = 1.5, -2.25, 1000.0
    sparse = sparsify(Tensor.from_numpy(corr), "coo")
    members = [_member(base, (8, 64), (0, 0), 1), _member(sparse, (8, 64), (2, 8), 0)]
    head = TensorDescriptor(by_name("float16"), (8, 64), Composite(2, op, 2), ())
    t = Tensor.from_parts(head, [], members).to(device)
    got = materialize(t).to("cpu").numpy()
    want = base_vals.copy()
    box = want[2:6, 8:24]
    want[2:6, 8:24] = (box.astype(np.float32) + corr).astype(np.float16) if op == 2 else corr
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16))


def test_relayout_roundtrip_and_element() -> None:
    arr = np.arange(5 * 7, dtype=np.int16).reshape(5, 7)
    for layout in (Tiled((2, 3)), Morton((3, 3)), Strided((-7, 1)), ColMajor()):
        t = relayout(Tensor.from_numpy(arr), layout)
        assert np.array_equal(materialize(t).numpy(), arr)
        assert element(t, (4, 6)) == arr[4, 6] and element(t, (1, 2)) == arr[1, 2]
