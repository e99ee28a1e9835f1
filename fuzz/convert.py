"""Fuzz harness for the checkpoint converter (hurray_gpu.io.convert: GGUF, safetensors and
.npz sources; PyTorch checkpoints are torch.load's to decode).

The converter takes a path, so each input is written to a tmpfs scratch file and converted to
another. Control byte: bits 0-1 the format (0 detected from the bytes, 1 gguf, 2 safetensors,
3 npz); bit 2 also check every tensor on the ``reference`` device. Property: ConversionError
only (UnsupportedConversionError is one); bounded time and memory; a conversion that succeeds
wrote a ``.hrry`` file that loads, with one top-level tensor per source tensor.
"""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path

import numpy as np

from hurray_gpu.errors import ConversionError
from hurray_gpu.io import open_file
from hurray_gpu.io.convert import convert, open_source

from ._engine import Bounds, FuzzFailure, Harness, Stats, guarded
from ._tmpfs import scratch_file

NAME = "convert"
# Tensors are read into buffers of their size; mappings write at most 1.5x that (Q5 widened
# to int8) plus per-block scales; the reference check decodes to float32 (4 bytes an element,
# ~7x a 4-bit source) twice (the device's result and the source's own decoding).
BOUNDS = Bounds(seconds=2.0, mem_factor=64, mem_slack=2 << 20)
KNOWN_BUGS: dict[str, bool] = {}
_FORMATS = (None, "gguf", "safetensors", "npz")
_SAMPLE = Path(__file__).resolve().parent.parent / "tests" / "golden" / "gguf" / "tiny.gguf"


def _read_back(dst: str, src: str, fmt: str | None) -> int:
    with open_source(src, fmt) as source:
        count = len(source.entries)
    with open_file(dst) as f:
        for name in f.top_level_names():
            f.read(name)
        return len(f.top_level_names()) - count


def one_input(data: bytes, *, measure_memory: bool = False, stats: Stats | None = None) -> bool:
    """Check every property on one input.

    Returns:
        True when the input converted.

    Raises:
        FuzzFailure: a property was broken.
    """
    if not data:
        return False
    ctl, payload = data[0], data[1:]
    src, dst = scratch_file("input.src", payload), scratch_file("output.hrry", b"")
    fmt = _FORMATS[ctl & 3]
    device = "reference" if ctl & 4 else None
    result = guarded(lambda: convert(src, dst, format=fmt, device=device, progress=False),
                     ConversionError, size=len(payload), bounds=BOUNDS,
                     measure_memory=measure_memory, stats=stats)
    if result is None:
        return False
    try:
        extra = _read_back(dst, src, fmt)
    except Exception as exc:
        raise FuzzFailure(f"a converted file does not read back: {exc!r}") from exc
    if extra:
        raise FuzzFailure(f"the .hrry file has {extra} more top-level tensors than the source")
    return True


def gguf_bytes(tensors: list[tuple[str, int, tuple[int, ...], bytes]]) -> bytes:
    """A GGUF v3 file (one string key) of ``(name, ggml type id, ne, data)`` tensors."""
    def string(s: str) -> bytes:
        return struct.pack("<Q", len(s)) + s.encode()
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), 1)
    head += string("general.architecture") + struct.pack("<I", 8) + string("llama")
    body, offset = b"", 0
    for name, type_id, ne, raw in tensors:
        head += string(name) + struct.pack(f"<I{len(ne)}QIQ", len(ne), *ne, type_id, offset)
        padded = raw + bytes(-len(raw) % 32)
        body, offset = body + padded, offset + len(padded)
    return head + bytes(-len(head) % 32) + body


def _blocks(rng: np.random.Generator, n: int, size: int, halves: int) -> bytes:
    """``n`` random blocks of ``size`` bytes whose first ``halves`` f16 values are 0.5."""
    raw = rng.integers(0, 256, (n, size), dtype=np.uint8)
    raw[:, :2 * halves] = np.tile(np.frombuffer(np.float16(0.5).tobytes(), np.uint8), halves)
    return raw.tobytes()


def _safetensors(tensors: dict[str, np.ndarray]) -> bytes:
    header, blobs, at = {"__metadata__": {"format": "pt"}}, b"", 0
    kinds = {"float32": "F32", "float16": "F16", "int8": "I8", "bool": "BOOL"}
    for name, value in tensors.items():
        header[name] = {"dtype": kinds[value.dtype.name], "shape": list(value.shape),
                        "data_offsets": [at, at + value.nbytes]}
        blobs, at = blobs + value.tobytes(), at + value.nbytes
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + blobs


def _npz(compressed: bool) -> bytes:
    out = io.BytesIO()
    save = np.savez_compressed if compressed else np.savez
    save(out, w=np.arange(12, dtype=np.float32).reshape(3, 4), m=np.array([True, False]),
         f=np.asfortranarray(np.arange(6, dtype=np.int16).reshape(2, 3)))
    return out.getvalue()


def seeds() -> list[bytes]:
    """tests/golden/gguf/tiny.gguf (gguf-py's own), GGUF files of every mapped block type,
    safetensors and .npz files; each with the control bytes that reach it."""
    rng = np.random.default_rng(22)
    gguf = [gguf_bytes([("q5_0", 6, (64, 2), _blocks(rng, 4, 22, 1)),
                        ("q5_1", 7, (32, 3), _blocks(rng, 3, 24, 2))]),
            gguf_bytes([("f16", 1, (5, 3), rng.integers(0, 0x3C00, 15, np.uint16).tobytes()),
                        ("bf16", 30, (7,), rng.integers(0, 0x3F00, 7, np.uint16).tobytes()),
                        ("i32", 26, (4,), np.arange(4, dtype=np.int32).tobytes())]),
            gguf_bytes([("q8_0", 8, (32, 2, 2), _blocks(rng, 4, 34, 1)),
                        ("q4_0", 2, (96,), _blocks(rng, 3, 18, 1))])]
    st = _safetensors({"a": np.ones((2, 3), np.float32), "b": np.array([1, 0], bool),
                       "c": np.arange(-3, 3, dtype=np.int8)})
    files = [(_SAMPLE.read_bytes(), 0), (_SAMPLE.read_bytes(), 5), (gguf[0], 4),
             (gguf[1], 1), (gguf[2], 0), (st, 0), (st, 6), (_npz(False), 0), (_npz(True), 7)]
    return [bytes([ctl]) + raw for raw, ctl in files]


HARNESS = Harness(NAME, seeds, one_input)
