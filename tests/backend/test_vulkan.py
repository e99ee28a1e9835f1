"""Vulkan backend on lavapipe (or any Vulkan device): memory classes, copies, compile cache."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hurray_gpu.errors import (
    BackendUnavailableError,
    CompileError,
    DeviceError,
    UnsupportedOpError,
)
from hurray_gpu.kernels import get_kernel
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.cache import DiskKernelCache
from hurray_gpu.runtime.memory import MemoryClass
from hurray_gpu.runtime.program import compile_stats
from hurray_gpu.runtime.registry import is_available
from tests._support import skip_or_fail

pytestmark = pytest.mark.vulkan


@pytest.fixture(scope="module")
def vk():
    from hurray_gpu.format.descriptor.buffers import DeviceTag
    from hurray_gpu.runtime.registry import resolve_device

    if not is_available(DeviceTag.VULKAN):
        skip_or_fail("no Vulkan device", "apt-get install mesa-vulkan-drivers; pip install vulkan")
    return resolve_device((DeviceTag.VULKAN, 0))


def _rng_bytes(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


def test_device_identity_and_classes(vk):
    assert vk.tag == 0x04 and vk.kind == "vulkan" and vk.dialect == "glsl"
    assert MemoryClass.STANDARD in vk.memory_classes
    assert (MemoryClass.PEER in vk.memory_classes) == vk.ctx.exportable
    ident = vk.identity()
    assert ident.startswith("vulkan:0x") and vk.name in ident
    free, total = vk.memory_info()
    assert total > 0 and 0 <= free <= total
    assert vk.max_alloc > 0


def test_lavapipe_offers_every_host_visible_class(vk):
    if not vk.emulated:
        pytest.skip("lavapipe-specific: one DEVICE_LOCAL|HOST_VISIBLE|COHERENT memory type")
    assert set(vk.memory_classes) == {
        MemoryClass.STANDARD, MemoryClass.HOST_PINNED, MemoryClass.UNIFIED, MemoryClass.PEER}


@pytest.mark.parametrize("nbytes", [1, 3, 4, 5, 4096, (1 << 20) + 3])
def test_round_trip_every_class(vk, nbytes):
    for mclass in vk.memory_classes:
        data = _rng_bytes(nbytes, nbytes)
        buf = Buffer.from_bytes(vk, data, mclass)
        assert buf.memory_class == mclass
        assert np.array_equal(buf.numpy(), data)
        buf.free()


def test_peer_memory_is_unmapped_and_exports_an_fd(vk):
    if MemoryClass.PEER not in vk.memory_classes:
        with pytest.raises(UnsupportedOpError, match="peer"):
            Buffer(vk, 64, MemoryClass.PEER)
        return
    data = _rng_bytes(100_003, 9)
    buf = Buffer.from_bytes(vk, data, MemoryClass.PEER)
    assert buf.allocation.raw.mapped is None  # not CPU-accessible: copies are staged
    assert np.array_equal(buf.numpy(), data)
    fd = vk.export_fd(buf)
    try:
        assert os.fstat(fd).st_size >= 0
    finally:
        os.close(fd)
    with pytest.raises(UnsupportedOpError, match="peer"):
        vk.export_fd(Buffer(vk, 64))
    out = Buffer(vk, data.size, MemoryClass.PEER)
    vk.run("copy_bytes", out, buf, data.size, wait=True)
    assert np.array_equal(out.numpy(), data)


def test_round_trip_256_mib_beyond_max_storage_buffer_range(vk):
    nbytes = 256 << 20
    assert nbytes > vk.plan_limits.max_range or not vk.emulated
    data = _rng_bytes(nbytes, 7)
    buf = Buffer.from_bytes(vk, data)
    out = np.empty_like(data)
    buf.copyout(out)
    assert np.array_equal(out, data)
    buf.free()


def test_views_copy_in_and_out(vk):
    data = _rng_bytes(10_000, 3)
    buf = Buffer.from_bytes(vk, data)
    part = buf.view(1001, 333)
    assert np.array_equal(part.numpy(), data[1001:1334])
    patch = _rng_bytes(333, 4)
    part.copyin(patch)
    expect = data.copy()
    expect[1001:1334] = patch
    assert np.array_equal(buf.numpy(), expect)
    assert np.array_equal(buf.view(1001, 333).view(2, 5).numpy(), patch[2:7])


def test_staged_copies_for_device_only_memory(vk):
    # Device-only memory has no mapping and goes through a staging buffer; lavapipe has no
    # such memory type, so exercise the same path on an unmapped alias of a real buffer.
    from hurray_gpu.backends import vulkan_context as vmem

    nbytes = vmem.STAGING_BYTES + 12_345  # more than one staging chunk
    buf = Buffer(vk, nbytes)
    mem = buf.allocation.raw
    unmapped = vmem.VulkanMemory(mem.buffer, mem.memory, mem.size, mem.flags, None, mem.offset)
    data = _rng_bytes(nbytes, 5)
    vmem.write_memory(vk.ctx, unmapped, memoryview(data))
    assert np.array_equal(buf.numpy(), data)
    out = np.zeros(1000, np.uint8)
    vmem.read_memory(vk.ctx, memoryview(out), vmem.window(unmapped, 77))
    assert np.array_equal(out, data[77:1077])


@settings(max_examples=25, deadline=None)
@given(data=st.binary(min_size=1, max_size=3000), offset=st.integers(0, 64))
def test_round_trip_property(vk, data, offset):
    buf = Buffer(vk, len(data) + offset)
    buf.copyin(data, offset=offset)
    assert bytes(buf.copyout(offset=offset)) == data
    buf.free()


def test_allocation_size_checks(vk):
    with pytest.raises(UnsupportedOpError):
        Buffer(vk, -1)
    with pytest.raises(UnsupportedOpError):
        Buffer(vk, 16, "no_such_class")
    from hurray_gpu.errors import OutOfMemoryError

    with pytest.raises(OutOfMemoryError):
        Buffer(vk, vk.max_alloc + 1)


def test_check_status():
    from hurray_gpu.backends.vulkan import check

    assert check(0) is None
    with pytest.raises(DeviceError, match="Fix:") as info:
        check(-4, "vkQueueSubmit")
    assert "vkQueueSubmit" in str(info.value)
    assert str(pickle.loads(pickle.dumps(info.value))) == str(info.value)


def test_compile_cache_hit_on_second_compile(vk, tmp_path):
    from hurray_gpu.backends.vulkan import VulkanCompiler

    compiler = VulkanCompiler(vk.identity(), DiskKernelCache(tmp_path))
    kernel = get_kernel("fill_u32")
    source = vk.render(kernel)
    options = vk.compile_options(kernel)
    before = compile_stats()
    first = compiler.compile_cached(source, options)
    second = compiler.compile_cached(source, options)
    after = compile_stats()
    assert first == second and int.from_bytes(first[:4], "little") == 0x07230203
    assert compiler.compile_count == 1
    assert after["disk_hits"] - before["disk_hits"] == 1
    assert after["compiles"] - before["compiles"] == 1
    # The key covers the device identity: another driver version compiles afresh.
    other = VulkanCompiler(vk.identity() + "-other-driver", DiskKernelCache(tmp_path))
    assert other.cache_key(source, options) != compiler.cache_key(source, options)


def test_compile_error_carries_log(vk, tmp_path):
    from hurray_gpu.backends.vulkan import VulkanCompiler

    compiler = VulkanCompiler(vk.identity(), DiskKernelCache(tmp_path))
    with pytest.raises(CompileError) as info:
        compiler.compile("#version 450\nvoid main() { undefined_thing = 1; }\n", ("-V",))
    assert "undefined_thing" in info.value.log and "Fix:" in str(info.value)


def test_missing_glslang_is_backend_unavailable(vk, tmp_path, monkeypatch):
    from hurray_gpu.backends.vulkan import VulkanCompiler

    monkeypatch.setenv("PATH", str(tmp_path))
    compiler = VulkanCompiler(vk.identity(), DiskKernelCache(tmp_path))
    with pytest.raises(BackendUnavailableError, match="glslang-tools"):
        compiler.compile("#version 450\nvoid main() {}\n")


def test_importing_the_backend_does_not_import_the_driver():
    code = ("import sys, hurray_gpu, hurray_gpu.backends.vulkan, hurray_gpu.backends.cuda, "
            "hurray_gpu.backends.rocm; print(sorted({'vulkan', 'cupy'} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip() == "[]"


def test_launch_after_finalize_rebuilds_pipelines(vk):
    buf = Buffer.from_bytes(vk, np.zeros(400, np.uint8), MemoryClass.PEER
                            if MemoryClass.PEER in vk.memory_classes else MemoryClass.STANDARD)
    vk.finalize()
    vk.run("fill_u32", buf, 9, 100, wait=True)
    assert bool((buf.numpy(np.uint32) == 9).all())
