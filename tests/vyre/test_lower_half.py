"""f16 and bf16 storage and casts in lowered programs, byte-identical to the reference on every
device: loads convert exactly (bf16 subnormals to signed zero), f16 stores round to nearest even
as NumPy does, bf16 stores truncate, and Cast to F16/BF16 rounds to nearest even."""

from __future__ import annotations

import numpy as np
import pytest

from tests._support import stable_rng
from tests.vyre.lower_programs import F32_EDGES, assert_parity, kernel_devices
from vyre import builder as b
from vyre import ir
from vyre.ir import Scalar

DEVICES = kernel_devices()
GID = b.invocation_id(0)
# Half-precision edges: zeros, subnormals, the largest finite, infinities, NaNs, ties.
HALF_EDGES = [0x0000, 0x8000, 0x0001, 0x83FF, 0x0400, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00,
              0x7C01, 0xFFFF, 0x3C00, 0x3C01, 0xBC00, 0x0080, 0x807F, 0x7F80, 0x7F7F, 0xFF81]


def half_program() -> ir.Program:
    """Per lane: the f16 and bf16 loads widened to f32, stored back (rounded / truncated), a u32
    stored into half memory (its low bits), and f32 edge values cast to F16 and BF16."""
    x = b.load("f", GID)
    return b.program(
        [b.read("h", 0, Scalar.F16), b.read("bh", 1, Scalar.BF16), b.read("f", 2, Scalar.F32),
         b.read_write("wide", 3, Scalar.F32), b.read_write("h2", 4, Scalar.F16),
         b.read_write("bh2", 5, Scalar.BF16), b.read_write("casts", 6, Scalar.F32)],
        [b.store("wide", b.mul(GID, 2), b.cast(Scalar.F32, b.load("h", GID))),
         b.store("wide", b.add(b.mul(GID, 2), 1), b.cast(Scalar.F32, b.load("bh", GID))),
         b.store("h2", GID, b.cast(Scalar.F16, b.mul(x, b.lit_f32(1.5)))),
         b.store("bh2", GID, b.cast(Scalar.BF16, b.add(x, b.cast(Scalar.F32,
                                                                 b.load("bh", GID))))),
         b.store("casts", b.mul(GID, 2), b.cast(Scalar.F32, b.cast(Scalar.F16, x))),
         b.store("casts", b.add(b.mul(GID, 2), 1), b.cast(Scalar.F32, b.cast(Scalar.BF16, x)))],
        workgroup_size=(8, 1, 1))


@pytest.mark.parametrize("device", DEVICES, ids=[d.spec for d in DEVICES])
def test_half_loads_stores_and_casts(device: object) -> None:
    rng = stable_rng("half")
    n = 64
    halves = rng.integers(0, 2**16, n, dtype=np.uint64).astype(np.uint16)
    halves[:len(HALF_EDGES)] = HALF_EDGES
    floats = rng.standard_normal(n).astype(np.float32).view(np.uint32)
    floats[:len(F32_EDGES)] = F32_EDGES
    floats[-8:] = [0x3F801000, 0x3F803000, 0x477FF000, 0x477FEFFF, 0x33000000, 0x33000001,
                   0x3F808000, 0x3F818000]  # f16 and bf16 ties, f16 overflow and underflow
    inputs = {"h": halves, "bh": np.roll(halves, 7), "f": floats,
              "wide": np.zeros(2 * n, np.uint32), "h2": np.zeros(n, np.uint16),
              "bh2": np.zeros(n, np.uint16), "casts": np.zeros(2 * n, np.uint32)}
    got = assert_parity(half_program(), inputs, device, grid=(n // 8, 1, 1))
    widened = np.frombuffer(got["wide"], "<f4")[0::2]
    finite = np.isfinite(halves.view(np.float16))
    assert np.array_equal(widened[finite], halves.view(np.float16)[finite].astype(np.float32))


@pytest.mark.parametrize("device", DEVICES, ids=[d.spec for d in DEVICES])
@pytest.mark.parametrize("element", [Scalar.F8E4M3, Scalar.F8E5M2], ids=["e4m3", "e5m2"])
def test_f8_copies_are_raw_bytes(element: Scalar, device: object) -> None:
    prog = b.program([b.read("a", 0, element), b.read_write("o", 1, element)],
                     [b.store("o", GID, b.load("a", GID))], workgroup_size=(8, 1, 1))
    codes = np.arange(256, dtype=np.uint8)[::-1].copy()
    got = assert_parity(prog, {"a": codes[:250], "o": np.zeros(256, np.uint8)}, device,
                        grid=(32, 1, 1))
    assert got["o"] == codes[:250].tobytes() + bytes(6)
