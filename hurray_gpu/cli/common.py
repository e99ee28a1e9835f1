"""Helpers shared by the subcommands: one-line errors, JSON output, name lists, and rich tables
and text sized to the terminal."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console, RenderableType
from rich.table import Table

from hurray_gpu.errors import HurrayGPUError

__all__ = ["check_overwrite", "console", "dump_json", "listing", "one_line", "render_text", "show",
           "table"]

# Names an error message lists before it says how many more there are.
LISTED_NAMES = 8


def check_overwrite(out: str, force: bool) -> None:
    """Raise unless ``out`` may be written: it does not exist, or ``force`` (``--force``)."""
    if not force and Path(out).exists():
        raise HurrayGPUError(f"{out} exists", fix="pass --force to replace it, or choose "
                             "another output path.")


def one_line(text: str) -> str:
    """Collapse a (possibly multi-line) message to one line."""
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def listing(names: Iterable[Any], limit: int = LISTED_NAMES) -> str:
    """``a, b, c`` for up to ``limit`` names, then ``and N more`` (a list never stops silently)."""
    items = [str(n) for n in names]
    shown = ", ".join(items[:limit]) or "nothing"
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def dump_json(data: Any) -> str:
    """Indented JSON; values JSON cannot hold (paths, numpy scalars) become strings."""
    return json.dumps(data, indent=2, default=_plain)


def _plain(value: Any) -> Any:
    item = getattr(value, "item", None)
    if callable(item):
        return item()
    return str(value)


def console(stderr: bool = False, width: int | None = None) -> Console:
    """A rich Console on stdout (or stderr), as wide as the terminal.

    Its width is ``width``, else ``COLUMNS`` when set, else the terminal's, else 80 (piped
    output). Text is printed as it is: no markup (names such as ``[int4]`` stay), no
    highlighting, no emoji codes.
    """
    return Console(file=sys.stderr if stderr else sys.stdout, width=width, markup=False,
                   highlight=False, emoji=False)


def table(header: Sequence[str], rows: Iterable[Sequence[Any]], title: str | None = None
          ) -> Table:
    """A table whose cells wrap to fit the console; number columns are right-aligned.

    Args:
        header: column titles (each column has one).
        rows: one sequence of cells per row (same length as ``header``).
        title: shown above the table, left-aligned.

    Raises:
        ValueError: a column without a header (every column says what it holds).
    """
    if not all(str(h).strip() for h in header):
        raise ValueError(f"every table column needs a header, got {list(header)}")
    raw = [list(row) for row in rows]
    out = Table(box=box.SIMPLE_HEAD, title=title, title_justify="left", pad_edge=False,
                show_edge=False, title_style="bold")
    for i, name in enumerate(header):
        numeric = bool(raw) and all(_is_number(row[i]) for row in raw)
        out.add_column(name, justify="right" if numeric else "left", overflow="fold")
    for row in raw:
        out.add_row(*(_cell(c) for c in row))
    return out


def show(*parts: RenderableType, stderr: bool = False) -> None:
    """Print tables and text to stdout (or stderr), wrapped to the console's width."""
    stream = sys.stderr if stderr else sys.stdout
    stream.write(render_text(*parts, stderr=stderr))


def render_text(*parts: RenderableType, width: int | None = None, stderr: bool = False) -> str:
    """Tables and text as the console would print them (``width``: as :func:`console`),
    without the spaces rich pads lines with."""
    out = console(stderr, width)
    with out.capture() as captured:
        for part in parts:
            out.print(part)
    return "".join(line.rstrip() + "\n" for line in captured.get().splitlines())


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 0.01 and value else f"{value:,.2f}"
    return str(value)
