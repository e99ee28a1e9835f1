"""The soft-f64 functions (hurray_gpu/dialect/softf64.py) rendered through host C and called on
NumPy arrays, and the hostile and random inputs they are proved on against NumPy's float64.
Shared by tests/null/test_softf64.py and the larger run of ci/fuzz.sh."""

from __future__ import annotations

import ctypes
import os
import subprocess
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np

from hurray_gpu.backends.hostcc import find_command
from hurray_gpu.dialect.cstyle import HostCRenderer
from hurray_gpu.dialect.softf64 import SOFT_F64
from tests._support import stable_rng

# What host C's renderings of the intrinsics call (kernels get them from its prelude).
_PRELUDE = (
    "#include <stdbool.h>\n#include <stdint.h>\n#include <string.h>\n"
    + HostCRenderer.f64_helpers
    + "\n"
    + HostCRenderer.intrinsic_helpers["UMULHI"]
    + """
static inline float hg_as_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t hg_as_u32(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
"""
)
# name -> (C argument types, C result type, the expression of element i)
OPS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "add": (("double", "double"), "double", "hg_d_add(a[i], b[i])"),
    "sub": (("double", "double"), "double", "hg_d_sub(a[i], b[i])"),
    "mul": (("double", "double"), "double", "hg_d_mul(a[i], b[i])"),
    "div": (("double", "double"), "double", "hg_d_div(a[i], b[i])"),
    "sqrt": (("double",), "double", "hg_d_sqrt(a[i])"),
    "neg": (("double",), "double", "hg_d_neg(a[i])"),
    "from_f32": (("float",), "double", "hg_d_from_f32(a[i])"),
    "from_i32": (("int32_t",), "double", "hg_d_from_i32(a[i])"),
    "from_u32": (("uint32_t",), "double", "hg_d_from_u32(a[i])"),
    "pow2": (("int32_t",), "double", "hg_d_pow2(a[i])"),
    "to_f32": (("double",), "float", "hg_d_to_f32(a[i])"),
    "to_i32": (("double",), "int32_t", "hg_d_to_i32(a[i])"),
    "lt": (("double", "double"), "uint8_t", "hg_d_lt(a[i], b[i])"),
    "le": (("double", "double"), "uint8_t", "hg_d_le(a[i], b[i])"),
    "eq": (("double", "double"), "uint8_t", "hg_d_eq(a[i], b[i])"),
}
_NP = {
    "double": np.float64,
    "float": np.float32,
    "int32_t": np.int32,
    "uint32_t": np.uint32,
    "uint8_t": np.uint8,
}


def c_source() -> str:
    """The functions as host C renders them, with one array loop per operation."""
    text = _PRELUDE + HostCRenderer().translate(SOFT_F64)
    for name, (args, result, expr) in OPS.items():
        params = ", ".join(f"const {t} *{'ab'[k]}" for k, t in enumerate(args))
        text += (
            f"\nvoid op_{name}({params}, {result} *out, int64_t n) {{\n"
            f"    for (int64_t i = 0; i < n; i++) out[i] = {expr};\n}}\n"
        )
    return text


def build(*, break_ties: bool = False) -> Callable[..., np.ndarray]:
    """Compile the functions (``break_ties``: round ties away from zero instead, the
    break-check); return ``call(name, *arrays) -> result array``."""
    found = find_command()
    assert found is not None, "no C compiler (the cpu backend's) to build the soft-f64 test"
    source = c_source()
    if break_ties:
        source = source.replace("(r == 0x400u && (ml & 1u) != 0u)", "(r == 0x400u)")
    tmp = tempfile.mkdtemp(prefix="hg_softf64_")
    src, lib = os.path.join(tmp, "softf64.c"), os.path.join(tmp, "softf64.so")
    with open(src, "w", encoding="utf-8") as handle:
        handle.write(source)
    subprocess.run(
        [*found[0], "-O2", "-std=c11", "-ffp-contract=off", "-shared", "-fPIC", src, "-o", lib],
        check=True,
        capture_output=True,
        timeout=300,
    )
    dll = ctypes.CDLL(lib)

    def call(name: str, *arrays: np.ndarray) -> np.ndarray:
        args, result, _ = OPS[name]
        ins = [np.ascontiguousarray(a, _NP[t]) for a, t in zip(arrays, args, strict=True)]
        out = np.empty(ins[0].size, _NP[result])
        ptrs: list[Any] = [a.ctypes.data_as(ctypes.c_void_p) for a in (*ins, out)]
        getattr(dll, f"op_{name}")(*ptrs, ctypes.c_int64(out.size))
        return out

    return call


