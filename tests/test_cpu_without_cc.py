"""The cpu backend on a machine with no system C compiler (cc/gcc/clang off PATH, CC unset).

A warm kernel cache runs with no compiler at all; a cold one builds its kernels with the
ziglang wheel's ``zig cc`` (POSIX threads: zig has no OpenMP), bit-exact with the reference;
with neither, kernels are refused with a Fix and ``devices`` says why. Each case is a child
process (the toolchain is found once per process) with the canary allocator on, so this file
sits outside tests/backend, which CI runs a second time for that.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hurray_gpu.backends import hostcc
from tests._support import skip_or_fail

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import json, sys
if sys.argv[1] == "no-zig":
    sys.modules["ziglang"] = None  # the wheel, hidden as if it were not installed
import numpy as np
import hurray_gpu as hg
from hurray_gpu.cli.devices import collect
from hurray_gpu.errors import HurrayGPUError
from hurray_gpu.ops import dequantize
from hurray_gpu.ops.quantize import random_quantized
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.program import compile_stats
from tests._support import stable_rng

# Each launch spans several chunks of work items, so the thread team runs (a smaller one runs
# on the calling thread alone); small enough for a quick oracle.
CASES = [("per_block", "int4", (512, 1024), 1, 32, "float32"),
         ("nf4", "uint4", (512, 1024), 1, 64, "bfloat16"),
         ("mxfp", "float8_e4m3", (256, 2048), 1, 32, "float16"),
         ("per_channel", "int8", (2048, 256), 0, 32, "float32")]
cpu, out = hg.device("cpu"), {"cases": {}}
try:
    for scheme, storage, shape, axis, block, dtype in CASES:
        t = random_quantized(stable_rng("no-cc", scheme, storage), scheme, storage, shape,
                             axis=axis, block_size=block)
        got = np.asarray(dequantize(t, dtype, device=cpu).buffers[0])
        want = np.asarray(dequantize(t, dtype, device="reference").to("cpu").buffers[0])
        out["cases"][scheme] = bool(np.array_equal(got, want))
    # A conversion kernel: IEEE round to nearest even, as NumPy's astype.
    x = np.asarray(stable_rng("no-cc", "f16").standard_normal(300_001) * 1e3, np.float32)
    half = Buffer(cpu, 2 * x.size)
    cpu.run("f32_to_f16", half, Buffer.from_bytes(cpu, x), x.size, wait=True)
    want16 = x.astype(np.float16).view(np.uint16)
    out["cases"]["f32_to_f16"] = bool(np.array_equal(half.numpy(np.uint16), want16))
    out["version"] = cpu.compiler.toolchain.version
except HurrayGPUError as exc:
    out["error"] = [type(exc).__name__, str(exc)]
inventory = collect()
row = [b for b in inventory["backends"] if b["backend"] == "cpu"][0]["devices"][0]
tool = [t for t in inventory["toolchains"] if t["name"] == "host C compiler"][0]
out.update(stats={**compile_stats(), "cpu_compiles": cpu.compiler.compile_count},
           kernels=row["kernels"], why=row.get("kernels_reason", ""), toolchain=tool)
print(json.dumps(out))
"""


# A work-group kernel (barriers, a workgroup array) built by zig cc: its groups run on the
# POSIX thread team (OMP_NUM_THREADS=4 of them), counted in /proc/self/task by a sampler while
# the launches run (ctypes releases the GIL during a call).
GROUP_SCRIPT = r"""
import json, os, threading
import numpy as np
import hurray_gpu as hg
from hurray_gpu.runtime.buffer import Buffer
from tests._support import stable_rng
from tests.null.test_host_groups import MIRROR, group_kernel

cpu, n, kernel = hg.device("cpu"), 64 * 8192, group_kernel(MIRROR)
src = stable_rng("zig groups").integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
a, out = Buffer.from_bytes(cpu, src.tobytes()), Buffer(cpu, 4 * n)
cpu.run(kernel, a, out, n, wait=True)  # compiles it
tasks = lambda: len(os.listdir("/proc/self/task"))
stop, seen = threading.Event(), []
def sample():
    while not stop.is_set():
        seen.append(tasks())
sampler = threading.Thread(target=sample)
sampler.start()
while len(seen) < 10:
    pass
base = tasks()  # this thread and the sampler
for _ in range(30):
    cpu.run(kernel, a, out, n, wait=True)
stop.set()
sampler.join()
g = src.reshape(-1, 64)
print(json.dumps({"exact": bool(np.array_equal(out.numpy(np.uint32), (g[:, ::-1] + g).ravel())),
                  "extra": max(seen) - base, "tool": cpu.compiler.toolchain.describe()}))
"""


def _hidden_env(tmp: Path, cache: Path) -> dict[str, str]:
    """This environment with an empty PATH (no cc, gcc or clang) and no CC/HURRAY_GPU_CC."""
    bare = tmp / "bare-bin"
    bare.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if k not in ("CC", "HURRAY_GPU_CC", "HURRAY_GPU_NO_CACHE", "HURRAY_GPU_DEVICE")}
    return {**env, "PATH": str(bare), "HURRAY_GPU_CACHE_DIR": str(cache),
            "HURRAY_GPU_DEBUG_BOUNDS": "1"}


