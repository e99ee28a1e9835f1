"""Handing a tensor to another process on one machine: ``hg.share``/``hg.attach`` against
``multiprocessing.shared_memory`` with NumPy and against ``torch.multiprocessing`` sharing.

The same work for every path, per round: the producer puts a fresh ``size`` bytes into shared
memory (one copy), hands it to a consumer process that is already running, the consumer views
it without a copy, reads its last element, lets it go and answers; the round ends at that
answer. The three paths take turns in every round (warm, after one untimed round); median and
[min, max] over the rounds, and the peer's time over ours per round (``vs_*``: above 1 means
ours is faster). A small size measures the latency, a large one the bandwidth.

Last, Ray's object store (``measure_ray``): ``ray.put`` of a host Tensor vs a NumPy array of the
same size (``--ray-size``), each round ending when an actor in another process has ``ray.get``
it and read its last element (both are mapped from the store without a copy: the goal is the
same time within noise). Without Ray the row says so (``missing``), and under ``CI=true`` the
run fails.

Usage: python bench/ipc.py [--quick] [--sizes 4096 268435456] [--runs 5]
       [--ray-size 268435456] [--json bench/out/ipc.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from multiprocessing import shared_memory
from typing import Any

import numpy as np

from _timing import on_host, parse_args, ratio, rounds, spread


def _consumer(kind: str, conn: Any, queue: Any) -> None:
    """A consumer process: take handoffs of ``kind`` until told to stop, answering each."""
    import hurray_gpu as hg

    while True:
        msg = queue.get() if kind == "torch" else conn.recv()
        if msg is None:
            return
        if kind == "hurray":
            t = hg.attach(msg)
            last = int(t.buffers[0].array[-1])
            t.release()
            del t  # unmaps, as the other paths do before answering
        elif kind == "shm_numpy":
            shm = shared_memory.SharedMemory(msg)
            last = int(np.ndarray((shm.size,), np.uint8, buffer=shm.buf)[-1])
            shm.close()
        else:
            last = int(msg[-1])
            del msg
        conn.send(last)


class _Peer:
    """A consumer process of one kind, and the producer's end of its channels."""

    def __init__(self, ctx: Any, kind: str) -> None:
        self.kind = kind
        self.conn, child = ctx.Pipe()
        self.queue = ctx.Queue() if kind == "torch" else None
        self.proc = ctx.Process(target=_consumer, args=(kind, child, self.queue), daemon=True)
        self.proc.start()

    def close(self) -> None:
        (self.queue.put if self.queue is not None else self.conn.send)(None)
        self.proc.join(30)


