"""Regression tests for inputs that once escaped the documented bounds (docs/reliability.md):
composites the materializer could not assemble, a quadratic partition cover check, a reader
allocation 69,000x its input, unbounded materialize outputs, files rewritten under an open
reader, non-atomic CLI outputs, and writers emitting what readers refuse."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import hurray_gpu as hg
from fuzz import hrry as fuzz_hrry
from fuzz import seeds
from fuzz import stream as fuzz_stream
from hurray_gpu.cli import main
from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError
from hurray_gpu.format import descriptor as d
from hurray_gpu.format.composite import validate_members
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.io import StreamReader, StreamWriter, load, save

from _io_samples import _u8_broadcast, broadcast_partition, group_in_partition, nested_groups

ROOT = Path(__file__).resolve().parents[2]


def _stream(t: object) -> bytes:
    out = io.BytesIO()
    StreamWriter(out).write(t)
    return out.getvalue()


def _peak(call: object) -> int:
    """tracemalloc peak of ``call()`` (after one untraced warm-up call)."""
    call()  # type: ignore[operator]
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        call()  # type: ignore[operator]
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


# -- composites the materializer cannot assemble ------------------------------------------
def test_group_inside_a_partition_is_a_typed_error(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture) -> None:
    # Was: AttributeError ('tuple' has no 'shape'), a 25-line traceback from the CLI.
    data = _stream(group_in_partition())
    t = next(iter(StreamReader(data)))
    with pytest.raises(UnsupportedOpError, match="group composite.*Fix: materialize"):
        hg.materialize(t)
    path = tmp_path / "p.hrry"
    save(path, {"p": t})
    for name in ("p", "p/0"):  # the partition, and the group alone
        assert main(["materialize", str(path), name, "--device", "cpu",
                     "--out", str(tmp_path / f"{name[-1]}.npy")]) == 1
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and "group composite" in err and "Fix:" in err
        assert "\n" not in err and "Traceback" not in err
    # The group's members still materialize one by one.
    assert hg.materialize(t.members[0].members[0]).numpy().tolist() == [[1, 1], [1, 1]]


# -- partition cover: linear in the members, independent of the head ------------------------
def _staircase_descriptors(r: int) -> tuple[object, list[object]]:
    u8, shape = by_name("uint8"), (r, r)

    def box(rows: int, row: int, col: int) -> object:
        return d.TensorDescriptor(u8, (rows, 1), d.Strided((0, 0)), (d.BufferHandle(1),),
                                  shard=d.Shard(shape, (row, col)))

    members = [box(j, 0, j) for j in range(r)] + [box(r - j, j, j) for j in range(r)]
    return d.TensorDescriptor(u8, shape, d.Composite(1, 0, 2 * r), ()), members


def test_partition_cover_check_is_near_linear() -> None:
    # 2R one-byte members, column j split at row j: a sweep keeps ~R boxes open. The old
    # check took 3.6 s at 10^4 members and 17.7 s at 2 * 10^4 (over 7 minutes at 10^5).
    head, members = _staircase_descriptors(50_000)
    start = time.perf_counter()
    validate_members(head, members)
    assert time.perf_counter() - start < 10.0
    # A one-element shift makes two members overlap; it is found and named.
    members[-1] = d.TensorDescriptor(by_name("uint8"), (1, 1), d.Strided((0, 0)),
                                     (d.BufferHandle(1),), shard=d.Shard((50_000,) * 2, (0, 0)))
    with pytest.raises(HurrayFormatError, match=r"members 50000 and 99999 overlap at element \[0, 0\]"):
        validate_members(head, members)


def test_partition_with_too_many_corners_is_refused() -> None:
    # Rank 8, each member stopping short of the head's end on every axis: 256 corners each.
    shape = (4,) * 8
    cells = [d.TensorDescriptor(by_name("uint8"), (2,) * 8, d.Strided((0,) * 8),
                                (d.BufferHandle(1),), shard=d.Shard(shape, tuple(
                                    2 * ((i >> k) & 1) for k in range(8)))) for i in range(256)]
    head = d.TensorDescriptor(by_name("uint8"), shape, d.Composite(1, 0, 256), ())
    with pytest.raises(HurrayFormatError, match="box corners.*Fix: split"):
        validate_members(head, [cells[0]] * 256)
    validate_members(head, cells)  # the regular 2^8 grid: 3^8 corners in all, accepted


# -- reader memory: a small multiple of the input ------------------------------------------
def test_reader_memory_is_a_small_multiple_of_the_input(tmp_path: Path) -> None:
    # The 273-byte stream of broadcast_partition() once allocated 18 MiB (a coverage grid).
    small = _stream(broadcast_partition())
    assert len(small) < 300
    checked = 0
    for seed in (*seeds.stream_seeds(), bytes([0]) + small):
        payload = seed[1:]
        peak = _peak(lambda p=payload: list(StreamReader(p)))
        assert peak <= fuzz_stream.BOUNDS.memory_limit(len(payload)), (len(payload), peak)
        checked += 1
    for i, seed in enumerate(seeds.hrry_seeds()):
        path = tmp_path / f"{i}.hrry"
        path.write_bytes(seed[1:])
        peak = _peak(lambda p=path: load(p))
        assert peak <= fuzz_hrry.BOUNDS.memory_limit(len(seed) - 1), (i, peak)
        checked += 1
    assert checked > 60


# -- materialize / dequantize output limit -----------------------------------------------
def test_materialize_output_limit(tmp_path: Path) -> None:
    # Was: a 4 KiB file whose stride-0 broadcast materialized to 1 GiB (16 GiB allowed).
    path = tmp_path / "b.hrry"
    save(path, {"b": _u8_broadcast((1 << 16, 1 << 14))})
    assert path.stat().st_size <= 8192
    t = load(path)["b"]
    tracemalloc.start()
    try:
        with pytest.raises(UnsupportedOpError, match="1,073,741,824 bytes.*max_output_bytes"):
            hg.materialize(t)
        assert tracemalloc.get_traced_memory()[1] < 1 << 20  # refused before allocating
    finally:
        tracemalloc.stop()
    small = _u8_broadcast((1 << 12, 1 << 12))  # 16 MiB: under the default floor
    with pytest.raises(UnsupportedOpError, match="over the output limit of 1,048,576"):
        hg.materialize(small, max_output_bytes=1 << 20)
    assert np.all(hg.materialize(small).numpy() == 7)
    # The caller's limit holds for a composite head (64 x 64 bytes) and for its members.
    with pytest.raises(UnsupportedOpError, match="output limit of 4,095"):
        hg.materialize(broadcast_partition(64), max_output_bytes=4095)
    part = hg.materialize(broadcast_partition(64), max_output_bytes=4096).numpy()
    assert part[:32].tolist() == [[3] * 64] * 32 and part[32:].tolist() == [[4] * 64] * 32
    q = hg.Tensor.from_parts(d.TensorDescriptor(
        by_name("int8"), (4, 4), d.RowMajor(), (d.BufferHandle(16),),
        quantization=d.PerTensorAffine(0.5, 0)), [bytes(range(16))])
    with pytest.raises(UnsupportedOpError, match="float32 result of shape \\[4, 4\\]"):
        hg.dequantize(q, max_output_bytes=63)
    assert hg.dequantize(q, max_output_bytes=64).numpy().tolist()[0] == [0, 0.5, 1, 1.5]


# -- writers never emit what readers refuse; durable, atomic saves ------------------------
def test_writers_refuse_composites_nested_deeper_than_readers_accept(tmp_path: Path) -> None:
    ok = nested_groups(8)
    save(tmp_path / "ok.hrry", {"g": ok})
    assert load(tmp_path / "ok.hrry")["g"] == ok
    assert list(StreamReader(_stream(ok))) == [ok]
    too_deep = nested_groups(9)
    with pytest.raises(HurrayFormatError, match="more than 8 levels.*Fix: flatten"):
        save(tmp_path / "deep.hrry", {"g": too_deep})  # was written, then refused by load
    with pytest.raises(HurrayFormatError, match="more than 8 levels"):
        StreamWriter(io.BytesIO()).write(too_deep)
    assert sorted(os.listdir(tmp_path)) == ["ok.hrry"]  # no file, no temporary left


def test_save_fsyncs_the_file_before_the_rename_and_the_folder_after(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        calls.append("fsync-dir" if os.path.isdir(f"/proc/self/fd/{fd}") else "fsync-file")
        real_fsync(fd)

    def replace(src: str, dst: str) -> None:
        calls.append("replace")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    save(tmp_path / "a.hrry", {"x": np.arange(3)})
    assert calls == ["fsync-file", "replace", "fsync-dir"]


_TRUNCATE_CHILD = """
import os, sys
import numpy as np
import hurray_gpu as hg
path = sys.argv[1]
f = hg.open_file(path)
assert f.read("w", copy=True).numpy()[5] == 5
print("open", flush=True)
sys.stdin.readline()  # the parent truncates the file in place meanwhile
for what in ("copy", "descriptor", "load"):
    try:
        if what == "copy":
            f.read("w", copy=True)
        elif what == "descriptor":
            f.descriptor("w")
        else:
            hg.load(path)
        print(what, "read")
    except hg.HurrayFormatError as err:
        print(what, "HurrayFormatError", "Fix:" in str(err))
