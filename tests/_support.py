"""Helpers every test tier shares: CI detection, peers CI must have, reproducible seeds.

``CI=true`` (set by ci/test.sh) turns what would be a skip on a developer's machine into a
failure: ci/install.sh installs every peer and toolchain the suite checks against, so a missing
one there is a broken CI machine, not a reason to pass with less coverage. The one exception
is ``HURRAY_GPU_TEST_TIER=core`` (ci/core.sh: the core tests on the other Pythons, whose
environments hold no peers by design): there a missing peer skips; a missing backend still
fails.
"""

from __future__ import annotations

import importlib
import os
import zlib
from types import ModuleType
from typing import NoReturn

import numpy as np
import pytest

__all__ = ["core_tier", "in_ci", "require_peer", "skip_or_fail", "stable_rng", "stable_seed", "trusted_tensor"]

_TRUE = ("1", "true", "yes")


def in_ci() -> bool:
    """True when the ``CI`` environment variable is 1, true or yes (any case)."""
    return os.environ.get("CI", "").strip().lower() in _TRUE


def core_tier() -> bool:
    """True in ci/core.sh's runs (``HURRAY_GPU_TEST_TIER=core``): peers are absent by design."""
    return os.environ.get("HURRAY_GPU_TEST_TIER", "") == "core"


def skip_or_fail(reason: str, fix: str) -> NoReturn:
    """Skip the test (or module) outside CI; fail it under ``CI=true``.

    Args:
        reason: what is missing, e.g. ``"NVRTC is not installed"``.
        fix: what installs it, e.g. ``"pip install nvidia-cuda-nvrtc"``.
    """
    if in_ci():
        pytest.fail(f"CI=true but {reason}. Fix: {fix} (ci/install.sh installs it).",
                    pytrace=False)
    pytest.skip(f"{reason} (Fix: {fix})", allow_module_level=True)


def require_peer(module: str, install: str | None = None) -> ModuleType:
    """Import a peer library the test checks against (torch, gguf, bitsandbytes, jax...).

    Outside CI a missing peer skips the test; under ``CI=true`` it fails it, except in the
    core tier (:func:`core_tier`), which installs no peer.

    Args:
        module: the module to import (``"jax.numpy"``, ``"bitsandbytes.functional"``...).
        install: the pip requirement that provides it (default: the top-level module name).

    Returns:
        The imported module.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        package = install or module.split(".")[0]
        if core_tier():
            pytest.skip(f"the core tier installs no peers ({module}: {exc})",
                        allow_module_level=True)
        skip_or_fail(f"the peer {module} cannot be imported ({exc})", f"pip install {package}")


def stable_seed(*parts: object) -> int:
    """A 32-bit seed derived from ``parts`` (str, int, float and tuples of them) that is the
    same in every process. ``hash()`` is not: Python salts str hashes per process
    (PYTHONHASHSEED), so two runs of the same test would draw different data."""
    return zlib.crc32(repr(parts).encode("utf-8"))


def stable_rng(*parts: object) -> np.random.Generator:
    """A NumPy generator seeded with :func:`stable_seed` of ``parts``."""
    return np.random.default_rng(stable_seed(*parts))


def trusted_tensor(desc: object, buffers: list[object], **kwargs: object) -> object:
    """A Tensor built without validation (the path the library's own readers take), for tests
    that hand hostile parts to an op: host arrays become cpu Buffers over the same memory."""
    from hurray_gpu.parts import make_tensor
    from hurray_gpu.runtime.buffer import Buffer

    bufs = [b if isinstance(b, Buffer) else Buffer.wrap(np.ascontiguousarray(b)) for b in buffers]
    return make_tensor(desc, bufs, **kwargs)  # type: ignore[arg-type]


def pinned_view_round_trip(device: object, data: np.ndarray) -> object:
    """What the network client's staging ring needs of ``device``: ``data`` written into a
    host_pinned Buffer through its host view (no copy in), a view of a part of it reading
    the same bytes, then copied to a new standard Buffer on a stream of its own and waited
    for by an event. Checks all of it; returns the pinned Buffer."""
    from hurray_gpu.runtime.buffer import Buffer
    from hurray_gpu.runtime.memory import MemoryClass
    from hurray_gpu.runtime.stream import Event, Stream

    allocator = device.allocator  # type: ignore[attr-defined]
    pinned = Buffer(device, data.size, MemoryClass.HOST_PINNED)
    view = allocator.host_view(pinned.allocation)
    assert view is not None and view.size == data.size and view.flags.writeable
    view[:] = data  # the memory itself
    part = allocator.host_view(pinned.view(4096, 100).allocation)
    assert part is not None and np.array_equal(part, data[4096:4196])
    dest = Buffer(device, data.size)
    with Stream(device) as stream:
        dest.copy_from(pinned)
        done = Event(device, timing=False).record(stream)
    done.synchronize()
    assert np.array_equal(dest.numpy(), data)
    return pinned
