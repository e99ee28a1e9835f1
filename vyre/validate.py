"""The vyre program validator: ``vyre_foundation::validate::validate`` ported to Python.

``validate(program)`` returns every finding as a :class:`Diagnostic` with the reference's rule
code (V008-V130, as vyre 0.7.2's validator numbers them); ``raise_on_error=True`` raises
:class:`ValidationError`.
"""

from __future__ import annotations

from typing import Any

from hurray_gpu.errors import HurrayGPUError
from vyre.ir import Program
from vyre.validate_nodes import Walker
from vyre.validate_ops import OpParam, OpSignature, lookup_op, register_op, unregister_op
from vyre.validate_program import check_linear_types, check_program, check_shape_predicates
from vyre.validate_report import ERROR, WARNING, Diagnostic, Sink, ValidationOptions
from vyre.validate_stmts import visit

DEFAULT_OPTIONS = ValidationOptions()
_RAISE_FIX = "correct the program as each diagnostic's Fix: says, then validate again."


class ValidationError(HurrayGPUError, ValueError):
    """A program the validator rejects.

    Attributes:
        diagnostics: every finding (errors first-to-last in reference order, warnings included).
        errors: only the error-severity findings.
    """

    default_fix = _RAISE_FIX

    def __init__(self, message: str, *, diagnostics: tuple[Diagnostic, ...] = (),
                 fix: str | None = None) -> None:
        self.diagnostics = tuple(diagnostics)
        self.errors = tuple(d for d in self.diagnostics if d.is_error)
        super().__init__(message, fix=fix)
        self._args: tuple[Any, ...] = (message,)
        self._kwargs: dict[str, Any] = {"diagnostics": self.diagnostics, "fix": fix}


def validate(
    program: Program,
    *,
    raise_on_error: bool = False,
    options: ValidationOptions | None = None,
) -> list[Diagnostic]:
    """Validate ``program`` with the reference validator's rules.

    Args:
        program: the program to check.
        raise_on_error: raise :class:`ValidationError` when any error-severity diagnostic is
            found (warnings alone never raise).
        options: backend capabilities and shadowing policy; the default is the reference's
            ``ValidationOptions::default()`` (no subgroup ops, no collectives, no shadowing).

    Returns:
        All diagnostics in the reference's order: program-level rules, then the statement
        walk (pre-order), then V115, V070 and V083. An empty list means the program is valid.

    Raises:
        ValidationError: when ``raise_on_error`` is true and an error was found.
        TypeError: when ``program`` is not a :class:`vyre.ir.Program`.
    """
    if not isinstance(program, Program):
        raise TypeError(
            f"validate() needs a vyre Program, got {type(program).__name__}. "
            "Fix: decode bytes with vyre.from_wire() or build a Program first."
        )
    opts = DEFAULT_OPTIONS if options is None else options
    sink = Sink()
    buffers = check_program(program, sink)
    walker = Walker(buffers, opts, sink)
    walker.run(tuple(program.entry), visit)
    walker.report_self_exclusive()
    check_linear_types(program, sink)
    check_shape_predicates(program, sink)
    diagnostics = list(sink.items)
    if raise_on_error and any(d.is_error for d in diagnostics):
        raise _rejection(diagnostics)
    return diagnostics


def errors_of(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Only the error-severity diagnostics (what the reference's ``validate`` returns)."""
    return [d for d in diagnostics if d.is_error]


def _rejection(diagnostics: list[Diagnostic]) -> ValidationError:
    errors = errors_of(diagnostics)
    first = errors[0]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    head = first.message.split(" Fix: ", 1)[0]
    first_fix = first.message.split(" Fix: ", 1)[1] if " Fix: " in first.message else _RAISE_FIX
    message = f"IR validation rejected the program: {first.code} at {first.location}: {head}{more}"
    return ValidationError(message, diagnostics=tuple(diagnostics), fix=first_fix)


__all__ = [
    "DEFAULT_OPTIONS", "ERROR", "WARNING", "Diagnostic", "OpParam", "OpSignature",
    "ValidationError", "ValidationOptions", "errors_of", "lookup_op", "register_op",
    "unregister_op", "validate",
]
