"""f32 sin, cos and tan: bit-exact on the cpu device (host C calls the libm the reference
interpreter calls), refused with a reason on every other dialect. The other transcendentals
are correctly rounded everywhere (test_lower_crmath.py)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.vyre.lower_programs import F32_EDGES, kernel_devices
from vyre import UnsupportedOpError, reference
from vyre import builder as b
from vyre.execute import run_bytes
from vyre.ir import Scalar, UnOp

OPS = [UnOp.SIN, UnOp.COS, UnOp.TAN]
N = 2048
DEVICES = kernel_devices()


def _program() -> object:
    i = b.var("i")
    body = [b.let("i", b.invocation_id(0)), b.let("x", b.load("a", i))]
    body += [b.store("out", b.add(b.mul(i, len(OPS)), k), b.unop(op, b.var("x")))
             for k, op in enumerate(OPS)]
    return b.program([b.read("a", 0, Scalar.F32, N),
                      b.output("out", 1, Scalar.F32, N * len(OPS))], body,
                     workgroup_size=(64, 1, 1))


def _inputs() -> np.ndarray:
    rng = np.random.default_rng(11)
    near = np.float32(rng.normal(0.0, 3.0, N)).view(np.uint32)
    wide = rng.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32)
    domain = np.float32(rng.uniform(-1.0, 1.0, N)).view(np.uint32)  # asin/acos in range
    edges = np.array(F32_EDGES + [0x42B17218, 0x42B17217, 0xC2CFF1B5, 0x3F800001],
                     np.uint32)
    return np.concatenate([edges, near[:N // 3], domain[:N // 3], wide])[:N]


@pytest.mark.parametrize("device", DEVICES, ids=[d.spec for d in DEVICES])
def test_transcendentals_are_bit_exact_or_refused(device: object) -> None:
    prog, x = _program(), _inputs()
    grid = (N // 64, 1, 1)
    if device.dialect != "c":  # type: ignore[attr-defined]
        with pytest.raises(UnsupportedOpError, match="sin, cos and tan"):
            run_bytes(prog, [x], grid=grid, device=device)
        return
    want = np.frombuffer(reference.run_bytes(prog, [x], grid=grid)["out"], np.uint32)
    got = np.frombuffer(run_bytes(prog, [x], grid=grid, device=device)["out"], np.uint32)
    bad = {OPS[k].name: int((want.reshape(N, -1)[:, k] != got.reshape(N, -1)[:, k]).sum())
           for k in range(len(OPS))}
    assert not any(bad.values()), bad
