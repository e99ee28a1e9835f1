"""Kernel caches: a bounded in-memory LRU and an atomic, hash-prefixed on-disk store whose
size is bounded by least-recently-used eviction.

A cache failure warns and the caller builds uncached, unless ``HURRAY_GPU_CACHE_FATAL=1``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import struct
import tempfile
import threading
import time
import warnings
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import blake3

from hurray_gpu import config
from hurray_gpu.errors import HurrayGPUError

__all__ = [
    "CACHE_FORMAT_VERSION",
    "CacheEntry",
    "CacheWarning",
    "DiskKernelCache",
    "KernelCacheBackend",
    "LRUCache",
    "NullKernelCache",
    "cache_entries",
    "cache_info",
    "clear_cache",
    "default_cache",
    "evict",
    "make_cache_key",
    "report_cache_failure",
]

log = logging.getLogger(__name__)

# Bump when the on-disk record layout changes; it is also hashed into every key.
CACHE_FORMAT_VERSION = 1
_MAGIC = b"HGKC\x00\x00\x00\x01"
_HEADER = struct.Struct("<8s32sQQ")  # magic, blake3(rest), binary length, source length
# A compiled kernel larger than this is not a kernel; refuse to read it into memory.
MAX_BINARY_BYTES = 256 * 1024 * 1024
MAX_SOURCE_BYTES = 16 * 1024 * 1024

# Eviction brings the cache down to this share of its limit, so that a cache at its limit is
# not scanned and trimmed again on every save.
EVICT_TO = 0.8
# A temporary record older than this belongs to a writer that died; eviction removes it.
STALE_TMP_SECONDS = 3600.0
_LOCK_NAME = ".evict.lock"
# Only files named like records are ever listed or removed: HURRAY_GPU_CACHE_DIR may point at
# a directory that holds other files too.
_RECORD = re.compile(r"[0-9a-f]{64}\.bin")

K = TypeVar("K")
V = TypeVar("V")


class CacheWarning(UserWarning):
    """A kernel cache could not be read or written; the kernel was built uncached."""


class CacheError(HurrayGPUError):
    """A kernel cache failure, raised only when ``HURRAY_GPU_CACHE_FATAL=1``."""

    default_fix = "check HURRAY_GPU_CACHE_DIR is writable, or unset HURRAY_GPU_CACHE_FATAL."


def report_cache_failure(what: str, exc: BaseException) -> None:
    """Warn about a cache failure, or raise :class:`CacheError` when it is configured fatal.

    Args:
        what: a short description of the failed operation.
        exc: the underlying exception.

    Raises:
        CacheError: when ``HURRAY_GPU_CACHE_FATAL=1``.
    """
    message = f"kernel cache {what} failed: {type(exc).__name__}: {exc}"
    if config.cache_fatal():
        raise CacheError(message) from exc
    warnings.warn(message + " (building uncached)", CacheWarning, stacklevel=3)


def make_cache_key(
    domain: str,
    source: str | bytes,
    options: Iterable[str] = (),
    compiler_version: str = "",
    device_identity: str = "",
) -> str:
    """Return the hex blake3 key of everything that changes a compiled binary.

    Each field is length-prefixed so that no two different inputs hash the same bytes.

    Args:
        domain: a domain string such as ``"hurray_gpu.opencl.kernel.v1"``.
        source: the kernel source text.
        options: compiler options; they are sorted, so their order does not matter.
        compiler_version: the compiler's version string.
        device_identity: the target (name, vendor, driver version or architecture).

    Returns:
        64 lowercase hex digits.
    """
    hasher = blake3.blake3()
    src = source.encode() if isinstance(source, str) else bytes(source)
    fields = [domain.encode(), src, "\x00".join(sorted(options)).encode(),
              compiler_version.encode(), device_identity.encode(),
              f"cache-format-{CACHE_FORMAT_VERSION}".encode()]
    for field in fields:
        hasher.update(struct.pack("<Q", len(field)))
        hasher.update(field)
    return hasher.hexdigest()


class LRUCache(Generic[K, V]):
    """A bounded least-recently-used map, safe to share between threads.

    Args:
        capacity: the most entries kept; the oldest is dropped beyond it.
    """

    def __init__(self, capacity: int = 256) -> None:
        if capacity < 1:
            raise ValueError(f"LRU capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self._items: OrderedDict[K, V] = OrderedDict()
        # get() reorders the map, so even readers race with an evicting put() without it.
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """Return the value for ``key`` (marking it recent), or None."""
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        """Store ``value``, evicting the least recently used entry beyond capacity."""
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items


class KernelCacheBackend(ABC):
    """Where compiled kernel binaries persist: two methods, ``load`` and ``save``."""

    @abstractmethod
    def load(self, key: str) -> bytes | None:
        """Return the binary stored under ``key``, or None on a miss (corrupt = miss)."""

    @abstractmethod
    def save(self, key: str, binary: bytes, source: str) -> None:
        """Store ``binary`` (compiled from ``source``) under ``key``."""


class NullKernelCache(KernelCacheBackend):
    """A cache that stores nothing (``HURRAY_GPU_NO_CACHE=1``)."""

    def load(self, key: str) -> bytes | None:
        return None

    def save(self, key: str, binary: bytes, source: str) -> None:
        return None


def _check_key(key: str) -> str:
    if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
        raise ValueError(f"cache key must be 64 lowercase hex digits, got {key!r}")
    return key


@dataclass(frozen=True)
class CacheEntry:
    """One record of a disk cache: its file, size and when it was last saved or loaded."""

    path: Path
    nbytes: int
    last_used: float


def cache_entries(root: str | os.PathLike[str]) -> list[CacheEntry]:
    """Every record under ``root`` (one backend's folder, or the whole cache directory).

    ``last_used`` is the file's modification time, which the cache itself sets on every save
    and every load (file systems mounted noatime or relatime do not keep access times).
    """
    out: list[CacheEntry] = []
    _scan(os.fspath(root), out, depth=2)
    return out


def _scan(folder: str, out: list[CacheEntry], depth: int) -> None:
    # Records sit at <backend>/<key[:2]>/<key>.bin: two folder levels at most under the root.
    try:
        entries = list(os.scandir(folder))
    except OSError:  # missing, or removed meanwhile
        return
    parent = os.path.basename(folder)
    for entry in entries:
        try:
            if depth and entry.is_dir(follow_symlinks=False):
                _scan(entry.path, out, depth - 1)
            elif _RECORD.fullmatch(entry.name) and entry.name[:2] == parent:
                st = entry.stat(follow_symlinks=False)
                out.append(CacheEntry(Path(entry.path), st.st_size, st.st_mtime))
        except FileNotFoundError:  # evicted meanwhile
            continue


def cache_info(root: str | os.PathLike[str]) -> dict[str, Any]:
    """Entries and bytes of the disk cache under ``root``, in all and per backend folder."""
    backends: dict[str, dict[str, int]] = {}
    for e in cache_entries(root):
        row = backends.setdefault(e.path.relative_to(root).parts[0], {"entries": 0, "bytes": 0})
        row["entries"] += 1
        row["bytes"] += e.nbytes
    return {"location": str(root), "entries": sum(b["entries"] for b in backends.values()),
            "bytes": sum(b["bytes"] for b in backends.values()),
            "backends": dict(sorted(backends.items()))}


def clear_cache(root: str | os.PathLike[str]) -> tuple[int, int]:
    """Remove every record under ``root``; returns (entries, bytes) removed.

    Only files named like records are removed; a record another process is loading stays
    readable to it (POSIX unlink), and one saved meanwhile may survive.
    """
    entries, nbytes = 0, 0
    for e in cache_entries(root):
        with contextlib.suppress(FileNotFoundError):
            e.path.unlink()
            entries, nbytes = entries + 1, nbytes + e.nbytes
    log.info("cleared %d kernel cache entries (%d bytes) under %s", entries, nbytes, root)
    return entries, nbytes


@contextlib.contextmanager
def _evict_lock(root: Path) -> Iterator[None]:
    """Hold ``root``'s eviction lock: one process at a time scans and trims, and the next one
    scans what the last left (so the cache ends under its limit, not twice trimmed)."""
    try:
        import fcntl
    except ImportError:  # no flock: evictions may overlap, which only removes a little more
        yield
        return
    fd = os.open(root / _LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _remove_stale_tmp(root: Path) -> None:
    cutoff = time.time() - STALE_TMP_SECONDS
    for path in root.rglob(".tmp-*.bin"):
        with contextlib.suppress(OSError):
            if path.stat().st_mtime < cutoff:
                path.unlink()


def evict(root: str | os.PathLike[str], max_bytes: int) -> list[Path]:
    """Bound the disk cache under ``root`` to ``max_bytes``: when it holds more, remove the
    least recently used records until it holds at most ``EVICT_TO`` of the limit.

    Safe with several processes: one evicts at a time (a lock file beside the records), and
    a record removed under a reader is a miss for it, never a wrong binary.

    Returns:
        The records removed.

    Raises:
        OSError: the lock file cannot be created (the caller reports it as a cache failure).
    """
    root = Path(root)
    removed: list[Path] = []
    with _evict_lock(root):
        entries = cache_entries(root)
        total = sum(e.nbytes for e in entries)
        if total <= max_bytes:
            return removed
        goal = int(max_bytes * EVICT_TO)
        for e in sorted(entries, key=lambda e: e.last_used):
            if total <= goal:
                break
            try:
                e.path.unlink()
            except FileNotFoundError:
                pass
            except OSError as exc:
                report_cache_failure(f"eviction of {e.path}", exc)
                continue
            total -= e.nbytes
            removed.append(e.path)
        _remove_stale_tmp(root)
    log.info("kernel cache over %d bytes: evicted %d least recently used entries, %d bytes "
             "left", max_bytes, len(removed), total)
    return removed


class DiskKernelCache(KernelCacheBackend):
    """Binaries in ``<root>/<key[:2]>/<key>.bin``, written atomically, checked on load.

    Record layout: magic, blake3 of the rest, binary length, source length, binary, source.
    A missing, short, oversized or corrupt record is a miss; I/O errors go through
    :func:`report_cache_failure`. Every load that hits sets the record's modification time
    (its last use); a save that takes the cache under ``limit_root`` past ``max_bytes`` evicts
    the least recently used records (:func:`evict`).

    Args:
        root: the cache directory (created on first save).
        max_bytes: the size limit (None: unbounded).
        limit_root: the directory whose total the limit bounds (default ``root``); the default
            cache bounds the whole ``HURRAY_GPU_CACHE_DIR``, all backends together.
    """

    def __init__(self, root: str | os.PathLike[str], max_bytes: int | None = None,
                 limit_root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root)
        self.max_bytes = max_bytes
        self.limit_root = Path(limit_root) if limit_root is not None else self.root

    def path_for(self, key: str) -> Path:
        """Return the file that holds ``key``."""
        key = _check_key(key)
        return self.root / key[:2] / f"{key}.bin"

    def load(self, key: str) -> bytes | None:
        path = self.path_for(key)
        try:
            with open(path, "rb") as handle:
                head = handle.read(_HEADER.size)
                if len(head) < _HEADER.size:
                    return None
                magic, digest, nbin, nsrc = _HEADER.unpack(head)
                if magic != _MAGIC or nbin > MAX_BINARY_BYTES or nsrc > MAX_SOURCE_BYTES:
                    return None
                rest = handle.read(nbin + nsrc + 1)
        except FileNotFoundError:
            return None
        except OSError as exc:
            report_cache_failure(f"load of {path}", exc)
            return None
        if len(rest) != nbin + nsrc or blake3.blake3(rest).digest() != digest:
            return None
        # The last use, for eviction; a read-only or meanwhile evicted record keeps its time.
        with contextlib.suppress(OSError):
            os.utime(path)
        return rest[:nbin]

    def save(self, key: str, binary: bytes, source: str) -> None:
        path = self.path_for(key)
        src = source.encode()
        if len(binary) > MAX_BINARY_BYTES or len(src) > MAX_SOURCE_BYTES:
            return
        rest = bytes(binary) + src
        record = _HEADER.pack(_MAGIC, blake3.blake3(rest).digest(), len(binary), len(src)) + rest
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".bin")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(record)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            report_cache_failure(f"save to {path}", exc)
            return
        if self.max_bytes is not None:
            try:
                evict(self.limit_root, self.max_bytes)
            except OSError as exc:
                report_cache_failure(f"eviction under {self.limit_root}", exc)


def default_cache(backend: str) -> KernelCacheBackend:
    """The configured disk cache for ``backend`` (a subfolder of ``HURRAY_GPU_CACHE_DIR``).

    Args:
        backend: the backend name, e.g. ``"opencl"``.

    Returns:
        A :class:`NullKernelCache` when ``HURRAY_GPU_NO_CACHE=1``, else a
        :class:`DiskKernelCache` bounded (all backends together) by
        ``HURRAY_GPU_CACHE_MAX_BYTES``.
    """
    if config.no_cache():
        return NullKernelCache()
    root = config.cache_dir()
    return DiskKernelCache(root / backend, config.cache_max_bytes(), limit_root=root)
