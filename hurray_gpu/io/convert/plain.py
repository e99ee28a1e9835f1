"""Plain checkpoints: safetensors, NumPy ``.npz`` and PyTorch state dicts. Every element type
with a Hurray twin keeps its bytes (bool is packed to Hurray's one bit per element).

safetensors is parsed here (8-byte header length, JSON header, data): the ``safetensors``
package is not a dependency, and the format is small enough to check every field strictly.
"""

from __future__ import annotations

import importlib
import json
import zipfile
import zlib
from typing import Any, cast

import numpy as np

from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError
from hurray_gpu.format.dtypes import by_name, from_numpy_dtype
from hurray_gpu.format.packing import pack
from hurray_gpu.io.convert.bnb import plan_bnb
from hurray_gpu.io.convert.compressed import plan_compressed
from hurray_gpu.io.convert.source import (
    MAX_HEADER_BYTES,
    MAX_TENSORS,
    Converted,
    SourceFile,
    SourceTensor,
    check_disjoint,
    check_shape,
    dense_tensor,
    element_count,
    refuse,
)
from hurray_gpu.io.convert.torchao_mx import (
    is_mx,
    load_mx,
    mx_entry,
    plan_torchao_safetensors,
    safe_globals,
)
from hurray_gpu.parts import TensorLike, assemble

__all__ = ["ZIP_ERRORS", "NpzSource", "SafetensorsSource", "TorchSource", "plain_tensor"]

# safetensors dtype -> Hurray type (F8_E4M3 is the OCP "fn" variant: no infinities)
_ST_TYPES = {"BOOL": "bool", "U8": "uint8", "I8": "int8", "U16": "uint16", "I16": "int16",
             "F16": "float16", "BF16": "bfloat16", "U32": "uint32", "I32": "int32",
             "F32": "float32", "U64": "uint64", "I64": "int64", "F64": "float64",
             "F8_E4M3": "float8_e4m3", "F8_E5M2": "float8_e5m2", "C64": "complex64"}
# What zipfile raises for a damaged archive: bad headers, bad deflate data or CRC, a member that
# ends early, an unsupported compression method, an encrypted member (RuntimeError).
ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError,
               NotImplementedError, RuntimeError)
_FIX_DTYPE = ("cast the tensor to a type Hurray has (float32, float16, bfloat16, int8, ...) "
              "before saving it, then convert again.")


def plain_tensor(hurray: str, shape: tuple[int, ...], raw: np.ndarray,
                 col_major: bool = False) -> TensorLike:
    """A dense tensor from element bytes: bool is packed (its bytes must be 0 or 1), every
    other type is used byte for byte."""
    dtype = by_name(hurray)
    if dtype.name == "bool":
        data = pack(raw.view(np.bool_).reshape(shape), dtype)
        return assemble(_desc(dtype, shape, col_major), [data])
    if col_major:
        return assemble(_desc(dtype, shape, True), [raw])
    return dense_tensor(dtype, shape, raw)


def _desc(dtype: Any, shape: tuple[int, ...], col_major: bool) -> Any:
    from hurray_gpu.format.descriptor import TensorDescriptor

    return TensorDescriptor.dense(dtype, shape, col_major=col_major and len(shape) > 1)


def _typed(hurray: str, raw: np.ndarray, shape: tuple[int, ...]) -> Any:
    """The source's own view of the bytes (the array convert(device=...) compares with)."""
    return raw.view(cast(Any, by_name(hurray).numpy)).reshape(shape)


def _load_checked(src: SourceFile, entry: SourceTensor, hurray: str, raw: np.ndarray,
                  col_major: bool = False) -> Converted:
    try:
        tensor = plain_tensor(hurray, entry.shape, raw, col_major)
    except HurrayFormatError as exc:  # bool bytes other than 0 and 1
        raise src.fail(f"its values do not fit {hurray}: {exc}", tensor=entry.name,
                       kind=entry.kind, fix="save the tensor again from its framework.") from None
    if col_major and len(entry.shape) > 1:  # the bytes are the transpose's, row-major
        return Converted(tensor, lambda: _typed(hurray, raw, entry.shape[::-1]).T)
    return Converted(tensor, lambda: _typed(hurray, raw, entry.shape))


