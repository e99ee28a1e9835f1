"""Concurrency stress: N threads x M operations on one device at once, each on its own stream.

Every thread loads ``.hrry`` files (``load``, ``open_file`` copies and ``open_file`` reads
straight onto the device), moves tensors to the device, launches kernels (materialize of a
col-major and a CSR tensor, dequantize, unpack), hands the results off and reads them back (DLPack on the host device, ``to("cpu")`` elsewhere). The
device starts with a cold compile cache (a fresh disk cache folder and emptied program LRUs),
so the first operations race to compile the same kernels. Every result is compared with
NumPy, no exception may escape, and the allocator's accounting returns to where it started.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from hurray_gpu.format.descriptor.layouts import ColMajor
from hurray_gpu.io import load, open_file, save
from hurray_gpu.ops.dequantize import dequantize, unpack
from hurray_gpu.ops.host import relayout, sparsify
from hurray_gpu.ops.layout_plan import clear_table_cache
from hurray_gpu.ops.materialize import materialize
from hurray_gpu.ops.quantize import quantized_tensor
from hurray_gpu.runtime.cache import DiskKernelCache
from hurray_gpu.sync import Stream
from hurray_gpu.tensor import Tensor

THREADS, OPS, FILES = 8, 8, 3
SCALE, ZERO = 0.5, 3
SECONDS = 60.0  # per device; a few seconds when the machine is not shared


def _expected(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    dense = rng.standard_normal((24, 16)).astype(np.float32)
    sparse = np.where(rng.random((12, 10)) < 0.3, rng.standard_normal((12, 10)), 0)
    return {"dense": dense, "sparse": sparse.astype(np.float32),
            "codes": rng.integers(-128, 128, (8, 32)).astype(np.int8),
            "nibbles": rng.integers(-8, 8, 96).astype(np.int8)}


def _write_files(tmp: Path) -> list[tuple[Path, dict[str, np.ndarray]]]:
    """FILES .hrry files, each with one tensor per kernel family, and their NumPy truths."""
    out = []
    for i in range(FILES):
        want = _expected(i)
        tensors = {
            "colmajor": relayout(Tensor.from_numpy(want["dense"]), ColMajor()),
            "csr": sparsify(Tensor.from_numpy(want["sparse"]), "csr"),
            "q8": quantized_tensor(want["codes"], "int8", "per_tensor", scale=SCALE,
                                   zero_point=ZERO),
            "i4": Tensor.from_numpy(want["nibbles"].astype(ml_dtypes.int4)),
        }
        path = tmp / f"stress{i}.hrry"
        save(path, tensors, {"seed": i})
        out.append((path, want))
    return out


def _read(path: Path, how: int, dev: Any) -> dict[str, Tensor]:
    """Three readers: load(), open_file() copies, open_file() straight onto the device."""
    if how % 3 == 1:
        return load(path)
    with open_file(path) as f:
        assert f.metadata["seed"] == int(path.stem[-1])
        if how % 3 == 2:
            return {name: f.read(name, device=dev) for name in f.top_level_names()}
        return {name: f.read(name, copy=True) for name in f.top_level_names()}


def _host(t: Tensor) -> np.ndarray:
    """Hand the result off and read it on the host (DLPack when it is host memory)."""
    ready = t.handoff("producer_synced")
    if ready.is_host or ready.device.kind == "cpu":
        return np.from_dlpack(ready).copy()
    return ready.to("cpu").numpy()


def _one_op(dev: Any, files: list[tuple[Path, dict[str, np.ndarray]]], n: int) -> None:
    path, want = files[n % FILES]
    tensors = _read(path, n // 4, dev)
    kind = n % 4
    if kind == 0:
        got = _host(materialize(tensors["colmajor"].to(dev)))
        np.testing.assert_array_equal(got, want["dense"])
    elif kind == 1:
        got = _host(materialize(tensors["csr"].to(dev)))
        np.testing.assert_array_equal(got, want["sparse"])
    elif kind == 2:
        got = _host(dequantize(tensors["q8"].to(dev), "float32"))
        truth = np.float32(SCALE) * (want["codes"].astype(np.int32) - ZERO).astype(np.float32)
        np.testing.assert_array_equal(got, truth)
    else:
        got = _host(unpack(tensors["i4"].to(dev)))
        np.testing.assert_array_equal(got, want["nibbles"])


def _stress(dev: Any, work: Callable[[int, int], None]) -> list[BaseException]:
    """Run ``work(thread, op)`` for THREADS x OPS, all threads released at once."""
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def thread(k: int) -> None:
        try:
            with Stream(dev) as stream:
                start.wait(timeout=60)
                for m in range(OPS):
                    work(k, m)
                stream.synchronize()
        except BaseException as exc:  # every failure, of any kind, is reported
            errors.append(exc)

    threads = [threading.Thread(target=thread, args=(k,), name=f"stress-{k}")
               for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=SECONDS)
    assert not any(t.is_alive() for t in threads), "a stress thread hung"
    return errors


def _cold(dev: Any, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh disk cache and empty in-memory program caches: every kernel compiles again."""
    if dev.compiler is not None:
        monkeypatch.setattr(dev.compiler, "cache", DiskKernelCache(tmp / "cache" / dev.kind))
    dev.finalize()


