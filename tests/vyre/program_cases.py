"""Known answers for the real programs of vyre.programs (their known answers from vyre 0.7.2), each with its source:
the spec's published vector, or an independent Python computation (zlib, blake3, numpy)."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import blake3
import numpy as np

from vyre import ir
from vyre import programs as P
from vyre.ir import AtomicOp


@dataclass(frozen=True)
class Case:
    """One program run: inputs by name, grid, and expected outputs as u32 words."""

    name: str
    build: Callable[[], ir.Program]
    inputs: dict[str, Any]
    grid: tuple[int, int, int]
    expected: dict[str, list[int]]
    source: str
    extra: dict[str, Any] = field(default_factory=dict)


def text(data: bytes) -> np.ndarray:
    """Byte per u32 slot (``pack_bytes_as_u32_slice``)."""
    return np.frombuffer(data, np.uint8).astype(np.uint32)


def u32(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=np.uint64).astype(np.uint32)


def _fnv64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) % 2**64
    return h


def _fnv32(data: bytes) -> int:
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) % 2**32
    return h


def hash_cases() -> list[Case]:
    out = []
    for data in (b"abc", b"Wikipedia", b"", bytes(range(256)) * 2):
        tag = data[:9].hex() or "empty"
        h64 = _fnv64(data)
        out += [
            Case(f"fnv1a32-{tag}", P.fnv1a32_program, {"input": text(data)}, (1, 1, 1),
                 {"out": [_fnv32(data)]}, "FNV-1a spec formula (spec 6.4: abc -> 0x1A47E90B)"),
            Case(f"fnv1a64-{tag}", P.fnv1a64_program, {"input": text(data)}, (1, 1, 1),
                 {"out": [h64 & 0xFFFFFFFF, h64 >> 32]}, "FNV-1a 64 formula (spec 6.5)"),
            Case(f"crc32-{tag}", P.crc32_program, {"input": text(data)}, (1, 1, 1),
                 {"out": [zlib.crc32(data)]}, "zlib.crc32"),
            Case(f"adler32-{tag}", P.adler32_program, {"input": text(data)}, (1, 1, 1),
                 {"out": [zlib.adler32(data)]}, "zlib.adler32"),
        ]
    high = u32([0xFFFFFF61, 0xCAFE0062, 0x80000063])
    out.append(Case("fnv1a32-high-bits", P.fnv1a32_program, {"input": high}, (1, 1, 1),
                    {"out": [0x1A47E90B]}, "spec 6.4 (high input bits ignored)"))
    return out


def _blake3_words(digest: bytes) -> list[int]:
    return np.frombuffer(digest, "<u4").tolist()


def blake3_cases() -> list[Case]:
    iv = u32(list(P.blake3.IV))
    out = []
    for message in (b"", b"abc", bytes(7 * i % 256 for i in range(64))):
        msg = np.frombuffer(message.ljust(64, b"\0"), "<u4")
        out.append(Case(f"blake3-compress-{len(message)}", P.blake3_compress_program,
                        {"cv_in": iv, "msg": msg, "params": u32([0, 0, len(message), 11])},
                        (1, 1, 1), {"cv_out": _blake3_words(blake3.blake3(message).digest())},
                        "blake3 package (one-block messages: the root compression)"))
    fixture = u32([0x61726261, 0x61636461, 0x61726261] + [0] * 13)
    want = bytes.fromhex("825e3e45c6a8672378cfe6405165d4788ac6eeef8639c455314f36d0bcf13fe5")
    out.append(Case("blake3-compress-fixture", P.blake3_compress_program,
                    {"cv_in": iv, "msg": fixture, "params": u32([0, 0, 64, 11])}, (1, 1, 1),
                    {"cv_out": _blake3_words(want)}, "spec 6.1 registered fixture"))
    return out


AHO = [  # spec 6.2: (patterns, haystack, {index: value} or full list)
    ([b"abra"], b"abracadabra", [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1]),
    ([b"he", b"she", b"his", b"hers"], b"ushers", [0, 0, 0, 2, 0, 4]),
    ([b"abc"], b"xxabcxx", [0, 0, 0, 0, 1, 0, 0]),
    ([b"aa", b"aaa"], b"aaaa", [0, 1, 2, 2]),
    ([b"abab", b"babab"], b"xababaxxbabaxbababx", {4: 1, 17: 2}),
    ([b"foo", b"foobar", b"bar"], b"foobar", [0, 0, 1, 0, 0, 2]),
    ([b"cat", b"cater"], b"catering", [0, 0, 1, 0, 2, 0, 0, 0]),
    ([b"ab", b"bc", b"cd"], b"abcd" * 5, [0, 1, 2, 3] * 5),
    (["café".encode()], b"The caf\xc3\xa9 is open.", {8: 1}),
]


def text_cases() -> list[Case]:
    out = []
    for k, (patterns, hay, want) in enumerate(AHO):
        dfa = P.dfa_compile(patterns)
        if isinstance(want, dict):
            want = [want.get(i, 0) for i in range(len(hay))]
        inputs = {"haystack": text(hay), "transitions": dfa.transitions, "accept": dfa.accept,
                  "matches": np.zeros(len(hay), np.uint32)}
        grid = (-(-len(hay) // 64), 1, 1)
        out.append(Case(f"aho-corasick-{k}", lambda d=dfa: P.aho_corasick_program(
            d.max_pattern_len), inputs, grid, {"matches": want}, "spec 6.2"))
    out.append(Case("aho-corasick-unbounded", P.aho_corasick_program, dict(
        out[1].inputs), (1, 1, 1), {"matches": [0, 0, 0, 2, 0, 4]}, "spec 6.2 (replay from 0)"))
    for hay, needle in ((b"abcabc++", b"abc"), (b"xyzxyzxy", b"xyz")):
        out.append(Case(f"substring-{needle.decode()}", lambda h=hay, n=needle: P.substring_program(
            len(h), len(n)), {"haystack": text(hay), "needle": text(needle)}, (1, 1, 1),
            {"matches": [1, 0, 0, 1, 0, 0, 0, 0]}, "spec 6.11"))
    return out


def scan_cases() -> list[Case]:
    rng = np.random.default_rng(7)
    big = rng.integers(0, 2**32, 300, dtype=np.uint64).astype(np.uint32)
    tri = np.arange(1, 65, dtype=np.uint32)
    return [
        Case("prefix-scan", lambda: P.prefix_scan_program(4), {"in": u32([1, 2, 3, 4])},
             (1, 1, 1), {"out": [1, 3, 6, 10]}, "spec 6.3"),
        Case("prefix-scan-wrap", lambda: P.prefix_scan_program(3),
             {"in": u32([0xFFFFFFFF, 1, 1])}, (1, 1, 1), {"out": [0xFFFFFFFF, 0, 1]}, "spec 6.3"),
        Case("prefix-scan-exclusive", lambda: P.prefix_scan_program(5, exclusive=True),
             {"in": u32([5, 1, 2, 3, 4])}, (1, 1, 1), {"out": [0, 5, 6, 8, 11]}, "numpy cumsum"),
        Case("prefix-scan-300", lambda: P.prefix_scan_program(300), {"in": big}, (1, 1, 1),
             {"out": np.cumsum(big, dtype=np.uint32).tolist()}, "numpy cumsum (wrapping)"),
        Case("multi-block-scan-64", lambda: P.multi_block_scan_program(64, 16),
             {"in": tri, "block_sums": np.zeros(4, np.uint32)}, (4, 1, 1),
             {"out": (tri * (tri + 1) // 2).tolist()}, "spec 6.3 (triangular numbers)",
             extra={"skip_outputs": ("block_sums",)}),
        Case("multi-block-scan-300", lambda: P.multi_block_scan_program(300, 64),
             {"in": big, "block_sums": np.zeros(5, np.uint32)}, (5, 1, 1),
             {"out": np.cumsum(big, dtype=np.uint32).tolist()}, "numpy cumsum (GridSync)",
             extra={"skip_outputs": ("block_sums",)}),
    ]


def linalg_cases() -> list[Case]:
    i = np.arange(777, dtype=np.uint64)
    lhs, rhs = ((17 * i + 3) % 2**32).astype(np.uint32), ((29 * i + 11) % 2**32).astype(np.uint32)
    rng = np.random.default_rng(3)
    n = 20
    a, bm = (rng.integers(0, 2**32, n * n, dtype=np.uint64).astype(np.uint32) for _ in range(2))
    mm = ((a.reshape(n, n).astype(object) @ bm.reshape(n, n).astype(object)) % 2**32)
    mm_words = [int(x) for x in mm.ravel()]
    sq = np.array([2, 3, 4, 5], np.float32)
    return [
        Case("dot-7x3", lambda: P.dot_program(1), {"lhs": u32([7]), "rhs": u32([3])},
             (1, 1, 1), {"out": [21]}, "spec 6.12"),
        Case("dot-777", lambda: P.dot_program(777), {"lhs": lhs, "rhs": rhs}, (4, 1, 1),
             {"out": [4007775501]}, "spec 6.12 (0xEEE1CD0D)"),
        Case("matmul-20", lambda: P.matmul_program(n), {"a": a, "b": bm}, (2, 2, 1),
             {"out": mm_words}, "Python integer matmul mod 2**32"),
        Case("matmul-tiled-20", lambda: P.matmul_tiled_program(n), {"a": a, "b": bm},
             (2, 2, 1), {"out": mm_words}, "Python integer matmul mod 2**32"),
        Case("square-f32", lambda: P.square_program(4), {"in": sq}, (1, 1, 1),
             {"out": (sq * sq).view(np.uint32).tolist()}, "spec 6.14"),
        Case("softmax", lambda: P.softmax_program(4),
             {"in": np.array([0.5, -1.0, 1.5, 0.25], np.float32)}, (1, 1, 1),
             {"out": [0x3E58F07B, 0x3D419F74, 0x3F136CF3, 0x3E28F3DB]}, "spec 6.13"),
    ]


ATOMIC_TABLE = [  # spec 6.9: op, values, initial state, final state, trace
    (AtomicOp.ADD, [1, 5, 0xFFFFFFFF, 3], 7, 15, [7, 8, 13, 12]),
    (AtomicOp.AND, [0xFF, 0xF0, 0x0F, 0x33], 0xFFFFFFFF, 0, [0xFFFFFFFF, 0xFF, 0xF0, 0]),
    (AtomicOp.OR, [1, 2, 4, 8], 0, 0xF, [0, 1, 3, 7]),
    (AtomicOp.XOR, [0xF0, 0x0F, 0xFF, 0x55], 0, 0x55, [0, 0xF0, 0xFF, 0]),
    (AtomicOp.MIN, [50, 20, 80, 10], 100, 10, [100, 50, 20, 20]),
    (AtomicOp.MAX, [50, 20, 80, 10], 0, 80, [0, 50, 50, 80]),
    (AtomicOp.EXCHANGE, [100, 200, 300, 400], 42, 400, [42, 100, 200, 300]),
    (AtomicOp.LRU_UPDATE, [50, 20, 80, 10], 0, 80, [0, 50, 50, 80]),  # max(old, v), spec 3.2
]


def reduce_cases() -> list[Case]:
    hist_in = u32([0, 1, 2, 3, 0, 1, 2, 3])
    out = [
        Case("histogram", lambda: P.histogram_program(8, 4),
             {"input": hist_in, "output": np.zeros(4, np.uint32)}, (1, 1, 1),
             {"output": [2, 2, 2, 2]}, "spec 6.8"),
        Case("histogram-atomic", lambda: P.histogram_atomic_program(8, 4),
             {"input": hist_in, "output": np.zeros(4, np.uint32)}, (1, 1, 1),
             {"output": [2, 2, 2, 2]}, "spec 6.8"),
        Case("atomic-cas", lambda: P.atomic_compare_exchange_program(4),
             {"expected": u32([10, 99, 20, 30]), "desired": u32([11, 88, 21, 31]),
              "state": u32([10])}, (1, 1, 1), {"state": [11], "trace": [10, 11, 11, 11]},
             "spec 6.9"),
        Case("subgroup-add", lambda: P.subgroup_add_program(4), {"values": u32([1, 2, 3, 4])},
             (1, 1, 1), {"out": [10, 10, 10, 10]}, "spec 6.15"),
        Case("subgroup-reduce-add", lambda: P.subgroup_reduce_add_program(4),
             {"values": u32([1, 2, 3, 4])}, (1, 1, 1), {"out": [10, 10, 10, 10]},
             "spec 6.15 (SubgroupReduce form)"),
    ]
    for op, values, init, final, trace in ATOMIC_TABLE:
        out.append(Case(f"atomic-{op.name.lower()}", lambda o=op: P.atomic_serial_program(o, 4),
                        {"values": u32(values), "state": u32([init])}, (1, 1, 1),
                        {"state": [final], "trace": trace}, "spec 6.9"))
    maps = {"clamp_u32": ({"input": [0, 5, 10, 0xFFFFFFFF], "lo": [3, 3, 3, 100],
                           "hi": [8, 8, 8, 200]}, [3, 5, 8, 200]),
            "avg_floor": ({"a": [10, 0xFFFFFFFF, 7, 100], "b": [20, 0xFFFFFFFF, 12, 0]},
                          [15, 0xFFFFFFFF, 9, 50]),
            "wrapping_neg": ({"a": [0, 1, 0xFFFFFFFF, 42]}, [0, 0xFFFFFFFF, 1, 0xFFFFFFD6]),
            "lzcnt_u32": ({"a": [0, 1, 0x80000000, 0x00F00000]}, [32, 31, 0, 8]),
            "tzcnt_u32": ({"a": [0, 1, 0x80000000, 0x00F00000]}, [32, 0, 31, 20])}
    for name, (inputs, want) in maps.items():
        out.append(Case(name, lambda m=name: P.elementwise_program(m, 4),
                        {k: u32(v) for k, v in inputs.items()}, (1, 1, 1), {"out": want},
                        "spec 6.10"))
    return out


def all_cases() -> list[Case]:
    """Every known-answer case."""
    return hash_cases() + blake3_cases() + text_cases() + scan_cases() + linalg_cases() + \
        reduce_cases()
