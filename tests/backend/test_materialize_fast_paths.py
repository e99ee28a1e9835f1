"""The fast paths of materialize(): blocked separable gathers (any bx x by block per work
item), the one-pass CSR -> dense kernel (any column run, hostile rows replayed bit-exact
against its reference), cached plans and axis tables, and host arrays read in place."""

from __future__ import annotations

import numpy as np
import pytest

from hurray_gpu.errors import HurrayFormatError
from hurray_gpu.format.addressing import dense_offsets
from hurray_gpu.format.descriptor.layouts import ColMajor, Morton, Strided, Tiled
from hurray_gpu.kernels import run_reference
from hurray_gpu.kernels.layout import AXIS_TABLE, gather_kernel
from hurray_gpu.kernels.layout_sparse import csr_rows_kernel
from hurray_gpu.ops.host import relayout, sparsify
from hurray_gpu.ops.layout_plan import axis_tables, clear_table_cache, device_buffers, plan_dense
from hurray_gpu.ops.materialize import materialize
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.tensor import Tensor

LAYOUTS = [ColMajor(), Strided((-13, 1)), Tiled((4, 8)),
           Tiled((8, 8), inner_layout=4, inner=Tiled((2, 4))), Morton((4, 4))]


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda lay: type(lay).__name__)
@pytest.mark.parametrize("block", [(1, 1), (3, 1), (5, 4), (64, 16)])
def test_blocked_gather_matches_spec_offsets(kernel_device, layout, block) -> None:
    rng = np.random.default_rng(7)
    src = rng.integers(0, 2**32, (11, 13), dtype=np.uint64).astype(np.uint32)
    t = relayout(Tensor.from_numpy(src.view(np.float32)), layout).to(kernel_device)
    buf0 = device_buffers(t, kernel_device)[0]
    plan = plan_dense(t.descriptor, buf0.nbytes)
    tables, _ = axis_tables(kernel_device, plan.records, plan.regions)
    out = Buffer(kernel_device, src.nbytes)
    scalars = {**plan.scalars, "bx": block[0], "by": block[1]}
    kernel_device.run(gather_kernel("sepblk", plan.mover), dst=out, src=buf0, tx=tables[0],
                      ty=tables[1], tz=tables[2], **scalars)
    got = out.numpy(np.uint32)
    host = np.asarray(relayout(Tensor.from_numpy(src.view(np.float32)), layout).buffers[0])
    words = host.view(np.uint32)
    want = words[dense_offsets(t.descriptor).reshape(-1) + t.descriptor.byte_offset // 4]
    assert np.array_equal(got, want) and np.array_equal(got, src.reshape(-1))


def _csr_parts(rng: np.random.Generator, shape: tuple[int, int], dtype) -> tuple:
    dense = np.where(rng.random(shape) < 0.3, rng.integers(1, 100, shape), 0).astype(dtype)
    t = sparsify(Tensor.from_numpy(dense), "csr")
    return dense, t


def _run_csr(device, t: Tensor, seg: int, word: str, wpe: int) -> dict[str, bytes]:
    """Launch the CSR kernel directly; returns dst/err bytes and checks the reference."""
    nrows, ncols = (int(d) for d in t.descriptor.shape)
    host = {"vals": bytes(np.asarray(t.buffers[0])), "ci": bytes(np.asarray(t.buffers[1])),
            "rp": bytes(np.asarray(t.buffers[2])), "err": bytes(4),
            "dst": bytes(np.full(nrows * ncols * wpe * int(word[1:]) // 8, 0xAB, np.uint8))}
    bufs = {k: Buffer.from_bytes(device, v) for k, v in host.items()}
    scalars = {"nrows": nrows, "ncols": ncols, "nnz": int(t.descriptor.layout.nnz),
               "wpe": wpe, "seg": seg}
    kernel = csr_rows_kernel(word)
    device.run(kernel, **bufs, **scalars)
    want = run_reference(kernel, host, scalars)
    got = {k: bytes(bufs[k].copyout()) for k in ("dst", "err")}
    assert got["err"] == bytes(want["err"])
    assert got["dst"] == bytes(want["dst"])
    return got


@pytest.mark.parametrize("seg", [1, 3, 64])
@pytest.mark.parametrize(("dtype", "word", "wpe"), [(np.float32, "u32", 1),
                                                    (np.int8, "u8", 1), (np.float64, "u32", 2)])
def test_csr_rows_any_segment(kernel_device, seg, dtype, word, wpe) -> None:
    dense, t = _csr_parts(np.random.default_rng(seg), (9, 70), dtype)
    got = _run_csr(kernel_device, t, seg, word, wpe)
    assert got["err"] == bytes(4)
    assert np.array_equal(np.frombuffer(got["dst"], dtype).reshape(dense.shape), dense)


def _corrupt(t: Tensor, buffer: int, entry: int, value: int) -> Tensor:
    bufs = [np.array(b, copy=True) for b in t.buffers]
    bufs[buffer].view("<u8")[entry] = value
    return Tensor.from_parts(t.descriptor, bufs)


HOSTILE = {"unsorted_row": (1, 1, 0), "column_out_of_bounds": (1, 2, 70), "sign_bit": (1, 3, 1 << 63),
           "hi_word_set": (1, 0, 1 << 33), "pointer_decreasing": (2, 3, 0),
           "pointer_past_nnz": (2, 4, 1 << 20), "first_pointer": (2, 0, 1)}


@pytest.mark.parametrize("case", sorted(HOSTILE))
@pytest.mark.parametrize("seg", [1, 16, 70])
def test_csr_rows_hostile_rows_replay_bit_exact(kernel_device, case, seg) -> None:
    dense, t = _csr_parts(np.random.default_rng(3), (9, 70), np.float32)
    bad = _corrupt(t, *HOSTILE[case])
    got = _run_csr(kernel_device, bad, seg, "u32", 1)
    assert got["err"] == np.uint32(1).tobytes()
    with pytest.raises(HurrayFormatError):
        materialize(bad.to(kernel_device))


def test_axis_tables_are_cached_per_descriptor(kernel_device, monkeypatch) -> None:
    launches: list[str] = []
    original = type(kernel_device).run

    def counting(dev, kernel, *a, **kw):
        launches.append(getattr(kernel, "name", kernel))
        return original(dev, kernel, *a, **kw)

    monkeypatch.setattr(type(kernel_device), "run", counting)
    clear_table_cache()
    base = np.arange(96, dtype=np.float32).reshape(8, 12)
    tiled = relayout(Tensor.from_numpy(base), Tiled((4, 4))).to(kernel_device)
    col = relayout(Tensor.from_numpy(base), ColMajor()).to(kernel_device)
    for t in (tiled, tiled, col, col):
        assert np.array_equal(materialize(t).to("cpu").numpy(), base)
    assert launches.count(AXIS_TABLE.name) == 6  # three tables per descriptor, once each


def test_plans_are_cached_and_errors_are_not() -> None:
    t = relayout(Tensor.from_numpy(np.zeros((4, 6), np.float32)), Tiled((2, 3)))
    size = t.descriptor.buffers[0].byte_size
    assert plan_dense(t.descriptor, size) is plan_dense(t.descriptor, size)
    for _ in range(2):
        with pytest.raises(HurrayFormatError):
            plan_dense(t.descriptor, size - 4)


def test_host_arrays_in_place_and_misaligned_copies() -> None:
    base = np.arange(64, dtype=np.float32).reshape(8, 8)
    t = relayout(Tensor.from_numpy(base), ColMajor())
    raw = np.asarray(t.buffers[0])
    odd = np.empty(raw.nbytes + 1, np.uint8)[1:]  # 1 byte past an aligned allocation
    odd[:] = raw
    for buf in (raw, odd):
        moved = Tensor.from_parts(t.descriptor, [buf])
        assert np.array_equal(materialize(moved).numpy(), base)
    aligned = Tensor.from_parts(t.descriptor, [raw])  # used in place: same memory
    assert aligned.buffers[0].array.ctypes.data == raw.ctypes.data
    copied = Tensor.from_parts(t.descriptor, [odd])  # misaligned: an aligned copy
    assert copied.buffers[0].array.ctypes.data % 64 == 0
    before = aligned.device.allocator.stats()
    aligned.buffers[0].free()  # never hands the caller's memory to the pool
    assert aligned.device.allocator.stats()["pooled_bytes"] == before["pooled_bytes"]
    assert np.array_equal(materialize(Tensor.from_parts(t.descriptor, [raw])).numpy(), base)


def test_fused_dequant_error_flag_never_reaches_the_cached_tables(kernel_device) -> None:
    from hurray_gpu.ops.quantize import random_quantized

    clear_table_cache()
    rng = np.random.default_rng(5)
    good = relayout(random_quantized(rng, "per_block", "int8", (8, 64), axis=1,
                                     block_size=32), Tiled((4, 32)))
    want = materialize(good).numpy()
    bufs = [np.array(b, copy=True) for b in good.buffers]
    bufs[1][:] = 0  # every scale is zero: invalid, flagged by the kernel
    bad = Tensor.from_parts(good.descriptor, bufs)
    with pytest.raises(HurrayFormatError):
        materialize(bad.to(kernel_device))
    for _ in range(2):
        assert np.array_equal(materialize(good.to(kernel_device)).to("cpu").numpy(), want)