def test_threads_load_launch_and_hand_off_on_one_device(kernel_device: Any, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    files = _write_files(tmp_path)
    clear_table_cache()  # small layout tables are cached per device on purpose (bounded)
    gc.collect()
    kernel_device.synchronize()
    before = kernel_device.allocator.allocated_bytes
    _cold(kernel_device, tmp_path, monkeypatch)
    t0 = time.perf_counter()
    errors = _stress(kernel_device, lambda k, m: _one_op(kernel_device, files, k * OPS + m))
    elapsed = time.perf_counter() - t0
    assert not errors, f"{len(errors)} thread(s) failed; first: {errors[0]!r}"
    assert elapsed < SECONDS
    clear_table_cache()
    gc.collect()
    kernel_device.synchronize()
    assert kernel_device.allocator.allocated_bytes == before
    if kernel_device.compiler is not None:  # the cold cache was filled, once per kernel
        assert any((tmp_path / "cache" / kernel_device.kind).rglob("*.bin"))


def test_threads_race_to_compile_the_same_kernel(kernel_device: Any, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _cold(kernel_device, tmp_path, monkeypatch)
    compiled: list[str] = []
    compiler = kernel_device.compiler
    if compiler is not None:
        real = compiler.compile_cached

        def counting(source: str, options: Any) -> Any:
            compiled.append(source)
            return real(source, options)

        monkeypatch.setattr(compiler, "compile_cached", counting)
    want = _expected(7)["dense"]
    host = relayout(Tensor.from_numpy(want), ColMajor())
    errors = _stress(kernel_device, lambda k, m: np.testing.assert_array_equal(
        _host(materialize(host.to(kernel_device))), want))
    assert not errors, f"{len(errors)} thread(s) failed; first: {errors[0]!r}"
    # Each kernel compiled (or read from the cold disk cache) once, however many threads
    # asked for it at the same moment.
    assert len(compiled) == len(set(compiled))
    assert compiler is None or compiled


def test_threads_share_one_kv_cache(kernel_device: Any) -> None:
    # PagedKVCache documents thread-safe methods: each thread grows its own sequence.
    from hurray_gpu.kv_cache import PagedKVCache

    cache = PagedKVCache(kernel_device, 2, 2, 4, num_pages=THREADS * OPS, page_size=4,
                         dtype="float32")
    kept: dict[int, list[np.ndarray]] = {}

    def work(k: int, m: int) -> None:
        if m == 0:
            kept[k] = [np.zeros((0, 2, 4), np.float32), cache.add_sequence()]
        rows = np.random.default_rng(k * OPS + m).standard_normal((3, 2, 4)).astype(np.float32)
        seq = kept[k][1]
        for layer in (0, 1):
            cache.append(seq, layer, rows, rows + layer)
        kept[k][0] = np.concatenate([kept[k][0], rows])
        if m == OPS - 1:
            key, value, _ = cache.gather([seq], 1)
            np.testing.assert_array_equal(key.to("cpu").numpy(), kept[k][0])
            np.testing.assert_array_equal(value.to("cpu").numpy(), kept[k][0] + 1)
            cache.free(seq)

    errors = _stress(kernel_device, work)
    assert not errors, f"{len(errors)} thread(s) failed; first: {errors[0]!r}"
    cache.check_invariants()
    assert cache.seq_ids == [] and cache.num_free_pages == THREADS * OPS
    cache.close()


def test_threads_run_vyre_programs(kernel_device: Any) -> None:
    import vyre.execute as vx
    from vyre import builder as b
    from vyre.ir import Scalar

    gid = b.invocation_id(0)
    program = b.program([b.read("a", 0, Scalar.U32), b.output("out", 1, Scalar.U32, 64)],
                        [b.store("out", gid, b.add(b.mul(b.load("a", gid), 3), gid))],
                        workgroup_size=(64, 1, 1))
    with vx._LOWERED_LOCK:  # the threads race to lower it too
        vx._LOWERED.clear()

    def work(k: int, m: int) -> None:
        a = np.arange(64, dtype=np.uint32) * np.uint32(k * OPS + m + 1)
        got = vx.run(program, {"a": a}, grid=(1, 1, 1), device=kernel_device)["out"]
        np.testing.assert_array_equal(got, a * 3 + np.arange(64, dtype=np.uint32))

    errors = _stress(kernel_device, work)
    assert not errors, f"{len(errors)} thread(s) failed; first: {errors[0]!r}"
