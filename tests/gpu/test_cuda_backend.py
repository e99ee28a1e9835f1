"""CUDA/ROCm backends on a real GPU: every memory class, round trips, kernels vs NumPy.

Run by ci/gpu_check.sh (``pytest -m "gpu or cuda" tests/gpu``); skipped without a GPU.
"""

from __future__ import annotations

import numpy as np
import pytest

from hurray_gpu.backends.cuda import ERROR_MEMORY_ALLOCATION, device_status
from hurray_gpu.dialect.kernel import numpy_dtype
from hurray_gpu.errors import CompileError, OutOfMemoryError, UnsupportedOpError
from hurray_gpu.kernels import get_kernel, run_reference
from hurray_gpu.kernels.basic import BASIC_KERNELS
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.cache import DiskKernelCache
from hurray_gpu.runtime.memory import MemoryClass
from tests._support import pinned_view_round_trip

pytestmark = pytest.mark.gpu

SIZES = {"n": 100_003, "rows": 301, "cols": 517}
FLOAT_TYPES = ("f32", "f16", "bf16")


def _bytes(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


def test_device_basics(gpu):
    assert gpu.kind in ("cuda", "rocm") and gpu.tag in (0x01, 0x02)
    assert MemoryClass.STANDARD in gpu.memory_classes
    assert MemoryClass.HOST_PINNED in gpu.memory_classes
    free, total = gpu.memory_info()
    assert 0 < free <= total
    assert gpu.name in gpu.identity()


@pytest.mark.parametrize("nbytes", [1, 3, 4097, (64 << 20) + 3])
def test_round_trip_every_offered_class(gpu, nbytes):
    for mclass in gpu.memory_classes:
        data = _bytes(nbytes, nbytes)
        buf = Buffer.from_bytes(gpu, data, mclass)
        assert buf.memory_class == mclass
        out = np.empty_like(data)
        buf.copyout(out)
        assert np.array_equal(out, data), mclass
        buf.free()


def test_unified_is_offered_on_datacenter_gpus(gpu):
    if gpu.kind == "cuda":
        assert MemoryClass.UNIFIED in gpu.memory_classes


def test_views(gpu):
    data = _bytes(10_000, 1)
    buf = Buffer.from_bytes(gpu, data)
    assert np.array_equal(buf.view(1001, 333).numpy(), data[1001:1334])
    patch = _bytes(333, 2)
    buf.view(1001, 333).copyin(patch)
    expect = data.copy()
    expect[1001:1334] = patch
    assert np.array_equal(buf.numpy(), expect)


def test_one_gib_round_trip(gpu):
    nbytes = 1 << 30
    data = _bytes(nbytes, 3)
    out = np.empty_like(data)
    for mclass in (MemoryClass.STANDARD, MemoryClass.HOST_PINNED):
        buf = Buffer(gpu, nbytes, mclass)
        buf.copyin(data)
        buf.copyout(out)
        assert np.array_equal(out, data)  # bandwidth is measured by bench/transfer.py
        buf.free()


def test_pinned_memory_has_a_host_view_a_stream_copies_from(gpu):
    """The network client's staging ring: the socket writes pinned memory in place, and a
    DMA on the ring's stream copies it to the destination."""
    pinned_view_round_trip(gpu, _bytes(3 << 20, 9))
    dest = Buffer(gpu, 64)
    assert gpu.allocator.host_view(dest.allocation) is None  # device memory: no host view


def test_oversized_request_is_refused_before_the_driver(gpu):
    _, total = gpu.memory_info()
    with pytest.raises(OutOfMemoryError, match="Fix:") as info:
        Buffer(gpu, total + (1 << 30))
    assert info.value.__cause__ is None  # the size precheck, not a failed cudaMalloc


def test_out_of_memory_reaches_the_driver_and_is_typed(gpu):
    """Allocations that each pass the size precheck, until the device is full: the driver's
    own allocation failure comes back as OutOfMemoryError, and freeing returns the memory."""
    gpu.allocator.free_cache()
    gpu.cupy.get_default_memory_pool().free_all_blocks()
    free_before, total = gpu.memory_info()
    # At least 1 GiB, so no chunk fits the allocator's pool: each free really frees.
    chunk = min(gpu.max_alloc, max(total // 16, 1 << 30))
    held: list[Buffer] = []
    try:
        with pytest.raises(OutOfMemoryError, match="Fix:") as info:
            for _ in range(total // chunk + 8):  # more chunks than the device holds
                held.append(Buffer(gpu, chunk))
        filled = len(held) * chunk
    finally:
        for buf in held:
            buf.free()
        held.clear()
        gpu.allocator.free_cache()
    err = info.value
    # The driver refused (cudaErrorMemoryAllocation, 2, under the allocator's MemoryError).
    assert isinstance(err.__cause__, MemoryError)
    assert device_status(err.__cause__.__cause__) == ERROR_MEMORY_ALLOCATION
    assert err.size == chunk and 0 <= err.free <= err.total == total
    assert filled >= free_before - 2 * chunk  # it filled the device before failing
    free_after, _ = gpu.memory_info()
    assert free_after >= free_before - (256 << 20), "freed buffers did not return their memory"
    again = Buffer(gpu, chunk)  # the device is usable again after running out
    gpu.run("fill_u32", again, 5, 1024, wait=True)
    assert bool((again.view(0, 4096).numpy(np.uint32) == 5).all())
    again.free()


def test_peer_only_when_offered(gpu):
    if MemoryClass.PEER in gpu.memory_classes:
        buf = Buffer.from_bytes(gpu, _bytes(4096, 4), MemoryClass.PEER)
        assert np.array_equal(buf.numpy(), _bytes(4096, 4))
    else:
        with pytest.raises(UnsupportedOpError):
            Buffer(gpu, 64, MemoryClass.PEER)


def _scalars(kernel, rng):
    out = {}
    for p in kernel.scalars:
        if p.name in SIZES:
            out[p.name] = SIZES[p.name]
        elif p.dtype == "f32":
            out[p.name] = float(np.float32(rng.standard_normal()))
        else:
            out[p.name] = int(rng.integers(0, 2**31))
    return out


def _inputs(kernel, scalars, rng):
    extents = kernel.extents(scalars)
    data = {}
    for p in kernel.buffers:
        count = int(extents.get(p.name, 0))
        if p.dtype == "f32":
            data[p.name] = rng.standard_normal(count).astype(np.float32).tobytes()
        else:
            data[p.name] = rng.integers(0, 256, count * p.itemsize, dtype=np.uint8).tobytes()
    return data


def _assert_same(kernel, name, got, want):
    param = next(p for p in kernel.buffers if p.name == name)
    dtype = numpy_dtype(param.dtype)
    g, w = np.frombuffer(got, dtype), np.frombuffer(want, dtype)
    if param.dtype not in FLOAT_TYPES:
        assert np.array_equal(g, w), f"{kernel.name}: {name} differs"
        return
    g32, w32 = g.astype(np.float32), w.astype(np.float32)
    assert np.array_equal(np.isnan(g32), np.isnan(w32)), f"{kernel.name}: NaN positions differ"
    ok = ~np.isnan(w32)
    if kernel.name == "axpy_f32":  # fused multiply-add vs an f64 reference: within 1 ulp
        np.testing.assert_array_max_ulp(g32[ok], w32[ok], maxulp=1)
        return
    bits = f"u{dtype.itemsize}"
    assert np.array_equal(g[ok].view(bits), w[ok].view(bits)), f"{kernel.name}: {name} differs"


@pytest.mark.parametrize("name", [k.name for k in BASIC_KERNELS])
def test_basic_kernel_matches_reference(gpu, name):
    kernel = get_kernel(name)
    rng = np.random.default_rng(len(name))
    scalars = _scalars(kernel, rng)
    data = _inputs(kernel, scalars, rng)
    bufs = {k: Buffer.from_bytes(gpu, v) if v else Buffer(gpu, 0) for k, v in data.items()}
    elapsed = gpu.run(kernel, **bufs, **scalars, wait=True)
    assert elapsed is not None and elapsed >= 0
    want = run_reference(kernel, data, scalars)
    for p in kernel.buffers:
        _assert_same(kernel, p.name, bytes(bufs[p.name].copyout()), bytes(want[p.name]))


def test_kernel_on_views_and_pinned_memory(gpu):
    src = _bytes(5000, 5)
    bsrc = Buffer.from_bytes(gpu, src, MemoryClass.HOST_PINNED)
    dst = Buffer.from_bytes(gpu, np.zeros(6000, np.uint8))
    # No wait: the copy out must still see the kernel's writes.
    assert gpu.run("copy_bytes", dst.view(1001, 3001), bsrc.view(7, 3001), 3001) is None
    out = dst.numpy()
    assert np.array_equal(out[1001:4002], src[7:3008])
    assert not out[:1001].any() and not out[4002:].any()


def test_kernel_reads_unified_memory(gpu):
    if MemoryClass.UNIFIED not in gpu.memory_classes:
        pytest.skip("no managed memory on this GPU")
    n = 1 << 20
    dst = Buffer(gpu, 4 * n, MemoryClass.UNIFIED)
    gpu.run("fill_u32", dst, 0x01020304, n, wait=True)
    assert bool((dst.numpy(np.uint32) == 0x01020304).all())


def test_compile_cache_hit_on_second_compile(gpu, tmp_path):
    compiler = type(gpu.compiler)(gpu.identity(), gpu.cupy)
    compiler.cache = DiskKernelCache(tmp_path)
    kernel = get_kernel("axpy_f32")
    source, options = gpu.render(kernel), gpu.compile_options(kernel)
    first = compiler.compile_cached(source, options)
    second = compiler.compile_cached(source, options)
    assert first == second and len(first) > 0
    assert compiler.compile_count == 1


def test_compile_error_has_log(gpu):
    with pytest.raises(CompileError) as info:
        gpu.compiler.compile('extern "C" __global__ void k() { undefined_thing = 1; }',
                             gpu.compile_options(get_kernel("fill_u32")))
    assert "undefined_thing" in info.value.log
