"""``get(out=)``: a get received straight into the caller's memory, on the first get and on
the repeated-get path, and every misuse refused with a typed error (before the request, or
after the server's answer, whose data is then dropped so the connection goes on)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.errors import ArgumentTypeError, UnsupportedOpError
from hurray_gpu.runtime.hostmem import aligned_empty
from tests._support import stable_rng
from tests.hurray._io_samples import nested_group, quantized_per_channel
from tests.net.conftest import TRANSPORTS, Start


def _values(seed: int, shape: tuple[int, ...]) -> np.ndarray:
    return stable_rng(seed).standard_normal(shape).astype(np.float32)


def _host(buffer: Any) -> np.ndarray:
    """A host buffer's own memory (``Buffer.numpy()`` copies)."""
    array = buffer.device.allocator.host_array(buffer.allocation)
    assert array is not None
    return array


def _registry() -> dict[str, Any]:
    return {
        "a": hg.from_numpy(_values(1, (64, 32))),
        "b": hg.from_numpy(_values(2, (64, 32))),
        "c": hg.from_numpy(_values(3, (32, 64))),
        "big": hg.from_numpy(_values(4, (1 << 19,))),
        "q": quantized_per_channel(),
        "group": nested_group(),
    }


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_out_tensor_receives_in_place_first_and_repeated(start: Start, transport: str) -> None:
    """The same Tensor comes back, holding the server's bytes, on the general path (first
    get), the repeated path (the same get again) and after the key was replaced; a
    multi-buffer (quantized) tensor and a tensor of many frames too."""
    registry = _registry()
    server, kw = start(registry, transport)
    with hg.connect(server.url, **kw) as client:
        for key in ("a", "big", "q"):
            out = client.get(key)
            want = [b.numpy().tobytes() for b in registry[key].buffers]
            memory = [_host(b) for b in out.buffers]
            for _ in range(3):  # general path, then the repeated path twice
                for array in memory:
                    array[:] = 0xAA
                assert client.get(key, out=out) is out
                assert [array.tobytes() for array in memory] == want, key
        out = client.get("a")
        registry["a"] = registry["b"]  # the same kind, new bytes: the repeat sees them
        assert client.get("a", out=out) is out
        assert np.array_equal(out.numpy(), registry["b"].numpy())


def test_out_array_receives_in_place(start: Start) -> None:
    """An aligned NumPy array of the tensor's bytes is received into and wrapped."""
    registry = _registry()
    server, _ = start(registry)
    arr = aligned_empty(64 * 32 * 4)
    with hg.connect(server.url) as client:
        for _ in range(3):
            arr[:] = 0
            t = client.get("a", out=arr)
            assert t.shape == (64, 32) and t.dtype.name == "float32"
            assert np.array_equal(t.numpy(), registry["a"].numpy())
            assert _host(t.buffers[0]).ctypes.data == arr.ctypes.data


def test_out_misuse_before_the_request(start: Start) -> None:
    """Refused before anything is sent: not a buffer, read-only, misaligned, non-contiguous,
    a composite, with a device or parallel."""
    server, _ = start(_registry())
    with hg.connect(server.url) as client:
        a = client.get("a")
        group = client.get("group")
        misaligned = aligned_empty(64 * 32 * 4 + 1)[1:]
        readonly = aligned_empty(64 * 32 * 4)
        readonly.flags.writeable = False
        with pytest.raises(ArgumentTypeError, match="Tensor or a writable buffer"):
            client.get("a", out=[0.0] * 2048)
        for bad, why in (
            (readonly, "read-only"),
            (misaligned, "multiple of 64"),
            (aligned_empty(2 * 64 * 32 * 4)[::2], "non-contiguous"),
            (group, "non-composite"),
        ):
            with pytest.raises(UnsupportedOpError, match=why):
                client.get("a", out=bad)
        with pytest.raises(UnsupportedOpError, match="one connection"):
            client.get("a", out=a, parallel=2)
        with pytest.raises(UnsupportedOpError, match="host memory"):
            client.get("a", out=a, device="null")
        assert np.array_equal(client.get("a", out=a).numpy(), _values(1, (64, 32)))


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_out_that_does_not_fit_what_arrives(start: Start, transport: str) -> None:
    """Another shape, dtype, byte count, buffer count or a composite: UnsupportedOpError
    after the data was dropped; the connection goes on (also right after the repeated path
    had remembered the key), and out's memory is untouched where nothing matched."""
    registry = _registry()
    server, kw = start(registry, transport)
    with hg.connect(server.url, **kw) as client:
        a = client.get("a")
        _host(a.buffers[0])[:] = 7
        for key, out in (
            ("c", a),
            ("big", a),
            ("q", a),
            ("group", a),
            ("a", hg.from_numpy(np.zeros((64, 32), np.int32))),
            ("a", aligned_empty(64 * 32 * 4 - 64)),
            ("q", aligned_empty(4096)),
        ):
            with pytest.raises(UnsupportedOpError, match="server sent") as info:
                client.get(key, out=out)
            assert "Fix:" in str(info.value)
            assert np.array_equal(client.get("b").numpy(), registry["b"].numpy())  # in step
        assert (_host(a.buffers[0]) == 7).all()
        client.get("c")  # remembered as a repeated get of "c"
        with pytest.raises(UnsupportedOpError, match="server sent"):
            client.get("c", out=a)
        assert client.get("a", out=a) is a and np.array_equal(a.numpy(), _values(1, (64, 32)))


