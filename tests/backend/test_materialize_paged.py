"""materialize() of block-paged KV tensors on every device vs the NumPy paged reference, with
hostile block tables and seq_ptr (one test per invariant)."""

from __future__ import annotations

import numpy as np
import pytest

from hurray_gpu.errors import HurrayFormatError
from hurray_gpu.format.addressing import block_paged_to_dense
from hurray_gpu.format.descriptor import BufferHandle, TensorDescriptor
from hurray_gpu.format.descriptor.layouts import BlockPaged
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.ops.host import element
from hurray_gpu.ops.materialize import materialize
from hurray_gpu.tensor import Tensor

PS, PAGES, HEADS, DIM = 2, 4, 2, 3


def _paged(bt, sp, total: int, dtype: str = "float32", wide: bool = False) -> Tensor:
    dt = by_name(dtype)
    idx = np.dtype("<u8" if wide else "<u4")
    pool = (np.arange(PAGES * PS * HEADS * DIM) * 1.25).astype(dt.numpy)
    bt_b, sp_b = np.asarray(bt, idx).view(np.uint8), np.asarray(sp, idx).view(np.uint8)
    layout = BlockPaged(PS, PAGES, num_seqs=len(sp) - 1, block_table_index_type=int(wide))
    desc = TensorDescriptor(dt, (total, HEADS, DIM), layout,
                            (BufferHandle(pool.nbytes, 64), BufferHandle(bt_b.size, 64),
                             BufferHandle(sp_b.size, 64)))
    return Tensor.from_parts(desc, [pool.view(np.uint8), bt_b, sp_b])


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int8"])
def test_shared_prefix_example(device, dtype: str, wide: bool) -> None:
    # Sequence 0: pages [0, 1], 3 tokens; sequence 1 shares prefix page 0, then page 2.
    bt, sp, lens = [0, 1, 0, 2], [0, 2, 4], [3, 4]
    t = _paged(bt, sp, 7, dtype, wide).to(device)
    got = materialize(t, seq_lens=lens).to("cpu").numpy()
    pool = np.asarray(t.to("cpu").buffers[0]).view(by_name(dtype).numpy)
    want = block_paged_to_dense(pool.reshape(PAGES, PS, HEADS, DIM), np.array(bt),
                                np.array(sp), PS, lens)
    assert np.array_equal(got, want)
    assert np.array_equal(got[3], got[0]) and np.array_equal(got[4], got[1])  # shared page
    assert element(t, (5, 1, 2), seq_lens=lens) == want[5, 1, 2]


def test_full_pages_without_seq_lens(device) -> None:
    t = _paged([3, 1], [0, 2], 4).to(device)
    got = materialize(t).to("cpu").numpy()
    pool = np.asarray(t.to("cpu").buffers[0]).view(np.float32).reshape(PAGES, PS, HEADS, DIM)
    assert np.array_equal(got, np.concatenate([pool[3], pool[1]]))


HOSTILE = {
    "page_id_out_of_range": ([0, 4], [0, 2], 4, None),
    "seq_ptr_not_zero": ([0, 1], [1, 2], 2, None),
    "seq_ptr_decreasing": ([0, 1, 2], [0, 2, 1, 3], 4, None),
    "seq_ptr_last_not_table": ([0, 1, 2], [0, 2], 4, None),
    "seq_lens_too_long": ([0, 1], [0, 2], 5, [5]),
    "seq_lens_sum_mismatch": ([0, 1], [0, 2], 4, [3]),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_tables(device, case: str) -> None:
    bt, sp, total, lens = HOSTILE[case]
    try:
        t = _paged(bt, sp, total).to(device)
    except HurrayFormatError:
        return  # the descriptor layer already refuses it (also acceptable)
    with pytest.raises(HurrayFormatError):
        materialize(t, seq_lens=lens)
