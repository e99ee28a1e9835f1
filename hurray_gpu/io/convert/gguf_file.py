"""The GGUF container (versions 2 and 3, little-endian): header, key/values, tensor infos.

Parsed here with every count, length and offset bounded by the file, rather than with
gguf-py's ``GGUFReader``: that reader loops over a declared array length without checking it
against the file (a 20-byte key can ask for 2**64 iterations) and multiplies dimensions in
wrapping uint64. Tests check this parser against ``GGUFReader`` on files gguf-py writes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hurray_gpu.format.descriptor import TensorDescriptor
from hurray_gpu.io.convert import ggml_types
from hurray_gpu.io.convert.source import (
    MAX_TENSORS,
    Converted,
    Cursor,
    SourceFile,
    SourceTensor,
    check_disjoint,
    check_shape,
)
from hurray_gpu.io.kv import UInt64

__all__ = ["GGUF_MAGIC", "GGUFSource", "MAX_ARRAY_DEPTH", "MAX_DIMS"]

GGUF_MAGIC = b"GGUF"
_VERSIONS = (2, 3)  # version 1 used 32-bit counts and lengths; llama.cpp dropped it too
# ggml tensors have at most 4 dimensions (GGML_MAX_DIMS); a few more leave room for tools
# that write more while bounding a hostile n_dims before its dims are read.
MAX_DIMS = 8
# GGUF arrays may nest (arrays of arrays); real files nest at most once.
MAX_ARRAY_DEPTH = 4
DEFAULT_ALIGNMENT = 32
_STRING, _ARRAY = 8, 9
# value_type -> (struct format, size, name)
_SCALARS = {0: ("B", 1, "UINT8"), 1: ("b", 1, "INT8"), 2: ("H", 2, "UINT16"),
            3: ("h", 2, "INT16"), 4: ("I", 4, "UINT32"), 5: ("i", 4, "INT32"),
            6: ("f", 4, "FLOAT32"), 7: ("?", 1, "BOOL"), 10: ("Q", 8, "UINT64"),
            11: ("q", 8, "INT64"), 12: ("d", 8, "FLOAT64")}
_NP = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4", 10: "<u8",
       11: "<i8", 12: "<f8"}
_FIX_NEWER = ("convert the model with a current llama.cpp (convert_hf_to_gguf.py), which "
              "writes GGUF version 3.")


def _type_name(vtype: int, elem: int | None = None) -> str:
    if vtype == _ARRAY:
        return f"ARRAY[{_type_name(elem) if elem is not None else '?'}]"
    return "STRING" if vtype == _STRING else _SCALARS[vtype][2]


class _KVParser:
    """GGUF key/values -> Hurray KV entries ``gguf.<key>``; ``gguf.value_types`` keeps each
    key's GGUF type (``key=UINT32``), which Hurray's KV tags alone do not preserve."""

    def __init__(self, cur: Cursor) -> None:
        self.cur = cur
        self.types: list[str] = []

    def string(self, what: str) -> str | bytes:
        raw = bytes(self.cur.take(self.cur.count("Q", 1, f"{what} length"), what))
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw  # kept as bytes: the converter does not judge a tokenizer's entries

    def value(self, vtype: int, depth: int, what: str) -> Any:
        if vtype in _SCALARS:
            fmt = _SCALARS[vtype][0]
            value = self.cur.unpack(fmt, what)
            return UInt64(value) if fmt == "Q" else value
        if vtype == _STRING:
            return self.string(what)
        if vtype != _ARRAY:
            raise self.cur.src.fail(f"{what} has unknown value type {vtype}",
                                    offset=self.cur.base + self.cur.pos - 4)
        return self.array(depth + 1, what)

    def array(self, depth: int, what: str) -> Any:
        if depth > MAX_ARRAY_DEPTH:
            raise self.cur.src.fail(f"{what} nests arrays more than {MAX_ARRAY_DEPTH} deep",
                                    offset=self.cur.base + self.cur.pos)
        elem = self.cur.unpack("I", f"{what} element type")
        size = _SCALARS[elem][1] if elem in _SCALARS else 8  # strings/arrays: a u64 length
        n = self.cur.count("Q", size, f"{what} array length")
        if elem in _NP:  # one bounded read, not n Python calls
            values = np.frombuffer(self.cur.take(n * size, what), _NP[elem]).tolist()
            return [UInt64(v) for v in values] if elem == 10 else values
        values = [self.value(elem, depth, what) for _ in range(n)]
        if elem == _STRING and any(isinstance(v, bytes) for v in values):
            return [v.encode("utf-8") if isinstance(v, str) else v for v in values]  # one type
        return values

    def entry(self, out: dict[str, Any]) -> None:
        at = self.cur.base + self.cur.pos
        key = self.string("key")
        if not isinstance(key, str) or f"gguf.{key}" in out:
            raise self.cur.src.fail(f"metadata key {key!r} is not UTF-8 or appears twice",
                                    offset=at)
        vtype = self.cur.unpack("I", f"type of {key}")
        elem = self.cur.peek_u32() if vtype == _ARRAY else None
        value = self.value(vtype, 0, f"value of {key}")
        if isinstance(value, list) and (not value or any(isinstance(v, list) for v in value)):
            value = repr(value)  # Hurray KV has no empty or nested arrays: keep it readable
        self.types.append(f"{key}={_type_name(vtype, elem)}")
        out[f"gguf.{key}"] = value


class GGUFSource:
    """A GGUF file's tensors and metadata, checked against the file before any tensor is read.

    Args:
        src: the opened file.

    Raises:
        ConversionError: a malformed or hostile header (the first problem, with its offset).
        UnsupportedConversionError: a tensor type or shape this converter does not map.
    """

    format = "gguf"

    def __init__(self, src: SourceFile) -> None:
        self.src = src
        cur = Cursor(src)
        if bytes(cur.take(4, "magic")) != GGUF_MAGIC:
            raise src.fail("not a GGUF file (bad magic)", offset=0)
        version = cur.unpack("I", "version")
        if version not in _VERSIONS:
            raise src.fail(f"GGUF version {version} (0x{version:08X}) is not 2 or 3; big-endian "
                           "GGUF files are not supported either", offset=4, fix=_FIX_NEWER)
        n_tensors = cur.count("Q", 8 + 4 + 4 + 8, "tensor_count")
        n_kv = cur.count("Q", 8 + 4 + 1, "kv_count")  # key length, type, a 1-byte value
        if n_tensors > MAX_TENSORS:
            raise src.fail(f"tensor_count {n_tensors} exceeds {MAX_TENSORS}", offset=8)
        kv = _KVParser(cur)
        self._metadata: dict[str, Any] = {"gguf.version": version}
        for _ in range(n_kv):
            kv.entry(self._metadata)
        self._metadata["gguf.value_types"] = kv.types or ["(none)"]
        infos = [self._info(cur) for _ in range(n_tensors)]
        alignment = self._metadata.get("gguf.general.alignment", DEFAULT_ALIGNMENT)
        if not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
            raise src.fail(f"general.alignment {alignment!r} is not a power of two")
        data_start = -(-cur.pos // alignment) * alignment
        self.entries = self._plan(infos, data_start, alignment)
        check_disjoint(src, self.entries)

    def _info(self, cur: Cursor) -> tuple[str, tuple[int, ...], int, int, int]:
        at = cur.base + cur.pos
        name = self._name(cur)
        n_dims = cur.unpack("I", f"n_dims of {name}")
        if n_dims > MAX_DIMS:
            raise self.src.fail(f"n_dims {n_dims} exceeds {MAX_DIMS}", tensor=name, offset=at)
        ne = tuple(int(cur.unpack("Q", f"dims of {name}")) for _ in range(n_dims))
        type_id = cur.unpack("I", f"type of {name}")
        return name, ne, type_id, cur.unpack("Q", f"offset of {name}"), at

    def _name(self, cur: Cursor) -> str:
        at = cur.base + cur.pos
        raw = bytes(cur.take(cur.count("Q", 1, "tensor name length"), "tensor name"))
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self.src.fail(f"tensor name {raw!r} is not UTF-8", offset=at) from None

    def _plan(self, infos: list[tuple[str, tuple[int, ...], int, int, int]], data_start: int,
              alignment: int) -> list[SourceTensor]:
        entries, seen = [], set()
        for name, ne, type_id, rel, at in infos:
            kind = ggml_types.type_name(type_id)
            if name in seen:
                raise self.src.fail("the tensor name appears twice", tensor=name, offset=at)
            seen.add(name)
            shape = tuple(reversed(ne))  # ne[0] is the innermost (contiguous) dimension
            check_shape(self.src, name, kind, shape)
            mapping = ggml_types.mapping(self.src, name, kind, type_id)
            nbytes = mapping.source_bytes(self.src, name, shape)
            if rel % alignment:
                raise self.src.fail(f"data offset {rel} is not a multiple of the alignment "
                                    f"{alignment}", tensor=name, kind=kind, offset=at)
            self.src.check_span(data_start + rel, nbytes, "the tensor's data", tensor=name,
                                kind=kind)
            entries.append(SourceTensor(name, kind, shape, data_start + rel, nbytes))
        return entries

    def metadata(self) -> dict[str, Any]:
        """``gguf.<key>`` for every GGUF key/value, plus ``gguf.version`` and
        ``gguf.value_types``."""
        return self._metadata

    def span(self, entry: SourceTensor) -> TensorDescriptor | None:
        """The descriptor of a tensor whose Hurray bytes are its source bytes (the direct
        types), which the converter copies file to file; None for the others."""
        hurray = ggml_types.DIRECT.get(entry.kind)
        return None if hurray is None else TensorDescriptor.dense(hurray, entry.shape)

    def load(self, entry: SourceTensor) -> Converted:
        """Read one tensor's bytes and map them (see :mod:`ggml_types`)."""
        raw = self.src.read(entry.offset, entry.nbytes, "the tensor's data", tensor=entry.name,
                            kind=entry.kind, scratch="read")
        return ggml_types.MAPPINGS[entry.kind].convert(self.src, entry, raw)
