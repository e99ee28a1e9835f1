"""Kernel bodies composed from checked pieces: no kernel is made by editing another's text.

A :class:`Piece` is portable-subset text with named holes ``$name``, filled (:meth:`Piece.fill`)
with other pieces or with expressions. :func:`compose` checks a finished composition in the
order a compiler reads it, naming the piece at fault:

- every hole is filled (a missing piece is an error; fill with ``""`` for none);
- every name a piece uses is a kernel parameter or was declared before, in an enclosing scope;
- no declaration reuses a visible name (no shadowing: a piece can neither capture nor hide
  another piece's variable);
- every name in a piece's ``defines`` is declared at its top level, for the pieces after it.

A hole alone on its line takes statements. Any other hole takes an expression, parenthesised
when it is more than one token and the hole is not delimited by ``( , = return`` before and
``) , ;`` after.
"""

from __future__ import annotations

import functools
import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Union

from hurray_gpu.dialect.kernel import KernelDef, Param
from hurray_gpu.errors import UnsupportedOpError

__all__ = ["Piece", "compose", "compose_kernel"]

_TOKEN = re.compile(r"//[^\n]*|\$[a-z_][a-z0-9_]*|[A-Za-z_]\w*|\d[\w.]*|\S")
_KEYWORDS = frozenset({"if", "else", "for", "while", "do", "break", "continue", "return",
                       "true", "false", "u32", "i32", "f32", "bool"})
_TYPES = frozenset({"u32", "i32", "f32", "bool"})
_OPEN = frozenset({"(", ",", "=", "return"})
_CLOSE = frozenset({")", ",", ";"})
# First characters of tokens that never matter to scopes: numbers and operators.
_SKIP = frozenset("0123456789+-*/%<>=!&|^~?:,.")

Filler = Union["Piece", str]
# (token, the piece it comes from, names that piece promises; only on a piece's end marker)
_Tok = tuple[str, str, tuple[str, ...]]


@dataclass(frozen=True)
class _Hole:
    name: str
    word: int  # its index among the template's words
    statement: bool  # alone on its line
    delimited: bool  # between ( , = return and ) , ;
    start: int  # where its text (statement: its line) starts and ends
    end: int
    indent: str


@functools.cache
def _template(raw: str) -> tuple[tuple[str, ...], tuple[_Hole, ...], str]:
    """The words of ``raw`` (comments dropped), its holes and its dedented text (which the
    holes' positions refer to)."""
    text = textwrap.dedent(raw).strip("\n")
    matches = [m for m in _TOKEN.finditer(text) if not m.group(0).startswith("//")]
    words = tuple(m.group(0) for m in matches)
    holes = []
    for k, m in enumerate(matches):
        if words[k][0] != "$":
            continue
        line = text.rfind("\n", 0, m.start()) + 1
        line_end = text.find("\n", m.end()) + 1 or len(text)
        statement = not text[line:m.start()].strip() and not text[m.end():line_end].strip()
        delimited = (k and words[k - 1] in _OPEN) and (k + 1 < len(words)
                                                        and words[k + 1] in _CLOSE)
        holes.append(_Hole(words[k][1:], k, statement, bool(delimited),
                           line if statement else m.start(), line_end if statement else m.end(),
                           text[line:m.start()]))
    return words, tuple(holes), text


@dataclass(frozen=True)
class Piece:
    """Body text with ``$holes``; what it declares at top level is visible to what follows."""

    name: str  # what error messages call it
    text: str  # portable-subset statements, or an expression, with ``$name`` holes
    defines: tuple[str, ...] = ()  # names it promises to declare at its top level (checked)
    fills: tuple[tuple[str, Filler], ...] = ()  # the holes filled so far (see :meth:`fill`)

    @functools.cached_property
    def holes(self) -> tuple[str, ...]:
        """The open (unfilled) holes of the text, in first-use order."""
        done = dict(self.fills)
        return tuple(dict.fromkeys(h.name for h in _template(self.text)[1]
                                   if h.name not in done))

    def fill(self, **fills: Filler) -> Piece:
        """A copy with ``fills`` in its holes.

        Raises:
            UnsupportedOpError: a name that is not an open hole of this piece.
        """
        for hole in fills:
            if hole not in self.holes:
                raise UnsupportedOpError(
                    f"piece {self.name!r} has no open hole ${hole} (holes: {self.holes})",
                    fix="fill only the holes the piece's text has, each once.")
        return Piece(self.name, self.text, self.defines, (*self.fills, *fills.items()))

    def calls(self) -> frozenset[str]:
        """The intrinsics (``NAME(``) its own text calls; fills are not included."""
        words = _template(self.text)[0]
        return frozenset(w for w, nxt in zip(words, (*words[1:], ""), strict=True)
                         if nxt == "(" and w.isupper())

    def _filled(self) -> dict[str, Filler]:
        if self.holes:
            raise UnsupportedOpError(
                f"piece {self.name!r} is missing the pieces for {['$' + h for h in self.holes]}",
                fix="fill every hole of the piece (with \"\" for none).")
        return dict(self.fills)

    def _emit(self, out: list[_Tok]) -> None:
        """Append the composed tokens, each with the piece it comes from, and after the piece a
        marker (an empty token) carrying its ``defines``."""
        fills = self._filled()
        words, holes, _ = _template(self.text)
        word = 0
        for hole in holes:
            out.extend((w, self.name, ()) for w in words[word:hole.word])
            word = hole.word + 1
            filler = fills[hole.name]
            wrap = _wraps(hole, filler)
            out.extend([("(", self.name, ())] * wrap)
            if isinstance(filler, Piece):
                filler._emit(out)
            else:
                out.extend((w, f"{self.name} ${hole.name}", ()) for w in _template(filler)[0])
            out.extend([(")", self.name, ())] * wrap)
        out.extend((w, self.name, ()) for w in words[word:])
        out.append(("", self.name, self.defines))

    @functools.cached_property
    def _text(self) -> str:
        """The text with every hole filled."""
        fills = self._filled()
        _, holes, own = _template(self.text)
        out: list[str] = []
        pos = 0
        for hole in holes:
            filler = fills[hole.name]
            text = filler._text if isinstance(filler, Piece) else _template(filler)[2]
            out.append(own[pos:hole.start])
            pos = hole.end
            if not hole.statement:
                out.append(f"({text})" if _wraps(hole, filler) else text)
            elif text:  # an empty filler leaves no line either
                lines = (hole.indent + line if line else line for line in text.split("\n"))
                out.append("\n".join(lines) + "\n" * own[hole.start:hole.end].endswith("\n"))
        return "".join([*out, own[pos:]])


