"""torchao MX checkpoints that do not map, or lie: refusals by name and typed errors; the
converter reads them without torchao's code; and the CLI names the form."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.cli import main
from hurray_gpu.errors import ConversionError, UnsupportedConversionError
from tests._support import require_peer, stable_rng


def _mx(elem: Any = "float8_e4m3fn", shape: tuple[int, ...] = (4, 64), **state: Any) -> Any:
    """An MXTensor torchao quantized, with parts of its state replaced by ``state``."""
    torch = require_peer("torch")
    require_peer("torchao")
    from torchao.prototype.mx_formats.mx_tensor import MXTensor

    w = torch.from_numpy(stable_rng("torchao-bad", str(elem), shape).normal(size=shape)
                         .astype(np.float32))
    t = MXTensor.to_mx(w, getattr(torch, str(elem), elem), block_size=32)
    parts = {"qdata": t.qdata, "scale": t.scale, "elem_dtype": t.elem_dtype, "block_size": 32}
    parts.update(state)
    return MXTensor(parts["qdata"], parts["scale"], parts["elem_dtype"], parts["block_size"],
                    torch.float32, t.kernel_preference, None, False)


def _convert(tmp_path: Path, t: Any) -> hg.ConversionResult:
    require_peer("torch").save({"w": t, "b": require_peer("torch").zeros(3)}, tmp_path / "m.pt")
    return hg.convert(tmp_path / "m.pt", tmp_path / "m.hrry", device="reference")


def _scale(t: Any, block: int, byte: int) -> Any:
    scale = t.scale.view(require_peer("torch").uint8).clone()
    scale.view(-1)[block] = byte
    return scale.view(t.scale.dtype)


def test_nan_scale_is_refused_with_the_reason(tmp_path: Path) -> None:
    t = _mx()
    with pytest.raises(UnsupportedConversionError, match=r"'w'.*block 3 has scale byte 0xFF"):
        _convert(tmp_path, _mx(scale=_scale(t, 3, 0xFF)))
    assert not (tmp_path / "m.hrry").exists()


def test_smallest_scale_on_nonzero_codes_is_refused(tmp_path: Path) -> None:
    t = _mx("fp6_e3m2")
    with pytest.raises(UnsupportedConversionError, match=r"block 5 has scale byte 0x00"):
        _convert(tmp_path, _mx("fp6_e3m2", scale=_scale(t, 5, 0)))


def test_unknown_element_type_and_block_size_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedConversionError, match=r"element type 'fp5_e2m2'"):
        _convert(tmp_path, _mx(elem_dtype="fp5_e2m2"))
    with pytest.raises(UnsupportedConversionError, match=r"block_size 8 is not a power"):
        _convert(tmp_path, _mx(block_size=8))


def test_parts_of_the_wrong_size_or_type_are_conversion_errors(tmp_path: Path) -> None:
    torch = require_peer("torch")
    t = _mx()
    with pytest.raises(ConversionError, match=r"scale holds 7 bytes.*needs 8"):
        _convert(tmp_path, _mx(scale=t.scale.reshape(-1)[:7]))
    with pytest.raises(ConversionError, match=r"not a positive multiple of block_size 32"):
        _convert(tmp_path, _mx(qdata=t.qdata[:, :48].contiguous()))
    with pytest.raises(ConversionError, match=r"qdata is float8_e5m2, but fp6_e2m3 needs uint8"):
        _convert(tmp_path, _mx("fp6_e2m3", qdata=torch.zeros(4, 64, dtype=torch.float8_e5m2)))
    bad = _mx("fp6_e2m3")
    with pytest.raises(ConversionError, match=r"fp6 code 0x[4-7]f does not fit in 6 bits"):
        _convert(tmp_path, _mx("fp6_e2m3", qdata=bad.qdata | 0x40))


@pytest.mark.parametrize("elem", ["float8_e4m3fn", "float4_e2m1fn_x2"])
def test_quantize_workflow_converts_without_torchao(tmp_path: Path, elem: str) -> None:
    # torchao's inference workflow: quantize_ a bf16 Linear, save its state dict (swizzled
    # scales, activation settings and kernel preference pickled beside the weight)
    torch = require_peer("torch")
    require_peer("torchao")
    from torchao.prototype.mx_formats.inference_workflow import (
        MXDynamicActivationMXWeightConfig,
    )
    from torchao.quantization import quantize_

    torch.manual_seed(int(stable_rng("workflow", elem).integers(1 << 31)))
    model = torch.nn.Sequential(torch.nn.Linear(256, 160)).to(torch.bfloat16)
    kind = getattr(torch, elem)
    quantize_(model, MXDynamicActivationMXWeightConfig(activation_dtype=kind, weight_dtype=kind))
    sd = model.state_dict()
    assert sd["0.weight"].is_swizzled_scales and sd["0.weight"].act_quant_kwargs is not None
    torch.save(sd, tmp_path / "m.pt")
    script = ("import sys; sys.modules['torchao'] = None\n"  # importing torchao now fails
              "import hurray_gpu as hg\n"
              f"hg.convert({str(tmp_path / 'm.pt')!r}, {str(tmp_path / 'm.hrry')!r})\n")
    subprocess.run([sys.executable, "-c", script], check=True)
    with hg.open_file(tmp_path / "m.hrry") as f:
        for dtype, bits in (("float32", torch.int32), ("bfloat16", torch.int16)):
            got = hg.dequantize(f.read("0.weight"), dtype).numpy()
            want = sd["0.weight"].dequantize(getattr(torch, dtype)).view(bits).numpy()
            assert np.array_equal(got.view(want.dtype), want), dtype
        assert np.array_equal(f.read("0.bias").numpy().view(np.int16),
                              sd["0.bias"].view(torch.int16).numpy())


def test_converting_needs_no_torchao_code(tmp_path: Path) -> None:
    torch = require_peer("torch")
    t = _mx("float4_e2m1fn_x2")
    torch.save({"w": t}, tmp_path / "m.pt")
    script = ("import sys; sys.modules['torchao'] = None\n"  # importing torchao now fails
              "import hurray_gpu as hg, numpy as np\n"
              f"hg.convert({str(tmp_path / 'm.pt')!r}, {str(tmp_path / 'm.hrry')!r})\n"
              "assert 'torchao' not in {m.split('.')[0] for m in sys.modules if sys.modules[m]}\n")
    subprocess.run([sys.executable, "-c", script], check=True)
    with hg.open_file(tmp_path / "m.hrry") as f:
        got = hg.dequantize(f.read("w"), "float32").numpy()
    assert np.array_equal(got.view(np.int32), t.dequantize(torch.float32).view(torch.int32).numpy())


def test_the_cli_converts_and_names_the_form(tmp_path: Path,
                                             capsys: pytest.CaptureFixture) -> None:
    require_peer("torch").save({"w": _mx("float8_e5m2")}, tmp_path / "m.pt")
    assert main(["convert", str(tmp_path / "m.pt"), str(tmp_path / "m.hrry"),
                 "--device", "reference"]) == 0
    text = capsys.readouterr().out
    assert "mx-float8_e5m2" in text and "checked on reference" in text


def _flat(tmp_path: Path, sd: dict[str, Any], edit: Any = None) -> None:
    """Write ``sd`` as torchao flattens it for safetensors, after ``edit(data, metadata)``."""
    st = require_peer("safetensors.torch", "safetensors")
    from torchao.prototype.safetensors.safetensors_support import flatten_tensor_state_dict

    data, metadata = flatten_tensor_state_dict(sd)
    if edit:
        edit(data, metadata)
    st.save_file(data, str(tmp_path / "m.safetensors"), metadata=metadata)
    hg.convert(tmp_path / "m.safetensors", tmp_path / "m.hrry", device="reference")


def test_flattened_parts_that_lie_are_conversion_errors(tmp_path: Path) -> None:
    torch = require_peer("torch")
    sd = {"l.weight": _mx("fp6_e3m2"), "l.bias": torch.zeros(4)}
    with pytest.raises(ConversionError, match=r"'l.weight'.*l._weight_scale \(F8_E8M0\) are "
                       "missing"):
        _flat(tmp_path, sd, lambda data, meta: data.pop("l._weight_scale"))
    with pytest.raises(ConversionError, match=r"scale holds 4 bytes.*needs 8"):
        _flat(tmp_path, sd, lambda data, meta: data.update(
            {"l._weight_scale": data["l._weight_scale"][:2].contiguous()}))
    with pytest.raises(ConversionError, match=r"tensor_names is not JSON"):
        _flat(tmp_path, sd, lambda data, meta: meta.update({"tensor_names": "[l.weight"}))
    with pytest.raises(ConversionError, match=r"holds both a tensor of this name"):
        _flat(tmp_path, sd, lambda data, meta: data.update({"l.weight": torch.zeros(2)}))
    with pytest.raises(ConversionError, match=r"lists .l.w2., which has no torchao state"):
        _flat(tmp_path, sd, lambda data, meta: meta.update(
            {"tensor_names": '["l.weight", "l.bias", "l.w2"]'}))


def test_other_torchao_subclasses_and_stray_e8m0_are_refused(tmp_path: Path) -> None:
    torch = require_peer("torch")
    sd = {"l.weight": _mx("float8_e4m3fn"), "l.bias": torch.zeros(4)}

    def relabel(data: dict, meta: dict) -> None:
        meta["l.weight"] = meta["l.weight"].replace('"MXTensor"', '"Float8Tensor"')

    with pytest.raises(UnsupportedConversionError, match=r"torchao's Float8Tensor is not mapped"):
        _flat(tmp_path, sd, relabel)
    with pytest.raises(UnsupportedConversionError, match=r"'s'.*F8_E8M0.*forbids the bytes"):
        _flat(tmp_path, sd, lambda data, meta: data.update({"s": data["l._weight_scale"]
                                                            .clone()}))


@pytest.mark.parametrize(("elem", "code"), [("float8_e4m3fn", 0x7F), ("float8_e4m3fn", 0xFF),
                                            ("float8_e5m2", 0x7D), ("float8_e5m2", 0xFE)])
def test_nan_element_codes_are_refused(tmp_path: Path, elem: str, code: int) -> None:
    # torch decodes an fp8 NaN keeping payload bits (0x7FF00000), Hurray to 0x7FC00000
    torch = require_peer("torch")
    t = _mx(elem)
    q = t.qdata.view(torch.uint8).clone()
    q.view(-1)[37] = code
    with pytest.raises(UnsupportedConversionError, match=r"element 37 is a NaN code"):
        _convert(tmp_path, _mx(elem, qdata=q.view(t.qdata.dtype)))
    q.view(-1)[37] = 0x7C  # e5m2 infinity (e4m3 448): decodes to the same bits
    _convert(tmp_path, _mx(elem, qdata=q.view(t.qdata.dtype)))
    with hg.open_file(tmp_path / "m.hrry") as f:
        got = hg.dequantize(f.read("w"), "float32").numpy().view(np.int32)
    assert np.array_equal(got, _mx(elem, qdata=q.view(t.qdata.dtype)).dequantize(
        torch.float32).view(torch.int32).numpy())