def measure(sizes: list[int], runs: int) -> dict[str, Any]:
    """Seconds per handoff of each path and size, and the ratios (see the module docstring)."""
    import torch
    import torch.multiprocessing as tmp

    import hurray_gpu as hg

    ctx = tmp.get_context("spawn")
    peers = {kind: _Peer(ctx, kind) for kind in ("hurray", "shm_numpy", "torch")}
    directory = tempfile.mkdtemp(prefix="hg-bench-ipc-")
    counter = iter(range(1 << 30))
    rows = []
    try:
        for size in sizes:
            data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8)
            expected = int(data[-1])
            tensor = hg.from_numpy(data)  # the producer's tensor exists before the handoff

            def ours(tensor: Any = tensor, expected: int = expected) -> None:
                path = os.path.join(directory, f"s{next(counter)}")
                with hg.share(tensor, path):
                    peers["hurray"].conn.send(path)
                    assert peers["hurray"].conn.recv() == expected

            def shm_numpy(data: np.ndarray = data, size: int = size,
                          expected: int = expected) -> None:
                shm = shared_memory.SharedMemory(create=True, size=size)
                try:
                    np.ndarray((size,), np.uint8, buffer=shm.buf)[:] = data
                    peers["shm_numpy"].conn.send(shm.name)
                    assert peers["shm_numpy"].conn.recv() == expected
                finally:
                    shm.close()
                    shm.unlink()

            def torch_mp(data: np.ndarray = data, expected: int = expected) -> None:
                # share_memory_ moves the storage into shared memory: the one copy.
                shared = torch.from_numpy(data).share_memory_()
                assert peers["torch"].queue is not None
                peers["torch"].queue.put(shared)
                assert peers["torch"].conn.recv() == expected

            got = rounds({"hurray": on_host(ours), "shm_numpy": on_host(shm_numpy),
                          "torch": on_host(torch_mp)}, runs)
            row: dict[str, Any] = {"bytes": size}
            for name, seconds in got.items():
                row[f"{name}_s"] = spread(seconds)
                row[f"{name}_GBps"] = spread([size / s / 1e9 for s in seconds])
            row["vs_shm_numpy"] = ratio(got["shm_numpy"], got["hurray"])
            row["vs_torch"] = ratio(got["torch"], got["hurray"])
            rows.append(row)
    finally:
        for peer in peers.values():
            peer.close()
        os.rmdir(directory)
    return {"runs": runs, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print a table and optionally write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 256 << 20])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", default=None, help="write the results to this file")
    parser.add_argument("--ray-size", type=int, default=256 << 20,
                        help="bytes of the ray.put/ray.get row")
    args = parse_args(parser, {"sizes": [4096, 4 << 20], "runs": 3, "ray_size": 16 << 20}, argv)
    if args.runs < 3 or any(s < 1 for s in args.sizes) or args.ray_size < 1:
        parser.error("--runs must be at least 3 and --sizes and --ray-size positive")
    results = measure(args.sizes, args.runs)
    ray_row = measure_ray(args.ray_size, args.runs)
    results["rows"].append(ray_row)
    results["missing_peers"] = [ray_row["missing"]] if "missing" in ray_row else []
    for row in results["rows"][:-1]:
        print(f"{row['bytes']:>11} B: hurray {row['hurray_s'][0] * 1e3:8.3f} ms "
              f"({row['hurray_GBps'][0]:6.2f} GB/s)  shm+numpy {row['shm_numpy_s'][0] * 1e3:8.3f}"
              f" ms  torch {row['torch_s'][0] * 1e3:8.3f} ms  "
              f"vs shm+numpy x{row['vs_shm_numpy'][0]:.2f}  vs torch x{row['vs_torch'][0]:.2f}")
    if "missing" in ray_row:
        print(f"ray.put/ray.get: peer missing: {ray_row['missing']}", file=sys.stderr)
    else:
        print(f"{ray_row['bytes']:>11} B: ray.put/get Tensor {ray_row['ray_tensor_s'][0] * 1e3:8.3f}"
              f" ms ({ray_row['ray_tensor_GBps'][0]:6.2f} GB/s)  NumPy "
              f"{ray_row['ray_numpy_s'][0] * 1e3:8.3f} ms  vs NumPy x{ray_row['vs_ray_numpy'][0]:.2f}"
              f" [{ray_row['vs_ray_numpy'][1][0]:.2f}, {ray_row['vs_ray_numpy'][1][1]:.2f}]")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(results, handle, indent=2)
    if results["missing_peers"] and os.environ.get("CI", "").strip().lower() in (
            "1", "true", "yes"):
        print("error: CI=true but a peer is missing: " + "; ".join(results["missing_peers"])
              + ". Fix: pip install ray (ci/install.sh installs it).", file=sys.stderr)
        return 1
    return 0


def measure_ray(size: int, runs: int) -> dict[str, Any]:
    """``ray.put`` in this process and ``ray.get`` in an actor's, of a ``size``-byte host
    Tensor and of a NumPy array (see the module docstring), on a local Ray cluster.

    Returns:
        The row: seconds and GB/s of each, and NumPy's time over the Tensor's per round
        (``vs_ray_numpy``), or ``missing`` when Ray cannot be imported.
    """
    try:
        import ray
    except ImportError as exc:
        return {"bytes": size, "path": "ray", "missing": f"ray is not installed ({exc})"}
    import hurray_gpu as hg

    class Consumer:
        """Gets what it is handed from the object store and reads its last byte. Defined
        here so that Ray ships it by value (workers cannot import this script)."""

        def last(self, boxed: list[Any]) -> int:
            obj = ray.get(boxed[0])  # maps the store's memory, for both kinds
            return int((obj.buffers[0].array if isinstance(obj, hg.Tensor) else obj)[-1])

    # Room for one object of each kind in flight, and the store's own overhead.
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             object_store_memory=3 * size + (128 << 20))
    try:
        consumer = ray.remote(Consumer).remote()
        array = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8)
        tensor = hg.from_numpy(array.copy())  # its own memory, as the array has
        expected = int(array[-1])

        def handoff(obj: Any) -> None:
            ref = ray.put(obj)  # the one copy, into the store
            assert ray.get(consumer.last.remote([ref])) == expected
            del ref  # the store frees it before the next round

        got = rounds({"tensor": on_host(lambda: handoff(tensor)),
                      "numpy": on_host(lambda: handoff(array))}, runs)
    finally:
        ray.shutdown()
    row: dict[str, Any] = {"bytes": size, "path": "ray"}
    for name, seconds in got.items():
        row[f"ray_{name}_s"] = spread(seconds)
        row[f"ray_{name}_GBps"] = spread([size / s / 1e9 for s in seconds])
    row["vs_ray_numpy"] = ratio(got["numpy"], got["tensor"])
    return row


if __name__ == "__main__":
    sys.exit(main())
