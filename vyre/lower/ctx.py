"""Lowering state: emitted lines, fresh temporaries and the lexical scopes of vyre locals."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from vyre.lower.errors import unsupported

__all__ = ["Ctx", "Local", "Value", "ctype", "sanitize"]

# The dynamic value kinds the lowering tracks (the reference's Value tags it supports).
KINDS = ("u32", "i32", "f32", "bool")
_NON_WORD = re.compile(r"[^a-z0-9]+")


def sanitize(name: str, limit: int = 16) -> str:
    """A lowercase identifier fragment of ``name`` with no double underscore."""
    text = _NON_WORD.sub("_", name.lower()).strip("_")[:limit].strip("_")
    return text or "x"


def ctype(kind: str) -> str:
    """The subset type holding a value of ``kind`` (raw bytes live zero-extended in a u32)."""
    return "u32" if kind == "bytes" else kind


@dataclass(frozen=True)
class Value:
    """A lowered expression: subset text and its kind (``u32``, ``i32``, ``f32``, ``bool``)."""

    text: str
    kind: str


@dataclass(frozen=True)
class Local:
    """A vyre local bound in the body: its subset name, kind and mutability."""

    name: str
    kind: str
    mutable: bool


@dataclass
class Ctx:
    """Mutable state of one lowering.

    Attributes:
        lines: emitted body lines.
        depth: current indentation depth.
        scopes: stack of ``{vyre name: Local}``.
        buffers: vyre buffer name -> (param name, length text, element kind, writable).
        workgroup_size: the program's workgroup shape.
        needs_trap: the body writes the trap flag.
    """

    buffers: dict[str, tuple[str, str, str, bool]]
    workgroup_size: tuple[int, int, int]
    lines: list[str] = field(default_factory=list)
    depth: int = 1
    scopes: list[dict[str, Local]] = field(default_factory=lambda: [{}])
    needs_trap: bool = False
    features: set[str] = field(default_factory=set)
    # Workgroup-uniformity: locals that may differ across lanes, read-only buffers, and a
    # stack saying whether the current control flow is uniform.
    nonuniform: set[str] = field(default_factory=set)
    read_only: set[str] = field(default_factory=set)
    flow: list[bool] = field(default_factory=lambda: [True])
    _counter: int = 0

    def emit(self, line: str) -> None:
        """Append one body line at the current depth."""
        self.lines.append("    " * (self.depth - 1) + line)

    def fresh(self, hint: str = "t") -> str:
        """A new unique subset identifier."""
        self._counter += 1
        return f"{hint}{self._counter}"

    def temp(self, kind: str, text: str) -> Value:
        """Bind ``text`` to a new temporary of ``kind`` and return it."""
        name = self.fresh("t")
        self.emit(f"{ctype(kind)} {name} = {text};")
        return Value(name, kind)

    def open(self, header: str) -> None:
        """Emit ``header {`` and enter a new scope."""
        self.emit(f"{header} {{".lstrip())
        self.depth += 1
        self.scopes.append({})

    def close(self, trailer: str = "}") -> None:
        """Leave the current scope and emit ``trailer``."""
        self.scopes.pop()
        self.depth -= 1
        self.emit(trailer)

    def lookup(self, name: str) -> Local:
        """The visible binding of vyre local ``name``.

        Raises:
            UnsupportedOpError: the name is not bound (the validator rejects this).
        """
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise unsupported(f"read of unbound local {name!r}", "bind it with Let first.")

    def bind(self, name: str, kind: str, mutable: bool = True) -> Local:
        """Declare vyre local ``name`` in the current scope."""
        local = Local(self.fresh(f"l_{sanitize(name)}_"), kind, mutable)
        self.scopes[-1][name] = local
        return local

    def buffer(self, name: str) -> tuple[str, str, str, bool]:
        """(param, length text, element kind, writable) of a storage buffer.

        Raises:
            UnsupportedOpError: unknown buffer.
        """
        entry = self.buffers.get(name)
        if entry is None:
            raise unsupported(f"access to unknown buffer {name!r}", "declare the buffer.")
        return entry
