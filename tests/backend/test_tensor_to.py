"""Tensor.to(device): bit-exact round trips of every dtype and layout, device-to-device copies,
device loads straight from files and streams, progress-bar policy and hostile sizes."""

from __future__ import annotations

import dataclasses
import io
import sys
import tracemalloc
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hurray"))


from hurray_gpu import config  # noqa: E402
from hurray_gpu.errors import HurrayFormatError, OutOfMemoryError, UnsupportedOpError  # noqa: E402
from hurray_gpu.format import descriptor as d  # noqa: E402
from hurray_gpu.format.dtypes import DTYPES, value_table  # noqa: E402
from hurray_gpu.io import StreamReader, StreamWriter, load, open_file, save  # noqa: E402
from hurray_gpu.runtime import memory, transfer  # noqa: E402
from hurray_gpu.runtime.buffer import Buffer  # noqa: E402
from hurray_gpu.runtime.device import Device
from hurray_gpu.runtime.memory import MemoryClass  # noqa: E402
from hurray_gpu.runtime.registry import devices  # noqa: E402
from hurray_gpu.runtime.registry import resolve_device as open_device  # noqa: E402
from hurray_gpu.tensor import Tensor  # noqa: E402
from tests._support import require_peer

import _io_samples as samples  # noqa: E402

MIB = 1 << 20
NUMPY_DTYPES = sorted(dt.name for dt in DTYPES.values() if dt.numpy is not None)
MOVABLE = [dv for dv in devices() if dv.kind in ("cpu", "opencl", "vulkan")]


