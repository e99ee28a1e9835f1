"""Program launches reuse a plan per scalar set: repeated launches give the same results and
still raise the typed errors for a bad buffer or scalar on every call."""

from __future__ import annotations

import numpy as np
import pytest

from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.kernels.paged import paged_kernel
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.device import Device

ROW, SLOTS, TOKENS = 6, 16, 5


def _args(device: Device) -> tuple[list[Buffer], dict[str, int]]:
    rng = np.random.default_rng(3)
    pools = [Buffer.from_bytes(device, rng.integers(0, 2**32, SLOTS * ROW, dtype=np.uint32))
             for _ in range(2)]
    dst = [Buffer.from_bytes(device, np.zeros(TOKENS * ROW, np.uint32)) for _ in range(2)]
    slots = Buffer.from_bytes(device, np.array([3, 0, 15, 7, 3], np.uint32))
    return [*dst, *pools, slots], {"n": TOKENS, "lanes": 1, "row": ROW, "num_slots": SLOTS}


def test_repeated_launches_match(kernel_device: Device) -> None:
    program = kernel_device.program(paged_kernel("gather", "u32"))
    bufs, scalars = _args(kernel_device)
    program(*bufs, **scalars)
    program(*bufs, **scalars)  # the cached plan
    kernel_device.synchronize()
    want_bufs, _ = _args(kernel_device)
    kernel_device.program(paged_kernel("gather", "u32"))(*want_bufs, **scalars)
    kernel_device.synchronize()
    for got, want in zip(bufs, want_bufs, strict=True):
        assert bytes(got.copyout()) == bytes(want.copyout())
    pool = np.frombuffer(bytes(bufs[2].copyout()), np.uint32).reshape(SLOTS, ROW)
    out = np.frombuffer(bytes(bufs[0].copyout()), np.uint32).reshape(TOKENS, ROW)
    assert (out == pool[[3, 0, 15, 7, 3]]).all()


def test_cached_plans_still_raise_the_typed_errors(kernel_device: Device) -> None:
    launch = kernel_device.program(paged_kernel("gather", "u32"))
    bufs, scalars = _args(kernel_device)
    launch(*bufs, **scalars)  # caches the plan for these scalars
    small = Buffer(kernel_device, 4)
    with pytest.raises(UnsupportedOpError, match="bytes"):
        launch(small, *bufs[1:], **scalars)
    with pytest.raises(UnsupportedOpError):
        launch(*bufs, **{**scalars, "n": -1})
    with pytest.raises(UnsupportedOpError):
        launch(*bufs, **{**scalars, "row": 2**32})
    with pytest.raises(UnsupportedOpError):
        launch(*bufs, **{**scalars, "lanes": True})  # True == 1, which is cached
    bufs[1].free()
    with pytest.raises(UnsupportedOpError, match="freed"):
        launch(*bufs, **scalars)