def _uints(value: Any, n: int) -> bool:
    """A JSON list of ``n`` (any number when negative) non-negative ints."""
    return (isinstance(value, list) and (n < 0 or len(value) == n)
            and all(type(x) is int and x >= 0 for x in value))


class SafetensorsSource:
    """A safetensors file: ``u64`` header length, a JSON header, then the tensors' bytes.

    Raises:
        ConversionError: a malformed header (bad JSON, offsets outside the data, overlaps,
            sizes that disagree with dtype and shape).
        UnsupportedConversionError: a dtype with no Hurray twin.
    """

    format = "safetensors"

    def __init__(self, src: SourceFile) -> None:
        self.src = src
        src.check_span(0, 8, "the header length")
        n = int(src.read(0, 8, "the header length").view("<u8")[0])
        if n > MAX_HEADER_BYTES:
            raise src.fail(f"header length {n} exceeds {MAX_HEADER_BYTES}", offset=0)
        header = self._parse(bytes(src.read(8, n, "the JSON header")))
        meta = header.pop("__metadata__", None) or {}
        if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
            raise src.fail("__metadata__ is not an object of strings", offset=8)
        self._metadata: dict[str, Any] = {f"safetensors.{k}": v for k, v in meta.items()}
        if len(header) > MAX_TENSORS:
            raise src.fail(f"{len(header)} tensors exceed {MAX_TENSORS}", offset=8)
        self._types: dict[str, str] = {}
        entries = [self._entry(name, info, 8 + n) for name, info in header.items()]
        check_disjoint(src, entries)
        named = {e.name: e for e in entries}  # quantized weights' parts grouped into one
        self._loaders = plan_bnb(src, named, self._metadata)
        self._loaders.update(plan_compressed(src, named, self._metadata))
        self._loaders.update(plan_torchao_safetensors(src, named, self._metadata))
        for e in named.values():
            if e.kind == "F8_E8M0":  # e8m0 bytes only as an MX tensor's scales
                raise refuse(src, e, "Hurray's float8_e8m0 forbids the bytes 0x00 and 0xFF "
                             "that this type allows (only the scales of a torchao MX tensor "
                             "are mapped)", _FIX_DTYPE)
        self.entries = sorted(named.values(), key=lambda e: e.offset)

    def _parse(self, text: bytes) -> dict[str, Any]:
        def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
            out = dict(pairs)
            if len(out) != len(pairs):
                raise ValueError("a key appears twice")
            return out
        try:
            header = json.loads(text.decode("utf-8"), object_pairs_hook=no_duplicates)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise self.src.fail(f"the JSON header is invalid ({exc})", offset=8) from None
        if not isinstance(header, dict):
            raise self.src.fail("the JSON header is not an object", offset=8)
        return header

    def _entry(self, name: str, info: Any, data_start: int) -> SourceTensor:
        fields = info if isinstance(info, dict) else {}
        kind, shape, offsets = fields.get("dtype"), fields.get("shape"), fields.get("data_offsets")
        if not isinstance(kind, str) or not _uints(shape, -1) or not _uints(offsets, 2):
            raise self.src.fail("needs a string dtype, a shape of non-negative ints and two "
                                "data_offsets", tensor=name, offset=8)
        dims, (begin, end) = tuple(cast(list, shape)), cast(list, offsets)
        check_shape(self.src, name, kind, dims)
        if kind not in _ST_TYPES and kind != "F8_E8M0":
            raise refuse(self.src, (name, kind), "this safetensors dtype has no Hurray element "
                         "type that keeps its bits (not yet supported by this converter for "
                         "F4/F6/F8_E8M0)", _FIX_DTYPE)
        # F8_E8M0: the scales of a torchao MX tensor (plan_torchao_safetensors), else refused
        hurray = _ST_TYPES.get(kind, "float8_e8m0")
        itemsize = 1 if hurray == "bool" else by_name(hurray).bits // 8
        if end < begin or end - begin != element_count(dims) * itemsize:
            raise self.src.fail(f"data_offsets [{begin}, {end}] do not hold {shape} x {kind}",
                                tensor=name, kind=kind, offset=8)
        self.src.check_span(data_start + begin, end - begin, "the tensor's data", tensor=name,
                            kind=kind)
        self._types[name] = hurray
        return SourceTensor(name, kind, dims, data_start + begin, end - begin)

    def metadata(self) -> dict[str, Any]:
        """``safetensors.<key>`` for every ``__metadata__`` entry."""
        return self._metadata

    def span(self, entry: SourceTensor) -> Any:
        """The descriptor of a tensor whose Hurray bytes are its source bytes (every type but
        BOOL, which is packed, and quantized weights), which the converter copies file to
        file; else None."""
        if entry.name in self._loaders:
            return None
        hurray = self._types[entry.name]
        return None if hurray == "bool" else _desc(by_name(hurray), entry.shape, False)

    def load(self, entry: SourceTensor) -> Converted:
        """Read one tensor's bytes into a dense Hurray tensor (a quantized weight's parts
        into one quantized tensor)."""
        if entry.name in self._loaders:
            return self._loaders[entry.name](entry)
        raw = self.src.read(entry.offset, entry.nbytes, "the tensor's data", tensor=entry.name,
                            kind=entry.kind, scratch="read")
        return _load_checked(self.src, entry, self._types[entry.name], raw)


