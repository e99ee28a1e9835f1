"""Wide sweeps of the 16-bit float conversions: every f16/bf16 pattern, ~1M f32 patterns."""

from __future__ import annotations

import numpy as np
import pytest

from hurray_gpu.dialect.kernel import KernelDef, buf, scalar
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


def _to_f16_bits_kernel() -> KernelDef:
    """F32_TO_F16_BITS into a u16 buffer (the dequant kernels' store), 64 elements per work
    item in a loop (host C: the loop the compiler vectorises)."""
    return KernelDef(
        name="f32_to_f16_bits_probe",
        params=(buf("dst", "u16", "w"), buf("src", "f32"), scalar("n")),
        body="""
            u32 at = GLOBAL_ID(0) * 64u;
            u32 end = UMIN(at + 64u, n);
            for (u32 i = at; i < end; i++) {
                STORE(dst, i, F32_TO_F16_BITS(LOAD(src, i)));
            }
        """, grid=lambda a: (-(-int(a["n"]) // 64),),
        extents=lambda a: {"dst": int(a["n"]), "src": int(a["n"])},
        reference=lambda a: None, tags=("host_isa",))


def _f16_results_and_hostile_f32() -> np.ndarray:
    """f32 inputs whose f16 results are every 16-bit pattern, the ties between neighbouring f16
    values and one f32 ulp either side of each tie, then hostile values: NaNs whose payload
    lies below the bits f16 keeps (quiet and signalling, both signs), infinities, the overflow
    threshold and its neighbours, f32 subnormals, signed zeros and the F32 sweep."""
    f16 = ALL_16.view(np.float16)
    finite = np.sort(f16[np.isfinite(f16)].astype(np.float32))  # -65504 .. 65504, exact
    mid = ((finite[:-1].astype(np.float64) + finite[1:]) / 2).astype(np.float32)  # exact ties
    bits = mid.view(np.uint32)
    near = np.concatenate([bits - 1, bits + 1]).view(np.float32)
    hostile = np.array([0x7F800001, 0xFF800001, 0x7F801FFF, 0x7FC00000, 0xFFC00001, 0x7FBFE000,
                        0x7F800000, 0xFF800000, 0x477FEFFF, 0x477FF000, 0xC77FF000, 0x477FF001,
                        0x00000001, 0x807FFFFF, 0x00400000, 0x00000000, 0x80000000, 0x33000000,
                        0x33000001, 0xB3000000, 0x33C00000, 0x387FE000, 0x387FF000],
                       np.uint32).view(np.float32)
    wide = ALL_16.view(np.float16).astype(np.float32)  # includes every f16 NaN, widened
    return np.concatenate([wide, mid, near, hostile, F32_SWEEP.view(np.float32)])


def test_f32_to_f16_bits_every_result_and_hostile_inputs(kernel_device: Device) -> None:
    """F32_TO_F16_BITS bit for bit as NumPy's float32 -> float16 on every device (host C: the
    F16C rendering, NaN payloads included): every f16 result, ties to even, NaN payloads."""
    src = _f16_results_and_hostile_f32()
    with np.errstate(over="ignore", invalid="ignore"):
        want = src.astype(np.float16).view(np.uint16)
    out = Buffer(kernel_device, 2 * src.size)
    kernel_device.run(_to_f16_bits_kernel(), out, Buffer.from_bytes(kernel_device, src),
                      n=src.size)
    got = out.numpy(np.uint16)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (f"{bad.size} mismatches, e.g. f32 {src.view(np.uint32)[bad[:4]]} "
                           f"want {want[bad[:4]]} got {got[bad[:4]]}")
