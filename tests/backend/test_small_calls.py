"""The fixed cost of a small call: a descriptor is validated and planned once, a result's
descriptor is built and encoded once per shape, a host device allocates only the result (no
error-flag buffer, no copy of host inputs), and a repeat runs prepared: planned for one
descriptor object, output type, device and set of buffer sizes, never reused for another,
with every buffer still checked and results bit-exact with the reference device."""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu import config
from hurray_gpu.errors import HurrayFormatError
from hurray_gpu.format.descriptor import validate as validate_mod
from hurray_gpu.format.descriptor.layouts import Tiled
from hurray_gpu.format.descriptor.validate import validate_descriptor
from hurray_gpu.ops.layout_plan import clear_table_cache
from hurray_gpu.ops.plan import plan_dequantize
from hurray_gpu.ops.quantize import quantized_tensor
from hurray_gpu.runtime.canary import CanaryAllocator
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
    # Every allocation passes once through take() (alloc() takes through it), except under
    # HURRAY_GPU_DEBUG_BOUNDS, where the canary allocator's take() pads through its alloc().
    entry = "alloc" if isinstance(kernel_device.allocator, CanaryAllocator) else "take"
    real = getattr(kernel_device.allocator, entry)
    monkeypatch.setattr(kernel_device.allocator, entry,
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


# -- prepared repeats: keyed by descriptor object, dtype, device and buffer sizes ----------

def _nf4(rows: int, cols: int, seed: str) -> Any:
    from hurray_gpu.format.descriptor import BufferHandle, RowMajor, TensorDescriptor
    from hurray_gpu.format.descriptor.quant import NF4
    from hurray_gpu.format.dtypes import by_name

    rng = stable_rng(seed)
    bufs = [rng.integers(0, 256, rows * cols // 2, dtype=np.uint8),
            (rng.random(rows * cols // 32, dtype=np.float32) + 0.5).view(np.uint8)]
    desc = TensorDescriptor(by_name("uint4"), (rows, cols), RowMajor(),
                            tuple(BufferHandle(b.nbytes, 64) for b in bufs),
                            quantization=NF4(1, 32, 1))
    return hg.Tensor.from_parts(desc, bufs)


def _tiled(side: int) -> Any:
    return hg.relayout(hg.from_numpy(stable_rng("small-calls-tiled").standard_normal(
        (side, side)).astype(np.float32)), Tiled((32, 32)))


def _bits(t: Any) -> np.ndarray:
    return np.asarray(t.to("cpu").buffers[0]).copy()


def test_repeats_run_prepared_and_stay_bit_exact(kernel_device: Device,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # The modules (hurray_gpu.ops re-exports functions of the same names).
    dq_mod = importlib.import_module("hurray_gpu.ops.dequantize")
    mat_mod = importlib.import_module("hurray_gpu.ops.materialize")
    cases = [(hg.dequantize, _nf4(8, 64, "small-calls-nf4"), ("float32",)),
             (hg.dequantize, _nf4(8, 64, "small-calls-nf4"), ("bfloat16",)),
             (hg.dequantize, _int4(np.linspace(0.25, 4, 32, dtype=np.float32)), ("float32",)),
             (hg.unpack, hg.from_numpy(np.arange(-8, 8, dtype=np.int8).repeat(8)).to(
                 kernel_device).to("cpu"), ()),
             (hg.materialize, _tiled(64), ())]
    want = [_bits(op(t.to("reference"), *args)) for op, t, args in cases]
    on = [(op, t.to(kernel_device), args) for op, t, args in cases]
    # The cache two entries short of full (as other tests leave it): preparing these five
    # must evict old entries, never the ones just prepared.
    plan_mod = importlib.import_module("hurray_gpu.ops.plan")
    # (In a copy of the cache: the fillers are no prepared calls, and later tests read it.)
    monkeypatch.setattr(plan_mod, "_PREPARED", dict(plan_mod._PREPARED))
    while len(plan_mod._PREPARED) < plan_mod.PREPARED_CALLS - 2:
        plan_mod._PREPARED[("filler", len(plan_mod._PREPARED))] = None
    firsts = [_bits(op(t, *args)) for op, t, args in on]  # each prepares its repeats

    def unplanned(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("a repeat was checked and planned again")

    monkeypatch.setattr(dq_mod, "check_buffer_sizes", unplanned)
    monkeypatch.setattr(mat_mod, "plan_dense", unplanned)
    for _ in range(3):
        got = [_bits(op(t, *args)) for op, t, args in on]
        for g, f, w in zip(got, firsts, want, strict=True):
            np.testing.assert_array_equal(g, w)
            np.testing.assert_array_equal(f, w)


def test_an_other_descriptor_with_the_same_buffer_sizes_is_planned_anew() -> None:
    a = _nf4(8, 64, "small-calls-nf4")
    b = hg.Tensor.from_parts(dataclasses.replace(a.descriptor, shape=(16, 32)),
                             [np.asarray(x) for x in a.buffers])
    assert [x.nbytes for x in a.buffers] == [x.nbytes for x in b.buffers]
    for _ in range(2):
        ra, rb = hg.dequantize(a), hg.dequantize(b)
        assert ra.shape == (8, 64) and rb.shape == (16, 32)
        np.testing.assert_array_equal(rb.numpy().reshape(-1), ra.numpy().reshape(-1))
    # An equal descriptor that is another object is planned (and validated) for itself.
    c = hg.Tensor.from_parts(dataclasses.replace(a.descriptor),
                             [np.asarray(x) for x in a.buffers])
    assert c.descriptor == a.descriptor and c.descriptor is not a.descriptor
    np.testing.assert_array_equal(hg.dequantize(c).numpy(), hg.dequantize(a).numpy())


def test_the_output_type_keys_a_prepared_call() -> None:
    t = _nf4(8, 64, "small-calls-nf4")
    for _ in range(2):
        f32, bf16 = hg.dequantize(t, "float32"), hg.dequantize(t, "bfloat16")
        assert f32.dtype.name == "float32" and bf16.dtype.name == "bfloat16"
        bits = f32.numpy().reshape(-1).view(np.uint32)  # finite: round to nearest even
        np.testing.assert_array_equal(np.asarray(bf16.buffers[0]).view(np.uint16),
                                      (bits + 0x7FFF + ((bits >> 16) & 1) >> 16).astype(np.uint16))
    tiled = _tiled(64)
    for _ in range(2):
        assert hg.materialize(tiled).dtype.name == "float32"
        assert hg.materialize(tiled, "float16").dtype.name == "float16"


def test_the_device_keys_a_prepared_call() -> None:
    from hurray_gpu.runtime.buffer import Buffer

    on_cpu = _nf4(8, 64, "small-calls-nf4")
    ref = hg.device("reference")
    assert ref.tag == on_cpu.device.tag  # one descriptor object can name buffers on both
    on_ref = hg.Tensor.from_parts(on_cpu.descriptor, [
        Buffer.from_bytes(ref, np.asarray(b)) for b in on_cpu.buffers])
    assert on_ref.descriptor is on_cpu.descriptor
    for _ in range(2):
        a, b = hg.dequantize(on_cpu), hg.dequantize(on_ref)
        assert a.device.kind == "cpu" and b.device is ref
        np.testing.assert_array_equal(_bits(a), _bits(b))


def test_other_buffer_sizes_under_one_descriptor_are_checked_again() -> None:
    from tests._support import trusted_tensor

    t = _int4(np.full(32, 0.5, np.float32))
    hg.dequantize(t)
    hg.dequantize(t)  # prepared for these sizes
    data, scales = (np.asarray(b) for b in t.buffers)
    short = trusted_tensor(t.descriptor, [data[:-1].copy(), scales])
    with pytest.raises(HurrayFormatError, match=r"buffers\[0\] holds"):
        hg.dequantize(short)
    tiled = _tiled(64)
    hg.materialize(tiled)
    hg.materialize(tiled)
    cut = trusted_tensor(tiled.descriptor, [np.asarray(tiled.buffers[0])[:-4].copy()])
    with pytest.raises(HurrayFormatError, match=r"buffers\[0\] holds"):
        hg.materialize(cut)


def test_a_freed_buffer_is_refused_on_a_prepared_call() -> None:
    from hurray_gpu.errors import UnsupportedOpError

    t = _nf4(8, 64, "small-calls-nf4")
    t2 = hg.Tensor.from_parts(t.descriptor, [hg.Buffer.from_bytes("cpu", np.asarray(b))
                                             for b in t.buffers])
    hg.dequantize(t2)
    hg.dequantize(t2)
    t2.buffers[1].free()
    with pytest.raises(UnsupportedOpError, match="freed"):
        hg.dequantize(t2)



def test_freed_tables_of_a_prepared_host_call_are_refused() -> None:
    # The host call took the axis tables' addresses when it was prepared: once a table is
    # freed (its memory back in the pool), a repeat must refuse it, not read that memory.
    from hurray_gpu.errors import UnsupportedOpError
    from hurray_gpu.ops import plan as plan_mod

    t = hg.relayout(hg.from_numpy(stable_rng("small-calls-freed-tables").standard_normal(
        (96, 160)).astype(np.float32)), Tiled((32, 32)))
    want = hg.materialize(t).numpy()
    assert np.array_equal(hg.materialize(t).numpy(), want)
    prepared = [p for p in plan_mod._PREPARED.values() if p.desc is t.descriptor]
    assert len(prepared) == 1 and prepared[0].tables  # (guarded launches: no host call)
    try:
        prepared[0].tables[1].free()
        with pytest.raises(UnsupportedOpError, match="freed"):
            hg.materialize(t)
    finally:  # the freed table is cached for this layout: no later test may get it
        clear_table_cache()
        plan_mod.clear_prepared()

def test_a_flagged_parameter_raises_on_every_prepared_repeat() -> None:
    scales = np.full(32, 0.5, np.float32)
    made = _int4(scales)
    good = hg.Tensor.from_parts(made.descriptor, [hg.Buffer.from_bytes("cpu", np.asarray(b))
                                                  for b in made.buffers])  # writable memory
    hg.dequantize(good)
    hg.dequantize(good)
    scales_buf = good.buffers[1].array.view(np.float32)
    scales_buf[5] = np.inf  # the same buffers, a bad scale written in place
    for _ in range(2):
        with pytest.raises(HurrayFormatError, match="scale"):
            hg.dequantize(good)
    scales_buf[5] = 0.5
    np.testing.assert_array_equal(hg.dequantize(good).numpy(), _want(scales))


# -- host launches of prepared calls: the same checks, one address array per call at a time --

def _nf4_like(t: Any, seed: str) -> Any:
    """A tensor under ``t``'s very descriptor object, with other bytes (scales stay valid)."""
    rng = stable_rng(seed)
    codes, scales = (np.asarray(b) for b in t.buffers)
    return hg.Tensor.from_parts(t.descriptor, [
        rng.integers(0, 256, codes.size, dtype=np.uint8),
        (rng.random(scales.size // 4, dtype=np.float32) + 0.5).view(np.uint8)])


def test_threads_repeating_one_prepared_call_each_get_their_own_result() -> None:
    import threading

    from hurray_gpu.ops.plan import _PREPARED

    first = _nf4(64, 64, "small-calls-threads")
    tensors = [first] + [_nf4_like(first, f"small-calls-threads-{i}") for i in range(3)]
    assert all(t.descriptor is first.descriptor for t in tensors)  # one prepared call
    want = [_bits(hg.dequantize(t.to("reference"))) for t in tensors]
    hg.dequantize(first)
    hg.dequantize(first)
    # The host fast path is what this test exercises; a guarded (debug-bounds) device keeps
    # checked launches instead, and the threads must get their own results either way.
    assert any((p.host is None) == config.debug_bounds() and p.desc is first.descriptor
               for p in _PREPARED.values())
    start, wrong = threading.Barrier(len(tensors)), []

    def repeat(i: int) -> None:
        start.wait()
        for _ in range(300):
            got = _bits(hg.dequantize(tensors[i]))
            if not np.array_equal(got, want[i]):
                wrong.append(i)

    threads = [threading.Thread(target=repeat, args=(i,)) for i in range(len(tensors))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert wrong == []


def test_views_with_the_planned_sizes_read_their_own_bytes() -> None:
    from hurray_gpu.runtime.buffer import Buffer

    t = _nf4(8, 64, "small-calls-views")
    other = _nf4_like(t, "small-calls-views-other")
    want = _bits(hg.dequantize(other.to("reference")))
    hg.dequantize(t)
    hg.dequantize(t)  # prepared, on the host
    codes, scales = (np.asarray(b) for b in other.buffers)
    for offset in (64, 4):  # views of the planned sizes, at offsets the kernel accepts
        big = Buffer(t.device, offset + scales.nbytes + 64)
        big.array[:] = 0xFF  # NaN scales around the view
        big.array[offset:offset + scales.nbytes] = scales
        placed = hg.Tensor.from_parts(t.descriptor, [Buffer.from_bytes(t.device, codes),
                                                     big.view(offset, scales.nbytes)])
        assert placed.buffers[1].is_view
        for _ in range(2):
            np.testing.assert_array_equal(_bits(hg.dequantize(placed)), want)


def test_guarded_launches_keep_their_canary_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    from hurray_gpu.backends.cpu import CPUDevice
    from hurray_gpu.ops.plan import _PREPARED
    from hurray_gpu.runtime.buffer import Buffer

    monkeypatch.setenv("HURRAY_GPU_DEBUG_BOUNDS", "1")
    dev = CPUDevice(0)
    try:
        t = _nf4(8, 64, "small-calls-guarded")
        on = hg.Tensor.from_parts(t.descriptor, [Buffer.from_bytes(dev, np.asarray(b))
                                                 for b in t.buffers])
        for _ in range(3):
            np.testing.assert_array_equal(_bits(hg.dequantize(on)), _bits(hg.dequantize(t)))
        mine = [p for k, p in _PREPARED.items() if p.launch.program.device is dev]
        assert mine and all(p.host is None for p in mine)  # every launch checks its canaries
    finally:
        dev.finalize()
