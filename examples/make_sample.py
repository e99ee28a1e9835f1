"""Write a small sample .hrry file with several dtypes, layouts and KV metadata.

Usage: python examples/make_sample.py [PATH]   (default: sample.hrry), then
       hurray-gpu inspect sample.hrry
"""

from __future__ import annotations

import sys

import ml_dtypes
import numpy as np

from hurray_gpu.format import descriptor as d
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.format.packing import pack
from hurray_gpu.io import UInt64, save
from hurray_gpu.tensor import Tensor


def sample_tensors() -> dict[str, Tensor | np.ndarray]:
    """A handful of tensors covering whole-byte, sub-byte, quantized and composite data."""
    rng = np.random.default_rng(0)
    q = rng.integers(-8, 8, size=(4, 8)).astype(ml_dtypes.int4)
    scales = np.array([0.5, 0.25, 0.125, 1.0], dtype="<f4")
    quant = d.TensorDescriptor(
        by_name("int4"), (4, 8), d.RowMajor(), (d.BufferHandle(16), d.BufferHandle(16)),
        quantization=d.PerChannelAffine(axis=0, scale_buffer_index=1))
    halves = []
    for i in range(2):
        part = np.arange(8, dtype="<f4").reshape(2, 4) + 8 * i
        desc = d.TensorDescriptor(by_name("float32"), (2, 4), d.RowMajor(),
                                  (d.BufferHandle(part.nbytes),),
                                  shard=d.Shard((4, 4), (2 * i, 0)))
        halves.append(Tensor.from_parts(desc, [part.view(np.uint8).reshape(-1)]))
    head = d.TensorDescriptor(by_name("float32"), (4, 4), d.Composite(1, 0, 2), ())
    return {
        "embedding.weight": rng.standard_normal((16, 8)).astype(np.float32),
        "layer0.bias": np.linspace(-1, 1, 8).astype(ml_dtypes.bfloat16),
        "layer0.weight_fp8": rng.standard_normal((8, 8)).astype(ml_dtypes.float8_e4m3fn),
        "layer0.weight_fp4": np.array([0.5, -6.0, 3.0, 1.5, 0.0], dtype=ml_dtypes.float4_e2m1fn),
        "mask": np.array([True, False, True, True, False, False, True]),
        "token_ids": np.arange(10, dtype=np.int64),
        "layer1.weight_int4": Tensor.from_parts(quant, [pack(q, by_name("int4")),
                                                        scales.view(np.uint8)]),
        "tiles": Tensor.from_parts(head, [], halves),
    }


def main(path: str = "sample.hrry") -> None:
    """Write the sample file to ``path``."""
    save(path, sample_tensors(), metadata={
        "producer": "hurray_gpu examples/make_sample.py", "format_version": UInt64(1),
        "learning_rate": 3e-4, "tags": ["demo", "sample"]})
    print(f"wrote {path}")


if __name__ == "__main__":
    main(*sys.argv[1:2])
