"""Buffers, the out-of-bounds rules, the input/output ABI and grid inference of the reference
(docs/vyre-semantics.md, Memory and Grid inference).

Loads past the end read the element type's zero; stores past the end are dropped. Every size
is checked against the caller's memory bound before anything is allocated.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vyre import ir
from vyre.ir import BufferAccess, BufferDecl, DataType, Scalar, size_bytes
from vyre.reference.semantics import (
    BYTES,
    F32,
    I32,
    U32,
    U64,
    ReferenceExecutionError,
    ReferenceInputError,
    ReferenceLimitError,
    Value,
    canonical,
    f32_bits,
    f32_from_bits,
    fit_width,
    to_bytes,
)

_PACKED_4BIT = (Scalar.I4, Scalar.FP4, Scalar.NF4)
_WORD_VIEWS: dict[Any, str] = {Scalar.U32: "I", Scalar.BOOL: "I", Scalar.I32: "i"}
_ZERO_BY_ELEMENT: dict[Any, Value] = {
    Scalar.U32: (U32, 0), Scalar.BOOL: (U32, 0), Scalar.I32: (I32, 0), Scalar.F32: (F32, 0.0),
    Scalar.U64: (U64, 0), Scalar.F16: (F32, 0.0), Scalar.BF16: (F32, 0.0),
}


def element_stride(element: DataType) -> int | None:
    """Bytes per element as the reference indexes them (``min_bytes``), None when unsized."""
    size = size_bytes(element)
    return None if size is None or size <= 0 else size


def element_count(element: DataType, byte_len: int) -> int:
    """``byte_len * 8 / bit_width``: the element count ``BufLen`` reports."""
    if element in _PACKED_4BIT:
        return byte_len * 2
    stride = element_stride(element)
    return byte_len // stride if stride else byte_len


class Buffer:
    """One bound buffer: raw little-endian bytes plus its declaration.

    Attributes:
        decl: the buffer declaration.
        data: the bytes (a ``bytearray``).
        stride: bytes per element.
        length: element count (what ``BufLen`` returns).
    """

    __slots__ = ("decl", "data", "stride", "length", "_words", "_element")

    def __init__(self, decl: BufferDecl, data: bytearray) -> None:
        stride = element_stride(decl.element)
        if stride is None:
            raise ReferenceInputError(
                f"buffer `{decl.name}` has an unsized element type {decl.element!r}.",
                fix="declare a fixed-width element type before running the reference.",
            )
        self.decl = decl
        self.data = data
        self.stride = stride
        self._element = decl.element
        self.length = min(element_count(decl.element, len(data)), 0xFFFFFFFF)
        view = _WORD_VIEWS.get(decl.element)
        # A native word view is a fast path only; it needs little-endian, whole words.
        fast = view is not None and len(data) % 4 == 0 and sys.byteorder == "little"
        self._words = memoryview(data).cast(view) if fast else None  # type: ignore[call-overload]

    def copy(self) -> Buffer:
        """An independent copy of this buffer (same declaration)."""
        return Buffer(self.decl, bytearray(self.data))

    def load(self, index: int) -> Value:
        """Read element ``index``; out of bounds reads the element type's zero."""
        element = self._element
        words = self._words
        if words is not None:
            if index < len(words):
                return (I32, words[index]) if element == Scalar.I32 else (U32, words[index])
            return _ZERO_BY_ELEMENT[element]
        if element == Scalar.BYTES:
            return (BYTES, bytes(self.data[index:]))
        offset = index * self.stride
        if offset + self.stride > len(self.data):
            return _ZERO_BY_ELEMENT.get(element, (BYTES, bytes(self.stride)))
        return _decode(element, bytes(self.data[offset:offset + self.stride]))

    def store(self, index: int, value: Value) -> None:
        """Write element ``index``; out of bounds is silently dropped."""
        if self._element == Scalar.BYTES:
            if index < len(self.data):
                raw = to_bytes(value)[: len(self.data) - index]
                self.data[index:index + len(raw)] = raw
            return
        offset = index * self.stride
        if offset + self.stride > len(self.data):
            return
        self.data[offset:offset + self.stride] = _encode(self._element, value, self.stride)

    def atomic_word(self, index: int) -> int | None:
        """The u32 word an atomic at ``index`` targets, or None when out of bounds."""
        offset = index * max(self.stride, 4)
        if offset + 4 > len(self.data):
            return None
        return int.from_bytes(self.data[offset:offset + 4], "little")

    def set_atomic_word(self, index: int, word: int) -> None:
        """Write the u32 word of an atomic (the caller checked bounds)."""
        offset = index * max(self.stride, 4)
        self.data[offset:offset + 4] = word.to_bytes(4, "little")