"""


def test_file_truncated_under_an_open_reader_is_a_typed_error(tmp_path: Path) -> None:
    # Was: SIGBUS (the process killed) even with read(copy=True).
    path = tmp_path / "w.hrry"
    save(path, {"w": np.arange(1 << 18, dtype=np.float32)})
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", _TRUNCATE_CHILD, str(path)], env=env,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdin is not None
    assert child.stdout.readline().strip() == "open"
    os.truncate(path, 8192)  # an in-place rewrite by another writer, half way
    out, err = child.communicate("go\n", timeout=60)
    assert child.returncode == 0, (child.returncode, err)
    assert out.split("\n")[:2] == ["copy HurrayFormatError True",
                                   "descriptor HurrayFormatError True"]
    assert out.split("\n")[2].startswith("load HurrayFormatError")  # a short file, reopened


# -- CLI outputs: atomic, never overwritten without --force -------------------------------
def test_cli_output_is_atomic_and_needs_force(tmp_path: Path, capsys: pytest.CaptureFixture,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "w.hrry"
    save(src, {"w": np.arange(6, dtype=np.float32).reshape(2, 3)})
    out = tmp_path / "o.npy"
    out.write_bytes(b"precious")
    argv = ["materialize", str(src), "w", "--device", "cpu", "--out", str(out)]
    assert main(argv) == 1  # was: silently overwritten
    err = capsys.readouterr().err
    assert "exists" in err and "Fix: pass --force" in err and out.read_bytes() == b"precious"

    import hurray_gpu.cli.materialize as cli_mat

    def failing_save(handle: object, arr: object) -> None:
        handle.write(b"\x93NUMPY half")  # type: ignore[attr-defined]
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cli_mat.np, "save", failing_save)
    assert main([*argv, "--force"]) == 1  # a failed write leaves the old file whole
    assert "No space left" in capsys.readouterr().err and out.read_bytes() == b"precious"
    monkeypatch.undo()
    assert main([*argv, "--force"]) == 0
    assert np.load(out).tolist() == [[0, 1, 2], [3, 4, 5]]
    assert sorted(os.listdir(tmp_path)) == ["o.npy", "w.hrry"]  # no temporary left
