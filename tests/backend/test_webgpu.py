"""WebGPU backend (wgpu-py; lavapipe here): the device, copies, launches, windows, faults,
the compile cache and what an adapter without wgpu or a feature says."""

from __future__ import annotations

import gc
import os
import subprocess
import sys

import numpy as np
import pytest

from hurray_gpu.config import debug_bounds
from hurray_gpu.dialect import KernelDef, buf, scalar
from hurray_gpu.errors import CompileError, UnsupportedOpError
from hurray_gpu.format.descriptor.buffers import DeviceTag
from hurray_gpu.kernels import get_kernel
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.memory import MemoryClass
from hurray_gpu.runtime.registry import default_device, describe_devices, is_available
from tests._support import skip_or_fail, stable_rng


@pytest.fixture(scope="module")
def wg():
    from hurray_gpu.runtime.registry import resolve_device

    if not is_available(DeviceTag.WEBGPU):
        skip_or_fail("no WebGPU adapter", "pip install .[webgpu]; apt-get install "
                     "mesa-vulkan-drivers")
    return resolve_device("webgpu:0")


def test_device_identity_features_and_classes(wg):
    assert wg.tag == 0x05 and wg.kind == "webgpu" and wg.dialect == "wgsl"
    assert wg.memory_classes == (MemoryClass.STANDARD,)
    assert wg.backend in ("Vulkan", "Metal", "D3D12")
    assert wg.identity().startswith("webgpu:") and "wgsl-abi-" in wg.identity()
    assert all(isinstance(f, str) for f in wg.features)
    assert wg.max_alloc >= 1 << 28
    with pytest.raises(UnsupportedOpError, match="host_pinned"):
        Buffer(wg, 64, MemoryClass.HOST_PINNED)
    listing = describe_devices()
    assert "webgpu:0" in listing and wg.name in listing


def test_default_device_skips_an_emulated_adapter(wg):
    if wg.emulated:
        assert default_device() is not wg


@pytest.mark.parametrize("nbytes", [1, 3, 4, 5, 4097, (1 << 20) + 3])
def test_round_trip(wg, nbytes):
    data = stable_rng("webgpu-round-trip", nbytes).integers(0, 256, nbytes, dtype=np.uint8)
    b = Buffer.from_bytes(wg, data)
    assert np.array_equal(b.numpy(), data)


def test_unaligned_view_writes_keep_their_neighbours(wg):
    rng = stable_rng("webgpu-unaligned")
    data = rng.integers(0, 256, 64, dtype=np.uint8)
    b = Buffer.from_bytes(wg, data)
    patch = rng.integers(0, 256, 9, dtype=np.uint8)
    view = b.view(5, 9)
    view.copyin(patch)
    want = data.copy()
    want[5:14] = patch
    assert np.array_equal(b.numpy(), want)
    assert np.array_equal(b.view(3, 13).numpy(), want[3:16])


def test_device_copy_and_unaligned_copy(wg):
    rng = stable_rng("webgpu-copy")
    data = rng.integers(0, 256, 1000, dtype=np.uint8)
    src = Buffer.from_bytes(wg, data)
    dst = Buffer(wg, 1000)
    dst.copy_from(src)
    assert np.array_equal(dst.numpy(), data)
    odd = Buffer(wg, 7)
    odd.copy_from(src.view(3, 7))
    assert np.array_equal(odd.numpy(), data[3:10])


def test_sub_word_stores_from_neighbouring_items_never_race(wg):
    n = 4099
    src = stable_rng("webgpu-bytes").integers(0, 256, n, dtype=np.uint8)
    a, b = Buffer.from_bytes(wg, src), Buffer(wg, n)
    wg.run("copy_bytes", b, a, n=n, wait=True)
    assert np.array_equal(b.numpy(), src)


_OOB = KernelDef(
    name="wg_oob", params=(buf("res", "u32", "w"), scalar("n")),
    body="u32 i = GLOBAL_ID(0); if (i < n) { STORE(res, i + n, i); }",
    grid=lambda s: (s["n"],), extents=lambda s: {"res": s["n"]},
    reference=lambda a: None, doc="stores past its extent: the guard must catch it")


