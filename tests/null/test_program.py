"""Program launch checks and program caching on the null device (no real device needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hurray_gpu.backends.null import NullDevice
from hurray_gpu.errors import BackendUnavailableError, UnsupportedOpError
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.program import compile_stats


@pytest.fixture()
def dev(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> NullDevice:
    monkeypatch.setenv("HURRAY_GPU_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HURRAY_GPU_NO_CACHE", raising=False)
    return NullDevice()


def test_launch_records_grid(dev: NullDevice) -> None:
    out = Buffer(dev, 400)
    dev.run("fill_u32", out, 7, 100)
    dev.run("transpose_u32", Buffer(dev, 24), Buffer(dev, 24), rows=2, cols=3)
    assert list(dev.launches) == [("fill_u32", (100, 1, 1)), ("transpose_u32", (3, 2, 1))]


def test_zero_grid_launches_nothing(dev: NullDevice) -> None:
    dev.run("fill_u32", Buffer(dev, 0), 7, 0)
    assert not dev.launches


def test_programs_cached_in_memory_then_on_disk(dev: NullDevice) -> None:
    before = compile_stats()["compiles"]
    first = dev.program("axpy_f32")
    assert dev.program("axpy_f32") is first
    assert compile_stats()["compiles"] == before + 1
    fresh = NullDevice()  # same disk cache, empty memory cache
    fresh.program("axpy_f32")
    assert compile_stats()["compiles"] == before + 1
    assert fresh.compiler.compile_count == 0


@pytest.mark.parametrize(("args", "kwargs", "match"), [
    ((), {}, "missing"),
    (("B", 1, 2, 3), {}, "takes 3"),
    (("B", 1), {"value": 2}, "duplicate"),
    (("B", 1, 1), {"bogus": 1}, "unexpected"),
    (("B", -1, 4), {}, "outside u32"),
    (("B", 2**32, 4), {}, "outside u32"),
    (("B", 1.5, 4), {}, "integer"),
    (("B", "1", 4), {}, "number"),
    (("B", 1, 101), {}, "needs 404"),
    ((123, 1, 4), {}, "must be a Buffer"),
])
def test_argument_checks(dev: NullDevice, args: tuple, kwargs: dict, match: str) -> None:
    out = Buffer(dev, 400)
    args = tuple(out if a == "B" else a for a in args)
    with pytest.raises(UnsupportedOpError, match=match):
        dev.run("fill_u32", *args, **kwargs)


def test_buffer_from_other_device_rejected(dev: NullDevice) -> None:
    other = NullDevice()
    with pytest.raises(UnsupportedOpError, match="same device"):
        dev.run("fill_u32", Buffer(other, 16), 1, 4)


@pytest.mark.parametrize("grid", [(), (1, 2, 3, 4), (-1,), (2**32,), (2**31, 2**31, 2**31)])
def test_bad_global_size(dev: NullDevice, grid: tuple) -> None:
    with pytest.raises(UnsupportedOpError, match="global size"):
        dev.run("fill_u32", Buffer(dev, 16), 1, 4, global_size=grid)


def test_unknown_kernel(dev: NullDevice) -> None:
    with pytest.raises(UnsupportedOpError, match="no kernel named"):
        dev.program("nope")


def test_device_without_compiler(dev: NullDevice) -> None:
    dev.compiler = None
    with pytest.raises(BackendUnavailableError):
        dev.program("fill_u32")


@pytest.mark.parametrize("count", [0, 2])
def test_bound_launch_refuses_a_wrong_buffer_count(dev: NullDevice, count: int) -> None:
    """A prepared Launch given more or fewer buffers than the kernel has raises the typed
    error (it named no parameter before: zip's ValueError), and launches nothing."""
    launch = dev.program("fill_u32").bind({"value": 7, "n": 4})
    with pytest.raises(UnsupportedOpError, match=f"{count} buffers for 1 buffer parameters"
                                                  r".*Fix: pass one Buffer per \['dst'\]"):
        launch([Buffer(dev, 16) for _ in range(count)])
    assert not dev.launches
    launch([Buffer(dev, 16)])
    assert list(dev.launches) == [("fill_u32", (4, 1, 1))]
