"""``hurray-gpu serve`` in a process of its own and ``hurray-gpu get`` against it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.cli import main
from tests._support import stable_rng

ROOT = Path(__file__).resolve().parents[2]


def test_serve_and_get(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    values = stable_rng("net-cli").standard_normal((5, 16)).astype(np.float32)
    q = hg.quantize(values, "per_block", axis=1, block_size=8, dtype="int8")
    (tmp_path / "models").mkdir()
    hg.save(tmp_path / "models" / "m.hrry", {"w": hg.from_numpy(values), "q": q})
    sock = tmp_path / "s.sock"
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    proc = subprocess.Popen([sys.executable, "-m", "hurray_gpu.cli", "serve",
                             str(tmp_path / "models"), "--unix", str(sock), "--writable"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == f"serving at hurray+unix://{sock}", (line, proc.stderr)
        url = f"hurray+unix://{sock}"
        out = tmp_path / "w.hrry"
        assert main(["get", url, "m.hrry/w", "--out", str(out)]) == 0
        assert np.array_equal(hg.load(out)["m.hrry/w"].numpy(), values)
        assert main(["get", url, "m.hrry/w", "--out", str(out)]) == 1  # exists, no --force
        assert "--force" in capsys.readouterr().err
        deq = tmp_path / "q.hrry"
        assert main(["get", url, "m.hrry/q", "--dtype", "float32", "--allow-transcode",
                     "--device", "cpu", "--out", str(deq)]) == 0
        assert np.array_equal(hg.load(deq)["m.hrry/q"].numpy(), hg.dequantize(q).numpy())
        assert main(["get", url, "m.hrry/nope", "--out", str(tmp_path / "n.hrry")]) == 1
        err = capsys.readouterr().err
        assert "ERROR 2" in err and "Fix:" in err and not (tmp_path / "n.hrry").exists()
        with hg.connect(url) as client:  # --writable: a PUT lands in the served file
            client.put("m.hrry/pushed", values[:2])
        assert np.array_equal(hg.load(tmp_path / "models" / "m.hrry")["pushed"].numpy(),
                              values[:2])
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    assert not sock.exists()  # a clean shutdown removes the socket file


_COUNT_SENDFILE = """import os
_real = os.sendfile
def _counted(out, fd, offset, count):
    with open(os.environ["HG_TEST_SENDFILE_LOG"], "a") as log:
        log.write(f"{count}\\n")
    return _real(out, fd, offset, count)
os.sendfile = _counted
"""


@pytest.mark.parametrize("flag", [True, False], ids=["--sendfile", "from-map"])
def test_serve_sendfile_option_reaches_the_server(tmp_path: Path, flag: bool) -> None:
    """``hurray-gpu serve --sendfile`` sends a served file's large ranges with sendfile(2)
    (counted in the serving process by a sitecustomize wrapper), and without it never."""
    data = stable_rng(31).integers(0, 256, 1 << 20, dtype=np.uint8)
    hg.save(tmp_path / "m.hrry", {"w": hg.from_numpy(data)})
    hook, log, sock = tmp_path / "hook", tmp_path / "sendfile.log", tmp_path / "s.sock"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_COUNT_SENDFILE)
    env = dict(os.environ, HG_TEST_SENDFILE_LOG=str(log), PYTHONPATH=os.pathsep.join(
        [str(hook), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-m", "hurray_gpu.cli", "serve",
                             str(tmp_path / "m.hrry"), "--unix", str(sock),
                             *(["--sendfile"] if flag else [])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == f"serving at hurray+unix://{sock}"
        with hg.connect(f"hurray+unix://{sock}") as client:
            for _ in range(2):
                assert np.array_equal(client.get("w").numpy(), data)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    counts = [int(c) for c in log.read_text().split()] if log.exists() else []
    assert (max(counts, default=0) == len(data) - 4096) if flag else counts == []