def _decode(element: DataType, raw: bytes) -> Value:
    if element in (Scalar.U32, Scalar.BOOL):
        return (U32, int.from_bytes(raw, "little"))  # Bool buffers load the raw u32 word
    if element == Scalar.I32:
        return (I32, int.from_bytes(raw, "little", signed=True))
    if element == Scalar.F32:
        return (F32, canonical(f32_from_bits(int.from_bytes(raw, "little"))))
    if element == Scalar.U64:
        return (U64, int.from_bytes(raw, "little"))
    if element == Scalar.F16:
        return (F32, canonical(float(np.frombuffer(raw, dtype="<f2")[0])))
    if element == Scalar.BF16:
        return (F32, canonical(f32_from_bits(int.from_bytes(raw, "little") << 16)))
    # U8/I8/U16/I16 and every other fixed-width type load as raw bytes
    # (docs/vyre-semantics.md, Raw-byte loads).
    return (BYTES, raw)


def _encode(element: DataType, value: Value, stride: int) -> bytes:
    tag, payload = value
    if element == Scalar.F32:
        if tag == F32:
            x = payload
        elif tag == U32:
            x = f32_from_bits(payload)  # a u32 stored into f32 memory is its bit pattern
        else:
            x = 0.0
        return f32_bits(canonical(x)).to_bytes(4, "little")
    if element in (Scalar.F16, Scalar.BF16) and tag == F32:
        if element == Scalar.F16:
            with np.errstate(all="ignore"):
                return np.float16(payload).tobytes()
        return (f32_bits(payload) >> 16).to_bytes(2, "little")
    return fit_width(to_bytes(value), stride)


class Memory:
    """Storage buffers (persist for the dispatch) and workgroup buffers (per workgroup).

    Attributes:
        storage: name -> storage buffer.
        workgroup: name -> workgroup buffer of the running workgroup.
    """

    __slots__ = ("storage", "workgroup", "_forked")

    def __init__(self, storage: dict[str, Buffer], workgroup: dict[str, Buffer]) -> None:
        self.storage = storage
        self.workgroup = workgroup
        self._forked = False

    def resolve(self, name: str) -> Buffer:
        """The buffer ``name`` (storage first, then workgroup, as the reference looks up)."""
        buf = self.storage.get(name)
        if buf is None:
            buf = self.workgroup.get(name)
            if buf is None:
                raise ReferenceExecutionError(
                    f"reference to unknown buffer `{name}`.",
                    fix="declare the buffer in Program.buffers.",
                )
        return buf

    def atomic_target(self, name: str) -> Buffer:
        """The storage buffer of an atomic; workgroup atomics are an error in the reference."""
        buf = self.storage.get(name)
        if buf is None:
            if name in self.workgroup:
                raise ReferenceExecutionError(
                    f"atomic on workgroup buffer `{name}` is not supported by the reference.",
                    fix="use a ReadWrite storage buffer of u32 for atomics.",
                )
            raise ReferenceExecutionError(
                f"atomic on unknown buffer `{name}`.", fix="declare the buffer in Program.buffers."
            )
        if buf.decl.access not in (BufferAccess.READ_WRITE, BufferAccess.WRITE_ONLY):
            raise ReferenceExecutionError(
                f"atomic on read-only buffer `{name}`.",
                fix="declare the atomic's buffer ReadWrite.",
            )
        if self._forked:
            # Subgroup operands are evaluated against a throwaway copy of memory.
            buf = buf.copy()
            self.storage[name] = buf
        return buf

    def fork(self) -> Memory:
        """A copy-on-write view whose atomics never reach this memory."""
        view = Memory(dict(self.storage), self.workgroup)
        view._forked = True
        return view


# -- binding inputs and inferring the grid ----------------------------------------------------


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
    """The reference's grid inference (docs/vyre-semantics.md, Grid inference).

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
