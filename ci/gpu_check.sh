#!/usr/bin/env bash
# The one check on an NVIDIA GPU (docs/gpu.md), for a briefly lent machine that reaches no
# package registry (an H200 image: Python 3.12, CuPy 14.2 for CUDA 13, torch 2.11, JAX with
# CUDA), run as the machine receives the project: what hurray_gpu needs beyond the image
# travels in .whl/.
#
# How to run it, once:
#   1. On a machine with network, in the repository root that will be sent:
#        bash ci/gpu_wheels.sh                 # (re)creates .whl/ (blake3, gguf); git ignores it
#        GPU_CHECK_DRY=1 bash ci/gpu_check.sh  # the same plumbing on cpu:0, about a minute
#   2. On the GPU machine, with the tree and .whl/ (ignored by git: name it among the paths
#      carried along), one command given
#        timeout_s: 540   (the steps' limits below add up to 475 s, under the 480 s budget)
#      to run `bash ci/gpu_check.sh`. $OUT then holds summary.md (read it first),
#      summary.json, log.txt (everything printed), junit_gpu.xml, junit_backend.xml,
#      transfer.json, dequant.json and kv_cache.json: 8 files, as many as a lent machine
#      returns.
#   3. Rerun only some steps: GPU_CHECK_ONLY=backend,kv bash ci/gpu_check.sh (wheels and
#      probe always run: later steps need them).
#
# Steps (limit in seconds on the GPU | in the dry run):
#   wheels    15 | 30  pip install --no-index --no-deps --target $SITE .whl/*.whl (SITE=/tmp/site)
#   probe     30 | 30  the wheels import from $SITE, hurray_gpu from this tree; opens cuda:0
#   nvrtc     45 | 30  every kernel's CUDA rendering compiled for sm_90 (through CuPy's NVRTC), 16 at once
#   gpu-tests 100 | 40 tests/gpu once (backend, memory classes, sync and DLPack handoffs, IPC
#                      memory and event handles between two processes: test_ipc_cuda.py; a
#                      network get onto the GPU through pinned slots: test_net_cuda.py)
#   backend   150 | 60 the backend and vyre tiers' cuda:0 tests (-k "cuda:0"), 8 xdist workers
#   transfer  30 | 20  H2D/D2H/D2D per memory class, 256 MiB
#   dequant   50 | 30  10 dequantizations of 2^27 elements against the device's own copy
#   kv        55 | 30  paged KV cache: 256 sequences of 1..4096 tokens, 16 layers
# A step fails on any non-zero exit, pytest's 5 ("no tests collected") and timeout's 124
# included; the check exits 1 when any step failed. The bench goals (dequantization >= 0.90 of
# the device copy, KV gather and bulk append >= 0.85) are reported in summary.md, not gated.
# Every step has CI=true (a missing peer fails its test), CUDA_MODULE_LOADING=EAGER (see
# tests/gpu/conftest.py), HURRAY_GPU_TEST_REQUIRE=cuda (no cuda device fails instead of
# skipping) and PYTHONPATH=<repository root>:$SITE, so `import hurray_gpu` needs no install.
# The selected tests need no peer the image lacks: gguf comes in .whl/; bitsandbytes (too
# large to carry), compressed-tensors (transformers and its kin) and torchao are deselected;
# tests of pocl/lavapipe/JAX-on-CPU are not cuda:0 tests.
#
# GPU_CHECK_DRY=1 replaces every GPU step by its CPU equivalent (cpu:0, the benches' --quick
# sizes, tests that run without a GPU) so the plumbing - wheel install, PYTHONPATH, exit
# codes, $OUT files, the summary, the time budget - runs here (tests/cli/test_gpu_check.py
# runs it in CI).
# Settings: OUT (results; default bench/out/gpu_check), GPU_CHECK_WHEELS (default .whl),
# GPU_CHECK_SITE (default /tmp/site, a fresh temporary folder in the dry run),
# GPU_CHECK_PYTEST_ARGS (appended to both pytest steps), GPU_CHECK_ONLY, GPU_CHECK_BUDGET_S
# (default 480), PYTHON.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
OUT_DIR="${OUT:-$ROOT/bench/out/gpu_check}"
mkdir -p "$OUT_DIR"
if [ -z "${GPU_CHECK_TEED:-}" ]; then  # the whole output, also into $OUT
  GPU_CHECK_TEED=1 bash "$0" "$@" 2>&1 | tee "$OUT_DIR/log.txt"
  exit "${PIPESTATUS[0]}"
