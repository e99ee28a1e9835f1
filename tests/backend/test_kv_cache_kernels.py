"""The paged KV kernels on every device equal their NumPy references bit for bit.

Inputs include slots past the pool (skipped by scatter, zero rows for gather) and page pairs
out of range (skipped), so no input can make a kernel touch memory outside its buffers.
"""

from __future__ import annotations

import numpy as np
import pytest

from hurray_gpu.dialect.kernel import numpy_dtype
from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.kernels import run_reference
from hurray_gpu.kernels.paged import PAD_SLOT, PAGED_KERNELS, SKIP_SLOT, paged_kernel, word_for
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.device import Device

ROW, SLOTS, TOKENS, SLACK = 5, 37, 19, 7


def _words(rng: np.random.Generator, word: str, count: int) -> np.ndarray:
    dt = numpy_dtype(word)
    return rng.integers(0, 256, count * dt.itemsize, dtype=np.uint8).view(dt)


def _slots(rng: np.random.Generator, distinct: bool) -> np.ndarray:
    slots = rng.permutation(SLOTS)[:TOKENS].astype(np.uint32) if distinct else \
        rng.integers(0, SLOTS, TOKENS).astype(np.uint32)
    # Just past the pool, the padding sentinel, and a token of another window (untouched).
    slots[[2, 9, 5]] = [SLOTS, PAD_SLOT, SKIP_SLOT]
    return slots


def _gather_host(rng: np.random.Generator, word: str) -> dict[str, np.ndarray]:
    host = {f"{r}{name}": _words(rng, word, count * ROW + SLACK) for r in "kv"
            for name, count in (("dst", TOKENS), ("pool", SLOTS))}
    host["slots"] = _slots(rng, False)
    return host


def _run(device: Device, kernel_name: str, host: dict[str, np.ndarray],
         scalars: dict[str, int]) -> None:
    kernel = next(k for k in PAGED_KERNELS if k.name == kernel_name)
    raw = {k: v.tobytes() for k, v in host.items()}
    bufs = {k: Buffer.from_bytes(device, v) for k, v in raw.items()}
    device.run(kernel, **bufs, **scalars)
    device.synchronize()
    want = run_reference(kernel, raw, scalars)
    for name in raw:
        assert bytes(bufs[name].copyout()) == bytes(want[name]), f"{kernel_name}: {name}"


# lanes: one item per row (host), a few lanes, more lanes than words, and guarded no-ops.
LANES = [1, 2, 8, 0, 5000]
WORD_LANES = [(w, la) for w in ("u32", "u16", "u8") for la in LANES[:3]] + \
    [("u32", la) for la in LANES[3:]]


@pytest.mark.parametrize(("word", "lanes"), WORD_LANES)
def test_scatter_matches_reference(kernel_device: Device, word: str, lanes: int) -> None:
    rng = np.random.default_rng(11)
    host = {f"{r}{name}": _words(rng, word, count * ROW + SLACK) for r in "kv"
            for name, count in (("pool", SLOTS), ("src", TOKENS))}
    host["slots"] = _slots(rng, True)
    _run(kernel_device, f"kv_scatter_{word}", host,
         {"n": TOKENS * max(lanes, 1), "lanes": lanes, "row": ROW, "num_slots": SLOTS})


@pytest.mark.parametrize(("word", "lanes"), WORD_LANES)
def test_gather_matches_reference(kernel_device: Device, word: str, lanes: int) -> None:
    rng = np.random.default_rng(12)
    host = _gather_host(rng, word)
    _run(kernel_device, f"kv_gather_{word}", host,
         {"n": TOKENS * max(lanes, 1), "lanes": lanes, "row": ROW, "num_slots": SLOTS})


@pytest.mark.parametrize(("word", "lanes"), WORD_LANES)
def test_copy_pages_matches_reference(kernel_device: Device, word: str, lanes: int) -> None:
    rng = np.random.default_rng(13)
    pages, words = 9, 6
    pairs = np.array([0, 3, 1, 4, 2, 99, 50, 5, 2, 6], np.uint32)  # two pairs out of range
    host = {f"{r}{name}": _words(rng, word, pages * words + SLACK) for r in "kv"
            for name in ("pool", "from")}
    host["pairs"] = pairs
    _run(kernel_device, f"kv_copy_pages_{word}", host,
         {"n": 5 * max(lanes, 1), "lanes": lanes, "page_words": words, "num_pages": pages})


def test_partial_lane_group_is_ignored(kernel_device: Device) -> None:
    rng = np.random.default_rng(14)
    host = _gather_host(rng, "u32")
    # n is not a multiple of lanes: the trailing partial row must not be touched.
    _run(kernel_device, "kv_gather_u32", host,
         {"n": 4 * 3 + 2, "lanes": 3, "row": ROW, "num_slots": SLOTS})


def test_launch_checks_buffer_extents(kernel_device: Device) -> None:
    kernel = paged_kernel("gather", "u32")
    small = Buffer(kernel_device, 8)
    with pytest.raises(UnsupportedOpError, match="needs"):
        kernel_device.run(kernel, small, small, small, small, small, n=100, lanes=1, row=10,
                          num_slots=4)


def test_word_choice() -> None:
    assert word_for(2 * 4 * 2) == (4, "u32")
    assert word_for(3 * 2) == (2, "u16")
    assert word_for(3) == (1, "u8")
    names = {k.name for k in PAGED_KERNELS}
    assert len(names) == 9 and all(k.reference is not None for k in PAGED_KERNELS)
