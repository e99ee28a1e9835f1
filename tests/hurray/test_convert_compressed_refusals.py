"""compressed-tensors checkpoints that do not map, or lie: refusals by name and typed errors.

Each starts as a checkpoint compressed-tensors writes itself; what it will not write (act-order
groups it has dropped, parts that disagree) is made by editing that checkpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.errors import ConversionError, UnsupportedConversionError
from tests.hurray._convert_samples import write_safetensors
from tests.hurray._ct_samples import weights_args, write_ct


def _tensors(folder: Path) -> dict[str, np.ndarray]:
    """The checkpoint's tensors, read back with the format's own layout."""
    data = (folder / "model.safetensors").read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    types = {"I32": np.int32, "I64": np.int64, "F32": np.float32, "F16": np.float16}
    return {k: np.frombuffer(data[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]],
                             types[v["dtype"]]).reshape(v["shape"]) for k, v in header.items()}


def _convert(folder: Path) -> None:
    hg.convert(folder / "model.safetensors", folder / "m.hrry", device="reference")


def _one(folder: Path, args: dict[str, Any], fmt: str | None = None,
         rows: int = 16, cols: int = 64) -> None:
    write_ct(folder, [("w", rows, cols, args, "float32")], fmt)


def _edit_weights(folder: Path, **changes: Any) -> None:
    """Set ``changes`` in every config group's weight arguments of ``folder/config.json``."""
    config = json.loads((folder / "config.json").read_text())
    for group in config["quantization_config"]["config_groups"].values():
        group["weights"].update(changes)
    (folder / "config.json").write_text(json.dumps(config))


# compressed-tensors 0.20 rejects actorder "group"/"dynamic" (and True, their older spelling),
# but checkpoints saved by earlier versions carry them: written as actorder None, then edited.
@pytest.mark.parametrize(("args", "fmt", "actorder", "message"), [
    (weights_args(4, "group", 32, True), None, "group", "actorder 'group' permutes"),
    (weights_args(4, "group", 32, True), None, "dynamic", "actorder 'dynamic'"),
    (weights_args(4, "group", 32, True), None, True, "actorder True"),
    (weights_args(2, "channel", None, True), None, None, "only pack-quantized int4 and"),
    (weights_args(4, "channel", None, True), "marlin-24", None, "format 'marlin-24'"),
])
def test_unmapped_schemes_are_refused_with_the_reason(tmp_path: Path, args, fmt: str | None,
                                                      actorder: Any, message: str) -> None:
    _one(tmp_path, args, fmt)
    if actorder is not None:
        _edit_weights(tmp_path, actorder=actorder)
    with pytest.raises(UnsupportedConversionError, match=rf"'w.weight'.*{message}"):
        _convert(tmp_path)
    assert not (tmp_path / "m.hrry").exists()


def test_a_non_power_of_two_group_is_refused(tmp_path: Path) -> None:
    _one(tmp_path, weights_args(8, "group", 48, False), cols=96)
    with pytest.raises(UnsupportedConversionError, match="group_size 48 is not a power of two"):
        _convert(tmp_path)


def test_g_idx_is_refused(tmp_path: Path) -> None:
    _one(tmp_path, weights_args(4, "group", 32, True))
    tensors = _tensors(tmp_path)
    tensors["w.weight_g_idx"] = np.zeros(64, np.int32)
    write_safetensors(tmp_path / "model.safetensors", tensors)
    with pytest.raises(UnsupportedConversionError, match=r"act-order \(weight_g_idx\)"):
        _convert(tmp_path)


def test_without_config_json_packed_weights_are_refused(tmp_path: Path) -> None:
    _one(tmp_path, weights_args(4, "group", 32, True))
    (tmp_path / "config.json").unlink()
    with pytest.raises(UnsupportedConversionError, match="need the quantization_config"):
        _convert(tmp_path)
    (tmp_path / "config.json").write_text('{"quantization_config": 3}')
    with pytest.raises(UnsupportedConversionError, match="no quantization_config with"):
        _convert(tmp_path)


def test_two_fitting_config_groups_are_ambiguous(tmp_path: Path) -> None:
    _one(tmp_path, weights_args(4, "group", 32, True))
    config = json.loads((tmp_path / "config.json").read_text())
    twin = dict(config["quantization_config"]["config_groups"]["group_0"])
    twin["weights"] = dict(twin["weights"], observer="mse")
    config["quantization_config"]["config_groups"]["group_1"] = twin
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ConversionError, match="2 distinct config groups fit"):
        _convert(tmp_path)


