"""Every golden known-answer program, lowered, runs byte-identical on every available device;
the CUDA rendering of each compiles with NVRTC for sm_80 and sm_90."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._support import skip_or_fail
from tests.vyre.lower_programs import kernel_devices
from vyre import from_wire
from vyre.execute import run_bytes
from vyre.lower import lower

GOLDEN = Path(__file__).parents[1] / "golden" / "vyre"
KATS = sorted(GOLDEN.glob("k*.kat.json"))
DEVICES = kernel_devices()


def _load(path: Path) -> tuple:
    kat = json.loads(path.read_text())
    program = from_wire((GOLDEN / kat["program"]).read_bytes())
    names = {d.name for d in program.buffers}
    inputs = {i["buffer"]: bytes.fromhex(i["hex"]) for i in kat["inputs"] if i["buffer"] in names}
    want = {o["buffer"]: o["hex"] for o in kat["outputs"]}
    return program, inputs, tuple(kat["grid_workgroups"]), want


def test_lower_kat_corpus_present() -> None:
    assert len(KATS) >= 8


@pytest.mark.parametrize("device", DEVICES, ids=[d.spec for d in DEVICES])
@pytest.mark.parametrize("path", KATS, ids=[p.name.split(".")[0] for p in KATS])
def test_lower_kat_on_device(path: Path, device: object) -> None:
    program, inputs, grid, want = _load(path)
    got = run_bytes(program, inputs, grid=grid, device=device)
    assert {k: v.hex() for k, v in got.items()} == want


@pytest.mark.parametrize("path", KATS, ids=[p.name.split(".")[0] for p in KATS])
def test_lower_kat_reference_device(path: Path) -> None:
    program, inputs, grid, want = _load(path)
    got = run_bytes(program, inputs, grid=grid, device="reference")
    assert {k: v.hex() for k, v in got.items()} == want


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_lower_kat_nvrtc_compiles(arch: str) -> None:
    from hurray_gpu.dialect import render
    from hurray_gpu.errors import BackendUnavailableError
    from hurray_gpu.kernels.check import offline_compiler

    try:
        compiler = offline_compiler("cuda", arch)
    except BackendUnavailableError as exc:
        skip_or_fail(f"NVRTC is not installed ({exc})", "pip install .[nvrtc]")
    for path in KATS:
        program, _, _, _ = _load(path)
        kernel = lower(program).kernel
        code = compiler.compile(render(kernel, "cuda"), compiler.options(arch))
        assert code, f"{path.name}: NVRTC produced no code for {arch}"
