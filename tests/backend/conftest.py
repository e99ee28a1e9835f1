"""Backend test fixtures: one parameter per available device; CI insists on cpu, opencl, vulkan
and webgpu."""

from __future__ import annotations

import os
import sys
import tempfile

import pytest

# Keep test compiles out of the user's ~/.cache; set before any device opens its compiler.
os.environ.setdefault("HURRAY_GPU_CACHE_DIR", tempfile.mkdtemp(prefix="hurray_gpu_test_cache_"))

from hurray_gpu.runtime.registry import devices  # noqa: E402
from tests._support import in_ci  # noqa: E402

# Backends CI must see (pocl, lavapipe and wgpu are installed there); missing one fails the run.
# wgpu 0.32 needs Python 3.11 or newer: the core tier on 3.10 runs without the webgpu backend.
REQUIRED_IN_CI = ("cpu", "opencl", "vulkan",
                  *(("webgpu",) if sys.version_info >= (3, 11) else ()))


def _available() -> list:
    return devices()


def required_in_ci() -> tuple[str, ...]:
    """REQUIRED_IN_CI; or, where ``HURRAY_GPU_TEST_REQUIRE`` names backends (ci/gpu_check.sh on
    a GPU machine, which has no pocl or lavapipe), cpu and the backends named there."""
    named = os.environ.get("HURRAY_GPU_TEST_REQUIRE", "").lower().split(",")
    named = [k.strip() for k in named if k.strip()]
    return ("cpu", *named) if named else REQUIRED_IN_CI


def missing_in_ci() -> list[str]:
    """Required backends that are absent when ``CI`` is true (empty otherwise)."""
    if not in_ci():
        return []
    kinds = {d.kind for d in _available()}
    return [k for k in dict.fromkeys(required_in_ci()) if k not in kinds]


@pytest.fixture(scope="session", autouse=True)
def _required_backends_in_ci() -> None:
    missing = missing_in_ci()
    if missing and os.environ.get("HURRAY_GPU_TEST_REQUIRE"):
        pytest.fail(
            f"CI=true and HURRAY_GPU_TEST_REQUIRE names backends {missing} that are not "
            "available. Fix: run on a machine with that GPU and its CuPy build (ci/gpu_check.sh "
            "on a lent GPU machine), or unset HURRAY_GPU_TEST_REQUIRE.", pytrace=False)
    if missing:
        pytest.fail(
            f"CI=true but backends {missing} are not available. Fix: install "
            "pocl-opencl-icd and mesa-vulkan-drivers and pip install .[opencl,vulkan,webgpu]",
            pytrace=False)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "device" in metafunc.fixturenames:
        found = _available()
        metafunc.parametrize("device", found, ids=[d.spec for d in found])
    if "kernel_device" in metafunc.fixturenames:
        found = [d for d in _available() if d.kind != "reference"]
        metafunc.parametrize("kernel_device", found, ids=[d.spec for d in found])
