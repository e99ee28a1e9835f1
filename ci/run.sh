#!/usr/bin/env bash
# The CI entry point: install, lint, type check, line budget, then the test suite (the same command as the
# README). Fails when any test fails and when no test ran.
set -euo pipefail
cd "$(dirname "$0")/.."

bash ci/install.sh
PYTHON="${PYTHON:-python3}"

echo "== ruff"
"$PYTHON" -m ruff check hurray_gpu vyre tests bench ci examples fuzz
echo "== mypy"
"$PYTHON" -m mypy
echo "== line budget"
"$PYTHON" ci/linecount.py

echo "== tests"
bash ci/test.sh