class NpzSource:
    """A NumPy ``.npz`` archive (``np.savez`` / ``np.savez_compressed``), read member by member.

    Each member's ``.npy`` header is read and checked against the member's size before the
    array is allocated (NumPy's own loader allocates the declared shape first).
    """

    format = "npz"

    def __init__(self, src: SourceFile) -> None:
        self.src = src
        try:
            self._zip = zipfile.ZipFile(src.path)
            infos = self._zip.infolist()
        except ZIP_ERRORS as exc:
            raise src.fail(f"not a readable zip archive ({exc})") from None
        if len(infos) > MAX_TENSORS:
            raise src.fail(f"{len(infos)} members exceed {MAX_TENSORS}")
        self._plans: dict[str, tuple[zipfile.ZipInfo, np.dtype, bool, int]] = {}
        self.entries = [self._entry(info) for info in infos]

    def _entry(self, info: zipfile.ZipInfo) -> SourceTensor:
        name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
        try:
            with self._zip.open(info) as f:
                version = np.lib.format.read_magic(f)
                read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                               else np.lib.format.read_array_header_2_0)
                shape, fortran, dtype = read_header(f, max_header_size=1 << 16)
                header_len = f.tell()
        except ZIP_ERRORS as exc:
            raise self.src.fail(f"member is not a .npy array ({exc})", tensor=name) from None
        kind = str(dtype)
        check_shape(self.src, name, kind, tuple(shape))
        hurray = self._hurray(name, kind, dtype)
        nbytes = element_count(tuple(shape)) * dtype.itemsize
        if header_len + nbytes != info.file_size:
            raise self.src.fail(f"the .npy header declares {nbytes} data bytes but the member "
                                f"holds {info.file_size - header_len}", tensor=name, kind=kind)
        self._plans[name] = (info, dtype, bool(fortran), header_len)
        return SourceTensor(name, hurray, tuple(shape), -1, nbytes)

    def _hurray(self, name: str, kind: str, dtype: np.dtype) -> str:
        try:
            if dtype.hasobject:
                raise UnsupportedOpError("object arrays", fix=_FIX_DTYPE)
            return from_numpy_dtype(dtype).name
        except (UnsupportedOpError, HurrayFormatError):
            raise refuse(self.src, (name, kind), "this NumPy dtype has no Hurray element type",
                         _FIX_DTYPE) from None

    def metadata(self) -> dict[str, Any]:
        """An npz archive carries no metadata."""
        return {}

    def span(self, entry: SourceTensor) -> None:
        """None: members may be compressed (no byte range to copy)."""
        return None

    def load(self, entry: SourceTensor) -> Converted:
        """Decompress one member into a dense Hurray tensor (byte-swapped if big-endian)."""
        info, dtype, fortran, header_len = self._plans[entry.name]
        raw = self.src.buffer(entry.nbytes, "read")
        try:
            with self._zip.open(info) as f:
                f.seek(header_len)
                got = cast(Any, f).readinto(raw.data)
        except ZIP_ERRORS as exc:
            raise self.src.fail(f"the member cannot be read ({exc})", tensor=entry.name,
                                kind=entry.kind) from None
        if got != entry.nbytes:
            raise self.src.fail(f"the member ended after {got} of {entry.nbytes} bytes",
                                tensor=entry.name, kind=entry.kind)
        if dtype.byteorder == ">":
            raw.view(dtype).byteswap(inplace=True)
        return _load_checked(self.src, entry, entry.kind, raw, col_major=fortran)

    def close(self) -> None:
        """Close the archive."""
        self._zip.close()


