"""Offline compile checks of every kernel's rendering, per dialect, with no GPU needed.

Every built-in kernel, then every kernel vyre's own programs (``vyre.programs``) lower to.
cuda/hip: the cuda/rocm backends' own compiler (``CUDACompiler.offline``/``ROCmCompiler``) per
``sm_XX``/``gfxNNN``, with the options, headers and binary getter a device uses, through the
kernel disk cache (a binary compiled once is not compiled again); glsl: glslangValidator to
SPIR-V; opencl: a build on the first OpenCL device; wgsl: wgpu's shader module and compute
pipeline on the first WebGPU adapter (its program load: naga validates the module); c: the host C compiler. A missing toolchain,
or one that cannot target a requested arch, raises BackendUnavailableError before any kernel.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hurray_gpu.dialect import render
from hurray_gpu.dialect.kernel import KernelDef
from hurray_gpu.errors import BackendUnavailableError, CompileError, UnsupportedOpError
from hurray_gpu.kernels import get_kernel, kernel_names

if TYPE_CHECKING:
    from hurray_gpu.backends.cuda import CUDACompiler
    from vyre.ir import Program

__all__ = ["CheckResult", "check_dialect", "iter_check", "DEFAULT_ARCHS", "offline_compiler", "vyre_kernels"]

DEFAULT_ARCHS = {"cuda": ("sm_80", "sm_90"), "hip": ("gfx90a", "gfx942"), "glsl": ("vulkan1.1",),
                 "opencl": ("device",), "wgsl": ("device",), "c": ("host",)}
GLSLANG_TIMEOUT_S = 120


@dataclass(frozen=True)
class CheckResult:
    """One kernel compiled for one target: ``ok`` or ``failed`` (with the compiler's log)."""

    kernel: str
    dialect: str
    arch: str
    status: str
    detail: str = ""


@functools.lru_cache(maxsize=8)
def offline_compiler(dialect: str, arch: str) -> CUDACompiler:
    """The cuda (``dialect="cuda"``) or rocm (``"hip"``) backend's compiler, without a device.

    Raises:
        BackendUnavailableError: the runtime compiler (NVRTC, hipRTC) cannot be loaded.
    """
    from hurray_gpu.backends.cuda import CUDACompiler
    from hurray_gpu.backends.rocm import ROCmCompiler

    compiler = (ROCmCompiler if dialect == "hip" else CUDACompiler).offline(arch)
    compiler.version()  # loads the library now: a missing one fails before any kernel
    return compiler


def _rtc(dialect: str) -> Callable[[KernelDef, str], str]:
    def build(kernel: KernelDef, arch: str) -> str:
        compiler = offline_compiler(dialect, arch)
        source, options = render(kernel, dialect), compiler.options(arch)
        # Asked before compiling (not by the compile count: checks may run on threads).
        cached = ", cached" if compiler.load(compiler.cache_key(source, options)) else ""
        binary = compiler.compile_cached(source, options)
        return (f"{len(binary)} bytes {compiler.binary_getter(options)} "
                f"({compiler.version()} via {compiler.rtc.origin}{cached})")

    return build


def _glslang(kernel: KernelDef, arch: str) -> str:
    tool = shutil.which("glslangValidator")
    if tool is None:
        raise BackendUnavailableError("glslangValidator not found",
                                      fix="apt-get install glslang-tools.")
    with tempfile.TemporaryDirectory() as tmp:
        src, out = f"{tmp}/{kernel.name}.comp", f"{tmp}/{kernel.name}.spv"
        with open(src, "w") as handle:
            handle.write(render(kernel, "glsl"))
        done = subprocess.run([tool, "-V", "--target-env", arch, src, "-o", out],
                              capture_output=True, text=True, timeout=GLSLANG_TIMEOUT_S)
        if done.returncode != 0:
            raise CompileError("glslangValidator rejected the kernel", render(kernel, "glsl"),
                               (), done.stdout + done.stderr)
        with open(out, "rb") as handle:
            return f"{len(handle.read())} bytes SPIR-V"


def _device_build(kind: str) -> Callable[[KernelDef, str], str]:
    def build(kernel: KernelDef, arch: str) -> str:
        from hurray_gpu.runtime.registry import resolve_device

        dev = resolve_device(kind)
        source = dev.render(kernel)
        compiler: Any = dev.compiler
        binary = compiler.compile(source, dev.compile_options(kernel))
        return f"{len(binary)} bytes on {dev.spec}"

    return build


def _program_build(kind: str) -> Callable[[KernelDef, str], str]:
    """The device's own program load: render, compile (cached), then the pipeline."""
    def build(kernel: KernelDef, arch: str) -> str:
        from hurray_gpu.runtime.registry import resolve_device

        dev = resolve_device(kind)
        return f"{len(dev.program(kernel).binary)} bytes on {dev.spec}"

    return build


CHECKERS: dict[str, Callable[[KernelDef, str], str]] = {
    "cuda": _rtc("cuda"), "hip": _rtc("hip"), "glsl": _glslang, "opencl": _device_build("opencl"),
    "wgsl": _program_build("webgpu"), "c": _device_build("cpu")}


def _vyre_programs() -> dict[str, Callable[[], Program]]:
    """vyre's own programs by label, each builder once per shape of kernel it lowers to."""
    from vyre import programs as P
    from vyre.ir import AtomicOp as A

    # Atomics the lowering supports (CompareExchange has its own program).
    atomics = (A.ADD, A.OR, A.AND, A.XOR, A.MIN, A.MAX, A.EXCHANGE)
    table: dict[str, Callable[[], Program]] = {
        "adler32": P.adler32_program, "aho_corasick": P.aho_corasick_program,
        "aho_corasick_window": lambda: P.aho_corasick_program(8),
        "atomic_compare_exchange": lambda: P.atomic_compare_exchange_program(64),
        "blake3_chunks": P.blake3_chunks_program, "blake3_compress": P.blake3_compress_program,
        "blake3_parents": P.blake3_parents_program, "crc32": P.crc32_program,
        "dot": lambda: P.dot_program(1024), "fnv1a32": P.fnv1a32_program,
        "fnv1a64": P.fnv1a64_program, "histogram": lambda: P.histogram_program(1024, 16),
        "histogram_atomic": lambda: P.histogram_atomic_program(1024, 16),
        "matmul": lambda: P.matmul_program(32), "matmul_tiled": lambda: P.matmul_tiled_program(32),
        "multi_block_scan": lambda: P.multi_block_scan_program(300, 64),
        "prefix_scan": lambda: P.prefix_scan_program(256),
        "prefix_scan_exclusive": lambda: P.prefix_scan_program(256, exclusive=True),
        "softmax": lambda: P.softmax_program(256), "square": lambda: P.square_program(256),
        "subgroup_add": lambda: P.subgroup_add_program(256),
        "subgroup_reduce_add": lambda: P.subgroup_reduce_add_program(256),
        "substring": lambda: P.substring_program(256, 4)}
    table.update({f"atomic_{op.name.lower()}": functools.partial(P.atomic_serial_program, op, 64)
                  for op in atomics})
    table.update({f"elementwise_{name}": functools.partial(P.elementwise_program, name, 256)
                  for name in P.ELEMENTWISE})
    return dict(sorted(table.items()))


def vyre_kernels(names: Sequence[str] = ()) -> list[tuple[str, KernelDef]]:
    """``(vyre.<label>.<kernel name>, kernel)`` for every distinct kernel vyre's own programs
    (or those whose label is in ``names``) lower to. Programs computing in f64 are in: every
    dialect renders them (WGSL on its exact emulation, dialect/softf64.py).

    Raises:
        UnsupportedOpError: a name is no ``vyre.<label>`` of those programs.
    """
    from vyre.execute import lower_cached

    programs = _vyre_programs()
    unknown = sorted(set(names) - {f"vyre.{label}" for label in programs})
    if unknown:
        raise UnsupportedOpError(f"no vyre program labelled {', '.join(unknown)}",
                                 fix=f"use vyre.<label> with a label of {list(programs)}.")
    seen: dict[str, tuple[str, KernelDef]] = {}
    for label, build in programs.items():
        if names and f"vyre.{label}" not in names:
            continue
        lowered = lower_cached(build())
        for kernel in lowered.kernels:
            seen.setdefault(kernel.name, (f"vyre.{label}.{kernel.name}", kernel))
    return list(seen.values())


def _kernels(names: Sequence[str]) -> list[tuple[str, KernelDef]]:
    """The built-in kernels then vyre's, all or those named (``vyre.<label>`` for vyre's)."""
    builtin = [n for n in names if not n.startswith("vyre.")]
    vyre = [n for n in names if n.startswith("vyre.")]
    found = [(n, get_kernel(n)) for n in (builtin if names else kernel_names())]
    return found + (vyre_kernels(vyre) if vyre or not names else [])


def iter_check(dialect: str, archs: Sequence[str] = (), names: Sequence[str] = (),
               jobs: int = 1) -> Iterator[CheckResult]:
    """:func:`check_dialect`'s results one by one, in its order, as they are known.

    ``jobs`` > 1 compiles that many kernels at once on threads (the runtime compilers and
    the command-line tools run outside the GIL; rendering, a few ms a kernel, does not).
    Argument checks and toolchain probes happen at the first ``next()``.
    """
    if dialect not in CHECKERS:
        raise ValueError(f"unknown dialect {dialect!r}; use one of {sorted(CHECKERS)}")
    archs = tuple(archs or DEFAULT_ARCHS[dialect])
    if dialect in ("cuda", "hip"):
        for arch in archs:
            offline_compiler(dialect, arch)
    checker = CHECKERS[dialect]

    def one(task: tuple[str, KernelDef, str]) -> CheckResult:
        name, kernel, arch = task
        try:
            return CheckResult(name, dialect, arch, "ok", checker(kernel, arch))
        except CompileError as exc:
            return CheckResult(name, dialect, arch, "failed", exc.log or str(exc))

    tasks = [(name, kernel, arch) for name, kernel in _kernels(names) for arch in archs]
    if jobs <= 1:
        yield from map(one, tasks)
        return
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        yield from pool.map(one, tasks)


def check_dialect(dialect: str, archs: Sequence[str] = (),
                  names: Sequence[str] = (), jobs: int = 1) -> list[CheckResult]:
    """Compile every (or each named) kernel's rendering for each arch, ``jobs`` at once: the
    built-in kernels, then the kernels vyre's own programs lower to (``vyre.<program>``).

    Returns:
        One result per (kernel, arch).

    Raises:
        ValueError: unknown dialect.
        BackendUnavailableError: the dialect's toolchain is missing here, or cannot target one
            of ``archs`` (checked before any kernel is compiled).
        UnsupportedOpError: a name is no built-in kernel or vyre program label.
    """
    return list(iter_check(dialect, archs, names, jobs))
