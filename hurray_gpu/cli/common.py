"""Helpers shared by the subcommands: one-line errors, JSON output and aligned text tables."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hurray_gpu.errors import HurrayGPUError

__all__ = ["check_overwrite", "dump_json", "format_table", "one_line"]


def check_overwrite(out: str, force: bool) -> None:
    """Raise unless ``out`` may be written: it does not exist, or ``force`` (``--force``)."""
    if not force and Path(out).exists():
        raise HurrayGPUError(f"{out} exists", fix="pass --force to replace it, or choose "
                             "another output path.")


def one_line(text: str) -> str:
    """Collapse a (possibly multi-line) message to one line."""
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def dump_json(data: Any) -> str:
    """Indented JSON; values JSON cannot hold (paths, numpy scalars) become strings."""
    return json.dumps(data, indent=2, default=_plain)


def _plain(value: Any) -> Any:
    item = getattr(value, "item", None)
    if callable(item):
        return item()
    return str(value)


def format_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Left-aligned text columns, with numbers right-aligned.

    Args:
        header: column titles.
        rows: one sequence of cells per row (same length as ``header``).

    Returns:
        The table, header and a rule line first.
    """
    cells = [[str(c) for c in header]] + [[_cell(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    numeric = [all(_is_number(row[i]) for row in rows) and rows for i in range(len(header))]
    lines = []
    for r in cells:
        parts = [c.rjust(w) if numeric[i] else c.ljust(w)
                 for i, (c, w) in enumerate(zip(r, widths, strict=True))]
        lines.append("  ".join(parts).rstrip())
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 0.01 and value else f"{value:,.2f}"
    return str(value)
