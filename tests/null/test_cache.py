"""Kernel cache: keys, LRU, on-disk hit/miss/corruption, atomic writes, fatal mode."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import pytest

from hurray_gpu.runtime.cache import (
    CacheWarning,
    DiskKernelCache,
    LRUCache,
    NullKernelCache,
    default_cache,
    make_cache_key,
)

KEY = make_cache_key("hurray_gpu.test.kernel.v1", "src", ["-O2"], "cc 1", "dev")


def test_key_is_hex_and_covers_every_field() -> None:
    assert len(KEY) == 64 and int(KEY, 16) >= 0
    variants = [
        make_cache_key("hurray_gpu.test.kernel.v2", "src", ["-O2"], "cc 1", "dev"),
        make_cache_key("hurray_gpu.test.kernel.v1", "src2", ["-O2"], "cc 1", "dev"),
        make_cache_key("hurray_gpu.test.kernel.v1", "src", ["-O3"], "cc 1", "dev"),
        make_cache_key("hurray_gpu.test.kernel.v1", "src", ["-O2"], "cc 2", "dev"),
        make_cache_key("hurray_gpu.test.kernel.v1", "src", ["-O2"], "cc 1", "dev2"),
    ]
    assert len({KEY, *variants}) == 6


def test_key_sorts_options_and_separates_fields() -> None:
    a = make_cache_key("d", "s", ["-a", "-b"])
    assert a == make_cache_key("d", "s", ["-b", "-a"])
    assert make_cache_key("d", "ab", [], "c") != make_cache_key("d", "a", [], "bc")


def test_lru_is_bounded() -> None:
    lru: LRUCache[str, int] = LRUCache(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.get("a") == 1
    lru.put("c", 3)
    assert "b" not in lru and lru.get("a") == 1 and len(lru) == 2
    with pytest.raises(ValueError):
        LRUCache(0)


def test_disk_round_trip_and_miss(tmp_path: Path) -> None:
    cache = DiskKernelCache(tmp_path)
    assert cache.load(KEY) is None
    cache.save(KEY, b"\x00binary\xff", "source")
    assert cache.load(KEY) == b"\x00binary\xff"
    assert not [p for p in tmp_path.rglob(".tmp-*")]


@pytest.mark.parametrize("damage", ["truncate", "flip", "magic", "empty", "huge_len", "append"])
def test_corrupt_or_short_file_is_a_miss(tmp_path: Path, damage: str) -> None:
    cache = DiskKernelCache(tmp_path)
    cache.save(KEY, b"binary-bytes" * 10, "source")
    path = cache.path_for(KEY)
    data = bytearray(path.read_bytes())
    if damage == "truncate":
        data = data[:-5]
    elif damage == "flip":
        data[-3] ^= 0x40
    elif damage == "magic":
        data[0] ^= 1
    elif damage == "empty":
        data = bytearray()
    elif damage == "huge_len":
        data[40:48] = (2**63).to_bytes(8, "little")
    else:
        data += b"x"
    path.write_bytes(bytes(data))
    assert cache.load(KEY) is None


def test_bad_key_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        DiskKernelCache(tmp_path).load("../../etc/passwd")


def _unwritable(tmp_path: Path) -> DiskKernelCache:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    return DiskKernelCache(blocker)


def test_save_failure_warns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HURRAY_GPU_CACHE_FATAL", raising=False)
    with pytest.warns(CacheWarning, match="building uncached"):
        _unwritable(tmp_path).save(KEY, b"x", "s")


def test_save_failure_raises_when_fatal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hurray_gpu.runtime.cache import CacheError

    monkeypatch.setenv("HURRAY_GPU_CACHE_FATAL", "1")
    with pytest.raises(CacheError, match="Fix:"):
        _unwritable(tmp_path).save(KEY, b"x", "s")


def test_unreadable_record_warns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HURRAY_GPU_CACHE_FATAL", raising=False)
    cache = DiskKernelCache(tmp_path)
    path = cache.path_for(KEY)
    path.mkdir(parents=True)  # a directory where the record should be: open() fails
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert cache.load(KEY) is None
    assert any(issubclass(w.category, CacheWarning) for w in seen)


def test_default_cache_honours_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HURRAY_GPU_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HURRAY_GPU_NO_CACHE", raising=False)
    cache = default_cache("opencl")
    assert isinstance(cache, DiskKernelCache) and cache.root == tmp_path / "opencl"
    monkeypatch.setenv("HURRAY_GPU_NO_CACHE", "1")
    assert isinstance(default_cache("opencl"), NullKernelCache)
    assert os.environ["HURRAY_GPU_NO_CACHE"] == "1"


def _toolchain_fresh() -> Any:
    from hurray_gpu.backends import hostcc

    hostcc.probe.cache_clear()
    return hostcc


def test_toolchain_identity_is_cached_on_disk_keyed_by_the_binary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Finding the compiler's version, OpenMP support and native flags runs it three times;
    # a warm process start must not. A changed binary (here: its mtime) asks again.
    import shutil
    import subprocess

    from hurray_gpu import config

    real = config.c_compiler()
    if real is None:
        pytest.fail("no C compiler: install gcc (ci/install.sh does)")
    cc = tmp_path / "bin" / "cc"
    cc.parent.mkdir()
    shutil.copy2(os.path.realpath(real), cc)
    monkeypatch.setenv("HURRAY_GPU_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HURRAY_GPU_NO_CACHE", raising=False)
    hostcc = _toolchain_fresh()
    first = hostcc.probe((str(cc),), "PATH")
    assert first.version and isinstance(first.openmp, bool)
    assert first == hostcc.probe((str(cc),), "PATH")
    assert list((tmp_path / "cache" / "cpu").rglob("*.bin"))

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"compiler run: {args[0]}")

    monkeypatch.setattr(subprocess, "run", refuse)
    assert _toolchain_fresh().probe((str(cc),), "PATH") == first  # from disk, no subprocess
    st = os.stat(cc)
    os.utime(cc, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    with pytest.raises(AssertionError, match="compiler run"):
        _toolchain_fresh().probe((str(cc),), "PATH")
    _toolchain_fresh()


def test_renderer_digest_is_kept_and_follows_an_edited_file(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The renderer's digest keys every rendered kernel; a warm start takes it from the disk
    cache under the files' sizes and times, and an edit (same size, new time) hashes again."""
    import types

    import blake3

    from hurray_gpu.runtime import device as device_mod

    src = tmp_path / "dialect"
    src.mkdir()
    (src / "__init__.py").write_text("A = 1\n")
    (src / "render.py").write_text("B = 2\n")
    (src / "notes.txt").write_text("not a source\n")
    monkeypatch.setattr(device_mod, "dialect", types.SimpleNamespace(__file__=str(src / "__init__.py")))
    monkeypatch.setenv("HURRAY_GPU_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HURRAY_GPU_NO_CACHE", raising=False)
    digest = device_mod._renderer_digest.__wrapped__
    assert digest() == blake3.blake3(b"A = 1\nB = 2\n").hexdigest()
    assert len(list((tmp_path / "cache" / "render").rglob("*.bin"))) == 1
    assert digest() == blake3.blake3(b"A = 1\nB = 2\n").hexdigest()  # from the record
    (src / "render.py").write_text("B = 3\n")
    os.utime(src / "render.py", ns=(1, 1))
    assert digest() == blake3.blake3(b"A = 1\nB = 3\n").hexdigest()
