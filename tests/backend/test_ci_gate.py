"""The CI gate: with CI=true, a missing cpu, opencl or vulkan backend fails the run."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.docs.quotes import doc_quote

_SPEC = importlib.util.spec_from_file_location("backend_conftest_copy",
                                               Path(__file__).with_name("conftest.py"))
assert _SPEC is not None and _SPEC.loader is not None
conftest = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(conftest)


def test_gate_reports_missing_backends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.delenv("HURRAY_GPU_TEST_REQUIRE", raising=False)
    monkeypatch.setattr(conftest, "_available", lambda: [SimpleNamespace(kind="cpu")])
    assert conftest.missing_in_ci() == [k for k in conftest.REQUIRED_IN_CI if k != "cpu"]


def test_gate_is_silent_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(conftest, "_available", lambda: [])
    assert conftest.missing_in_ci() == []


def test_gate_passes_when_all_present(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.delenv("HURRAY_GPU_TEST_REQUIRE", raising=False)
    kinds = [SimpleNamespace(kind=k) for k in ("reference", *conftest.REQUIRED_IN_CI)]
    monkeypatch.setattr(conftest, "_available", lambda: kinds)
    assert conftest.missing_in_ci() == []


def test_gpu_machine_requires_cpu_and_the_named_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    # ci/gpu_check.sh on a GPU machine (no pocl, no lavapipe) names the GPU backend instead.
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("HURRAY_GPU_TEST_REQUIRE", " CUDA ")
    monkeypatch.setattr(conftest, "_available", lambda: [SimpleNamespace(kind="cpu")])
    assert conftest.missing_in_ci() == ["cuda"]
    kinds = [SimpleNamespace(kind=k) for k in ("cpu", "reference", "cuda")]
    monkeypatch.setattr(conftest, "_available", lambda: kinds)
    assert conftest.missing_in_ci() == []


@pytest.mark.parametrize("case", ["no pocl or lavapipe", "required cuda"])
def test_gate_fails_a_ci_run_without_its_backends(tmp_path: Path, case: str) -> None:
    """The real gate in a real pytest run: with the OpenCL and Vulkan loaders pointed at no
    driver (OCL_ICD_VENDORS at an empty folder, VK_ICD_FILENAMES at a missing file), a
    CI=true run of the backend tier fails with the gate's message; so does one that requires
    cuda (as ci/gpu_check.sh does) where CUDA sees no device."""
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "HYPOTHESIS", "HURRAY_GPU_TEST_REQUIRE"))}
    env.update(CI="true", PYTHONPATH=str(root))
    if case == "required cuda":
        env.update(HURRAY_GPU_TEST_REQUIRE="cuda", CUDA_VISIBLE_DEVICES="")
        expected = ["HURRAY_GPU_TEST_REQUIRE names backends ['cuda'] that are not available",
                    "Fix: run on a machine with that GPU"]
    else:
        env.update(OCL_ICD_VENDORS=str(tmp_path), VK_ICD_FILENAMES=str(tmp_path / "no.json"))
        # wgpu finds no adapter either: lavapipe was its Vulkan driver.
        gpus = [k for k in conftest.REQUIRED_IN_CI if k != "cpu"]
        expected = [f"CI=true but backends {gpus} are not available",
                    "Fix: install pocl-opencl-icd and mesa-vulkan-drivers"]
    test = f"{Path(__file__).relative_to(root)}::test_gate_is_silent_outside_ci"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-p", "no:xdist", test], cwd=root, env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    for text in expected:
        assert text in run.stdout, run.stdout[-2000:]
    if case == "no pocl or lavapipe":  # the message docs/troubleshooting.md quotes
        assert doc_quote("CI=true but backends").search(run.stdout), run.stdout[-2000:]
