"""vyre.reference: the NumPy/Python reference interpreter of vyre IR, the project's test oracle.

It follows vyre 0.7.2's reference interpreter (docs/vyre.md, The reference interpreter):
workgroups run one after another and lanes step round-robin, one statement per lane per round
(a vectorized path serves race-free programs). Bottom to top: ``semantics`` (values, operator,
cast and atomic semantics, errors), ``memory`` (buffers, input binding, grid inference),
``prepare`` (re-wrap, collectives, call inlining, validation), ``scalar`` (lanes, expressions,
subgroups, the stepper and the dispatch loop) and ``vector`` (the NumPy fast path).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from vyre import ir
from vyre.reference.memory import Inputs, Memory, bind_inputs, infer_grid, output_bytes
from vyre.reference.prepare import REFERENCE_OPTIONS, Prepared, prepare
from vyre.reference.scalar import Dispatch, split_grid_sync
from vyre.reference.semantics import (
    ReferenceExecutionError,
    ReferenceInputError,
    ReferenceLimitError,
    StepLimitExceeded,
    VyreReferenceError,
)
from vyre.reference.vector import VectorRun, eligible

DEFAULT_MAX_STEPS = 20_000_000
# Steps bound the work; the clock bounds the time a step takes on a slow or shared machine.
DEFAULT_MAX_SECONDS = 10
DEFAULT_MAX_BUFFER_BYTES = 256 * 1024 * 1024
_U32_MAX = 0xFFFFFFFF
_DTYPES: dict[Any, str] = {
    ir.Scalar.U32: "<u4", ir.Scalar.I32: "<i4", ir.Scalar.F32: "<f4", ir.Scalar.BOOL: "<u4",
    ir.Scalar.U64: "<u8", ir.Scalar.I64: "<i8", ir.Scalar.U8: "u1", ir.Scalar.I8: "i1",
    ir.Scalar.U16: "<u2", ir.Scalar.I16: "<i2", ir.Scalar.F16: "<f2",
}


def _as_program(program: ir.Program | bytes) -> ir.Program:
    if isinstance(program, ir.Program):
        return program
    if isinstance(program, (bytes, bytearray, memoryview)):
        from vyre.wire.decode import from_wire

        return from_wire(bytes(program))
    raise ReferenceInputError(
        f"run() needs a vyre Program or VIR0 bytes, got {type(program).__name__}.",
        fix="build a Program with vyre.builder or decode one with vyre.from_wire().",
    )


def _check_grid(grid: object) -> tuple[int, int, int]:
    try:
        axes = tuple(int(g) for g in grid)  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        axes = ()
    if len(axes) != 3 or any(g < 0 or g > _U32_MAX for g in axes):
        raise ReferenceInputError(
            f"grid must be three u32 workgroup counts, got {grid!r}.",
            fix="pass grid=(x, y, z) with 0 <= each <= 2**32-1.",
        )
    return (max(1, axes[0]), max(1, axes[1]), max(1, axes[2]))


def run_bytes(
    program: ir.Program | bytes,
    inputs: Inputs = None,
    *,
    grid: tuple[int, int, int] | None = None,
    min_dispatch_elements: int = 0,
    max_steps: int = DEFAULT_MAX_STEPS,
    max_seconds: float = DEFAULT_MAX_SECONDS,
    max_buffer_bytes: int = DEFAULT_MAX_BUFFER_BYTES,
    lane_order: str = "forward",
    validate: bool = True,
    fast: bool = True,
    callees: Mapping[str, ir.Program] | None = None,
) -> dict[str, bytes]:
    """Execute ``program`` and return every output buffer's raw little-endian bytes.

    Args:
        program: a :class:`vyre.Program`, or VIR0 wire bytes.
        inputs: one blob (bytes or ndarray) per input buffer: a dict by buffer name, or a
            list in ``Program.buffers`` order (logical mode: inputs only; legacy mode: every
            non-workgroup buffer, output blobs ignored).
        grid: workgroup counts (x, y, z); None infers them from buffer sizes as the
            reference does (docs/vyre-semantics.md, Grid inference).
        min_dispatch_elements: lane-count floor for grid inference.
        max_steps: bound on lane steps and evaluated expression nodes (runaway or hostile
            programs raise).
        max_seconds: bound on the run's wall-clock time (the same error).
        max_buffer_bytes: bound on all buffer memory together.
        lane_order: ``"forward"`` (the reference) or ``"reversed"`` (exposes races, like
            ``reference_eval_lane_reversed``).
        validate: run the validator first (always on in the reference).
        fast: allow the vectorized fast path for programs where it provably gives the same
            bytes (no atomics, barriers, subgroups, workgroup memory, load-after-store
            buffers or cross-lane store conflicts); anything else runs the scalar stepper.
        callees: op id -> callee program; ``Call``s of these ops are inlined first
            (docs/vyre-semantics.md, Before execution).

    Returns:
        ``{buffer name: bytes}`` for each returned buffer (backend-allocated outputs and
        ReadWrite buffers), in declaration order, sliced to ``output_byte_range``.

    Raises:
        vyre.ValidationError: the program is invalid.
        ReferenceInputError: bad inputs, grid or options.
        ReferenceExecutionError: a runtime error the reference defines.
        ReferenceLimitError: a memory, step, time or nesting bound was hit.
    """
    if lane_order not in ("forward", "reversed"):
        raise ReferenceInputError(
            f"lane_order must be 'forward' or 'reversed', not {lane_order!r}.",
            fix="pass lane_order='forward' (the reference's order) or 'reversed'.")
    if not isinstance(max_seconds, (int, float)) or not max_seconds > 0:
        raise ReferenceInputError(f"max_seconds must be a positive number, got {max_seconds!r}.",
                                  fix="pass max_seconds > 0 (math.inf: no time bound).")
    for name, bound in (("max_steps", max_steps), ("max_buffer_bytes", max_buffer_bytes),
                        ("min_dispatch_elements", min_dispatch_elements)):
        if not isinstance(bound, int) or isinstance(bound, bool) or bound < 0:
            raise ReferenceInputError(f"{name} must be a non-negative int, got {bound!r}.",
                                      fix=f"pass {name} as an int >= 0.")
    program = _as_program(program)
    old_limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(max(old_limit, 20_000))
        with np.errstate(all="ignore"):
            return _execute(program, inputs, grid, min_dispatch_elements,
                            (max_steps, time.monotonic() + max_seconds), max_buffer_bytes, lane_order == "reversed", validate, fast,
                            callees)
    except RecursionError:
        raise ReferenceLimitError(
            "expression or statement nesting is too deep for the reference interpreter.",
            fix="flatten the expression with Let bindings.",
        ) from None
    finally:
        sys.setrecursionlimit(old_limit)


def _execute(program: ir.Program, inputs: Inputs, grid: tuple[int, int, int] | None,
             min_dispatch_elements: int, budget: tuple[int, float], max_buffer_bytes: int,
             reverse_lanes: bool, validate: bool, fast: bool,
             callees: Mapping[str, ir.Program] | None) -> dict[str, bytes]:
    prepared = prepare(program, check=validate, callees=callees)
    prog = prepared.program
    if any(s < 1 for s in prog.workgroup_size):
        raise ReferenceInputError(
            f"workgroup size {prog.workgroup_size} contains zero.", fix="use sizes >= 1."
        )
    bound = bind_inputs(prog, inputs, max_buffer_bytes)
    force_full = bool(bound.workgroup_decls) or prepared.has_atomics
    counts = (_check_grid(grid) if grid is not None
              else infer_grid(prog, bound, force_full=force_full,
                              min_dispatch_elements=min_dispatch_elements))
    if fast and validate and eligible(prog):
        copies = {name: buf.copy() for name, buf in bound.storage.items()}
        if VectorRun(prog, copies, *budget).run(counts):
            return {d.name: output_bytes(d, copies[d.name]) for d in bound.outputs}
    dispatch = Dispatch(prog, Memory(bound.storage, {}), bound.workgroup_decls,
                        max_steps=budget[0], deadline=budget[1], reverse_lanes=reverse_lanes,
                        uses_subgroups=prepared.uses_subgroups)
    dispatch.run(split_grid_sync(prog.entry), counts)
    return {d.name: output_bytes(d, bound.storage[d.name]) for d in bound.outputs}


def run(program: ir.Program | bytes, inputs: Inputs = None, **options: object
        ) -> dict[str, np.ndarray]:
    """Execute ``program``; outputs come back as NumPy arrays of their element type.

    Args:
        program: a :class:`vyre.Program`, or VIR0 wire bytes.
        inputs: as :func:`run_bytes`.
        **options: ``grid``, ``min_dispatch_elements``, ``max_steps``, ``max_seconds``,
            ``max_buffer_bytes``,
            ``lane_order``, ``validate``, ``fast``, ``callees`` (see :func:`run_bytes`).

    Returns:
        ``{buffer name: array}``; u32/bool -> uint32, i32 -> int32, f32 -> float32 (raw bits
        kept), other or unaligned element types -> uint8 bytes.

    Raises:
        The errors of :func:`run_bytes`.
    """
    prog = _as_program(program)
    out = run_bytes(prog, inputs, **options)  # type: ignore[arg-type]
    result = {}
    for decl in prog.buffers:
        if decl.name in out:
            data = out[decl.name]
            dtype = np.dtype(_DTYPES.get(decl.element, "u1"))
            if len(data) % dtype.itemsize:
                dtype = np.dtype("u1")
            result[decl.name] = np.frombuffer(data, dtype=dtype).copy()
    return result


def run_kat(kat: Mapping[str, object] | str | Path, program: ir.Program | bytes | None = None,
            **options: object) -> dict[str, bytes]:
    """Run one golden known-answer vector (``NAME.kat.json``) and return the output bytes.

    Args:
        kat: the parsed JSON, or the path of the ``.kat.json`` file.
        program: the program; by default the ``.vir`` file named by the vector, next to it.
        **options: extra :func:`run_bytes` options (``max_steps``, ...).

    Returns:
        ``{buffer name: bytes}`` to compare with the vector's ``outputs``.

    Raises:
        ReferenceInputError: the vector is malformed or its program cannot be found.
        The errors of :func:`run_bytes`.
    """
    base = None
    try:
        if not isinstance(kat, Mapping):
            base = Path(kat).parent
            kat = json.loads(Path(kat).read_text())
        data: Any = kat
        inputs = {i["buffer"]: bytes.fromhex(i["hex"]) for i in data["inputs"]}
        grid = tuple(data["grid_workgroups"])
        if program is None:
            if base is None:
                raise ReferenceInputError("run_kat needs the program or the vector's path.")
            program = (base / str(data["program"])).read_bytes()
    except (KeyError, TypeError, ValueError, OSError) as exc:
        raise ReferenceInputError(f"malformed known-answer vector: {exc}.") from None
    prog = _as_program(program)
    names = {d.name for d in prog.buffers}
    inputs = {k: v for k, v in inputs.items() if k in names}
    return run_bytes(prog, inputs, grid=grid, **options)  # type: ignore[arg-type]


def reference_grid(program: ir.Program, inputs: Inputs = None, *,
                   min_dispatch_elements: int = 0) -> tuple[int, int, int]:
    """The grid ``reference_eval`` would infer for ``program`` and ``inputs``.

    Raises:
        The validation and input errors of :func:`run_bytes`.
    """
    prepared: Prepared = prepare(program)
    bound = bind_inputs(prepared.program, inputs, DEFAULT_MAX_BUFFER_BYTES)
    force_full = bool(bound.workgroup_decls) or prepared.has_atomics
    return infer_grid(prepared.program, bound, force_full=force_full,
                      min_dispatch_elements=min_dispatch_elements)


__all__ = [
    "DEFAULT_MAX_BUFFER_BYTES", "DEFAULT_MAX_STEPS", "REFERENCE_OPTIONS",
    "ReferenceExecutionError", "ReferenceInputError", "ReferenceLimitError",
    "StepLimitExceeded", "VyreReferenceError", "reference_grid", "run", "run_bytes", "run_kat",
]
