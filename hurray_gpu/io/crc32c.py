"""CRC-32C (Castagnoli) as the ``.hrry`` index checksum uses it (docs/format.md, .hrry files).

Large inputs are split into lanes whose CRCs NumPy computes side by side, then the lanes are
joined with a precomputed "advance over L zero bytes" operator, so a 1 MB index takes milliseconds.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

_POLY = 0x82F63B78
_MASK = 0xFFFFFFFF
# Below this size a plain byte loop is faster than setting up lanes.
_SMALL = 16384
_LANES = 1024


def _make_table() -> np.ndarray:
    table = np.zeros(256, dtype=np.uint32)
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ _POLY if c & 1 else c >> 1
        table[n] = c
    return table


_TABLE = _make_table()
_TABLE_LIST = [int(v) for v in _TABLE]


def _update_bytes(reg: int, data: bytes | memoryview) -> int:
    table = _TABLE_LIST
    for byte in bytes(data):
        reg = table[(reg ^ byte) & 0xFF] ^ (reg >> 8)
    return reg


def _lanes_raw(lanes: np.ndarray, init: np.ndarray) -> np.ndarray:
    """Run the CRC register of every lane (one lane per column of ``lanes``) over its bytes."""
    reg = init.astype(np.uint32).copy()
    table = _TABLE
    for row in lanes:
        reg = table[(reg ^ row) & 0xFF] ^ (reg >> 8)
    return reg


@lru_cache(maxsize=8)
def _shift_tables(length: int) -> np.ndarray:
    """Tables T[j][v] = register after feeding ``length`` zero bytes to ``v << 8j``."""
    basis = np.array([1 << k for k in range(32)], dtype=np.uint32)
    zeros = np.zeros((length, 32), dtype=np.uint32)
    shifted = _lanes_raw(zeros, basis)
    tables = np.zeros((4, 256), dtype=np.uint32)
    values = np.arange(256, dtype=np.uint32)
    for j in range(4):
        acc = np.zeros(256, dtype=np.uint32)
        for bit in range(8):
            acc ^= np.where((values >> bit) & 1, shifted[8 * j + bit], 0).astype(np.uint32)
        tables[j] = acc
    return tables


def _shift(reg: int, tables: np.ndarray) -> int:
    return int(
        tables[0][reg & 0xFF]
        ^ tables[1][(reg >> 8) & 0xFF]
        ^ tables[2][(reg >> 16) & 0xFF]
        ^ tables[3][(reg >> 24) & 0xFF]
    )


def crc32c(data: bytes | bytearray | memoryview | np.ndarray, value: int = 0) -> int:
    """Compute CRC-32C of ``data``.

    Args:
        data: the bytes to checksum.
        value: a previous CRC to continue from (0 to start).

    Returns:
        The CRC-32C as an unsigned 32-bit integer.
    """
    buf = (np.ascontiguousarray(data).reshape(-1).view(np.uint8) if isinstance(data, np.ndarray)
           else np.frombuffer(data, dtype=np.uint8))
    reg = (value ^ _MASK) & _MASK
    n = buf.size
    if n < _SMALL:
        return _update_bytes(reg, buf.tobytes()) ^ _MASK
    lane_len = n // _LANES
    body = buf[: lane_len * _LANES].reshape(_LANES, lane_len).T.astype(np.uint32)
    init = np.zeros(_LANES, dtype=np.uint32)
    init[0] = reg
    lane_regs = _lanes_raw(body, init)
    tables = _shift_tables(lane_len)
    # Registers are linear over GF(2): concatenation = advance(previous) XOR the lane's own.
    reg = int(lane_regs[0])
    for lane in lane_regs[1:]:
        reg = _shift(reg, tables) ^ int(lane)
    reg = _update_bytes(reg, buf[lane_len * _LANES :].tobytes())
    return reg ^ _MASK
