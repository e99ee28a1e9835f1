#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh Debian machine: the Debian packages (as
# root, or through sudo), then the package with its test extras into the active virtual
# environment, or into the Python that PYTHON names (CI: pyenv's). A system Python that refuses
# pip installs (PEP 668 "externally managed", as Debian's is) with no virtual environment active
# gets a new .venv here instead, which ci/test.sh then uses.
# Safe to run again: apt and pip skip what is already installed.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=ci/python.sh
source ci/python.sh

# hipcc + libamdhip64-dev: Debian 12's ROCm 5.2, whose hipRTC (inside libamdhip64) compiles every
# HIP rendering for gfx90a without a GPU (about 45 MiB downloaded, 180 MiB installed).
APT_PACKAGES=(pocl-opencl-icd ocl-icd-libopencl1 mesa-vulkan-drivers libvulkan1 glslang-tools gcc
              hipcc libamdhip64-dev)

# An externally managed Python needs a virtual environment, and Debian's needs python3-venv
# (ensurepip) to make one.
if externally_managed "$PYTHON" && ! "$PYTHON" -c "import ensurepip, venv" 2>/dev/null; then
  APT_PACKAGES+=(python3-venv)
fi

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "ci/install.sh: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if externally_managed "$PYTHON"; then
  echo "ci/install.sh: $PYTHON is externally managed (PEP 668): installing into .venv" \
       "(activate it with: . .venv/bin/activate)"
  [ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
  PYTHON=.venv/bin/python
fi
# The test extra (the dev tools and the peers), the OpenCL, Vulkan and WebGPU (wgpu) drivers' Python bindings,
# the pinned NVRTC wheels that let CI compile every CUDA rendering without a GPU, the bench
# extra (matplotlib for the report's plots; pyarrow, whose Arrow Flight is bench/transport.py's
# peer; Ray core, the object-store peer of bench/ipc.py) and the cpu extra (ziglang: zig cc, the
# cpu backend's compiler where no system cc is, tested with cc hidden by
# tests/test_cpu_without_cc.py).
"$PYTHON" -m pip install -q --disable-pip-version-check -e ".[test,opencl,vulkan,webgpu,nvrtc,bench,cpu]"
# Under pyenv a new console script (hurray-gpu) needs a shim before the shell can find it.
if command -v pyenv >/dev/null 2>&1; then pyenv rehash || true; fi
