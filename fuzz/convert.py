"""Fuzz harness for the checkpoint converter (hurray_gpu.io.convert: GGUF, safetensors with
bitsandbytes NF4, compressed-tensors (a fixed config.json beside every input) or torchao MX
weights, and .npz sources; PyTorch checkpoints are torch.load's to decode).

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
    scratch_file("config.json", _CT_CONFIG)
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


def _safetensors(tensors: dict[str, np.ndarray], meta: dict[str, str] | None = None) -> bytes:
    header, blobs, at = {"__metadata__": meta or {"format": "pt"}}, b"", 0
    kinds = {"float32": "F32", "float16": "F16", "int8": "I8", "bool": "BOOL", "uint8": "U8",
             "int32": "I32", "int64": "I64"}
    for name, value in tensors.items():
        kind = "F8_E8M0" if name.endswith("._weight_scale") else kinds[value.dtype.name]
        header[name] = {"dtype": kind, "shape": list(value.shape),
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


def _nf4(rng: np.random.Generator, shape: tuple[int, ...], nested: bool) -> dict[str, np.ndarray]:
    """One bitsandbytes NF4 weight ``w`` as QuantState.as_dict(packed=True) lays it out (blocks
    of 64; double-quantized absmax: codes, 256-entry map, one nested block)."""
    from hurray_gpu.ops.plan import nf4_table

    n = int(np.prod(shape))
    blocks = -(-n // 64)
    state: dict[str, object] = {"quant_type": "nf4", "blocksize": 64, "dtype": "float32",
                                "shape": list(shape)}
    parts = {"w": rng.integers(0, 256, (n + 1) // 2, dtype=np.uint8),
             "w.quant_map": nf4_table()}
    if nested:
        state.update(nested_blocksize=256, nested_dtype="float32", nested_offset=0.5)
        parts.update({"w.absmax": rng.integers(0, 256, blocks, dtype=np.uint8),
                      "w.nested_absmax": np.array([0.25], np.float32),
                      "w.nested_quant_map": np.linspace(-1, 1, 256, dtype=np.float32)})
    else:
        parts["w.absmax"] = rng.uniform(0, 2, blocks).astype(np.float32)
    blob = np.frombuffer(json.dumps(state).encode(), np.uint8)
    return {**parts, "w.quant_state.bitsandbytes__nf4": blob}


# The config.json every input finds beside it (compressed-tensors reads its scheme there).
_CT_CONFIG = json.dumps({"quantization_config": {"format": "pack-quantized", "config_groups": {
    "g0": {"weights": {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group",
                       "group_size": 32}},
    "g1": {"weights": {"num_bits": 8, "type": "int", "symmetric": False,
                       "strategy": "channel"}}}}}).encode()


def _ct(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Two pack-quantized weights: int4 group 32 symmetric (4 x 64) and int8 channel with
    packed zero points (9 x 12)."""
    def words(*shape: int) -> np.ndarray:
        return rng.integers(-2**31, 2**31, shape, dtype=np.int64).astype(np.int32)
    return {"a.weight_packed": words(4, 8), "a.weight_shape": np.array([4, 64], np.int64),
            "a.weight_scale": rng.uniform(0.01, 1, (4, 2)).astype(np.float32),
            "b.weight_packed": words(9, 3), "b.weight_shape": np.array([9, 12], np.int64),
            "b.weight_scale": rng.uniform(0.01, 1, (9, 1)).astype(np.float32),
            "b.weight_zero_point": words(3, 1)}


def _mx(rng: np.random.Generator, swizzled: bool) -> bytes:
    """torchao's flattened MXTensor: fp4 codes two a byte, e8m0 scales (some 0x00 on +-0
    blocks), its state JSON in __metadata__."""
    codes = rng.integers(0, 256, (4, 32), np.uint8)
    codes[1, :16] = 0x88  # an all -0 block, its scale 0x00 below
    scale = rng.integers(100, 140, 512 if swizzled else 8, np.uint8).reshape(-1, 2)
    scale[8 if swizzled else 1, 0] = 0  # block (row 1, column 0): flat 16 when swizzled
    state = {"elem_dtype": {"_type": "torch.dtype", "_data": "float4_e2m1fn_x2"},
             "block_size": 32, "is_swizzled_scales": swizzled}
    meta = {"tensor_names": json.dumps(["l.weight"]),
            "l.weight": json.dumps({"_type": "MXTensor", "_data": state,
                                    "_tensor_data_names": ["qdata", "scale"]})}
    return _safetensors({"l._weight_qdata": codes, "l._weight_scale": scale}, meta)


def seeds() -> list[bytes]:
    """tests/golden/gguf/tiny.gguf (gguf-py's own), GGUF files of every mapped block type,
    safetensors (plain, NF4 weights kept in shape or stored flat, pack-quantized weights,
    torchao MX weights with plain and swizzled scales) and
    .npz files; each with the control bytes that reach it."""
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
    nf4 = [_safetensors(_nf4(rng, (4, 96), True)), _safetensors(_nf4(rng, (5, 33), False))]
    files = [(_SAMPLE.read_bytes(), 0), (_SAMPLE.read_bytes(), 5), (gguf[0], 4),
             (gguf[1], 1), (gguf[2], 0), (st, 0), (st, 6), (_npz(False), 0), (_npz(True), 7),
             (nf4[0], 4), (nf4[1], 6), (_safetensors(_ct(rng)), 4), (_mx(rng, False), 4),
             (_mx(rng, True), 6)]
    return [bytes([ctl]) + raw for raw, ctl in files]


HARNESS = Harness(NAME, seeds, one_input)
