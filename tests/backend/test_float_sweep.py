"""Wide sweeps of the 16-bit float conversions: every f16/bf16 pattern, ~1M f32 patterns."""

from __future__ import annotations

import numpy as np
import pytest

from hurray_gpu.kernels import run_reference
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.device import Device

# Every 4099th f32 bit pattern (prime stride: hits all exponents and mantissa low bits).
F32_SWEEP = np.arange(0, 2**32, 4099, dtype=np.uint64).astype(np.uint32)
ALL_16 = np.arange(2**16, dtype=np.uint16)


def _run(device: Device, name: str, src: np.ndarray, out_itemsize: int) -> tuple[bytes, bytes]:
    n = src.size
    host = {"src": src.tobytes(), "dst": bytes(n * out_itemsize)}
    dst = Buffer(device, n * out_itemsize)
    dst.copyin(host["dst"])
    device.run(name, dst, Buffer.from_bytes(device, src), n)
    return bytes(dst.copyout()), bytes(run_reference(name, host, {"n": n})["dst"])


def _same_bits_or_both_nan(got: np.ndarray, want: np.ndarray, nan_mask: np.ndarray) -> None:
    assert np.array_equal(nan_mask(got), nan_mask(want)), "NaN positions differ"
    keep = ~nan_mask(want)
    bad = np.flatnonzero(got[keep] != want[keep])
    sample = (want[keep][bad[:3]], got[keep][bad[:3]])
    assert bad.size == 0, f"{bad.size} mismatches, e.g. want {sample[0]} got {sample[1]}"


def _f16_nan(bits: np.ndarray) -> np.ndarray:
    return ((bits & 0x7C00) == 0x7C00) & ((bits & 0x3FF) != 0)


def _bf16_nan(bits: np.ndarray) -> np.ndarray:
    return ((bits & 0x7F80) == 0x7F80) & ((bits & 0x7F) != 0)


def _f32_nan(bits: np.ndarray) -> np.ndarray:
    return ((bits & 0x7F800000) == 0x7F800000) & ((bits & 0x7FFFFF) != 0)


@pytest.mark.parametrize(("name", "nan"), [("f32_to_f16", _f16_nan), ("f32_to_bf16", _bf16_nan)])
def test_f32_to_16bit_rounding_sweep(kernel_device: Device, name: str, nan: object) -> None:
    got, want = _run(kernel_device, name, F32_SWEEP, 2)
    _same_bits_or_both_nan(np.frombuffer(got, np.uint16), np.frombuffer(want, np.uint16),
                           nan)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["f16_to_f32", "bf16_to_f32"])
def test_every_16bit_pattern_widens_exactly(kernel_device: Device, name: str) -> None:
    got, want = _run(kernel_device, name, ALL_16, 4)
    _same_bits_or_both_nan(np.frombuffer(got, np.uint32), np.frombuffer(want, np.uint32),
                           _f32_nan)
