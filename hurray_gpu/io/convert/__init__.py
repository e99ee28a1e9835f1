"""Convert checkpoints (GGUF, safetensors, PyTorch state dicts, NumPy ``.npz``) to ``.hrry``
files, one tensor at a time (docs/importing.md).

Each source reader plans every tensor first (types, shapes, offsets checked against the file,
so a refusal comes before anything is written), then yields one converted tensor at a time:
read, map, write, drop. Peak memory is a few times the largest tensor, not the file.
"""

from __future__ import annotations

import contextlib
import os
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from hurray_gpu.errors import ConversionError, HurrayFormatError, open_for_reading
from hurray_gpu.io.convert.gguf_file import GGUF_MAGIC, GGUFSource
from hurray_gpu.io.convert.plain import ZIP_ERRORS, NpzSource, SafetensorsSource, TorchSource
from hurray_gpu.io.convert.source import SOURCE_FIX, Converted, SourceFile, SourceTensor
from hurray_gpu.io.file_format import DEFAULT_ALIGNMENT
from hurray_gpu.io.file_writer import FileWriter, atomic_output
from hurray_gpu.runtime.transfer import Progress, show_progress

__all__ = ["FORMATS", "ConvertResult", "Source", "convert", "detect_format", "open_source"]


class Source(Protocol):
    """What every source reader offers (GGUFSource, SafetensorsSource, TorchSource, NpzSource).

    Attributes:
        format: the format's name (one of FORMATS).
        src: the opened source file.
        entries: every tensor, planned and checked, in the order they are converted.
    """

    format: str
    src: SourceFile
    entries: list[SourceTensor]

    def metadata(self) -> dict[str, Any]:
        """The source's metadata as Hurray KV entries (keys prefixed with the format)."""

    def load(self, entry: SourceTensor) -> Converted:
        """Read and map one planned tensor."""

    def span(self, entry: SourceTensor) -> Any:
        """The TensorDescriptor of a tensor whose Hurray bytes are exactly its source bytes
        (copied file to file), or None."""


_READERS: dict[str, Any] = {"gguf": GGUFSource, "safetensors": SafetensorsSource,
                            "torch": TorchSource, "npz": NpzSource}
FORMATS = tuple(_READERS)
_FIX_FORMAT = ("convert from a GGUF file, a safetensors file, a PyTorch checkpoint (.pt, .pth, "
               ".bin from torch.save) or a NumPy .npz archive.")


def detect_format(path: str | os.PathLike[str]) -> str:
    """The source format of ``path``, from its first bytes (never from its suffix alone).

    Returns:
        ``"gguf"``, ``"safetensors"``, ``"torch"`` or ``"npz"``.

    Raises:
        ConversionError: none of them.
        MissingFileError, UnreadableFileError: the file cannot be opened (OSErrors).
    """
    with open_for_reading(os.fspath(path), SOURCE_FIX) as f:
        head = f.read(9)
        size = os.fstat(f.fileno()).st_size
    if head[:4] == GGUF_MAGIC:
        return "gguf"
    if head[:4] == b"PK\x03\x04":
        try:
            with zipfile.ZipFile(path) as z:
                names = z.namelist()
        except ZIP_ERRORS:
            return "npz"  # its reader names the damage
        return "torch" if any(n.endswith("data.pkl") for n in names) else "npz"
    if len(head) == 9 and head[8:9] == b"{" and 8 + int.from_bytes(head[:8], "little") <= size:
        return "safetensors"  # before pickles: a header length of 128..255 starts with 0x80
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return "torch"  # the PROTO opcode of a pickle: torch.save's legacy format
    raise ConversionError("not a GGUF, safetensors, PyTorch or NumPy .npz file (first bytes "
                          f"{head[:8].hex()})", source=os.fspath(path), fix=_FIX_FORMAT)


@contextlib.contextmanager
def open_source(path: str | os.PathLike[str], format: str | None = None, *,
                reuse: bool = False) -> Iterator[Source]:
    """Open ``path`` as a source (format detected from its bytes unless given) and plan it.

    With ``reuse``, a loaded tensor may share memory with the next one loaded: use (or write)
    each before loading the next (see :class:`SourceFile`).

    Raises:
        ConversionError: an unknown, malformed or hostile source.
        UnsupportedConversionError: a tensor this converter does not map.
    """
    kind = format or detect_format(path)
    if kind not in _READERS:
        raise ConversionError(f"unknown source format {kind!r}", source=os.fspath(path),
                              fix=f"use one of {', '.join(FORMATS)}.")
    src = SourceFile(path, reuse)
    try:
        reader = _READERS[kind](src)
        try:
            yield reader
        finally:
            getattr(reader, "close", lambda: None)()
    finally:
        src.close()


@dataclass
class ConvertResult:
    """What :func:`convert` did.

    Attributes:
        source_format: the detected format.
        tensors: tensors written.
        source_bytes: tensor bytes read from the source.
        output_bytes: size of the ``.hrry`` file.
        seconds: wall time of the conversion.
        kinds: tensors per source type (``{"Q4_0": 3, "F32": 2}``).
        forms: the Hurray form each source type became (``{"Q4_0": "int4 per-block affine"}``).
        checked_on: the device every tensor was checked on, or None.
    """

    source_format: str
    tensors: int = 0
    source_bytes: int = 0
    output_bytes: int = 0
    seconds: float = 0.0
    kinds: dict[str, int] = field(default_factory=dict)
    forms: dict[str, str] = field(default_factory=dict)
    checked_on: str | None = None


