"""vyre.execute: run a program on the reference interpreter or on any hurray_gpu device.

Device runs lower the program (vyre.lower), compile it through the shared dialect layer and
the device's compile cache, launch ``grid * workgroup_size`` work items and read back the
reference's outputs, byte for byte.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import numpy as np

from hurray_gpu.runtime.buffer import Buffer
from vyre import ir
from vyre.lower import PASS_PARAM, SHARED_BYTES, TRAP_PARAM, Lowered, TrapError, lower
from vyre.lower.ops import DEFAULT_MAX_LOOP_PASSES, LoopBudgetError, loop_passes, unsupported
from vyre.reference import _DTYPES, DEFAULT_MAX_BUFFER_BYTES, _as_program, _check_grid
from vyre.reference import run as reference_run
from vyre.reference.memory import Inputs, bind_inputs, element_count, infer_grid, output_bytes
from vyre.wire.fingerprint import fingerprint

__all__ = ["DEFAULT_MAX_LOOP_PASSES", "check_flags", "lower_cached", "program_key", "run",
           "run_bytes"]

_U32_MAX = 0xFFFFFFFF
_LOWERED: OrderedDict[bytes, Lowered] = OrderedDict()
_LOWERED_LOCK = threading.Lock()
_LOWERED_MAX = 256
# Program identity -> (program, fingerprint): programs are immutable, and hashing the wire
# form of a big one (BLAKE3, say) costs more than a launch and must not recur on every run.
# The entry keeps the program alive, so its id cannot be reused while cached.
_KEYS: OrderedDict[int, tuple[ir.Program, bytes]] = OrderedDict()


def program_key(program: ir.Program,
                callees: Mapping[str, ir.Program] | None = None) -> bytes:
    """The fingerprints of ``program`` and of its callees: the cache key of everything
    compiled from it; memoized by object identity."""
    with _LOWERED_LOCK:
        hit = _KEYS.get(id(program))
        if hit is not None and hit[0] is program:
            _KEYS.move_to_end(id(program))
            base = hit[1]
        else:
            base = b""
    if not base:
        base = fingerprint(program)
        with _LOWERED_LOCK:
            _KEYS[id(program)] = (program, base)
            while len(_KEYS) > _LOWERED_MAX:
                _KEYS.popitem(last=False)
    if not callees:
        return base
    return base + b"".join(op.encode() + b"\0" + program_key(callee)
                           for op, callee in sorted(callees.items()))


def lower_cached(program: ir.Program, callees: Mapping[str, ir.Program] | None = None,
                 loop_budget: int | None = None) -> Lowered:
    """``vyre.lower(program)``, memoized in memory by the fingerprints of the program and of
    its callees, and the device's loop budget.

    Raises:
        The errors of :func:`vyre.lower.lower`.
    """
    key = program_key(program, callees) + str(loop_budget).encode()
    with _LOWERED_LOCK:
        hit = _LOWERED.get(key)
        if hit is not None:
            _LOWERED.move_to_end(key)
            return hit
    lowered = lower(program, callees=callees, loop_budget=loop_budget)
    with _LOWERED_LOCK:
        _LOWERED[key] = lowered
        while len(_LOWERED) > _LOWERED_MAX:
            _LOWERED.popitem(last=False)
    return lowered


def _open(device: Any) -> Any:
    from hurray_gpu.runtime.registry import resolve_device

    dev = resolve_device(device)
    if getattr(dev, "kind", "") == "reference" or getattr(dev, "compiler", None) is None:
        raise unsupported(f"device {device!r} compiles no kernels",
                          "pass device='reference' for the interpreter, or a compiling device.")
    return dev


def check_flags(flags: Buffer, device: Any, max_loop_passes: int = DEFAULT_MAX_LOOP_PASSES
                ) -> None:
    """Raise what a lowered kernel flagged, and clear the flags.

    Raises:
        LoopBudgetError: a loop was cut short (word 1): at the device's loop budget, or at
            ``max_loop_passes`` passes of one invocation where the device has none.
        TrapError: the program trapped (word 0)."""
    words = flags.numpy(np.uint32)
    if not words.any():
        return
    flags.copyin(bytes(8))
    if words[1] and device.loop_budget is None:
        raise LoopBudgetError(
            f"vyre kernel: an invocation's loops ran past max_loop_passes={max_loop_passes} "
            "passes (the kernel's bound on the loop passes of one invocation) and were cut "
            "short; the outputs are void",
            fix="pass a larger max_loop_passes (vyre.run, vyre.run_bytes or the Kernel call) "
            "if the program is meant to loop that long, or spread the loop over more "
            "invocations (a larger grid).")
    if words[1]:
        raise LoopBudgetError(
            f"vyre kernel: a loop ran past {device.spec}'s loop budget ({device.loop_budget} "
            "passes per invocation, all loops together) and was cut short; the outputs are "
            "void", fix="spread the loop over more invocations (a larger grid), or run the "
            "program on a device without a loop budget (cpu, opencl).")
    raise TrapError("the program trapped on the device (i32 division by zero or "
                    "MIN / -1, or a Trap node); the outputs are void",
                    fix="guard the divisor, or remove the Trap.")


def _check_dialect(lowered: Lowered, device: Any) -> None:
    dialect = device.dialect
    if "fp64" in lowered.features and not device.f64_kernels:
        raise unsupported(f"f32 transcendentals (exp, log, tanh, atan, inverse_sqrt...) on "
                          f"{device.spec}: they are correctly rounded in f64 arithmetic, which "
                          "this device lacks (OpenCL cl_khr_fp64, Vulkan shaderFloat64)",
                          "run them on a device with f64 arithmetic (cpu, cuda, rocm, webgpu "
                          "(emulated), or an OpenCL/Vulkan device with fp64) or on "
                          "device='reference'.")
    limit = SHARED_BYTES.get(dialect, min(SHARED_BYTES.values()))
    if lowered.shared_bytes > limit:
        raise unsupported(f"{lowered.shared_bytes} bytes of workgroup memory on the {dialect} "
                          f"dialect, which guarantees {limit}",
                          "use smaller workgroup buffers or workgroups, or run the program on "
                          "a device that takes more (cpu takes the most).")


def _global_size(program: ir.Program, grid: tuple[int, int, int]) -> tuple[int, int, int]:
    size = tuple(g * w for g, w in zip(grid, program.workgroup_size, strict=True))
    if any(s > _U32_MAX for s in size):
        raise unsupported(f"grid {grid} x workgroup {program.workgroup_size} has more than "
                          "2**32-1 invocations on an axis (ids would wrap)",
                          "use a smaller grid.")
    return size  # type: ignore[return-value]


def run_bytes(program: ir.Program | bytes, inputs: Inputs = None, *,
              grid: tuple[int, int, int] | None = None, device: Any = "reference",
              min_dispatch_elements: int = 0,
              max_buffer_bytes: int = DEFAULT_MAX_BUFFER_BYTES,
              callees: Mapping[str, ir.Program] | None = None,
              max_loop_passes: int = DEFAULT_MAX_LOOP_PASSES) -> dict[str, bytes]:
    """Run ``program`` on ``device``; return each output buffer's raw little-endian bytes.

    Args:
        program: a :class:`vyre.Program`, or VIR0 wire bytes.
        inputs: as :func:`vyre.reference.run_bytes` (by name, or a list in declaration order).
        grid: workgroup counts (x, y, z); None infers them exactly as the reference does.
        device: ``"reference"`` or a hurray_gpu device spec/object (``"cpu"``, ``"opencl:0"``,
            ``"vulkan:0"``, ``"cuda:0"``, ``"rocm:0"``).
        min_dispatch_elements: lane-count floor for grid inference.
        max_buffer_bytes: bound on all buffers together.
        callees: op id -> callee program; ``Call`` expressions are inlined as the reference
            inlines them.
        max_loop_passes: loop passes one invocation may run (its workgroup-uniform loops,
            and its other loops, each this many in all) on a device without a loop budget
            (cpu, opencl, cuda, rocm); past it the run raises LoopBudgetError. Lavapipe's
            own budget is smaller and applies instead.

    Returns:
        ``{buffer name: bytes}`` for the reference's returned buffers, in declaration order.

    Raises:
        vyre.ValidationError: the program is invalid.
        ReferenceInputError: bad inputs or grid.
        UnsupportedOpError: the program uses a construct this device cannot run exactly.
        LoopBudgetError: a loop ran past the device's loop budget (``Device.loop_budget``)
            or past ``max_loop_passes``.
        TrapError: the program trapped (i32 division by zero or MIN/-1, or a Trap node).
    """
    prog = _as_program(program)
    passes = loop_passes(max_loop_passes)
    if device == "reference":
        from vyre.reference import run_bytes as ref_run_bytes

        return ref_run_bytes(prog, inputs, grid=grid, min_dispatch_elements=min_dispatch_elements,
                             max_buffer_bytes=max_buffer_bytes, callees=callees)
    dev = _open(device)
    lowered = lower_cached(prog, callees, dev.loop_budget)
    _check_dialect(lowered, dev)
    prepared = lowered.program
    bound = bind_inputs(prepared, inputs, max_buffer_bytes)
    # The reference's rule: workgroup memory or atomics make every invocation of the grid
    # observable, so the grid is never trimmed to the output's size.
    full = bool(bound.workgroup_decls) or "atomics" in lowered.features
    counts = (_check_grid(grid) if grid is not None
              else infer_grid(prepared, bound, force_full=full,
                              min_dispatch_elements=min_dispatch_elements))
    size = _global_size(prepared, counts)
    buffers: dict[str, Buffer] = {}
    args: dict[str, Any] = {}
    try:
        for slot in lowered.slots:
            data = bound.storage[slot.decl.name].data
            words = max(1, -(-len(data) // 4))
            padded = bytes(data) + bytes(4 * words - len(data))
            buffers[slot.param] = Buffer.from_bytes(dev, padded)
            args[slot.param] = buffers[slot.param]
            args[slot.length] = element_count(slot.decl.element, len(data))
        if lowered.uses_trap:
            buffers[TRAP_PARAM] = args[TRAP_PARAM] = Buffer.from_bytes(dev, bytes(8))
        if "loop_passes" in lowered.features:
            args[PASS_PARAM] = passes
        for kernel in lowered.kernels:  # GridSync segments run one after another
            dev.run(kernel, global_size=size, wait=True, **args)
        if lowered.uses_trap:
            check_flags(buffers[TRAP_PARAM], dev, max_loop_passes)
        out = {}
        by_name = {s.decl.name: s for s in lowered.slots}
        for decl in bound.outputs:
            storage = bound.storage[decl.name]
            raw = bytes(buffers[by_name[decl.name].param].copyout())[:len(storage.data)]
            storage.data[:] = raw
            out[decl.name] = output_bytes(decl, storage)
        return out
    finally:
        for b in buffers.values():
            b.free()


def run(program: ir.Program | bytes, inputs: Inputs = None, *,
        grid: tuple[int, int, int] | None = None, device: Any = "reference",
        **options: Any) -> dict[str, np.ndarray]:
    """Run ``program`` on ``device``; outputs come back as NumPy arrays, as
    :func:`vyre.reference.run` returns them.

    Args:
        program: a :class:`vyre.Program`, or VIR0 wire bytes.
        inputs: one blob per input buffer, by name or in declaration order.
        grid: workgroup counts (x, y, z); None infers them as the reference does.
        device: ``"reference"`` or a hurray_gpu device spec/object.
        **options: ``min_dispatch_elements``, ``max_buffer_bytes``, ``callees``,
            ``max_loop_passes`` (device runs).

    Returns:
        ``{buffer name: array}``; u32/bool -> uint32, i32 -> int32, f32 -> float32 (raw bits).

    Raises:
        The errors of :func:`run_bytes`.
    """
    prog = _as_program(program)
    if device == "reference" or getattr(device, "kind", None) == "reference":  # or its Device
        options.pop("max_loop_passes", None)  # bounds device runs; the reference has max_steps
        return reference_run(prog, inputs, grid=grid, **options)
    out = run_bytes(prog, inputs, grid=grid, device=device, **options)
    result = {}
    for decl in prog.buffers:
        if decl.name in out:
            dtype = np.dtype(_DTYPES.get(decl.element, "u1"))
            data = out[decl.name]
            if len(data) % dtype.itemsize:
                dtype = np.dtype("u1")
            result[decl.name] = np.frombuffer(data, dtype=dtype).copy()
    return result
