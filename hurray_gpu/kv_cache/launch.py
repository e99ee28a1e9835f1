"""Paged-kernel launches with the argument checks done here, once, in a few comparisons.

A decode step launches small kernels; Program's generic binding costs about as much as the
copy itself, so the cache checks its own arguments and uses ``launch_prechecked``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hurray_gpu.buffer import Buffer

__all__ = ["Launcher"]

U32_MAX = 2**32 - 1


class Launcher:
    """Calls one loaded paged kernel: ``launcher(*buffers, **scalars)``.

    Every buffer is checked (same device, not freed, at least the bytes the kernel's extents
    give for these scalars) and every scalar must be a u32, exactly as ``Program.__call__``
    checks them; an argument failing any check goes through ``Program.__call__`` instead,
    which raises its typed error.

    Args:
        program: a Program of a kernel whose scalars are all u32 and whose grid is 1-D.
    """

    def __init__(self, program: Any) -> None:
        self.program = program
        self.kernel = kernel = program.kernel
        self.buffer_params = tuple((p.name, p.itemsize) for p in kernel.buffers)
        self.scalar_names = tuple(p.name for p in kernel.scalars)
        assert all(p.dtype == "u32" for p in kernel.scalars), kernel.name
        # Scalars -> (bytes each buffer needs, typed scalars, work items): a decode step
        # launches every layer with the same scalars.
        self._plans: dict[tuple[Any, ...], tuple[list[int], list[np.uint32], int] | None] = {}

    def _plan(self, values: tuple[Any, ...]) -> tuple[list[int], list[np.uint32], int] | None:
        """What a launch with these scalars needs; None when any is not a u32 or the grid is
        not 1-D within u32 (the generic path then raises)."""
        if any(type(v) is not int or not 0 <= v <= U32_MAX for v in values):
            return None
        scalars = dict(zip(self.scalar_names, values, strict=True))
        extents = self.kernel.extents(scalars)
        grid = self.kernel.grid(scalars)
        if len(grid) != 1 or not 0 <= int(grid[0]) <= U32_MAX:
            return None
        need = [int(extents.get(name, 0)) * itemsize for name, itemsize in self.buffer_params]
        return need, [np.uint32(v) for v in values], int(grid[0])

    def __call__(self, *buffers: Buffer, **scalars: int) -> None:
        """Launch over the kernel's grid (nothing when it is empty)."""
        if len(buffers) != len(self.buffer_params) or len(scalars) != len(self.scalar_names):
            self.program(*buffers, **scalars)  # raises the typed error
            return
        values = tuple(map(scalars.get, self.scalar_names))
        if values in self._plans:
            plan = self._plans[values]
        else:
            if len(self._plans) >= 64:
                self._plans.clear()
            plan = self._plans[values] = self._plan(values)
        if plan is None:
            self.program(*buffers, **scalars)
            return
        need, typed, items = plan
        device = self.program.device
        try:
            allocations = [b.allocation for b in buffers]
        except AttributeError:
            allocations = []
        for buffer, a, size in zip(buffers, allocations, need, strict=False):
            if buffer.device is not device or a.freed or a.nbytes < size or \
                    (a.base is not None and a.base.freed):
                allocations = []
                break
        if len(allocations) != len(buffers):
            self.program(*buffers, **scalars)  # raises the typed error
            return
        if items:
            self.program.launch_prechecked(allocations, typed, (items, 1, 1))