def convert(src: str | os.PathLike[str], dst: str | os.PathLike[str], *, device: Any = None,
            progress: bool | None = None, format: str | None = None,
            alignment: int = DEFAULT_ALIGNMENT) -> ConvertResult:
    """Convert a checkpoint to a ``.hrry`` file, streaming one tensor at a time.

    Every tensor becomes a Hurray tensor whose dequantization equals the source tool's own
    (docs/importing.md lists the mappings and the refusals). The source's metadata goes into
    the KV section. The output is written atomically: on any error ``dst`` is left as it was.

    Args:
        src: the source file (GGUF, safetensors, PyTorch checkpoint or ``.npz``).
        dst: the ``.hrry`` file to write.
        device: when given, every converted tensor is also dequantized (or copied) on this
            device and compared bit for bit with the source format's own decoding.
        progress: draw a progress bar (None: on a terminal, for large sources).
        format: the source format; default: detected from the file's first bytes.
        alignment: the ``.hrry`` data buffer alignment.

    Returns:
        A :class:`ConvertResult`.

    Raises:
        ConversionError: an unknown, malformed or hostile source, or a failed device check.
        UnsupportedConversionError: a tensor type this converter does not map (nothing is
            written).
        OSError: a file cannot be read or written.
    """
    start = time.perf_counter()
    dev = None
    if device is not None:
        from hurray_gpu.runtime.registry import resolve_device

        dev = resolve_device(device)
    with open_source(src, format, reuse=True) as reader:
        result = ConvertResult(reader.format, checked_on=None if dev is None else dev.spec)
        total = sum(e.nbytes for e in reader.entries)
        label = f"convert {os.path.basename(os.fspath(src))}"
        with atomic_output(dst) as handle, Progress(total, label,
                                                    show_progress(total, progress)) as bar:
            writer = FileWriter(handle, alignment=alignment)
            _set_metadata(reader, writer)
            for entry in reader.entries:
                form = _write(reader, writer, entry, dev)
                result.tensors += 1
                result.source_bytes += entry.nbytes
                result.kinds[entry.kind] = result.kinds.get(entry.kind, 0) + 1
                result.forms.setdefault(entry.kind, form)
                bar.advance(entry.nbytes)
            writer.close()
    result.output_bytes = os.path.getsize(dst)
    result.seconds = time.perf_counter() - start
    return result


def _write(reader: Source, writer: FileWriter, entry: SourceTensor, dev: Any) -> str:
    """Convert and write one tensor; returns its Hurray form. Tensors whose bytes stay as
    they are go file to file (the kernel copies them) unless a device check needs them."""
    desc = reader.span(entry) if dev is None else None
    if desc is not None:
        writer.write_copied(entry.name, desc, lambda out: reader.src.copy_to(
            out, entry.offset, entry.nbytes, "the tensor's data", tensor=entry.name,
            kind=entry.kind))
        return f"{desc.dtype.name} dense"
    converted = reader.load(entry)
    if dev is not None:
        _check(reader, entry, converted, dev)
    writer.write(entry.name, converted.tensor)
    return _form(converted.tensor)


def _set_metadata(reader: Source, writer: FileWriter) -> None:
    try:
        writer.set_metadata(reader.metadata())
    except HurrayFormatError as exc:  # e.g. a key longer than Hurray's 65535 bytes
        raise reader.src.fail(f"its metadata cannot be stored as Hurray KV ({exc})",
                              fix="remove or shorten that metadata entry in the source (gguf-py"
                                  "'s gguf_new_metadata.py can), then convert again.") from None


_SCHEMES = {0x01: "per-tensor affine", 0x02: "per-channel affine", 0x03: "per-block affine",
            0x04: "NF4", 0x05: "MXFP"}


def _form(t: Any) -> str:
    if t.is_composite:
        return "overlay add of " + " + ".join(_form(m) for m in t.members)
    quant = t.descriptor.quantization
    if quant is None:
        return f"{t.dtype.name} dense"
    block = getattr(quant, "block_size", None)
    return f"{t.dtype.name} {_SCHEMES.get(quant.SCHEME, 'quantized')}" + (
        f", block {block}" if block else "")


def _check(reader: Source, entry: SourceTensor, converted: Converted, dev: Any) -> None:
    """Compare the tensor decoded on ``dev`` with the source's own decoding, bit for bit."""
    from hurray_gpu.ops.dequantize import dequantize
    from hurray_gpu.ops.materialize import materialize

    t = converted.tensor
    if 0 in t.shape:  # no values to compare (and kernels plan nothing for them)
        return
    if t.descriptor.quantization is not None:
        got = dequantize(t, "float32", device=dev).to("cpu").numpy()
    elif t.is_composite:  # an overlay: materialized in its head's type (float32)
        got = materialize(t.to(dev)).to("cpu").numpy()  # type: ignore[attr-defined]
    else:
        got = t.to(dev).to("cpu").numpy()  # type: ignore[attr-defined]
    want = converted.expected()
    if got.shape != want.shape or got.dtype != want.dtype or got.tobytes() != want.tobytes():
        raise ConversionError(
            f"decoded on {dev.spec}, the converted tensor differs from the source's own "
            "decoding", source=reader.src.path,
            tensor=entry.name, source_type=entry.kind,
            fix=f"convert with device='reference' to tell a kernel fault on {dev.spec} from a "
                "converter fault, and report it with the source file.")
