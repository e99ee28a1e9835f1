#!/usr/bin/env bash
# The CI entry point: install, lint, type check, line budget, then the test suite (the same command as the
# README), then the core tier on Python 3.10 and 3.13. Fails when any test fails and when no
# test ran.
set -euo pipefail
cd "$(dirname "$0")/.."

bash ci/install.sh
# shellcheck source=ci/python.sh
source ci/python.sh

echo "== ruff"
"$PYTHON" -m ruff check hurray_gpu vyre tests bench ci examples fuzz
echo "== mypy"
"$PYTHON" -m mypy
echo "== line budget"
"$PYTHON" ci/linecount.py

echo "== tests"
bash ci/test.sh

echo "== core tier on the other Pythons"
bash ci/core.sh
