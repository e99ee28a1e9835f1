"""The correctly rounded oracle of the CR_* functions (hurray_gpu/dialect/crmath.py): mpmath at
256 bits, rounded once to f32 (ties to even). Shared by the tests and ci/crmath_exhaustive.py."""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterable

import mpmath as mp
import numpy as np

from hurray_gpu.dialect.crmath import CR_FUNCS
from hurray_gpu.dialect.crmath_tables import KEYED, TABLES
from tests._support import stable_rng

PREC = 256
REF_MP: dict[str, Callable[[mp.mpf], mp.mpf]] = {
    "EXP": mp.exp, "EXP2": lambda x: mp.power(2, x), "LOG": mp.log,
    "LOG2": lambda x: mp.log(x, 2), "RSQRT": lambda x: 1 / mp.sqrt(x), "SINH": mp.sinh,
    "COSH": mp.cosh, "TANH": mp.tanh, "ATAN": mp.atan, "ASIN": mp.asin, "ACOS": mp.acos,
    "SIN": mp.sin, "COS": mp.cos, "TAN": mp.tan}


EDGES = [0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000,
         0x80800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001,
         0x7F800001, 0x3F800000, 0xBF800000, 0x3F7FFFFF, 0x3F800001, 0x3F000000, 0xBF000000,
         0x40000000, 0x3E800000, 0x3F3504F3, 0x3FB504F3, 0x3FB504F4,
         0x42B17217, 0x42B17218, 0xC2CE8ED0, 0xC2CFF1B4, 0xC2CFF1B5, 0xC2D00000,  # exp
         0x43000000, 0x42FFFFFF, 0xC3150000, 0xC3160000, 0xC3158000, 0xC3170000,  # exp2
         0x42B2D4FC, 0x42B2D4FD, 0x41100000, 0x41200000, 0x3EFFFFFF,  # sinh/cosh, tanh
         0x33000000, 0xB3000000, 0x32FFFFFF, 0x39800000, 0x3ED413CD, 0x401A827A,
         0x397FFFFF, 0xB97FFFFF, 0x3F490FDA, 0x3F490FDB, 0x3F490FDC,  # sin/cos/tan: 2^-12, pi/4
         0x477FFFFF, 0x47800000, 0x47800001, 0xC7800000,  # Cody-Waite's end, Payne-Hanek's start
         0x4B800000, 0x5F000000, 0x7F000000, 0x7EFFFFFF, 0xFEFFFFFF]  # large: 2^24, 2^63, 2^127
# The f32 nearest multiples of pi/2 (|x - k pi/2| from 2^-29.2 at 0x6f79be45; a search over
# every binade from 1/2 up, four per binade, settled in 600-bit arithmetic) and the nearest
# below 2^16 (Cody-Waite's range): the hardest inputs of sin/cos/tan's reduction.
REDUCTION_WORST = [0x6F79BE45, 0x50A3E87F, 0x6FF9BE45, 0x5123E87F, 0x437CE5F1, 0x7079BE45,
                   0x6A1976F1, 0x53B146A6, 0x65898498, 0x51A3E87F, 0x43FCE5F1, 0x77584625,
                   0x4096CBE4, 0x474D246F, 0xEF79BE45, 0xC37CE5F1]


def sample_inputs() -> np.ndarray:
    """Edges, every listed exception, then a seeded random sample (f32 bits)."""
    rng = stable_rng("crmath", "sample")
    near = np.float32(rng.normal(0.0, 4.0, 768)).view(np.uint32)
    unit = np.float32(rng.uniform(-1.0, 1.0, 256)).view(np.uint32)
    wide = rng.integers(0, 2**32, 768, dtype=np.uint64).astype(np.uint32)
    hard = [u for table in TABLES.values() for u in table] + REDUCTION_WORST
    # f32 neighbours of k pi/2 (k < 2^20) and of huge multiples: the reduction's near misses.
    k = np.concatenate([np.arange(1, 65), rng.integers(65, 2**20, 64)]).astype(np.float64)
    nearest = np.float32(k * (np.pi / 2)).view(np.uint32)
    hard += [int(u) + d for u in nearest for d in (-1, 0, 1)]
    for key in (k for table in KEYED.values() for k in table):  # RSQRT: x0 and x0 * 4^j
        hard += [(0x3F000000 | key) + (j << 24) for j in (-20, -1, 0, 3, 30)]
    return np.concatenate([np.array(EDGES + hard, np.uint32), near, unit, wide])


def f32_bits(v: mp.mpf) -> int:
    """The f32 nearest to ``v`` (ties to even), as bits; NaN as 0x7fc00000."""
    if mp.isnan(v):
        return 0x7FC00000
    sign = 0x80000000 if v < 0 else 0
    a = abs(v)
    if a == 0:
        return sign
    if mp.isinf(a):
        return sign | 0x7F800000
    _, e = mp.frexp(a)  # a = m 2^e, m in [1/2, 1)
    q = max(int(e) - 24, -149)  # the quantum of a's f32 binade (or the subnormal one)
    n = int(mp.nint(mp.ldexp(a, -q)))  # ties to even
    if n == 2**24:
        n, q = 2**23, q + 1
    if q > 104:
        return sign | 0x7F800000
    if q == -149 and n < 2**23:
        return sign | n
    return sign | ((q + 150) << 23) | (n - 2**23)


def exact(name: str, u: int) -> int:
    """The correctly rounded ``name`` of the f32 with bits ``u``, as bits."""
    x = struct.unpack("<f", struct.pack("<I", u))[0]
    if x != x:
        return 0x7FC00000
    if x == 0 and name in ("SINH", "TANH", "ATAN", "ASIN", "SIN", "TAN"):
        return u  # odd functions keep the zero's sign (mpmath has no -0)
    if x == 0 and name == "RSQRT":
        return (u & 0x80000000) | 0x7F800000
    with mp.workprec(PREC):
        try:
            value = REF_MP[name](mp.mpf(x))
        except (ValueError, ZeroDivisionError):
            return 0x7FC00000
        return 0x7FC00000 if isinstance(value, mp.mpc) else f32_bits(value)


def exact_all(name: str, bits: Iterable[int]) -> np.ndarray:
    """:func:`exact` over ``bits`` as a uint32 array."""
    return np.array([exact(name, int(u)) for u in bits], np.uint32)


def is_nan(bits: np.ndarray) -> np.ndarray:
    """Which f32 bit patterns are NaNs."""
    return (bits & 0x7FFFFFFF) > 0x7F800000


# On emulated f64 (webgpu: WGSL on dialect/softf64.py) a function costs lavapipe seconds of
# compile time, all of them minutes: CI runs a few there (sin/cos/tan's core with its division
# and Payne-Hanek reduction, exp's POW2_64, log's), ci/fuzz.sh every one (SOFTF64_ALL=1). The
# emulation itself is proved per operation (tests/null/test_softf64.py, and every WGSL f64
# rendering on the device in tests/backend/test_f64_kernels.py); the rest is the same text.
EMULATED_CI = ("TAN", "EXP", "LOG")


def functions_for(device: object) -> tuple[str, ...]:
    """The CR_* names a test runs on ``device``: all on hardware f64, else CI's few."""
    if getattr(device, "fp64", True) or os.environ.get("SOFTF64_ALL", "") == "1":
        return tuple(CR_FUNCS)
    return EMULATED_CI
