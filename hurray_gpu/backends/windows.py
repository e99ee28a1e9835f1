"""Launch planning shared by the backends that bind storage-buffer windows (Vulkan, WebGPU).

A launch becomes dispatches within the device limits: work-group counts per axis stay within
the device's maximum, and a buffer bigger than one binding may be (maxStorageBufferRange,
maxStorageBufferBindingSize) is bound as a window proportional to the work items of each
dispatch; the shader flags any index outside it. Also the loop-budget probe kernel (llvmpipe
ends long loops silently, under Vulkan and WebGPU alike).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hurray_gpu.dialect.kernel import KernelDef, buf, scalar
from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.runtime.memory import Allocation
from hurray_gpu.runtime.program import Program

__all__ = ["LOOP_PROBE", "PROBE_PASSES", "WINDOW_SLACK", "WORD", "Limits", "Span", "Step",
           "WindowedProgram", "plan_launch"]

# Bytes added on both sides of a proportional window, so kernels whose accesses run a little
# ahead of or behind their share (block headers, packed neighbours) still land inside it.
# Never more than 1/16 of the binding range, so the windows themselves stay large.
WINDOW_SLACK = 4096
WORD = 4
# Mesa's llvmpipe (lavapipe) counts the loop passes of a shader invocation in one counter that
# every loop shares (gallivm's LP_MAX_TGSI_LOOP_ITERATIONS) and silently ends all loops when it
# runs out. A device that runs the probe's loop to its end has no budget the probe can see.
PROBE_PASSES = 1 << 22


def _lcg(n: int) -> int:
    """The probe's value after ``n`` steps of x = 1664525 x + 1013904223 from 0 (mod 2**32)."""
    a, c, m = 1664525, 1013904223, 1 << 32
    return c * ((pow(a, n, m * (a - 1)) - 1) // (a - 1)) % m


def _ref_probe(a: dict[str, Any]) -> None:
    a["res"][:2] = [int(a["n"]), _lcg(int(a["n"]))]


# One work item counting the passes of a loop of n steps; the LCG keeps compilers from
# replacing the loop by its closed form.
LOOP_PROBE = KernelDef(
    name="vk_loop_probe", params=(buf("res", "u32", "w"), scalar("n")),
    body="""
        u32 x = 0u;
        u32 k = 0u;
        for (u32 i = 0u; i < n; i++) { x = x * 1664525u + 1013904223u; k = k + 1u; }
        STORE(res, 0u, k);
        STORE(res, 1u, x);
    """, grid=lambda s: (1,), extents=lambda s: {"res": 2}, reference=_ref_probe,
    local_size=(1, 1, 1), doc="res = (loop passes made of n, the LCG after them).")


@dataclass(frozen=True)
class Limits:
    """The device limits a plan honours."""

    max_range: int  # maxStorageBufferRange, bytes per binding
    align: int  # minStorageBufferOffsetAlignment
    max_groups: tuple[int, int, int]  # maxComputeWorkGroupCount

    @property
    def slack(self) -> int:
        """Bytes of margin on each side of a proportional window."""
        return min(WINDOW_SLACK, self.max_range // 16)


@dataclass(frozen=True)
class Span:
    """Where a kernel buffer lives: its VkBuffer's size, and the view's offset and length."""

    buffer_size: int
    offset: int
    nbytes: int


@dataclass(frozen=True)
class Step:
    """One dispatch: (offset, range) per binding, word deltas, the id base and group counts."""

    windows: tuple[tuple[int, int], ...]
    deltas: tuple[int, ...]
    base: tuple[int, int, int]
    groups: tuple[int, int, int]


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def _whole(span: Span, align: int) -> tuple[int, int]:
    if span.nbytes == 0:  # nothing is read: any valid word of the buffer will do
        return 0, WORD
    start = span.offset // align * align
    end = min(span.buffer_size, max(_round_up(span.offset + span.nbytes, WORD), start + WORD))
    return start, end - start


def _window(span: Span, first: int, stop: int, total: int, align: int,
            slack: int) -> tuple[int, int]:
    low = span.offset + span.nbytes * first // total - slack
    high = span.offset + -(-span.nbytes * stop // total) + slack
    start = max(span.offset // align * align, low // align * align)
    end = min(_round_up(span.offset + span.nbytes, WORD), _round_up(high, WORD))
    return start, max(end, start + WORD) - start


def _chunk_items(big: list[Span], total: int, local: int, limits: Limits) -> int:
    room = limits.max_range - 2 * limits.slack - max(limits.align, WORD) - 2 * WORD
    largest = max(span.nbytes for span in big)
    items = room * total // largest // local * local
    if items < local:
        raise UnsupportedOpError(
            f"a work group of {local} items touches more than maxStorageBufferRange "
            f"({limits.max_range} bytes) of a {largest}-byte buffer",
            fix="use a smaller local size, or split the buffer before the launch.")
    return items


def plan_launch(
    spans: list[Span], global_size: tuple[int, int, int], local_size: tuple[int, int, int],
    limits: Limits,
) -> list[Step]:
    """Return the dispatches that cover ``global_size`` work items.

    Args:
        spans: one per storage-buffer binding, in binding order; offsets must be word aligned.
        global_size: work items per axis (each > 0).
        local_size: the kernel's work-group shape.
        limits: the device limits.

    Returns:
        Dispatches in order; together they cover every work item exactly once.

    Raises:
        UnsupportedOpError: a view offset is not a multiple of 4 bytes, or one work group
            would need a window larger than maxStorageBufferRange.
    """
    align = max(limits.align, WORD)
    for span in spans:
        if span.offset % WORD:
            raise UnsupportedOpError(
                f"a Vulkan kernel buffer view starts at byte {span.offset}, not a multiple of 4",
                fix="align views passed to Vulkan kernels to 4 bytes, or copy them first.")
    whole = [_whole(span, align) for span in spans]
    big = [i for i, (_, size) in enumerate(whole) if size > limits.max_range]
    axis = max((d for d in range(3) if global_size[d] > 1), default=0)
    steps_per_axis = [limits.max_groups[d] * local_size[d] for d in range(3)]
    if big:
        chunk = _chunk_items([spans[i] for i in big], global_size[axis], local_size[axis], limits)
        steps_per_axis[axis] = min(steps_per_axis[axis], chunk)
    ranges = [
        [(s, min(s + steps_per_axis[d], global_size[d])) for s in range(0, global_size[d],
                                                                          steps_per_axis[d])]
        for d in range(3)]
    plan = []
    for pieces in itertools.product(*ranges):
        first, stop = pieces[axis]
        windows = [
            _window(spans[i], first, stop, global_size[axis], align, limits.slack)
            if i in big else whole[i]
            for i in range(len(spans))]
        deltas = tuple((span.offset - start) // WORD % 2**32
                       for span, (start, _) in zip(spans, windows, strict=True))
        base = tuple(piece[0] for piece in pieces)
        groups = tuple(-(-(piece[1] - piece[0]) // local_size[d]) for d, piece in enumerate(pieces))
        plan.append(Step(tuple(windows), deltas, base, groups))  # type: ignore[arg-type]
    return plan


class WindowedProgram(Program):
    """A program launched as planned dispatches over buffer windows. The device provides
    ``local_limits`` ((max per axis), max invocations), ``plan_limits`` (:class:`Limits`) and
    ``binding_of(allocation)`` -> (root raw handle with a ``size``, byte offset, nbytes)."""

    def _windows(self, buffers: list[Allocation], scalars: Sequence[np.generic],
              global_size: tuple[int, int, int], local_size: tuple[int, int, int]
              ) -> tuple[list[Any], list[Span], list[Step], bytes]:
        """(bound roots, spans, dispatch steps, the scalars' words) of one launch.

        Raises:
            UnsupportedOpError: a work group over the device's limits, or an unplannable
                launch (see :func:`plan_launch`).
        """
        dev: Any = self.device
        sizes, invocations = dev.local_limits
        if math.prod(local_size) > invocations or any(map(int.__gt__, local_size, sizes)):
            raise UnsupportedOpError(
                f"work-group size {local_size} is over {dev.name}'s limits ({invocations} "
                f"invocations, {sizes} per axis); the driver would launch it anyway",
                fix=f"use a work group of at most {invocations} invocations on this device.")
        roots = [dev.binding_of(a) for a in buffers]
        spans = [Span(mem.size, offset, nbytes) for (mem, offset, _), nbytes
                 in zip(roots, self._needed(buffers, scalars), strict=True)]
        steps = plan_launch(spans, global_size, local_size, dev.plan_limits)
        words = np.array([np.asarray(s).view(np.uint32) for s in scalars], np.uint32).tobytes()
        return roots, spans, steps, words

    def _needed(self, buffers: list[Allocation], scalars: Sequence[np.generic]) -> list[int]:
        """Bytes of each buffer the launch touches: its extent, capped by the buffer.

        Windows of big buffers are proportional to these, so a small launch over a huge
        buffer binds only the part it uses.
        """
        values = {p.name: v.item() for p, v in zip(self.kernel.scalars, scalars, strict=True)}
        extents = self.kernel.extents(values)
        out = []
        for param, allocation in zip(self.kernel.buffers, buffers, strict=True):
            need = int(extents.get(param.name, 0)) * param.itemsize
            out.append(min(allocation.nbytes, need) if need > 0 else allocation.nbytes)
        return out

    def _raise_fault(self, spans: list[Span], steps: list[Step]) -> None:
        """The error of a launch whose shader flagged an index outside its window."""
        name, limits = self.kernel.name, self.device.plan_limits  # type: ignore[attr-defined]
        if len(steps) > 1 and any(s.nbytes > limits.max_range for s in spans):
            raise UnsupportedOpError(
                f"kernel {name} indexed outside the window of a buffer larger than one "
                "binding (Vulkan's maxStorageBufferRange, WebGPU's "
                "maxStorageBufferBindingSize): its accesses are not proportional to its work "
                "items, so the launch cannot be split; the outputs are not valid",
                fix="run it on smaller buffers (split the data), or on another backend.")
        raise UnsupportedOpError(
            f"kernel {name} indexed outside its buffers; the outputs are not valid",
            fix="check the kernel's extents() and its index arithmetic.")
