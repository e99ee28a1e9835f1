"""The reference's input/output ABI and grid inference (semantics doc sections 1.3, 1.4).

Every size is checked against the caller's memory bound before anything is allocated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from vyre import ir
from vyre.reference.errors import ReferenceInputError, ReferenceLimitError
from vyre.reference.memory import Buffer, element_count, element_stride

WORKGROUP_MEMORY_CAP = 64 * 1024 * 1024  # the reference's per-workgroup shared-memory cap
_U32_MAX = 0xFFFFFFFF

InputBlob = bytes | bytearray | memoryview | np.ndarray
Inputs = Mapping[str, InputBlob] | Sequence[InputBlob] | None


def is_backend_allocated(decl: ir.BufferDecl) -> bool:
    """``is_output || WriteOnly || (live_out && ReadWrite)``: zero-filled, takes no bytes."""
    return (decl.is_output or decl.access == ir.BufferAccess.WRITE_ONLY
            or (decl.pipeline_live_out and decl.access == ir.BufferAccess.READ_WRITE))


def is_returned(decl: ir.BufferDecl) -> bool:
    """Outputs the reference returns: backend-allocated ones plus every ReadWrite buffer."""
    if decl.access == ir.BufferAccess.WORKGROUP:
        return False
    return is_backend_allocated(decl) or decl.access == ir.BufferAccess.READ_WRITE


def _blob_bytes(name: str, blob: object) -> bytes:
    if isinstance(blob, np.ndarray):
        arr = blob
        if arr.dtype.byteorder == ">":
            arr = arr.astype(arr.dtype.newbyteorder("<"))
        return np.ascontiguousarray(arr).tobytes()
    if isinstance(blob, (bytes, bytearray, memoryview)):
        return bytes(blob)
    raise ReferenceInputError(
        f"input for buffer `{name}` is a {type(blob).__name__}, not bytes or a NumPy array.",
        fix="pass bytes, bytearray, memoryview or np.ndarray per input buffer.",
    )


def _required_bytes(decl: ir.BufferDecl) -> int:
    stride = element_stride(decl.element)
    if stride is None:
        raise ReferenceInputError(
            f"buffer `{decl.name}` has an unsized element type {decl.element!r}.",
            fix="declare a fixed-width element type before running the reference.",
        )
    if decl.element in (ir.Scalar.I4, ir.Scalar.FP4, ir.Scalar.NF4):
        return (decl.count + 1) // 2
    return decl.count * stride


def _assign_blobs(program: ir.Program, inputs: Inputs) -> dict[str, bytes | None]:
    """Map each non-workgroup buffer to the caller's blob (None for backend-allocated ones)."""
    decls = [d for d in program.buffers if d.access != ir.BufferAccess.WORKGROUP]
    logical = [d for d in decls if not is_backend_allocated(d)]
    if inputs is None:
        inputs = []
    if isinstance(inputs, Mapping):
        unknown = set(inputs) - {d.name for d in decls}
        if unknown:
            raise ReferenceInputError(
                f"inputs name unknown buffers {sorted(unknown)}.",
                fix="key inputs by the program's non-workgroup buffer names.",
            )
        missing = [d.name for d in logical if d.name not in inputs]
        if missing:
            raise ReferenceInputError(
                f"missing input for buffers {missing}.",
                fix="pass one blob per non-output, non-workgroup buffer.",
            )
        return {d.name: None if is_backend_allocated(d) else _blob_bytes(d.name, inputs[d.name])
                for d in decls}
    blobs = list(inputs)
    legacy = len(blobs) == len(decls) and len(blobs) != len(logical)
    if not legacy and len(blobs) != len(logical):
        raise ReferenceInputError(
            f"{len(blobs)} inputs given; the program takes {len(logical)} (or {len(decls)} in "
            "legacy mode, one per non-workgroup buffer).",
            fix="pass exactly one blob per input buffer in Program.buffers order.",
        )
    chosen = decls if legacy else logical
    given = dict(zip((d.name for d in chosen), blobs, strict=True))
    return {d.name: None if is_backend_allocated(d) else _blob_bytes(d.name, given[d.name])
            for d in decls}


@dataclass(slots=True)
class Bound:
    """Bound storage buffers plus what grid inference needs.

    Attributes:
        storage: name -> buffer for every non-workgroup buffer.
        workgroup_decls: the workgroup buffer declarations (allocated per workgroup).
        outputs: declarations returned after the run, in declaration order.
        max_output: largest element count among returned buffers.
        max_input: largest element count among the other buffers (at least 1).
        pg_nodes: count of a ``pg_nodes`` buffer at binding 0, else 0.
    """

    storage: dict[str, Buffer]
    workgroup_decls: list[ir.BufferDecl]
    outputs: list[ir.BufferDecl]
    max_output: int
    max_input: int
    pg_nodes: int


