#!/usr/bin/env bash
# Runs the whole test suite (no GPU needed). This is the test command of the README.
# Then the backend tier once more with the debug canary allocator on (HURRAY_GPU_DEBUG_BOUNDS=1):
# any out-of-bounds kernel write on cpu, pocl or lavapipe raises BoundsViolation there.
# pytest exits 5 when it collected no test: that is a failure here, as is any failed test.
# CI=true always: a missing backend (pocl, lavapipe) or peer (torch, gguf, NVRTC...) fails the
# run instead of skipping, and Hypothesis replays the same examples every run.
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=ci/python.sh
source ci/python.sh
export CI=true

"$PYTHON" -m pytest -q -n 2 -m "not gpu" "$@"
status=$?
if [ "$status" -eq 5 ]; then
  echo "ci/test.sh: no test ran; failing." >&2
  exit 1
fi
HURRAY_GPU_DEBUG_BOUNDS=1 "$PYTHON" -m pytest -q -n 2 -m "not gpu" tests/backend
bounds=$?
if [ "$bounds" -eq 5 ]; then
  echo "ci/test.sh: no backend test ran with HURRAY_GPU_DEBUG_BOUNDS=1; failing." >&2
  exit 1
fi
if [ "$status" -ne 0 ]; then
  exit "$status"
fi
exit "$bounds"
