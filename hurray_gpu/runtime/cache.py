"""Kernel caches: a bounded in-memory LRU and an atomic, hash-prefixed on-disk store.

A cache failure warns and the caller builds uncached, unless ``HURRAY_GPU_CACHE_FATAL=1``.
"""

from __future__ import annotations

import os
import struct
import tempfile
import threading
import warnings
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import Generic, TypeVar

import blake3

from hurray_gpu import config
from hurray_gpu.errors import HurrayGPUError

__all__ = [
    "CACHE_FORMAT_VERSION",
    "CacheWarning",
    "DiskKernelCache",
    "KernelCacheBackend",
    "LRUCache",
    "NullKernelCache",
    "default_cache",
    "make_cache_key",
    "report_cache_failure",
]

# Bump when the on-disk record layout changes; it is also hashed into every key.
CACHE_FORMAT_VERSION = 1
_MAGIC = b"HGKC\x00\x00\x00\x01"
_HEADER = struct.Struct("<8s32sQQ")  # magic, blake3(rest), binary length, source length
# A compiled kernel larger than this is not a kernel; refuse to read it into memory.
MAX_BINARY_BYTES = 256 * 1024 * 1024
MAX_SOURCE_BYTES = 16 * 1024 * 1024

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


class DiskKernelCache(KernelCacheBackend):
    """Binaries in ``<root>/<key[:2]>/<key>.bin``, written atomically, checked on load.

    Record layout: magic, blake3 of the rest, binary length, source length, binary, source.
    A missing, short, oversized or corrupt record is a miss; I/O errors go through
    :func:`report_cache_failure`.

    Args:
        root: the cache directory (created on first save).
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

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


def default_cache(backend: str) -> KernelCacheBackend:
    """The configured disk cache for ``backend`` (a subfolder of ``HURRAY_GPU_CACHE_DIR``).

    Args:
        backend: the backend name, e.g. ``"opencl"``.

    Returns:
        A :class:`NullKernelCache` when ``HURRAY_GPU_NO_CACHE=1``, else a
        :class:`DiskKernelCache`.
    """
    if config.no_cache():
        return NullKernelCache()
    return DiskKernelCache(config.cache_dir() / backend)
