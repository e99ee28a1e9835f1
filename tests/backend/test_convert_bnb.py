"""hg.convert of bitsandbytes NF4 safetensors: every device decodes each weight bit for bit as
bitsandbytes does (its flat-block reference and, where blocks do not cross rows, its CPU
kernel), in float32, float16 and bfloat16."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.ops import dequantize
from hurray_gpu.ops.plan import nf4_table
from tests._support import require_peer
from tests.hurray._bnb_samples import SPECS, write_bnb


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    folder = tmp_path_factory.mktemp("bnb")
    peers = write_bnb(folder / "nf4.safetensors")
    hg.convert(folder / "nf4.safetensors", folder / "nf4.hrry")
    return folder / "nf4.hrry", peers


def _bnb(q: object, state: object, dtype: str, kernel: bool) -> np.ndarray:
    """bitsandbytes' decoding: its CPU kernel (``dequantize_4bit``) or its flat-block torch
    reference (``_dequantize_4bit_compute``, which its own comment says matches C++/CUDA)."""
    torch = require_peer("torch")
    bnb = require_peer("bitsandbytes")
    from bitsandbytes.backends.default.ops import _dequantize_4bit_compute

    state.dtype = getattr(torch, dtype)  # type: ignore[attr-defined]
    if kernel:
        out = bnb.functional.dequantize_4bit(q, state)
    else:
        absmax = state.absmax  # type: ignore[attr-defined]
        if state.nested:  # type: ignore[attr-defined]
            absmax = bnb.functional.dequantize_blockwise(absmax, state.state2)  # type: ignore
            absmax += state.offset  # type: ignore[attr-defined]
        out = _dequantize_4bit_compute(q.reshape(-1), absmax,  # type: ignore[attr-defined]
                                       state.code, state.blocksize,  # type: ignore
                                       state.shape, state.dtype)  # type: ignore
    return out.view(torch.int16 if dtype != "float32" else torch.int32).numpy()


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_nf4_decodes_like_bitsandbytes(device, converted, dtype: str) -> None:
    path, peers = converted
    with hg.open_file(path) as f:
        for i, (shape, blocksize, _) in enumerate(SPECS):
            q, state = peers[f"l{i}.weight"]
            t = f.read(f"l{i}.weight")
            got = dequantize(t.to(device), dtype).to("cpu").numpy().reshape(shape)
            got = got.view(np.int32 if dtype == "float32" else np.int16)
            assert np.array_equal(got, _bnb(q, state, dtype, kernel=False)), (shape, dtype)
            if shape and shape[-1] % blocksize == 0:  # bnb's CPU kernel agrees only here
                assert np.array_equal(got, _bnb(q, state, dtype, kernel=True)), shape


def test_bitsandbytes_nf4_table_is_hurrays() -> None:
    bnb = require_peer("bitsandbytes")
    levels = bnb.functional.get_4bit_type("nf4", device="cpu").numpy()
    assert levels.view(np.uint32).tolist() == nf4_table().view(np.uint32).tolist()


def test_layouts_keep_blocks_inside_rows(converted) -> None:
    path, _ = converted
    with hg.open_file(path) as f:
        flat = {k.removeprefix("bitsandbytes.shape."): json.loads(v)
                for k, v in f.metadata.items()}
        assert flat == {"l2.weight": [5, 33]}  # 33: no power of two >= 8 divides it
        forms = [(f.read(f"l{i}.weight").shape, f.read(f"l{i}.weight").descriptor.quantization)
                 for i in range(len(SPECS))]
    assert [(s, q.axis, q.block_size) for s, q in forms[:4]] == [
        ((16, 96), 1, 32), ((8, 256), 1, 128), ((165,), 0, 64), ((3, 40), 1, 8)]


def test_convert_checks_every_weight_on_the_device(device, tmp_path: Path) -> None:
    write_bnb(tmp_path / "c.safetensors", SPECS[:4])
    result = hg.convert(tmp_path / "c.safetensors", tmp_path / "c.hrry", device=device)
    assert result.checked_on == device.spec and result.kinds == {"bnb-nf4": 4}
