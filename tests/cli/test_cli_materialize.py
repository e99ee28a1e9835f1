"""``hurray-gpu materialize``: load, move, dequantize on the device, write .npy / .hrry."""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from hurray_gpu.cli import main
from hurray_gpu.cli.demo import build_weights
from hurray_gpu.format.descriptor.buffers import DeviceTag
from hurray_gpu.io import open_file, save
from hurray_gpu.runtime.registry import is_available


@pytest.fixture(scope="module")
def weights_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    path = tmp_path_factory.mktemp("mat") / "w.hrry"
    weights = build_weights(64)
    save(path, {w.name: w.tensor for w in weights})
    return path, {w.name: w.expected for w in weights}


DEVICES = ["cpu"] + [f"{t.name.lower()}:0" for t in (DeviceTag.OPENCL, DeviceTag.VULKAN)
                     if is_available(t)]


@pytest.mark.parametrize("device", DEVICES)
def test_materialize_to_npy_is_bit_exact(weights_file, device: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture) -> None:
    path, expected = weights_file
    name = "layers.0.attn.out.weight"  # NF4
    out = tmp_path / "o.npy"
    assert main(["materialize", str(path), name, "--device", device, "--out", str(out),
                 "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["device"].startswith(device.split(":")[0]) and info["shape"] == [64, 64]
    got = np.load(out)
    assert got.dtype == np.float32 and got.tobytes() == expected[name].tobytes()


def test_materialize_bfloat16_npy_and_hrry(weights_file, tmp_path: Path,
                                           capsys: pytest.CaptureFixture) -> None:
    path, expected = weights_file
    name = "layers.0.mlp.up.weight"  # MXFP4
    want = expected[name].astype(ml_dtypes.bfloat16)
    out = tmp_path / "o.npy"
    assert main(["materialize", str(path), name, "--dtype", "bfloat16", "--device", "cpu",
                 "--out", str(out)]) == 0
    assert "uint16 bit patterns" in capsys.readouterr().out
    assert np.load(out).tobytes() == want.view(np.uint16).tobytes()
    hrry = tmp_path / "o.hrry"
    assert main(["materialize", str(path), name, "--dtype", "bfloat16", "--device", "cpu",
                 "--out", str(hrry)]) == 0
    with open_file(hrry) as f:
        back = f.read(name).numpy()
    assert back.dtype == ml_dtypes.bfloat16 and back.tobytes() == want.tobytes()


def test_materialize_rejects_unknown_name_and_suffix(weights_file, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture) -> None:
    path, _ = weights_file
    assert main(["materialize", str(path), "nope", "--out", str(tmp_path / "o.npy")]) == 1
    err = capsys.readouterr().err
    assert "no tensor named 'nope'" in err and "hurray-gpu inspect" in err
    assert main(["materialize", str(path), "layers.0.attn.out.weight",
                 "--out", str(tmp_path / "o.txt")]) == 1
    assert ".npy or .hrry" in capsys.readouterr().err


INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "int4",
        "uint4", "int2", "uint2"]


@pytest.fixture(scope="module")
def ints_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray]]:
    """One 5 x 7 tensor of every integer type, values spanning its range (stable seed)."""
    from hurray_gpu import from_numpy
    from hurray_gpu.format.dtypes import by_name
    from tests._support import stable_rng

    values = {}
    for name in INTS:
        np_type = by_name(name).numpy
        info = ml_dtypes.iinfo(np_type)
        rng = stable_rng("materialize ints", name)
        draw = np.uint64 if name == "uint64" else np.int64
        values[name] = rng.integers(int(info.min), int(info.max), size=(5, 7), endpoint=True,
                                    dtype=draw).astype(np_type)
    path = tmp_path_factory.mktemp("ints") / "ints.hrry"
    save(path, {name: from_numpy(v) for name, v in values.items()})
    return path, values


@pytest.mark.parametrize("name", INTS)
def test_every_integer_type_is_written(ints_file, name: str, tmp_path: Path,
                                       capsys: pytest.CaptureFixture) -> None:
    path, values = ints_file
    want = values[name]
    for argv in ([], ["--dtype", name]):  # the default keeps an unquantized tensor's type
        out = tmp_path / "o.npy"
        assert main(["materialize", str(path), name, "--device", "cpu", "--out", str(out),
                     "--force", *argv]) == 0, capsys.readouterr().err
        got = np.load(out)
        assert got.shape == (5, 7) and got.dtype.kind == ("u" if name[0] == "u" else "i")
        assert np.array_equal(got.astype(np.int64), want.astype(np.int64))
        # Whole-byte types as themselves; 2- and 4-bit ones widened to 8 bits.
        assert got.dtype == (want.dtype if want.dtype.kind in "iu" else np.dtype(name[:-1] + "8"))
    hrry = tmp_path / "o.hrry"
    assert main(["materialize", str(path), name, "--device", "cpu", "--out", str(hrry)]) == 0
    with open_file(hrry) as f:
        back = f.read(name).numpy()
    assert back.dtype == want.dtype and back.tobytes() == want.tobytes()


def test_missing_name_lists_say_how_many_more(ints_file, tmp_path: Path,
                                              capsys: pytest.CaptureFixture) -> None:
    path, _ = ints_file
    assert main(["materialize", str(path), "nope", "--out", str(tmp_path / "o.npy")]) == 1
    err = capsys.readouterr().err
    assert "(it has: int8, uint8, int16, uint16, int32, uint32, int64, uint64 and 4 more)" in err
