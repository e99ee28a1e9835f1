"""Fuzz harnesses for every hurray_gpu / vyre decoder (see fuzz/README.md).

Run ``python -m fuzz --help``; ``ci/fuzz.sh`` drives the long atheris runs.
"""

from __future__ import annotations

HARNESS_NAMES = ("descriptor", "stream", "hrry", "vir0", "kv_import", "protocol", "convert")
