#!/usr/bin/env bash
# Long coverage-guided fuzzing (atheris / libFuzzer) of every decoder harness in fuzz/, then
# the KV-cache soak (tests/backend/test_kv_cache_soak.py) at full length, then the soft-f64
# operations against NumPy on millions of operands (tests/null/test_softf64.py) and every
# correctly rounded function on webgpu's emulated f64 (SOFTF64_ALL=1).
#
#   ci/fuzz.sh [--minutes N] [--jobs J] [--soak-ops K] [HARNESS ...]
#     (default: 5 minutes, all harnesses, 100000 soak operations per run; --soak-ops 0: none)
#
# Each harness runs N minutes (J harnesses at a time, default: the core count). The corpus
# grows in fuzz/corpus/<harness>/ (gitignored), seeded from fuzz/seeds.py and from the saved
# regression inputs. Every crash, timeout or OOM input is copied to
# tests/fuzz/regressions/<harness>/, where tests/fuzz/test_regressions.py replays it; the script
# then exits 1. Set FUZZ_TRACEMALLOC=0 to drop the exact per-input memory check (about 2x
# faster; the -rss_limit_mb guard stays). FUZZ_TIMEOUT (seconds, default 10) is libFuzzer's
# per-input timeout: raise it on a machine shared with other work, where a starved process
# can miss 10 s without any input being slow.
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

MINUTES=5
SOAK_OPS=100000
JOBS="$(nproc 2>/dev/null || echo 2)"
HARNESSES=()
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) MINUTES="$2"; shift 2 ;;
    --jobs) JOBS="$2"; shift 2 ;;
    --soak-ops) SOAK_OPS="$2"; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) HARNESSES+=("$1"); shift ;;
  esac
done
# Default: every harness fuzz/__init__.py registers (descriptor stream hrry vir0 kv_import protocol).
[ ${#HARNESSES[@]} -eq 0 ] && read -r -a HARNESSES < <("$PYTHON" -c \
  "from fuzz import HARNESS_NAMES; print(*HARNESS_NAMES)")
if [ ${#HARNESSES[@]} -eq 0 ]; then
  echo "ci/fuzz.sh: cannot list the harnesses (python -c 'import fuzz' failed)." >&2
  exit 2
fi
if ! "$PYTHON" -c "import atheris" 2>/dev/null; then
  echo "ci/fuzz.sh: atheris is not installed (pip install atheris)." >&2
  exit 2
fi

# Runs one harness for MINUTES; restarts libFuzzer after each crash until the time is spent
# (at most 10 restarts, so one shallow bug cannot eat the whole run).
fuzz_one() {
  local h="$1" corpus="fuzz/corpus/$h" seeds="fuzz/corpus/$h-seeds" art="fuzz/artifacts/$h/"
  local regress="tests/fuzz/regressions/$h" deadline=$(( $(date +%s) + MINUTES * 60 ))
  mkdir -p "$corpus" "$art" "$regress"
  "$PYTHON" -m fuzz seeds "$h" "$seeds" >/dev/null || return 2
  local restarts=0 left
  while left=$(( deadline - $(date +%s) )); [ "$left" -gt 5 ] && [ "$restarts" -le 10 ]; do
    "$PYTHON" -m fuzz atheris "$h" "$corpus" "$seeds" "$regress" \
      -max_total_time="$left" -max_len=65536 -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 \
      -malloc_limit_mb=1024 -artifact_prefix="$art" -print_final_stats=1 \
      >>"fuzz/artifacts/$h.log" 2>&1 && break
    restarts=$(( restarts + 1 ))
  done
  grep -E '^(#[0-9]+ +DONE|Done [0-9]+ runs)' "fuzz/artifacts/$h.log" | tail -1 | sed "s/^/$h: /"
}

rm -f fuzz/artifacts/*.log
running=0
for h in "${HARNESSES[@]}"; do
  fuzz_one "$h" &
  running=$(( running + 1 ))
  if [ "$running" -ge "$JOBS" ]; then wait -n; running=$(( running - 1 )); fi
done
wait

# The soak the suite runs short (2000 operations): here at full length, CI=true as in CI.
soak=0
if [ "$SOAK_OPS" -gt 0 ]; then
  echo "ci/fuzz.sh: KV-cache soak, $SOAK_OPS operations per run"
  CI=true HURRAY_GPU_SOAK_OPS="$SOAK_OPS" "$PYTHON" -m pytest -q -p no:cacheprovider \
    tests/backend/test_kv_cache_soak.py || soak=1
fi

# The soft-f64 operations (WGSL's f64, hurray_gpu/dialect/softf64.py) against NumPy's float64 on
# SOFTF64_N (default 4 million) operand pairs per operation; the suite runs 60000.
softf64=0
echo "ci/fuzz.sh: soft-f64 operations, ${SOFTF64_N:-4000000} operands each"
SOFTF64_N="${SOFTF64_N:-4000000}" "$PYTHON" -m pytest -q -p no:cacheprovider \
  tests/null/test_softf64.py || softf64=1

# The correctly rounded functions on emulated f64 (webgpu:0), every one and every vyre op:
# the suite runs a few there (tests/_crmath.py EMULATED_CI); lavapipe compiling all of them
# takes about 70 s of CPU time (9 minutes of wall time on a 2-CPU machine at load average 10).
crmath=0
echo "ci/fuzz.sh: every correctly rounded function on emulated f64 (webgpu)"
SOFTF64_ALL=1 CI=true "$PYTHON" -m pytest -q -p no:cacheprovider -k webgpu \
  tests/backend/test_crmath.py tests/vyre/test_lower_crmath.py || crmath=1

found=0
for h in "${HARNESSES[@]}"; do
  for f in fuzz/artifacts/"$h"/crash-* fuzz/artifacts/"$h"/timeout-* fuzz/artifacts/"$h"/oom-*; do
    [ -f "$f" ] || continue
    case "$f" in *.saved) continue ;; esac  # handled by an earlier run
    cp "$f" "tests/fuzz/regressions/$h/$(basename "$f")"
    mv "$f" "$f.saved"
    echo "ci/fuzz.sh: $h: saved $(basename "$f") as a regression input" >&2
    found=$(( found + 1 ))
  done
done
if [ "$found" -gt 0 ]; then
  echo "ci/fuzz.sh: $found failing input(s) saved under tests/fuzz/regressions/;" \
       "replay: python -m pytest tests/fuzz/test_regressions.py" >&2
  exit 1
fi
if [ "$soak" -ne 0 ]; then
  echo "ci/fuzz.sh: the KV-cache soak failed ($SOAK_OPS operations); replay:" \
       "HURRAY_GPU_SOAK_OPS=$SOAK_OPS python -m pytest tests/backend/test_kv_cache_soak.py" >&2
  exit 1
fi
if [ "$softf64" -ne 0 ]; then
  echo "ci/fuzz.sh: a soft-f64 operation differs from NumPy; replay:" \
       "SOFTF64_N=${SOFTF64_N:-4000000} python -m pytest tests/null/test_softf64.py" >&2
  exit 1
fi
if [ "$crmath" -ne 0 ]; then
  echo "ci/fuzz.sh: a correctly rounded function differs on webgpu; replay: SOFTF64_ALL=1" \
       "python -m pytest -k webgpu tests/backend/test_crmath.py tests/vyre/test_lower_crmath.py" >&2
  exit 1
fi
echo "ci/fuzz.sh: no failures in ${MINUTES} minute(s) per harness; soak passed ($SOAK_OPS ops)."
