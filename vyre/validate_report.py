"""Diagnostics, options and the collecting sink shared by the vyre validator modules."""

from __future__ import annotations

from dataclasses import dataclass, field

from vyre.ir import DataType

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One validator finding.

    Attributes:
        code: the reference rule code (``"V105"``, ``"V041"``, ...).
        severity: ``"error"`` or ``"warning"`` (only V035 is a warning).
        message: what is wrong; ends with a ``Fix:`` hint.
        location: path of the offending statement or declaration, e.g. ``"entry[0].body[3]"``,
            ``"buffers[2]"``, ``"workgroup_size[0]"``, or ``"entry"`` / ``"program"``.
        node: pre-order index of the statement (the reference's ``Node(n)`` /
            ``Expression { node: n }``); for V105 the reference's traversal ordinal (the index
            of the offending top-level node, 0 for an empty entry); None for the other
            program-level findings.
        expr_path: path of the offending sub-expression inside that statement, e.g.
            ``"value.args[4]"``; empty when the finding is about the statement itself.
        phase: the reference's validation phase (Program, Node, Expression, Type, Memory,
            Limits, Composition).
    """

    code: str
    severity: str
    message: str
    location: str
    node: int | None = None
    expr_path: str = ""
    phase: str = "Program"

    @property
    def is_error(self) -> bool:
        """True for errors, False for warnings."""
        return self.severity == ERROR

    def __str__(self) -> str:
        where = self.location + (f" ({self.expr_path})" if self.expr_path else "")
        return f"{self.code} {self.severity} at {where}: {self.message}"


@dataclass(frozen=True, slots=True)
class ValidationOptions:
    """The reference's ``ValidationOptions``; the defaults are ``ValidationOptions::default()``.

    Attributes:
        allow_shadowing: nested Let/loop names may shadow outer ones (V008 off; V032 stays).
        subgroup_ops: the backend supports subgroup expressions (V041 off).
        distributed_collectives: the backend supports collective nodes (V046 capability off).
        cast_targets: when not None, the backend's supported cast targets (V034 otherwise).
    """

    allow_shadowing: bool = False
    subgroup_ops: bool = False
    distributed_collectives: bool = False
    cast_targets: frozenset[DataType] | None = None


@dataclass(slots=True)
class Where:
    """Where the walk currently is: statement path, its pre-order index, expression path."""

    location: str
    node: int | None = None
    expr_path: str = ""

    def at(self, label: str) -> Where:
        """The same statement, one expression field deeper."""
        path = f"{self.expr_path}.{label}" if self.expr_path else label
        return Where(self.location, self.node, path)


@dataclass(slots=True)
class Sink:
    """Collects diagnostics in the order the reference reports them."""

    items: list[Diagnostic] = field(default_factory=list)

    def error(self, code: str, phase: str, where: Where, cause: str, fix: str) -> None:
        """Record an error; the message is ``cause. Fix: fix``."""
        self._add(code, ERROR, phase, where, cause, fix)

    def warning(self, code: str, phase: str, where: Where, cause: str, fix: str) -> None:
        """Record a warning."""
        self._add(code, WARNING, phase, where, cause, fix)

    def _add(self, code: str, severity: str, phase: str, where: Where, cause: str,
             fix: str) -> None:
        message = f"{cause.rstrip('.')}. Fix: {fix}"
        self.items.append(
            Diagnostic(code, severity, message, where.location, where.node, where.expr_path,
                       phase)
        )
