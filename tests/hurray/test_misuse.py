"""A table of mistakes a user can make with the public API: each raises a HurrayGPUError
subclass of the stated kind (which keeps the Python base a caller would catch: KeyError,
IndexError, TypeError, ValueError) whose message ends with a concrete ``Fix:``."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.format.descriptor import ColMajor
from tests._support import require_peer

E = hg  # the error classes, as users reach them


def _torch_bf16() -> Any:
    torch = require_peer("torch")
    return torch.ones(3, dtype=torch.bfloat16)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("misuse")
    t = hg.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4))
    q = hg.quantize(np.linspace(-1, 1, 64, dtype=np.float32).reshape(2, 32), "per_block", axis=1,
                    block_size=32, dtype="int4")
    path = folder / "m.hrry"
    hg.save(path, {"weight": t, "weights_q": q, "bias": np.zeros(4, np.float32)})
    junk = folder / "junk.hrry"
    junk.write_bytes(b"not a hurray file" * 8)
    f = hg.open_file(path)
    closed = hg.open_file(path)
    closed.close()
    return {"t": t, "q": q, "path": path, "junk": junk, "f": f, "closed": closed,
            "int4": hg.from_numpy(np.arange(8, dtype=np.int8).astype(ml_dtypes.int4)),
            "scalar": hg.from_numpy(np.float32(2.5)), "arr": np.ones(4, np.float32)}


# (id, the call, the error class it must raise)
CASES: list[tuple[str, Callable[[dict[str, Any]], Any], type[Exception]]] = [
    # hg.* functions
    ("from_numpy(torch bf16)", lambda e: hg.from_numpy(_torch_bf16()), E.ArgumentTypeError),
    ("from_numpy(str array)", lambda e: hg.from_numpy(np.array(["a"])), E.UnsupportedOpError),
    ("from_numpy(object)", lambda e: hg.from_numpy(np.array([{}, 1], dtype=object)),
     E.UnsupportedOpError),
    ("from_numpy(order=K)", lambda e: hg.from_numpy(e["arr"], order="K"), E.HurrayFormatError),
    ("from_numpy(Tensor)", lambda e: hg.from_numpy(e["t"]), E.ArgumentTypeError),
    ("dequantize(ndarray)", lambda e: hg.dequantize(e["arr"]), E.ArgumentTypeError),
    ("dequantize(list)", lambda e: hg.dequantize([1, 2]), E.ArgumentTypeError),
    ("dequantize(dtype=int3)", lambda e: hg.dequantize(e["q"], "int3"), E.HurrayGPUError),
    ("unpack(ndarray)", lambda e: hg.unpack(e["arr"]), E.ArgumentTypeError),
    ("materialize(ndarray)", lambda e: hg.materialize(e["arr"]), E.ArgumentTypeError),
    ("materialize(dtype=f17)", lambda e: hg.materialize(e["t"], "float17"),
     E.HurrayFormatError),
    ("relayout(ndarray)", lambda e: hg.relayout(e["arr"], ColMajor()), E.ArgumentTypeError),
    ("sparsify(ndarray)", lambda e: hg.sparsify(e["arr"], "coo"), E.ArgumentTypeError),
    ("element(ndarray)", lambda e: hg.element(e["arr"], (0,)), E.ArgumentTypeError),
    ("quantize(scheme=int4)", lambda e: hg.quantize(e["arr"], "int4"), E.UnsupportedOpError),
    ("by_name(f32)", lambda e: hg.by_name("f32"), E.HurrayFormatError),
    ("by_tag(0x47)", lambda e: hg.by_tag(0x47), E.HurrayFormatError),
    ("device(metal)", lambda e: hg.device("metal:0"), E.BackendUnavailableError),
    ("decode_descriptor(junk)", lambda e: hg.decode_descriptor(b"junk"), E.HurrayFormatError),
    ("open_file(not hrry)", lambda e: hg.open_file(e["junk"]), E.HurrayFormatError),
    ("open_file(missing)", lambda e: hg.open_file(e["path"].with_name("none.hrry")),
     E.MissingFileError),
    ("open_file(a directory)", lambda e: hg.open_file(e["path"].parent), E.UnreadableFileError),
    ("convert(missing)", lambda e: hg.convert(e["path"].with_name("none.gguf"),
                                              e["path"].with_name("out.hrry")),
     E.MissingFileError),
    ("convert(a directory)", lambda e: hg.convert(e["path"].parent,
                                                  e["path"].with_name("out.hrry")),
     E.UnreadableFileError),
    ("load(missing file)", lambda e: hg.load(e["path"].with_name("none.hrry")), FileNotFoundError),
    ("load(missing name)", lambda e: hg.load(e["path"], ["wieght"]), E.TensorNotFoundError),
    ("save(list)", lambda e: hg.save(e["path"].with_name("x.hrry"), [e["t"]]),
     E.ArgumentTypeError),
    ("save({'x': list})", lambda e: hg.save(e["path"].with_name("x.hrry"), {"x": [1, 2]}),
     E.UnsupportedOpError),
    ("quantize(str)", lambda e: hg.quantize("abc"), E.ArgumentTypeError),
    ("relayout(str layout)", lambda e: hg.relayout(e["t"], "col_major"), E.ArgumentTypeError),
    ("share(ndarray)", lambda e: hg.share(e["arr"], str(e["path"].with_name("s"))),
     E.ArgumentTypeError),
    ("decode_descriptor(str)", lambda e: hg.decode_descriptor("HRRY"), E.ArgumentTypeError),
    ("from_dlpack(object)", lambda e: hg.from_dlpack(object()), E.HurrayGPUError),
    ("device(nonsense)", lambda e: hg.device("nonsense"), E.BackendUnavailableError),
    # Tensor methods
    ("to(dev, memory class)", lambda e: e["t"].to("cpu", "host_pinned"), E.ArgumentTypeError),
    ("to(dev, MemoryClass)", lambda e: e["t"].to("cpu", hg.MemoryClass.UNIFIED),
     E.ArgumentTypeError),
    ("to(dtype=float17)", lambda e: e["t"].to("cpu", "float17"), E.HurrayFormatError),
    ("to(memory_class=peer)", lambda e: e["t"].to("cpu", memory_class="peer"),
     E.UnsupportedOpError),
    ("to(float32 -> int32)", lambda e: e["t"].to(dtype="int32"), E.UnsupportedOpError),
    ("len(scalar)", lambda e: len(e["scalar"]), E.ArgumentTypeError),
    ("bool(3x4 tensor)", lambda e: bool(e["t"]), E.AmbiguousTruthError),
    ("bool(quantized)", lambda e: bool(e["q"]), E.AmbiguousTruthError),
    ("t[3] out of range", lambda e: e["t"][3], E.TensorIndexError),
    ("t[-4] out of range", lambda e: e["t"][-4], E.TensorIndexError),
    ("t[0, 0, 0] too many", lambda e: e["t"][0, 0, 0], E.TensorIndexError),
    ("t[..., ...]", lambda e: e["t"][..., ...], E.TensorIndexError),
    ("t[[0, 1]] advanced", lambda e: e["t"][[0, 1]], E.ArgumentTypeError),
    ("t[1.5]", lambda e: e["t"][1.5], E.ArgumentTypeError),
    ("t[True]", lambda e: e["t"][True], E.ArgumentTypeError),
    ("quantized[0]", lambda e: e["q"][0], E.UnsupportedOpError),
    ("int4[1] inside a byte", lambda e: e["int4"][1], E.UnsupportedOpError),
    ("asarray(int4, copy=False)", lambda e: np.asarray(e["int4"], copy=False),
     E.CopyRequiredError),
    ("asarray(dtype, copy=False)", lambda e: np.asarray(e["t"], np.float64, copy=False),
     E.CopyRequiredError),
    ("quantized.numpy()", lambda e: e["q"].numpy(), E.UnsupportedOpError),
    ("asarray(quantized)", lambda e: np.asarray(e["q"]), E.UnsupportedOpError),
    ("handoff(bogus)", lambda e: e["t"].handoff("bogus"), E.UnsupportedOpError),
    ("dequantize(unquantized f32)", lambda e: e["t"].dequantize(), E.UnsupportedOpError),
    ("unpickle junk", lambda e: pickle.loads(pickle.dumps(e["t"]).replace(b"HRRY", b"XRRY")),
     E.HurrayFormatError),
    # the file object
    ("f.read(missing)", lambda e: e["f"].read("wieght"), E.TensorNotFoundError),
    ("f[missing]", lambda e: e["f"]["bias2"], E.TensorNotFoundError),
    ("f[0]", lambda e: e["f"][0], E.ArgumentTypeError),
    ("f.descriptor(missing)", lambda e: e["f"].descriptor("nope"), E.TensorNotFoundError),
    ("f.read(device=nope)", lambda e: e["f"].read("weight", device="metal"),
     E.BackendUnavailableError),
    ("closed f.read", lambda e: e["closed"].read("weight"), E.HurrayFormatError),
]


def test_the_table_is_broad() -> None:
    assert len(CASES) >= 30
    assert len({case[0] for case in CASES}) == len(CASES)


@pytest.mark.parametrize(("call", "kind"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_misuse_raises_a_hinted_hurray_error(env: dict[str, Any],
                                             call: Callable[[dict[str, Any]], Any],
                                             kind: type[Exception]) -> None:
    with pytest.raises(hg.HurrayGPUError) as info:
        call(env)
    err = info.value
    assert isinstance(err, kind), f"{type(err).__name__}: {err}"
    text = str(err)
    assert text.count("Fix:") == 1, text
    assert len(text.split("Fix:", 1)[1].strip()) >= 10, text  # a real hint, at the end
    if isinstance(err, KeyError):
        assert not text.startswith(("'", '"')), text  # KeyError's repr quoting is gone


def test_missing_name_keeps_key_error_semantics(env: dict[str, Any]) -> None:
    f = env["f"]
    with pytest.raises(KeyError) as info:
        f["wieght"]
    assert "'weight'" in str(info.value).split("Fix:", 1)[1]  # the close name is offered
    assert f.get("wieght") is None and f.get("nope", 5) == 5


def test_a_long_list_of_names_says_how_many_more(tmp_path: Path) -> None:
    names = {f"layer{i}.weight": np.zeros(1, np.float32) for i in range(40)}
    hg.save(tmp_path / "many.hrry", names)
    with hg.open_file(tmp_path / "many.hrry") as f, pytest.raises(hg.TensorNotFoundError) as info:
        f.read("zzz")
    fix = str(info.value).split("Fix:", 1)[1]
    assert "(and 32 more)" in fix and fix.count("layer") == 8
    with hg.open_file(tmp_path / "many.hrry") as f, pytest.raises(hg.TensorNotFoundError) as info:
        f.read("layer7.weigth")
    assert "'layer7.weight'" in str(info.value) and "40 names" in str(info.value)
