"""bitsandbytes checkpoints that do not map, or lie: refusals by name and typed errors; and
the forms that map beside the common one (plain tensors beside NF4 weights, quant_storage)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.cli import main
from hurray_gpu.errors import ConversionError, UnsupportedConversionError
from tests._support import require_peer, stable_rng
from tests.hurray._bnb_samples import quantize, write_bnb
from tests.hurray._convert_samples import write_safetensors

STATE = "w.quant_state.bitsandbytes__nf4"


def _weight(nested: bool = True, shape: tuple[int, ...] = (4, 64)) -> dict[str, np.ndarray]:
    q, _, parts = quantize(shape, 64, nested)
    return {"w": q.numpy(), **{f"w.{k}": v for k, v in parts.items()}}


def _blob(state: dict) -> np.ndarray:
    return np.frombuffer(json.dumps(state).encode(), np.uint8).copy()


def _convert(tmp_path: Path, tensors: dict[str, np.ndarray]) -> None:
    write_safetensors(tmp_path / "b.safetensors", tensors)
    hg.convert(tmp_path / "b.safetensors", tmp_path / "b.hrry", device="reference")


def test_fp4_is_refused_with_the_reason(tmp_path: Path) -> None:
    q, _, parts = quantize((4, 64), 64, False, quant_type="fp4")
    tensors = {"w": q.numpy(), **{f"w.{k}": v for k, v in parts.items()}}
    with pytest.raises(UnsupportedConversionError, match=r"'w'.*bnb-fp4.*not OCP e2m1"):
        _convert(tmp_path, tensors)
    assert not (tmp_path / "b.hrry").exists()


def test_llm_int8_is_refused_with_the_reason(tmp_path: Path) -> None:
    # the reason holds: bnb's (CB * SCB) * (1/127) is not one product by f32(SCB / 127)
    torch = require_peer("torch")
    bnb = require_peer("bitsandbytes")
    w = torch.tensor(stable_rng("int8").standard_normal((64, 256)), dtype=torch.float16)
    cb, scb, _ = bnb.functional.int8_vectorwise_quant(w)
    want = bnb.functional.int8_vectorwise_dequant(cb, scb).numpy()
    one = cb.numpy().astype(np.float32) * (scb.numpy() * np.float32(1 / 127))[:, None]
    assert not np.array_equal(one, want)
    tensors = {"fc.weight": np.ones((2, 8), np.int8), "fc.SCB": np.ones(2, np.float32)}
    with pytest.raises(UnsupportedConversionError, match=r"'fc.weight'.*two roundings"):
        _convert(tmp_path, tensors)


def _state(nested: bool = True) -> dict:
    return json.loads(_weight(nested)[STATE].tobytes())


@pytest.mark.parametrize(("change", "message"), [
    (lambda s: s.update(shape=[4, 66]), "holds 128 bytes, but shape"),
    (lambda s: s.update(shape=[4, -64]), "needs quant_type 'nf4'"),
    (lambda s: s.update(blocksize=48), "power-of-two blocksize"),
    (lambda s: s.update(blocksize=1 << 62), "absmax is U8 of 4 bytes, but the quant state"),
    (lambda s: s.update(quant_type="int4"), "needs quant_type 'nf4'"),
    (lambda s: s.update(dtype="int8"), "a float dtype"),
    (lambda s: s.update(nested_blocksize=0), "positive int nested_blocksize"),
    (lambda s: s.update(nested_offset="x"), "finite nested_offset"),
    (lambda s: s.update(nested_blocksize=1), "nested_absmax is F32 of 4 bytes"),
])
def test_an_inconsistent_quant_state_is_a_typed_error(tmp_path: Path, change, message) -> None:
    tensors = _weight()
    state = json.loads(tensors[STATE].tobytes())
    change(state)
    tensors[STATE] = _blob(state)
    with pytest.raises(ConversionError, match=message):
        _convert(tmp_path, tensors)


@pytest.mark.parametrize(("part", "value", "message"), [
    ("w.absmax", np.zeros(3, np.uint8), "absmax is U8 of 3 bytes"),
    ("w.absmax", np.zeros(4, np.float32), "absmax is F32 of 16 bytes"),
    ("w.nested_quant_map", np.zeros(255, np.float32), "nested_quant_map is F32 of 1020"),
    ("w.quant_map", np.linspace(-1, 1, 16).astype(np.float32), "not the NF4 table"),
    (STATE, np.zeros(3, np.uint8), "not JSON"),
    (STATE, np.zeros(3, np.float32), "not a uint8 JSON blob"),
    ("w", np.zeros(31, np.uint8), "holds 31 bytes"),
])
def test_parts_that_do_not_fit_are_typed_errors(tmp_path: Path, part: str, value: np.ndarray,
                                                message: str) -> None:
    tensors = _weight()
    tensors[part] = value
    with pytest.raises(ConversionError, match=message):
        _convert(tmp_path, tensors)


def test_a_missing_part_is_named(tmp_path: Path) -> None:
    tensors = _weight()
    del tensors["w.nested_absmax"]
    with pytest.raises(ConversionError, match="needs the tensor w.nested_absmax, which is missing"):
        _convert(tmp_path, tensors)


def test_a_negative_decoded_absmax_is_refused(tmp_path: Path) -> None:
    tensors = _weight()
    state = json.loads(tensors[STATE].tobytes())
    state["nested_offset"] = -1e6
    tensors[STATE] = _blob(state)
    with pytest.raises(UnsupportedConversionError, match="block 0 decodes to absmax -"):
        _convert(tmp_path, tensors)


def test_plain_tensors_beside_nf4_weights_stay_plain(tmp_path: Path) -> None:
    bias = np.arange(6, dtype=np.float32)
    write_bnb(tmp_path / "m.safetensors", [((4, 64), 64, True)], extra={"l0.bias": bias})
    result = hg.convert(tmp_path / "m.safetensors", tmp_path / "m.hrry")
    assert result.kinds == {"bnb-nf4": 1, "F32": 1}
    with hg.open_file(tmp_path / "m.hrry") as f:
        assert sorted(f.names) == ["l0.bias", "l0.weight"]
        assert f.read("l0.bias").numpy().tolist() == bias.tolist()


def test_the_cli_converts_and_names_the_form(tmp_path: Path,
                                             capsys: pytest.CaptureFixture) -> None:
    write_bnb(tmp_path / "m.safetensors", [((4, 64), 64, True)])
    assert main(["convert", str(tmp_path / "m.safetensors"), str(tmp_path / "m.hrry"),
                 "--device", "reference"]) == 0
    text = capsys.readouterr().out
    assert "bnb-nf4" in text and "uint4 NF4, block 64" in text and "checked on reference" in text


@pytest.mark.parametrize("storage", ["bfloat16", "float32"])
def test_other_quant_storage_types_map(tmp_path: Path, storage: str) -> None:
    # bnb's quant_storage (for FSDP) only relabels the packed bytes: they map as uint8 would
    torch = require_peer("torch")
    bnb = require_peer("bitsandbytes")
    w = torch.tensor(stable_rng("storage", storage).standard_normal((8, 128)), dtype=torch.float32)
    q, state = bnb.functional.quantize_4bit(w, quant_type="nf4", blocksize=64,
                                            compress_statistics=True,
                                            quant_storage=getattr(torch, storage))
    tensors = {"w": q, **{f"w.{k}": v for k, v in state.as_dict(packed=True).items()}}
    require_peer("safetensors.torch", "safetensors").save_file(tensors, str(tmp_path / "q.st"))
    hg.convert(tmp_path / "q.st", tmp_path / "q.hrry", device="reference")
    with hg.open_file(tmp_path / "q.hrry") as f:
        got = hg.dequantize(f.read("w"), "float32").numpy()
    want = bnb.functional.dequantize_4bit(q, state).numpy()
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_the_fp4_reason_holds() -> None:
    bnb = require_peer("bitsandbytes")
    levels = bnb.functional.get_4bit_type("fp4", device="cpu").numpy()[:8] * 12
    e2m1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], np.float32) * 2
    assert sorted(np.round(levels, 4).tolist()) == [0, 0.0625, 2, 3, 4, 6, 8, 12]
    assert sorted(set(levels.round(4).tolist()) ^ set(e2m1.tolist())) == [0.0625, 1.0]
