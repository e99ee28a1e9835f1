"""CUDA/ROCm memory between two processes (hurray_gpu.net.ipc; run by ci/gpu_check.sh).

A producer process writes with its kernel and shares over IPC memory handles; this process
(the consumer) reads with its own kernel. In event mode the producer's stream is held by a
gate (tests/gpu/gate.py) until the consumer has queued its read, so a consumer that skipped the
IPC event's wait reads the old data instead of passing by luck. Sub-allocations travel as the
base allocation's handle plus an offset. compute-sanitizer serializes kernels (a held gate
never opens), so the gated test skips under HURRAY_GPU_SANITIZER=1.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.backends.cuda import CUDAMemory, unpack_ipc
from hurray_gpu.format.descriptor.buffers import SyncMode
from hurray_gpu.runtime.memory import Allocation, MemoryClass
from hurray_gpu.sync import Stream
from tests._support import stable_seed

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
N = 1 << 20
gated = pytest.mark.skipif(os.environ.get("HURRAY_GPU_SANITIZER") == "1",
                           reason="the sanitizer serializes kernels: a held gate never opens")

_PRODUCER = """
import sys, numpy as np, hurray_gpu as hg
from hurray_gpu.sync import Stream
from tests.gpu.gate import Gate, warm
kind, path, mode, value = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
gpu, n = hg.device(kind + ":0"), N_WORDS
warm(gpu, n)
t, stream = hg.from_numpy(np.zeros(n, np.uint32)).to(gpu), Stream(gpu)
hg.Buffer(gpu, 4 * n).free()  # pooled: share() then allocates with no cudaMalloc under the gate
if mode == "event":  # held until the consumer has queued its read
    with Gate(gpu, stream, failsafe_s=30) as gate:
        with stream:
            gpu.run("fill_u32", t.buffers[0], value, n)
            shared = hg.share(t, path, sync="event")
        print("ready", flush=True)
        assert sys.stdin.readline().strip() == "go"
else:
    with stream:
        gpu.run("fill_u32", t.buffers[0], value, n)
        shared = hg.share(t, path)
    print("ready", flush=True)
    assert sys.stdin.readline().strip() == "go"
print("released" if shared.wait_released(60) else "held", flush=True)
shared.close()
""".replace("N_WORDS", str(N))

_OPENER = """
import sys, numpy as np, hurray_gpu as hg
from hurray_gpu.runtime.buffer import Buffer
gpu = hg.device(sys.argv[1] + ":0")
allocation, event = gpu.ipc_import(bytes.fromhex(sys.argv[2]), None)
assert event is None and allocation.readonly
print(Buffer(gpu, allocation.nbytes, _allocation=allocation).numpy(np.uint32)[[0, -1]].tolist())
"""


@pytest.fixture
def sock_path() -> Iterator[str]:
    directory = tempfile.mkdtemp(prefix="hg-ipc-", dir="/tmp")
    yield os.path.join(directory, "s")
    shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.parametrize("mode", [
    "producer_synced", pytest.param("event", marks=gated)])
def test_consumer_kernel_reads_the_producers_kernel_output(gpu, mode: str,
                                                           sock_path: str) -> None:
    value = stable_seed("ipc", gpu.kind, mode) % (1 << 31) | 1
    proc = subprocess.Popen([sys.executable, "-c", _PRODUCER, gpu.kind, sock_path, mode,
                             str(value)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env=ENV)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        assert proc.stdout.readline().strip() == "ready"
        got = hg.attach(sock_path)
        assert got.device is gpu and got.sync_mode == SyncMode[mode.upper()]
        out, consumer = hg.Buffer(gpu, 4 * N), Stream(gpu)
        with consumer:  # event mode: the stream waits on the IPC event, on the device
            gpu.run("copy_bytes", out, got.buffers[0], 4 * N)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        consumer.synchronize()
        assert np.all(out.numpy(np.uint32) == value)
        got.release()
        assert proc.stdout.readline().strip() == "released"
        assert proc.wait(60) == 0
    finally:
        proc.kill()


def test_sub_allocations_travel_as_base_handle_and_offset(gpu) -> None:
    """A view, and a CuPy pool's sub-allocation, open in another process at their offset."""
    cupy = gpu.cupy
    pattern = np.arange(N, dtype=np.uint32) * 2654435761
    whole = hg.Buffer.from_bytes(gpu, pattern.view(np.uint8))
    view = whole.view(4 * 4096, 4 * 4096)
    pool = cupy.cuda.MemoryPool()
    with gpu.context():
        pooled = pool.malloc(8 << 20)
        part = pooled + 12288  # a MemoryPointer inside the pool's chunk
        cupy.ndarray((4096,), cupy.uint32, part).set(pattern[:4096])
    foreign = Allocation(CUDAMemory(int(part.ptr), part), 4 * 4096, MemoryClass.STANDARD)
    inside = int(view.allocation.raw.ptr) - int(whole.allocation.root.raw.ptr)
    for allocation, first, least in ((view.allocation, 4096, inside), (foreign, 0, 12288)):
        gpu.synchronize()
        record, fd = gpu.ipc_export(allocation, False)
        assert fd is None
        offset = unpack_ipc(record)[0]
        assert offset >= least and gpu.ipc_base(int(allocation.raw.ptr)) + offset == int(
            allocation.raw.ptr)
        if allocation is view.allocation:
            assert offset == inside  # our buffers are whole cudaMallocs
        done = subprocess.run([sys.executable, "-c", _OPENER, gpu.kind, record.hex()],
                              capture_output=True, text=True, env=ENV, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == str([int(pattern[first]), int(pattern[first + 4095])])
