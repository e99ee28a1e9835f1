"""examples/quantized_to_torch.py runs as a user runs it, and does what it says on every device:
quantized weights from a .hrry file to the device, dequantized there, handed to torch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hurray_gpu as hg
from tests._support import require_peer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "quantized_to_torch.py"


def _example() -> object:
    sys.path.insert(0, str(EXAMPLE.parent))
    try:
        import quantized_to_torch

        return quantized_to_torch
    finally:
        sys.path.remove(str(EXAMPLE.parent))


def test_example_runs_as_a_script(tmp_path: Path) -> None:
    require_peer("torch")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HURRAY_GPU_PROGRESS": "0"}
    done = subprocess.run([sys.executable, str(EXAMPLE), "--device", "cpu", "--dir",
                           str(tmp_path)], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 2 and all("torch.bfloat16 on cpu:0" in line for line in lines), lines
    assert (tmp_path / "quantized.hrry").stat().st_size > 0


@pytest.mark.parametrize("spec", [d.spec for d in hg.devices()])
def test_example_loads_onto_every_device(spec: str, tmp_path: Path) -> None:
    torch = require_peer("torch")
    example = _example()
    path = tmp_path / "q.hrry"
    originals = example.write_checkpoint(path)  # type: ignore[attr-defined]
    # load_to_torch asserts bit equality with the reference device itself; here: the values
    # are the quantized originals (int4 per-block and NF4 both within a few percent of absmax)
    loaded = example.load_to_torch(path, hg.device(spec))  # type: ignore[attr-defined]
    assert set(loaded) == set(originals)
    for name, weight in loaded.items():
        assert isinstance(weight, torch.Tensor) and weight.dtype == torch.bfloat16
        want = originals[name]
        assert tuple(weight.shape) == want.shape
        got = weight.float().numpy()
        assert np.abs(got - want).max() < 0.25 * np.abs(want).max()
        assert np.corrcoef(got.ravel(), want.ravel())[0, 1] > 0.99
    if spec == "cpu:0":  # zero-copy: torch reads the device result's own host memory
        with hg.open_file(path) as f:
            dense = hg.dequantize(f.read(next(iter(originals)), device=spec), "bfloat16")
        assert torch.from_dlpack(dense).data_ptr() == dense.buffers[0].array.ctypes.data