class TorchSource:
    """A PyTorch checkpoint read with ``torch.load(weights_only=True)`` (memory-mapped for the
    zip format), flattened to ``outer.inner`` names; scalars and strings become KV metadata
    ``torch.<name>``."""

    format = "torch"

    def __init__(self, src: SourceFile) -> None:
        self.src = src
        try:
            self._torch = importlib.import_module("torch")
        except ImportError:
            raise refuse(src, ("(file)", "pytorch"), "reading PyTorch checkpoints needs torch",
                         "pip install torch (the CPU build is enough).") from None
        try:
            # torchao MX tensors load as stand-ins (torchao_mx.safe_globals), torchao's classes
            # registered under their names: torchao itself need not be installed
            with self._torch.serialization.safe_globals(safe_globals(self._torch)):
                obj = self._torch.load(src.path, map_location="cpu", weights_only=True,
                                       mmap=zipfile.is_zipfile(src.path))
        except Exception as exc:  # torch raises many types for a bad or unsafe pickle
            raise src.fail(f"torch.load(weights_only=True) refused it ({type(exc).__name__}: "
                           f"{str(exc)[:200]})", fix="save the checkpoint with torch.save("
                           "model.state_dict(), path): only tensors and plain containers "
                           "load safely.") from None
        self._tensors: dict[str, Any] = {}
        self._metadata: dict[str, Any] = {}
        self._flatten(obj, "")
        self.entries = [self._entry(name, t) for name, t in self._tensors.items()]

    def _flatten(self, obj: Any, prefix: str) -> None:
        items = obj.items() if isinstance(obj, dict) else enumerate(obj)
        for key, value in items:
            name = f"{prefix}{key}"
            if isinstance(value, self._torch.Tensor):
                self._tensors[name] = value
            elif isinstance(value, (dict, list, tuple)):
                self._flatten(value, name + ".")
            elif isinstance(value, (str, int, float, bool)):
                self._metadata[f"torch.{name}"] = value
            elif value is not None:
                raise refuse(self.src, (name, type(value).__name__), "only tensors, containers "
                             "and str/int/float/bool values can be carried", _FIX_DTYPE)

    def _entry(self, name: str, t: Any) -> SourceTensor:
        if is_mx(t):
            return mx_entry(self.src, name, t, self._torch)
        kind = str(t.dtype).removeprefix("torch.")
        hurray = {"float8_e4m3fn": "float8_e4m3", "complex64": "complex64"}.get(kind, kind)
        if t.layout != self._torch.strided or t.is_quantized or hurray not in _ST_TYPES.values():
            raise refuse(self.src, (name, kind), "only dense (strided) tensors of a dtype with "
                         "a Hurray twin map directly", _FIX_DTYPE)
        return SourceTensor(name, hurray, tuple(int(d) for d in t.shape), -1,
                            int(t.numel()) * t.element_size())

    def metadata(self) -> dict[str, Any]:
        """``torch.<name>`` for every scalar or string in the checkpoint."""
        return self._metadata

    def span(self, entry: SourceTensor) -> None:
        """None: torch owns the file's layout (tensors are read through it)."""
        return None

    def load(self, entry: SourceTensor) -> Converted:
        """One tensor's bytes (a view of the mapped file when contiguous) as a Hurray tensor."""
        if entry.kind.startswith("mx-"):
            return load_mx(self.src, entry, self._tensors.pop(entry.name), self._torch)
        t = self._tensors.pop(entry.name).contiguous().reshape(-1)
        raw = t.view(self._torch.uint8).numpy() if t.numel() else np.empty(0, np.uint8)
        return _load_checked(self.src, entry, entry.kind, raw)
