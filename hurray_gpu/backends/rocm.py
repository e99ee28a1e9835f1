"""ROCm backend (device tag 0x02): cuda.py's classes over CuPy's HIP build, with HIP options.

hipMalloc / hipHostMalloc / hipMallocManaged memory and hipRTC code objects; no second code
path: only the device identity, the dialect and the compiler's output differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from hurray_gpu.backends.cuda import CUDAAllocator, CUDACompiler, CUDADevice, CUDAProgram, check
from hurray_gpu.backends.rtc import amdgpu_targets
from hurray_gpu.errors import BackendUnavailableError

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

    @classmethod
    def offline(cls, arch: str) -> CUDACompiler:
        """The compiler without a device for ``arch`` (``gfx90a``, ``gfx90a:xnack-``), refusing
        a target its hipRTC cannot compile for: ROCm 5.2's hipRTC aborts the whole process on
        one (gfx942, gfx1100), so the target is checked against comgr's list first.

        Raises:
            BackendUnavailableError: no hipRTC, or one that cannot target ``arch``.
        """
        compiler = super().offline(arch)
        targets = amdgpu_targets(compiler.rtc)
        if targets is not None and arch.split(":")[0] not in targets:
            raise BackendUnavailableError(
                f"{compiler.version()} ({compiler.rtc.origin}) cannot compile for {arch}; it "
                f"targets {', '.join(sorted(targets, key=_gfx_order))}",
                fix=f"pass one of those archs, or install a ROCm whose hipRTC targets {arch}.")
        return compiler

    def binary_getter(self, options: Sequence[str]) -> str:
        """``Code``: hipRTC's code object (HIP has no cubin/PTX split)."""
        return "Code"


def _gfx_order(target: str) -> tuple[int, str]:
    """Generation order: gfx90a before gfx1030 (shorter names first, then by spelling)."""
    return len(target), target


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
