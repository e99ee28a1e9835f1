"""Quantized KV caches (int8 per-slot scales, float8_e4m3) on every device, bit-exact.

The model quantizes with the NumPy references (power-of-two int8 scales; ml_dtypes for fp8)
and dequantizes with the Hurray per-block formula x = scale[slot] * q.
"""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from test_kv_cache import host, random_rows, same_bits

from hurray_gpu.dialect.kernel import numpy_dtype
from hurray_gpu.format.addressing import block_paged_to_dense
from hurray_gpu.format.descriptor import PerBlockAffine
from hurray_gpu.kernels import run_reference
from hurray_gpu.kernels.paged import QUANT_KERNELS, SKIP_SLOT, quant_kernel, ref_q8_rows
from hurray_gpu.kv_cache import PagedKVCache
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.device import Device
from tests._support import stable_rng

ROW, SLOTS, TOKENS = 7, 23, 9
SPECIALS = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-40, 500.0, -1e30, 448.0, 464.0, 2.0**-10,
            -(2.0**-9) * 1.5, 65504.0]


def _values(rng: np.random.Generator, word: str, count: int) -> np.ndarray:
    x = (rng.standard_normal(count) * np.exp2(rng.integers(-20, 10, count))).astype(np.float32)
    x[:len(SPECIALS)] = SPECIALS
    with np.errstate(over="ignore"):
        return x.astype(numpy_dtype(word))


@pytest.mark.parametrize("name", [k.name for k in QUANT_KERNELS])
def test_quant_kernels_match_reference(kernel_device: Device, name: str) -> None:
    kernel = next(k for k in QUANT_KERNELS if k.name == name)
    rng = stable_rng(name)
    word = name.rsplit("_", 1)[1]
    lanes = 3  # int8 scatters with several lanes read one partial amax per item
    slots = rng.permutation(SLOTS)[:TOKENS].astype(np.uint32)
    slots[2] = 999  # past the pool: skipped, or a zero row
    slots[4] = SKIP_SLOT  # another window's token: untouched by every kernel
    sizes = {"pool": SLOTS * ROW, "scales": SLOTS, "slots": TOKENS, "src": TOKENS * ROW,
             "dst": TOKENS * ROW, "part": TOKENS * lanes}
    raw = {}
    for p in kernel.buffers:
        base = p.name if p.name == "slots" else p.name[1:]  # kpool -> pool, vdst -> dst
        n = sizes[base] + 5
        if base == "slots":
            raw[p.name] = slots.tobytes()
        elif base == "src":
            raw[p.name] = _values(rng, word, n).tobytes()
        elif base == "scales":
            raw[p.name] = np.exp2(rng.integers(-5, 5, n)).astype(np.float32).tobytes()
        else:
            raw[p.name] = rng.integers(0, 256, n * numpy_dtype(p.dtype).itemsize,
                                       dtype=np.uint8).tobytes()
    scalars = {"n": TOKENS * lanes, "lanes": lanes, "row": ROW, "num_slots": SLOTS}
    if "q8_scatter" in name:  # the partial amaxes the amax kernel leaves for these rows
        amax = quant_kernel("amax", "q8", word)
        raw.update(run_reference(amax, {b.name: raw[b.name] for b in amax.buffers}, scalars))
    bufs = {k: Buffer.from_bytes(kernel_device, v) for k, v in raw.items()}
    kernel_device.run(kernel, **bufs, **scalars)
    kernel_device.synchronize()
    want = run_reference(kernel, raw, scalars)
    for p in kernel.buffers:
        got, ref = bytes(bufs[p.name].copyout()), bytes(want[p.name])
        if p.name.endswith("dst"):  # NaN payloads may differ by backend (pocl's vstore_half)
            dt = numpy_dtype(p.dtype)
            assert _same(np.frombuffer(got, dt), np.frombuffer(ref, dt)), name
        else:
            assert got == ref, f"{name}: {p.name}"


def test_int8_scales_are_powers_of_two_and_codes_fill_the_range() -> None:
    x = np.array([[1.0, -0.5, 0.25, 100.0], [0, 0, 0, 0], [127.4, 1, 2, 3],
                  [127.6, 0, 0, 0]], np.float32)
    q, scale = ref_q8_rows(x)
    assert scale.tolist() == [1.0, 2.0**-126, 1.0, 2.0]
    assert q[0].tolist() == [1, 0, 0, 100] and q[3, 0] == 64
    assert np.all(np.abs(q) <= 127)