def _wraps(hole: _Hole, filler: Filler) -> bool:
    """Whether ``filler`` needs parentheses in ``hole``: an expression of several tokens."""
    text = filler._text if isinstance(filler, Piece) else filler
    return not hole.statement and not hole.delimited and len(_template(text)[0]) > 1


def _error(kernel: str, message: str) -> UnsupportedOpError:
    return UnsupportedOpError(f"kernel {kernel}: {message}", fix="declare each name once, in "
                              "the piece that computes it, before the pieces that use it.")


def compose(kernel: str, piece: Piece, names: Iterable[str]) -> str:
    """Check ``piece`` as the body of ``kernel`` (``names``: its parameters and arrays) and
    return the body text.

    Raises:
        UnsupportedOpError: a missing piece, a name used before it is declared, a name
            declared twice in view of each other, a broken ``defines`` promise or unbalanced
            braces.
    """
    tokens: list[_Tok] = []
    piece._emit(tokens)
    # No name is declared twice in view, so one dict holds what is visible; each scope lists
    # the names it declared, dropped when it closes.
    visible = dict.fromkeys(names, "a parameter")
    scopes: list[list[str]] = [[]]
    kinds: list[tuple[str, int]] = [("top", 0)]
    depth = 0

    def close() -> None:
        for name in scopes.pop():
            del visible[name]
        kinds.pop()

    words = [t[0] for t in tokens]
    words.append("")
    for k, tok in enumerate(words[:-1]):
        first = tok[:1]
        if first in _SKIP:
            continue
        if first.isalpha() or first == "_":
            if tok == "for":
                scopes.append([])
                kinds.append(("for", depth))
            elif tok in _KEYWORDS or words[k + 1] == "(":
                continue
            elif words[k - 1] in _TYPES:
                if tok in visible:
                    raise _error(kernel, f"piece {tokens[k][1]!r} declares {tok!r}, which "
                                 f"{visible[tok]} already declares in view")
                visible[tok] = f"piece {tokens[k][1]!r}"
                scopes[-1].append(tok)
            elif tok not in visible:
                raise _error(kernel, f"piece {tokens[k][1]!r} uses {tok!r}, which no piece "
                             "before it declares")
        elif tok == "(":
            depth += 1
        elif tok == ")":
            depth -= 1
            if kinds[-1] == ("for", depth):
                kinds[-1] = ("for{" if words[k + 1] == "{" else "for;", depth)
        elif tok == "{":
            scopes.append([])
            kinds.append(("{", depth))
        elif tok == "}":
            if len(scopes) == 1:
                raise _error(kernel, f"piece {tokens[k][1]!r} closes a brace it did not open")
            close()
            while kinds[-1][0] == "for{":
                close()
        elif tok == ";":
            while kinds[-1] == ("for;", depth):
                close()
        elif not tok and not set(tokens[k][2]) <= set(scopes[-1]):
            missing = sorted(set(tokens[k][2]) - set(scopes[-1]))
            raise _error(kernel, f"piece {tokens[k][1]!r} promises {missing} but does not "
                         "declare them at its top level")
    if len(scopes) != 1:
        raise _error(kernel, "unbalanced braces")
    return piece._text


def compose_kernel(piece: Piece, *, name: str, params: tuple[Param, ...],
                   **fields: Any) -> KernelDef:
    """The KernelDef whose body is ``piece``, checked by :func:`compose` against its
    parameters and private/shared arrays; ``fields`` are KernelDef's other fields."""
    arrays = [a[0] for a in (*fields.get("private", ()), *fields.get("shared", ()))]
    body = compose(name, piece, [p.name for p in params] + arrays)
    return KernelDef(name=name, params=params, body=body, **fields)
