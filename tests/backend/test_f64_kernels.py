"""f64 in kernel bodies on every device (hardware f64, or WGSL's exact emulation of
hurray_gpu/dialect/softf64.py): each operation's bits equal NumPy's float64 on a sample of
hostile operand pairs (tests/_softf64.py; the millions run through host C in
tests/null/test_softf64.py)."""

from __future__ import annotations

import numpy as np
import pytest

from hurray_gpu.dialect import KernelDef, buf, scalar
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.device import Device
from tests._softf64 import pairs, same

# Every f64 rendering WGSL has: operators, literals (negated too), conversions from f32, i32
# and u32, POW2_64 (the normal range: host C builds its bits), selection, compound assignment.
RESULTS = (
    "x + y",
    "x - y",
    "x * y",
    "x / y",
    "SQRT64(x)",
    "-x",
    "F64(F32(x))",
    "F64(I32(LOAD(a, 2u * i)))",
    "F64(LOAD(b, 2u * i))",
    "POW2_64(I32(LOAD(b, 2u * i + 1u) % 2046u) - 1022)",
    "x < y ? x : y",
    "c",
    "x * -0.375lf",
)
# Per pair: the six results (two words each), F32(x)'s bits, I32(x), the comparison bits.
WORDS = 2 * len(RESULTS) + 3
KERNEL = KernelDef(
    "f64_ops",
    (buf("a", "u32"), buf("b", "u32"), buf("dst", "u32", "w"), scalar("n")),
    "u32 i = GLOBAL_ID(0);\nif (i >= n) return;\n"
    "f64 x = AS_F64(LOAD(a, 2u * i + 1u), LOAD(a, 2u * i));\n"
    "f64 y = AS_F64(LOAD(b, 2u * i + 1u), LOAD(b, 2u * i));\n"
    f"u32 o = i * {WORDS}u;\nf64 c = y;\nc += x;\nc *= x;\n"
    + "".join(
        f"f64 r{k} = {text};\nSTORE(dst, o + {2 * k}u, F64_LO(r{k}));\n"
        f"STORE(dst, o + {2 * k + 1}u, F64_HI(r{k}));\n"
        for k, text in enumerate(RESULTS)
    )
    + f"STORE(dst, o + {2 * len(RESULTS)}u, AS_U32(F32(x)));\n"
    # I32 of an f64 outside i32's range is undefined in C: only in-range inputs convert.
    f"f64 big = 2147483648.0lf;\n"
    f"STORE(dst, o + {2 * len(RESULTS) + 1}u, x < big && x > -big ? U32(I32(x)) : 0u);\n"
    f"STORE(dst, o + {2 * len(RESULTS) + 2}u, (x < y ? 1u : 0u) | (x <= y ? 2u : 0u) | "
    "(x > y ? 4u : 0u) | (x >= y ? 8u : 0u) | (x == y ? 16u : 0u) | (x != y ? 32u : 0u));",
    grid=lambda s: (s["n"],),
    extents=lambda s: {"a": 2 * s["n"], "b": 2 * s["n"], "dst": WORDS * s["n"]},
    reference=lambda a: None,
    doc="f64 operations of word pairs (a test kernel).",
)


def test_f64_operations_are_ieee_on_every_device(kernel_device: Device) -> None:
    if not kernel_device.f64_kernels:
        pytest.skip(f"{kernel_device.spec} has no f64 arithmetic")
    a, b = pairs(4000, "device")
    n = a.size
    lo_a, lo_b, hi_b = a.view(np.uint32)[0::2], b.view(np.uint32)[0::2], b.view(np.uint32)[1::2]
    out = Buffer(kernel_device, 4 * WORDS * n)
    kernel_device.run(
        KERNEL,
        a=Buffer.from_bytes(kernel_device, a.tobytes()),
        b=Buffer.from_bytes(kernel_device, b.tobytes()),
        dst=out,
        n=n,
    )
    got = np.frombuffer(bytes(out.copyout()), np.uint32).reshape(n, WORDS)
    with np.errstate(all="ignore"):
        wants = [
            a + b,
            a - b,
            a * b,
            a / b,
            np.sqrt(a),
            -a,
            a.astype(np.float32).astype(np.float64),
            lo_a.view(np.int32).astype(np.float64),
            lo_b.astype(np.float64),
            np.ldexp(1.0, (hi_b % 2046).astype(np.int32) - 1022),
            np.where(a < b, a, b),
            (b + a) * a,
            a * -0.375,
        ]
        for k, (text, want) in enumerate(zip(RESULTS, wants, strict=True)):
            value = got[:, 2 * k : 2 * k + 2].copy().view(np.float64).ravel()
            bad = np.flatnonzero(~same(value, want))
            assert not bad.size, (
                f"{kernel_device.spec}: {text}: {bad.size} wrong, e.g. "
                f"{[(a[i].hex(), b[i].hex(), value[i].hex()) for i in bad[:3]]}"
            )
        f32 = got[:, 2 * len(RESULTS)].copy().view(np.float32)
        assert same(f32, a.astype(np.float32)).all()
        inside = np.abs(a) < 2.0**31
        i32 = got[:, 2 * len(RESULTS) + 1].view(np.int32)
        assert np.array_equal(i32[inside], np.trunc(a[inside]).astype(np.int32))
        flags = got[:, 2 * len(RESULTS) + 2]
        for bit, op in enumerate(
            (np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal)
        ):
            assert np.array_equal((flags >> bit) & 1, op(a, b).astype(np.uint32)), op.__name__
