"""Byte hashes over byte-per-u32 input (vyre-primitives 0.7.2 hash/): FNV-1a 32 and 64, CRC-32 and
Adler-32. One invocation (gid 0) walks the whole input, as vyre-primitives does.
"""

from __future__ import annotations

from collections.abc import Sequence

from vyre import builder as b
from vyre import ir

__all__ = ["adler32_program", "crc32_program", "fnv1a32_program", "fnv1a64_program"]

_GID = b.invocation_id(0)


def _serial(out_words: int, init: Sequence[ir.Node], step: Sequence[ir.Node],
            result: Sequence[ir.Node]) -> ir.Program:
    """``if gid == 0: init; for i in [0, buflen(input)): step; result``."""
    body = [b.if_(b.eq(_GID, 0), [*init, b.loop("i", 0, b.buf_len("input"), step), *result])]
    return b.program([b.read("input", 0, b.U32), b.output("out", 1, b.U32, out_words)], body)


def _byte() -> ir.Expr:
    return b.bit_and(b.load("input", b.var("i")), 0xFF)


def fnv1a32_program() -> ir.Program:
    """FNV-1a 32 (offset 0x811C9DC5, prime 0x01000193); ``out`` u32[1]. High input bits are
    ignored."""
    return _serial(1, [b.let("h", 0x811C9DC5)],
                   [b.assign("h", b.mul(b.bit_xor(b.var("h"), _byte()), 0x01000193))],
                   [b.store("out", 0, b.var("h"))])


def fnv1a64_program() -> ir.Program:
    """FNV-1a 64 in u32 pairs; ``out`` = [lo, hi].

    ``h * 0x100000001B3 = h * 0x1B3 + (h << 40)``: the low word's carry into the high word
    comes from MulHigh, and ``h << 40`` adds ``lo << 8`` to the high word.
    """
    v = b.var
    step = [b.let("x", b.bit_xor(v("lo"), _byte())),
            b.assign("hi", b.add(b.add(b.mul(v("hi"), 0x1B3), b.mul_high(v("x"), 0x1B3)),
                                 b.shl(v("x"), 8))),
            b.assign("lo", b.mul(v("x"), 0x1B3))]
    return _serial(2, [b.let("lo", 0x84222325), b.let("hi", 0xCBF29CE4)], step,
                   [b.store("out", 0, v("lo")), b.store("out", 1, v("hi"))])


def crc32_program() -> ir.Program:
    """CRC-32 (reflected, polynomial 0xEDB88320), bit by bit; ``out`` u32[1]."""
    v = b.var
    step = [b.assign("crc", b.bit_xor(v("crc"), _byte())),
            b.loop("bit", 0, 8, [b.assign("crc", b.select(
                b.ne(b.bit_and(v("crc"), 1), 0), b.bit_xor(b.shr(v("crc"), 1), 0xEDB88320),
                b.shr(v("crc"), 1)))])]
    return _serial(1, [b.let("crc", 0xFFFFFFFF)], step,
                   [b.store("out", 0, b.bit_xor(v("crc"), 0xFFFFFFFF))])


def adler32_program() -> ir.Program:
    """Adler-32 (modulus 65521); ``out`` u32[1] = ``(b << 16) | a``."""
    v = b.var
    step = [b.assign("a", b.mod(b.add(v("a"), _byte()), 65521)),
            b.assign("b", b.mod(b.add(v("b"), v("a")), 65521))]
    return _serial(1, [b.let("a", 1), b.let("b", 0)], step,
                   [b.store("out", 0, b.bit_or(b.shl(v("b"), 16), v("a")))])
