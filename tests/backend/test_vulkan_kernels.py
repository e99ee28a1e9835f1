"""Vulkan kernels vs their NumPy references, including launches split over buffers > 128 MiB."""

from __future__ import annotations

import numpy as np
import pytest

from hurray_gpu.dialect.kernel import KernelDef, buf, numpy_dtype, scalar
from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.format.descriptor.buffers import DeviceTag
from hurray_gpu.kernels import get_kernel, run_reference
from hurray_gpu.kernels.basic import BASIC_KERNELS
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.registry import is_available, resolve_device
from tests._support import skip_or_fail, stable_rng
from tests.docs.quotes import doc_quote

pytestmark = pytest.mark.vulkan

# Scalars that size the launch; every other scalar gets a random value of its type.
SIZES = {"n": 1003, "rows": 37, "cols": 53}
FLOAT_TYPES = ("f32", "f16", "bf16")


@pytest.fixture(scope="module")
def vk():
    if not is_available(DeviceTag.VULKAN):
        skip_or_fail("no Vulkan device", "apt-get install mesa-vulkan-drivers; pip install vulkan")
    device = resolve_device((DeviceTag.VULKAN, 0))
    if device.compiler.glslang is None:
        skip_or_fail("glslangValidator is not on PATH", "apt-get install glslang-tools")
    return device


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
        if p.dtype == "f32":  # finite normals: the device may flush subnormals
            values = rng.standard_normal(count).astype(np.float32)
            data[p.name] = values.tobytes()
        else:
            data[p.name] = rng.integers(0, 256, count * p.itemsize, dtype=np.uint8).tobytes()
    return data


def _assert_axpy_close(got, want, a, x):
    # GLSL's fma() without `precise` may round a*x before adding (lavapipe does), so allow
    # half an ulp of the product on top of the reference's own half ulp.
    product = np.abs(np.float32(a) * x)
    bound = np.spacing(product) + np.spacing(np.abs(want))
    assert bool((np.abs(got.astype(np.float64) - want) <= bound).all())


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
    bits = f"u{dtype.itemsize}"
    assert np.array_equal(g[ok].view(bits), w[ok].view(bits)), f"{kernel.name}: {name} differs"


@pytest.mark.parametrize("name", [k.name for k in BASIC_KERNELS])
def test_basic_kernel_matches_reference(vk, name):
    kernel = get_kernel(name)
    rng = stable_rng(name)
    scalars = _scalars(kernel, rng)
    data = _inputs(kernel, scalars, rng)
    bufs = {k: Buffer.from_bytes(vk, v) if v else Buffer(vk, 0) for k, v in data.items()}
    vk.run(kernel, **bufs, **scalars, wait=True)
    want = run_reference(kernel, data, scalars)
    if name == "axpy_f32":
        x = np.frombuffer(data["x"], np.float32)
        got = bufs["y"].numpy(np.float32)
        _assert_axpy_close(got, np.frombuffer(want["y"], np.float32), scalars["a"], x)
        return
    for p in kernel.buffers:
        _assert_same(kernel, p.name, bytes(bufs[p.name].copyout()), bytes(want[p.name]))


def test_kernel_on_word_aligned_views(vk):
    rng = np.random.default_rng(11)
    src = rng.integers(0, 256, 5000, dtype=np.uint8)
    whole_src = Buffer.from_bytes(vk, src)
    dst = Buffer.from_bytes(vk, np.zeros(6000, np.uint8))
    vk.run("copy_bytes", dst.view(1004, 3001), whole_src.view(12, 3001), 3001, wait=True)
    out = dst.numpy()
    assert np.array_equal(out[1004:4005], src[12:3013])
    assert not out[:1004].any() and not out[4005:].any()


def test_unaligned_view_is_refused(vk):
    buf = Buffer(vk, 64)
    with pytest.raises(UnsupportedOpError, match="multiple of 4"):
        vk.run("copy_bytes", buf.view(1, 8), buf.view(20, 8), 8)


def test_program_is_cached_per_device(vk):
    assert vk.program("fill_u32") is vk.program("fill_u32")


