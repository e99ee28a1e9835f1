"""vyre's f32 transcendentals and InverseSqrt lower to the correctly rounded
CR_* functions: every device gives the correctly rounded result of the canonical input (the
same bits everywhere), within 1 ULP of the reference interpreter (vyre 0.7.2's libm results;
vyre's own budget is 4 ULP elementary, 128 transcendental)."""

from __future__ import annotations

import numpy as np
import pytest

from hurray_gpu.errors import UnsupportedOpError
from tests._crmath import exact_all, functions_for, is_nan, sample_inputs
from tests.vyre.lower_programs import kernel_devices
from vyre import builder as b
from vyre import reference
from vyre.execute import run_bytes
from vyre.ir import Scalar, UnOp

OPS = {UnOp.EXP: "EXP", UnOp.EXP2: "EXP2", UnOp.LOG: "LOG", UnOp.LOG2: "LOG2",
       UnOp.INVERSE_SQRT: "RSQRT", UnOp.SINH: "SINH", UnOp.COSH: "COSH", UnOp.TANH: "TANH",
       UnOp.ATAN: "ATAN", UnOp.ASIN: "ASIN", UnOp.ACOS: "ACOS", UnOp.SIN: "SIN",
       UnOp.COS: "COS", UnOp.TAN: "TAN"}
DEVICES = kernel_devices()


def _canonical(bits: np.ndarray) -> np.ndarray:
    """vyre's canonical f32: subnormals become signed zeros, NaNs 0x7fc00000."""
    out = np.where((bits & 0x7F800000) == 0, bits & 0x80000000, bits).astype(np.uint32)
    return np.where(is_nan(out), np.uint32(0x7FC00000), out).astype(np.uint32)


def _ordered(bits: np.ndarray) -> np.ndarray:
    """f32 bits as integers in value order (+0 and -0 both 0)."""
    mag = (bits & 0x7FFFFFFF).astype(np.int64)
    return np.where(bits & 0x80000000, -mag, mag)


X = sample_inputs()
X = np.concatenate([X, X[: (-X.size) % 64]])  # whole workgroups
N = X.size
CX = _canonical(X)


def _program(ops: tuple[UnOp, ...] = tuple(OPS)) -> object:
    i = b.var("i")
    body = [b.let("i", b.invocation_id(0)), b.let("x", b.load("a", i))]
    body += [b.store("out", b.add(b.mul(i, len(ops)), k), b.unop(op, b.var("x")))
             for k, op in enumerate(ops)]
    return b.program([b.read("a", 0, Scalar.F32, N),
                      b.output("out", 1, Scalar.F32, N * len(ops))], body,
                     workgroup_size=(64, 1, 1))


PROGRAM = _program()
# Emulated f64 (webgpu) compiles slowly: CI runs Sin there, the newest lowering (the kernel
# tests cover more functions); SOFTF64_ALL=1 (ci/fuzz.sh) runs every op.
EMULATED_CI = (UnOp.SIN,)


@pytest.mark.parametrize("device", DEVICES, ids=[d.spec for d in DEVICES])
def test_vyre_transcendentals_are_correctly_rounded(device: object) -> None:
    if not device.f64_kernels:  # type: ignore[attr-defined]
        # No f64 (an OpenCL/Vulkan device without it): refused by name, never rendered into
        # something else (webgpu has none either, but WGSL emulates it exactly).
        with pytest.raises(UnsupportedOpError, match="f64 arithmetic"):
            run_bytes(PROGRAM, [X], grid=(N // 64, 1, 1), device=device)
        return
    ops = tuple(OPS) if len(functions_for(device)) == len(OPS) else EMULATED_CI
    program = PROGRAM if len(ops) == len(OPS) else _program(ops)
    got = np.frombuffer(run_bytes(program, [X], grid=(N // 64, 1, 1), device=device)["out"],
                        np.uint32).reshape(N, -1)
    bad = {}
    for k, name in enumerate(OPS[op] for op in ops):
        want = _canonical(exact_all(name, CX))
        wrong = np.flatnonzero(got[:, k] != want)
        if wrong.size:
            bad[name] = [(hex(X[i]), hex(got[i, k]), hex(want[i])) for i in wrong[:4]]
    assert not bad, f"{device.spec}: (input, got, correctly rounded): {bad}"  # type: ignore[attr-defined]


def test_reference_stays_within_one_ulp_of_the_correctly_rounded_results() -> None:
    """The reference interpreter (libm, InverseSqrt rounded twice) and the devices agree within
    1 ULP, well inside vyre's budgets; and the reference is not itself correctly rounded
    everywhere (InverseSqrt), so the two are distinct oracles."""
    out = reference.run_bytes(PROGRAM, [X], grid=(N // 64, 1, 1))["out"]
    reference_out = np.frombuffer(out, np.uint32).reshape(N, -1)
    differs = 0
    for k, name in enumerate(OPS.values()):
        want = _canonical(exact_all(name, CX))
        ref = reference_out[:, k]
        assert np.array_equal(is_nan(ref), is_nan(want)), name
        keep = ~is_nan(want)
        dist = np.abs(_ordered(ref[keep]) - _ordered(want[keep]))
        assert dist.max() <= 1, (name, int(dist.max()))
        differs += int(np.count_nonzero(dist))
    assert differs > 0
