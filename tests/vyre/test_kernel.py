"""vyre.compile / Kernel: repeated launches on device buffers, zero-copy arguments, size
checks before launch, streams, traps, and the memory and disk caches."""

from __future__ import annotations

import numpy as np
import pytest

import vyre
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.program import compile_stats
from hurray_gpu.sync import Stream
from tests.vyre.lower_programs import kernel_devices
from vyre import builder as b
from vyre import programs as P
from vyre import reference
from vyre.kernel import kernel_cache_clear

DEVICES = kernel_devices()
SPECS = [d.spec for d in DEVICES]
GID = b.invocation_id(0)


def _counter() -> vyre.Program:
    """acc[i] += a[i] + 1 for i < buflen(acc): state carried across launches."""
    i = b.var("i")
    return b.program([b.read("a", 0, b.U32), b.read_write("acc", 1, b.U32)],
                     [b.let("i", GID), b.if_(b.lt(i, b.buf_len("acc")), [b.store(
                         "acc", i, b.add(b.load("acc", i), b.add(b.load("a", i), 1)))])],
                     workgroup_size=(8, 1, 1))


def _words(buf: Buffer) -> list[int]:
    return np.frombuffer(bytes(buf.copyout()), np.uint32).tolist()


@pytest.mark.parametrize("spec", SPECS)
def test_repeated_launches_on_device_buffers(spec: str) -> None:
    kernel = vyre.compile(_counter(), spec)
    assert vyre.compile(_counter(), spec) is kernel  # memory cache by fingerprint
    assert kernel.names == ("a", "acc")
    a = Buffer.from_bytes(spec, np.arange(20, dtype=np.uint32).tobytes())
    acc = Buffer.from_bytes(spec, bytes(80))
    for _ in range(3):
        kernel([a, acc], (3, 1, 1))
    kernel({"a": a, "acc": acc}, (3, 1, 1))
    kernel.device.synchronize()
    assert _words(acc) == [4 * (i + 1) for i in range(20)]


@pytest.mark.parametrize("spec", SPECS)
def test_kernel_matches_reference_on_a_real_program(spec: str) -> None:
    data = bytes(range(200))
    prog = P.crc32_program()
    kernel = vyre.compile(prog, spec)
    inp = Buffer.from_bytes(spec, np.frombuffer(data, np.uint8).astype(np.uint32).tobytes())
    out = Buffer(spec, kernel.nbytes("out"))
    kernel([inp, out], (1, 1, 1))
    kernel.device.synchronize()
    want = reference.run(prog, [np.frombuffer(data, np.uint8).astype(np.uint32)],
                         grid=(1, 1, 1))["out"].tolist()
    assert _words(out) == want


@pytest.mark.parametrize("spec", SPECS)
def test_sizes_devices_and_grids_are_checked_before_launch(spec: str) -> None:
    prog = P.elementwise_program("avg_floor", 16)
    kernel = vyre.compile(prog, spec)
    ok = [Buffer(spec, 64) for _ in range(3)]
    short = Buffer(spec, 60)
    for bad in ([ok[0], short, ok[2]], [ok[0], ok[1], short]):  # input / output too small
        with pytest.raises(vyre.UnsupportedOpError, match="declares 64"):
            kernel(bad, (1, 1, 1))
    with pytest.raises(vyre.UnsupportedOpError):
        kernel(ok[:2], (1, 1, 1))
    with pytest.raises(vyre.UnsupportedOpError):
        kernel({"a": ok[0], "b": ok[1], "nope": ok[2]}, (1, 1, 1))
    with pytest.raises(vyre.UnsupportedOpError):
        kernel(ok, (1, 1))
    for grid in ((2**32, 1, 1), (1.5, 1, 1), "abc", None, (-1, 1, 1)):
        with pytest.raises(vyre.UnsupportedOpError):
            kernel(ok, grid)
    kernel(ok, [1, 1, 1])  # a list is fine (not memoized)
    with pytest.raises(vyre.UnsupportedOpError):
        kernel([ok[0], ok[1], object()], (1, 1, 1))
    other = next(d.spec for d in DEVICES if d.spec != spec) if len(DEVICES) > 1 else None
    if other is not None:
        with pytest.raises(vyre.UnsupportedOpError, match="is on"):
            kernel([ok[0], ok[1], Buffer(other, 64)], (1, 1, 1))
        with pytest.raises(vyre.UnsupportedOpError, match="stream"):
            kernel(ok, (1, 1, 1), stream=Stream(other))
    freed = Buffer(spec, 64)
    freed.free()
    with pytest.raises(vyre.UnsupportedOpError, match="freed"):
        kernel([ok[0], ok[1], freed], (1, 1, 1))


