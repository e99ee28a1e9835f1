"""Tensor pickling: bit-exact round trips, protocol-5 out-of-band buffers without a copy,
multiprocessing (spawn), hostile pickled states, and the refusal of device tensors."""

from __future__ import annotations

import multiprocessing
import pickle
from typing import Any

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError
from hurray_gpu.tensor import Tensor

from _io_samples import (
    NUMPY_SAMPLES,
    layout_samples,
    nested_group,
    quantized_per_channel,
    sample_tensors,
)


def _samples() -> dict[str, Tensor]:
    out = {f"dtype-{k}": Tensor.from_numpy(v) for k, v in NUMPY_SAMPLES.items()}
    out.update({f"layout-{k}": v for k, v in layout_samples().items()})
    out.update(sample_tensors())
    out["quantized"] = quantized_per_channel()
    out["nested"] = nested_group()
    out["nf4"] = hg.quantize(np.linspace(-1, 1, 64, dtype=np.float32), "nf4", block_size=32)
    return out


SAMPLES = _samples()


def _bytes(t: Tensor) -> list[bytes]:
    """Every buffer's bytes, members depth-first."""
    return [b.numpy().tobytes() for b in t.buffers] + [x for m in t.members for x in _bytes(m)]


def _host_buffers(t: Tensor) -> list[Any]:
    return list(t.buffers) + [b for m in t.members for b in _host_buffers(m)]


@pytest.mark.parametrize("protocol", [2, 4, 5])
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_round_trip_is_bit_exact(name: str, protocol: int) -> None:
    t = SAMPLES[name]
    again = pickle.loads(pickle.dumps(t, protocol=protocol))
    assert again is not t
    assert again.descriptor_bytes == t.descriptor_bytes
    assert _bytes(again) == _bytes(t)
    assert again == t


def test_seq_lens_travel_with_the_tensor() -> None:
    t = Tensor.from_numpy(np.arange(8, dtype=np.int32))
    t.seq_lens = np.array([3, 5], dtype=np.int64)
    again = pickle.loads(pickle.dumps(t, protocol=5))
    assert np.array_equal(again.seq_lens, [3, 5])


@pytest.mark.parametrize("name", ["dtype-float32", "quantized", "nested", "layout-coo"])
def test_protocol5_out_of_band_is_zero_copy(name: str) -> None:
    t = SAMPLES[name]
    sent: list[pickle.PickleBuffer] = []
    data = pickle.dumps(t, protocol=5, buffer_callback=sent.append)
    originals = _host_buffers(t)
    assert len(sent) == len(originals)
    # No buffer byte is in the pickle itself (only descriptors and framing).
    assert all(bytes(o.array) not in data for o in originals if o.nbytes > 16)
    again = pickle.loads(data, buffers=sent)
    received = _host_buffers(again)
    for pb, orig, got in zip(sent, originals, received, strict=True):
        raw = np.frombuffer(pb.raw(), dtype=np.uint8)
        if orig.nbytes:
            assert raw.ctypes.data == orig.array.ctypes.data  # the sender did not copy
            assert got.array.ctypes.data == raw.ctypes.data  # nor did the receiver
    assert again == t


@pytest.mark.parametrize("misalign", [0, 1])
def test_out_of_band_into_foreign_memory(misalign: int) -> None:
    """Memory a transport received into is used in place when aligned, else copied once."""
    t = Tensor.from_numpy(np.arange(4096, dtype=np.float32))
    sent: list[pickle.PickleBuffer] = []
    data = pickle.dumps(t, protocol=5, buffer_callback=sent.append)
    raw = np.empty(t.nbytes + 128, dtype=np.uint8)
    start = -raw.ctypes.data % 64 + misalign
    landing = raw[start:start + t.nbytes]
    landing[:] = np.frombuffer(sent[0].raw(), dtype=np.uint8)
    again = pickle.loads(data, buffers=[landing])
    assert (again.buffers[0].array.ctypes.data == landing.ctypes.data) is (misalign == 0)
    landing[:4] = np.frombuffer(np.float32(7.0).tobytes(), np.uint8)  # visible iff shared
    expected = np.arange(4096, dtype=np.float32)
    expected[0] = 7.0 if misalign == 0 else 0.0
    assert np.array_equal(again.numpy(), expected)


def test_through_multiprocessing_spawn() -> None:
    dense, composite = SAMPLES["dtype-int16"], SAMPLES["nested"]
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        # A bound method pickles its tensor: the child unpickles it and decodes it there.
        decoded = pool.apply(dense.numpy)
        (back,) = pool.apply(tuple, ([composite],))
    assert np.array_equal(decoded, NUMPY_SAMPLES["int16"])
    assert back == composite and _bytes(back) == _bytes(composite)


def _state(t: Tensor) -> list[Any]:
    _fn, args = t.__reduce_ex__(4)
    return list(args)


class _Forged:
    """Pickles as a call of Tensor's unpickler with a forged state."""

    def __init__(self, state: list[Any]) -> None:
        self.state = state

    def __reduce__(self) -> tuple[Any, ...]:
        fn, _args = SAMPLES["dtype-float32"].__reduce_ex__(4)
        return (fn, tuple(self.state))


def _hostile() -> dict[str, list[Any]]:
    q, part = SAMPLES["quantized"], SAMPLES["part"]
    st = _state(q)
    out = {
        "one buffer short": [st[0], st[1][:-1], [], None],
        "one buffer extra": [st[0], st[1] + [b"\0" * 16], [], None],
        "buffer too small": [st[0], [st[1][0][:-1]] + st[1][1:], [], None],
        "buffer too large": [st[0], [st[1][0] + b"\0"] + st[1][1:], [], None],
        "buffer not bytes": [st[0], [12345] + st[1][1:], [], None],
        "buffer a str": [st[0], ["x" * len(st[1][0])] + st[1][1:], [], None],
        "truncated descriptor": [st[0][:-3], st[1], [], None],
        "garbage descriptor": [b"\xff" * len(st[0]), st[1], [], None],
        "descriptor not bytes": ["desc", st[1], [], None],
        "buffers not a list": [st[0], 7, [], None],
        "member not a tensor": [_state(part)[0], [], [1, 2], None],
        "members missing": [_state(part)[0], [], [], None],
        "members on a plain tensor": [st[0], st[1], [SAMPLES["dtype-int8"]], None],
        "seq_lens not an array": [st[0], st[1], [], "abc"],
    }
    return out


@pytest.mark.parametrize("case", sorted(_hostile()))
def test_hostile_state_is_a_format_error(case: str) -> None:
    data = pickle.dumps(_Forged(_hostile()[case]), protocol=4)
    with pytest.raises(HurrayFormatError) as info:
        pickle.loads(data)
    assert "Fix:" in str(info.value)


def test_device_tensor_refuses_with_a_fix() -> None:
    t = SAMPLES["dtype-float32"].to("null")
    for protocol in (2, 5):
        with pytest.raises(UnsupportedOpError, match=r"null.*Fix: pickle t\.to\('cpu'\)"):
            pickle.dumps(t, protocol=protocol)
    host = t.to("cpu")  # the null device keeps no data: only the explicit copy's shape counts
    assert pickle.loads(pickle.dumps(host)).descriptor_bytes == host.descriptor_bytes
