"""``python -m vyre inspect PROG.vir`` and ``python -m vyre run PROG.vir ...`` (vyre.cli)."""

from __future__ import annotations

import sys

from vyre.cli import main

if __name__ == "__main__":
    sys.exit(main())
