"""Errors of the lowering path: refusals (UnsupportedOpError) and device-side traps."""

from __future__ import annotations

from hurray_gpu.errors import UnsupportedOpError
from vyre.reference.semantics import ReferenceExecutionError

__all__ = ["TrapError", "UnsupportedOpError", "unsupported"]


class TrapError(ReferenceExecutionError):
    """A lowered program hit a construct the reference aborts on (i32 division by zero,
    ``MIN / -1``, a ``Trap`` node); the device set the trap flag and the outputs are void."""


def unsupported(what: str, fix: str) -> UnsupportedOpError:
    """An UnsupportedOpError naming the construct that cannot be lowered exactly."""
    return UnsupportedOpError(f"vyre lowering: {what}", fix=fix)
