"""GPU-tier fixtures: open a CUDA or ROCm device, or skip (fail under ci/gpu_check.sh).

ci/gpu_check.sh sets ``HURRAY_GPU_TEST_REQUIRE=cuda`` (or ``rocm``): a backend named there that
cannot be opened fails the run instead of skipping it, so a broken lent machine is not green.

CUDA_MODULE_LOADING=EAGER is set here, before CUDA starts when tests/gpu runs in its own
process (as ci/gpu_check.sh runs it): with the default lazy loading a kernel's module is loaded
at its first launch, which can wait forever behind the spinning kernel of a closed gate
(tests/gpu/gate.py). The gated tests also warm every kernel they launch before closing it.
"""

from __future__ import annotations

import os

os.environ["CUDA_MODULE_LOADING"] = "EAGER"

import pytest  # noqa: E402

from hurray_gpu.backends import DeviceTag, open_device  # noqa: E402
from hurray_gpu.errors import BackendUnavailableError  # noqa: E402

TAGS = {"cuda": DeviceTag.CUDA, "rocm": DeviceTag.ROCM}


def _required() -> set[str]:
    value = os.environ.get("HURRAY_GPU_TEST_REQUIRE", "")
    return {part.strip().lower() for part in value.split(",") if part.strip()}


@pytest.fixture(scope="module", params=[
    pytest.param("cuda", marks=pytest.mark.cuda),
    pytest.param("rocm", marks=pytest.mark.rocm),
])
def gpu(request):
    """An opened CUDA or ROCm device (index 0)."""
    kind = request.param
    try:
        return open_device(TAGS[kind], 0)
    except BackendUnavailableError as exc:
        if kind in _required():
            pytest.fail(f"{kind} is required here but unavailable: {exc}", pytrace=False)
        pytest.skip(f"no {kind} device: {exc}")
