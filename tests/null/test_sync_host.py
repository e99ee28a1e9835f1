"""Host streams and events (the cpu backend) and the handoff rules for CPU buffers."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from hurray_gpu import Tensor, UnsupportedOpError
from hurray_gpu.format.descriptor.buffers import SyncMode
from hurray_gpu.runtime.registry import resolve_device as device
from hurray_gpu.runtime.stream import HostEvent, HostStream
from hurray_gpu.sync import Event, Stream, current_stream
from hurray_gpu.sync.handoff import parse_mode


def test_host_stream_and_event() -> None:
    cpu = device("cpu")
    s = Stream(cpu)
    assert isinstance(s, HostStream) and not s.is_default
    assert current_stream() is cpu.default_stream
    with s:
        assert current_stream(cpu) is s
        e = Event().record()
    assert isinstance(e, HostEvent) and e.query()
    later = s.record()
    e.wait(s)
    assert later.elapsed_ms(e) <= 0.0 <= e.elapsed_ms(later)
    with pytest.raises(UnsupportedOpError, match="out of order"):
        s.__exit__(None, None, None)
    with pytest.raises(UnsupportedOpError, match="timing=False"):
        Event(cpu, timing=False).record().elapsed_ms(later)


def test_parse_mode() -> None:
    assert parse_mode("event") is SyncMode.EVENT and parse_mode(2) is SyncMode.CONSUMER_STREAM
    assert parse_mode(SyncMode.PRODUCER_SYNCED) is SyncMode.PRODUCER_SYNCED
    for bad in (3, 255, -1, 1.0, True, "x", None):
        with pytest.raises(UnsupportedOpError, match="unknown sync_mode"):
            parse_mode(bad)
    err = pickle.loads(pickle.dumps(UnsupportedOpError("unknown sync_mode 3", fix="x")))
    assert "sync_mode" in str(err)


def test_cpu_buffers_must_be_producer_synced() -> None:
    t = Tensor.from_numpy(np.arange(6, dtype=np.float32))
    for mode in ("event", "consumer_stream", 1, 2):
        with pytest.raises(UnsupportedOpError, match="CPU buffers must be producer-synced"):
            t.handoff(mode)
    calls = []
    handed = t.handoff("producer_synced", on_release=lambda: calls.append("buf"))
    assert handed.sync_mode is SyncMode.PRODUCER_SYNCED
    assert handed.buffers[0] is t.buffers[0]  # zero-copy
    assert handed.accept() is handed
    np.testing.assert_array_equal(handed.numpy(), np.arange(6, dtype=np.float32))
    handed.release()
    handed.release()
    assert calls == ["buf"]


def test_release_callback_runs_once_when_collected() -> None:
    calls = []
    handed = Tensor.from_numpy(np.zeros(4, np.uint8)).handoff(0, on_release=lambda: calls.append(1))
    del handed
    import gc

    gc.collect()
    assert calls == [1]
