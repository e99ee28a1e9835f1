"""The CI gate: with CI=true, a missing cpu, opencl or vulkan backend fails the run."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest

_SPEC = importlib.util.spec_from_file_location("backend_conftest_copy",
                                               Path(__file__).with_name("conftest.py"))
assert _SPEC is not None and _SPEC.loader is not None
conftest = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(conftest)


def test_gate_reports_missing_backends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.setattr(conftest, "_available", lambda: [SimpleNamespace(kind="cpu")])
    assert conftest.missing_in_ci() == ["opencl", "vulkan"]


def test_gate_is_silent_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(conftest, "_available", lambda: [])
    assert conftest.missing_in_ci() == []


def test_gate_passes_when_all_present(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    kinds = [SimpleNamespace(kind=k) for k in ("cpu", "reference", "opencl", "vulkan")]
    monkeypatch.setattr(conftest, "_available", lambda: kinds)
    assert conftest.missing_in_ci() == []
