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

# Each tier is bounded as a whole too (tests/conftest.py's watchdog bounds each test): a hang
# outside any test (a worker that never exits) ends the tier with pytest's stacks (SIGABRT:
# faulthandler prints them) and fails it, well inside CI's own limit. Five times the usual.
tier() {
  local limit="$1"
  shift
  timeout --signal=ABRT --kill-after=30 "$limit" "$PYTHON" "$@"
  local rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "ci/test.sh: the tier ran past ${limit} s and was ended (stacks above); failing." >&2
  fi
  return "$rc"
}

tier "${HURRAY_GPU_TIER_TIMEOUT:-2400}" -m pytest -q -n 2 -m "not gpu" "$@"
status=$?
if [ "$status" -eq 5 ]; then
  echo "ci/test.sh: no test ran; failing." >&2
  exit 1
fi
HURRAY_GPU_DEBUG_BOUNDS=1 tier "${HURRAY_GPU_TIER_TIMEOUT:-1200}" -m pytest -q -n 2 -m "not gpu" \
  tests/backend
bounds=$?
if [ "$bounds" -eq 5 ]; then
  echo "ci/test.sh: no backend test ran with HURRAY_GPU_DEBUG_BOUNDS=1; failing." >&2
  exit 1
fi
if [ "$status" -ne 0 ]; then
  exit "$status"
fi
exit "$bounds"
