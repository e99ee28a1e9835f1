"""bitsandbytes NF4 checkpoints written from bitsandbytes' own quantizer and quant state
(``quantize_4bit`` + ``QuantState.as_dict(packed=True)``, the tensors transformers saves) by
the safetensors package's own ``save_file``, as transformers writes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tests._support import require_peer, stable_rng

# (shape, blocksize, double quantization): last dimensions that are multiples of the block
# size, that share only a smaller power of two with it (blocks of 8..32 with repeated
# absmax), and that share none (stored flat), 1-D and 3-D, the smallest and largest blocks.
SPECS = [((16, 96), 64, True), ((8, 256), 128, False), ((5, 33), 64, True),
         ((3, 40), 64, False), ((70,), 64, True), ((4, 6, 32), 256, True),
         ((2, 4096), 4096, True), ((600, 64), 32, True), ((0, 64), 64, False),
         ((1023, 1032), 64, True)]  # 2 steps of nibble swapping and 4 tail bytes


def quantize(shape: tuple[int, ...], blocksize: int, nested: bool,
             quant_type: str = "nf4") -> tuple[Any, Any, dict[str, np.ndarray]]:
    """bnb's packed codes, quant state and the safetensors tensors of one weight."""
    torch = require_peer("torch")
    bnb = require_peer("bitsandbytes")
    values = stable_rng("bnb", shape, blocksize, nested).standard_normal(shape) * 3
    q, state = bnb.functional.quantize_4bit(torch.tensor(values, dtype=torch.float32),
                                            quant_type=quant_type, blocksize=blocksize,
                                            compress_statistics=nested)
    parts = {k: v.numpy() for k, v in state.as_dict(packed=True).items()}
    return q, state, parts


def save_file(tensors: dict[str, np.ndarray], path: Path) -> None:
    """``safetensors.torch.save_file`` of the tensors (the file transformers writes)."""
    torch = require_peer("torch")
    st = require_peer("safetensors.torch", "safetensors")
    st.save_file({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in tensors.items()},
                 str(path))


def write_bnb(path: Path, specs: list[tuple[tuple[int, ...], int, bool]] = SPECS,
              extra: dict[str, np.ndarray] | None = None) -> dict[str, tuple[Any, Any]]:
    """A safetensors file of one NF4 weight ``l<i>.weight`` per spec; returns bnb's packed
    codes and quant state per weight."""
    tensors: dict[str, np.ndarray] = dict(extra or {})
    peers = {}
    for i, (shape, blocksize, nested) in enumerate(specs):
        q, state, parts = quantize(shape, blocksize, nested)
        tensors[f"l{i}.weight"] = q.numpy()
        tensors.update({f"l{i}.weight.{k}": v for k, v in parts.items()})
        peers[f"l{i}.weight"] = (q, state)
    save_file(tensors, path)
    return peers