SPECIAL = np.array(
    [
        0.0,
        -0.0,
        5e-324,
        -5e-324,
        2.2250738585072009e-308,
        2.2250738585072014e-308,
        -2.2250738585072014e-308,
        1.7976931348623157e308,
        -1.7976931348623157e308,
        np.inf,
        -np.inf,
        np.nan,
        1.0,
        -1.0,
        0.5,
        2.0,
        3.0,
        1.0 + 2.0**-52,
        1.0 - 2.0**-53,
        0.1,
        1e300,
        1e-300,
        2.0**-1022 * 0.5,
        2.0**-1074 * 3,
        8.98846567431158e307,
        2.0**1023,
        2.0**-1023,
        4503599627370497.0,
        9007199254740993.0,
        2147483647.0,
        2147483648.0,
        -2147483648.0,
        -2147483649.0,
        0.9999999999999999,
        1.5,
        -1.5,
        2.5,
        3.4028235677973366e38,
        3.4028234663852886e38,
        1.401298464324817e-45,
        7.006492321624085e-46,
        1.1754942106924411e-38,
        1.1754943508222875e-38,
    ]
)


def doubles(n: int, tag: str) -> np.ndarray:
    """``n`` hostile doubles: random bit patterns, narrow exponent ranges (around 1, the
    subnormals, the top binades), mantissas of runs of ones or zeros (carries and ties)."""
    rng = stable_rng("softf64", tag)
    k = n // 4
    raw = rng.integers(0, 2**64, k, dtype=np.uint64)
    sign = rng.integers(0, 2, n - k, dtype=np.uint64) << np.uint64(63)
    centre = rng.choice(np.array([1023, 1, 0, 2046, 1023 - 600, 1023 + 500], np.int64), n - k)
    expo = np.clip(centre + rng.integers(-40, 41, n - k), 0, 2046).astype(np.uint64)
    mant = rng.integers(0, 2**52, n - k, dtype=np.uint64)
    keep = rng.integers(0, 53, n - k).astype(np.uint64)  # trailing bits forced to 0 or 1
    low = (np.uint64(1) << keep) - np.uint64(1)
    mode = rng.integers(0, 3, n - k)
    mant = np.where(mode == 0, mant & ~low, np.where(mode == 1, mant | low, mant))
    mant &= np.uint64(2**52 - 1)
    bits = np.concatenate([raw, sign | (expo << np.uint64(52)) | mant])
    return bits.view(np.float64)


def pairs(n: int, tag: str) -> tuple[np.ndarray, np.ndarray]:
    """Operand pairs: every pair of the specials, then hostile doubles paired at random, with
    their neighbours and negations (cancellation) and with near-equal exponents."""
    sa, sb = np.meshgrid(SPECIAL, SPECIAL)
    a = doubles(n, tag + "a")
    b = doubles(n, tag + "b")
    rng = stable_rng("softf64", tag + "mix")
    pick = rng.integers(0, 5, n)
    with np.errstate(all="ignore"):
        near = np.nextafter(a, np.where(rng.integers(0, 2, n) == 1, np.inf, -np.inf))
        scaled = a * np.ldexp(1.0, rng.integers(-60, 61, n)) * (1 - 2 * rng.integers(0, 2, n))
        b = np.where(pick == 0, b, np.where(pick == 1, -near, np.where(pick == 2, near, scaled)))
        b = np.where(pick == 4, -a, b)
    return np.concatenate([sa.ravel(), a]), np.concatenate([sb.ravel(), b])


def same(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Where two float arrays hold the same bits, or both a NaN."""
    width = np.uint64 if got.dtype == np.float64 else np.uint32
    return (got.view(width) == want.view(width)) | (np.isnan(got) & np.isnan(want))