fi

PYTHON="${PYTHON:-python3}"
DRY="${GPU_CHECK_DRY:-0}"
[ "$DRY" = 1 ] || DRY=0
WHEELS="${GPU_CHECK_WHEELS:-$ROOT/.whl}"
SCRATCH="$(mktemp -d)"  # the steps' record, the kernel cache, the dry run's site folder
trap 'rm -rf "$SCRATCH"' EXIT
if [ "$DRY" = 1 ]; then
  SITE="${GPU_CHECK_SITE:-$SCRATCH/site}" DEVICE=cpu:0 REQUIRE=cpu XDIST=0
else
  SITE="${GPU_CHECK_SITE:-/tmp/site}" DEVICE=cuda:0 REQUIRE=cuda XDIST=8
fi
read -r -a EXTRA <<< "${GPU_CHECK_PYTEST_ARGS:-}"
BUDGET_S="${GPU_CHECK_BUDGET_S:-480}"
export CI=true CUDA_MODULE_LOADING=EAGER HURRAY_GPU_TEST_REQUIRE="$REQUIRE"
export PYTHONPATH="$ROOT:$SITE${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export HURRAY_GPU_CACHE_DIR="$SCRATCH/kernels" HURRAY_GPU_PROGRESS=0
export GPU_CHECK_SITE="$SITE" GPU_CHECK_DEVICE="$DEVICE"
# JAX (imported by some tests) would otherwise take 75% of the GPU's memory at its first use.
export XLA_PYTHON_CLIENT_PREALLOCATE=false
STEPS="$SCRATCH/steps.tsv"
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
START_MS=$(now_ms)
status=0

# step NAME GPU_LIMIT DRY_LIMIT CMD...: runs CMD under its limit (never past the budget left)
# and records name, limit, milliseconds, exit status and verdict in $STEPS.
step() {
  local name="$1" limit="$2"
  [ "$DRY" = 1 ] && limit="$3"
  shift 3
  if [ -n "${GPU_CHECK_ONLY:-}" ] && [[ ",wheels,probe,$GPU_CHECK_ONLY," != *",$name,"* ]]; then
    printf '%s\t%s\t0\t-\tnot run (GPU_CHECK_ONLY)\n' "$name" "$limit" >> "$STEPS"
    return
  fi
  local left=$(( BUDGET_S - ($(now_ms) - START_MS) / 1000 ))
  [ "$left" -lt "$limit" ] && limit="$left"
  echo "== $name (limit ${limit} s): $*"
  if [ "$limit" -le 0 ]; then
    printf '%s\t0\t0\t-\tFAIL (no time left in the %s s budget)\n' "$name" "$BUDGET_S" >> "$STEPS"
    status=1
    return
  fi
  local t0 rc verdict
  t0=$(now_ms)
  # SIGINT first: a single-process pytest then prints where it stopped and writes its report
  # of the tests run so far; SIGKILL 5 s later if it does not end.
  timeout -s INT -k 5 "$limit" "$@"
  rc=$?
  case "$rc" in
    0) verdict=pass ;;
    5) verdict="FAIL (exit 5: no tests collected)" ;;
    124|137) verdict="FAIL (timed out after ${limit} s)" ;;
    *) verdict="FAIL (exit $rc)" ;;
  esac
  [ "$rc" -eq 0 ] || status=1
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$limit" "$(( $(now_ms) - t0 ))" "$rc" "$verdict" >> "$STEPS"
  echo "== $name: $verdict"
}