def test_an_index_outside_the_binding_faults_and_touches_nothing(wg):
    out = Buffer.from_bytes(wg, np.full(16, 7, np.uint32).view(np.uint8))
    big = Buffer.from_bytes(wg, np.full(64, 9, np.uint32).view(np.uint8))
    view = big.view(0, 64)  # out's neighbour words stay put: stores past the window fault
    with pytest.raises(UnsupportedOpError, match="indexed outside its buffers"):
        wg.run(_OOB, out, n=16, wait=True)
    assert np.array_equal(out.numpy(np.uint32), np.full(16, 7, np.uint32))
    with pytest.raises(UnsupportedOpError, match="indexed outside"):
        wg.run(_OOB, view, n=16, wait=True)
    assert np.array_equal(big.numpy(np.uint32), np.full(64, 9, np.uint32))


def test_views_at_word_offsets_run_as_their_own_buffers(wg):
    x = np.arange(300, dtype=np.float32)
    y = np.ones(300, np.float32)
    bx, by = Buffer.from_bytes(wg, x.view(np.uint8)), Buffer.from_bytes(wg, y.view(np.uint8))
    wg.run("axpy_f32", by.view(40, 400), bx.view(4, 400), n=100, a=2.0, wait=True)
    want = y.copy()
    want[10:110] = 2.0 * x[1:101] + 1.0
    assert np.array_equal(by.numpy(np.float32), want)


def test_a_launch_over_a_buffer_larger_than_a_binding_is_split(wg, monkeypatch):
    from hurray_gpu.backends.windows import Limits

    small = Limits(1 << 16, wg.plan_limits.align, wg.plan_limits.max_groups)
    monkeypatch.setattr(wg, "plan_limits", small)
    n = 1 << 16  # 256 KiB of f32: four windows at least
    x = stable_rng("webgpu-split").standard_normal(n).astype(np.float32)
    bx, by = Buffer.from_bytes(wg, x.view(np.uint8)), Buffer(wg, 4 * n)
    by.copyin(np.zeros(n, np.float32).view(np.uint8))
    wg.run("axpy_f32", by, bx, n=n, a=3.0, wait=True)
    assert np.array_equal(by.numpy(np.float32), np.float32(3.0) * x)


def test_compile_cache_keys_and_rejected_wgsl(wg):
    with pytest.raises(CompileError) as info:
        wg.compiler.compile("fn main() { let x: u32 = undefined_name; }")
    assert "undefined_name" in (info.value.log or "") and "Fix:" in str(info.value)
    prog = wg.program(get_kernel("axpy_f32"))
    assert prog.binary.decode().startswith("@group(0) @binding(0)")


