"""Buffers and the out-of-bounds rules of the reference (semantics doc section 3.1).

Loads past the end read the element type's zero; stores past the end are dropped.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from vyre.ir import BufferAccess, BufferDecl, DataType, Scalar, size_bytes
from vyre.reference.errors import ReferenceExecutionError, ReferenceInputError
from vyre.reference.values import (
    BYTES,
    F32,
    I32,
    U32,
    U64,
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
    # U8/I8/U16/I16 and every other fixed-width type load as raw bytes (gotcha 7).
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
