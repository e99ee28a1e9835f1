"""Scratch files for the path-only readers, on tmpfs (/dev/shm) when the machine has it."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

_DIR: list[str] = []


def scratch_dir() -> str:
    """A per-process scratch folder, removed at exit."""
    if not _DIR:
        base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        _DIR.append(tempfile.mkdtemp(prefix="hurray-fuzz-", dir=base))
        atexit.register(shutil.rmtree, _DIR[0], True)
    return _DIR[0]


def scratch_file(tag: str, payload: bytes) -> str:
    """Write ``payload`` to the scratch file ``tag`` and return its path.

    The file is replaced (new inode), never truncated in place, so a mapping still held from
    the previous input can never SIGBUS.
    """
    path = os.path.join(scratch_dir(), tag)
    with open(path + ".new", "wb") as handle:
        handle.write(payload)
    os.replace(path + ".new", path)
    return path
