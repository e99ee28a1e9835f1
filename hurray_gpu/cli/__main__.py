"""``python -m hurray_gpu.cli``: the same as the ``hurray-gpu`` console script."""

from __future__ import annotations

import sys

from hurray_gpu.cli import main

sys.exit(main())
