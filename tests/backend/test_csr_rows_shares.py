"""The one-pass CSR -> dense kernel splits each row's entries between its column runs by binary
search: corrupted rows (unsorted across runs, duplicates, hi words, bad pointers) must raise the
error flag exactly when the index buffers break the CSR invariants, for every run length, and
replay bit-exact against the kernel's reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hurray_gpu.kernels import run_reference
from hurray_gpu.kernels.layout_sparse import csr_rows_kernel
from hurray_gpu.runtime.buffer import Buffer

NROWS, NCOLS = 5, 37


def _valid(rp: np.ndarray, ci: np.ndarray, nrows: int, ncols: int) -> bool:
    """The CSR invariants, checked independently of the kernel's strategy."""
    nnz = ci.size
    if rp[0] != 0 or rp[-1] != nnz or (rp[1:] < rp[:-1]).any():
        return False
    for r in range(nrows):
        cols = ci[int(rp[r]):int(rp[r + 1])]
        if (cols >= ncols).any() or (cols[1:] <= cols[:-1]).any():
            return False
    return True


def _launch(device, rp: np.ndarray, ci: np.ndarray, seg: int) -> tuple[bytes, int, dict]:
    nnz = ci.size
    vals = np.arange(1, nnz + 1, dtype=np.uint32) * np.uint32(2654435761)
    host = {"dst": bytes(np.full(NROWS * NCOLS, 0xABABABAB, np.uint32)),
            "vals": vals.tobytes() or bytes(4), "ci": ci.astype("<u8").tobytes() or bytes(8),
            "rp": rp.astype("<u8").tobytes(), "err": bytes(4)}
    scalars = {"nrows": NROWS, "ncols": NCOLS, "nnz": nnz, "wpe": 1, "seg": seg}
    bufs = {k: Buffer.from_bytes(device, v) for k, v in host.items()}
    kernel = csr_rows_kernel("u32")
    device.run(kernel, **bufs, **scalars)
    want = run_reference(kernel, host, scalars)
    got_dst, got_err = bytes(bufs["dst"].copyout()), bytes(bufs["err"].copyout())
    assert got_err == bytes(want["err"])
    assert got_dst == bytes(want["dst"])
    return got_dst, int(np.frombuffer(got_err, np.uint32)[0]), host


def _matrix(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    dense = np.where(rng.random((NROWS, NCOLS)) < 0.35, 1, 0)
    rows, cols = np.nonzero(dense)
    rp = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=NROWS))]).astype(np.uint64)
    return dense, rp, cols.astype(np.uint64)


CORRUPTIONS = st.lists(st.tuples(st.sampled_from(["ci", "rp"]), st.integers(0, 10_000),
                                 st.sampled_from([0, 1, 5, 17, 18, 36, 37, 40, 1 << 32,
                                                  1 << 63, "swap", "dup"])),
                       min_size=0, max_size=3)


def _corrupt(rp: np.ndarray, ci: np.ndarray, edits: list) -> None:
    for which, at, value in edits:
        arr = ci if which == "ci" else rp
        if arr.size == 0:
            continue
        i = at % arr.size
        if value == "swap" and i + 1 < arr.size:
            arr[i], arr[i + 1] = arr[i + 1], arr[i]
        elif value == "dup" and i + 1 < arr.size:
            arr[i + 1] = arr[i]
        elif isinstance(value, int):
            arr[i] = np.uint64(value)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), seg=st.sampled_from([1, 2, 5, 16, 18, 37, 64]),
       edits=CORRUPTIONS)
def test_error_flag_iff_invariants_break(kernel_device, seed, seg, edits) -> None:
    dense, rp, ci = _matrix(np.random.default_rng(seed))
    _corrupt(rp, ci, edits)
    dst, err, host = _launch(kernel_device, rp, ci, seg)
    assert err == (0 if _valid(rp, ci, NROWS, NCOLS) else 1)
    if err == 0:
        vals = np.frombuffer(host["vals"], np.uint32)[: ci.size]
        want = np.zeros((NROWS, NCOLS), np.uint32)
        for r in range(NROWS):
            want[r, ci[int(rp[r]):int(rp[r + 1])].astype(np.int64)] = (
                vals[int(rp[r]):int(rp[r + 1])])
        assert np.array_equal(np.frombuffer(dst, np.uint32).reshape(NROWS, NCOLS), want)
        if not edits:
            assert np.array_equal(want != 0, dense != 0)


@pytest.mark.parametrize("seg", [1, 4, 18, 37])
@pytest.mark.parametrize("row", [[3, 30, 20], [30, 3, 20], [20, 3, 30], [3, 3, 20],
                                 [20, 20, 30], [0, 36, 35], [1 << 32, 3, 20]],
                         ids=lambda r: "-".join(str(v) for v in r))
def test_rows_out_of_order_across_runs(kernel_device, seg, row) -> None:
    # Every row holds the same three columns: out-of-order values straddle run boundaries so
    # the binary searches of neighbouring runs disagree with a linear scan.
    rp = np.arange(0, 3 * NROWS + 1, 3, dtype=np.uint64)
    ci = np.tile(np.array(row, np.uint64), NROWS)
    _, err, _ = _launch(kernel_device, rp, ci, seg)
    assert err == 1
