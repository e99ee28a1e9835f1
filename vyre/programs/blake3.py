"""BLAKE3 in vyre IR: the compression function as vyre-libs builds it, and a
whole-message hash (one invocation per 1 KiB chunk, then parent levels) built on it.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from vyre import builder as b
from vyre import ir

__all__ = ["IV", "blake3_chunks_program", "blake3_compress_program", "blake3_hash",
           "blake3_parents_program", "compress_nodes"]

IV = (0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB,
      0x5BE0CD19)
PERM = (2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8)
QUARTETS = ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15), (0, 5, 10, 15),
            (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14))
CHUNK_START, CHUNK_END, PARENT, ROOT = 1, 2, 4, 8
CHUNK_LEN, BLOCK_LEN = 1024, 64


def _g(a: str, bb: str, c: str, d: str, mx: str, my: str) -> list[ir.Node]:
    v, rr = b.var, b.rotate_right
    return [b.assign(a, b.add(b.add(v(a), v(bb)), v(mx))),
            b.assign(d, rr(b.bit_xor(v(d), v(a)), 16)),
            b.assign(c, b.add(v(c), v(d))), b.assign(bb, rr(b.bit_xor(v(bb), v(c)), 12)),
            b.assign(a, b.add(b.add(v(a), v(bb)), v(my))),
            b.assign(d, rr(b.bit_xor(v(d), v(a)), 8)),
            b.assign(c, b.add(v(c), v(d))), b.assign(bb, rr(b.bit_xor(v(bb), v(c)), 7))]


def compress_nodes(prefix: str) -> list[ir.Node]:
    """The 7 rounds over locals ``{prefix}s0..15`` and ``{prefix}m0..15`` (already bound):
    8 G Regions per round Region, the message schedule applied through per-round Lets."""
    nodes: list[ir.Node] = []
    schedule = list(range(16))
    s = [f"{prefix}s{i}" for i in range(16)]
    for r in range(7):
        rnd: list[ir.Node] = [b.let(f"{prefix}r{r}_m{i}", b.var(f"{prefix}m{schedule[i]}"))
                              for i in range(16)]
        for j, (a, bb, c, d) in enumerate(QUARTETS):
            rnd.append(b.region("vyre-primitives::hash::blake3_g", _g(
                s[a], s[bb], s[c], s[d], f"{prefix}r{r}_m{2 * j}", f"{prefix}r{r}_m{2 * j + 1}")))
        nodes.append(b.region("vyre-primitives::hash::blake3_round", rnd))
        schedule = [schedule[p] for p in PERM]
    return nodes


def blake3_compress_program() -> ir.Program:
    """vyre-libs ``blake3_compress``: one invocation compresses one block.

    Buffers: ``cv_in`` u32[8], ``msg`` u32[16], ``params`` u32[4] = (counter_lo, counter_hi,
    block_len, flags), ``cv_out`` output u32[8] (the first 8 words of the compression output,
    ``s[i] ^ s[i+8]``). Workgroup (1, 1, 1); grid (1, 1, 1).
    """
    body: list[ir.Node] = [b.let(f"s{i}", b.load("cv_in", i)) for i in range(8)]
    body += [b.let(f"s{8 + i}", IV[i]) for i in range(4)]
    body += [b.let(f"s{12 + i}", b.load("params", i)) for i in range(4)]
    body += [b.let(f"m{i}", b.load("msg", i)) for i in range(16)]
    body += compress_nodes("")
    body += [b.store("cv_out", i, b.bit_xor(b.var(f"s{i}"), b.var(f"s{i + 8}")))
             for i in range(8)]
    return b.program([b.read("cv_in", 0, b.U32, 8), b.read("msg", 1, b.U32, 16),
                      b.read("params", 2, b.U32, 4), b.output("cv_out", 3, b.U32, 8)],
                     [b.region("vyre-libs::hash::blake3_compress", body)])


def _message_word(word: ir.Expr, length: ir.Expr) -> ir.Expr:
    """Input word ``word`` masked to the message's ``length`` bytes (later bytes read 0)."""
    byte = b.mul(word, 4)
    partial = b.bit_and(b.load("input", word), b.sub(b.shl(1, b.mul(b.sub(length, byte), 8)), 1))
    return b.select(b.le(b.add(byte, 4), length), b.load("input", word),
                    b.select(b.lt(byte, length), partial, 0))


