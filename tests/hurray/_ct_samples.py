"""compressed-tensors ``pack-quantized`` checkpoints written by compressed-tensors itself, and its
own decompression as the peer.

A checkpoint is made the way llm-compressor saves one: a torch model of ``Linear`` layers gets
a ``QuantizationConfig`` (``apply_quantization_config``), each weight's scales and zero points
come from the tool's ``calculate_qparams`` over the weight's group or channel min/max,
``ModelCompressor.compress_model`` quantizes and packs, the state dict is saved with
safetensors and ``ModelCompressor.update_config`` writes ``config.json``. The expected weights
are the tool's ``PackedQuantizationCompressor.decompress`` of the tensors read back from the
file (its ``unpack_from_int32`` and ``dequantize``, in the scale's type).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests._support import require_peer, stable_rng


def weights_args(bits: int, strategy: str, group_size: int | None, symmetric: bool,
                 actorder: str | None = None) -> dict[str, Any]:
    """One config group's ``weights`` arguments (compressed-tensors' ``QuantizationArgs``)."""
    return {"num_bits": bits, "type": "int", "symmetric": symmetric, "strategy": strategy,
            "group_size": group_size, "actorder": actorder}


def _qparams(layer: Any) -> tuple[Any, Any]:
    """The tool's scales and zero points for ``layer``'s weight: ``calculate_qparams`` over
    each group's (or output channel's) min and max, as its min-max observer feeds it. An
    empty weight has no min or max: it gets the range of an all-zero one (the tool's
    smallest scale)."""
    helpers = require_peer("compressed_tensors.quantization.utils", "compressed-tensors")
    weight, args = layer.weight.data, layer.quantization_scheme.weights
    if not weight.numel():
        zeros = weight.new_zeros(layer.weight_scale.shape)
        return helpers.calculate_qparams(zeros, zeros, args)
    if args.strategy == "group":
        weight = weight.unflatten(-1, (weight.shape[1] // args.group_size, args.group_size))
        return helpers.calculate_qparams(weight.amin(-1), weight.amax(-1), args)
    return helpers.calculate_qparams(weight.amin(1, keepdim=True),
                                     weight.amax(1, keepdim=True), args)


def write_ct(folder: Path, specs: list[tuple[str, int, int, dict[str, Any], str]],
             fmt: str | None = None, formats: dict[str, str] | None = None) -> dict[str, Any]:
    """``folder/model.safetensors`` and ``folder/config.json`` as compressed-tensors writes
    them for one ``Linear`` weight per spec (prefix, rows, cols, weights args, model dtype).

    Args:
        fmt: a compression format to write into config.json instead of ``pack-quantized``
            (a config the tool no longer writes, for refusals); the tensors are unchanged.
        formats: a compression format per prefix other than ``pack-quantized`` (the tool
            then writes the model's format as ``mixed-precision``).

    Returns:
        ``{prefix.weight: the tool's decompressed weight}`` (torch, in the scale's dtype) for
        every weight that is not empty (the tool's own ``unpack_from_int32`` fails on a 4-bit
        weight without rows: ``view(0, -1)`` is ambiguous to torch).
    """
    torch = require_peer("torch")
    ct = require_peer("compressed_tensors", "compressed-tensors")
    quant = require_peer("compressed_tensors.quantization", "compressed-tensors")
    safetensors = require_peer("safetensors.torch", "safetensors")
    model, groups = torch.nn.Module(), {}
    for i, (prefix, rows, cols, args, dtype) in enumerate(specs):
        rng = stable_rng("ct", prefix, rows, cols)
        layer = torch.nn.Linear(cols, rows, bias=False, dtype=getattr(torch, dtype))
        layer.weight.data.copy_(torch.from_numpy(rng.normal(0, 0.05, (rows, cols))))
        model.add_module(prefix, layer)
        groups[f"group_{i}"] = quant.QuantizationScheme(
            targets=[f"re:^{prefix}$"], weights=quant.QuantizationArgs(**args),
            format=(formats or {}).get(prefix, "pack-quantized"))
    config = quant.QuantizationConfig(config_groups=groups)
    quant.apply_quantization_config(model, config, show_progress=False)
    for layer in model.children():
        scale, zero = _qparams(layer)
        layer.weight_scale.data.copy_(scale)
        layer.weight_zero_point.data.copy_(zero)
    compressor = ct.compressors.ModelCompressor.from_pretrained_model(model)
    compressor.compress_model(model)
    safetensors.save_file(model.state_dict(), str(folder / "model.safetensors"))
    compressor.update_config(str(folder))
    if fmt is not None:
        _set_format(folder, fmt)
    saved = safetensors.load_file(str(folder / "model.safetensors"))
    peers = {}
    for prefix, rows, cols, *_ in specs:
        scheme = getattr(model, prefix).quantization_scheme
        local = {k[len(prefix) + 1:]: v for k, v in saved.items() if k.startswith(prefix + ".")}
        if rows * cols:  # the compressor of the weight's own format
            codec = ct.compressors.BaseCompressor.get_value_from_registry(scheme.format)
            peers[prefix + ".weight"] = codec.decompress(local, scheme)["weight"]
    return peers


def _set_format(folder: Path, fmt: str) -> None:
    """Rewrite ``config.json``'s compression format (the model's and every group's)."""
    config = json.loads((folder / "config.json").read_text())
    qc = config["quantization_config"]
    qc["format"] = fmt
    for group in qc["config_groups"].values():
        group["format"] = fmt
    (folder / "config.json").write_text(json.dumps(config))
