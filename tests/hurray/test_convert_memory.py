"""hg.convert streams: converting a ~200 MiB GGUF file grows a fresh process's resident set by
at most a few times its largest tensor plus a constant, never by the file's size."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests._support import require_peer

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from convert import peak_rss, write_synthetic  # noqa: E402

FACTOR = 3          # read buffer + output codes + the KV/index, with room for the allocator
CONSTANT = 48 << 20  # descriptors, the rich/numpy temporaries of one repacking step


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/status (Linux)")
def test_peak_memory_is_bounded_by_the_largest_tensor(tmp_path: Path) -> None:
    require_peer("gguf")
    src = tmp_path / "big.gguf"
    largest = write_synthetic(src, ("F32", "Q4_0", "Q8_0", "BF16", "Q5_0"), 200 << 20,
                              tensor_bytes=24 << 20)
    rss = peak_rss(src, tmp_path / "big.hrry")
    grown = (rss["peak_kib"] - rss["before_kib"]) << 10
    assert rss["tensors"] >= 8
    assert grown <= FACTOR * largest + CONSTANT, (grown >> 20, largest >> 20)
