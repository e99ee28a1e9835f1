"""No-device tests: keep any compile cache out of the user's home directory."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("HURRAY_GPU_CACHE_DIR", tempfile.mkdtemp(prefix="hurray_gpu_test_cache_"))
