#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh Debian machine (run as root, or with sudo).
# Safe to run again: apt and pip skip what is already installed.
set -euo pipefail
cd "$(dirname "$0")/.."

# hipcc + libamdhip64-dev: Debian 12's ROCm 5.2, whose hipRTC (inside libamdhip64) compiles every
# HIP rendering for gfx90a without a GPU (about 45 MiB downloaded, 180 MiB installed).
APT_PACKAGES=(pocl-opencl-icd ocl-icd-libopencl1 mesa-vulkan-drivers libvulkan1 glslang-tools gcc
              hipcc libamdhip64-dev)

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

PYTHON="${PYTHON:-python3}"
# The test extras, the OpenCL, Vulkan and WebGPU (wgpu) drivers' Python bindings, the pinned NVRTC wheels
# that let CI compile every CUDA rendering without a GPU, the bench extra (matplotlib for
# the report's plots; pyarrow, whose Arrow Flight is bench/transport.py's peer; Ray core, the
# object-store peer of bench/ipc.py) and the cpu extra (ziglang: zig cc, the cpu backend's
# compiler where no system cc is, tested with cc hidden by tests/test_cpu_without_cc.py).
"$PYTHON" -m pip install -q --disable-pip-version-check -e ".[test,opencl,vulkan,webgpu,nvrtc,bench,cpu]"
# Under pyenv a new console script (hurray-gpu) needs a shim before the shell can find it.
if command -v pyenv >/dev/null 2>&1; then pyenv rehash || true; fi
