"""A network get onto a CUDA/ROCm device (run by ci/gpu_check.sh): the client receives into
pinned slots on the GPU's device and DMAs each to the destination on the ring's stream."""

from __future__ import annotations

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.net.staging import STAGING_DEPTH, STAGING_SLOT
from hurray_gpu.runtime.memory import MemoryClass
from tests._support import stable_rng

pytestmark = pytest.mark.gpu


def test_a_get_onto_the_gpu_goes_through_pinned_slots(gpu):
    data = stable_rng("gpu-net-ring").integers(0, 256, 5 * STAGING_SLOT + 12345, dtype=np.uint8)
    gpu.allocator.free_cache()
    server = hg.serve({"x": hg.from_numpy(data)}, port=0, background=True)
    try:
        with hg.connect(server.url) as client:
            for _ in range(2):  # the second get reuses the pooled slots
                got = client.get("x", device=gpu)
                assert got.device is gpu and got.buffers[0].memory_class == MemoryClass.STANDARD
                assert np.array_equal(got.to("cpu").numpy(), data)
                assert len(gpu.allocator._pool[(STAGING_SLOT, MemoryClass.HOST_PINNED)]) \
                    == STAGING_DEPTH
    finally:
        server.close()
