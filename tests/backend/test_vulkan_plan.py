"""The Vulkan launch planner (pure): coverage, alignment and window bounds, no device needed."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hurray_gpu.backends.vulkan import Limits, Span, plan_launch
from hurray_gpu.errors import UnsupportedOpError

LAVAPIPE = Limits(max_range=128 << 20, align=16, max_groups=(65535, 65535, 65535))


def test_small_launch_is_one_dispatch():
    spans = [Span(4000, 0, 3999), Span(4096, 0, 4096)]
    plan = plan_launch(spans, (1000, 1, 1), (64, 1, 1), LAVAPIPE)
    assert len(plan) == 1
    step = plan[0]
    assert step.windows == ((0, 4000), (0, 4096))
    assert step.deltas == (0, 0) and step.base == (0, 0, 0) and step.groups == (16, 1, 1)


def test_group_count_limit_splits_axis():
    limits = Limits(128 << 20, 16, (10, 65535, 65535))
    plan = plan_launch([Span(4096, 0, 4096)], (1000, 1, 1), (64, 1, 1), limits)
    assert [s.base[0] for s in plan] == [0, 640]
    assert [s.groups[0] for s in plan] == [10, 6]


def test_view_offset_becomes_a_word_delta():
    plan = plan_launch([Span(1 << 16, 1004, 3000)], (3000, 1, 1), (64, 1, 1), LAVAPIPE)
    (offset, size), = plan[0].windows
    assert offset == 992 and offset + size >= 1004 + 3000
    assert plan[0].deltas == ((1004 - 992) // 4,)


def test_unaligned_view_is_refused():
    with pytest.raises(UnsupportedOpError, match="multiple of 4"):
        plan_launch([Span(64, 2, 8)], (8, 1, 1), (64, 1, 1), LAVAPIPE)


def test_too_much_per_group_is_refused():
    limits = Limits(1 << 16, 16, (65535, 65535, 65535))
    with pytest.raises(UnsupportedOpError, match="maxStorageBufferRange"):
        plan_launch([Span(1 << 30, 0, 1 << 30)], (64, 1, 1), (64, 1, 1), limits)


def test_big_buffer_windows_follow_the_work_items():
    n = 40 << 20
    plan = plan_launch([Span(4 * n, 0, 4 * n), Span(n, 0, n)], (n, 1, 1), (64, 1, 1), LAVAPIPE)
    assert len(plan) > 1
    for step in plan:
        (w_off, w_size), (s_off, s_size) = step.windows
        assert w_size <= LAVAPIPE.max_range and w_off % 16 == 0
        first, stop = step.base[0], min(n, step.base[0] + step.groups[0] * 64)
        assert w_off <= 4 * first and 4 * stop <= w_off + w_size
        assert (s_off, s_size) == (0, n)  # 40 MiB fits whole
        assert step.deltas[0] == (-w_off // 4) % 2**32


def _check_coverage(plan, gsize, lsize, groups):
    for d in range(3):
        starts = sorted({step.base[d] for step in plan})
        ends = {step.base[d]: step.base[d] + step.groups[d] * lsize[d] for step in plan}
        assert starts[0] == 0
        for here, there in itertools.pairwise(starts):
            assert ends[here] == there  # tiles meet without gaps or overlap
        assert ends[starts[-1]] - lsize[d] < gsize[d] <= ends[starts[-1]]
        assert all(1 <= step.groups[d] <= groups[d] for step in plan)
    distinct = [len({step.base[d] for step in plan}) for d in range(3)]
    assert len(plan) == distinct[0] * distinct[1] * distinct[2]


@settings(max_examples=200, deadline=None)
@given(
    gsize=st.tuples(st.integers(1, 5000), st.integers(1, 40), st.integers(1, 3)),
    lsize=st.sampled_from([(64, 1, 1), (8, 8, 1), (4, 2, 2), (1, 1, 1)]),
    max_range=st.integers(1 << 12, 1 << 16),
    align=st.sampled_from([1, 4, 16, 64, 256]),
    groups=st.tuples(st.integers(1, 300), st.integers(1, 300), st.integers(1, 300)),
    raw=st.lists(st.tuples(st.integers(0, 64), st.integers(0, 1 << 18), st.integers(0, 8)),
                 min_size=1, max_size=4),
)
def test_plan_properties(gsize, lsize, max_range, align, groups, raw):
    limits = Limits(max_range, align, groups)
    # Real VkBuffers are never empty: zero-byte kernel buffers bind a 4-byte placeholder.
    spans = [Span(max(4, -(-(4 * w + n) // 4) * 4 + 4 * extra), 4 * w, n) for w, n, extra in raw]
    try:
        plan = plan_launch(spans, gsize, lsize, limits)
    except UnsupportedOpError:
        return  # one work group would need more than max_range of some buffer
    _check_coverage(plan, gsize, lsize, groups)
    axis = max((d for d in range(3) if gsize[d] > 1), default=0)
    for step in plan:
        first = step.base[axis]
        stop = min(gsize[axis], first + step.groups[axis] * lsize[axis])
        for span, (offset, size), delta in zip(spans, step.windows, step.deltas, strict=True):
            assert offset % max(align, 4) == 0 and size > 0 and size % 4 == 0
            assert size <= max_range and offset + size <= span.buffer_size
            assert (offset + 4 * delta - span.offset) % 2**34 == 0
            # The bytes proportional to this step's work items lie inside the window.
            low = span.offset + span.nbytes * first // gsize[axis]
            high = span.offset + -(-span.nbytes * stop // gsize[axis])
            assert offset <= low and high <= offset + size or span.nbytes == 0
