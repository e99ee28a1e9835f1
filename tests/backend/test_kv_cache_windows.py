"""Pool windows (Vulkan bindings smaller than a pool): every token lands in exactly one window."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.kernels.paged import PAD_SLOT, SKIP_SLOT
from hurray_gpu.kv_cache.windows import ALIGN_MARGIN, Windows


def _device(max_range: int, alignment: int | None = None) -> SimpleNamespace:
    dev = SimpleNamespace(plan_limits=SimpleNamespace(max_range=max_range))
    if alignment is not None:
        dev.alignment = alignment
    return dev


def test_a_pool_within_the_range_is_one_window() -> None:
    w = Windows(_device(10**9), num_pages=50, page_size=4, slot_bytes=[64])
    assert w.count == 1 and w.slots == 200
    slots = np.array([3, PAD_SLOT, 199])
    assert w.split_slots(slots)[0][1] is slots
    assert Windows(SimpleNamespace(), 50, 4, [64]).count == 1  # no limit at all


def test_windows_are_equal_and_the_last_ends_at_the_pool_end() -> None:
    w = Windows(_device(ALIGN_MARGIN + 3 * 256), num_pages=10, page_size=4, slot_bytes=[64, 4])
    assert (w.count, w.pages, w.slots) == (4, 3, 12)
    assert [w.base(i) for i in range(4)] == [0, 3, 6, 7]
    parts = dict(w.split_slots(np.array([0, 13, PAD_SLOT, 39, 30])))
    assert sorted(parts) == [0, 1, 2, 3]
    assert parts[0].tolist() == [0, SKIP_SLOT, PAD_SLOT, SKIP_SLOT, SKIP_SLOT]
    assert parts[1].tolist() == [SKIP_SLOT, 1, PAD_SLOT, SKIP_SLOT, SKIP_SLOT]
    assert parts[2].tolist() == [SKIP_SLOT, SKIP_SLOT, PAD_SLOT, SKIP_SLOT, 6]
    assert parts[3].tolist() == [SKIP_SLOT, SKIP_SLOT, PAD_SLOT, 11, SKIP_SLOT]  # base page 7
    groups = w.split_pairs([(0, 9), (1, 2), (4, 5)])
    assert groups == [(0, 3, [(0, 2)]), (0, 0, [(1, 2)]), (1, 1, [(1, 2)])]


def test_pages_that_cannot_be_windowed_raise_with_a_fix() -> None:
    with pytest.raises(UnsupportedOpError, match="storage-buffer range.*Fix:"):
        Windows(_device(ALIGN_MARGIN + 100), num_pages=10, page_size=4, slot_bytes=[64])
    with pytest.raises(UnsupportedOpError, match="multiple of 128 bytes"):
        Windows(_device(ALIGN_MARGIN + 1000, alignment=128), 100, 4, [16])
    with pytest.raises(UnsupportedOpError, match="multiple of 4 bytes"):
        Windows(_device(ALIGN_MARGIN + 100), num_pages=1000, page_size=3, slot_bytes=[3])


@settings(max_examples=60, deadline=None)
@given(pages=st.integers(1, 40), per=st.integers(1, 40), ps=st.sampled_from([1, 4, 16]),
       data=st.data())
def test_split_slots_and_pairs_cover_every_token_once(pages: int, per: int, ps: int,
                                                      data: st.DataObject) -> None:
    w = Windows(_device(ALIGN_MARGIN + per * ps * 4), pages, ps, [4])
    total = pages * ps
    slots = np.array(data.draw(st.lists(st.integers(0, total - 1) | st.just(PAD_SLOT),
                                        max_size=30)), dtype=np.int64)
    seen = np.zeros(slots.size, int)
    for window, local in w.split_slots(slots):
        assert local.shape == slots.shape
        mine = local < w.slots
        assert np.array_equal(local[mine] + w.base(window) * ps, slots[mine])
        assert np.all((local[~mine] == PAD_SLOT) == (slots[~mine] == PAD_SLOT))
        assert np.all(local[~mine] >= SKIP_SLOT)
        seen += mine
    assert np.array_equal(seen, (slots != PAD_SLOT).astype(int))
    src = np.array(data.draw(st.lists(st.integers(0, total - 1), max_size=10)), np.int64)
    dst = (src + total // 2) % total
    got = []
    for a, b, flat in w.split_slot_pairs(src, dst):
        pairs = flat.reshape(-1, 2)
        assert np.all(pairs < w.slots)
        got += [(int(s) + w.base(a) * ps, int(d) + w.base(b) * ps) for s, d in pairs]
    assert sorted(got) == sorted(zip(src.tolist(), dst.tolist(), strict=True))