def bind_inputs(program: ir.Program, inputs: Inputs, max_buffer_bytes: int) -> Bound:
    """Bind the caller's blobs to the program's buffers (the reference's ABI).

    Args:
        program: the prepared program.
        inputs: blobs by buffer name, or a list in declaration order (logical or legacy mode).
        max_buffer_bytes: bound on all buffers together (storage plus one workgroup's).

    Returns:
        The bound buffers.

    Raises:
        ReferenceInputError: missing, extra, unknown or too-small inputs.
        ReferenceLimitError: the buffers would exceed ``max_buffer_bytes``.
    """
    blobs = _assign_blobs(program, inputs)
    wg_decls = [d for d in program.buffers if d.access == ir.BufferAccess.WORKGROUP]
    wg_bytes = sum(_required_bytes(d) for d in wg_decls)
    if wg_bytes > WORKGROUP_MEMORY_CAP:
        raise ReferenceLimitError(f"workgroup buffers need {wg_bytes} bytes (cap 64 MiB).")
    total = wg_bytes + sum(len(b) if b is not None else 0 for b in blobs.values())
    total += sum(_required_bytes(d) for d in program.buffers if blobs.get(d.name, b"") is None)
    if total > max_buffer_bytes:
        raise ReferenceLimitError(
            f"the buffers need {total} bytes, over max_buffer_bytes={max_buffer_bytes}."
        )
    bound = Bound({}, wg_decls, [], 0, 1, 0)
    for decl in program.buffers:
        if decl.access == ir.BufferAccess.WORKGROUP:
            continue
        _bind_one(decl, blobs[decl.name], bound)
    return bound


def _bind_one(decl: ir.BufferDecl, blob: bytes | None, bound: Bound) -> None:
    required = _required_bytes(decl)
    data = bytes(required) if blob is None else blob
    if len(data) < required:
        raise ReferenceInputError(
            f"buffer `{decl.name}` has {len(data)} bytes but requires at least {required} "
            f"({decl.count} elements).",
            fix="provide a larger input buffer.",
        )
    elements = element_count(decl.element, len(data))
    if elements > _U32_MAX:
        raise ReferenceInputError(
            f"buffer `{decl.name}` has {elements} elements, more than u32 indexing allows.",
            fix="split the buffer.",
        )
    if decl.binding == 0 and decl.name == "pg_nodes":
        bound.pg_nodes = decl.count
    if is_returned(decl):
        bound.max_output = max(bound.max_output, elements)
        bound.outputs.append(decl)
    else:
        bound.max_input = max(bound.max_input, elements)
    bound.storage[decl.name] = Buffer(decl, bytearray(data))


def infer_grid(program: ir.Program, bound: Bound, *, force_full: bool,
               min_dispatch_elements: int = 0) -> tuple[int, int, int]:
    """The reference's grid inference (``run_hashmap_reference``, semantics doc section 1.4).

    Args:
        program: the program.
        bound: its bound buffers.
        force_full: the program has workgroup buffers or atomics.
        min_dispatch_elements: the caller's lane-count floor.

    Returns:
        Workgroup counts (x, y, z).
    """
    full_input = bound.max_input if (not bound.outputs or force_full) else 1
    elements = max(bound.max_output, bound.pg_nodes, 1, full_input, min_dispatch_elements)
    wx, wy, wz = program.workgroup_size
    per_wg = max(1, min(wx * wy * wz, _U32_MAX))
    total = max(1, -(-elements // per_wg))
    active = [a for a, s in enumerate((wx, wy, wz)) if s > 1]
    counts = [1, 1, 1]
    if not active:
        counts[0] = total
    else:
        base = max(1, math.ceil(float(total) ** (1.0 / len(active))))
        for axis in active:
            counts[axis] = base
    return (counts[0], counts[1], counts[2])


def output_bytes(decl: ir.BufferDecl, buf: Buffer) -> bytes:
    """The returned blob: the whole buffer, or its ``output_byte_range`` when that is valid."""
    data = bytes(buf.data)
    rng = decl.output_byte_range
    if rng is not None and 0 <= rng[0] <= rng[1] <= len(data):
        return data[rng[0]:rng[1]]
    return data
