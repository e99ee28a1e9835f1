"""Hostile-index matrix for vyre buffers on every compiling device (cpu, opencl, vulkan).

One table of malicious launches: short and count-0 input buffers, data-dependent indices at
u32/i32 extremes, stores far past the end, huge grids and grid/workgroup products that wrap.
Each row is either rejected before launch with the documented typed error, or neutralised by
the lowered kernels' guards (out-of-bounds loads read 0, stores are dropped), checked byte for
byte against the reference interpreter. CI runs it again with HURRAY_GPU_DEBUG_BOUNDS=1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import vyre
from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.runtime.buffer import Buffer
from vyre import builder as b
from vyre import reference
from vyre.execute import run_bytes
from vyre.ir import Scalar
from vyre.reference import ReferenceExecutionError, ReferenceInputError

GID = b.invocation_id(0)
REJECT = None


def _copy(offset: int = 0) -> Any:
    """out[gid] = a[gid + offset]; 8 lanes."""
    return b.program([b.read("a", 0, Scalar.U32), b.output("out", 1, Scalar.U32, 8)],
                     [b.store("out", GID, b.load("a", b.add(GID, offset)))],
                     workgroup_size=(8, 1, 1))


def _indirect() -> Any:
    """out[idx[gid]] = gid + 1 and got[gid] = a[idx[gid]]: indices come from the data."""
    return b.program([b.read("idx", 0, Scalar.U32), b.read("a", 1, Scalar.U32),
                      b.read_write("out", 2, Scalar.U32), b.output("got", 3, Scalar.U32, 8)],
                     [b.store("out", b.load("idx", GID), b.add(GID, 1)),
                      b.store("got", GID, b.load("a", b.load("idx", GID)))],
                     workgroup_size=(8, 1, 1))


def _signed() -> Any:
    """i32 indices: out[gid] = s[gid - 4] (negative for the first lanes)."""
    return b.program([b.read("s", 0, Scalar.I32), b.output("out", 1, Scalar.I32, 8)],
                     [b.store("out", GID, b.load("s", b.sub(b.cast(Scalar.I32, GID), b.lit_i32(4))))],
                     workgroup_size=(8, 1, 1))


def _far_store() -> Any:
    """Stores at gid * 2**28 into an 8-word buffer, and the buffer length into len."""
    return b.program([b.read_write("rw", 0, Scalar.U32), b.output("len", 1, Scalar.U32, 1)],
                     [b.store("rw", b.mul(GID, 1 << 28), 7),
                      b.store("len", 0, b.buf_len("rw"))],
                     workgroup_size=(8, 1, 1))


U32 = np.uint32
IDX_EXTREMES = np.array([0, 7, 8, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 1 << 28, 3], U32)


@dataclass(frozen=True)
class Case:
    """A launch; ``expect`` REJECT (typed error before launch) or "reference" (the device's
    bytes equal the reference interpreter's)."""

    name: str
    program: Callable[[], Any]
    inputs: dict[str, np.ndarray]
    grid: tuple[int, int, int]
    expect: Any = "reference"
    error: type[BaseException] | tuple[type[BaseException], ...] = ()


CASES = [
    Case("short-input", _copy, {"a": np.arange(1, 4, dtype=U32)}, (1, 1, 1)),
    Case("count-0-input", _copy, {"a": np.zeros(0, U32)}, (1, 1, 1)),
    Case("read-past-end-by-2^31", lambda: _copy(1 << 31), {"a": np.arange(8, dtype=U32)},
         (1, 1, 1)),
    Case("read-offset-wraps-u32", lambda: _copy(0xFFFFFFFC), {"a": np.arange(8, dtype=U32)},
         (1, 1, 1)),
    Case("data-dependent-indices", _indirect,
         {"idx": IDX_EXTREMES, "a": np.arange(100, 108, dtype=U32),
          "out": np.full(8, 0xAAAAAAAA, U32)}, (1, 1, 1)),
    Case("data-dependent-count-0-targets", _indirect,
         {"idx": IDX_EXTREMES, "a": np.zeros(0, U32), "out": np.zeros(0, U32)}, (1, 1, 1)),
    Case("negative-i32-index", _signed, {"s": np.arange(-8, 0, dtype=np.int32)}, (1, 1, 1),
         REJECT, UnsupportedOpError),  # lowering refuses i32 indices (the reference traps)
    Case("stores-far-past-end", _far_store, {"rw": np.full(8, 5, U32)}, (2, 1, 1)),
    Case("grid-beyond-data", _copy, {"a": np.arange(8, dtype=U32)}, (64, 1, 1)),
    Case("grid-x-wraps-u32", _copy, {"a": np.arange(8, dtype=U32)}, (1 << 29, 1, 1), REJECT,
         (UnsupportedOpError, ReferenceInputError)),
    Case("grid-u32-max-every-axis", _copy, {"a": np.arange(8, dtype=U32)},
         (0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF), REJECT, (UnsupportedOpError, ReferenceInputError)),
    Case("grid-zero", _copy, {"a": np.arange(8, dtype=U32)}, (0, 1, 1)),  # as the reference
    Case("grid-negative", _copy, {"a": np.arange(8, dtype=U32)}, (-1, 1, 1), REJECT,
         (UnsupportedOpError, ReferenceInputError)),
]


def _kernel_devices() -> list[Any]:
    from hurray_gpu.runtime.registry import devices

    return [d for d in devices() if d.kind != "reference" and d.compiler is not None]


DEVICES = _kernel_devices()


@pytest.mark.parametrize("dev", DEVICES, ids=[d.spec for d in DEVICES])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_vyre_launch(case: Case, dev: Any) -> None:
    program = case.program()
    if case.expect is REJECT:
        with pytest.raises(case.error) as info:
            run_bytes(program, case.inputs, grid=case.grid, device=dev)
        assert "Fix:" in str(info.value)
        return
    want = reference.run_bytes(program, case.inputs, grid=case.grid)
    got = run_bytes(program, case.inputs, grid=case.grid, device=dev)
    assert got.keys() == want.keys()
    for name in want:
        assert got[name] == want[name], f"{case.name}: buffer {name} differs from the reference"


def test_guards_give_the_documented_values() -> None:
    """The reference side of the matrix: what 'neutralised' means, value by value."""
    out = reference.run(_indirect(), CASES[4].inputs, grid=(1, 1, 1))
    # idx 0, 7, 3 are in bounds: stores land there (last writer wins) and loads read a[idx].
    assert out["got"].tolist() == [100, 107, 0, 0, 0, 0, 0, 103]
    assert out["out"].tolist() == [1, *[0xAAAAAAAA] * 2, 8, *[0xAAAAAAAA] * 3, 2]
    far = reference.run(_far_store(), {"rw": np.full(8, 5, U32)}, grid=(2, 1, 1))
    assert far["rw"].tolist() == [7, 5, 5, 5, 5, 5, 5, 5] and far["len"].tolist() == [8]
    with pytest.raises(ReferenceExecutionError, match="u32"):
        reference.run(_signed(), {"s": np.arange(-8, 0, dtype=np.int32)}, grid=(1, 1, 1))


# -- the same guards through vyre.compile: caller-owned buffers, launched in place -----------

def _buf(dev: Any, words: list[int] | None, nbytes: int | None = None) -> Buffer:
    if words is None:
        return Buffer(dev, nbytes or 0)
    return Buffer.from_bytes(dev, np.asarray(words, U32).tobytes())


# (name, buffers builder {a, out}, grid, expected out words or REJECT)
KERNEL_CASES: list[tuple[str, Callable[[Any], dict[str, Any]], Any, Any]] = [
    ("short-input", lambda d: {"a": _buf(d, [5, 6, 7]), "out": _buf(d, [9] * 8)}, (1, 1, 1),
     [5, 6, 7, 0, 0, 0, 0, 0]),
    ("count-0-input", lambda d: {"a": _buf(d, None, 0), "out": _buf(d, [9] * 8)}, (1, 1, 1),
     [0] * 8),
    ("output-below-declared-count", lambda d: {"a": _buf(d, [1] * 8), "out": _buf(d, [9])},
     (1, 1, 1), REJECT),
    ("missing-buffer", lambda d: {"a": _buf(d, [1] * 8)}, (1, 1, 1), REJECT),
    ("grid-wraps-u32", lambda d: {"a": _buf(d, [1] * 8), "out": _buf(d, [9] * 8)},
     (1 << 29, 1, 1), REJECT),
    ("grid-negative", lambda d: {"a": _buf(d, [1] * 8), "out": _buf(d, [9] * 8)},
     (-1, 1, 1), REJECT),
    ("grid-beyond-data", lambda d: {"a": _buf(d, [1, 2]), "out": _buf(d, [9] * 8)},
     (64, 1, 1), [1, 2, 0, 0, 0, 0, 0, 0]),
]


@pytest.mark.parametrize("dev", DEVICES, ids=[d.spec for d in DEVICES])
@pytest.mark.parametrize(("name", "make", "grid", "want"), KERNEL_CASES,
                         ids=[c[0] for c in KERNEL_CASES])
def test_hostile_compiled_kernel_call(dev: Any, name: str, make: Any, grid: Any,
                                      want: Any) -> None:
    kernel = vyre.compile(_copy(), dev)
    buffers = make(dev)
    if want is REJECT:
        with pytest.raises(UnsupportedOpError) as info:
            kernel(buffers, grid)
        assert "Fix:" in str(info.value)
        return
    kernel(buffers, grid)
    dev.synchronize()
    got = np.frombuffer(bytes(buffers["out"].copyout()), "<u4")
    assert got.tolist() == want, name
