"""hg.convert of compressed-tensors pack-quantized checkpoints written by compressed-tensors
itself: every device decodes each weight bit for bit as the tool's own decompress does, in the
scale's own type."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.ops import dequantize
from tests._support import require_peer
from tests.hurray._ct_samples import weights_args, write_ct

# int4/int8, group (several sizes; a partial word per row) and channel, symmetric or not,
# scales in bfloat16, float16 and float32; odd and unaligned rows. Asymmetric int4 group weights
# have more than 8 rows: compressed-tensors 0.20.1 cannot decompress its own zero points packed
# into a single word row of several groups (the transposed (groups, 1) view is "contiguous" to
# torch, and .view(uint8) then fails: "stride(-1) must be 1").
SPECS = [
    ("a", 8, 256, weights_args(4, "group", 128, True), "bfloat16"),
    ("b", 12, 96, weights_args(4, "group", 32, False), "float16"),
    ("c", 5, 64, weights_args(8, "group", 16, False), "float32"),
    ("d", 7, 40, weights_args(8, "channel", None, True), "bfloat16"),
    ("e", 10, 36, weights_args(4, "channel", None, False), "float16"),
    ("f", 9, 72, weights_args(8, "channel", None, False), "float32"),
    ("g", 4, 33, weights_args(4, "channel", None, True), "float32"),
    ("h", 4, 128, weights_args(4, "group", 64, True, "weight"), "bfloat16"),
]


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    folder = tmp_path_factory.mktemp("ct")
    peers = write_ct(folder, SPECS)
    hg.convert(folder / "model.safetensors", folder / "model.hrry")
    return folder / "model.hrry", peers


def test_pack_quantized_decodes_like_compressed_tensors(device, converted) -> None:
    torch = require_peer("torch")
    path, peers = converted
    with hg.open_file(path) as f:
        for prefix, rows, cols, _, dtype in SPECS:
            packed = f.read(prefix + ".weight")
            assert packed.shape == (rows, cols)
            want = peers[prefix + ".weight"]  # the tool's decompress of its own file
            assert want.dtype == getattr(torch, dtype)  # it computes in the scale's type
            got = dequantize(packed.to(device), dtype).to("cpu").numpy()
            width = (np.int32, torch.int32) if dtype == "float32" else (np.int16, torch.int16)
            assert np.array_equal(got.view(width[0]), want.view(width[1]).numpy()), prefix


def test_forms(converted) -> None:
    path, _ = converted
    with hg.open_file(path) as f:
        forms = {}
        for prefix, *_ in SPECS:
            t = f.read(prefix + ".weight")
            quant = t.descriptor.quantization
            forms[prefix] = (t.dtype.name, quant.SCHEME, quant.axis,
                             getattr(quant, "block_size", 0), quant.symmetric)
    assert forms == {"a": ("int4", 3, 1, 128, True), "b": ("int4", 3, 1, 32, False),
                     "c": ("int8", 3, 1, 16, False), "d": ("int8", 2, 0, 0, True),
                     "e": ("int4", 2, 0, 0, False), "f": ("int8", 2, 0, 0, False),
                     "g": ("int4", 2, 0, 0, True), "h": ("int4", 3, 1, 64, True)}


def test_convert_checks_every_weight_on_the_device(device, tmp_path: Path) -> None:
    write_ct(tmp_path, SPECS)
    result = hg.convert(tmp_path / "model.safetensors", tmp_path / "m.hrry", device=device)
    assert result.checked_on == device.spec and result.tensors == len(SPECS)
