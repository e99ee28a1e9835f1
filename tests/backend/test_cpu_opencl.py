"""Backend-specific behaviour of the cpu and opencl devices."""

from __future__ import annotations

import numpy as np
import pytest

from hurray_gpu.backends.cpu import CPUCompiler
from hurray_gpu.errors import BackendUnavailableError, CompileError, UnsupportedOpError
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.memory import MemoryClass
from hurray_gpu.runtime.registry import is_available
from hurray_gpu.runtime.registry import resolve_device as device


def test_cpu_without_compiler_raises_with_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HURRAY_GPU_CC", "/no/such/cc")
    compiler = CPUCompiler("cpu:test")
    # A compiler the user named is never replaced by another (nor by zig cc).
    with pytest.raises(BackendUnavailableError, match="names no executable C compiler") as info:
        compiler.compile("int x;", ())
    assert "Fix: set HURRAY_GPU_CC to an installed compiler" in str(info.value)


def test_cpu_compile_error_carries_source_and_log() -> None:
    compiler = device("cpu").compiler
    with pytest.raises(CompileError) as info:
        compiler.compile("this is not C", ("-O2",))
    assert info.value.source == "this is not C" and info.value.log


def test_cpu_pinned_memory_is_page_aligned_and_locked() -> None:
    cpu = device("cpu")
    assert MemoryClass.HOST_PINNED in cpu.memory_classes
    buf = Buffer(cpu, 10000, "host_pinned")
    assert buf.allocation.raw.ctypes.data % 4096 == 0
    buf.copyin(bytes(range(250)) * 40)
    assert bytes(buf.copyout()) == bytes(range(250)) * 40
    cpu.run("fill_u32", buf, 1, 2500)
    assert (buf.numpy(np.uint32) == 1).all()


def test_cpu_standard_alignment_is_64() -> None:
    buf = Buffer(device("cpu"), 100)
    assert buf.allocation.raw.ctypes.data % 64 == 0


def test_cpu_memory_info() -> None:
    free, total = device("cpu").memory_info()
    assert 0 < free <= total


needs_opencl = pytest.mark.skipif(not is_available(0x08), reason="no OpenCL device")


@needs_opencl
def test_opencl_unaligned_view_in_kernel_is_typed_error() -> None:
    cl = device("opencl:0")
    base = Buffer(cl, 8192)
    with pytest.raises(UnsupportedOpError, match="MEM_BASE_ADDR_ALIGN"):
        cl.run("fill_u32", base.view(4, 4096), 1, 1024)


@needs_opencl
def test_opencl_identity_and_limits() -> None:
    cl = device("opencl:0")
    assert cl.identity().startswith("opencl:") and cl.max_alloc > 0
    assert cl.tag == 0x08 and cl.kind == "opencl"
    with pytest.raises(Exception) as info:
        Buffer(cl, cl.max_alloc + 1)
    assert type(info.value).__name__ == "OutOfMemoryError"


@needs_opencl
def test_opencl_unified_views_run_kernels() -> None:
    cl = device("opencl:0")
    if MemoryClass.UNIFIED not in cl.memory_classes:
        pytest.skip("device has no coarse-grain SVM")
    buf = Buffer(cl, 4096, "unified")
    buf.copyin(bytes(4096))
    cl.run("fill_u32", buf.view(1024, 1024), 3, 256)
    out = buf.numpy(np.uint32)
    assert (out[256:512] == 3).all() and out[:256].sum() == 0 and out[512:].sum() == 0


@pytest.mark.parametrize("size", [2**62, 2**70])
def test_cpu_huge_allocation_is_out_of_memory(size: int) -> None:
    from hurray_gpu.errors import OutOfMemoryError

    with pytest.raises(OutOfMemoryError) as info:
        Buffer(device("cpu"), size)
    assert info.value.size == size and info.value.total > 0
