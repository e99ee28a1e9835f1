"""The network interchange protocol on loopback TCP, next to a raw socket and Arrow Flight.

Every server (ours, the raw socket, Flight) runs in one child process (multiprocessing, spawn),
so the client and the server do not share a GIL; the clients run in this process (the
8-client throughput case: 8 worker processes). One run, all peers side by side:

* Bulk get of ``--sizes`` bytes (default 1 MiB, 64 MiB, 1 GiB): ``hg.connect(url).get(key)``
  from a server serving an in-memory registry of Tensors and from a memory-mapped ``.hrry``
  file, against (a) a raw socket: a one-message request, the server thread ``sendall``s the
  array, the client ``recv_into``s a buffer (no framing), and (b) Arrow Flight ``do_get`` of
  the same bytes as one uint8 column in record batches of ``--flight-batch-mib``, read with
  ``read_all()``. Ours and raw are paired doing the same work: ``get(key, out=t)`` into the
  Tensor an earlier get returned against raw into a buffer allocated once, before timing;
  and ``get(key)`` returning a fresh Tensor against raw into a new ``np.empty`` array per
  call (each pays for its fresh memory's page faults). Our fresh result takes its memory
  from the cpu device's pool (a dropped result's memory serves the next: no page faults),
  as Flight's allocator reuses the memory of a dropped Table. Flight returns a fresh Table of
  the batches it received (never concatenated in the timed part), against our fresh get.
  ``of raw`` is our speed over the raw socket's (goal >= 0.9), ``x Flight`` over Flight's
  (goal >= 2). Our ``.hrry`` server sends the file's bytes from its map (``sendmsg``); a
  second server of the same file with ``sendfile=True`` sends them with ``sendfile``, and
  ``of raw sendfile`` pairs its ``get(key, out=t)`` with the raw server doing that too (the
  same bytes of the same file, into the reused buffer): the protocol's own cost on that
  path.
* A get onto a device (``get(key, device=)``, of the largest ``--sizes`` up to 64 MiB; the
  device: ``--device``, by default the best one, else lavapipe or pocl) against a get to host
  memory then ``.to(device)``, and against the raw socket into a reused host buffer.
* Small-tensor latency: a 4 KiB get (request sent to data in hand) against a raw request /
  response round trip of 4 KiB on the same kind of connection (goal: ours <= 2x the raw
  time), paired the same way (``out=`` against a reused buffer, a fresh result against a new
  array), and requests per second with ``--clients`` (8) concurrent clients, each a separate
  process (not a thread: no shared GIL) with its own connection, all started together
  (against the raw server the same way).
* Transcoding on the fly (``allow_transcode``): a tiled 32x32 float32 tensor served as
  row-major float32, and int4 per-block (one f32 scale per 64) served as bfloat16, each as a
  fraction of the speed of a plain get of a stored tensor of the result's bytes.
* Disaggregated KV: a prefill side (this process) appends ``--kv-tokens`` tokens of one
  sequence to every layer of a PagedKVCache and PUTs its pages into a decode-side server's
  cache (``put_kv``); tokens/s and GB/s of the PUT against a raw socket sending the same
  bytes into a buffer the receiver allocated once. Then GETs of every layer back from the
  decode cache (each a fresh result) against the raw socket sending a layer's bytes into a
  new array as many times.

The single-client cases run the clients on one CPU and the server process on another
(``Placement``; ``--no-pin`` leaves them to the scheduler). What arrives is compared with
what was sent once per case, outside the timing (for the transcodes: with the library's own
materialize / dequantize of the stored tensor); a mismatch fails the run. Timing (bench/_timing.py): warm (connections open, one untimed round), the
calls of a case take turns in every round, min/median/max over ``--runs`` rounds (a bulk
get below 256 MiB: samples of ~32 MiB and up to 8x as many rounds); every ratio is taken round
by round. A missing peer (pyarrow) is reported in the JSON and fails
the run under ``CI=true``.
Usage: python bench/transport.py [--quick] [--sizes-mib 1,64,1024] [--runs 5]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import socket
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np

import hurray_gpu as hg
from hurray_gpu.parts import assemble

from _timing import Stats, Timed, parse_args, ratio, rounds, spread

MIB = 1 << 20
SMALL = 4096
TILE = 32
BLOCK = 64  # int4 elements per f32 scale
_RAW_REQ = struct.Struct("<cQ")  # op (b"G" get array i, b"F" from its file, b"P" put n), i or n


def payload(nbytes: int, seed: int) -> np.ndarray:
    """``nbytes`` reproducible random bytes (the same in every process)."""
    return np.frombuffer(np.random.default_rng(seed).bytes(nbytes), np.uint8)


def in_ci() -> bool:
    """True when ``CI`` is 1, true or yes: a missing peer then fails the run."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


