"""Live-server fuzzing of the network interchange protocol: ``python -m fuzz.net_server``.

One server runs in this process (a registry of small tensors, small message and PUT limits).
Each input is a valid client session (hello, requests, PUTs with data, pings) built from a
seeded generator and then mutated (bit flips, truncations, dropped/duplicated/swapped frames,
header fields set to edge values, unknown and private types, random bytes). It is sent on a
fresh connection whose write side is then shut, and everything the server answers is read
until it closes. Checked on every input:

1. the server answers only well-formed server messages (each decodes strictly), and every
   ERROR code is a spec code or one of ours (0xF0, 0xF1);
2. the server closes the connection within ``HANG_SECONDS`` (no hang);
3. no server thread dies of an unexpected exception (``threading.excepthook`` is watched);
4. every ``CHECK_EVERY`` inputs a well-behaved client still gets and puts bit-exact while
   the hostile connections come and go, and the server's live connections drain to zero;
5. the traced memory peak of the whole run stays under ``MEMORY_BOUND`` (bounded per
   connection: the limits below, never a size the input declares).
"""

from __future__ import annotations

import argparse
import random
import socket
import struct
import sys
import threading
import time
import tracemalloc
from typing import Any

import numpy as np

import hurray_gpu as hg
from hurray_gpu.errors import ProtocolError
from hurray_gpu.format import protocol as P

MAX_MESSAGE = 1 << 16
MAX_PUT = 1 << 16
HANG_SECONDS = 10.0
CHECK_EVERY = 25
MEMORY_BOUND = 48 << 20
KEEPALIVE = 0.25  # seconds between the good client's PINGs (the server's idle_timeout: 2 s)
_SERVER_TYPES = {P.MessageType.SERVER_HELLO, P.MessageType.TENSOR_DESCRIPTOR,
                 P.MessageType.TENSOR_DATA, P.MessageType.TENSOR_DATA_END,
                 P.MessageType.TENSOR_PUT_ACK, P.MessageType.ERROR, P.MessageType.PONG}
_CODES = set(P.ErrorCode) | {0xF0, 0xF1}
_EDGES = (0, 1, 2, 7, 8, 0xFF, 0xFFFF, MAX_MESSAGE, MAX_MESSAGE + 1, 0x7FFFFFFF, 0xFFFFFFFF)


def registry() -> dict[str, Any]:
    """The served tensors: several dtypes and layouts, a quantized one, an empty one."""
    rng = np.random.default_rng(7)
    values = rng.standard_normal((8, 32)).astype(np.float32)
    from hurray_gpu.format import descriptor as d

    return {"f32": hg.from_numpy(values), "i8": hg.from_numpy(np.arange(-5, 5, dtype=np.int8)),
            "q": hg.quantize(values, "per_block", axis=1, block_size=32, dtype="int4"),
            "tiled": hg.relayout(hg.from_numpy(values), d.Tiled((4, 4))),
            "empty": hg.from_numpy(np.zeros((0, 3), np.float16))}


def session(rng: random.Random) -> list[bytes]:
    """A valid client session as a list of frames."""
    frames = [P.encode(P.ClientHello(1, rng.choice((4096, MAX_MESSAGE, 1 << 20)), 0,
                                     (P.LayoutEntry(1),), (0,), ()), 1)]
    stream = 2
    for _ in range(rng.randint(1, 5)):
        kind = rng.random()
        if kind < 0.45:
            key = rng.choice(("f32", "i8", "q", "tiled", "empty", "missing", "../x", "kv/0"))
            layouts = tuple(P.LayoutEntry(t) for t in rng.sample((1, 2, 4), rng.randint(0, 2)))
            frames.append(P.encode(P.TensorRequest(key, layouts, 0, rng.choice((0, 64, 4096)),
                                                   rng.randint(0, 1)), stream))
        elif kind < 0.85:
            n = rng.choice((0, 4, 64, 1000))
            t = hg.from_numpy(np.frombuffer(rng.randbytes(n), np.uint8))
            frames.append(P.encode(P.TensorPut(f"p{stream}", t.descriptor_bytes, n), stream))
            for start in range(0, n, 400):
                data = t.buffers[0].numpy()[start:start + 400].tobytes()
                frames.append(P.data_header(stream, start, len(data)) + data)
            frames.append(P.encode(P.TensorDataEnd(), stream))
        else:
            frames.append(P.encode(P.Ping(), rng.randint(1, 9)))
        stream += rng.randint(1, 2)
    return frames


def mutate(frames: list[bytes], rng: random.Random) -> bytes:
    """Apply 0-4 random mutations and join the frames."""
    frames = list(frames)
    for _ in range(rng.randint(0, 4)):
        i = rng.randrange(len(frames))
        raw = bytearray(frames[i])
        op = rng.randrange(8)
        if op == 0 and raw:
            raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
        elif op == 1:
            raw = raw[:rng.randrange(len(raw) + 1)]
        elif op == 2:
            frames.insert(i, bytes(raw))
        elif op == 3 and len(frames) > 1:
            j = rng.randrange(len(frames))
            frames[i], frames[j] = frames[j], frames[i]
            continue
        elif op == 4:
            frames.pop(i)
            if not frames:
                return b""
            continue
        elif op == 5 and len(raw) >= 12:
            struct.pack_into("<I", raw, 4 * rng.randrange(3), rng.choice(_EDGES))
        elif op == 6:
            mtype = rng.choice((0x0E, 0x20, 0xF0, 0xF7, 0xFE, 0xFF, 0x0C, 0x0D, 0x02, 0x04))
            raw = bytearray(struct.pack("<III", mtype, rng.randint(1, 9), 0))
        else:
            raw += rng.randbytes(rng.randint(1, 40))
        frames[i] = bytes(raw)
    return b"".join(frames)