def test_fill_over_160_mib_is_split(vk):
    words = 40 << 20  # 160 MiB > lavapipe's 128 MiB maxStorageBufferRange
    dst = Buffer(vk, words * 4)
    vk.run("fill_u32", dst, 0xDEADBEEF, words, wait=True)
    out = dst.numpy(np.uint32)
    assert out.size == words and bool((out == 0xDEADBEEF).all())
    dst.free()


def test_axpy_over_two_big_buffers_matches_reference(vk):
    n = 36 << 20  # 144 MiB per buffer
    # Small integers and a = 0.75 keep every result exact, so any misplaced window shows.
    index = np.arange(n, dtype=np.int32)
    x = (index % 4093 - 2046).astype(np.float32)  # periods that are not powers of two
    y = (index % 517).astype(np.float32)
    bx, by = Buffer.from_bytes(vk, x), Buffer.from_bytes(vk, y)
    vk.run("axpy_f32", by, bx, 0.75, n, wait=True)
    assert np.array_equal(by.numpy(np.float32), np.float32(0.75) * x + y)
    bx.free()
    by.free()


def test_widening_kernel_over_big_output(vk):
    n = 40 << 20  # 40 MiB u8 in, 160 MiB f32 out: only the output is windowed
    src = np.random.default_rng(6).integers(0, 256, n, dtype=np.uint8)
    bsrc, bdst = Buffer.from_bytes(vk, src), Buffer(vk, 4 * n)
    vk.run("u8_to_f32", bdst, bsrc, n, wait=True)
    assert np.array_equal(bdst.numpy(np.float32), src.astype(np.float32))
    bsrc.free()
    bdst.free()


def test_unsplittable_kernel_over_big_buffers_raises(vk):
    # A transpose reads across the whole source for every output row: no proportional window
    # exists, so the launch must fail loudly rather than return wrong data.
    rows = cols = 6000  # 144 MB per buffer
    src, dst = Buffer(vk, rows * cols * 4), Buffer(vk, rows * cols * 4)
    with pytest.raises(UnsupportedOpError, match=doc_quote("outside the window")):
        vk.run("transpose_u32", dst, src, rows, cols, wait=True)
    src.free()
    dst.free()


@pytest.mark.parametrize("dtype", ["u8", "i8", "u16", "i16", "u32", "i32", "f32", "f16", "bf16"])
def test_every_element_type_round_trips_through_a_kernel(vk, dtype):
    # Exercises each windowed load/store pattern (sub-word atomics included) on odd counts.
    kernel = KernelDef(
        name=f"vk_copy_{dtype}",
        params=(buf("dst", dtype, "w"), buf("src", dtype, "r"), scalar("n")),
        body="u32 i = GLOBAL_ID(0); if (i >= n) return; STORE(dst, i, LOAD(src, i));",
        grid=lambda s: (int(s["n"]),), extents=lambda s: {"dst": s["n"], "src": s["n"]},
        reference=lambda a: None,
    )
    n = 1001
    itemsize = numpy_dtype(dtype).itemsize
    data = np.random.default_rng(itemsize).integers(0, 256, n * itemsize, dtype=np.uint8)
    if dtype == "f32":  # finite values: a float load/store may quiet NaNs or flush subnormals
        data = np.random.default_rng(3).standard_normal(n).astype(np.float32).view(np.uint8)
    src, dst = Buffer.from_bytes(vk, data), Buffer.from_bytes(vk, np.zeros_like(data))
    vk.run(kernel, dst, src, n, wait=True)
    _assert_same(kernel, "dst", bytes(dst.copyout()), data.tobytes())


def test_small_launch_over_a_huge_buffer_binds_only_its_extent(vk):
    dst = Buffer.from_bytes(vk, np.zeros(160 << 20, np.uint8))
    vk.run("fill_u32", dst.view(4096, (160 << 20) - 4096 - 16), 5, 1000, wait=True)
    head = dst.copyout(nbytes=4096 + 4004)
    words = np.frombuffer(bytes(head[4096:]), np.uint32)
    assert not any(head[:4096]) and bool((words[:1000] == 5).all()) and words[1000] == 0
    dst.free()
