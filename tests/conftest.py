"""Suite-wide test settings.

Under CI (``CI=true``, which ci/test.sh sets) Hypothesis runs derandomized: the same examples
every run, so a CI result is reproducible. Local runs keep exploring new examples.
"""

from __future__ import annotations

from hypothesis import settings

from tests._support import in_ci

settings.register_profile("ci", derandomize=True, print_blob=True)
if in_ci():
    settings.load_profile("ci")