def _random_array(name: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    dt = next(t for t in DTYPES.values() if t.name == name)
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if dt.bits <= 8 and dt.name != "bool":
        codes = np.arange(1 << dt.bits)
        if name == "float8_e8m0":
            codes = codes[1:-1]  # Hurray forbids 0x00 and 0xFF in e8m0 data
        values = value_table(dt)[rng.choice(codes, n)]
        values = values[~np.isnan(values)] if name != "float8_e8m0" else values
        values = np.resize(values, n)
        return values.astype(dt.numpy).reshape(shape)
    if name == "bool":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    raw = rng.bytes(n * dt.numpy.itemsize)
    return np.frombuffer(raw, dtype=dt.numpy).reshape(shape).copy()


def _check_placed(t: Tensor, dev: Device, mclass: MemoryClass) -> None:
    assert t.device is dev and t.memory_class == mclass
    for h in t.descriptor.buffers:
        assert (h.device_tag, h.memory_class, h.sync_mode) == (dev.tag, mclass, 0)
        if h.byte_size:
            assert h.alignment >= (64 if dev.tag == 0 else 4096)
    assert all(isinstance(b, Buffer) and b.device is dev and b.memory_class == mclass
               for b in t.buffers)
    d.decode_descriptor(t.descriptor_bytes)  # the re-declared table is valid on the wire
    for m in t.members:
        _check_placed(m, dev, mclass)


def _same_data(a: Tensor, b: Tensor) -> None:
    """Bit-exact buffers and equal descriptors apart from the buffer handles."""
    assert len(a.buffers) == len(b.buffers) and len(a.members) == len(b.members)
    for x, y in zip(a.buffers, b.buffers, strict=True):
        xs = x.numpy() if isinstance(x, Buffer) else np.asarray(x)
        ys = y.numpy() if isinstance(y, Buffer) else np.asarray(y)
        assert xs.tobytes() == ys.tobytes()
    strip = dataclasses.replace
    assert strip(a.descriptor, buffers=()) == strip(b.descriptor, buffers=())
    assert [h.byte_size for h in a.descriptor.buffers] == [h.byte_size for h in
                                                           b.descriptor.buffers]
    for x, y in zip(a.members, b.members, strict=True):
        _same_data(x, y)


def _host_target(dev: Device) -> str:
    return "reference" if dev.kind == "cpu" else "cpu"


@pytest.mark.parametrize("name", NUMPY_DTYPES)
def test_every_dtype_round_trips_bit_exact(device: Device, name: str) -> None:
    arr = _random_array(name, (3, 5), seed=len(name))
    t = Tensor.from_numpy(arr)
    on = t.to(device)
    _check_placed(on, device, MemoryClass.STANDARD)
    back = on.to("cpu")
    _same_data(back, t)
    assert back == t and np.array_equal(back.numpy(), arr, equal_nan=arr.dtype.kind == "f")


LAYOUTS = {**samples.layout_samples(), "per_channel": samples.quantized_per_channel(),
           "coo_sorted": samples.coo(), "strided_transposed": samples.strided(),
           "partition": samples.partition(), "overlay": samples.overlay(),
           "nested_group": samples.nested_group(),
           "empty": Tensor.from_numpy(np.zeros((0, 4), np.float32)),
           "col_major_bf16": Tensor.from_numpy(_random_array("bfloat16", (4, 3), 1), order="F")}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_every_layout_round_trips_bit_exact(device: Device, name: str) -> None:
    t = LAYOUTS[name]
    on = t.to(device)
    _check_placed(on, device, MemoryClass.STANDARD)
    _same_data(on, t)
    back = on.to("cpu")
    _check_placed(back, open_device("cpu"), MemoryClass.STANDARD)
    _same_data(back, t)


def test_every_memory_class(device: Device) -> None:
    t = Tensor.from_parts(samples.head(3, 2), [], [samples.quantized_per_channel(),
                                                     samples.coo()])
    for mclass in device.memory_classes:
        if mclass == MemoryClass.HOST_PINNED and device.kind == "cpu":
            mclass_note = "pinned host memory stays a host tensor"
            on = t.to(device, memory_class="host_pinned")
            pinned = on.members[0].buffers[0]
            assert on.is_host and pinned.memory_class == MemoryClass.HOST_PINNED, mclass_note
            assert on.members[0].buffers[0].array.tobytes() == t.members[0].buffers[0].array.tobytes()
        elif not d.is_valid_pair(device.tag, mclass):
            with pytest.raises(UnsupportedOpError, match="Fix:"):
                t.to(device, memory_class=mclass)
            continue
        else:
            on = t.to(device, memory_class=mclass.label)
        _check_placed(on, device, mclass)
        _same_data(on.to("cpu"), t)
        assert on.to(device, memory_class=mclass) is on  # already there: no copy


@pytest.mark.parametrize("src", MOVABLE, ids=[dv.spec for dv in MOVABLE])
@pytest.mark.parametrize("dst", MOVABLE, ids=[dv.spec for dv in MOVABLE])
def test_device_to_device(src: Device, dst: Device) -> None:
    t = Tensor.from_parts(samples.head(3, 2), [], [LAYOUTS["csf"], LAYOUTS["per_block"]])
    on_src = t.to(src)
    classes = [m for m in dst.memory_classes if m != MemoryClass.HOST_PINNED or
               dst.kind != "cpu"]
    for mclass in classes:
        moved = on_src.to(dst, memory_class=mclass)
        _check_placed(moved, dst, mclass)
        _same_data(moved.to("cpu"), t)


def test_same_device_copy_stays_on_the_device(monkeypatch: pytest.MonkeyPatch) -> None:
    for dev in MOVABLE:
        calls: list[int] = []
        cls = type(getattr(dev.allocator, "inner", dev.allocator))  # under a canary wrapper too
        original = cls._copy

        def spy(self, dest, src, nbytes, _orig=original, _calls=calls):  # noqa: ANN001, ANN202
            _calls.append(nbytes)
            return _orig(self, dest, src, nbytes)

        monkeypatch.setattr(cls, "_copy", spy)
        data = np.random.default_rng(3).integers(0, 256, 4096 + 17, dtype=np.uint8)
        a = Buffer.from_bytes(dev, data)
        b = Buffer(dev, data.size).copy_from(a)
        assert calls == [data.size], dev.spec
        assert np.array_equal(b.numpy(), data)
        monkeypatch.setattr(cls, "_copy", original)


def test_default_copy_hook_is_host_staged_and_chunked(monkeypatch: pytest.MonkeyPatch) -> None:
    from hurray_gpu.runtime import memory

    monkeypatch.setattr(memory, "CHUNK", 1000)
    cpu = open_device("cpu")
    data = np.arange(4321, dtype=np.uint32).view(np.uint8)
    a, b = Buffer.from_bytes(cpu, data), Buffer(cpu, data.size)
    memory.Allocator._copy(getattr(cpu.allocator, "inner", cpu.allocator), b.allocation.raw, a.allocation.raw, data.size)
    assert np.array_equal(b.numpy(), data)


@pytest.mark.parametrize("dev", MOVABLE, ids=[dv.spec for dv in MOVABLE])
def test_overlapping_views_copy_like_memmove(dev: Device) -> None:
    data = np.arange(1024, dtype=np.uint8)
    buf = Buffer.from_bytes(dev, data)
    buf.view(256, 512).copy_from(buf.view(0, 512))
    expect = data.copy()
    expect[256:768] = data[0:512]
    assert np.array_equal(buf.numpy(), expect)


def test_device_tensor_numpy_raises_with_fix() -> None:
    for dev in MOVABLE:
        on = Tensor.from_numpy(np.arange(6, dtype=np.int32)).to(dev)
        if dev.kind == "cpu":
            assert on.numpy().tolist() == list(range(6))
            continue
        with pytest.raises(UnsupportedOpError, match=r"to\('cpu'\)"):
            on.numpy()
        assert dev.spec in repr(on) and on.nbytes == 24 and not on.is_host


def test_from_parts_accepts_buffers_and_checks_them() -> None:
    cpu = open_device("cpu")
    desc = d.TensorDescriptor.dense("float32", (4,))
    host = Tensor.from_parts(desc, [Buffer.from_bytes(cpu, np.arange(4, dtype=np.float32))])
    assert host.is_host and host.numpy().tolist() == [0, 1, 2, 3]
    with pytest.raises(HurrayFormatError, match="byte_size"):
        Tensor.from_parts(desc, [Buffer(cpu, 8)])
    for dev in MOVABLE:
        if dev.kind == "cpu":
            continue
        buf = Buffer.from_bytes(dev, np.arange(4, dtype=np.float32))
        with pytest.raises(HurrayFormatError, match="declare"):
            Tensor.from_parts(desc, [buf])  # the handle still says cpu
        on = Tensor.from_parts(d.TensorDescriptor.dense("float32", (4,), device_tag=dev.tag),
                               [buf])
        assert on.device is dev and on.to("cpu").numpy().tolist() == [0, 1, 2, 3]


def test_room_is_checked_before_allocating(monkeypatch: pytest.MonkeyPatch) -> None:
    for dev in MOVABLE:
        if dev.kind == "cpu":
            continue
        monkeypatch.setattr(type(dev), "memory_info", lambda self: (1000, 1 << 30))
        before = dev.allocator.allocated_bytes
        with pytest.raises(OutOfMemoryError):
            Tensor.from_numpy(np.zeros(2000, np.uint8)).to(dev)
        assert dev.allocator.allocated_bytes == before
        monkeypatch.undo()


def test_256_mib_round_trip(device: Device) -> None:
    data = np.frombuffer(np.random.default_rng(256).bytes(256 * MIB), np.uint8)
    handle = d.BufferHandle(data.size, 4096, d.DeviceTag.CUDA, 0, 0)
    desc = d.TensorDescriptor(DTYPES[0x11], (data.size,), d.RowMajor(), (handle,))
    t = Tensor.from_parts(desc, [data])
    on = t.to(device)  # the CUDA-declared host tensor is really copied, even to cpu
    _check_placed(on, device, MemoryClass.STANDARD)
    back = on.to(_host_target(device)).to("cpu")
    out = back.buffers[0]
    assert np.array_equal(out, data)
    for buf in on.buffers:
        if isinstance(buf, Buffer):
            buf.free()
    del on, back, out


@pytest.fixture(scope="module")
def hrry_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("to_device") / "mixed.hrry"
    tensors = {**samples.sample_tensors(), "csr": LAYOUTS["csr"], "nest": LAYOUTS["nested_group"],
               "tiled": LAYOUTS["tiled_nested"], "dev": LAYOUTS["device_buffers"]}
    save(path, tensors)
    return path


def test_load_to_device_equals_load_then_to(device: Device, hrry_file: Path) -> None:
    host = load(hrry_file)
    placed = load(hrry_file, device=device)
    assert list(placed) == list(host)
    for name, t in host.items():
        expect = t.to(device)
        assert placed[name] == expect, name
        _check_placed(placed[name], device, MemoryClass.STANDARD)
    with open_file(hrry_file) as f:
        one = f.read("nest", device=device, progress=False)
    assert one == host["nest"].to(device)


def test_stream_reader_to_device(device: Device) -> None:
    tensors = list(samples.sample_tensors().values()) + [LAYOUTS["csf"]]
    sink = io.BytesIO()
    with StreamWriter(sink) as w:
        for t in tensors:
            w.write(t)
    got = list(StreamReader(sink.getvalue(), device=device))
    assert got == [t.to(device) for t in tensors]
    again = io.BytesIO()
    with StreamWriter(again) as w:  # device tensors write out (copied back chunk by chunk)
        for t in got:
            w.write(t.to("cpu"))
    assert len(again.getvalue()) == len(sink.getvalue())


def test_stream_truncated_buffer_frees_device_memory() -> None:
    for dev in MOVABLE:
        if dev.kind == "cpu":
            continue
        t = Tensor.from_numpy(np.arange(5000, dtype=np.uint8))
        raw = io.BytesIO()
        StreamWriter(raw).write(t)
        before = dev.allocator.allocated_bytes
        with pytest.raises(HurrayFormatError, match="truncated"):
            list(StreamReader(io.BytesIO(raw.getvalue()[:-100]), device=dev))
        assert dev.allocator.allocated_bytes == before
        with pytest.raises(HurrayFormatError, match="max_buffer_size"):
            list(StreamReader(raw.getvalue(), device=dev, max_buffer_size=100))
        assert dev.allocator.allocated_bytes == before


DEVICE_MEMORY = [dv for dv in devices() if dv.kind in ("opencl", "vulkan")] + [
    open_device("null")]


@pytest.mark.parametrize("dev", DEVICE_MEMORY, ids=[dv.spec for dv in DEVICE_MEMORY])
def test_device_load_does_not_materialise_the_file(dev: Device, tmp_path: Path) -> None:
    size = 80 * MIB
    path = tmp_path / "big.hrry"
    save(path, {"big": Tensor.from_numpy(np.full(size, 7, np.uint8))})
    tracemalloc.start()
    try:
        placed = load(path, device=dev, progress=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < size // 2, f"peak host allocation {peak} for a {size}-byte tensor"
    assert placed["big"].nbytes == size
    if dev.kind != "null":
        assert placed["big"].buffers[0].view(size - 4, 4).numpy().tolist() == [7] * 4
    placed["big"].buffers[0].free()


@pytest.mark.parametrize("dev", DEVICE_MEMORY, ids=[dv.spec for dv in DEVICE_MEMORY])
def test_device_stream_read_is_bounded(dev: Device, tmp_path: Path) -> None:
    size = 80 * MIB
    path = tmp_path / "big.hrrs"
    with StreamWriter(path) as w:
        w.write(Tensor.from_numpy(np.full(size, 9, np.uint8)))
    tracemalloc.start()
    try:
        with StreamReader(path, device=dev, progress=False) as reader:
            got = reader.read()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got is not None and got.nbytes == size
    assert peak < memory.CHUNK + 8 * MIB, peak
    got.buffers[0].free()


# -- progress bar policy --------------------------------------------------------------------
class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    big, small = transfer.PROGRESS_THRESHOLD, transfer.PROGRESS_THRESHOLD - 1
    monkeypatch.delenv("HURRAY_GPU_PROGRESS", raising=False)
    assert config.progress() is None
    assert transfer.show_progress(big, None, _Tty())
    assert not transfer.show_progress(small, None, _Tty())
    assert not transfer.show_progress(big, None, io.StringIO())  # not a terminal
    assert not transfer.show_progress(big, False, _Tty())
    assert transfer.show_progress(1, True, io.StringIO())
    monkeypatch.setenv("HURRAY_GPU_PROGRESS", "0")
    assert config.progress() is False and not transfer.show_progress(big, None, _Tty())
    assert transfer.show_progress(big, True, _Tty())  # an explicit argument wins
    monkeypatch.setenv("HURRAY_GPU_PROGRESS", "1")
    assert config.progress() is True and transfer.show_progress(big, None, io.StringIO())
    assert not transfer.show_progress(small, None, _Tty())


def test_progress_bar_draws_and_is_optional(monkeypatch: pytest.MonkeyPatch) -> None:
    require_peer("rich")
    with transfer.Progress(100, "x", True) as bar:
        assert bar.active
        bar.advance(60)
        bar.advance(40)
        assert bar.done == 100
    assert not bar.active
    monkeypatch.setitem(sys.modules, "rich.progress", None)  # rich missing: no bar, no error
    with transfer.Progress(100, "x", True) as bar:
        assert not bar.active
        bar.advance(100)
    t = Tensor.from_numpy(np.arange(10, dtype=np.float32))
    assert t.to("reference", progress=True).to("cpu") == t


def test_tensor_to_uses_the_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[int, bool]] = []
    real = transfer.Progress

    class Spy(real):  # type: ignore[misc, valid-type]
        def __init__(self, total: int, label: str, enabled: bool) -> None:
            seen.append((total, enabled))
            super().__init__(total, label, False)

    from hurray_gpu import parts

    monkeypatch.setattr(parts, "Progress", Spy)
    t = Tensor.from_numpy(np.zeros(1000, np.uint8))
    t.to("reference", progress=False)
    t.to("reference", progress=True)
    assert seen == [(1000, False), (1000, True)]


def test_ml_dtypes_sample_coverage() -> None:
    assert {"int4", "uint2", "float6_e3m2", "bool", "complex128"} <= set(NUMPY_DTYPES)
    assert _random_array("float4_e2m1", (7,), 0).dtype == ml_dtypes.float4_e2m1fn


def test_chunked_paths_between_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "CHUNK", 4096)  # force many chunks through every path
    data = np.random.default_rng(9).integers(0, 256, 50_001, dtype=np.uint8)
    t = Tensor.from_numpy(data)
    chain = [dv for dv in MOVABLE if dv.kind != "cpu"] * 2 + [open_device("reference")]
    on = t
    for dev in chain:
        for mclass in dev.memory_classes:
            on = on.to(dev, memory_class=mclass)
            assert on.to("cpu") == t, (dev.spec, mclass)
    sink = io.BytesIO()
    StreamWriter(sink).write(on)  # a device tensor streams out chunk by chunk
    assert next(iter(StreamReader(sink.getvalue()))) == t


def test_host_arrays_over_cpu_buffers_keep_them_alive() -> None:
    import gc

    cpu = open_device("cpu")
    classes = [m for m in (MemoryClass.HOST_PINNED, MemoryClass.STANDARD)
               if m in cpu.memory_classes]
    desc = d.TensorDescriptor.dense("uint8", (4096,))
    made = [Tensor.from_numpy(np.arange(4096, dtype=np.uint8)).to(cpu, memory_class=classes[0]),
            Tensor.from_parts(desc, [Buffer.from_bytes(cpu, np.arange(4096, dtype=np.uint8))])]
    while made:
        t = made.pop(0)
        view = np.ascontiguousarray(t.buffers[0].array[10:20]).reshape(-1)  # base chain collapses
        mclass = t.memory_class
        del t
        gc.collect()
        other = Buffer.from_bytes(cpu, np.zeros(4096, np.uint8), mclass)  # pool reuse?
        assert view.tolist() == list(range(10, 20))  # the memory was not handed out again
        other.free()