# -- the raw socket: the limit ------------------------------------------------------------
def _recv_exact(sock: socket.socket, view: memoryview) -> None:
    got = 0
    while got < len(view):
        n = sock.recv_into(view[got:])
        if not n:
            raise ConnectionError("raw peer closed the connection")
        got += n


class RawServer:
    """Serves arrays by index (``G``), or their bytes in a file by ``sendfile`` (``F``: the
    kernel sends the file's cached pages, no copy through user memory), and receives ``n``
    bytes into a buffer reused by the connection (``P``, answered with one byte; the buffer
    grows in the untimed warm-up round): TCP, one thread per connection, no framing beyond
    the request."""

    def __init__(self, arrays: list[np.ndarray],
                 files: dict[int, tuple[int, int, int]] | None = None) -> None:
        self.arrays = arrays
        self.files = files or {}  # array index: (fd, offset, size) of its bytes in a file
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        req = memoryview(bytearray(_RAW_REQ.size))
        sink = memoryview(bytearray(1))
        with conn:
            try:
                while True:
                    _recv_exact(conn, req)
                    op, arg = _RAW_REQ.unpack(req)
                    if op == b"G":
                        conn.sendall(memoryview(self.arrays[arg]))
                    elif op == b"F":
                        fd, offset, left = self.files[arg]
                        while left:
                            sent = os.sendfile(conn.fileno(), fd, offset, left)
                            offset, left = offset + sent, left - sent
                    else:
                        if arg > len(sink):
                            sink = memoryview(bytearray(arg))
                        _recv_exact(conn, sink[:arg])
                        conn.sendall(b"k")
            except (ConnectionError, OSError):
                return


class RawClient:
    """One connection to a :class:`RawServer`."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def get(self, index: int, out: memoryview, op: bytes = b"G") -> None:
        """Array ``index`` into ``out`` (exactly its size); ``op=b"F"``: from its file."""
        self.sock.sendall(_RAW_REQ.pack(op, index))
        _recv_exact(self.sock, out)

    def get_new(self, index: int, nbytes: int) -> np.ndarray:
        """Array ``index`` (``nbytes``) into a new array, as an API returning one would."""
        out = np.empty(nbytes, np.uint8)
        self.get(index, out.data)
        return out

    def put(self, data: memoryview) -> None:
        """Send ``data`` and wait for the receiver's acknowledgement."""
        self.sock.sendall(_RAW_REQ.pack(b"P", len(data)))
        self.sock.sendall(data)
        _recv_exact(self.sock, memoryview(bytearray(1)))

    def close(self) -> None:
        self.sock.close()


# -- Arrow Flight -------------------------------------------------------------------------
def flight_server(arrays: dict[str, np.ndarray], batch: int) -> Any:
    """A Flight server whose ``do_get(key)`` streams ``arrays[key]`` as one uint8 column in
    record batches of ``batch`` rows (zero-copy views of the array); raises ImportError
    without pyarrow."""
    import pyarrow as pa
    import pyarrow.flight as fl

    class Server(fl.FlightServerBase):  # type: ignore[misc]
        def do_get(self, context: Any, ticket: Any) -> Any:
            data = arrays[ticket.ticket.decode()]
            col = pa.Array.from_buffers(pa.uint8(), len(data), [None, pa.py_buffer(data)])
            batches = [pa.record_batch([col.slice(i, batch)], names=["bytes"])
                       for i in range(0, len(data), batch)]
            return fl.RecordBatchStream(pa.RecordBatchReader.from_batches(batches[0].schema,
                                                                          batches))

    return Server("grpc://127.0.0.1:0")


def flight_bytes(table: Any) -> np.ndarray:
    """The uint8 column of a Flight table as one array (for the check; copies)."""
    return np.concatenate([np.frombuffer(c.buffers()[1], np.uint8, len(c), c.offset)
                           for c in table.column(0).chunks])


# -- the tensors every server holds (built the same way on both sides) -------------------
def tiled_case(side: int) -> tuple[Any, np.ndarray]:
    """(a side x side float32 tensor stored tiled 32x32, its row-major values)."""
    from hurray_gpu.format.descriptor.layouts import Tiled

    dense = np.random.default_rng(side).standard_normal((side, side), np.float32)
    return hg.relayout(hg.from_numpy(dense), Tiled((TILE, TILE))), dense


