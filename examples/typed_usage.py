"""A user's script, type-checked with ``mypy --strict`` by tests/null/test_typed_api.py.

It uses the public API the way an application does (quantize, save, read back through the
file mapping, dequantize, index, convert to NumPy), so a public function that loses its
return type, or a Tensor method a type checker cannot see, fails that test. It also runs:
``python examples/typed_usage.py [DIR]``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

import hurray_gpu as hg


def roundtrip(folder: Path) -> float:
    """Quantize a weight, store it, read it back and return the worst dequantization error."""
    rng = np.random.default_rng(7)
    weight = rng.standard_normal((64, 128)).astype(np.float32)
    packed: hg.Tensor = hg.quantize(weight, "per_block", block_size=32, dtype="int8")
    bias = hg.from_numpy(np.arange(128, dtype=np.float32))
    hg.save(folder / "model.hrry", {"w": packed, "b": bias}, metadata={"step": 1})

    with hg.open_file(folder / "model.hrry") as f:
        names: list[str] = sorted(f.keys())
        assert names == ["b", "w"] and "w" in f and len(f) == 2
        w: hg.Tensor = f["w"]
        dense: hg.Tensor = hg.dequantize(w, "float32")
        assert np.array_equal(hg.materialize(w, "float32").numpy(), dense.numpy())
        first_row: hg.Tensor = dense[0]
        values: np.ndarray = np.asarray(first_row)
        assert values.shape == (128,) and f["b"].dtype == np.float32
        try:
            f.read("bias")
        except KeyError as err:  # a TensorNotFoundError: its Fix names "b"
            assert "Fix:" in str(err)
        half: hg.Tensor = bias.to("cpu", "float16")
        assert half.dtype == "float16" and len(half) == 128
        return float(np.max(np.abs(dense.numpy() - weight)))


def main(argv: list[str]) -> int:
    """Run :func:`roundtrip` in ``argv[1]`` (default: a temporary folder)."""
    if len(argv) > 1:
        error = roundtrip(Path(argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            error = roundtrip(Path(tmp))
    print(f"max |dequantized - original| = {error:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
