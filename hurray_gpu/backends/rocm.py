"""ROCm backend (device tag 0x02): cuda.py's classes over CuPy's HIP build, with HIP options.

hipMalloc / hipHostMalloc / hipMallocManaged memory and hipRTC code objects; no second code
path: only the device identity, the dialect and the compiler's output differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from hurray_gpu.backends.cuda import CUDAAllocator, CUDACompiler, CUDADevice, CUDAProgram, check

__all__ = ["DEVICE", "ROCmAllocator", "ROCmCompiler", "ROCmDevice", "ROCmProgram", "check"]


class ROCmAllocator(CUDAAllocator):
    """HIP memory through CuPy's ROCm build (the same runtime calls, HIP underneath)."""


class ROCmCompiler(CUDACompiler):
    """hipRTC: HIP C -> an AMDGPU code object for a gfx target (``gfx90a:sramecc+:xnack-``).

    CUDACompiler's one compile path with hipRTC's spelling of the target and of the codegen.
    """

    backend = "rocm"
    hip: ClassVar[bool] = True
    arch_flag: ClassVar[str] = "--offload-arch"
    # clang's default for HIP contracts a*b+c (fp-contract=fast): no fusion the kernel did not
    # ask for, as on CUDA.
    codegen: ClassVar[tuple[str, ...]] = ("-ffp-contract=off",)

    def binary_getter(self, options: Sequence[str]) -> str:
        """``Code``: hipRTC's code object (HIP has no cubin/PTX split)."""
        return "Code"


class ROCmProgram(CUDAProgram):
    """A code object loaded with hipModuleLoadData."""


class ROCmDevice(CUDADevice):
    """One AMD GPU through CuPy's ROCm build.

    Streams and events are CUDADevice's (``CuStream``, ``CuEvent``): CuPy's HIP build maps
    them onto hipStream_t and hipEvent_t.

    Raises:
        BackendUnavailableError: CuPy's ROCm build (the ``rocm`` extra) is missing, or no GPU.
    """

    tag = 0x02
    kind = "rocm"
    dialect = "hip"
    program_cls = ROCmProgram
    hip: ClassVar[bool] = True
    allocator_cls: ClassVar[type[CUDAAllocator]] = ROCmAllocator
    compiler_cls: ClassVar[type[CUDACompiler]] = ROCmCompiler

    def detect_arch(self) -> str:
        """The gfx target with its feature flags, e.g. ``gfx90a:sramecc+:xnack-``."""
        arch = self.props.get("gcnArchName", b"")
        arch = arch.decode() if isinstance(arch, bytes) else str(arch)
        return arch or f"gfx{self.cuda_device.compute_capability}"


DEVICE = ROCmDevice
