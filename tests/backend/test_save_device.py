"""save() of tensors on a device: the file equals, byte for byte, the file of a host tensor
with the same descriptor and buffer bytes (buffers are copied out chunk by chunk)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from tests._support import trusted_tensor

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hurray"))

from hurray_gpu.io import FileWriter, load, save  # noqa: E402
from hurray_gpu.runtime import memory  # noqa: E402
from hurray_gpu.runtime.buffer import Buffer  # noqa: E402
from hurray_gpu.runtime.registry import devices  # noqa: E402
from hurray_gpu.tensor import Tensor  # noqa: E402

import _io_samples as samples  # noqa: E402

ON_DEVICE = [dv for dv in devices() if dv.kind in ("opencl", "vulkan")]
pytestmark = pytest.mark.skipif(not ON_DEVICE, reason="no opencl or vulkan device")


def _host_twin(t: Tensor) -> Tensor:
    """A host tensor with ``t``'s exact descriptor and buffer bytes (members included)."""
    bufs = [b.numpy() if isinstance(b, Buffer) else np.asarray(b) for b in t.buffers]
    return trusted_tensor(t.descriptor, bufs, members=[_host_twin(m) for m in t.members])


def _tensors() -> dict[str, Tensor]:
    rng = np.random.default_rng(5)
    return samples.sample_tensors() | {
        "group": samples.nested_group(),
        "odd": Tensor.from_numpy(rng.integers(0, 256, 50_001, dtype=np.uint8)),
        "f64": Tensor.from_numpy(rng.standard_normal((3, 7))),
    }


@pytest.mark.parametrize("dev", ON_DEVICE, ids=[dv.spec for dv in ON_DEVICE])
@pytest.mark.parametrize("chunk", [None, 4096], ids=["one-chunk", "many-chunks"])
def test_save_of_device_tensors_equals_save_of_host_copy(dev, chunk, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    if chunk:
        monkeypatch.setattr(memory, "CHUNK", chunk)  # many copy-out chunks per buffer
    host = _tensors()
    on = {k: v.to(dev) for k, v in host.items()}
    assert all(isinstance(b, Buffer) for t in on.values() for b in t.buffers)
    twins = {k: _host_twin(v) for k, v in on.items()}
    save(tmp_path / "dev.hrry", on, {"k": "v"})
    save(tmp_path / "host.hrry", twins, {"k": "v"})
    assert (tmp_path / "dev.hrry").read_bytes() == (tmp_path / "host.hrry").read_bytes()
    back = load(tmp_path / "dev.hrry")
    assert back == twins
    assert all(back[k].to("cpu") == host[k].to("cpu") for k in host)


@pytest.mark.parametrize("dev", ON_DEVICE, ids=[dv.spec for dv in ON_DEVICE])
def test_file_writer_accepts_device_tensors(dev, tmp_path: Path) -> None:
    t = Tensor.from_numpy(np.arange(1000, dtype=np.int32)).to(dev)
    with FileWriter(tmp_path / "w.hrry") as w:
        w.write("t", t)
    assert load(tmp_path / "w.hrry")["t"].numpy().tolist() == list(range(1000))
