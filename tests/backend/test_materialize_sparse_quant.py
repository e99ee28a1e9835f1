"""materialize() of quantized sparse tensors (COO/CSR/CSC/CSF values stored quantized) on every
device: each stored code dequantizes with its own coordinate's parameters, unstored elements
are +0.0, every parameter block is validated, hostile indices are refused first."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from hurray_gpu.errors import HurrayFormatError
from hurray_gpu.format.addressing import coo_to_dense, csc_to_dense, csf_to_dense, csr_to_dense
from hurray_gpu.format.descriptor import BufferHandle, TensorDescriptor
from hurray_gpu.format.descriptor.layouts import COO, Composite
from hurray_gpu.format.descriptor.quant import PerChannelAffine
from hurray_gpu.format.descriptor.sections import CompositeMember, Shard
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.format.packing import unpack
from hurray_gpu.ops.dequantize import dequantize
from hurray_gpu.ops.host import element, sparsify
from hurray_gpu.ops.materialize import materialize
from hurray_gpu.ops.quantize import random_quantized
from hurray_gpu.tensor import Tensor

_BITS = {"float32": np.uint32, "float16": np.uint16, "bfloat16": np.uint16}


def _u64(a) -> np.ndarray:
    return np.asarray(a, dtype="<u8").view(np.uint8)


def _stored_mask(t: Tensor) -> np.ndarray:
    """Which elements the index buffers store, by the NumPy addressing oracles."""
    d, b = t.descriptor, [np.asarray(x) for x in t.to("cpu").buffers]
    ones = np.ones(int(d.layout.nnz), np.uint8)
    lay, shape = d.layout, d.shape
    count = {0x06: 1, 0x07: 2, 0x08: 2}.get(lay.TAG, 2 * len(shape))
    idx = [x.view("<u8") for x in b[1:1 + count]]  # quantization parameters follow
    if lay.TAG == 0x06:
        dense = coo_to_dense(shape, ones, idx[0], is_sorted=bool(lay.is_sorted))
    elif lay.TAG == 0x07:
        dense = csr_to_dense(shape, ones, idx[0], idx[1])
    elif lay.TAG == 0x08:
        dense = csc_to_dense(shape, ones, idx[0], idx[1])
    else:
        dense = csf_to_dense(shape, lay.mode_order, ones, idx)
    return np.asarray(dense) != 0


def _oracle_for(device) -> str:
    """Where the dense dequantization that checks ``device`` runs: the reference device (the
    NumPy oracle) for a compiled device. The reference device's own sparse results come from
    the same oracle's dequant code, so they are checked against the cpu device's compiled C
    kernels instead: the oracle is never compared with itself."""
    return "cpu" if device.kind == "reference" else "reference"


def _expected(dense_q: Tensor, sparse: Tensor, dtype: str, device) -> np.ndarray:
    """Dense dequantization (see ``_oracle_for``), kept where stored, +0.0 elsewhere."""
    full = dequantize(dense_q.to(_oracle_for(device)), dtype).to("cpu").numpy()
    return np.where(_stored_mask(sparse), full, np.zeros((), full.dtype))


SCHEMES = [("per_tensor", "uint8", (9, 7), 0, {}),
           ("per_channel", "int8", (6, 10), 1, {}),
           ("per_channel", "uint4", (7, 6), 0, {"symmetric": True}),
           ("per_block", "int4", (5, 70), 1, {"scale_type": "float16"}),  # partial last block
           ("per_block", "uint2", (3, 4, 40), 2, {"scale_type": "bfloat16"}),
           ("per_block", "int8", (48, 5), 0, {"shared": True}),
           ("nf4", "uint4", (6, 64), 1, {}),
           ("mxfp", "float4_e2m1", (4, 64), 1, {}),
           ("mxfp", "float6_e3m2", (32, 3), 0, {}),
           ("mxfp", "float8_e4m3", (2, 3, 32), 2, {}),
           ("mxfp", "int8", (3, 32), 1, {})]


@pytest.mark.parametrize("case", range(len(SCHEMES)), ids=[f"{s[0]}-{s[1]}" for s in SCHEMES])
@pytest.mark.parametrize("out", ["float32", "float16", "bfloat16"])
def test_quantized_sparse_matches_dense_dequant(device, case: int, out: str) -> None:
    scheme, storage, shape, axis, kw = SCHEMES[case]
    rng = np.random.default_rng(case * 11 + len(out))
    t = random_quantized(rng, scheme, storage, shape, axis=axis, block_size=32, **kw)
    fmts = ["coo", "csr", "csc"] if len(shape) == 2 else ["coo", "csf"]
    keep = rng.random(shape) < 0.3
    for fmt in fmts:
        s = sparsify(t, fmt, keep=keep)
        assert int(s.descriptor.layout.nnz) == keep.sum()
        got = materialize(s.to(device), out).to("cpu").numpy()
        want = _expected(t, s, out, device)
        assert got.shape == shape and got.dtype == want.dtype
        assert np.array_equal(got.view(_BITS[out]), want.view(_BITS[out])), fmt


def _per_channel_coo(coords, codes, scales, zps, *, is_sorted: int = 1) -> Tensor:
    """int8 per-channel (axis 1) COO of shape (2, 3), built by hand."""
    n = len(codes)
    vals = np.asarray(codes, np.int8).view(np.uint8)
    bufs = [vals, _u64(np.asarray(coords).reshape(-1)), np.asarray(scales, "<f4").view(np.uint8),
            np.asarray(zps, "<i4").view(np.uint8)]
    desc = TensorDescriptor(by_name("int8"), (2, 3), COO(n, is_sorted),
                            tuple(BufferHandle(b.size, 64) for b in bufs),
                            quantization=PerChannelAffine(1, 2, 3))
    return Tensor.from_parts(desc, bufs)


def test_known_answer_per_channel_coo(device) -> None:
    # x = scale[col] * (q - zp[col]): (0,2): -1*(5+2) = -7; (1,0): 0.5*(-3-1) = -2;
    # (1,1): 2*(7-0) = 14; every other element is implicitly +0.0.
    t = _per_channel_coo([[1, 1], [0, 2], [1, 0]], [7, 5, -3], [0.5, 2.0, -1.0], [1, 0, -2],
                         is_sorted=0)
    got = materialize(t.to(device)).to("cpu").numpy()
    want = np.array([[0, 0, -7], [-2, 14, 0]], np.float32)
    assert np.array_equal(got, want)
    assert not np.signbit(got[0, 0])
    assert element(t, (0, 2)) == 5 and element(t, (0, 0)) == 0


def test_bad_scale_in_a_block_without_stored_values_is_refused(device) -> None:
    rng = np.random.default_rng(1)
    t = random_quantized(rng, "per_block", "int8", (4, 64), axis=1, block_size=32)
    s = sparsify(t, "coo")
    bufs = [np.array(b, copy=True) for b in s.buffers]
    nnz = int(s.descriptor.layout.nnz)
    coords = bufs[1].view("<u8").reshape(nnz, 2)
    keep = coords[:, 1] < 32  # stored values only in the first block of each row
    bufs[0] = bufs[0][:keep.sum()].copy()
    bufs[1] = _u64(coords[keep].reshape(-1))
    bufs[2].view("<f4")[3] = np.nan  # row 1, block 1: nothing stored there
    handles = tuple(BufferHandle(b.size, 64) for b in bufs)
    desc = dataclasses.replace(s.descriptor, layout=COO(int(keep.sum()), 1), buffers=handles)
    bad = Tensor.from_parts(desc, bufs).to(device)
    with pytest.raises(HurrayFormatError, match="scale entry 3"):
        materialize(bad)


@pytest.mark.parametrize("scheme", ["nf4", "mxfp"])
def test_bad_table_scales_are_refused(device, scheme: str) -> None:
    storage = "uint4" if scheme == "nf4" else "float8_e5m2"
    t = random_quantized(np.random.default_rng(2), scheme, storage, (2, 64), axis=1,
                         block_size=32)
    s = sparsify(t, "csr")
    bufs = [np.array(b, copy=True) for b in s.buffers]
    if scheme == "nf4":
        bufs[3].view("<f4")[2] = -1.0
    else:
        bufs[3][2] = 0xFF
    with pytest.raises(HurrayFormatError, match="entry 2|byte 2"):
        materialize(Tensor.from_parts(s.descriptor, bufs).to(device))


def test_no_stored_values_still_validates_parameters(device) -> None:
    ok = _per_channel_coo(np.zeros((0, 2), np.int64), [], [1.0, 2.0, 3.0], [0, 0, 0])
    got = materialize(ok.to(device), "bfloat16").to("cpu").numpy()
    assert got.shape == (2, 3) and not got.view(np.uint16).any()
    bad = _per_channel_coo(np.zeros((0, 2), np.int64), [], [1.0, 0.0, 3.0], [0, 0, 0])
    with pytest.raises(HurrayFormatError, match="scale entry 1"):
        materialize(bad.to(device))
    out_of_range = _per_channel_coo([[0, 0]], [1], [1.0, 1.0, 1.0], [0, 0, 128])
    with pytest.raises(HurrayFormatError, match="zero point entry 2"):
        materialize(out_of_range.to(device))


@pytest.mark.parametrize("coords", [[[0, 1], [2, 0]], [[0, 1], [0, 1]], [[1, 0], [0, 2]]],
                         ids=["out_of_bounds", "duplicate", "unsorted"])
def test_hostile_indices_refused_before_dequantizing(device, coords) -> None:
    t = _per_channel_coo(coords, [1, 2], [1.0, 1.0, 1.0], [0, 0, 0])
    with pytest.raises(HurrayFormatError):
        materialize(t.to(device))


def test_sparsify_keeps_codes_and_parameters() -> None:
    t = random_quantized(np.random.default_rng(4), "per_block", "int4", (4, 64), axis=1,
                         block_size=32, shared=True)
    s = sparsify(t, "csr")
    q = s.descriptor.quantization
    assert q.scale_buffer_index == q.zero_point_buffer_index == 3
    assert s.buffers[3].numpy().tobytes() == t.buffers[1].numpy().tobytes()
    mask = _stored_mask(s)
    assert np.array_equal(mask, dequantize(t).numpy() != 0)
    codes = unpack(np.asarray(t.buffers[0]), by_name("int4"), 4 * 64).reshape(4, 64)
    for index in zip(*np.nonzero(mask), strict=True):
        assert element(s, index) == codes[index]


def test_spqr_overlay_quantized_base_plus_quantized_outliers(device) -> None:
    """SpQR-style: an int4 per-block base plus int8 per-channel COO outliers, added in f32."""
    rng = np.random.default_rng(9)
    base = random_quantized(rng, "per_block", "int4", (8, 64), axis=1, block_size=32)
    dense_corr = random_quantized(rng, "per_channel", "int8", (4, 16), axis=1)
    keep = np.zeros((4, 16), bool)
    keep[0, 3] = keep[2, 15] = keep[3, 0] = True
    corr = sparsify(dense_corr, "coo", keep=keep)
    members = []
    for t, offset, role in ((base, (0, 0), 1), (corr, (2, 8), 0)):
        desc = dataclasses.replace(t.descriptor, shard=Shard((8, 64), offset),
                                   composite_member=CompositeMember(role))
        members.append(Tensor.from_parts(desc, list(t.buffers)))
    head = TensorDescriptor(by_name("float32"), (8, 64), Composite(2, 2, 2), ())
    got = materialize(Tensor.from_parts(head, [], members).to(device)).to("cpu").numpy()
    oracle = _oracle_for(device)
    want = dequantize(base.to(oracle)).to("cpu").numpy()
    outliers = dequantize(dense_corr.to(oracle)).to("cpu").numpy()
    want[2:6, 8:24] += np.where(keep, outliers, np.float32(0))
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
