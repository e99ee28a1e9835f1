"""Configuration: the only module that reads ``HURRAY_GPU_*`` environment variables (and the
few foreign ones hurray_gpu depends on, such as ``OMP_WAIT_POLICY``).

Values are read at call time so tests and subprocesses can change them without reloading.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from hurray_gpu.errors import UnsupportedOpError

__all__ = [
    "c_compiler",
    "c_compiler_setting",
    "cache_dir",
    "cache_fatal",
    "cache_max_bytes",
    "debug_bounds",
    "debug_level",
    "device_override",
    "no_cache",
    "omp_wait_policy",
    "pool_idle",
    "progress",
]


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def device_override() -> str | None:
    """The device spec in ``HURRAY_GPU_DEVICE`` (e.g. ``"opencl:0"``), or None when unset."""
    value = os.environ.get("HURRAY_GPU_DEVICE", "").strip()
    return value or None


def cache_dir() -> Path:
    """The on-disk kernel cache root: ``HURRAY_GPU_CACHE_DIR`` or ``~/.cache/hurray_gpu``."""
    value = os.environ.get("HURRAY_GPU_CACHE_DIR", "").strip()
    if value:
        return Path(value).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "hurray_gpu"


# The disk kernel cache's default size limit: far above the few MiB a session's kernels take,
# low enough that a cache left to grow for months (new drivers, new renderer versions: keys
# that never hit again) stays small next to what a GPU toolchain installs.
DEFAULT_CACHE_MAX_BYTES = 1 << 30
_SIZE_SUFFIXES = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def cache_max_bytes() -> int:
    """``HURRAY_GPU_CACHE_MAX_BYTES``: the disk kernel cache's size limit in bytes (default 1 GiB).

    Accepts a whole number with an optional binary suffix (``512M``, ``2G``, ``64KiB``); least
    recently used kernels are evicted beyond it.

    Raises:
        UnsupportedOpError: a value that is not a size >= 1 MiB.
    """
    raw = os.environ.get("HURRAY_GPU_CACHE_MAX_BYTES", "").strip()
    if not raw:
        return DEFAULT_CACHE_MAX_BYTES
    text = raw.lower().removesuffix("ib").removesuffix("b")
    digits, suffix = text.rstrip("kmgt"), text[len(text.rstrip("kmgt")):]
    if digits.isdigit() and suffix in _SIZE_SUFFIXES and len(digits) <= 15:
        value = int(digits) * _SIZE_SUFFIXES[suffix]
        if value >= 1 << 20:
            return value
    raise UnsupportedOpError(f"HURRAY_GPU_CACHE_MAX_BYTES={raw!r} is not a size of 1 MiB or more",
                             fix="set it to bytes or a size such as 512M or 2G, or unset it for "
                                 "the 1 GiB default.")


def cache_fatal() -> bool:
    """True when ``HURRAY_GPU_CACHE_FATAL=1``: cache failures raise instead of warning."""
    return _flag("HURRAY_GPU_CACHE_FATAL")


def no_cache() -> bool:
    """True when ``HURRAY_GPU_NO_CACHE=1``: the disk cache is neither read nor written."""
    return _flag("HURRAY_GPU_NO_CACHE")


def debug_level() -> int:
    """``HURRAY_GPU_DEBUG`` as an integer (0 when unset or not a number): the command line's
    default log level on stderr (1 info, 2 debug; the library itself only logs)."""
    try:
        return int(os.environ.get("HURRAY_GPU_DEBUG", "0"))
    except ValueError:
        return 0


def debug_bounds() -> bool:
    """True when ``HURRAY_GPU_DEBUG_BOUNDS=1``: allocators pad buffers with checked canaries.

    Each allocator reads it once, when its device is created (see :mod:`hurray_gpu.runtime.canary`).
    """
    return _flag("HURRAY_GPU_DEBUG_BOUNDS")


def pool_idle(default_bytes: int, default_seconds: float) -> tuple[int, float]:
    """``HURRAY_GPU_POOL_IDLE_BYTES`` and ``HURRAY_GPU_POOL_IDLE_SECONDS``: the pooled bytes a
    device keeps however long idle, and how long more may sit unused before it is freed.

    Raises:
        UnsupportedOpError: a value that is not a number >= 0.
    """
    found = []
    for name, default in (("HURRAY_GPU_POOL_IDLE_BYTES", default_bytes),
                          ("HURRAY_GPU_POOL_IDLE_SECONDS", default_seconds)):
        value = os.environ.get(name, "").strip()
        try:
            found.append(float(value) if value else default)
        except ValueError:
            found.append(-1.0)
        if not 0 <= found[-1] < float("inf"):
            raise UnsupportedOpError(f"{name}={value!r} is not a number >= 0",
                                     fix=f"set {name} to a number >= 0, or unset it for {default}.")
    return int(found[0]), found[1]


def c_compiler_setting() -> tuple[str, str] | None:
    """The C compiler a user named: ``("HURRAY_GPU_CC", value)``, else ``("CC", value)``;
    None when neither is set."""
    for name in ("HURRAY_GPU_CC", "CC"):
        value = os.environ.get(name, "").strip()
        if value:
            return name, value
    return None


def c_compiler() -> str | None:
    """The host C compiler: ``HURRAY_GPU_CC``, else ``CC``, else ``cc`` on PATH (None if none)."""
    named = c_compiler_setting()
    if named is not None:
        return shutil.which(named[1]) or (named[1] if Path(named[1]).is_file() else None)
    return shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def progress() -> bool | None:
    """``HURRAY_GPU_PROGRESS``: False for 0/false/no/off, True for 1/true/yes/on, else None.

    None (unset) means automatic: a bar for large transfers when stderr is a terminal.
    """
    value = os.environ.get("HURRAY_GPU_PROGRESS", "").strip().lower()
    if value in {"0", "false", "no", "off"}:
        return False
    if value in {"1", "true", "yes", "on"}:
        return True
    return None


def omp_wait_policy(default: str | None = None) -> str | None:
    """``OMP_WAIT_POLICY`` (``ACTIVE``/``PASSIVE``, as set), optionally defaulting it first.

    With ``default``, an unset variable is set to it (``os.environ.setdefault``), so that the
    OpenMP runtime, which reads the variable once when it is loaded, picks it up; a value the
    user set is never changed.

    Args:
        default: the policy to set when the variable is unset, or None to only read it.

    Returns:
        The value in effect for an OpenMP runtime loaded from now on, or None when unset.
    """
    if default is not None:
        return os.environ.setdefault("OMP_WAIT_POLICY", default)
    return os.environ.get("OMP_WAIT_POLICY")