def test_the_same_out_again_is_checked_for_what_can_change(start: Start) -> None:
    """The Tensor of the last get(out=) is not checked whole again; what can change is: the
    server's descriptor (another key's kind is still refused), another out Tensor (its own
    kind), and a free of out's memory since (refused before the request)."""
    registry = _registry()
    server, _ = start(registry)
    with hg.connect(server.url) as client:
        a, c = client.get("a"), client.get("c")
        for _ in range(3):
            assert client.get("a", out=a) is a
        with pytest.raises(UnsupportedOpError, match="server sent"):
            client.get("c", out=a)  # [32, 64] into [64, 32]: refused though out= is known
        with pytest.raises(UnsupportedOpError, match="server sent"):
            client.get("a", out=c)
        assert client.get("c", out=c) is c and np.array_equal(c.numpy(), _values(3, (32, 64)))
        assert client.get("a", out=a) is a and np.array_equal(a.numpy(), _values(1, (64, 32)))
        for buffer in a.buffers:
            buffer.free()
        with pytest.raises(UnsupportedOpError, match="writable, non-composite tensor"):
            client.get("a", out=a)
        assert np.array_equal(client.get("a").numpy(), _values(1, (64, 32)))  # in step


@pytest.mark.parametrize("key", ["a", "big"])
def test_an_out_freed_while_its_request_is_sent(start: Start, key: str) -> None:
    """The last out= Tensor again sends its request before the rest of its checks; freed
    by another thread just after that (simulated here at the send), the get fails with a
    typed error, the answer is dropped, and the connection stays in step."""
    registry = _registry()
    server, _ = start(registry)
    with hg.connect(server.url) as client:
        out = client.get(key)
        assert client.get(key, out=out) is out  # remembered as the last out=
        conn = client._conn
        send = conn.send_message

        def send_then_free(message: Any) -> None:
            send(message)
            for buffer in out.buffers:
                buffer.free()

        conn.send_message = send_then_free  # type: ignore[method-assign]
        with pytest.raises(UnsupportedOpError, match="answer was dropped"):
            client.get(key, out=out)
        conn.send_message = send  # type: ignore[method-assign]
        want = registry[key].numpy()
        for _ in range(2):
            assert np.array_equal(client.get(key).numpy(), want)


@pytest.mark.parametrize("shape", [(16, 16), (512, 512)])  # 1 KiB: one receive; 1 MiB
def test_a_repeated_out_alternating_with_another_out(start: Start,
                                                     shape: tuple[int, int]) -> None:
    """The client remembers the last few out= Tensors (a small answer's receive slots for
    the last): alternating two out Tensors of the same kind (and fresh gets between) fills
    each with the current bytes and leaves the other as it was."""
    values = _values(5, shape)
    server, _ = start({"s": hg.from_numpy(values)})
    with hg.connect(server.url) as client:
        a, b = client.get("s"), client.get("s")
        for i in range(3):
            _host(a.buffers[0])[:] = 0
            _host(b.buffers[0])[:] = 0
            assert client.get("s", out=a) is a and np.array_equal(a.numpy(), values)
            assert not _host(b.buffers[0]).any()
            assert client.get("s", out=b) is b and np.array_equal(b.numpy(), values)
            assert np.array_equal(client.get("s").numpy(), values), i
            _host(a.buffers[0])[:] = 0
            assert client.get("s", out=a) is a and np.array_equal(a.numpy(), values)


def test_a_large_out_tensor_is_not_kept_alive_after_its_get(start: Start) -> None:
    """The client remembers the last out= Tensor weakly; a large one's memory is not held
    by what it remembers (a small one's few KiB may be)."""
    import gc
    import weakref

    from hurray_gpu.parts import assemble

    values = _values(6, (1 << 18,))  # 1 MiB
    server, _ = start({"big": hg.from_numpy(values)})
    with hg.connect(server.url) as client:
        memory = aligned_empty(values.nbytes)
        out = assemble(hg.from_numpy(values).descriptor, [hg.Buffer.wrap(memory)])
        for _ in range(2):  # the second takes the remembered path
            assert client.get("big", out=out) is out
            assert np.array_equal(memory.view(np.float32), values)
        held = weakref.ref(memory.base if memory.base is not None else memory)
        del out, memory
        gc.collect()
        assert held() is None
        assert np.array_equal(client.get("big").numpy(), values)  # still in step
