"""The error messages docs/troubleshooting.md quotes, as patterns a real message must match.

A quoted message is a backticked span in the first column of a table, or one in the prose that
starts with an error class name and a colon (or with ``CI=true but``); ``...`` and ``[...]``
stand for the parts the code fills in at run time. Tests that trigger a quoted case compare the
real message with :func:`doc_quote` of it, so a reworded message or a stale quote fails there.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "troubleshooting.md"
ERROR_PREFIX = re.compile(r"^[A-Z]\w*(Error|Violation): ")
ELISION = re.compile(r"\[\.\.\.\]|\.\.\.")


def quoted_messages(text: str) -> list[str]:
    """The messages the page quotes (see the module docstring), error class prefixes dropped."""
    out = []
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("|---"):
            first = line.split("|")[1]
            # `NAME: no` is a toolchain row of `hurray-gpu devices`, not a message
            out += [m for m in re.findall(r"`([^`]+)`", first) if not m.endswith(": no")]
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)  # code blocks hold no quotes
    flat = re.sub(r"\s*\n\s*", " ", prose)
    out += [m for m in re.findall(r"`([^`]+)`", flat) if ERROR_PREFIX.match(m)]
    out += [m for m in re.findall(r"`([^`]+)`", flat) if m.startswith("CI=true but")]
    return [ERROR_PREFIX.sub("", m) for m in out]


def pattern(message: str) -> re.Pattern[str]:
    """A quoted message as a regex: its literal pieces in order, anything in each elision."""
    pieces = [p.strip() for p in ELISION.split(message) if p.strip()]
    return re.compile(".*?".join(re.escape(p) for p in pieces), re.S)


@cache
def _quotes() -> tuple[str, ...]:
    return tuple(quoted_messages(DOC.read_text(encoding="utf-8")))


def doc_quote(fragment: str) -> re.Pattern[str]:
    """The pattern of the one quoted message that contains ``fragment`` (a test names the case
    it triggers by a piece of its quote: ``pytest.raises(E, match=doc_quote("outside its"))``).

    Raises:
        AssertionError: no quote, or more than one, contains ``fragment``.
    """
    found = [q for q in _quotes() if fragment in q]
    assert len(found) == 1, f"{fragment!r} is in {len(found)} quotes of {DOC.name}: {found}"
    return pattern(found[0])
