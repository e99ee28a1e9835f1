#!/usr/bin/env bash
# (Re)creates .whl/, the wheelhouse ci/gpu_check.sh installs on a lent GPU machine, which
# reaches no package registry (docs/gpu.md). Run it on a machine with network, in the
# repository root that will be sent; carry .whl/ along with the tree (git ignores it).
#
# What goes in: every package the GPU steps import that the machine's image lacks (the image
# runs Python 3.12 on x86-64):
#   blake3  a core dependency of hurray_gpu (pyproject.toml) that the image does not have;
#   gguf    the peer of the Q4_0/Q8_0 known-answer tests the backend step runs on cuda:0
#           (pure Python; its own needs - numpy, pyyaml, tqdm, requests - are in the image).
# numpy, ml_dtypes and rich (the other core dependencies), torch, JAX, CuPy, pytest,
# pytest-xdist and hypothesis are in the image. bitsandbytes is not, and its wheel is too large
# to carry (the working tree travels within 64 MiB): ci/gpu_check.sh deselects its tests.
# .whl/ is ignored (.gitignore, and .git/info/exclude, added below), so it never gets committed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
WHEELS=(blake3==1.0.11 gguf==0.19.0)

exclude="$(git rev-parse --git-path info/exclude 2>/dev/null || true)"
if [ -n "$exclude" ] && ! grep -qx '/.whl/' "$exclude" 2>/dev/null; then
  mkdir -p "$(dirname "$exclude")"
  echo '/.whl/' >> "$exclude"
fi
rm -rf .whl
mkdir -p .whl
# pip matches each manylinux tag exactly: list the ones blake3's wheels carry.
"$PYTHON" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
  --python-version 3.12 --implementation cp --abi cp312 --platform manylinux_2_28_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any \
  -d .whl "${WHEELS[@]}"
count=$(find .whl -type f -name '*.whl' | wc -l)
if [ "$count" -ne "${#WHEELS[@]}" ]; then
  echo "ci/gpu_wheels.sh: expected ${#WHEELS[@]} wheels in .whl, found $count." >&2
  exit 1
fi
# The set installs as the GPU image's pip will install it (Python 3.12, x86-64 manylinux).
check="$(mktemp -d)"
trap 'rm -rf "$check"' EXIT
"$PYTHON" -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-index \
  --no-deps --only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --target "$check" .whl/*.whl
for pkg in "${WHEELS[@]}"; do
  if [ ! -d "$check/${pkg%%==*}" ]; then
    echo "ci/gpu_wheels.sh: ${pkg%%==*} did not install for Python 3.12 from .whl." >&2
    exit 1
  fi
done
ls -l .whl
du -sh .whl