def blake3_chunks_program(workgroup: int = 64) -> ir.Program:
    """Chaining values of every 1 KiB chunk: invocation ``i`` hashes chunk ``i``.

    Buffers: ``input`` u32[] (the message, little-endian, zero-padded to whole words),
    ``params`` u32[2] = (message bytes, 1 when the message is a single chunk), ``cvs`` u32[]
    ReadWrite (8 words per chunk). Grid: ceil(chunks / workgroup) workgroups.
    """
    v = b.var
    body: list[ir.Node] = [
        b.let("total", b.load("params", 0)),
        b.let("chunks", b.select(b.eq(v("total"), 0), 1,
                                 b.div(b.add(v("total"), CHUNK_LEN - 1), CHUNK_LEN))),
        b.let("i", b.invocation_id(0)),
        b.if_(b.lt(v("i"), v("chunks")), [
            b.let("start", b.mul(v("i"), CHUNK_LEN)),
            b.let("len", b.min_(b.sub(v("total"), v("start")), CHUNK_LEN)),
            b.let("blocks", b.select(b.eq(v("len"), 0), 1,
                                     b.div(b.add(v("len"), BLOCK_LEN - 1), BLOCK_LEN))),
            b.let("root", b.select(b.eq(b.load("params", 1), 1), ROOT, 0)),
            *[b.let(f"cv{k}", IV[k]) for k in range(8)],
            b.loop("blk", 0, v("blocks"), _chunk_block()),
            *[b.store("cvs", b.add(b.mul(v("i"), 8), k), v(f"cv{k}")) for k in range(8)]])]
    return b.program([b.read("input", 0, b.U32), b.read("params", 1, b.U32, 2),
                      b.read_write("cvs", 2, b.U32)], body, workgroup_size=(workgroup, 1, 1))


def _chunk_block() -> list[ir.Node]:
    v = b.var
    first_word = b.div(b.add(v("start"), b.mul(v("blk"), BLOCK_LEN)), 4)
    last = b.eq(v("blk"), b.sub(v("blocks"), 1))
    nodes: list[ir.Node] = [
        b.let("w0", first_word),
        b.let("blen", b.min_(b.sub(v("len"), b.mul(v("blk"), BLOCK_LEN)), BLOCK_LEN)),
        b.let("flags", b.bit_or(b.select(b.eq(v("blk"), 0), CHUNK_START, 0),
                                b.select(last, b.bit_or(CHUNK_END, v("root")), 0))),
        *[b.let(f"s{k}", v(f"cv{k}")) for k in range(8)],
        *[b.let(f"s{8 + k}", IV[k]) for k in range(4)],
        b.let("s12", v("i")), b.let("s13", 0), b.let("s14", v("blen")), b.let("s15", v("flags")),
        *[b.let(f"m{k}", _message_word(b.add(v("w0"), k), v("total"))) for k in range(16)],
    ]
    nodes += compress_nodes("")
    nodes += [b.assign(f"cv{k}", b.bit_xor(v(f"s{k}"), v(f"s{k + 8}"))) for k in range(8)]
    return nodes


def blake3_parents_program(workgroup: int = 64) -> ir.Program:
    """One level of the BLAKE3 tree: invocation ``i`` compresses child CVs ``2i, 2i+1`` into a
    parent CV; an odd last child moves up unchanged.

    Buffers: ``children`` u32[] (8 words each), ``params`` u32[2] = (children, ROOT flag for
    the final pair), ``parents`` u32[] ReadWrite (8 words each).
    """
    v = b.var
    body: list[ir.Node] = [
        b.let("n", b.load("params", 0)),
        b.let("i", b.invocation_id(0)),
        b.if_(b.lt(b.add(b.mul(v("i"), 2), 1), v("n")), [
            *[b.let(f"s{k}", IV[k]) for k in range(8)],
            *[b.let(f"s{8 + k}", IV[k]) for k in range(4)],
            b.let("s12", 0), b.let("s13", 0), b.let("s14", BLOCK_LEN),
            b.let("s15", b.bit_or(PARENT, b.load("params", 1))),
            *[b.let(f"m{k}", b.load("children", b.add(b.mul(v("i"), 16), k)))
              for k in range(16)],
            *compress_nodes(""),
            *[b.store("parents", b.add(b.mul(v("i"), 8), k),
                      b.bit_xor(v(f"s{k}"), v(f"s{k + 8}"))) for k in range(8)]],
            [b.if_(b.eq(b.add(b.mul(v("i"), 2), 1), v("n")), [
                b.store("parents", b.add(b.mul(v("i"), 8), k),
                        b.load("children", b.add(b.mul(v("i"), 16), k))) for k in range(8)])])]
    return b.program([b.read("children", 0, b.U32), b.read("params", 1, b.U32, 2),
                      b.read_write("parents", 2, b.U32)], body,
                     workgroup_size=(workgroup, 1, 1))


