"""compressed-tensors ``pack-quantized`` checkpoints, and that tool's decoding as the peer.

compressed-tensors 0.20.1 cannot be installed cleanly here (it imports transformers, which
pulls in tokenizers and huggingface_hub), so PEER CODE BELOW IS A COPY: ``pack_to_int32``,
``unpack_from_int32`` and ``dequantize`` reproduce the arithmetic of its
``compressors/pack_quantized/helpers.py`` and ``quantization/lifecycle/forward_helpers.py``
(``_dequantize``, ``_process_group``) step for step, in torch, as the tool runs them. They
are written independently of hurray_gpu's converter (no shared code).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from tests._support import require_peer, stable_rng
from tests.hurray._convert_samples import write_safetensors


def pack_to_int32(value: Any, num_bits: int, packed_dim: int = 1) -> Any:
    """compressed-tensors' ``pack_to_int32`` (2-D), copied: dense LSB-first bit packing of
    ``q + 2^(num_bits-1)`` into int32 words, each row padded to a whole word."""
    torch = require_peer("torch")
    offset = 1 << (num_bits - 1)
    value = value.to(torch.int32) + offset
    if packed_dim == 0:
        value = value.transpose(0, 1)
    rows, cols = value.shape
    packed_cols = math.ceil(cols * num_bits / 32)
    padded_cols = math.ceil(cols / 32) * 32
    if padded_cols > cols:
        value = torch.nn.functional.pad(value, (0, padded_cols - cols))
    num_groups = padded_cols // 32
    value_g = value.reshape(rows * num_groups, 32)
    output_g = torch.zeros(rows * num_groups, num_bits, dtype=torch.int32)
    bit_starts = torch.arange(32, dtype=torch.int32) * num_bits
    word_idx, bit_offset = (bit_starts // 32).long(), bit_starts % 32
    output_g.scatter_add_(1, word_idx.unsqueeze(0).expand(rows * num_groups, -1),
                          value_g << bit_offset.unsqueeze(0))
    ov = bit_offset + num_bits - 32
    ov_mask = ov > 0
    if ov_mask.any():
        ov_vals = value_g[:, ov_mask] >> (num_bits - ov[ov_mask]).unsqueeze(0)
        output_g.scatter_add_(1, (word_idx[ov_mask] + 1).unsqueeze(0).expand(
            rows * num_groups, -1), ov_vals)
    output = output_g.view(rows, num_groups * num_bits)[:, :packed_cols]
    if packed_dim == 0:
        output = output.transpose(0, 1)
    return output.contiguous()


def unpack_from_int32(value: Any, num_bits: int, shape: tuple[int, int],
                      packed_dim: int = 1) -> Any:
    """compressed-tensors' ``unpack_from_int32`` (2-D, little-endian host), copied."""
    torch = require_peer("torch")
    if packed_dim == 0:
        value = value.transpose(0, 1)
    rows, num_words = value.shape
    cols = int(shape[packed_dim])
    if num_bits == 4:
        nibbles = value.contiguous().view(torch.uint8)
        output = torch.stack((nibbles & 0xF, nibbles >> 4), dim=-1)
        output = output.view(torch.int8).view(rows, -1)[:, :cols] - 8
        return output.transpose(0, 1) if packed_dim == 0 else output
    if num_words % num_bits != 0:
        value = torch.nn.functional.pad(value, (0, num_bits - (num_words % num_bits)))
        num_words = value.shape[1]
    value_g = value.reshape(rows * (num_words // num_bits), num_bits)
    bit_starts = torch.arange(32, dtype=torch.int32) * num_bits
    word_idx, bit_offset = (bit_starts // 32).long(), bit_starts % 32
    lo_bits = torch.clamp(32 - bit_offset, max=num_bits)
    output_g = (value_g[:, word_idx] >> bit_offset.unsqueeze(0)) & (
        (1 << lo_bits) - 1).unsqueeze(0)
    ov_mask = lo_bits < num_bits
    hi_bits = num_bits - lo_bits[ov_mask]
    right = (value_g[:, word_idx[ov_mask] + 1] & ((1 << hi_bits) - 1).unsqueeze(0)) << (
        lo_bits[ov_mask].unsqueeze(0))
    output_g[:, ov_mask] |= right
    output = output_g.view(rows, -1)[:, :cols]
    if packed_dim == 0:
        output = output.transpose(0, 1)
    return (output - (1 << (num_bits - 1))).to(torch.int8)


def dequantize(x_q: Any, scale: Any, zero_point: Any, group_size: int) -> Any:
    """compressed-tensors' ``dequantize`` for group (``_process_group``: columns unflattened
    into groups) and channel strategies, in the scale's dtype, copied."""
    if group_size:
        x_q = x_q.unflatten(-1, (x_q.shape[-1] // group_size, group_size))
        scale = scale.unsqueeze(-1)
        zero_point = None if zero_point is None else zero_point.unsqueeze(-1)
    value = x_q.to(scale.dtype)
    if zero_point is not None:
        value = value - zero_point.to(scale.dtype)
    value = value * scale
    return value.flatten(start_dim=-2) if group_size else value


def weights_args(bits: int, strategy: str, group_size: int | None, symmetric: bool,
                 actorder: str | None = None) -> dict[str, Any]:
    """One config group's ``weights`` arguments as llm-compressor writes them."""
    return {"num_bits": bits, "type": "int", "symmetric": symmetric, "strategy": strategy,
            "group_size": group_size, "actorder": actorder, "dynamic": False,
            "observer": "minmax", "block_structure": None}


def write_ct(folder: Path, specs: list[tuple[str, int, int, dict[str, Any], str]],
             fmt: str = "pack-quantized") -> dict[str, tuple[Any, ...]]:
    """``folder/model.safetensors`` with one packed weight per spec (prefix, rows, cols,
    weights args, scale dtype) and ``folder/config.json``; returns each weight's unpacked
    codes, scales and zero points (torch), its group size and the int32 words written (packed
    codes, packed zero points or None) for the peer."""
    torch = require_peer("torch")
    tensors: dict[str, np.ndarray] = {}
    groups, peers = {}, {}
    for i, (prefix, rows, cols, args, dtype) in enumerate(specs):
        rng = stable_rng("ct", prefix, rows, cols)
        bits, size = args["num_bits"], args["group_size"]
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        q = torch.tensor(rng.integers(lo, hi, (rows, cols), endpoint=True), dtype=torch.int8)
        scale = torch.tensor(rng.uniform(1e-3, 0.1, (rows, cols // size if size else 1)),
                             dtype=torch.float32).to(getattr(torch, dtype))
        tensors[f"{prefix}.weight_packed"] = pack_to_int32(q, bits).numpy()
        tensors[f"{prefix}.weight_scale"] = _st(scale)
        tensors[f"{prefix}.weight_shape"] = np.array([rows, cols], np.int64)
        zp = None
        if not args["symmetric"]:
            zp = torch.tensor(rng.integers(lo, hi, scale.shape, endpoint=True), dtype=torch.int8)
            tensors[f"{prefix}.weight_zero_point"] = pack_to_int32(zp, bits, 0).numpy()
        groups[f"group_{i}"] = {"targets": [f"re:{prefix}$"], "weights": args,
                                "input_activations": None, "output_activations": None}
        peers[prefix + ".weight"] = (q, scale, zp, args["group_size"] or 0,
                                     tensors[f"{prefix}.weight_packed"],
                                     tensors.get(f"{prefix}.weight_zero_point"))
    write_safetensors(folder / "model.safetensors", tensors)
    config = {"model_type": "llama", "quantization_config": {
        "quant_method": "compressed-tensors", "format": fmt, "config_groups": groups,
        "ignore": ["lm_head"], "quantization_status": "compressed"}}
    (folder / "config.json").write_text(json.dumps(config))
    return peers


def _st(t: Any) -> np.ndarray:
    """A torch tensor as numpy for the safetensors writer (bf16 as ml_dtypes' bfloat16)."""
    torch = require_peer("torch")
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()
