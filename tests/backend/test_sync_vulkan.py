"""Handoff on Vulkan: until Vulkan queues/fences land, its streams are host streams (recording
waits for the device), so every mode must still deliver the producer's data."""

from __future__ import annotations

import numpy as np
import pytest

from hurray_gpu import Tensor, UnsupportedOpError
from hurray_gpu.backends import is_available
from hurray_gpu.devices_api import device
from hurray_gpu.format.descriptor.buffers import SyncMode
from hurray_gpu.sync import Event, Stream

pytestmark = [pytest.mark.vulkan,
              pytest.mark.skipif(not is_available(0x04), reason="no Vulkan device")]


@pytest.mark.parametrize("mode", ["producer_synced", "event", "consumer_stream"])
def test_vulkan_handoff_modes_deliver_data(mode: str) -> None:
    dev = device("vulkan:0")
    t = Tensor.from_numpy(np.zeros(1024, np.uint32)).to(dev)
    consumer = Stream(dev)
    dev.run("fill_u32", t.buffers[0], 5, 1024)
    kwargs = {"stream": consumer} if mode == "consumer_stream" else {}
    calls = []
    handed = t.handoff(mode, on_release=lambda: calls.append(1), **kwargs)
    assert handed.sync_mode == SyncMode[mode.upper()]
    handed.accept(consumer)
    assert np.all(handed.to("cpu").numpy() == 5)
    handed.release()
    handed.release()
    assert calls == [1]


def test_vulkan_event_basics() -> None:
    dev = device("vulkan:0")
    ev = Event(dev)
    with pytest.raises(UnsupportedOpError, match="never recorded"):
        ev.query()
    assert ev.record().query()
