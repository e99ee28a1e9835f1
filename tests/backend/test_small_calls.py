"""The fixed cost of a small call: a descriptor is validated and planned once, a result's
descriptor is built and encoded once per shape, and a host device allocates only the result
(no error-flag buffer, no copy of host inputs)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.errors import HurrayFormatError
from hurray_gpu.format.descriptor import validate as validate_mod
from hurray_gpu.format.descriptor.layouts import Tiled
from hurray_gpu.format.descriptor.validate import validate_descriptor
from hurray_gpu.ops.plan import plan_dequantize
from hurray_gpu.ops.quantize import quantized_tensor
from hurray_gpu.runtime.device import Device
from tests._support import stable_rng

CODES = stable_rng("small-calls-int4").integers(-8, 8, (16, 64))


def _int4(scales: np.ndarray) -> Any:
    return quantized_tensor(CODES, "int4", "per_block", axis=1, block_size=32, scales=scales)


def _want(scales: np.ndarray) -> np.ndarray:
    return (CODES.astype(np.float32).reshape(16, 2, 32) * scales.reshape(16, 2, 1)).reshape(16, 64)


def test_a_validated_descriptor_is_not_checked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    t = _int4(np.full(32, 0.5, np.float32))
    desc = t.descriptor
    validate_descriptor(desc)
    checked: list[Any] = []
    real = validate_mod._check_header
    monkeypatch.setattr(validate_mod, "_check_header", lambda d, w: checked.append(d) or real(d, w))
    validate_descriptor(desc)
    validate_descriptor(desc, permissive=True)  # a strict pass covers a permissive check
    assert checked == []
    again = type(desc)(desc.dtype, desc.shape, desc.layout, desc.buffers, desc.byte_offset,
                       desc.quantization)
    validate_descriptor(again)  # an equal but different object is checked
    assert checked == [again]


def test_a_permissive_pass_does_not_satisfy_a_strict_check() -> None:
    from hurray_gpu.format.descriptor import TensorDescriptor
    from hurray_gpu.format.dtypes import by_tag

    desc = TensorDescriptor(by_tag(0x30, permissive=True), (4,), buffers=(
        hg.BufferHandle(4),))
    validate_descriptor(desc, permissive=True)
    with pytest.raises(HurrayFormatError, match="type_tag 0x30"):
        validate_descriptor(desc)


def test_plans_are_kept_per_descriptor_object() -> None:
    t = _int4(np.full(32, 0.5, np.float32))
    first = plan_dequantize(t.descriptor, "float32", ept=64)
    assert plan_dequantize(t.descriptor, "float32", ept=64) is first
    assert plan_dequantize(t.descriptor, "bfloat16", ept=64) is not first
    assert plan_dequantize(t.descriptor, "float32", ept=128).scalars["ept"] == 128
    assert first.scalars["ept"] == 64


def test_host_calls_allocate_only_the_result_and_flag_errors_every_time(
        kernel_device: Device, monkeypatch: pytest.MonkeyPatch) -> None:
    good = _int4(np.full(32, 0.5, np.float32)).to(kernel_device)
    bad_scales = np.full(32, 0.5, np.float32)
    bad_scales[7] = 0.0
    bad = _int4(bad_scales).to(kernel_device)
    want = _want(np.full(32, 0.5, np.float32))
    hg.dequantize(good)  # warm: kernels loaded, this thread's flag made
    allocs: list[int] = []
    real = kernel_device.allocator.alloc
    monkeypatch.setattr(kernel_device.allocator, "alloc",
                        lambda n, *a, **k: allocs.append(n) or real(n, *a, **k))
    for _ in range(2):  # an error never sticks: the flag is cleared for every launch
        got = hg.dequantize(good)
        np.testing.assert_array_equal(got.to("cpu").numpy(), want)
        with pytest.raises(HurrayFormatError, match="scale"):
            hg.dequantize(bad)
    np.testing.assert_array_equal(hg.dequantize(good).to("cpu").numpy(), want)
    results = [n for n in allocs if n == want.nbytes]
    assert len(results) == 5
    if kernel_device.allocator.host_memory:  # no flag buffer, no copies of the inputs
        assert allocs == [want.nbytes] * 5


def test_materialize_result_descriptors_are_encoded_once(kernel_device: Device) -> None:
    x = hg.relayout(hg.from_numpy(np.arange(64 * 64, dtype=np.float32).reshape(64, 64)),
                    Tiled((32, 32))).to(kernel_device)
    a, b = hg.materialize(x), hg.materialize(x)
    # One immutable descriptor per shape and device, encoded once (not per call).
    assert a.descriptor is b.descriptor and a.descriptor_bytes is b.descriptor_bytes
    np.testing.assert_array_equal(b.to("cpu").numpy(), np.arange(4096, dtype=np.float32)
                                  .reshape(64, 64))


def _fill(extent: Any) -> Any:
    from hurray_gpu.dialect.kernel import KernelDef, buf, scalar

    return KernelDef(
        name="small_calls_fill", params=(buf("dst", "u32", "w"), scalar("n")),
        body="""
            u32 i = GLOBAL_ID(0);
            if (i < n) STORE(dst, i, 5u);
        """,
        grid=lambda s: (s["n"],), extents=extent, reference=lambda a: None,
        doc="dst[:n] = 5 (two definitions that differ only in their extents).")


def test_one_code_under_two_definitions_keeps_each_definitions_checks(
        kernel_device: Device) -> None:
    from hurray_gpu.errors import UnsupportedOpError
    from hurray_gpu.runtime.buffer import Buffer

    loose = _fill(lambda s: {"dst": s["n"]})
    strict = _fill(lambda s: {"dst": 2 * s["n"]})  # claims twice the bytes: 8 elements < 16
    out = Buffer(kernel_device, 4 * 8)
    kernel_device.run(loose, out, n=8, wait=True)
    np.testing.assert_array_equal(out.numpy(np.uint32), np.full(8, 5, np.uint32))
    with pytest.raises(UnsupportedOpError):
        kernel_device.run(strict, out, n=8)
    assert kernel_device.program(strict).kernel is strict
    assert kernel_device.program(strict).binary == kernel_device.program(loose).binary
