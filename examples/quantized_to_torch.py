"""Quantized weights from a file to a PyTorch tensor, dequantized on a device.

The end-to-end path a model loader takes: a ``.hrry`` file holding int4 per-block and NF4
weights is opened (memory-mapped), each weight is streamed from the mapping straight into the
device's memory, dequantized there to bfloat16, and handed to PyTorch by DLPack (zero-copy on
the cpu device; other devices copy the result to the host first, since this torch is a CPU
build). Every result is compared bit for bit with the NumPy reference device.

Usage: python examples/quantized_to_torch.py [--device cpu|opencl:0|vulkan:0|...] [--dir DIR]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

import hurray_gpu as hg


def write_checkpoint(path: Path) -> dict[str, np.ndarray]:
    """Quantize two float32 weight matrices and save them to ``path``; returns the originals."""
    rng = np.random.default_rng(7)
    weights = {"layers.0.mlp.up.weight": rng.standard_normal((256, 128)).astype(np.float32),
               "layers.0.mlp.down.weight": rng.standard_normal((128, 256)).astype(np.float32)}
    hg.save(path, {
        # int4 codes with one float16 scale per block of 32 along each row (GPTQ/AWQ-like)
        "layers.0.mlp.up.weight": hg.quantize(weights["layers.0.mlp.up.weight"], "per_block",
                                              axis=1, block_size=32, dtype="int4",
                                              scale_dtype="float16"),
        # NF4 (bitsandbytes' 4-bit normal float) with one absmax per block of 64
        "layers.0.mlp.down.weight": hg.quantize(weights["layers.0.mlp.down.weight"], "nf4",
                                                axis=1, block_size=64),
    }, metadata={"producer": "examples/quantized_to_torch.py"})
    return weights


def load_to_torch(path: Path, device: Any) -> dict[str, torch.Tensor]:
    """Every tensor of ``path`` loaded onto ``device``, dequantized there to bfloat16, as torch
    tensors (checked against the reference device bit for bit)."""
    out = {}
    with hg.open_file(path) as f:
        for name in f.names:
            quantized = f.read(name, device=device)        # file -> device memory, no host copy
            dense = hg.dequantize(quantized, "bfloat16")    # runs on the device
            host = dense if dense.device.kind == "cpu" else dense.to("cpu")
            weight = torch.from_dlpack(host)                # zero-copy view of the host buffer
            expected = hg.dequantize(f.read(name).to("reference"), "bfloat16").numpy()
            assert np.array_equal(weight.view(torch.int16).numpy(), expected.view(np.int16)), name
            out[name] = weight
    return out


def main(argv: list[str] | None = None) -> int:
    """Write the checkpoint, load it through ``--device``, print what arrived in torch."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="device spec (default: the default device)")
    parser.add_argument("--dir", default=None, help="where to write the checkpoint (default: temp)")
    args = parser.parse_args(argv)
    device = hg.device(args.device) if args.device else hg.default_device()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.dir or tmp) / "quantized.hrry"
        originals = write_checkpoint(path)
        loaded = load_to_torch(path, device)
    for name, weight in loaded.items():
        error = (weight.float() - torch.from_numpy(originals[name])).abs().max().item()
        print(f"{name}: torch {tuple(weight.shape)} {weight.dtype} on {device.spec} "
              f"(max |error| vs float32 {error:.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