def int4_case(n: int) -> Any:
    """A [n / 64, 64] int4 tensor with one f32 scale per 64 elements (random codes)."""
    from hurray_gpu.format.descriptor import BufferHandle, RowMajor, TensorDescriptor
    from hurray_gpu.format.descriptor.quant import PerBlockAffine
    from hurray_gpu.format.dtypes import by_name

    rng = np.random.default_rng(n)
    bufs = [rng.integers(0, 256, n // 2, dtype=np.uint8),
            (rng.random(n // BLOCK, dtype=np.float32) + 0.5).view(np.uint8)]
    desc = TensorDescriptor(by_name("int4"), (n // BLOCK, BLOCK), RowMajor(),
                            tuple(BufferHandle(b.nbytes, 64) for b in bufs),
                            quantization=PerBlockAffine(1, BLOCK, 1))
    return assemble(desc, bufs)


def bulk_key(nbytes: int) -> str:
    return f"bulk{nbytes}"


# -- the server process -------------------------------------------------------------------
def _host(conn: Connection, plan: dict[str, Any]) -> None:
    """The child process: every server over the same data; sends their addresses, then
    serves until told to stop ("free kv": free the KV server's sequences, answer "ok")."""
    arrays = {bulk_key(n): payload(n, n) for n in plan["sizes"] + [SMALL]}
    order = list(arrays)
    registry: dict[str, Any] = {k: hg.from_numpy(a) for k, a in arrays.items()}
    tiled, dense = tiled_case(plan["side"])
    int4 = int4_case(plan["int4"])
    registry |= {"tiled": tiled, "tiled.plain": hg.from_numpy(dense), "int4": int4,
                 "int4.plain": hg.dequantize(int4, "bfloat16")}
    path = Path(plan["dir"]) / "bulk.hrry"
    hg.save(path, {"file." + k: a for k, a in arrays.items() if k != bulk_key(SMALL)})
    kv = hg.PagedKVCache("cpu", *plan["kv_geometry"])
    servers = [hg.serve([registry, str(path)], port=0, background=True),
               hg.serve(kv, port=0, background=True),
               hg.serve(str(path), port=0, background=True, sendfile=True)]
    with hg.open_file(path) as saved:  # where each array's bytes lie in the file
        views = {i: saved.read("file." + k).buffers[0] for i, k in enumerate(order)
                 if "file." + k in saved}
        spots = {i: saved.file_offset(b.device.allocator.host_array(b.allocation))
                 for i, b in views.items()}
        del views
    fd = os.open(path, os.O_RDONLY)
    # One KV layer's bytes, for the raw socket's side of the KV GET (see kv).
    raw = RawServer([arrays[k] for k in order] + [payload(plan["kv_layer_bytes"], 1)],
                    {i: (fd, at, arrays[order[i]].nbytes) for i, at in spots.items()
                     if at is not None})
    out: dict[str, Any] = {"ours": servers[0].url, "kv": servers[1].url,
                           "sendfile": servers[2].url, "raw": raw.port,
                           "order": order, "kv_raw": len(order)}
    flight = None
    try:
        flight = flight_server(arrays, plan["flight_batch"])
        out["flight"] = flight.port
    except ImportError as exc:
        out["flight_missing"] = f"pyarrow is not installed ({exc})"
    conn.send(out)
    while conn.recv() == "free kv":
        for seq in kv.seq_ids:
            kv.free(seq)
        conn.send("ok")
    for server in servers:
        server.close()
    if flight is not None:
        flight.shutdown()
    raw.sock.close()
    os.close(fd)
    kv.close()


class Host:
    """The server process, started and stopped as a context manager."""

    def __init__(self, plan: dict[str, Any]) -> None:
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_host, args=(child, plan), daemon=True)

    def __enter__(self) -> dict[str, Any]:
        self.proc.start()
        if not self.conn.poll(600):
            raise SystemExit("the server process did not start within 600 s")
        try:
            return dict(self.conn.recv())
        except EOFError:
            raise SystemExit("the server process exited before serving (its error is "
                             "above)") from None

    def call(self, command: str) -> None:
        """Send ``command`` to the server process and wait for its answer."""
        self.conn.send(command)
        self.conn.recv()

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):  # it may have exited already
            self.conn.send("stop")
        self.proc.join(60)
        if self.proc.is_alive():
            self.proc.kill()


class Placement:
    """Where the clients and the server run. Pinned: this thread (the clients, and the
    threads and processes it starts from then on) on one CPU, every thread of the server
    process on another, when there are two. The scheduler otherwise puts a request /
    response pair on one CPU or on two as it happens to, and on a VM a wake-up across CPUs
    costs tens of microseconds, so unpinned peers would be compared under different
    placements (measured here: the raw 4 KiB round trip took 8 us with the pair on one CPU
    and 86 us across two, as the scheduler chose). Server threads started later (one per
    connection) are started by pinned ones and inherit it. Cases that need more than one
    CPU on one side (many client processes; the server's transcoding kernels) run
    unpinned."""

    def __init__(self, server_pid: int, enabled: bool) -> None:
        self.cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
            else []
        self.tasks = Path(f"/proc/{server_pid}/task")
        self.enabled = enabled and len(self.cpus) >= 2 and self.tasks.is_dir()
        self.label = (f"single-client cases: clients on CPU {self.cpus[0]}, every server "
                      f"thread on CPU {self.cpus[1]}" if self.enabled else
                      "unpinned" + ("" if enabled else " (--no-pin)"))

    def pin(self, on: bool) -> None:
        """Pin (``on``) or let both sides run on every CPU again."""
        if not self.enabled:
            return
        everywhere = set(self.cpus)
        os.sched_setaffinity(0, {self.cpus[0]} if on else everywhere)
        for tid in self.tasks.iterdir():
            with contextlib.suppress(ProcessLookupError):  # a thread that ended meanwhile
                os.sched_setaffinity(int(tid.name), {self.cpus[1]} if on else everywhere)


# -- timing helpers -----------------------------------------------------------------------
def per_call(fn: Callable[[], Any], calls: int) -> Timed:
    """Seconds per call of ``fn``, from one loop of ``calls`` calls."""

    def timed() -> float:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - start) / calls

    return timed


def row(case: str, metric: str, ours: Stats, amount: float, peer: str,
        theirs: Stats | None, ratio_label: str, goal: str, *, inverse: bool = False,
        missing: str | None = None) -> dict[str, Any]:
    """A result row: ``amount`` per second (or seconds, for ``amount=0``) on both sides, and
    the per-round ratio (ours over the peer's rate; with ``inverse``, our time over theirs)."""
    def value(s: Stats) -> tuple[float, list[float]]:
        return spread([amount / t for t in s.samples] if amount else list(s.samples))

    r: dict[str, Any] = {"case": case, "metric": metric, "peer": peer, "ratio_label":
                         ratio_label, "goal": goal}
    r["ours"], r["ours_range"] = value(ours)
    if theirs is None:
        r |= {"peer_value": None, "peer_value_range": None, "ratio": None,
              "ratio_range": None, "missing": missing}
        return r
    r["peer_value"], r["peer_value_range"] = value(theirs)
    num, den = (list(ours.samples), list(theirs.samples)) if inverse else \
        (list(theirs.samples), list(ours.samples))
    r["ratio"], r["ratio_range"] = ratio(num, den)
    return r


def check(checks: dict[str, bool], name: str, ok: bool) -> None:
    """Record a correctness check; a failed one stops the run."""
    checks[name] = bool(ok)
    if not ok:
        raise SystemExit(f"check failed: {name}: what arrived differs from what was sent")


# -- the cases ----------------------------------------------------------------------------
def calls_for(nbytes: int, most: int, sample: int = 64 * MIB) -> int:
    """Calls per timed sample: enough to move ``sample`` bytes, at most ``most`` (a sample of
    small calls must outlast the clock's noise, and no sample may take minutes)."""
    return max(1, min(most, sample // max(1, nbytes)))


def bulk_turns(nbytes: int, runs: int, most: int) -> tuple[int, int]:
    """Calls per sample and rounds for a bulk get of ``nbytes``: samples of ~32 MiB, and as
    many more rounds as it takes to move 256 MiB per call (3x to 8x ``runs``). A sample of
    a few milliseconds is as long as this VM's scheduling hiccups (1 MiB samples of 8 MiB,
    2 ms: a quartile spread of 0.79-1.19 in the per-round ratio of two equal calls; of
    32 MiB: 0.90-1.09), and many rounds spread a burst of load over a few samples of each.
    At least 3x: a fresh 1 GiB result's first touch takes 0.1 to over 1 s here (as the
    kernel finds huge pages or compacts memory for them), so single 1 GiB samples of a
    fresh get scatter over 10x; the median needs rounds."""
    calls = calls_for(nbytes, most, 32 * MIB)
    return calls, runs * max(3, min(8, (256 * MIB) // (calls * nbytes)))


def bulk(addr: dict[str, Any], client: Any, sendfile: Any, raw: RawClient, flight: Any,
         n: int, runs: int, most: int, checks: dict[str, bool]) -> list[dict[str, Any]]:
    """The bulk-get rows of ``n`` bytes: ours (registry, .hrry; ``sendfile``: a client of the
    server that sends the file's bytes with ``sendfile``) vs raw and Flight."""
    key, index = bulk_key(n), addr["order"].index(bulk_key(n))
    want = payload(n, n)
    out = memoryview(bytearray(n))
    raw.get(index, out)
    check(checks, f"raw get {n} B", np.array_equal(np.frombuffer(out, np.uint8), want))
    check(checks, f"raw get {n} B new", np.array_equal(raw.get_new(index, n), want))
    raw.get(index, out, b"F")
    check(checks, f"raw sendfile {n} B", np.array_equal(np.frombuffer(out, np.uint8), want))
    into = {}  # a result of each source, received into again (get(out=))
    for k, c, got, name in ((key, client, key, f"get {key}"),
                            ("file." + key, client, "file." + key, f"get file.{key}"),
                            ("sendfile", sendfile, "file." + key, f"get file.{key} with sendfile")):
        into[k] = c.get(got)
        check(checks, name, np.array_equal(into[k].numpy().reshape(-1), want))
        into[k].numpy()[:] = 0
        check(checks, name + " out=", c.get(got, out=into[k]) is into[k]
              and np.array_equal(into[k].numpy().reshape(-1), want))
    calls, turns = bulk_turns(n, runs, most)
    timed = {"registry": per_call(lambda: client.get(key), calls),
             "hrry": per_call(lambda: client.get("file." + key), calls),
             "raw new": per_call(lambda: raw.get_new(index, n), calls),
             "registry out": per_call(lambda: client.get(key, out=into[key]), calls),
             "hrry out": per_call(lambda: client.get("file." + key, out=into["file." + key]),
                                  calls),
             "sendfile out": per_call(lambda: sendfile.get("file." + key,
                                                           out=into["sendfile"]), calls),
             "raw": per_call(lambda: raw.get(index, out), calls),
             "raw sendfile": per_call(lambda: raw.get(index, out, b"F"), calls)}
    if flight is not None:
        import pyarrow.flight as fl

        ticket = fl.Ticket(key.encode())
        check(checks, f"flight do_get {n} B",
              np.array_equal(flight_bytes(flight.do_get(ticket).read_all()), want))
        timed["flight"] = per_call(lambda: flight.do_get(ticket).read_all(), calls)
    del want
    took = {name: Stats.of(s) for name, s in rounds(timed, turns).items()}
    rows = []
    for source, label in (("registry", "in-memory registry"), ("hrry", "mmapped .hrry")):
        case = f"get {n / MIB:g} MiB from the {label}"
        rows.append(row(case + " into out=", "GB/s", took[source + " out"], n / 1e9,
                        "raw socket recv_into a reused buffer", took["raw"], "of raw",
                        ">= 0.9"))
        if source == "hrry":  # the same path as the raw socket's sendfile: the cost of ours
            rows.append(row(f"get {n / MIB:g} MiB from the mmapped .hrry, served with "
                            "sendfile=True, into out=", "GB/s", took["sendfile out"],
                            n / 1e9, "raw socket sendfile of the file's bytes, recv_into a "
                            "reused buffer", took["raw sendfile"], "of raw sendfile", "-"))
        rows.append(row(case, "GB/s", took[source], n / 1e9, "raw socket recv_into a new "
                        "array", took["raw new"], "of raw", ">= 0.9"))
        rows.append(row(case, "GB/s", took[source], n / 1e9, "Arrow Flight do_get",
                        took.get("flight"), "x Flight", ">= 2",
                        missing=addr.get("flight_missing")))
    return rows


def device_get(addr: dict[str, Any], client: Any, raw: RawClient, n: int, device: Any,
               runs: int, most: int, checks: dict[str, bool]) -> list[dict[str, Any]]:
    """A get of ``n`` bytes onto ``device`` (received into the device buffers: in place where
    the host maps them, else through the client's pinned staging ring) against a get to host
    memory then ``Tensor.to(device)``, each a fresh result; and against the raw socket into
    a reused host buffer (what the network alone allows)."""
    key, index = bulk_key(n), addr["order"].index(bulk_key(n))
    got = client.get(key, device=device)
    check(checks, f"get {key} onto {device.spec}", got.device is device and
          np.array_equal(got.to("cpu").numpy().reshape(-1), payload(n, n)))
    del got
    out = memoryview(bytearray(n))
    calls, turns = bulk_turns(n, runs, most)
    took = {k: Stats.of(s) for k, s in rounds({
        "ours": per_call(lambda: client.get(key, device=device), calls),
        "to": per_call(lambda: client.get(key).to(device), calls),
        "raw": per_call(lambda: raw.get(index, out), calls)}, turns).items()}
    case = f"get {n / MIB:g} MiB onto {device.spec} ({device.name})"
    return [row(case, "GB/s", took["ours"], n / 1e9, "get to host memory, then .to(device)",
                took["to"], "x get+to", "-"),
            row(case, "GB/s", took["ours"], n / 1e9, "raw socket recv_into a reused host "
                "buffer", took["raw"], "of raw", "-")]


def bench_device(spec: str) -> Any:
    """The device of the device-get case: ``spec``, or for ``auto`` the best device, or where
    that is the cpu the first device of another backend (an emulated one: lavapipe, pocl)."""
    if spec != "auto":
        return hg.device(spec)
    best = hg.default_device()
    if best.kind != "cpu":
        return best
    others = [d for d in hg.devices() if d.kind not in ("cpu", "reference")]
    if not others:
        raise SystemExit("no device but the cpu for the device-get case. Fix: install "
                         "mesa-vulkan-drivers or pocl-opencl-icd (ci/install.sh does).")
    return others[0]


def small(addr: dict[str, Any], client: Any, raw: RawClient, runs: int, calls: int,
          clients: int, checks: dict[str, bool], placement: Placement
          ) -> list[dict[str, Any]]:
    """4 KiB latency (ours vs a raw round trip) and 8-client requests per second."""
    key, index = bulk_key(SMALL), addr["order"].index(bulk_key(SMALL))
    want, out = payload(SMALL, SMALL), memoryview(bytearray(SMALL))
    into = client.get(key)
    check(checks, "get 4 KiB", np.array_equal(into.numpy().reshape(-1), want))
    took = {name: Stats.of(s) for name, s in rounds(
        {"ours": per_call(lambda: client.get(key), calls),
         "raw new": per_call(lambda: raw.get_new(index, SMALL), calls),
         "ours out": per_call(lambda: client.get(key, out=into), calls),
         "raw": per_call(lambda: raw.get(index, out), calls)}, runs).items()}

    def us(name: str) -> Stats:
        return Stats.of([t * 1e6 for t in took[name].samples])

    case = "4 KiB get latency (request to data in hand)"
    rows = [row(case + ", into out=", "us", us("ours out"), 0, "raw socket round trip of "
                "4 KiB into a reused buffer", us("raw"), "x raw time", "<= 2", inverse=True),
            row(case, "us", us("ours"), 0, "raw socket round trip of 4 KiB into a new array",
                us("raw new"), "x raw time", "<= 2", inverse=True)]
    placement.pin(False)  # clients + 1 processes: the scheduler spreads them
    rows.append(concurrent(addr, runs, max(1, calls // 4), clients, checks))
    placement.pin(True)
    return rows


def _worker(conn: Connection, addr: dict[str, Any], barrier: Any) -> None:
    """One of the concurrent clients: on ("ours"|"raw", calls), waits for the others, does
    ``calls`` 4 KiB gets and answers (start, end) on the shared monotonic clock."""
    key, index = bulk_key(SMALL), addr["order"].index(bulk_key(SMALL))
    want = payload(SMALL, SMALL)
    client, raw = hg.connect(addr["ours"]), RawClient(addr["raw"])
    out = memoryview(bytearray(SMALL))
    raw.get(index, out)
    conn.send(bool(np.array_equal(client.get(key).numpy().reshape(-1), want))
              and bool(np.array_equal(np.frombuffer(out, np.uint8), want)))
    while (msg := conn.recv()) is not None:
        which, calls = msg
        barrier.wait()
        start = time.perf_counter()
        for _ in range(calls):
            client.get(key) if which == "ours" else raw.get(index, out)
        conn.send((start, time.perf_counter()))
    client.close()
    raw.close()


def concurrent(addr: dict[str, Any], runs: int, calls: int, clients: int,
               checks: dict[str, bool]) -> dict[str, Any]:
    """Requests per second of ``clients`` client processes at once (``calls`` gets each),
    ours and raw in turn."""
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(clients)
    pipes = [ctx.Pipe() for _ in range(clients)]
    procs = [ctx.Process(target=_worker, args=(child, addr, barrier), daemon=True)
             for _, child in pipes]
    for p in procs:
        p.start()
    try:
        check(checks, "concurrent clients get 4 KiB", all(mine.recv() for mine, _ in pipes))

        def burst(which: str) -> Timed:
            def timed() -> float:
                for mine, _ in pipes:
                    mine.send((which, calls))
                spans = [mine.recv() for mine, _ in pipes]
                return max(e for _, e in spans) - min(s for s, _ in spans)
            return timed

        took = {k: Stats.of(s) for k, s in rounds({"ours": burst("ours"),
                                                   "raw": burst("raw")}, runs).items()}
    finally:
        for mine, _ in pipes:
            mine.send(None)
        for p in procs:
            p.join(60)
    return row(f"4 KiB gets, {clients} client processes at once", "requests/s", took["ours"],
               clients * calls, "raw socket, same clients", took["raw"], "of raw", "-")


def transcode(client: Any, side: int, n4: int, runs: int, most: int,
              checks: dict[str, bool]) -> list[dict[str, Any]]:
    """Tiled -> row-major and int4 -> bfloat16 on the fly, vs a plain get of the result."""
    tiled, dense = tiled_case(side)
    want4 = hg.dequantize(int4_case(n4), "bfloat16").numpy()
    cases = {"tiled": ("tiled 32x32 f32 -> row-major f32", dense.nbytes,
                       lambda: client.get("tiled", layouts=["row_major"], allow_transcode=True)),
             "int4": ("int4 per-block -> bfloat16", want4.nbytes,
                      lambda: client.get("int4", dtype="bfloat16", allow_transcode=True))}
    check(checks, "transcode tiled -> row-major",
          np.array_equal(cases["tiled"][2]().numpy(), dense))
    check(checks, "transcode int4 -> bfloat16", np.array_equal(
        cases["int4"][2]().numpy().view(np.uint16), want4.view(np.uint16)))
    del tiled
    rows = []
    for name, (label, nbytes, fn) in cases.items():
        calls = calls_for(nbytes, most)
        plain = name + ".plain"
        took = {k: Stats.of(s) for k, s in rounds({
            "ours": per_call(fn, calls),
            "plain": per_call(lambda p=plain: client.get(p), calls)}, runs).items()}
        rows.append(row(f"transcode {label} ({nbytes / MIB:g} MiB out)", "GB/s", took["ours"],
                        nbytes / 1e9, "plain get of the result's bytes", took["plain"],
                        "of plain get", "-"))
    return rows


def kv(addr: dict[str, Any], host: Host, raw: RawClient, geometry: tuple[int, ...],
       tokens: int, runs: int, checks: dict[str, bool]) -> list[dict[str, Any]]:
    """The prefill side fills one sequence of ``tokens`` tokens in every layer of its cache,
    then, per layer, PUTs it as ``kv/<name>/<layer>`` with ``put_kv`` (sent from the pages,
    received into the decode cache's pages: the tokens are appended to its sequence
    ``<name>``); against a raw socket sending as many bytes in one message. Before each
    timed PUT the decode server frees its sequences (untimed), so its pool never runs out.
    Then the other direction: GETs of every layer of the last sequence PUT (sent from the
    decode cache's pages, each a fresh result) against the raw socket sending a layer's
    bytes into a new array as many times."""
    layers, heads, head_dim, _, page = geometry
    cache = hg.PagedKVCache("cpu", layers, heads, head_dim, -(-tokens // page), page,
                            "float16")
    seq = cache.add_sequence()
    rng = np.random.default_rng(tokens)
    for layer in range(layers):
        rows = rng.standard_normal((2, tokens, heads, head_dim)).astype(np.float16)
        cache.append_prefill(seq, layer, rows[0], rows[1])
    client = hg.connect(addr["kv"])
    moved, rounds_done = layers * 2 * tokens * cache.row_bytes, [0]
    blob = memoryview(bytearray(moved))

    def put() -> None:
        rounds_done[0] += 1
        for layer in range(layers):
            client.put_kv(f"r{rounds_done[0]}", cache, seq, layer)

    def timed_put() -> float:
        host.call("free kv")
        start = time.perf_counter()
        put()
        return time.perf_counter() - start

    put()
    for layer in (0, layers - 1):
        k, v, _ = cache.gather([seq], layer)
        want = np.stack([k.numpy(), v.numpy()])
        check(checks, f"KV layer {layer} put into the decode cache", np.array_equal(
            client.get(f"kv/r1/{layer}").numpy().view(np.uint16), want.view(np.uint16)))
    took = {k: Stats.of(s) for k, s in rounds({"ours": timed_put,
                                               "raw": per_call(lambda: raw.put(blob), 1)},
                                              runs).items()}
    last, layer_bytes, index = rounds_done[0], moved // layers, addr["kv_raw"]
    k, v, _ = cache.gather([seq], layers - 1)
    check(checks, "KV layer GET from the decode cache", np.array_equal(
        client.get(f"kv/r{last}/{layers - 1}").numpy().view(np.uint16),
        np.stack([k.numpy(), v.numpy()]).view(np.uint16)))
    pulled = {k: Stats.of(s) for k, s in rounds(
        {"ours": per_call(lambda: [client.get(f"kv/r{last}/{n}") for n in range(layers)], 1),
         "raw": per_call(lambda: [raw.get_new(index, layer_bytes) for _ in range(layers)], 1)},
        runs).items()}
    client.close()
    cache.close()
    out = []
    for verb, where, timed, peer in (
            ("PUT", "into a decode cache", took, "raw socket sending the same bytes"),
            ("GET", "from the decode cache", pulled, "raw socket recv_into a new array, "
             "a layer's bytes at a time")):
        r = row(f"disaggregated KV: {verb} {tokens:,} tokens x {layers} layers {where}",
                "GB/s", timed["ours"], moved / 1e9, peer, timed["raw"], "of raw", "-")
        r["tokens_per_s"], r["tokens_per_s_range"] = spread([tokens / t for t in
                                                             timed["ours"].samples])
        r["bytes"] = moved
        out.append(r)
    return out


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes-mib", default="1,64,1024", help="bulk get sizes (MiB)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=2000,
                        help="calls per timed sample at most (4 KiB latency; a quarter of it "
                             "per concurrent client)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent client processes")
    parser.add_argument("--side", type=int, default=4096, help="the tiled tensor's side")
    parser.add_argument("--int4", type=int, default=32 * MIB, help="int4 elements")
    parser.add_argument("--kv-tokens", type=int, default=32768)
    parser.add_argument("--kv-layers", type=int, default=4)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--kv-head-dim", type=int, default=128)
    parser.add_argument("--flight-batch-mib", type=float, default=4.0,
                        help="Flight record batch size")
    parser.add_argument("--device", default="auto",
                        help="the device-get case's device (auto: see bench_device)")
    parser.add_argument("--no-pin", dest="pin", action="store_false",
                        help="leave the clients and the server where the scheduler puts "
                             "them (see place)")
    parser.add_argument("--json", type=Path, default=Path("bench/out/transport.json"))
    return parse_args(parser, {"sizes_mib": "1,16", "runs": 3, "calls": 200, "side": 1024,
                               "int4": 1 << 20, "kv_tokens": 4096, "kv_layers": 2}, argv)


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    runs = max(3, args.runs)
    sizes = [int(float(s) * MIB) for s in args.sizes_mib.split(",") if s]
    page = 16
    pages = 2 * (-(-args.kv_tokens // page)) + 2  # the decode cache: one PUT's pages, twice
    geometry = (args.kv_layers, args.kv_heads, args.kv_head_dim, pages, page)
    checks: dict[str, bool] = {}
    with tempfile.TemporaryDirectory(prefix="hg-transport-") as tmp:
        plan = {"sizes": sizes, "side": args.side, "int4": args.int4, "dir": tmp,
                "kv_geometry": geometry,
                "kv_layer_bytes": 2 * args.kv_tokens * args.kv_heads * args.kv_head_dim * 2,
                "flight_batch": max(1, int(args.flight_batch_mib * MIB))}
        host = Host(plan)
        with host as addr:
            placement = Placement(host.proc.pid or -1, args.pin)
            placement.pin(True)
            client, raw = hg.connect(addr["ours"]), RawClient(addr["raw"])
            sendfile = hg.connect(addr["sendfile"])
            flight = None
            if "flight" in addr:
                import pyarrow.flight as fl

                flight = fl.connect(f"grpc://127.0.0.1:{addr['flight']}")
            else:
                print(f"Arrow Flight peer missing: {addr['flight_missing']}", file=sys.stderr)
            rows = [r for n in sizes
                    for r in bulk(addr, client, sendfile, raw, flight, n, runs, args.calls,
                                  checks)]
            onto = [n for n in sizes if n <= 64 * MIB] or sizes[:1]
            rows += device_get(addr, client, raw, max(onto), bench_device(args.device), runs,
                               args.calls, checks)
            rows += small(addr, client, raw, runs, args.calls, args.clients, checks,
                          placement)
            rows += kv(addr, host, raw, geometry, args.kv_tokens, runs, checks)
            placement.pin(False)
            rows += transcode(client, args.side, args.int4, runs, args.calls, checks)
            client.close()
            sendfile.close()
            raw.close()
            if flight is not None:
                flight.close()
    missing = [addr["flight_missing"]] if "flight_missing" in addr else []
    _print(rows)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({
        "runs": runs, "sizes": sizes, "calls": args.calls,
        "server": "one child process (spawn); clients in this process, the concurrent "
                  f"case in {args.clients} client processes; loopback TCP",
        "placement": placement.label,
        "clients": args.clients,
        "flight_batch_bytes": plan["flight_batch"], "kv_geometry": list(geometry),
        "kv_tokens": args.kv_tokens, "missing_peers": missing, "checks": checks,
        "rows": rows}, indent=1))
    if missing and in_ci():
        print("error: CI=true but a peer is missing: " + "; ".join(missing) + ". Fix: pip "
              "install pyarrow (ci/install.sh installs it with the bench extra).",
              file=sys.stderr)
        return 1
    return 0


def _print(rows: list[dict[str, Any]]) -> None:
    print(f"{'case':58s} {'ours':>22s} {'peer':>22s} {'ratio min/med/max':>24s}  peer")
    for r in rows:
        lo, hi = r["ours_range"]
        ours = f"{r['ours']:.4g} ({lo:.3g}-{hi:.3g})"
        if r["ratio"] is None:
            peer, rat = "missing", ""
        else:
            plo, phi = r["peer_value_range"]
            peer = f"{r['peer_value']:.4g} ({plo:.3g}-{phi:.3g})"
            a, b = r["ratio_range"]
            rat = f"{a:.3g}/{r['ratio']:.3g}/{b:.3g} {r['ratio_label']}"
        print(f"{r['case'][:58]:58s} {ours:>22s} {peer:>22s} {rat:>24s}  {r['peer']} "
              f"[{r['metric']}]")


if __name__ == "__main__":
    sys.exit(main())
