#!/usr/bin/env bash
# Runs the whole test suite (no GPU needed). This is the test command of the README.
# pytest exits 5 when it collected no test: that is a failure here, as is any failed test.
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"

"$PYTHON" -m pytest -q -n 2 -m "not gpu" "$@"
status=$?
if [ "$status" -eq 5 ]; then
  echo "ci/test.sh: no test ran; failing." >&2
  exit 1
fi
exit "$status"
