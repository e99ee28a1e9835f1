"""Hurray tensors in Ray (issue 21): zero-copy through the object store, proven by where the
received buffer lies (inside the object store's shared mapping, like a NumPy array's) and by
the receiving process's private memory (it does not grow by the tensor's size); and
examples/ray_kv.py's prefill and decode actors moving KV pages through the object store and
through the network protocol, checked bit for bit. One local Ray cluster for the module."""

from __future__ import annotations

import hashlib
import importlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import hurray_gpu as hg
from tests._support import require_peer

ray = require_peer("ray")

ROOT = Path(__file__).resolve().parents[2]
SIZE = 64 << 20  # large enough that a copy would stand out from any allocator noise


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """A local two-CPU Ray cluster whose workers import this checkout and examples/."""
    with pytest.MonkeyPatch.context() as mp:
        # Workers inherit the environment of the processes ray.init starts: they must import
        # the hurray_gpu under test and the example module, not an installed copy.
        path = os.pathsep.join([str(ROOT), str(ROOT / "examples"), os.environ.get(
            "PYTHONPATH", "")])
        mp.setenv("PYTHONPATH", path)
        mp.setenv("RAY_AUTH_MODE", "disabled")
        # pytest imports this file as a top-level module workers cannot import: ship its
        # remote functions by value.
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
        ray.init(num_cpus=2, include_dashboard=False, object_store_memory=400 << 20,
                 log_to_driver=False)
        try:
            yield
        finally:
            ray.shutdown()


def _mapping(address: int) -> str:
    """The path of the mapping of this process that holds ``address`` ("" for anonymous)."""
    with open("/proc/self/maps", encoding="utf-8") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            low, high = (int(x, 16) for x in fields[0].split("-"))
            if low <= address < high:
                return fields[5].strip() if len(fields) > 5 else ""
    raise AssertionError(f"address {address:#x} is not mapped")


def _private_bytes() -> int:
    """This process's anonymous (private) resident memory: where any copy would land."""
    with open("/proc/self/status", encoding="utf-8") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no RssAnon in /proc/self/status")


def _where(obj: Any) -> tuple[int, int]:
    """(first byte's address, byte count) of a host Tensor's only buffer or a NumPy array."""
    arr = obj.buffers[0].array if isinstance(obj, hg.Tensor) else obj
    return int(arr.ctypes.data), int(arr.nbytes)


def _receive(boxed: list[Any]) -> dict[str, Any]:
    """In a worker: ray.get the object, and where it lies and what the get cost in private
    memory (measured before anything reads the data), then a digest of its bytes."""
    before = _private_bytes()
    obj = ray.get(boxed[0])
    grown = _private_bytes() - before
    address, nbytes = _where(obj)
    data = obj.buffers[0].array if isinstance(obj, hg.Tensor) else obj
    return {"mapping": _mapping(address), "end_mapping": _mapping(address + nbytes - 1),
            "aligned": address % 64 == 0, "grown": grown, "nbytes": nbytes,
            "digest": hashlib.sha256(data).hexdigest(), "type": type(obj).__name__}


_receive_remote = ray.remote(_receive)


@ray.remote
def _put_tensor(size: int, seed: int) -> list[Any]:
    """In a worker: put a host tensor of random bytes into the object store."""
    data = np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8)
    return [ray.put(hg.from_numpy(data))]


def _payload(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, SIZE, dtype=np.uint8)


def test_get_of_a_tensor_maps_object_store_memory_like_numpy(cluster: None) -> None:
    tensor_data, array = _payload(1), _payload(2)
    refs = {"tensor": ray.put(hg.from_numpy(tensor_data)), "numpy": ray.put(array)}
    # Warm the worker (hurray_gpu imported, Ray's client set up) so that the measured get
    # pays for nothing but the object itself.
    ray.get(_receive_remote.remote([ray.put(hg.from_numpy(np.zeros(64, np.uint8)))]))
    got = {name: ray.get(_receive_remote.remote([ref])) for name, ref in refs.items()}
    print({name: {k: v for k, v in g.items() if k != "digest"} for name, g in got.items()})
    tensor, numpy = got["tensor"], got["numpy"]
    assert tensor["type"] == "Tensor" and numpy["type"] == "ndarray"
    assert tensor["digest"] == hashlib.sha256(tensor_data).hexdigest()
    assert numpy["digest"] == hashlib.sha256(array).hexdigest()
    # Both lie wholly inside the same shared mapping: Ray's object store (plasma).
    assert "plasma" in numpy["mapping"], numpy
    assert tensor["mapping"] == tensor["end_mapping"] == numpy["mapping"], got
    assert tensor["aligned"] and tensor["nbytes"] == SIZE
    # A copy would add SIZE bytes of private memory; the get adds almost nothing.
    assert tensor["grown"] < SIZE // 8, got


def test_driver_gets_a_tensor_a_worker_put_without_a_copy(cluster: None) -> None:
    (ref,) = ray.get(_put_tensor.remote(SIZE, 3))
    before = _private_bytes()
    t = ray.get(ref)
    grown = _private_bytes() - before
    address, nbytes = _where(t)
    assert "plasma" in _mapping(address) and _mapping(address + nbytes - 1) == _mapping(address)
    assert grown < SIZE // 8, grown
    assert not t.buffers[0].array.flags.writeable  # the store's memory is immutable
    assert np.array_equal(t.numpy(), _payload(3))


@pytest.fixture(scope="module")
def ray_kv(cluster: None) -> ModuleType:
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        return importlib.import_module("ray_kv")
    finally:
        sys.path.remove(str(ROOT / "examples"))


def test_kv_pages_move_from_prefill_to_decode_actor(ray_kv: ModuleType) -> None:
    prompts = ray_kv.prompt_kv([7, 5, 12], seed=11)  # partial, partial and full last pages
    prefill, decode = ray_kv.Prefill.remote(), ray_kv.Decode.remote()
    try:
        assert ray.get(prefill.__ray_call__.remote(lambda actor: os.getpid())) != ray.get(
            decode.__ray_call__.remote(lambda actor: os.getpid())) != os.getpid()
        seqs = ray.get(prefill.prefill.remote(prompts))
        # (a) the object store: exported pages, imported into the decode actor's cache.
        assert ray.get(decode.import_pages.remote(prefill.export.remote())) == seqs
        for seq, want in zip(seqs, prompts, strict=True):
            got = ray.get(decode.gather.remote(seq))
            assert ray_kv.same_bits(got, want), seq
        # (b) the network protocol: PUTs of kv/<name>/<layer> append to the served cache.
        url = ray.get(decode.serve.remote())
        names = {f"req-{seq}": seq for seq in reversed(seqs)}
        ray.get(prefill.send.remote(url, names))
        for name, seq in names.items():
            got = ray.get(decode.gather.remote(name))
            assert ray_kv.same_bits(got, prompts[seqs.index(seq)]), name
        # The check can fail: another sequence's K/V differ.
        assert not ray_kv.same_bits(ray.get(decode.gather.remote("req-0")), prompts[1])
    finally:
        ray.get(decode.close.remote())
        ray.kill(prefill)
        ray.kill(decode)
