"""A second process launching an already-compiled kernel compiles nothing (disk cache hit)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hurray_gpu.runtime.device import Device

SCRIPT = """
import json, sys
import numpy as np
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.registry import resolve_device as device
from hurray_gpu.runtime.program import compile_stats
import hurray_gpu.runtime.device as d
real, renders = d.render, []
d.render = lambda kernel, dialect: renders.append(kernel.name) or real(kernel, dialect)
dev = device(sys.argv[1])
out = Buffer(dev, 4 * 77)
dev.run("fill_u32", out, 9, 77)
dev.run("f32_to_f16", Buffer(dev, 2 * 77), Buffer.from_bytes(dev, np.ones(77, np.float32)), 77)
ok = bool((out.numpy(np.uint32) == 9).all())
print(json.dumps({**compile_stats(), "ok": ok, "renders": len(renders)}))
"""


def _run(spec: str, cache: Path) -> dict:
    env = {**os.environ, "HURRAY_GPU_CACHE_DIR": str(cache)}
    env.pop("HURRAY_GPU_NO_CACHE", None)
    done = subprocess.run([sys.executable, "-c", SCRIPT, spec], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_second_process_compiles_nothing(kernel_device: Device, tmp_path: Path) -> None:
    first = _run(kernel_device.spec, tmp_path)
    assert first["ok"] and first["compiles"] == 2 and first["disk_hits"] == 0
    second = _run(kernel_device.spec, tmp_path)
    assert second["ok"] and second["compiles"] == 0 and second["disk_hits"] == 2
    if type(kernel_device).render is Device.render:  # keyed by the rendering's inputs
        assert (first["renders"], second["renders"]) == (2, 0)
    assert any(tmp_path.rglob("*.bin"))


def test_corrupt_cache_entry_is_rebuilt(kernel_device: Device, tmp_path: Path) -> None:
    _run(kernel_device.spec, tmp_path)
    for path in tmp_path.rglob("*.bin"):
        data = bytearray(path.read_bytes())
        data[-1] ^= 0xFF
        path.write_bytes(bytes(data))
    again = _run(kernel_device.spec, tmp_path)
    assert again["ok"] and again["compiles"] == 2