def _read_all(sock: socket.socket, out: bytearray, done: threading.Event) -> None:
    try:
        while chunk := sock.recv(1 << 16):
            out += chunk
    except OSError:
        pass  # a reset is a close
    done.set()


def check_answers(data: bytes) -> None:
    """Every message the server sent decodes strictly and is a server message."""
    pos = 0
    while pos < len(data):
        if len(data) - pos < P.HEADER_SIZE:
            raise AssertionError(f"the server sent a torn header at byte {pos}")
        header = P.decode_header(data[pos:pos + P.HEADER_SIZE], 1 << 30)
        payload = data[pos + P.HEADER_SIZE:pos + P.HEADER_SIZE + header.length]
        if len(payload) != header.length:
            raise AssertionError(f"the server sent a torn payload at byte {pos}")
        msg = P.decode(header, payload)
        assert header.type in _SERVER_TYPES, f"server sent client type 0x{header.type:X}"
        if isinstance(msg, P.ErrorMsg):
            assert msg.code in _CODES and "Fix:" in msg.message, msg
        pos += P.HEADER_SIZE + header.length


def one_input(server: Any, blob: bytes) -> None:
    """Send ``blob`` on a fresh connection and check what comes back."""
    sock = socket.create_connection(socket.getaddrinfo(
        *server.url.removeprefix("hurray://").rsplit(":", 1), type=socket.SOCK_STREAM
    )[0][4], timeout=HANG_SECONDS)
    answers, done = bytearray(), threading.Event()
    reader = threading.Thread(target=_read_all, args=(sock, answers, done), daemon=True)
    reader.start()
    try:
        sock.sendall(blob)
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass  # the server may close before reading everything
    if not done.wait(HANG_SECONDS):
        raise AssertionError(f"the server did not close within {HANG_SECONDS} s")
    sock.close()
    check_answers(bytes(answers))


def _keep_alive(client: Any, stop: threading.Event, lost: list[str]) -> None:
    """PING ``client``'s server every KEEPALIVE seconds until ``stop``; a failure is recorded
    in ``lost`` (and ends the pings)."""
    while not stop.wait(KEEPALIVE):
        try:
            client.ping()
        except Exception as exc:  # reported by the checks of the fuzzing thread
            lost.append(f"{type(exc).__name__}: {exc}")
            return


def run(inputs: int, seed: int) -> int:
    """Fuzz a live server with ``inputs`` mutated sessions; returns the number checked."""
    crashes: list[str] = []
    previous = threading.excepthook
    threading.excepthook = lambda args: crashes.append(f"{args.exc_type.__name__}: "
                                                       f"{args.exc_value}")
    tracemalloc.start()
    try:
        return _run(inputs, seed, crashes)
    finally:
        threading.excepthook = previous
        tracemalloc.stop()


def _run(inputs: int, seed: int, crashes: list[str]) -> int:
    tensors = registry()
    tracemalloc.reset_peak()
    with hg.serve(dict(tensors), port=0, background=True, max_message_size=MAX_MESSAGE,
                  max_put_bytes=MAX_PUT, timeout=2.0, idle_timeout=2.0) as server:
        good = hg.connect(server.url)
        # The good client idles while hostile inputs run (one may take the server's whole
        # 2 s timeouts, longer under load): it keeps its connection alive with PINGs, as a
        # client idling past a server's idle_timeout must, so that only a server dropping
        # a live client fails the run (that ping's error is reported at the next check).
        stop, lost = threading.Event(), []
        keepalive = threading.Thread(target=_keep_alive, args=(good, stop, lost), daemon=True)
        keepalive.start()
        rng = random.Random(seed)
        for i in range(inputs):
            blob = mutate(session(rng), rng)
            try:
                one_input(server, blob)
            except (AssertionError, ProtocolError) as exc:
                raise AssertionError(f"input {i} (seed {seed}): {exc}; blob {blob.hex()}"
                                     ) from exc
            assert not crashes, f"input {i} (seed {seed}) crashed a server thread: {crashes}"
            if i % CHECK_EVERY == CHECK_EVERY - 1:
                assert not lost, f"input {i} (seed {seed}): the good client's PING: {lost}"
                assert good.get("f32") == tensors["f32"]
                good.put("mine", tensors["i8"])
                assert good.get("mine") == tensors["i8"]
                for _ in range(100):  # hostile connections drain (the good one stays)
                    if len(server._conns) <= 1:
                        break
                    time.sleep(0.05)
                assert len(server._conns) <= 1, f"{len(server._conns)} connections linger"
        stop.set()
        keepalive.join()
        good.close()
    peak = tracemalloc.get_traced_memory()[1]
    assert peak < MEMORY_BOUND, f"traced memory peaked at {peak} bytes"
    return inputs


def main(argv: list[str] | None = None) -> int:
    """Command line: ``python -m fuzz.net_server [--inputs N] [--seed S]``."""
    parser = argparse.ArgumentParser(prog="python -m fuzz.net_server", description=__doc__)
    parser.add_argument("--inputs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    began = time.monotonic()
    count = run(args.inputs, args.seed)
    print(f"net_server: {count} inputs, seed {args.seed}, {time.monotonic() - began:.1f} s, ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
