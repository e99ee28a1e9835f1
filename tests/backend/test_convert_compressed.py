"""hg.convert of compressed-tensors pack-quantized checkpoints: every device decodes each weight
bit for bit as the tool does (its unpack_from_int32 and dequantize, copied in
tests/hurray/_ct_samples.py as the peer), in the scale's own type."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.ops import dequantize
from tests._support import require_peer
from tests.hurray._ct_samples import dequantize as ct_dequantize
from tests.hurray._ct_samples import unpack_from_int32, weights_args, write_ct

# int4/int8, group (several sizes; a partial word per row) and channel, symmetric or not,
# scales in bfloat16, float16 and float32; odd and unaligned rows. Asymmetric int4 weights have
# more than 8 rows: the tool itself cannot unpack zero points packed into a single word row
# (its transposed (n, 1) view is "contiguous" to torch, and .view(uint8) then fails).
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
        for prefix, rows, cols, args, dtype in SPECS:
            q, scale, zp, group, words, zwords = peers[prefix + ".weight"]
            packed = f.read(prefix + ".weight")
            assert packed.shape == (rows, cols)
            bits = args["num_bits"]
            # the peer decodes the words in the file, as the tool's decompress does
            codes = unpack_from_int32(torch.from_numpy(words), bits, (rows, cols))
            assert torch.equal(codes, q)
            zeros = None
            if zp is not None:
                zeros = unpack_from_int32(torch.from_numpy(zwords), bits,
                                          (rows, scale.shape[1]), packed_dim=0)
                assert torch.equal(zeros, zp)
            want = ct_dequantize(codes, scale, zeros, group)
            got = dequantize(packed.to(device), dtype).to("cpu").numpy()
            width = torch.int32 if dtype == "float32" else torch.int16
            assert np.array_equal(got.view(np.int32 if dtype == "float32" else np.int16),
                                  want.view(width).numpy()), (prefix, dtype)


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
