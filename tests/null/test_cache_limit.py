"""The disk kernel cache's size limit: least-recently-used eviction by the last use the cache
records itself, several processes sharing one cache, `hurray-gpu cache info|clear`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import hurray_gpu as hg
from hurray_gpu import config
from hurray_gpu.cli import main
from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.runtime.cache import (
    EVICT_TO,
    DiskKernelCache,
    cache_entries,
    cache_info,
    default_cache,
    make_cache_key,
)
from hurray_gpu.runtime.program import compile_stats

ROOT = Path(__file__).resolve().parents[2]
MIB = 1 << 20


def _key(i: int) -> str:
    return make_cache_key("hurray_gpu.test.limit.v1", f"kernel {i}")


def _binary(i: int, size: int) -> bytes:
    return bytes([i % 251]) * size


def test_eviction_keeps_what_was_used_last(tmp_path: Path) -> None:
    cache = DiskKernelCache(tmp_path, max_bytes=MIB)
    size = 300 * 1024
    for i in range(3):
        cache.save(_key(i), _binary(i, size), f"src {i}")
        # Distinct, old last-use times: the order no longer depends on the clock's resolution.
        os.utime(cache.path_for(_key(i)), (1000.0 + i, 1000.0 + i))
    assert cache.load(_key(0)) == _binary(0, size)  # a hit: 0 is now the most recent
    cache.save(_key(3), _binary(3, size), "src 3")  # 4 x 300 KiB > 1 MiB: evict
    kept = {i for i in range(4) if cache.load(_key(i)) is not None}
    assert kept == {0, 3}  # 1 and 2 were used least recently; 0's hit kept it
    total = sum(e.nbytes for e in cache_entries(tmp_path))
    assert total <= EVICT_TO * MIB


def test_a_cache_under_its_limit_is_left_alone(tmp_path: Path) -> None:
    cache = DiskKernelCache(tmp_path, max_bytes=4 * MIB)
    for i in range(6):
        cache.save(_key(i), _binary(i, 100_000), "s")
    assert len(cache_entries(tmp_path)) == 6


def test_files_not_named_like_records_are_never_listed_or_removed(tmp_path: Path) -> None:
    (tmp_path / "cpu" / "ab").mkdir(parents=True)
    other = [tmp_path / "notes.bin", tmp_path / "cpu" / "ab" / ("cd" * 32 + ".bin"),
             tmp_path / "cpu" / "ab" / "readme.txt"]
    for path in other:
        path.write_bytes(b"x" * 2 * MIB)
    cache = DiskKernelCache(tmp_path / "cpu", max_bytes=MIB, limit_root=tmp_path)
    cache.save(_key(0), b"abc", "s")
    assert cache_entries(tmp_path) == [e for e in cache_entries(tmp_path)
                                       if e.path == cache.path_for(_key(0))]
    assert all(p.exists() for p in other)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HURRAY_GPU_CACHE_DIR", str(tmp_path))
        assert main(["cache", "clear"]) == 0
    assert cache.load(_key(0)) is None and all(p.exists() for p in other)


WRITER = textwrap.dedent("""
    import sys
    from hurray_gpu.runtime.cache import DiskKernelCache, make_cache_key
    root, who, n, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    cache = DiskKernelCache(root, max_bytes=1 << 20)
    for i in range(n):
        key = make_cache_key("hurray_gpu.test.limit.v1", f"{who} {i}")
        cache.save(key, bytes([i % 251]) * size, f"{who} {i}")
        got = cache.load(key)
        # A record may be evicted by the other process at once, but never read back wrong.
        assert got is None or got == bytes([i % 251]) * size, (who, i)
    """)


def test_two_processes_share_one_bounded_cache(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "error"}
    n, size = 60, 64 * 1024  # each writes 3.75 MiB into a 1 MiB cache
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), who, str(n),
                               str(size)], env=env, stderr=subprocess.PIPE, text=True)
             for who in ("a", "b")]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert "Warning" not in err, err
    entries = cache_entries(tmp_path)
    assert sum(e.nbytes for e in entries) <= MIB  # the last save's eviction saw both
    assert 0 < len(entries) < 2 * n
    cache = DiskKernelCache(tmp_path)
    for e in entries:  # every surviving record is whole and checks out
        assert cache.load(e.path.stem) is not None, e.path
    assert not list(tmp_path.rglob(".tmp-*"))


@pytest.mark.parametrize(("value", "want"), [("", 1 << 30), ("512M", 512 * MIB),
                                              ("2G", 2 << 30), ("64MiB", 64 * MIB),
                                              ("3145728", 3 * MIB)])
def test_size_limit_from_the_environment(value: str, want: int,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HURRAY_GPU_CACHE_MAX_BYTES", value)
    assert config.cache_max_bytes() == want
    monkeypatch.setenv("HURRAY_GPU_CACHE_DIR", "/nonexistent/hg")
    cache = default_cache("cpu")
    assert isinstance(cache, DiskKernelCache) and cache.max_bytes == want
    assert cache.limit_root == Path("/nonexistent/hg")


@pytest.mark.parametrize("value", ["12", "lots", "-5M", "1.5G", "0"])
def test_bad_size_limit_says_how_to_fix_it(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HURRAY_GPU_CACHE_MAX_BYTES", value)
    with pytest.raises(UnsupportedOpError, match="HURRAY_GPU_CACHE_MAX_BYTES.*Fix: "):
        config.cache_max_bytes()


def test_cache_info_and_clear_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("HURRAY_GPU_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("HURRAY_GPU_CACHE_MAX_BYTES", "8M")
    sizes = {"cpu": [1000, 2000, 3000], "opencl": [5000]}
    for backend, lengths in sizes.items():
        cache = default_cache(backend)
        for i, length in enumerate(lengths):
            cache.save(_key(i), _binary(i, length), "s")
    assert main(["cache", "info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["location"] == str(tmp_path) and info["max_bytes"] == 8 * MIB
    assert info["entries"] == 4 and set(info["backends"]) == {"cpu", "opencl"}
    assert info["backends"]["cpu"]["entries"] == 3
    on_disk = sum(p.stat().st_size for p in (tmp_path / "cpu").rglob("*.bin"))
    assert info["backends"]["cpu"]["bytes"] == on_disk > 6000
    assert info == {**cache_info(tmp_path), "max_bytes": 8 * MIB, "enabled": True,
                    "this_process": compile_stats()}
    assert main(["cache", "info"]) == 0
    text = capsys.readouterr().out
    assert str(tmp_path) in text and "8.0 MiB" in text and "opencl" in text
    assert main(["cache", "clear", "--backend", "cpu"]) == 0
    assert "removed 3 cached kernels" in capsys.readouterr().out
    assert set(cache_info(tmp_path)["backends"]) == {"opencl"}
    assert main(["cache", "clear", "--backend", ".."]) == 1
    assert "Fix:" in capsys.readouterr().err
    assert main(["cache", "clear"]) == 0
    assert cache_info(tmp_path)["entries"] == 0


def test_compile_stats_is_public() -> None:
    assert hg.compile_stats is compile_stats
    assert set(hg.compile_stats()) == {"compiles", "disk_hits", "disk_misses"}
    assert "compile_stats" in hg.__all__