@functools.lru_cache(maxsize=4)
def _programs(workgroup: int) -> tuple[ir.Program, ir.Program]:
    """The chunk and parent programs, built once (one object each: compile caches by it)."""
    return blake3_chunks_program(workgroup), blake3_parents_program(workgroup)


def _words(data: bytes) -> np.ndarray:
    return np.frombuffer(data + bytes(-len(data) % 4), "<u4") if data else np.zeros(1, "<u4")


def blake3_hash(data: bytes, device: Any = "reference", *, workgroup: int = 64) -> bytes:
    """The 32-byte BLAKE3 hash of ``data``, computed by the two programs on ``device``: the
    chunk program once, then the parent program once per tree level.

    Args:
        data: the message.
        device: ``"reference"``, or a hurray_gpu device or spec (compiled kernels on device
            buffers: the message is uploaded once, only the digest comes back).
        workgroup: invocations per workgroup.

    Returns:
        The digest (equal to ``blake3.blake3(data).digest()``).

    Raises:
        UnsupportedOpError: the device cannot compile kernels.
    """
    chunks = max(1, -(-len(data) // CHUNK_LEN))
    params = np.array([len(data), 1 if chunks == 1 else 0], np.uint32)
    if device == "reference":
        return _reference_hash(data, chunks, params, workgroup)
    from hurray_gpu.buffer import Buffer
    from vyre.kernel import compile as compile_kernel

    chunk_prog, parent_prog = _programs(workgroup)
    chunk_kernel = compile_kernel(chunk_prog, device)
    parent_kernel = compile_kernel(parent_prog, device)
    dev = chunk_kernel.device
    live = [Buffer.from_bytes(dev, _words(data)), Buffer.from_bytes(dev, params),
            Buffer(dev, 32 * chunks)]
    try:
        chunk_kernel(live, (-(-chunks // workgroup), 1, 1))
        cvs, n = live[2], chunks
        while n > 1:
            up = -(-n // 2)
            level = Buffer.from_bytes(dev, np.array([n, ROOT if n == 2 else 0], np.uint32))
            parents = Buffer(dev, 32 * up)
            live += [level, parents]
            parent_kernel([cvs, level, parents], (-(-up // workgroup), 1, 1))
            cvs, n = parents, up
        dev.synchronize()
        return bytes(cvs.copyout())[:32]
    finally:
        for buf in live:  # in-order queue: later work on a reused buffer waits for this
            buf.free()


def _reference_hash(data: bytes, chunks: int, params: np.ndarray, wg: int) -> bytes:
    from vyre.execute import run_bytes

    chunk_prog, parent_prog = _programs(wg)
    cvs = run_bytes(chunk_prog, {"input": _words(data), "params": params,
                                 "cvs": np.zeros(8 * chunks, np.uint32)},
                    grid=(-(-chunks // wg), 1, 1))["cvs"]
    n = chunks
    while n > 1:
        up = -(-n // 2)
        level = np.array([n, ROOT if n == 2 else 0], np.uint32)
        cvs = run_bytes(parent_prog, {"children": np.frombuffer(cvs, np.uint32),
                                      "params": level, "parents": np.zeros(8 * up, np.uint32)},
                        grid=(-(-up // wg), 1, 1))["parents"]
        n = up
    return bytes(cvs[:32])
