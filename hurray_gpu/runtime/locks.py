"""A lock that a garbage collection on its holder's thread cannot deadlock.

Python collects garbage cycles on whichever thread allocates (3.11: at a container's
allocation; 3.12+: between bytecodes), inside a locked section too, and a collected Buffer frees
its memory from its finaliser on that thread. Waiting there for a plain ``threading.Lock`` the
section holds never ends; an ``RLock`` would let the free into a half-changed section.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from typing import Any

from hurray_gpu.errors import HurrayGPUError

__all__ = ["OwnedLock"]

_ident = threading.get_ident


class OwnedLock:
    """A non-reentrant lock that records its holder and runs work deferred while held.

    Use it as a context manager, or :meth:`enter` / :meth:`release` where the caller may be a
    finaliser: :meth:`enter` returns False on the thread inside the section (the collection ran
    there), where waiting would never end, and the caller passes its work to :meth:`defer`.
    """

    __slots__ = ("pending", "raw", "owner")

    def __init__(self) -> None:
        # Public for the allocator's pool, which inlines enter and release (the two method
        # calls cost more than the lock itself on every pooled allocation and free).
        self.raw = threading.Lock()
        self.owner = 0  # thread ident of the holder, 0 when free
        self.pending: list[tuple[Callable[..., Any], tuple[Any, ...]]] = []

    def enter(self) -> bool:
        """Take the lock (waiting for another thread to release it) and return True; return
        False at once on the thread that already holds it, which must :meth:`defer` instead."""
        ident = _ident()
        if self.owner == ident:
            return False
        self.raw.acquire()
        self.owner = ident
        return True

    def release(self) -> None:
        """Release the lock, then run what finalisers deferred while it was held."""
        self.owner = 0
        self.raw.release()
        if self.pending:
            self.run_deferred()

    def __enter__(self) -> None:
        if not self.enter():  # would wait for itself forever: fail loudly instead
            raise HurrayGPUError(
                "a lock was taken again by the thread that holds it (it would wait forever)",
                fix="take it with enter() and pass the work to defer() when enter() is False.")

    def __exit__(self, *exc: object) -> None:
        self.release()

    def held_here(self) -> bool:
        """True when the calling thread holds the lock: a finaliser run by a collection inside
        the section, which must :meth:`defer` instead of acquiring."""
        return self.owner == _ident()

    def defer(self, fn: Callable[..., Any], *args: Any) -> None:
        """Call ``fn(*args)`` once the holder releases the lock (only while :meth:`held_here`:
        the holder's thread is the one appending, so nothing is lost between check and append).
        """
        self.pending.append((fn, args))

    def run_deferred(self) -> None:
        """Run the deferred calls (by :meth:`release`, once the lock is free)."""
        # Outside the section, on the holder's thread. A deferred call may take the lock again
        # and defer more (a collection inside it): the loop runs those too.
        while self.pending:
            try:
                fn, args = self.pending.pop(0)
            except IndexError:  # another thread's release ran it meanwhile
                return
            try:
                fn(*args)
            except Exception as exc:  # noqa: BLE001 - a finaliser's error: reported, never raised
                # into the unrelated section that happened to run the collection.
                warnings.warn(f"a release deferred from a garbage collection failed: {exc!r}",
                              RuntimeWarning, stacklevel=2)
