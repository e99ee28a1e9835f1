"""The real programs of vyre.programs with their known answers, on the reference interpreter
and on every available compiling device (cpu, opencl/pocl, vulkan/lavapipe)."""

from __future__ import annotations

import blake3
import numpy as np
import pytest

import hurray_gpu as hg
from tests._support import skip_or_fail
from tests.vyre.lower_programs import kernel_devices
from tests.vyre.program_cases import Case, all_cases
from vyre import UnsupportedOpError
from vyre import programs as P
from vyre.execute import lower_cached, run

CASES = all_cases()
TARGETS = ["reference"] + [d.spec for d in kernel_devices()]


def _refused(case: Case, target: str) -> bool:
    """Every program runs everywhere, barriers and workgroup memory on host C included, except
    the correctly rounded functions (f64 arithmetic) on a device without f64 (webgpu: WGSL has
    none)."""
    needs_fp64 = "fp64" in lower_cached(case.build()).features
    return needs_fp64 and target != "reference" and not hg.device(target).f64_kernels


def _words(out: np.ndarray) -> list[int]:
    return np.ascontiguousarray(out).view(np.uint32).tolist()


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_known_answer(case: Case, target: str) -> None:
    program = case.build()
    if target != "reference" and _refused(case, target):
        with pytest.raises(UnsupportedOpError):
            run(program, case.inputs, grid=case.grid, device=target)
        return
    out = run(program, case.inputs, grid=case.grid, device=target)
    for name, want in case.expected.items():
        assert _words(out[name]) == [w & 0xFFFFFFFF for w in want], (case.source, name)


@pytest.mark.parametrize("target", TARGETS)
def test_blake3_whole_messages(target: str) -> None:
    # Chunk chaining, partial last blocks, the parent tree with an odd carry, and the root.
    sizes = (0, 1, 64, 1024, 1025) if target == "reference" else (0, 65, 1024, 3 * 1024 + 7,
                                                                   9 * 1024 + 100)
    for n in sizes:
        data = bytes((i * 131 + 7) % 256 for i in range(n))
        assert P.blake3_hash(data, target) == blake3.blake3(data).digest(), n


def test_dfa_compile_matches_the_spec_example() -> None:
    dfa = P.dfa_compile([b"he", b"she", b"his", b"hers"])
    assert dfa.states == 10 and dfa.max_pattern_len == 4
    assert dfa.transitions.shape == (10 * 256,) and dfa.accept.tolist().count(0) < 10
    assert P.dfa_compile([b"abra"]).states == 5


def test_builders_reject_bad_shapes() -> None:
    with pytest.raises(ValueError):
        P.prefix_scan_program(0)
    with pytest.raises(ValueError):
        P.prefix_scan_program(1025)
    with pytest.raises(ValueError):
        P.multi_block_scan_program(10, 48)
    with pytest.raises(ValueError):
        P.elementwise_program("nope", 4)


@pytest.mark.parametrize("arch", ["sm_90"])
def test_programs_cuda_renderings_compile_with_nvrtc(arch: str) -> None:
    from hurray_gpu.dialect import render
    from hurray_gpu.errors import BackendUnavailableError
    from hurray_gpu.kernels.check import offline_compiler

    try:
        compiler = offline_compiler("cuda", arch)
    except BackendUnavailableError as exc:
        skip_or_fail(f"NVRTC is not installed ({exc})", "pip install .[nvrtc]")
    seen = set()
    builders = [c.build for c in CASES] + [P.blake3_chunks_program, P.blake3_parents_program]
    for build in builders:
        lowered = lower_cached(build())
        for kernel in lowered.kernels:
            if kernel.name in seen:
                continue
            seen.add(kernel.name)
            code = compiler.compile(render(kernel, "cuda"), compiler.options(arch))
            assert code, f"{kernel.name}: NVRTC produced no code for {arch}"
