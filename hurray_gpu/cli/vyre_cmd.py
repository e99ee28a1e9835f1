"""``hurray-gpu vyre inspect PROG.vir`` and ``hurray-gpu vyre run PROG.vir --inputs ...``.

The two subcommands live in vyre.cli, which ``python -m vyre`` registers too: ``run`` executes
the program on the vyre reference interpreter, or with ``--device D`` lowered and launched on
that device, and says which one ran.
"""

from __future__ import annotations

from typing import Any

from hurray_gpu.cli.common import show
from vyre.cli import add_commands

__all__ = ["add_parser"]


def add_parser(sub: Any) -> None:
    """Register ``vyre inspect`` and ``vyre run``."""
    p = sub.add_parser("vyre", help="inspect or run a vyre VIR0 program", description=__doc__)
    # Text reports go through show(): wrapped to the terminal like every hurray-gpu command.
    add_commands(p.add_subparsers(dest="vyre_command", required=True, metavar="SUBCOMMAND"),
                 show=show)