@pytest.mark.parametrize("spec", SPECS)
def test_explicit_stream_and_zero_grid(spec: str) -> None:
    kernel = vyre.compile(_counter(), spec)
    a = Buffer.from_bytes(spec, np.ones(8, np.uint32).tobytes())
    acc = Buffer.from_bytes(spec, bytes(32))
    stream = Stream(spec)
    kernel([a, acc], (1, 1, 1), stream=stream)
    kernel([a, acc], (0, 1, 1), stream=stream)  # an explicit 0 counts as 1 (docs/vyre-semantics.md, Grid inference)
    stream.synchronize()
    assert _words(acc) == [4] * 8
    ref = vyre.run(_counter(), {"a": np.ones(8, np.uint32).tobytes(), "acc": bytes(32)},
                   grid=(0, 1, 1))  # the reference: one workgroup for a 0 grid
    assert np.frombuffer(ref["acc"], np.uint32).tolist() == [2] * 8


@pytest.mark.parametrize("spec", SPECS)
def test_trap_raises_and_resets(spec: str) -> None:
    prog = b.program([b.read("a", 0, b.I32), b.read("d", 1, b.I32), b.output("q", 2, b.I32, 4)],
                     [b.let("i", GID), b.if_(b.lt(b.var("i"), 4), [b.store(
                         "q", b.var("i"), b.div(b.load("a", b.var("i")),
                                                b.load("d", b.var("i"))))])],
                     workgroup_size=(4, 1, 1))
    kernel = vyre.compile(prog, spec)
    a = Buffer.from_bytes(spec, np.array([7, -7, 9, 1], np.int32).tobytes())
    zero = Buffer.from_bytes(spec, np.array([2, 2, 0, 4], np.int32).tobytes())
    good = Buffer.from_bytes(spec, np.array([2, 2, 3, 4], np.int32).tobytes())
    q = Buffer(spec, 16)
    with pytest.raises(vyre.TrapError):
        kernel([a, zero, q], (1, 1, 1))
    kernel([a, good, q], (1, 1, 1))
    assert np.frombuffer(bytes(q.copyout()), np.int32).tolist() == [3, -3, 3, 0]


@pytest.mark.parametrize("spec", [s for s in SPECS if not s.startswith("cpu")])
def test_grid_sync_segments_launch_in_order(spec: str) -> None:
    n = 100
    kernel = vyre.compile(P.multi_block_scan_program(n, 32), spec)
    data = np.arange(n, dtype=np.uint32) * 3
    bufs = [Buffer.from_bytes(spec, data.tobytes()), Buffer(spec, 4 * n),
            Buffer.from_bytes(spec, bytes(16))]
    kernel(bufs, (4, 1, 1))
    kernel.device.synchronize()
    assert _words(bufs[1]) == np.cumsum(data, dtype=np.uint32).tolist()


