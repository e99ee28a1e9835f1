"""Fuzz harness for the ``.hrry`` file reader (hurray_gpu.io.open_file / load).

The reader takes only a path (it memory-maps the file), so each input is written to a tmpfs
scratch file. Control byte: bit 0 recompute the index CRC-32C after mutation (so the index
and tensor decoders are reached); bit 1 permissive; bit 2 use load() instead of open_file();
bit 3 zero-copy reads; bits 4-6 max_composite_depth (0 keeps 8). Property:
HurrayFormatError only; bounded time and memory; whatever reads is saved again and re-reads
to equal tensors and metadata.
"""

from __future__ import annotations

import struct
from typing import Any

from hurray_gpu.errors import HurrayFormatError
from hurray_gpu.io import encode_kv, load, open_file, save
from hurray_gpu.io.crc32c import crc32c

from . import seeds
from ._engine import Bounds, FuzzFailure, Harness, Stats, guarded
from ._tmpfs import scratch_file

NAME = "hrry"
# The mapping is not traced; copies are bounded by the file size (host copies are padded to
# at most 1/16 of their size plus 63 bytes to align them; overlapping index ranges are
# rejected, so no byte of the file is copied twice).
BOUNDS = Bounds(seconds=2.0, mem_factor=32, mem_slack=1 << 20)
# No decoder bug is open; tests/fuzz/test_regressions.py replays every KNOWN_BUGS flag False.
KNOWN_BUGS: dict[str, bool] = {}
_TRAILER = struct.Struct("<QQQII4s4s")


def fix_crc(payload: bytes) -> bytes:
    """Recompute the trailer's index CRC-32C when the trailer's index range is in the file."""
    if len(payload) < 64 + 40 or payload[-4:] != b"HRRY":
        return payload
    base = len(payload) - 40
    idx_off, idx_len, _, _, _, _, _ = _TRAILER.unpack_from(payload, base)
    flags = struct.unpack_from("<I", payload, 12)[0]
    if not flags & 4 or idx_off + idx_len > base:
        return payload
    crc = crc32c(payload[idx_off:idx_off + idx_len])
    return payload[:base + 28] + struct.pack("<I", crc) + payload[base + 32:]


def _read_all(path: str, ctl: int) -> tuple[dict[str, Any], dict[str, Any], int]:
    depth = (ctl >> 4) & 7 or 8
    with open_file(path, permissive=bool(ctl & 2), max_composite_depth=depth) as f:
        for name in f.names:
            f.descriptor(name)
            f.read(name, copy=not ctl & 8)
        tensors = {n: f.read(n, copy=True) for n in f.top_level_names()}
        return tensors, f.metadata, f.header.alignment


def one_input(data: bytes, *, measure_memory: bool = False, stats: Stats | None = None) -> bool:
    """Check every property on one input.

    Returns:
        True when every tensor of the file read.

    Raises:
        FuzzFailure: a property was broken.
    """
    if not data:
        return False
    ctl, payload = data[0], data[1:]
    if ctl & 1:
        payload = fix_crc(payload)
    path = scratch_file("input.hrry", payload)

    def decode() -> tuple[dict[str, Any], dict[str, Any] | None, int | None]:
        if ctl & 4:
            return load(path), None, None
        return _read_all(path, ctl)

    result = guarded(decode, HurrayFormatError, size=len(payload), bounds=BOUNDS,
                     measure_memory=measure_memory, stats=stats)
    if result is None:
        return False
    check_round_trip(*result)
    return True


def check_round_trip(tensors: dict[str, Any], metadata: dict[str, Any] | None,
                     alignment: int | None) -> None:
    """save() what was read, load() it back: equal tensors, equal metadata bytes.

    Raises:
        FuzzFailure: the rewrite fails or reads back differently.
    """
    path = scratch_file("again.hrry", b"")
    try:
        save(path, tensors, metadata, alignment=alignment or 4096)
    except Exception as exc:
        raise FuzzFailure(f"tensors read from a file do not save again: {exc!r}") from exc
    try:
        with open_file(path) as f:
            back_meta = f.metadata
        back = load(path)
    except Exception as exc:
        raise FuzzFailure(f"a re-saved file does not load: {exc!r}") from exc
    if list(back) != list(tensors) or any(back[k] != tensors[k] for k in tensors):
        raise FuzzFailure("a re-saved file re-read to different tensors")
    if metadata is not None and encode_kv(back_meta) != encode_kv(metadata):
        raise FuzzFailure("a re-saved file re-read to different metadata")


HARNESS = Harness(NAME, lambda: list(seeds.hrry_seeds()), one_input)