install_wheels() {
  shopt -s nullglob
  local found=("$WHEELS"/*.whl)
  if [ ${#found[@]} -eq 0 ]; then
    echo "gpu_check: no wheels in $WHEELS. Fix: run 'bash ci/gpu_wheels.sh' on a machine" \
      "with network and send .whl/ along with the tree (see docs/gpu.md)." >&2
    return 1
  fi
  if [ "$DRY" = 1 ]; then
    # Only the wheels this Python can load (this host's may not be the GPU image's 3.12):
    # ci/gpu_wheels.sh checked the whole set against the GPU's Python when it made them.
    mapfile -t found < <("$PYTHON" - "${found[@]}" <<'PY'
import sys
from pathlib import Path

from packaging.tags import sys_tags
from packaging.utils import parse_wheel_filename

here = set(sys_tags())
for path in sys.argv[1:]:
    if here & set(parse_wheel_filename(Path(path).name)[3]):
        print(path)
    else:
        print(f"dry run: {Path(path).name} is not for this Python, not installed", file=sys.stderr)
PY
)
    [ ${#found[@]} -gt 0 ] || return 1
  fi
  "$PYTHON" -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-index \
    --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "${found[@]}"
}

probe() {
  command -v nvidia-smi >/dev/null && nvidia-smi -L
  "$PYTHON" - <<'PY'
import importlib
import os
import sys
from importlib import metadata
from pathlib import Path

site, root = Path(os.environ["GPU_CHECK_SITE"]).resolve(), Path.cwd().resolve()
print("python", sys.version.split()[0], "at", sys.executable)
names = sorted({line.split("/")[0].split(",")[0].removesuffix(".py")
                for record in site.glob("*.dist-info/RECORD")
                for line in record.read_text().splitlines()
                if not line.startswith(("..", "bin/")) and ".dist-info/" not in line})
if not names:
    sys.exit(f"no package was installed into {site}")
for name in names:  # each wheel's modules must come from the site folder, not the image
    where = Path(importlib.import_module(name).__file__ or "").resolve()
    print(f"  {name}: {where}")
    if site not in where.parents:
        sys.exit(f"{name} imported from {where}, not from {site}: check PYTHONPATH")
import hurray_gpu
from hurray_gpu.runtime.registry import devices, resolve_device

if root not in Path(hurray_gpu.__file__).resolve().parents:
    sys.exit(f"hurray_gpu imported from {hurray_gpu.__file__}, not from {root}")
for dist in ("numpy", "ml_dtypes", "rich", "blake3", "gguf", "cupy-cuda13x", "torch", "jax",
             "pytest", "pytest-xdist", "hypothesis"):
    try:
        print(f"  {dist} {metadata.version(dist)}")
    except metadata.PackageNotFoundError:
        print(f"  {dist}: not installed")
dev = resolve_device(os.environ["GPU_CHECK_DEVICE"])
print("devices:", [d.spec for d in devices()], "| checking", dev.spec, dev.name,
      getattr(dev, "arch", ""))
PY
}

export -f install_wheels probe
export PYTHON WHEELS SITE DRY
step wheels 15 30 bash -c install_wheels
step probe 30 30 bash -c probe
if [ "$DRY" = 1 ]; then
  step nvrtc 45 30 "$PYTHON" -m hurray_gpu.kernels check --dialect cuda --arch sm_90 \
    --kernel fill_u32
  step gpu-tests 100 40 "$PYTHON" -m pytest -q -p no:cacheprovider tests/null/test_sync_host.py \
    --junitxml="$OUT_DIR/junit_gpu.xml" "${EXTRA[@]}"
  step backend 150 60 "$PYTHON" -m pytest -q -p no:cacheprovider -n "$XDIST" \
    tests/backend/test_dequant_peers.py -k "$DEVICE and not bitsandbytes" \
    --junitxml="$OUT_DIR/junit_backend.xml" "${EXTRA[@]}"
  TRANSFER=(--quick) DEQUANT=(--quick) KV=(--quick)
else
  step nvrtc 45 30 "$PYTHON" -m hurray_gpu.kernels check --dialect cuda --arch sm_90 --jobs 16
  step gpu-tests 100 40 "$PYTHON" -m pytest -q -p no:cacheprovider -m "gpu or cuda" tests/gpu \
    --junitxml="$OUT_DIR/junit_gpu.xml" "${EXTRA[@]}"
  # The bitsandbytes peer is not carried (its wheel alone is over the transfer limit), nor is
  # compressed-tensors (it imports transformers, huggingface_hub and more the image lacks),
  # nor torchao (26 MB installed, its CUDA extensions built for another torch).
  step backend 150 60 "$PYTHON" -m pytest -q -p no:cacheprovider -n "$XDIST" tests/backend \
    tests/vyre -k "$DEVICE and not bitsandbytes and not convert_bnb and not convert_compressed and not convert_torchao" \
    --junitxml="$OUT_DIR/junit_backend.xml" "${EXTRA[@]}"
  # 2^27 elements: 512 MiB of float32 out, far past the 60 MB L2, with codes drawn on the host
  # in about a second per case; 16 layers of 1 GiB K and V pools, for ours and the torch peer
  # on the GPU alike (about 70 GiB in all).
  TRANSFER=(--size-mib 256 --runs 5) DEQUANT=(--elements 134217728 --runs 5)
  KV=(--seqs 256 --max-len 4096 --layers 16 --runs 5)
fi
step transfer 30 20 "$PYTHON" bench/transfer.py --device "$DEVICE" "${TRANSFER[@]}" \
  --json "$OUT_DIR/transfer.json"
step dequant 50 30 "$PYTHON" bench/dequant.py --devices "$DEVICE" --no-peers "${DEQUANT[@]}" \
  --json "$OUT_DIR/dequant.json"
step kv 55 30 "$PYTHON" bench/kv_cache.py --devices "$DEVICE" "${KV[@]}" \
  --json "$OUT_DIR/kv_cache.json"

# The summary: steps, time, bench ratios against their goals; summary.md is printed last.
"$PYTHON" - "$STEPS" "$OUT_DIR" "$DRY" "$BUDGET_S" "$(( $(now_ms) - START_MS ))" "$status" <<'PY'
import json
import sys
from pathlib import Path

steps_file, out, dry, budget, elapsed_ms, status = sys.argv[1:]
out = Path(out)
steps = [dict(zip(("name", "limit_s", "ms", "rc", "verdict"), line.split("\t"), strict=True))
         for line in Path(steps_file).read_text().splitlines()]


def load(name):
    try:
        return json.loads((out / name).read_text())
    except (OSError, ValueError):
        return None


goals, lines = [], []
dq = load("dequant.json")
for row in (dq or {}).get("rows", []):
    if "roof_fraction" in row:
        goals.append({"what": f"dequant {row['op']}", "device": row["device"],
                      "value": row["roof_fraction"], "goal": 0.90,
                      "detail": f"{row['gbps']:.1f} of {row['roof_gbps']:.1f} GB/s"})
kv = load("kv_cache.json")
for row in (kv or {}).get("devices", []):
    for key, what in (("gather_vs_roof", "KV gather"), ("prefill_vs_roof", "KV bulk append")):
        goals.append({"what": what, "device": row["device"], "value": row[key], "goal": 0.85,
                      "detail": f"roof {row['roof_copy_gb_per_s']:.1f} GB/s"})
    for key in ("decode_vs_torch", "gather_vs_torch"):
        if key in row:
            lines.append(f"- {row['device']} {key}: {row[key]:.2f}x")
tr = load("transfer.json")
for row in (tr or {}).get("results", []):
    lines.append(f"- {row['device']} {row['memory_class']}: H2D {row['h2d_gbps']:.1f}, "
                 f"D2H {row['d2h_gbps']:.1f}, D2D {row['d2d_gbps']:.1f} GB/s, "
                 f"bit-exact {row['bit_exact']}")
files = sorted(p for p in out.rglob("*") if p.is_file())
deep = [p for p in files if len(p.relative_to(out).parts) > 3]
# log.txt is still being written and summary.md, summary.json come next: count them now.
count = len({p.name for p in files} | {"log.txt", "summary.md", "summary.json"})
too_many = count > 8 or bool(deep)
passed = status == "0" and not too_many
mode = "dry run (cpu)" if dry == "1" else "GPU"
md = [f"# GPU check, {mode}: {'PASS' if passed else 'FAIL'}", "",
      f"{int(elapsed_ms) / 1000:.1f} s of the {budget} s budget; "
      f"{count} files in {out} (at most 8 come back)", "",
      "| step | limit s | took s | exit | result |", "|---|---|---|---|---|"]
md += [f"| {s['name']} | {s['limit_s']} | {int(s['ms']) / 1000:.1f} | {s['rc']} | {s['verdict']} |"
       for s in steps]
if too_many:
    md.append(f"\nFAIL: more than 8 files or folders too deep under {out}.")
md += ["", "## Goals (roof: the device's own copy of the same bytes, same run)", ""]
md += [f"- {g['what']} on {g['device']}: {g['value']:.1%} (goal {g['goal']:.0%}: "
       f"{'met' if g['value'] >= g['goal'] else 'BELOW'}; {g['detail']})" for g in goals]
md += ["", "## Peers and transfers", "", *lines]
(out / "summary.md").write_text("\n".join(md) + "\n")
(out / "summary.json").write_text(json.dumps(
    {"mode": "dry" if dry == "1" else "gpu", "passed": passed, "budget_s": int(budget),
     "elapsed_s": int(elapsed_ms) / 1000, "steps": steps, "goals": goals, "files": count},
    indent=2))
print("\n".join(md))
sys.exit(0 if passed else 1)
PY
summary=$?
[ "$status" -eq 0 ] && [ "$summary" -eq 0 ] && exit 0
exit 1
