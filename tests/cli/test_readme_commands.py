"""The ``hurray-gpu`` commands in README.md run as written (bench is covered by its own test)."""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from hurray_gpu.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]


def readme_commands() -> list[list[str]]:
    """Every ``hurray-gpu`` line of the README's first bash block after the CLI heading."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("### The `hurray-gpu` command", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None
    lines = [line.split("#", 1)[0].strip() for line in block.group(1).splitlines()]
    return [shlex.split(line)[1:] for line in lines if line.startswith("hurray-gpu ")]


def listed_subcommands() -> set[str]:
    """The subcommands the CLI section's bash blocks show (the first block's lines run below;
    the next block's ``serve`` runs until stopped, so tests/net covers it)."""
    section = (ROOT / "README.md").read_text(encoding="utf-8").split(
        "### The `hurray-gpu` command", 1)[1].split("\n## ", 1)[0]
    lines = [line.strip() for block in re.findall(r"```bash\n(.*?)```", section, re.S)
             for line in block.splitlines()]
    return {shlex.split(line)[1] for line in lines if line.startswith("hurray-gpu ")}


def test_readme_lists_every_subcommand() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert listed_subcommands() == set(sub.choices) == {
        "devices", "demo", "inspect", "materialize", "convert", "export", "vyre", "bench", "cache",
        "serve", "get"}


def test_readme_commands_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture) -> None:
    monkeypatch.chdir(tmp_path)
    for argv in readme_commands():
        if argv[0] == "bench":
            continue
        argv = [str(ROOT / a) if a.startswith("tests/") else a for a in argv]
        code = main(argv)
        captured = capsys.readouterr()
        assert code == 0, (argv, captured.out[-2000:], captured.err[-2000:])
    assert (tmp_path / "w.npy").stat().st_size > 0