def _model(kv: str, rows: np.ndarray, dtype: np.dtype) -> np.ndarray:
    flat = rows.astype(np.float32).reshape(rows.shape[0], -1)
    if kv == "int8":
        q, scale = ref_q8_rows(flat)
        out = scale[:, None] * q.astype(np.float32)
    else:
        with np.errstate(invalid="ignore"):
            out = np.clip(flat, -448, 448).astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
    return out.astype(dtype).reshape(rows.shape)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    nan = np.isnan(b.astype(np.float32))
    return bool(np.array_equal(np.isnan(a.astype(np.float32)), nan)) and \
        same_bits(np.where(nan, 0, a).astype(a.dtype), np.where(nan, 0, b).astype(b.dtype))


@pytest.mark.parametrize(("kv", "dtype"), [("int8", "float16"), ("int8", "bfloat16"),
                                           ("float8_e4m3", "float16"),
                                           ("float8_e4m3", "float32")])
def test_quantized_cache_append_fork_swap_gather(kernel_device: Device, kv: str,
                                                  dtype: str) -> None:
    rng = np.random.default_rng(31)
    npdt = np.dtype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
    cache = PagedKVCache(kernel_device, 2, 2, 3, num_pages=12, page_size=4, dtype=dtype,
                         kv_dtype=kv)
    a = cache.add_sequence()
    written = {0: [], 1: []}
    for layer in range(2):
        rows = (rng.standard_normal((6, 2, 3)) * 10).astype(npdt)
        rows[0, 0, :] = [np.inf, np.nan, 600]
        cache.append(a, layer, rows, -rows)
        written[layer].append(rows)
    child = cache.fork(a)  # the child's next write copies page 1 (data and scales)
    extra = (rng.standard_normal((1, 2, 3)) * 1000).astype(npdt)
    cache.append(child, 0, extra, extra)
    cache.swap_out(a)
    cache.swap_in(a)
    for layer in range(2):
        want = _model(kv, np.concatenate(written[layer]), npdt)
        k, v, _ = cache.gather(a, layer)
        assert _same(host(k), want) and _same(host(v), _model(kv, -np.concatenate(
            written[layer]), npdt))
    got = host(cache.gather(child, 0)[0])
    assert _same(got, np.concatenate([_model(kv, written[0][0], npdt), _model(kv, extra, npdt)]))
    cache.check_invariants()


def test_int8_export_is_per_block_affine_and_round_trips(kernel_device: Device,
                                                         tmp_path: Path) -> None:
    rng = np.random.default_rng(32)
    cache = PagedKVCache(kernel_device, 1, 1, 4, num_pages=6, page_size=2, kv_dtype="int8")
    seqs = [cache.add_sequence() for _ in range(2)]
    rows = random_rows(rng, 5, 1, 4, np.float16)
    rows[np.isnan(rows) | np.isinf(rows)] = 1
    cache.append(seqs, 0, rows, rows, counts=[3, 2])
    t = cache.export(0, "key")
    q = t.quantization
    assert t.dtype.name == "int8" and isinstance(q, PerBlockAffine)
    assert (q.axis, q.block_size, q.scale_buffer_index, q.symmetric) == (0, 2, 3, True)
    raw = [np.asarray(b) if isinstance(b, np.ndarray) else b.numpy() for b in t.buffers]
    table, ptr = raw[1].view(np.uint32), raw[2].view(np.uint32)
    codes = block_paged_to_dense(raw[0].view(np.int8), table, ptr, 2, t.seq_lens,
                                 num_heads=1, head_dim=4, num_pages=6).astype(np.float32)
    slots = np.concatenate([[p * 2 + i for p in cache.block_table(s) for i in range(2)]
                            [:cache.seq_len(s)] for s in seqs])
    dense = (raw[3].view(np.float32)[slots][:, None, None] * codes).astype(np.float16)
    assert same_bits(dense, host(cache.gather(seqs, 0)[0]))
    cache.save(tmp_path / "q.hrry")
    loaded = PagedKVCache.load(tmp_path / "q.hrry", kernel_device)
    assert loaded.kv_dtype == "int8" and loaded.dtype.name == "float16"
    assert same_bits(host(loaded.gather([0, 1], 0)[0]), dense)
    f8 = PagedKVCache(kernel_device, 1, 1, 4, num_pages=2, page_size=2, kv_dtype="float8_e4m3")
    f8.append(f8.add_sequence(), 0, rows[:3], rows[:3])
    f8.save(tmp_path / "f8.hrry")
    back = PagedKVCache.load(tmp_path / "f8.hrry", kernel_device, dtype="float32")
    assert back.kv_dtype == "float8_e4m3" and back.export(0, 0).dtype.name == "float8_e4m3"
    assert _same(host(back.gather(0, 0)[0]), _model("float8_e4m3", rows[:3], np.float32))
