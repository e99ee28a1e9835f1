"""Typed errors of the vyre wire codec.

``detail`` is vyre 0.7.2's inner message and ``vyre_text`` its exact ``IrError`` Display text,
for byte-for-byte comparison with vyre. vyre's Display appends a generic hint after the inner
message's own ``Fix:``; ``str(err)`` keeps one hint, the more specific one.
"""

from __future__ import annotations

from typing import Any

from hurray_gpu.errors import HurrayGPUError

_VALIDATION_FIX = (
    "Fix: recompile the frontend program set and ensure the compiler only emits valid "
    "instructions."
)
_VERSION_FIX = "Fix: re-encode with a matching vyre version or upgrade this runtime."
_VALIDATION_HEAD = "Wire-format validation failed"

# Category prefixes vyre puts at the start of its decoder messages (docs/vyre.md, "Errors").
_PREFIX_KINDS = (
    "TruncatedPayload", "InvalidDiscriminant", "IntegrityMismatch", "UnknownOp",
    "MagicMismatch", "UnknownSchemaVersion",
)


def classify_detail(detail: str) -> str:
    """The error kind for a vyre decoder/encoder message.

    Args:
        detail: the inner message (without the ``Wire-format validation failed`` wrapper).

    Returns:
        One of the vyre category prefixes, ``MagicMismatch`` for a bad header,
        ``TruncatedPayload`` for truncation, ``InvalidUtf8``, ``LimitExceeded``,
        ``InvalidDiscriminant`` for unknown tags, or ``Malformed`` for anything else.
    """
    for kind in _PREFIX_KINDS:
        if detail.startswith(kind + ":"):
            return kind
    if detail.startswith(("invalid IR wire-format header", "IR wire-format truncated")):
        return "MagicMismatch"
    if detail.startswith("truncated IR wire format"):
        return "TruncatedPayload"
    if "invalid UTF-8" in detail:
        return "InvalidUtf8"
    if "exceeds" in detail:
        return "LimitExceeded"
    if "unknown" in detail:
        return "InvalidDiscriminant"
    return "Malformed"


def one_fix(head: str, detail: str, fallback: str = _VALIDATION_FIX) -> str:
    """``head: cause. Fix: hint`` with one hint: the one in ``detail``, else ``fallback``.

    vyre writes some details as ``cause. Fix: hint`` and others as ``Fix: cause. hint`` (or
    ``Fix: cause; hint``); both come out as one cause and one hint.
    """
    cause, marker, hint = detail.partition("Fix:")
    cause, hint = cause.strip().rstrip("."), hint.strip()
    if marker and not cause:
        for sep in (". ", "; "):
            if sep in hint:
                cause, hint = hint.split(sep, 1)
                break
        else:
            cause, hint = hint.rstrip("."), ""
    hint = hint or fallback.removeprefix("Fix:").strip()
    prefix = f"{head}: " if head else ""
    return f"{prefix}{cause}. Fix: {hint if hint.endswith('.') else hint + '.'}"


class WireFormatError(HurrayGPUError, ValueError):
    """Base of every VIR0 codec error.

    Attributes:
        kind: the error category (``TruncatedPayload``, ``InvalidDiscriminant``, ...).
        detail: the reference decoder's inner message.
        vyre_text: vyre 0.7.2's Display text for this error, generic hint included.
    """

    def __init__(self, kind: str, detail: str, *, message: str | None = None) -> None:
        self.kind = kind
        self.detail = detail
        self.vyre_text = message if message is not None else f"{detail}. {_VALIDATION_FIX}"
        if message is None:
            shown = one_fix("", detail)
        elif message == f"{_VALIDATION_HEAD}: {detail}. {_VALIDATION_FIX}":
            shown = one_fix(_VALIDATION_HEAD, detail)
        else:
            shown = message
        super().__init__(shown)
        self._args: tuple[Any, ...] = (kind, detail)
        self._kwargs: dict[str, Any] = {"message": message}


class VersionMismatchError(WireFormatError):
    """The header's version is outside 4..=6 (vyre ``IrError::VersionMismatch``)."""

    def __init__(self, expected: int, found: int) -> None:
        self.expected = expected
        self.found = found
        super().__init__(
            "UnknownSchemaVersion",
            f"IR wire-format version {found} is not supported",
            message=(
                f"Wire-format version mismatch: expected {expected}, found {found}. "
                f"{_VERSION_FIX}"
            ),
        )
        self._args = (expected, found)
        self._kwargs = {}


class WireValidationError(WireFormatError):
    """Malformed or hostile bytes (vyre ``IrError::WireFormatValidation``).

    ``vyre_text`` is ``Wire-format validation failed: {detail}. Fix: ...`` as vyre prints it;
    ``str(err)`` is the same with one ``Fix:`` (see :func:`one_fix`).
    """

    def __init__(self, detail: str, kind: str | None = None) -> None:
        super().__init__(
            kind or classify_detail(detail),
            detail,
            message=f"{_VALIDATION_HEAD}: {detail}. {_VALIDATION_FIX}",
        )
        self._args = (detail,)
        self._kwargs = {"kind": kind}


class EncodeError(WireValidationError):
    """A program the reference encoder refuses (``Program::to_wire`` error)."""

    def __init__(self, detail: str, kind: str | None = None) -> None:
        super().__init__(detail, kind or "EncodeRefused")


class UnknownExtensionError(WireValidationError):
    """An Opaque expression/node kind with no registered decoder.

    Attributes:
        extension_kind: the unregistered extension kind string.
        surface: ``"expr"`` or ``"node"``.
    """

    def __init__(self, kind: str, surface: str = "expr") -> None:
        self.extension_kind = kind
        self.surface = surface
        resolver = "OpaqueNodeResolver" if surface == "node" else "OpaqueExprResolver"
        super().__init__(
            f"Fix: no {resolver} registered for extension kind `{kind}`. Link the crate that "
            f"owns this extension and ensure it submits `inventory::submit! {{ {resolver} "
            "{ kind, deserialize } }`.",
            "UnknownExtension",
        )
        self._args = (kind, surface)
        self._kwargs = {}


__all__ = [
    "EncodeError", "UnknownExtensionError", "VersionMismatchError", "WireFormatError",
    "WireValidationError", "classify_detail", "one_fix",
]
