"""Typed errors raised by the vyre NumPy reference interpreter.

Every message ends with a ``Fix:`` hint; all classes derive from :class:`HurrayGPUError`.
"""

from __future__ import annotations

from hurray_gpu.errors import HurrayGPUError


class VyreReferenceError(HurrayGPUError):
    """Base class of every reference-interpreter error."""

    default_fix = "repair the program or its inputs as the message says."


class ReferenceExecutionError(VyreReferenceError, RuntimeError):
    """The program did something the reference interpreter defines as an error at run time.

    Examples: i32 division by zero, mismatched operand types, a shadowed ``Let``, a barrier
    under a non-uniform ``If``, ``Trap``, an unresolved ``Call``.
    """

    default_fix = "guard the failing operation or repair the program before running it."


class ReferenceInputError(VyreReferenceError, ValueError):
    """The inputs, grid or options given to :func:`vyre.reference.run` are unusable."""

    default_fix = "pass one byte blob per input buffer in declaration order (or by name)."


class ReferenceLimitError(VyreReferenceError, RuntimeError):
    """A resource bound was hit: too many steps, too much memory or too deep an expression."""

    default_fix = "raise max_steps / max_buffer_bytes, or shrink the dispatch."


class StepLimitExceeded(ReferenceLimitError):
    """The dispatch needed more than ``max_steps`` lane steps (a runaway or hostile program)."""

    default_fix = "raise max_steps if the program is expected to run this long."


__all__ = [
    "ReferenceExecutionError", "ReferenceInputError", "ReferenceLimitError", "StepLimitExceeded",
    "VyreReferenceError",
]