def _child(env: dict[str, str], mode: str, script: str = SCRIPT) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", script, mode], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _all_exact(got: dict[str, Any]) -> None:
    assert "error" not in got, got["error"]
    assert got["cases"] == dict.fromkeys(["per_block", "nf4", "mxfp", "per_channel",
                                          "f32_to_f16"], True)


def _need_zig() -> None:
    if hostcc._zig() is None:
        skip_or_fail("the ziglang package is not installed", "pip install 'hurray_gpu[cpu]'")


def test_a_warm_cache_runs_without_any_compiler(tmp_path: Path) -> None:
    if hostcc.find_command() is None:
        skip_or_fail("no C compiler to warm the cache with", "apt-get install gcc")
    cache = tmp_path / "cache"
    warm = {**os.environ, "HURRAY_GPU_CACHE_DIR": str(cache), "HURRAY_GPU_DEBUG_BOUNDS": "1"}
    warm.pop("HURRAY_GPU_NO_CACHE", None)
    first = _child(warm, "no-zig")
    _all_exact(first)
    assert first["stats"]["cpu_compiles"] > 0 and first["kernels"] == "all"
    again = _child(_hidden_env(tmp_path, cache), "no-zig")
    _all_exact(again)
    assert again["stats"]["cpu_compiles"] == 0 and again["stats"]["disk_hits"] > 0
    assert again["kernels"] == "cached" and "pip install ziglang" in again["why"]
    assert not again["toolchain"]["available"]
    assert again["version"] == first["version"]  # the recorded identity: the same keys
    assert f"kernels cached here by {first['version']}" in again["toolchain"]["reason"]


def test_cold_with_zig_builds_bit_exact_kernels_with_threads(tmp_path: Path) -> None:
    _need_zig()
    got = _child(_hidden_env(tmp_path, tmp_path / "cache"), "zig")
    _all_exact(got)
    assert got["stats"]["cpu_compiles"] > 0 and got["kernels"] == "all"
    assert got["toolchain"]["available"]
    assert "[ziglang]" in got["toolchain"]["version"]
    assert "threads (no OpenMP)" in got["toolchain"]["version"]


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
def test_zig_built_work_group_kernels_run_on_the_thread_team(tmp_path: Path) -> None:
    _need_zig()
    env = {**_hidden_env(tmp_path, tmp_path / "cache"), "OMP_NUM_THREADS": "4",
           "PYTHONPATH": str(ROOT)}
    got = _child(env, "zig", GROUP_SCRIPT)
    assert "[ziglang]" in got["tool"] and "threads (no OpenMP)" in got["tool"] and got["exact"]
    assert got["extra"] >= 1, "every group ran on the calling thread"


def test_no_compiler_at_all_is_refused_with_a_fix(tmp_path: Path) -> None:
    got = _child(_hidden_env(tmp_path, tmp_path / "cache"), "no-zig")
    kind, message = got["error"]
    assert kind == "BackendUnavailableError"
    assert "no C compiler to build cpu kernels" in message
    assert "Fix: pip install ziglang" in message and "apt-get install gcc" in message
    assert got["kernels"] == "none" and "no C compiler" in got["why"]
    assert not got["toolchain"]["available"]
    assert "none found" in got["toolchain"]["reason"]
    assert got["stats"]["cpu_compiles"] == 0


def test_a_named_compiler_that_is_missing_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # Never silently replaced by another compiler (or by zig).
    monkeypatch.delenv("HURRAY_GPU_CC", raising=False)
    monkeypatch.setenv("CC", "/definitely/not/a/compiler")
    with pytest.raises(hostcc.BackendUnavailableError, match=r"\$CC=.*Fix: set CC"):
        hostcc.find_command()
    monkeypatch.setenv("HURRAY_GPU_CC", "gcc -O1")
    found = hostcc.find_command()
    if found is None or not found[0][0].endswith("gcc"):
        skip_or_fail("gcc is not on PATH", "apt-get install gcc")
    assert found == ((found[0][0], "-O1"), "HURRAY_GPU_CC")


def test_zig_builds_for_the_baseline_unless_a_kernel_opts_into_this_cpu(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # zig cc targets the CPU it runs on by default: portable kernels must say -mcpu=baseline,
    # and a host-ISA kernel's flags (its cache key) must name this CPU, as gcc's spelled-out
    # -march=native flags do.
    _need_zig()
    monkeypatch.setenv("HURRAY_GPU_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HURRAY_GPU_NO_CACHE", raising=False)
    hostcc.probe.cache_clear()
    zig = hostcc.probe((str(hostcc._zig()), "cc"), "ziglang")
    hostcc.probe.cache_clear()
    assert zig.portable == ("-mcpu=baseline",) and not zig.openmp
    assert zig.parallel == ("-DHG_THREADS", "-pthread")
    digest = [f for f in zig.native if f.startswith("-DHG_BUILT_FOR_CPU=")]
    assert zig.native[0] == "-march=native" and len(digest) == 1
    assert digest[0].split("=")[1] == hostcc.blake3.blake3(
        hostcc._host_cpu().encode()).hexdigest()[:16]
