"""A gate that holds a CUDA/ROCm stream, so stream-order tests cannot pass by accident.

A one-thread kernel on the held stream spins on a pinned host flag. Work queued behind it
waits until ``open()``, so a consumer that skipped its wait reads the old data every time
instead of only when it happens to run first. Three rules keep a closed gate from hanging:

- every kernel the gated section launches is loaded before the gate closes (``warm``): a
  module loaded while the spinner runs (CUDA's lazy loading loads at first launch) can wait
  for the spinning kernel forever; tests/gpu/conftest.py also sets CUDA_MODULE_LOADING=EAGER;
- the gate opens when its ``with`` block ends, whatever happened inside it;
- a timer opens it after ``failsafe_s`` seconds in case the test itself blocked on the held
  stream (a host wait that should not be there); the block then fails instead of hanging.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

import hurray_gpu as hg

__all__ = ["FAILSAFE_S", "Gate", "warm"]

FAILSAFE_S = 5.0
_SPIN = r'''extern "C" __global__ void hold(volatile int* flag) { while (flag[0] == 0) { } }'''


def warm(gpu: Any, n: int) -> None:
    """Load everything the gated tests launch while a gate is closed: hurray_gpu's fill_u32
    and copy_bytes kernels, and CuPy's uint64 sum of ``n`` uint32 words (with its temporary
    memory, which CuPy's pool then keeps for the gated run)."""
    cupy = gpu.cupy
    a, b = hg.Buffer(gpu, 4 * n), hg.Buffer(gpu, 4 * n)
    gpu.run("fill_u32", a, 1, n)
    gpu.run("copy_bytes", b, a, 4 * n)
    assert int(cupy.ones(n, cupy.uint32).sum(dtype=cupy.uint64)) == n
    gpu.synchronize()
    assert bool((b.numpy(np.uint32) == 1).all())
    a.free()
    b.free()


class Gate:
    """``with Gate(gpu, stream) as gate:`` holds ``stream`` until ``gate.open()`` or the end
    of the block.

    Args:
        gpu: the CUDA/ROCm device.
        stream: a hurray_gpu Stream of ``gpu`` or a CuPy stream.
        failsafe_s: seconds after which a timer opens the gate anyway (the block then fails).
    """

    def __init__(self, gpu: Any, stream: Any, failsafe_s: float = FAILSAFE_S) -> None:
        cupy = gpu.cupy
        self._stream = stream
        self._failsafe_s = failsafe_s
        # Pinned host memory: with unified addressing the device reads it at the same address.
        self._mem = cupy.cuda.alloc_pinned_memory(4)
        self._flag = np.frombuffer(self._mem, np.int32, 1)
        self._kernel = cupy.RawKernel(_SPIN, "hold")
        self._timer: threading.Timer | None = None
        self.failsafe_fired = False
        # Compile and load the spinner while nothing spins: with the flag set it returns at once.
        self._flag[0] = 1
        self._launch()
        stream.synchronize()

    def _launch(self) -> None:
        with self._stream:
            self._kernel((1,), (1,), (np.uint64(self._mem.ptr),))

    @property
    def is_open(self) -> bool:
        """True once the gate was opened (by ``open()``, the block's end or the failsafe)."""
        return bool(self._flag[0])

    def open(self) -> None:
        """Release the held stream (idempotent; safe from any thread)."""
        self._flag[0] = 1

    def _fire(self) -> None:
        self.failsafe_fired = True
        self.open()

    def __enter__(self) -> Gate:
        self._flag[0] = 0
        self._launch()
        self._timer = threading.Timer(self._failsafe_s, self._fire)
        self._timer.daemon = True
        self._timer.start()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.open()
        if self._timer is not None:
            self._timer.cancel()
        self._stream.synchronize()  # the spinner is done before its flag's memory can go
        if self.failsafe_fired and exc_type is None:
            raise AssertionError(
                f"the gate's {self._failsafe_s} s failsafe opened it: the test waited on the "
                "host for the held stream, which a correct stream handoff never does")
