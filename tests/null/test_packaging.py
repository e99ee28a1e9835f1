"""Packaging metadata has one source: pyproject.toml's version is hurray_gpu.__version__, the
license text is Apache-2.0's and the changelog names the version."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import hurray_gpu as hg

ROOT = Path(__file__).resolve().parents[2]
# sha256 of the Apache License 2.0 text as the ASF publishes it (LICENSE-2.0.txt)
APACHE_2_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"


def _pyproject_version() -> str:
    found = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert found
    return found.group(1)


def test_version_comes_from_the_package_metadata() -> None:
    assert hg.__version__ == metadata.version("hurray_gpu") == _pyproject_version()
    assert "__version__" in hg.__all__ and "__version__" in dir(hg)


def test_import_does_not_read_the_metadata() -> None:
    # importlib.metadata costs milliseconds: read on first access of __version__ only
    code = ("import sys, hurray_gpu; assert 'importlib.metadata' not in sys.modules; "
            "print(hurray_gpu.__version__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == _pyproject_version()


def test_license_changelog_and_classifiers() -> None:
    assert hashlib.sha256((ROOT / "LICENSE").read_bytes()).hexdigest() == APACHE_2_SHA256
    assert f"## {_pyproject_version()}" in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    meta = metadata.metadata("hurray_gpu")
    classifiers = meta.get_all("Classifier") or []
    assert "License :: OSI Approved :: Apache Software License" in classifiers
    tested = {c.rsplit(" ", 1)[1] for c in classifiers if re.search(r"Python :: 3\.\d+$", c)}
    assert tested == {"3.10", "3.11", "3.13"}  # the versions CI runs (ci/test.sh, ci/core.sh)