def test_work_group_memory_over_the_limit_is_refused(wg):
    limit = wg.limits["max-compute-workgroup-storage-size"]
    kernel = KernelDef(
        name="wg_big_shared", params=(buf("res", "u32", "w"),),
        body="STORE(big, 0u, 1u); BARRIER(); STORE(res, 0u, LOAD(big, 0u));",
        grid=lambda s: (1,), extents=lambda s: {"res": 1}, reference=lambda a: None,
        shared=(("big", limit // 4 + 1),))
    with pytest.raises(UnsupportedOpError, match="work-group memory") as info:
        wg.program(kernel)
    assert "Fix:" in str(info.value)


def test_without_wgpu_the_backend_names_the_install_command():
    code = ("import sys; sys.modules['wgpu'] = None\n"
            "from hurray_gpu.runtime.registry import resolve_device\n"
            "try:\n    resolve_device('webgpu:0')\n"
            "except Exception as exc:\n    print(type(exc).__name__, exc)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.startswith("BackendUnavailableError")
    assert "pip install 'hurray_gpu[webgpu]'" in done.stdout


def test_enumerating_adapters_headless_prints_nothing_and_restores_the_environment(wg):
    # Mesa's device-select layer asked Wayland for a default GPU and libwayland printed
    # "error: XDG_RUNTIME_DIR is invalid ..." four times on a machine without a session.
    code = ("import os\nfrom hurray_gpu.backends.webgpu import adapters\n"
            "found = adapters()\n"
            "print(len(found), os.environ.get('WAYLAND_DISPLAY'))\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("XDG_RUNTIME_DIR", "WAYLAND_DISPLAY", "WAYLAND_SOCKET")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True, env=env)
    count, display = done.stdout.split()
    assert int(count) >= 1 and display == "None"
    assert "XDG_RUNTIME_DIR" not in done.stderr and "error" not in done.stderr.lower()


def test_a_buffer_freed_by_the_cyclic_collector_is_still_usable_from_the_pool(wg):
    # The collector finalizes every object of a garbage cycle, wgpu's GPUBuffer included,
    # while the Buffer's own finalizer pools it: the pool must not hand out a released handle.
    nbytes = 3 * 4096 + 12  # a size no other test pools

    class Holder:
        pass

    for _ in range(3):
        holder = Holder()
        holder.cycle, holder.buf = holder, Buffer(wg, nbytes)
        del holder
        gc.collect()
        data = stable_rng("webgpu-cycle").integers(0, 256, nbytes, dtype=np.uint8)
        assert np.array_equal(Buffer.from_bytes(wg, data).numpy(), data)


_NEXT = KernelDef(
    name="wg_next", params=(buf("dst", "u32", "w"), buf("src", "u32"), scalar("n")),
    body="u32 i = GLOBAL_ID(0); if (i < n) { STORE(dst, i, i + 1u < n ? LOAD(src, i + 1u) : 7u); }",
    grid=lambda s: (s["n"],), extents=lambda s: {"dst": s["n"], "src": s["n"]},
    reference=lambda a: None, doc="dst[i] = src[i + 1], 7 past the end")


def test_a_conditional_load_past_the_end_is_never_made(wg):
    # WGSL's select() evaluates both sides: the load of src[n] would fault the launch.
    n = 100
    src = np.arange(n, dtype=np.uint32) * 3
    bs, bd = Buffer.from_bytes(wg, src.view(np.uint8)), Buffer(wg, 4 * n)
    wg.run(_NEXT, bd, bs, n=n, wait=True)
    assert np.array_equal(bd.numpy(np.uint32), np.append(src[1:], 7))


def test_synchronize_reads_back_only_when_work_was_queued_since_a_read(wg, monkeypatch):
    # A launch reads its fault word back (so its work is done): the synchronize after it has
    # nothing to wait for. A copy queued after it has to be waited for.
    n = 1000
    x = stable_rng("webgpu-sync").standard_normal(n).astype(np.float32)
    bx, by = Buffer.from_bytes(wg, x.view(np.uint8)), Buffer(wg, 4 * n)
    wg.run("axpy_f32", by, bx, n=n, a=2.0, wait=True)  # loaded (and probed) before counting
    by.copyin(np.ones(n, np.float32).view(np.uint8))
    reads = []
    real = wg.read
    monkeypatch.setattr(wg, "read", lambda *a, **k: (reads.append(a[0]), real(*a, **k))[1])
    wg.run("axpy_f32", by, bx, n=n, a=2.0, wait=True)
    assert any(r is wg.fault for r in reads) and wg.done == wg.queued
    reads.clear()  # (with HURRAY_GPU_DEBUG_BOUNDS=1 the launch also read its canaries)
    wg.synchronize()
    assert reads == []
    bx.copy_from(by)
    pending = wg.done < wg.queued
    assert pending or debug_bounds()  # the canary check after a copy may have waited for it
    reads.clear()
    wg.synchronize()
    assert reads == ([wg.fault] if pending else []) and wg.done == wg.queued
    assert np.array_equal(bx.numpy(np.float32), np.float32(2.0) * x + np.float32(1.0))


def test_programs_leave_out_nagas_loop_bounding(wg, monkeypatch):
    # wgpu 0.32's wgpu-native has the entry point that takes naga's runtime checks; a program's
    # module keeps the bounds checks and leaves out the loop counter (30% of Hilbert's time).
    from wgpu.backends.wgpu_native import _api

    from hurray_gpu.backends.webgpu import RUNTIME_CHECKS

    checks = []
    real = _api.libf.wgpuDeviceCreateShaderModuleTrusted
    monkeypatch.setattr(_api.libf, "wgpuDeviceCreateShaderModuleTrusted",
                        lambda dev, desc, flags: (checks.append(flags), real(dev, desc, flags))[1])
    kernel = KernelDef(
        name="wg_loop_sum", params=(buf("res", "u32", "w"), scalar("n")),
        body="u32 s = 0u; for (u32 k = 0u; k < n; k++) { s = s + k; } STORE(res, 0u, s);",
        grid=lambda s: (1,), extents=lambda s: {"res": 1}, reference=lambda a: None)
    res = Buffer(wg, 4)
    wg.run(kernel, res, n=1000, wait=True)
    # 0x1: WGPUShaderRuntimeChecks_BoundsChecks alone.
    assert checks == [RUNTIME_CHECKS] and RUNTIME_CHECKS == 0x1
    assert int(res.numpy(np.uint32)[0]) == 1000 * 999 // 2
