"""Line budget gate: no module over the per-file cap, and the package total under budget.

Counts non-blank, non-comment lines (tinygrad's sz.py idea). Prints the largest files on failure.
"""

from __future__ import annotations

import sys
from pathlib import Path

PER_FILE_CAP = 450
TOTAL_BUDGET = 40_000
PACKAGES = ("hurray_gpu", "vyre")


def count(path: Path) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return sum(1 for line in lines if line.strip() and not line.strip().startswith("#"))


def main() -> int:
    root = Path(__file__).resolve().parent.parent
    sizes = {p.relative_to(root): count(p) for pkg in PACKAGES for p in (root / pkg).rglob("*.py")}
    total = sum(sizes.values())
    over = {p: n for p, n in sizes.items() if n > PER_FILE_CAP}
    for path, n in sorted(over.items(), key=lambda kv: -kv[1]):
        print(f"linecount: {path} has {n} lines (cap {PER_FILE_CAP}); split it.")
    print(f"linecount: {len(sizes)} modules, {total} lines (budget {TOTAL_BUDGET}).")
    if total > TOTAL_BUDGET:
        print(f"linecount: over budget by {total - TOTAL_BUDGET} lines.")
    return 1 if over or total > TOTAL_BUDGET else 0


if __name__ == "__main__":
    sys.exit(main())