@pytest.mark.parametrize(("part", "value", "message"), [
    ("w.weight_shape", np.array([16, 65], np.int64), "0 distinct config groups fit"),
    ("w.weight_shape", np.array([16, 64, 1], np.int64), "needs weight_shape"),
    ("w.weight_scale", np.ones((16, 3), np.float32), "0 distinct config groups fit"),
    ("w.weight_scale", np.ones(16, np.float32), "needs a 2-D"),
    ("w.weight_packed", np.zeros((16, 8), np.int64), "needs a 2-D I32"),
    ("w.weight_zero_point", np.zeros((3, 2), np.int32), r"not I32 \[2, 2\]"),
])
def test_parts_that_do_not_fit_are_typed_errors(tmp_path: Path, part: str, value: np.ndarray,
                                                message: str) -> None:
    _one(tmp_path, weights_args(4, "group", 32, False))
    tensors = _tensors(tmp_path)
    tensors[part] = value
    write_safetensors(tmp_path / "model.safetensors", tensors)
    with pytest.raises(ConversionError, match=message):
        _convert(tmp_path)


def test_a_zero_scale_is_refused(tmp_path: Path) -> None:
    _one(tmp_path, weights_args(8, "channel", None, True))
    tensors = _tensors(tmp_path)
    tensors["w.weight_scale"] = tensors["w.weight_scale"].copy()
    tensors["w.weight_scale"][5] = 0
    write_safetensors(tmp_path / "model.safetensors", tensors)
    with pytest.raises(UnsupportedConversionError, match="scale 5 is 0.0"):
        _convert(tmp_path)


def test_a_mixed_precision_model_converts_its_pack_quantized_groups(tmp_path: Path) -> None:
    # the tool names the model's format "mixed-precision" and each group's on the group
    write_ct(tmp_path, [("w", 16, 64, weights_args(4, "group", 32, False), "float32"),
                        ("n", 16, 64, weights_args(8, "channel", None, True), "float32")],
             formats={"n": "naive-quantized"})
    config = json.loads((tmp_path / "config.json").read_text())["quantization_config"]
    assert config["format"] == "mixed-precision"
    result = hg.convert(tmp_path / "model.safetensors", tmp_path / "m.hrry", device="reference")
    assert result.kinds["pack-quantized int4 group"] == 1


def test_the_config_lands_in_the_kv_section(tmp_path: Path) -> None:
    _one(tmp_path, weights_args(4, "channel", None, True))
    result = hg.convert(tmp_path / "model.safetensors", tmp_path / "m.hrry")
    assert result.kinds == {"pack-quantized int4 channel": 1}
    with hg.open_file(tmp_path / "m.hrry") as f:
        qc = json.loads(f.metadata["compressed-tensors.quantization_config"])
        assert qc["format"] == "pack-quantized" and f.names == ["w.weight"]


def test_a_weight_stored_twice_is_a_typed_error(tmp_path: Path) -> None:
    _one(tmp_path, weights_args(4, "group", 32, True))
    tensors = _tensors(tmp_path)
    tensors["w.weight"] = np.zeros((16, 64), np.float32)
    write_safetensors(tmp_path / "model.safetensors", tensors)
    with pytest.raises(ConversionError, match="stored both as w.weight and packed"):
        _convert(tmp_path)


@pytest.mark.parametrize(("rows", "cols", "bits"), [(0, 64, 4), (16, 0, 8), (0, 0, 4)])
def test_empty_weights_convert(tmp_path: Path, rows: int, cols: int, bits: int) -> None:
    _one(tmp_path, weights_args(bits, "channel", None, False), rows=rows, cols=cols)
    _convert(tmp_path)
    with hg.open_file(tmp_path / "m.hrry") as f:
        t = f.read("w.weight")
        assert t.shape == (rows, cols) and hg.dequantize(t, "float32").numpy().size == 0


def test_the_cli_converts_and_names_the_form(tmp_path: Path,
                                             capsys: pytest.CaptureFixture) -> None:
    from hurray_gpu.cli import main

    _one(tmp_path, weights_args(4, "group", 32, False))
    assert main(["convert", str(tmp_path / "model.safetensors"), str(tmp_path / "m.hrry"),
                 "--device", "reference", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["kinds"] == {"pack-quantized int4 group": 1}
    assert data["forms"] == {"pack-quantized int4 group": "int4 per-block affine, block 32"}
