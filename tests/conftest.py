"""Suite-wide test settings.

Under CI (``CI=true``) Hypothesis runs derandomized: the same examples every run, so a CI
result is reproducible. Local runs keep exploring new examples.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    settings.load_profile("ci")
