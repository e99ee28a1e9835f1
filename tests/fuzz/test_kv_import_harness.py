"""The KV-import harness itself: its seeds are real caches, and it notices a broken import."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fuzz import kv_import
from fuzz._engine import FuzzFailure
from fuzz.kv_seeds import CONFIGS, STREAM, kv_import_seeds
from hurray_gpu.kv_cache import importer

REGRESSIONS = Path(__file__).resolve().parent / "regressions" / "kv_import"


def test_seeds_cover_files_streams_and_every_storage_kind() -> None:
    seeds = kv_import_seeds()
    assert sum(s[0] & STREAM for s in seeds) >= 4 and sum(not s[0] & STREAM for s in seeds) == 8
    assert {c[6] for c in CONFIGS} == {None, "int8", "float8_e4m3"}
    assert any(c[8] for c in CONFIGS) and any(not c[7] for c in CONFIGS)  # forks, empty cache
    assert all(len(s) <= 1 << 16 for s in seeds)  # within atheris's -max_len


def test_a_corrupted_pool_copy_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importer._fill_pool

    def zeroing(pool: Any, src: Any) -> None:
        real(pool, src)
        pool.copyin(np.zeros(pool.nbytes, np.uint8))

    monkeypatch.setattr(importer, "_fill_pool", zeroing)
    with pytest.raises(FuzzFailure, match="page pool differs"):
        kv_import.one_input(kv_import_seeds()[0])


def test_an_undocumented_error_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise IndexError("table")

    monkeypatch.setattr(importer, "_check_tables", broken)
    with pytest.raises(FuzzFailure, match="undocumented IndexError"):
        kv_import.one_input(kv_import_seeds()[1])


def test_the_huge_layer_index_input_is_rejected_small() -> None:
    # Found by the smoke loop: layer_index 2**32 - 2 made the importer list every absent layer.
    data = (REGRESSIONS / "layer-index-huge").read_bytes()
    assert kv_import.one_input(data, measure_memory=True) is False


def test_a_u64_seq_lens_entry_past_i64_is_a_format_error() -> None:
    # Found by review: a u64 seq_lens KV entry of 2**64 - 1 raised OverflowError.
    data = (REGRESSIONS / "seq-lens-u64-max").read_bytes()
    assert kv_import.one_input(data, measure_memory=True) is False
