#!/usr/bin/env bash
# The core test tier on the other supported Pythons (3.10 and 3.13; ci/test.sh runs the whole
# suite on the main Python, 3.11). Per version: a virtual environment under /tmp (kept between
# runs, so a rerun only checks it), the package installed into it as a user installs it
# (`pip install ".[dev,opencl,vulkan,webgpu]"`, not editable), and the core tests run there with
# deprecation warnings from the project's own code as errors.
#
# The core tests need no peer: no torch, JAX, bitsandbytes, gguf... (those wheels do not exist
# for every Python, and the main tier checks against them). HURRAY_GPU_TEST_TIER=core makes a
# test that needs a peer skip instead of failing under CI=true; a missing backend (cpu, pocl,
# lavapipe) still fails. The interpreters come from pyenv (`pyenv root`/versions/3.10.*), or
# python3.10 / python3.13 on PATH; under CI=true a missing one fails the run.
# HURRAY_GPU_CORE_PYTHONS overrides the versions ("3.10 3.13"); arguments go to pytest.
set -uo pipefail
cd "$(dirname "$0")/.."

VERSIONS="${HURRAY_GPU_CORE_PYTHONS:-3.10 3.13}"
# A cross-section that stays a few minutes long: the import graph, kernel renderings and the
# compile cache; the descriptor, stream, .hrry, pickle and protocol codecs; vyre's codec,
# reference interpreter and lowering known answers; the docs (README tour and every page's
# examples, the API reference build, the troubleshooting messages); the error hierarchy; and on
# every backend the DLPack capsules (ctypes over the C API), transfers and round trips.
CORE_TESTS=(tests/null/test_layers.py tests/null/test_packaging.py tests/null/test_renderer.py
            tests/null/test_cache.py tests/null/test_registry.py tests/null/test_sync_host.py
            tests/null/test_error_fix_hints.py tests/null/test_gc_reentry.py
            tests/hurray/test_descriptor_codec.py tests/hurray/test_golden_descriptors.py
            tests/hurray/test_dtypes.py tests/hurray/test_packing.py tests/hurray/test_hrry.py
            tests/hurray/test_stream.py tests/hurray/test_pickle.py tests/hurray/test_tensor.py
            tests/hurray/test_protocol.py tests/hurray/test_cli.py
            tests/vyre/test_vyre_golden.py tests/vyre/test_vyre_api.py tests/vyre/test_vyre_cli.py
            tests/vyre/test_reference_kat.py tests/vyre/test_lower_kat.py
            tests/docs tests/test_errors.py
            tests/backend/test_dlpack_host.py tests/backend/test_dlpack_capsule.py
            tests/backend/test_tensor_to.py tests/backend/test_roundtrip.py)

find_python() {
  local version="$1" root found
  if command -v pyenv >/dev/null 2>&1; then
    root="$(pyenv root)"
    found="$(ls -d "$root"/versions/"$version".*/bin/python"$version" 2>/dev/null | sort -V | tail -n 1)"
    [ -n "$found" ] && { echo "$found"; return 0; }
  fi
  command -v "python$version"
}

# One kernel cache for every version and run (compiled kernels do not depend on the Python), so
# the second version and later runs load what the first compiled.
export HURRAY_GPU_CACHE_DIR="${HURRAY_GPU_CACHE_DIR:-${TMPDIR:-/tmp}/hurray_gpu-core-cache}"
status=0
for version in $VERSIONS; do
  python="$(find_python "$version")"
  if [ -z "$python" ]; then
    if [ "${CI:-}" = "true" ]; then
      echo "ci/core.sh: no Python $version found. Fix: pyenv install $version (CI's machine has it)." >&2
      status=1
    else
      echo "ci/core.sh: no Python $version found; skipping it (CI=true fails here)."
    fi
    continue
  fi
  venv="${TMPDIR:-/tmp}/hurray_gpu-core-py$version"
  echo "== core tier on $("$python" --version) ($venv)"
  start=$SECONDS
  if ! { [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"; } ||
     ! "$venv/bin/python" -m pip install -q --disable-pip-version-check ".[dev,opencl,vulkan,webgpu]"; then
    echo "ci/core.sh: could not set up Python $version in $venv" >&2
    status=1
    continue
  fi
  echo "   installed in $((SECONDS - start)) s"
  # Deselected: the NVRTC compile checks (the nvrtc wheels are a peer here) and the 256 MiB and
  # every-code round trips (minutes of CPU that test no Python-version-dependent code).
  CI=true HURRAY_GPU_TEST_TIER=core "$venv/bin/python" -m pytest -q -n 2 -m "not gpu" \
    -p no:cacheprovider -W "error::DeprecationWarning" "${CORE_TESTS[@]}" \
    -k "not nvrtc and not 256_mib and not round_trip_codes" "$@"
  code=$?
  if [ "$code" -eq 5 ]; then
    echo "ci/core.sh: no test ran on Python $version; failing." >&2
    code=1
  fi
  echo "   Python $version: exit $code in $((SECONDS - start)) s"
  [ "$code" -ne 0 ] && status=$code
done
exit "$status"
