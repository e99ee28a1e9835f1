"""A server's descriptors stay bounded: a served directory keeps at most ``max_open_files``
files open (a client walking thousands of files cannot use them all up), a server without
``sendfile`` holds no duplicate descriptor per file, and running out of descriptors for a
while does not stop the server accepting connections."""

from __future__ import annotations

import gc
import os
import resource
import socket
import time
from pathlib import Path

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.net.sources import DirectorySource
from tests._support import stable_rng
from tests.net.conftest import Start

FILES = 40


def _fds() -> int:
    gc.collect()  # a dropped file's map goes when its last view does
    return len(os.listdir("/proc/self/fd"))


def _directory(root: Path) -> list[np.ndarray]:
    rng = stable_rng(41)
    values = [rng.integers(0, 256, 8192 + i, dtype=np.uint8) for i in range(FILES)]
    for i, v in enumerate(values):
        hg.save(root / f"f{i}.hrry", {"t": hg.from_numpy(v)})
    return values


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
@pytest.mark.parametrize("sendfile", [False, True], ids=["from-map", "sendfile"])
def test_a_directory_keeps_at_most_max_open_files_open(start: Start, tmp_path: Path,
                                                        sendfile: bool) -> None:
    values = _directory(tmp_path)
    limit, per_file = 8, 3 if sendfile else 2  # its descriptor and its map's (+ sendfile's)
    server, _ = start(str(tmp_path), sendfile=sendfile, max_open_files=limit)
    with hg.connect(server.url) as client:
        assert np.array_equal(client.get("f0.hrry/t").numpy(), values[0])
        before = _fds()
        for i in range(1, limit):
            assert np.array_equal(client.get(f"f{i}.hrry/t").numpy(), values[i])
        assert _fds() - before == (limit - 1) * per_file
        for rounds in range(2):  # every file, evicted ones reopened, twice (prepared replies)
            for i in range(FILES):
                assert np.array_equal(client.get(f"f{i}.hrry/t").numpy(), values[i])
            assert _fds() - before == (limit - 1) * per_file, rounds


def test_a_deleted_file_is_let_go_and_max_open_is_checked(tmp_path: Path) -> None:
    _directory(tmp_path)
    source = DirectorySource(str(tmp_path), max_open=4)
    for i in range(3):
        assert source.lookup(f"f{i}.hrry/t") is not None
    os.unlink(tmp_path / "f1.hrry")
    assert source.lookup("f1.hrry/t") is None
    assert sorted(os.path.basename(p) for p in source._open) == ["f0.hrry", "f2.hrry"]
    for i in range(3, 8):
        source.lookup(f"f{i}.hrry/t")
    assert sorted(os.path.basename(p) for p in source._open) == [f"f{i}.hrry"
                                                                  for i in range(4, 8)]
    source.close()
    for bad in (0, -1, 2.5):
        with pytest.raises(UnsupportedOpError, match="max_open_files"):
            DirectorySource(str(tmp_path), max_open=bad)  # type: ignore[arg-type]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
def test_running_out_of_descriptors_does_not_stop_accepting(start: Start) -> None:
    values = np.arange(100, dtype=np.int32)
    server, _ = start({"a": hg.from_numpy(values)})
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    waiting = socket.socket()  # made before the limit drops: its connect needs no descriptor
    lowest_free = os.dup(0)
    os.close(lowest_free)
    try:  # no new descriptor from here: the server's accept fails with EMFILE for a while
        resource.setrlimit(resource.RLIMIT_NOFILE, (lowest_free, hard))
        waiting.connect(("127.0.0.1", int(server.url.rsplit(":", 1)[1])))
        time.sleep(0.5)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    waiting.close()
    with hg.connect(server.url, timeout=10) as client:
        assert np.array_equal(client.get("a").numpy(), values)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
def test_an_ipc_share_out_of_descriptors_waits_instead_of_spinning(tmp_path: Path) -> None:
    values = np.arange(10, dtype=np.int32)
    path = str(tmp_path / "share.sock")
    with hg.share(hg.from_numpy(values), path):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        waiting = socket.socket(socket.AF_UNIX)
        lowest_free = os.dup(0)
        os.close(lowest_free)
        cpu = time.process_time()
        try:  # the share's accept fails with EMFILE while its listener stays readable
            resource.setrlimit(resource.RLIMIT_NOFILE, (lowest_free, hard))
            waiting.connect(path)
            time.sleep(0.5)
            burnt = time.process_time() - cpu
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        waiting.close()
        assert burnt < 0.25  # retrying at once would keep a CPU busy the whole time
        got = hg.attach(path)
        assert np.array_equal(got.numpy(), values)
