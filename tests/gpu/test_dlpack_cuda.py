"""DLPack and __cuda_array_interface__ exchange of CUDA/ROCm memory (run by ci/gpu_check.sh).

Zero-copy is proven by pointer equality; stream ordering by a consumer stream that must wait
for a producer kernel held back by a gate (tests/gpu/gate.py) on another stream.
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

import hurray_gpu as hg
from tests._support import require_peer
from tests.gpu.gate import Gate, warm

pytestmark = pytest.mark.gpu


def test_export_to_cupy_zero_copy(gpu):
    cupy = gpu.cupy
    t = hg.from_numpy(np.arange(1024, dtype=np.float32)).to(gpu)
    assert t.__dlpack_device__() == ((2 if gpu.tag == 1 else 10), gpu.index)
    x = cupy.from_dlpack(t)
    assert int(x.data.ptr) == t.buffers[0].allocation.raw.ptr
    np.testing.assert_array_equal(cupy.asnumpy(x), np.arange(1024, dtype=np.float32))


@pytest.mark.skipif(os.environ.get("HURRAY_GPU_SANITIZER") == "1",
                    reason="the sanitizer serializes kernels: a held gate never opens")
def test_export_orders_consumer_stream(gpu):
    cupy = gpu.cupy
    n = 1 << 20
    warm(gpu, n)
    t = hg.from_numpy(np.zeros(n, dtype=np.uint32)).to(gpu)
    producer = cupy.cuda.Stream(non_blocking=True)
    consumer = cupy.cuda.Stream(non_blocking=True)

    class ToConsumer:  # the export runs on the producer's stream, naming the consumer's
        def __dlpack__(self, stream=None, **kwargs):
            return t.__dlpack__(stream=int(consumer.ptr), **kwargs)

        def __dlpack_device__(self):
            return t.__dlpack_device__()

    with Gate(gpu, producer) as gate:
        with producer:
            gpu.run("fill_u32", t.buffers[0], 9, n)  # held behind the gate
            x = cupy.from_dlpack(ToConsumer())  # consumer now waits on an event, not the host
        with consumer:
            total = x.sum(dtype=cupy.uint64)
        done = cupy.cuda.Event(disable_timing=True)
        done.record(consumer)
        time.sleep(0.2)  # ample time for a consumer that did not wait to finish
        assert not done.done, "the consumer ran while the producer was held"
        gate.open()
        consumer.synchronize()
    assert int(total) == 9 * n
    assert int(x.data.ptr) == t.buffers[0].allocation.raw.ptr


@pytest.mark.parametrize("stream", [None, -1, 1, 2])
def test_stream_values_accepted(gpu, stream):
    t = hg.from_numpy(np.ones(16, np.float32)).to(gpu)
    if gpu.tag == 2 and stream in (1, 2):
        with pytest.raises(BufferError):
            t.__dlpack__(stream=stream)
        return
    assert t.__dlpack__(stream=stream, max_version=(1, 1)) is not None


def test_import_cupy_and_torch_zero_copy(gpu):
    cupy = gpu.cupy
    x = cupy.arange(4096, dtype=cupy.float32)
    t = hg.from_dlpack(x)
    assert t.device is gpu and not t.is_host
    assert t.buffers[0].allocation.raw.ptr == int(x.data.ptr)
    assert t.descriptor.buffers[0].device_tag == gpu.tag
    np.testing.assert_array_equal(t.to("cpu").numpy(), np.arange(4096, dtype=np.float32))
    strided = hg.from_dlpack(x.reshape(64, 64).T)
    assert strided.layout_name == "strided"
    torch = require_peer("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    y = torch.arange(100, device="cuda", dtype=torch.int32)
    ty = hg.from_dlpack(y)
    assert ty.buffers[0].allocation.raw.ptr == y.data_ptr()
    z = torch.from_dlpack(ty)
    assert z.data_ptr() == y.data_ptr() and z.device.type == "cuda"


def test_cuda_array_interface_import(gpu):
    if gpu.tag != 1:
        pytest.skip("CAI is CUDA only")
    cupy = gpu.cupy
    x = cupy.arange(256, dtype=cupy.int16)

    class Wrapper:
        __cuda_array_interface__ = x.__cuda_array_interface__

    t = hg.from_dlpack(Wrapper())
    assert t.buffers[0].allocation.raw.ptr == int(x.data.ptr)
    np.testing.assert_array_equal(t.to("cpu").numpy(), np.arange(256, dtype=np.int16))