def test_cpu_takes_numpy_and_tensors_zero_copy() -> None:
    import hurray_gpu as hg

    kernel = vyre.compile(_counter(), "cpu")
    a = np.arange(8, dtype=np.uint32)
    acc = np.zeros(8, np.uint32)
    kernel([a, acc], (1, 1, 1))
    assert acc.tolist() == [i + 1 for i in range(8)]  # written in place
    tensor = hg.Tensor.from_numpy(np.zeros(8, np.uint32))
    kernel({"a": a, "acc": tensor}, (1, 1, 1))
    assert tensor.buffers[0].array.view(np.uint32).tolist() == acc.tolist()
    frozen = np.zeros(8, np.uint32)
    frozen.flags.writeable = False
    with pytest.raises(vyre.UnsupportedOpError, match="read-only"):
        kernel([a, frozen], (1, 1, 1))
    with pytest.raises(vyre.UnsupportedOpError, match="contiguous"):
        kernel([a, np.zeros(16, np.uint32)[::2]], (1, 1, 1))
    with pytest.raises(vyre.UnsupportedOpError, match="aligned"):
        kernel([a, np.zeros(40, np.uint8)[1:33].view(np.uint32)], (1, 1, 1))
    with pytest.raises(vyre.UnsupportedOpError, match="object"):
        kernel([a, np.zeros(8, object)], (1, 1, 1))
    with pytest.raises(vyre.UnsupportedOpError, match="declares|bytes"):
        vyre.compile(P.elementwise_program("avg_floor", 16), "cpu")(
            [np.zeros(15, np.uint32), np.zeros(16, np.uint32), np.zeros(16, np.uint32)],
            (1, 1, 1))
    if "opencl:0" in SPECS:
        with pytest.raises(vyre.UnsupportedOpError, match="host"):
            vyre.compile(_counter(), "opencl:0")([a, acc], (1, 1, 1))


def test_reference_is_not_a_compile_target_and_refusals_are_early() -> None:
    with pytest.raises(vyre.UnsupportedOpError):
        vyre.compile(_counter(), "reference")
    # Refused before compiling: more workgroup memory (40 KiB) than OpenCL guarantees.
    words = 10240
    big = b.program([b.workgroup("big", words, b.U32), b.output("y", 1, b.U32, 4)],
                    [b.let("i", b.invocation_id(0)), b.store("big", b.var("i"), b.var("i")),
                     b.barrier(), b.store("y", b.var("i"), b.load("big", b.var("i")))],
                    workgroup_size=(4, 1, 1))
    with pytest.raises(vyre.UnsupportedOpError):
        if "opencl:0" in SPECS:
            vyre.compile(big, "opencl:0")
        else:
            vyre.compile(P.softmax_program(4), "cpu")


def test_disk_cache_serves_a_recompile() -> None:
    prog = P.elementwise_program("wrapping_neg", 12)
    device = next(d for d in DEVICES if d.spec.startswith("cpu"))
    vyre.compile(prog, device)
    kernel_cache_clear()
    device.finalize()  # drops the device's loaded programs too
    before = compile_stats()
    kernel = vyre.compile(prog, device)
    after = compile_stats()
    assert after["compiles"] == before["compiles"]
    assert after["disk_hits"] > before["disk_hits"]
    x = np.array([1] * 12, np.uint32)
    out = np.zeros(12, np.uint32)
    kernel([x, out], (1, 1, 1))
    assert out.tolist() == [0xFFFFFFFF] * 12


@pytest.mark.parametrize("spec", [s for s in SPECS if not s.startswith("cpu")])
def test_device_tensors_are_used_in_place(spec: str) -> None:
    import hurray_gpu as hg

    kernel = vyre.compile(P.elementwise_program("wrapping_neg", 4), spec)
    src = hg.Tensor.from_numpy(np.array([0, 1, 2, 3], np.uint32)).to(spec)
    dst = hg.Tensor.from_numpy(np.zeros(4, np.uint32)).to(spec)
    kernel({"a": src, "out": dst}, (1, 1, 1))
    kernel.device.synchronize()
    assert dst.to("cpu").numpy().tolist() == [0, 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD]
    with pytest.raises(vyre.UnsupportedOpError, match="tensor on cpu:0"):
        kernel([hg.Tensor.from_numpy(np.zeros(4, np.uint32)), dst], (1, 1, 1))


@pytest.mark.parametrize("spec", SPECS)
def test_trap_is_seen_on_an_explicit_stream(spec: str) -> None:
    prog = b.program([b.read("a", 0, b.I32), b.output("q", 1, b.I32, 1)],
                     [b.store("q", 0, b.div(b.load("a", 0), b.load("a", 1)))])
    kernel = vyre.compile(prog, spec)
    a = Buffer.from_bytes(spec, np.array([5, 0], np.int32).tobytes())
    with pytest.raises(vyre.TrapError):
        kernel([a, Buffer(spec, 4)], (1, 1, 1), stream=Stream(spec))
