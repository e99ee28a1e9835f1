"""With ``sendfile=True`` a served ``.hrry`` file's large data ranges leave by ``sendfile``
(the kernel sends the file's cached pages; no copy through user memory), without it by
``sendmsg`` from the file's map: every answer is compared with what is stored, the path taken
is counted, and a file cut short mid-send, or the file object closed under a prepared reply,
cannot send wrong bytes."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.errors import TransportError
from hurray_gpu.net.framing import FileData
from hurray_gpu.net.transport import Connection
from tests._support import stable_rng
from tests.net.conftest import TRANSPORTS, Start


@pytest.fixture
def sendfiles(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The byte counts of every ``os.sendfile`` call (the servers run in this process)."""
    calls: list[int] = []
    real = os.sendfile

    def counted(out: int, fd: int, offset: int | None, count: int) -> int:
        calls.append(count)
        return real(out, fd, offset, count)

    monkeypatch.setattr(os, "sendfile", counted)
    yield calls


@pytest.mark.parametrize("on", [True, False], ids=["sendfile", "from-map"])
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_served_file_sends_its_large_ranges_by_sendfile(start: Start, tmp_path: Path,
                                                         sendfiles: list[int],
                                                         transport: str, on: bool) -> None:
    # 1 MiB + 7 (no multiple of the tail or of a page), a two-buffer quantized tensor whose
    # codes pass the threshold and whose scales do not, and a small tensor that never does.
    rng = stable_rng(20)
    big = rng.integers(0, 256, (1 << 20) + 7, dtype=np.uint8)
    quant = hg.quantize(rng.standard_normal(1 << 18).astype(np.float32), "per_block",
                        block_size=64)
    small = rng.integers(0, 256, 5000, dtype=np.uint8)
    path = tmp_path / "w.hrry"
    hg.save(path, {"big": hg.from_numpy(big), "quant": quant, "small": hg.from_numpy(small)})
    registry = {"mem": hg.from_numpy(big.copy())}
    server, kwargs = start([registry, str(path)], transport, sendfile=on)
    stored = [b.numpy() for b in quant.buffers]
    with hg.connect(server.url, **kwargs) as client:
        for _ in range(3):  # the first get, then the prepared reply
            assert np.array_equal(client.get("big").numpy(), big)
            got = client.get("quant")
            assert all(np.array_equal(b.numpy(), s) for b, s in
                       zip(got.buffers, stored, strict=True))
        into = client.get("big")
        into.numpy()[:] = 0
        assert client.get("big", out=into) is into and np.array_equal(into.numpy(), big)
        sent = len(sendfiles)
        if transport == "tls" or not on:  # TLS encrypts in user space: no sendfile either
            assert sent == 0
        else:
            # each large range asked for whole but its last 4 KiB, which go with the message
            # after it (a send the kernel took in part goes on with the rest)
            assert sent >= 7 and {len(big) - 4096, quant.buffers[0].nbytes - 4096} <= set(
                sendfiles) and max(sendfiles) == len(big) - 4096
        for _ in range(2):
            assert np.array_equal(client.get("small").numpy(), small)
            assert np.array_equal(client.get("mem").numpy(), big)
        assert len(sendfiles) == sent  # small ranges and memory go by sendmsg


def _drain(sock: socket.socket) -> threading.Thread:
    def run() -> None:
        while sock.recv(1 << 16):
            pass

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_file_cut_short_under_sendfile_is_a_transport_error(tmp_path: Path) -> None:
    path = tmp_path / "short.bin"
    path.write_bytes(bytes(100_000))
    ours, peer = socket.socketpair()
    reader = _drain(peer)
    conn = Connection(ours, timeout=10)
    with open(path, "rb") as f:
        data = FileData(f.fileno())
    view = memoryview(bytearray(200_000))  # what the send believed the file held
    with pytest.raises(TransportError) as err:
        conn.send_spans([b"head", view, b"end"], [None, (data, 0), None])
    message = str(err.value)
    assert message.startswith("the served file ends at byte 100000, 95904 bytes before")
    assert "Fix:" in message
    ours.close()
    reader.join(10)
    peer.close()


def test_file_data_outlives_its_file_and_closes_after_its_last_holder(tmp_path: Path) -> None:
    path = tmp_path / "m.hrry"
    hg.save(path, {"w": np.arange(50_000, dtype=np.uint8)})
    hrry = hg.open_file(path)
    data: Any = FileData(hrry.fileno())
    fd = data.fd
    hrry.close()  # the file object's own descriptor is closed; the duplicate is not
    assert os.readlink(f"/proc/self/fd/{fd}") == str(path)
    assert os.pread(fd, 8, 0) == path.read_bytes()[:8]
    del data
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        target = None
    assert target != str(path)  # closed (or the number already reused by another open)


def test_a_memory_key_that_a_served_directory_refuses_is_still_served(start: Start,
                                                                      tmp_path: Path) -> None:
    # The registry comes first and holds a key the directory would refuse (a ".." component):
    # looking for the tensor's file must not turn that get into an error.
    root = tmp_path / "d"
    root.mkdir()
    hg.save(root / "m.hrry", {"w": np.zeros(10, np.uint8)})
    data = stable_rng(21).integers(0, 256, 1 << 17, dtype=np.uint8)
    server, _ = start([{"x/../m.hrry/w": hg.from_numpy(data)}, root], sendfile=True)
    with hg.connect(server.url) as client:
        for _ in range(2):
            assert np.array_equal(client.get("x/../m.hrry/w").numpy(), data)
        assert np.array_equal(client.get("m.hrry/w").numpy(), np.zeros(10, np.uint8))
