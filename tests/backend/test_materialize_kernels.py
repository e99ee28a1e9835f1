"""Every layout kernel launched by materialize() equals its own NumPy reference, bit-exact, on
every compiling device (not the reference device, which runs the references themselves): each
launch is replayed through ``run_reference`` on snapshots of its inputs."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from hurray_gpu.dialect.kernel import KERNELS
from hurray_gpu.format.descriptor import BufferHandle, TensorDescriptor
from hurray_gpu.format.descriptor.layouts import (
    BlockPaged,
    ColMajor,
    Composite,
    Hilbert,
    Morton,
    Strided,
    Tiled,
)
from hurray_gpu.format.descriptor.quant import PerBlockAffine
from hurray_gpu.format.descriptor.sections import CompositeMember, Shard
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.kernels import get_kernel, run_reference
from hurray_gpu.ops.host import relayout, sparsify
from hurray_gpu.ops.layout_plan import clear_table_cache
from hurray_gpu.ops.materialize import materialize
from hurray_gpu.ops.quantize import random_quantized
from hurray_gpu.runtime.device import Device
from hurray_gpu.tensor import Tensor


class _Recorder:
    """Wraps ``Device.run``: snapshot inputs, launch, then compare with the reference."""

    def __init__(self, original: Any) -> None:
        self.original, self.checked = original, set()

    def __call__(self, dev: Device, kernel: Any, *args: Any, **kwargs: Any) -> Any:
        kdef = get_kernel(kernel) if isinstance(kernel, str) else kernel
        if kdef.name not in KERNELS:  # a device's own probe of its limits (vk_loop_probe)
            return self.original(dev, kernel, *args, **kwargs)
        before = {p.name: bytes(kwargs[p.name].copyout()) for p in kdef.buffers}
        scalars = {p.name: kwargs[p.name] for p in kdef.scalars}
        result = self.original(dev, kernel, *args, **kwargs)
        want = run_reference(kdef, before, scalars)
        for p in kdef.buffers:
            if p.access != "r":
                got = bytes(kwargs[p.name].copyout())
                assert got == bytes(want[p.name]), f"{kdef.name}: {p.name} differs on {dev}"
        self.checked.add(kdef.name)
        return result


def _member(t: Tensor, offset: tuple[int, ...], role: int | None = None) -> Tensor:
    desc = dataclasses.replace(t.descriptor, shard=Shard((8, 64), offset),
                               composite_member=None if role is None else CompositeMember(role))
    return Tensor.from_parts(desc, list(t.buffers))


def _scenarios(rng: np.random.Generator) -> list[tuple[Tensor, dict[str, Any]]]:
    f32 = Tensor.from_numpy(rng.standard_normal((8, 64)).astype(np.float32))
    i8 = Tensor.from_numpy(rng.integers(-100, 100, (16, 16)).astype(np.int8))
    f16 = Tensor.from_numpy(rng.standard_normal((6, 10)).astype(np.float16))
    q = random_quantized(rng, "per_block", "int4", (8, 64), axis=1, block_size=32)
    nf4 = random_quantized(rng, "nf4", "uint4", (8, 64), axis=1, block_size=32)
    sparse_src = np.where(rng.random((8, 64)) < 0.1, 1.5, 0).astype(np.float32)
    sp3 = np.where(rng.random((3, 4, 5)) < 0.3, 2.0, 0).astype(np.float16)
    corr = sparsify(Tensor.from_numpy(np.full((2, 4), 0.5, np.float32)), "coo")
    head = TensorDescriptor(by_name("float32"), (8, 64), Composite(2, 2, 2), ())
    overlay = Tensor.from_parts(head, [], [_member(f32, (0, 0), 1), _member(corr, (3, 5), 0)])
    part_head = TensorDescriptor(by_name("float32"), (8, 64), Composite(1, 0, 1), ())
    partition = Tensor.from_parts(part_head, [], [_member(f32, (0, 0))])
    pool = np.arange(4 * 2 * 6, dtype=np.float32)
    bt, sptr = np.array([2, 0, 1], "<u4"), np.array([0, 1, 3], "<u4")
    pdesc = TensorDescriptor(by_name("float32"), (5, 2, 3), BlockPaged(2, 4, num_seqs=2),
                             (BufferHandle(pool.nbytes, 64), BufferHandle(12, 64),
                              BufferHandle(12, 64)))
    paged = Tensor.from_parts(pdesc, [pool.view(np.uint8), bt.view(np.uint8),
                                      sptr.view(np.uint8)])
    return [
        (relayout(f32, Tiled((3, 16), outer_layout=2)), {}),
        (relayout(f16, Strided((-10, 1))), {}),
        (relayout(i8, Hilbert(4, 2)), {}),
        (relayout(i8, Morton((4, 4))), {"dtype": None}),
        (relayout(Tensor.from_numpy(rng.integers(0, 2, (5, 7)).astype(bool)), ColMajor()), {}),
        (relayout(Tensor.from_numpy(rng.integers(0, 2, (16, 16)).astype(bool)),
                  Hilbert(4, 2)), {}),
        (relayout(q, Tiled((4, 32))), {"dtype": "float16"}),
        (relayout(nf4, ColMajor()), {}),
        (relayout(random_quantized(rng, "per_tensor", "int8", (16, 16)), Hilbert(4, 2)),
         {"dtype": "bfloat16"}),
        (sparsify(Tensor.from_numpy(sparse_src), "csr"), {}),
        (sparsify(Tensor.from_numpy(sparse_src), "csc"), {}),
        (sparsify(Tensor.from_numpy(sparse_src.astype(np.float16)), "csr"), {}),
        (sparsify(Tensor.from_numpy(sp3), "csf"), {}),
        (sparsify(Tensor.from_numpy(sp3), "coo"), {}),
        (overlay, {}), (partition, {}), (paged, {"seq_lens": [2, 3]}),
        (sparsify(q, "coo", keep=rng.random((8, 64)) < 0.2), {"dtype": "bfloat16"}),
        (sparsify(nf4, "csr", keep=rng.random((8, 64)) < 0.2), {}),
        (_quantized_paged(paged, PerBlockAffine(0, 2, 3, 4, 1)),
         {"seq_lens": [2, 3], "dtype": "float16"}),
        (_quantized_paged(paged, None), {"seq_lens": [2, 3], "dtype": "bfloat16"}),
    ]


def _quantized_paged(paged: Tensor, quant: PerBlockAffine | None) -> Tensor:
    """``paged``'s geometry with int8 codes and asymmetric f16 per-page-slot parameters, or
    (``quant`` None) with float8_e4m3 elements."""
    slots = 4 * 2
    codes = (np.arange(slots * 6) % 120 - 60).astype(np.int8).view(np.uint8)
    scales = np.linspace(0.5, 2.0, slots).astype("<f2").view(np.uint8)
    zps = (np.arange(slots) % 5 - 2).astype("<i4").view(np.uint8)
    bufs = [codes, *(np.asarray(b) for b in paged.buffers[1:3])]
    bufs += [scales, zps] if quant else []
    desc = dataclasses.replace(paged.descriptor,
                               dtype=by_name("int8" if quant else "float8_e4m3"),
                               buffers=tuple(BufferHandle(b.size, 64) for b in bufs),
                               quantization=quant)
    return Tensor.from_parts(desc, bufs)


def test_every_layout_kernel_matches_its_reference(kernel_device, monkeypatch) -> None:
    clear_table_cache()  # so the axis-table kernel launches (and is checked) here too
    recorder = _Recorder(type(kernel_device).run)
    monkeypatch.setattr(type(kernel_device), "run",
                        lambda dev, kernel, *a, **kw: recorder(dev, kernel, *a, **kw))
    for t, kwargs in _scenarios(np.random.default_rng(3)):
        materialize(t.to(kernel_device), **kwargs)
    sep = "sepblk" if kernel_device.dialect == "c" else "sep"  # host C runs the blocked gather
    expected = {"layout_axis_table", f"layout_{sep}_u32", f"layout_{sep}_u16", "layout_hil_u8",
                "layout_sep_packed", "layout_hil_packed", "dequant_affine_f16_sep",
                "dequant_lut_f32_sep", "dequant_affine_bf16_hil", "sparse_tree_u32",
                "sparse_tree_u16", "sparse_coo_u16", "sparse_csr_rows_u32", "sparse_csr_rows_u16",
                "layout_copy_words", "layout_check_hi",
                "layout_check_tree", "layout_check_coo", "layout_put_u32", "layout_add_f32",
                "layout_check_paged", "layout_paged_u32", "dequant_affine_bf16_sparse_coo",
                "dequant_lut_f32_sparse_tree", "dequant_affine_f16_paged",
                "dequant_lut_bf16_paged"}
    assert expected <= recorder.checked, sorted(expected - recorder.checked)
