"""dequantize() of block-paged quantized tensors on every device, bit-exact against NumPy:
``block_paged_to_dense`` of the pool and of the per-page-slot parameters, then the dequantization formula (Hurray spec, Quantization).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError
from hurray_gpu.format.addressing import block_paged_to_dense
from hurray_gpu.format.descriptor import BufferHandle, TensorDescriptor
from hurray_gpu.format.descriptor.layouts import BlockPaged
from hurray_gpu.format.descriptor.quant import PerBlockAffine, PerChannelAffine, PerTensorAffine
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.kv_cache import PagedKVCache
from hurray_gpu.ops import dequantize
from hurray_gpu.tensor import Tensor

PS, PAGES, HEADS, DIM = 4, 5, 2, 3
SLOTS = PAGES * PS
NP_OUT = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
SCALE_NP = {1: np.float16, 2: ml_dtypes.bfloat16, 3: np.float32}
# Sequence 0: pages [3, 0], 6 tokens; sequence 1 shares page 3 (prefix), then page 4: 5 tokens.
BT, SP, LENS = [3, 0, 3, 4], [0, 2, 4], [6, 5]


def _tensor(storage: str, quant, params: list[np.ndarray], seed: int = 0, bt=BT, sp=SP,
            total: int = 11) -> tuple[Tensor, np.ndarray]:
    rng = np.random.default_rng(seed)
    dt = by_name(storage)
    info = np.iinfo(dt.numpy)
    pool = rng.integers(info.min, info.max, size=SLOTS * HEADS * DIM, endpoint=True)
    pool = pool.astype(dt.numpy)
    bt_b = np.asarray(bt, "<u4").view(np.uint8)
    sp_b = np.asarray(sp, "<u4").view(np.uint8)
    blobs = [pool.view(np.uint8), bt_b, sp_b] + [np.ascontiguousarray(p).view(np.uint8)
                                                 .reshape(-1) for p in params]
    layout = BlockPaged(PS, PAGES, num_seqs=len(sp) - 1)
    desc = TensorDescriptor(dt, (total, HEADS, DIM), layout,
                            tuple(BufferHandle(b.size, 64) for b in blobs), quantization=quant)
    return Tensor.from_parts(desc, blobs), pool


def _dense(arr: np.ndarray, lens=LENS, bt=BT, sp=SP) -> np.ndarray:
    """block_paged_to_dense of a per-slot array (scales) or of the pool."""
    pool = arr.reshape(PAGES, PS, -1, arr.size // (SLOTS * HEADS) if arr.size > SLOTS else 1)
    return block_paged_to_dense(pool, np.array(bt), np.array(sp), PS, lens)


def _bits(t: Tensor) -> np.ndarray:
    return np.asarray(t.to("cpu").buffers[0]).copy()


def _check(t: Tensor, want32: np.ndarray, device, **kw) -> None:
    for out, npt in NP_OUT.items():
        got = dequantize(t, out, device=device, **kw)
        assert got.shape == want32.shape and got.dtype.name == out and got.device is device
        want = want32.astype(np.float32).astype(npt)
        assert np.array_equal(_bits(got), want.view(np.uint8).reshape(-1)), out


@pytest.mark.parametrize("stype", [1, 2, 3])
@pytest.mark.parametrize("storage", ["int8", "uint8"])
@pytest.mark.parametrize("zp_mode", ["symmetric", "split", "shared"])
def test_per_block_per_page_slot(device, storage: str, stype: int, zp_mode: str) -> None:
    rng = np.random.default_rng(stype * 7 + len(zp_mode))
    scales = (rng.uniform(0.25, 4.0, SLOTS) * rng.choice([-1, 1], SLOTS)).astype(SCALE_NP[stype])
    lo, hi = (-128, 127) if storage == "int8" else (0, 255)
    zps = rng.integers(lo, hi, size=SLOTS, endpoint=True).astype("<i4")
    sym = zp_mode == "symmetric"
    zidx = None if sym else (3 if zp_mode == "shared" else 4)
    params = [] if sym else [zps]
    if zp_mode == "shared":
        params = [np.concatenate([scales.view(np.uint8), zps.view(np.uint8)])]
    else:
        params = [scales] + params
    quant = PerBlockAffine(0, PS, 3, zidx, stype)
    t, pool = _tensor(storage, quant, params, seed=stype)
    codes = _dense(pool).astype(np.int64)
    s = _dense(scales.astype(np.float32)).reshape(-1, 1, 1)
    z = 0 if sym else _dense(zps).reshape(-1, 1, 1).astype(np.int64)
    want = s * (codes - z).astype(np.float32)
    _check(t, want, device, seq_lens=LENS)


@pytest.mark.parametrize("axis", [1, 2])
def test_per_channel_axis_1_2(device, axis: int) -> None:
    n = (HEADS, DIM)[axis - 1]
    scales = np.linspace(-2.0, 3.0, n).astype(np.float32)
    zps = np.arange(n, dtype="<i4") - 1
    t, pool = _tensor("int16", PerChannelAffine(axis, 3, 4), [scales, zps], seed=axis)
    shape = [1, 1, 1]
    shape[axis] = n
    codes = _dense(pool).astype(np.int64)
    want = scales.reshape(shape) * (codes - zps.reshape(shape)).astype(np.float32)
    _check(t, want, device, seq_lens=LENS)


def test_per_tensor_and_seq_lens_sources(device) -> None:
    t, pool = _tensor("int8", PerTensorAffine(0.5, -3), [], total=16)
    full = 0.5 * (_dense(pool, lens=None).astype(np.int64) + 3).astype(np.float32)
    _check(t, full, device)                          # no seq_lens: full pages
    t2, _ = _tensor("int8", PerTensorAffine(0.5, -3), [])
    want = 0.5 * (_dense(pool).astype(np.int64) + 3).astype(np.float32)
    _check(t2, want, device, seq_lens=LENS)          # the argument
    t3 = Tensor.from_parts(t2.descriptor, t2.buffers)
    t3.seq_lens = np.array(LENS)
    _check(t3, want, device)                         # the tensor's attribute
    with pytest.raises(HurrayFormatError, match="Fix:"):
        dequantize(t2.to(device), seq_lens=[7, 5])   # sums to 12, not 11


@pytest.mark.parametrize(("bt", "sp"), [([3, 5, 3, 4], SP), ([3, 0, 3, 4], [0, 3, 2, 4])])
def test_bad_block_table_rejected(device, bt, sp) -> None:
    scales = np.ones(SLOTS, np.float32)
    t, _ = _tensor("int8", PerBlockAffine(0, PS, 3, None, 3), [scales], bt=bt, sp=sp,
                   total=16)
    with pytest.raises(HurrayFormatError, match="Fix:"):
        dequantize(t.to(device))


def test_zero_scale_in_used_slot_rejected(device) -> None:
    scales = np.ones(SLOTS, np.float32)
    scales[4 * 3 + 1] = 0.0                          # page 3, slot 1: used by both sequences
    t, _ = _tensor("int8", PerBlockAffine(0, PS, 3, None, 3), [scales])
    with pytest.raises(HurrayFormatError, match="page slot 13 .token 1."):
        dequantize(t.to(device), seq_lens=LENS)
    scales[4 * 3 + 1], scales[4 * 1] = 1.0, np.nan   # page 1 is unused: no error
    t, _ = _tensor("int8", PerBlockAffine(0, PS, 3, None, 3), [scales])
    assert dequantize(t.to(device), seq_lens=LENS).shape == (11, HEADS, DIM)


def test_empty_and_unsupported(device) -> None:
    t, _ = _tensor("int8", PerBlockAffine(0, PS, 3, None, 3), [np.ones(SLOTS, np.float32)],
                   bt=[], sp=[0], total=0)
    assert dequantize(t.to(device)).shape == (0, HEADS, DIM)
    with pytest.raises(UnsupportedOpError, match="Fix:"):
        dequantize(Tensor.from_numpy(np.zeros(3, np.int8)), seq_lens=[1])


def test_int8_kv_export_dequantizes_like_gather(kernel_device) -> None:
    rng = np.random.default_rng(11)
    cache = PagedKVCache(kernel_device, 1, 2, 4, num_pages=6, page_size=2, kv_dtype="int8")
    seqs = [cache.add_sequence() for _ in range(2)]
    rows = rng.normal(size=(7, 2, 4)).astype(np.float16)
    cache.append(seqs, 0, rows, -rows, counts=[4, 3])
    for role, index in (("key", 0), ("value", 1)):
        t = cache.export(0, role)
        got = dequantize(t, "float16")
        assert got.device is kernel_device and got.shape == (7, 2, 4)
        want = cache.gather(seqs, 0)[index]
        assert np.array_equal(_bits(got), _bits(want))
        # materialize() of the quantized export takes the same path.
        assert np.array_equal(_bits(t.materialize("float16")), _bits(want))
