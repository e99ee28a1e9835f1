"""The error messages docs/troubleshooting.md quotes are the ones the code really raises.

A quoted message is a backticked span in the first column of a table, or one that starts with
an error class name and a colon; ``...`` stands for the parts the code fills in at run time.
Each literal piece must occur, in order, within one string of the sources (an f-string's
placeholders may sit between pieces, never inside one).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "troubleshooting.md"
SOURCES = [*sorted((ROOT / "hurray_gpu").rglob("*.py")), *sorted((ROOT / "vyre").rglob("*.py")),
           ROOT / "tests" / "backend" / "conftest.py"]
ERROR_PREFIX = re.compile(r"^[A-Z]\w*(Error|Violation): ")
ELISION = re.compile(r"\[\.\.\.\]|\.\.\.")


def quoted_messages(text: str) -> list[str]:
    """The messages the page quotes (see the module docstring)."""
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


def source_strings() -> list[str]:
    """Every string literal of the sources; an f-string's literal parts joined by NUL."""
    out = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                out.append(node.value)
            elif isinstance(node, ast.JoinedStr):
                out.append("\0".join(v.value if isinstance(v, ast.Constant) else ""
                                     for v in node.values))
    return out


def raised_somewhere(message: str, strings: list[str]) -> bool:
    pieces = [p.strip() for p in ELISION.split(message) if p.strip()]
    pattern = re.compile(".*?".join(re.escape(p) for p in pieces), re.S)
    return any(pattern.search(s) for s in strings)


def test_every_quoted_message_is_in_the_sources() -> None:
    messages = quoted_messages(DOC.read_text(encoding="utf-8"))
    assert len(messages) >= 12, messages
    strings = source_strings()
    missing = [m for m in messages if not raised_somewhere(m, strings)]
    assert not missing, f"troubleshooting.md quotes messages the code does not raise: {missing}"


def test_a_stale_quote_is_caught() -> None:
    strings = source_strings()
    assert raised_somewhere("device tag ... has no hurray_gpu backend", strings)
    assert not raised_somewhere("device tag ... has no backend at all", strings)
    assert not raised_somewhere("the Vulkan backend needs the vulkan package", strings)
