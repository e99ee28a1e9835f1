"""hg.convert of torchao MX tensors (a ``torch.save`` state dict that torchao itself wrote, and
the safetensors form torchao's ``flatten_tensor_state_dict`` gives):
every device decodes each weight bit for bit as torchao's ``MXTensor.dequantize`` does, in
float32 and bfloat16, for every MX element type, with plain and swizzled scales and with the
all-zero blocks torchao gives the scale byte 0x00."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.ops import dequantize
from tests._support import require_peer, stable_rng

ELEMS = ["float8_e4m3fn", "float8_e5m2", "fp6_e2m3", "fp6_e3m2", "float4_e2m1fn_x2"]


def write_mx(path: Path) -> dict[str, Any]:
    """torchao's MXTensor.to_mx of seeded weights (rows 3 and 5 hold all-zero blocks, +0 and
    -0), saved by torch.save; returns the MXTensors."""
    torch = require_peer("torch")
    require_peer("torchao")
    from torchao.prototype.mx_formats.mx_tensor import MXTensor

    sd: dict[str, Any] = {}
    for elem in ELEMS:
        kind = getattr(torch, elem, elem)
        for swizzled in (False, True):
            shape = (130, 64) if swizzled else (2, 65, 96)
            rng = stable_rng("torchao", elem, swizzled)
            w = torch.from_numpy(rng.normal(size=shape).astype(np.float32)).to(torch.bfloat16)
            w[..., 3, :32], w[..., 5, 32:64] = 0.0, -0.0
            sd[f"{elem}.{'swizzled' if swizzled else 'plain'}"] = MXTensor.to_mx(
                w, kind, block_size=32, is_swizzled_scales=swizzled)
    torch.save(sd, path)
    return sd


def write_mx_safetensors(path: Path, sd: dict[str, Any]) -> None:
    """The same tensors as torchao's ``flatten_tensor_state_dict`` flattens them for
    safetensors (``P._W_qdata``, ``P._W_scale``, the state as JSON in ``__metadata__``)."""
    require_peer("torchao")
    st = require_peer("safetensors.torch", "safetensors")
    from torchao.prototype.safetensors.safetensors_support import flatten_tensor_state_dict

    data, metadata = flatten_tensor_state_dict({f"m.{k}": v for k, v in sd.items()})
    st.save_file(data, str(path), metadata=metadata)


@pytest.fixture(scope="module", params=["torch.save", "safetensors"])
def converted(request: pytest.FixtureRequest,
              tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], Path]:
    folder = tmp_path_factory.mktemp("torchao")
    sd = write_mx(folder / "mx.pt")
    if request.param == "safetensors":
        write_mx_safetensors(folder / "mx.safetensors", sd)
        sd = {f"m.{k}": v for k, v in sd.items()}
    source = folder / ("mx.pt" if request.param == "torch.save" else "mx.safetensors")
    result = hg.convert(source, folder / "mx.hrry")
    assert result.kinds == {f"mx-{e}": 2 for e in ELEMS}
    return folder / "mx.hrry", sd, source


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_mx_decodes_like_torchao(device, converted, dtype: str) -> None:
    torch = require_peer("torch")
    path, sd, _ = converted
    bits = np.int32 if dtype == "float32" else np.int16
    with hg.open_file(path) as f:
        for name, mx in sd.items():
            want = mx.dequantize(getattr(torch, dtype)).view(getattr(torch, bits.__name__))
            got = dequantize(f.read(name).to(device), dtype).to("cpu").numpy().view(bits)
            assert got.shape == tuple(want.shape), name
            assert np.array_equal(got, want.numpy()), (name, dtype)


def test_zero_blocks_keep_their_signed_zeros(converted) -> None:
    torch = require_peer("torch")
    path, sd, _ = converted
    name = next(k for k in sd if k.endswith("float4_e2m1fn_x2.plain"))
    mx = sd[name]
    assert (mx.scale.view(torch.uint8)[..., 3:6, :2] == 0).sum() >= 2  # torchao wrote 2^-127
    with hg.open_file(path) as f:
        t = f.read(name)
        assert t.descriptor.quantization.block_size == 32
        got = dequantize(t, "float32").numpy()
    assert np.signbit(got[..., 5, 32:64]).all() and not np.signbit(got[..., 3, :32]).any()
    assert not got[..., 3, :32].any() and not got[..., 5, 32:64].any()


def test_convert_checks_every_tensor_on_the_device(device, converted, tmp_path: Path) -> None:
    # convert(device=) compares the device's decoding with the converter's transcription of
    # torchao's, so that transcription must itself agree with torchao
    _, _, source = converted
    result = hg.convert(source, tmp_path / "again.hrry", device=device)
    assert result.kinds == {f"mx-{e}": 2 for e in ELEMS}


SCALES = [1, 2, 3, 100, 127, 128, 200, 253, 254]  # 2^-126 (products go subnormal) .. 2^127


def every_code(elem: str) -> Any:
    """A torchao MXTensor holding every code of ``elem`` but fp8 NaNs (refused), under every
    scale of SCALES (row r: scale SCALES[r]), and a last row of +0 and -0 codes with scale 0x00
    (torchao's for all-zero blocks)."""
    torch = require_peer("torch")
    require_peer("torchao")
    from torchao.prototype.mx_formats.mx_tensor import MXTensor

    if elem.startswith("float8"):
        nan = 0x7F if elem == "float8_e4m3fn" else 0x7D
        codes = np.array([c for c in range(256) if c & 0x7F < nan], np.uint8)
    else:
        codes = np.arange(64 if elem.startswith("fp6") else 16, dtype=np.uint8)
    row = np.resize(codes, -(-codes.size // 32) * 32)
    sign = 0x80 if elem.startswith("float8") else 0x20 if elem.startswith("fp6") else 0x08
    zeros = np.where(np.arange(row.size) % 2, sign, 0).astype(np.uint8)  # +0, -0, +0, ...
    rows = np.stack([row] * len(SCALES) + [zeros])
    scale = np.repeat(np.array([*SCALES, 0], np.uint8)[:, None], row.size // 32, axis=1)
    q = torch.from_numpy(rows[:, 0::2] | rows[:, 1::2] << 4 if elem == "float4_e2m1fn_x2"
                         else rows)
    q = q.view(getattr(torch, elem)) if elem.startswith("float8") else q
    return MXTensor(q, torch.from_numpy(scale).view(torch.float8_e8m0fnu),
                    getattr(torch, elem, elem), 32, torch.float32, None, None, False)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_every_code_under_every_scale(device, tmp_path_factory, dtype: str) -> None:
    # torchao's decoding agrees with OCP's element values and e8m0 scales (subnormal
    # products, and 448 * 2^127 overflowing to inf, included), so Hurray's does on every device
    torch = require_peer("torch")
    folder = tmp_path_factory.mktemp("codes")
    sd = {elem: every_code(elem) for elem in ELEMS}
    torch.save(sd, folder / "codes.pt")
    hg.convert(folder / "codes.pt", folder / "codes.hrry")
    bits = np.int32 if dtype == "float32" else np.int16
    with hg.open_file(folder / "codes.hrry") as f:
        for elem, mx in sd.items():
            want = mx.dequantize(getattr(torch, dtype)).view(getattr(torch, bits.__name__))
            got = dequantize(f.read(elem).to(device), dtype).to("cpu").numpy().view(bits)
            assert np.array_equal(got, want.numpy()), (elem, dtype)
