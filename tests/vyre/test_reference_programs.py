"""Real vyre library programs (vyre.programs) with their published known answers."""

from __future__ import annotations

import numpy as np
import pytest

from vyre import builder as b
from vyre import reference
from vyre.ir import Region
from vyre.programs.blake3 import IV, blake3_compress_program

GID, LID, WID = b.invocation_id(0), b.local_id(0), b.workgroup_id(0)


def _bytes_as_u32(text: bytes) -> np.ndarray:
    return np.frombuffer(text, dtype=np.uint8).astype(np.uint32)


def test_crc32_of_abc() -> None:
    v = b.var
    prog = b.program([b.read("input", 0, b.U32), b.output("out", 1, b.U32, 1)], [
        b.if_(b.eq(GID, 0), [
            b.let("crc", 0xFFFFFFFF),
            b.loop("i", 0, b.buf_len("input"), [
                b.assign("crc", b.bit_xor(v("crc"), b.bit_and(b.load("input", v("i")), 0xFF))),
                b.loop("bit", 0, 8, [b.assign("crc", b.select(
                    b.ne(b.bit_and(v("crc"), 1), 0),
                    b.bit_xor(b.shr(v("crc"), 1), 0xEDB88320), b.shr(v("crc"), 1)))])]),
            b.store("out", 0, b.bit_xor(v("crc"), 0xFFFFFFFF))])])
    out = reference.run(prog, [_bytes_as_u32(b"abc")], grid=(1, 1, 1))
    assert out["out"].tolist() == [0x352441C2]


def test_fnv1a32_of_abc_ignores_high_bits() -> None:
    v = b.var
    prog = b.program([b.read("input", 0, b.U32), b.output("out", 1, b.U32, 1)], [
        b.if_(b.eq(GID, 0), [
            b.let("h", 0x811C9DC5),
            b.loop("i", 0, b.buf_len("input"), [b.assign("h", b.mul(
                b.bit_xor(v("h"), b.bit_and(b.load("input", v("i")), 0xFF)), 0x01000193))]),
            b.store("out", 0, v("h"))])])
    for data in (_bytes_as_u32(b"abc"), np.array([0xFFFFFF61, 0xCAFE0062, 0x80000063],
                                                 np.uint32)):
        assert reference.run(prog, [data], grid=(1, 1, 1))["out"].tolist() == [0x1A47E90B]


def test_hillis_steele_inclusive_scan_with_barriers() -> None:
    n, lanes = 4, 4
    body = [b.store("sa", LID, 0),
            b.if_(b.lt(LID, n), [b.store("sa", LID, b.load("in", LID))]), b.barrier()]
    stride = 1
    while stride < lanes:
        body += [
            b.store("sb", LID, b.load("sa", LID)),
            b.if_(b.lt(stride - 1, LID), [b.store("sb", LID, b.add(
                b.load("sa", LID), b.load("sa", b.add(LID, 0xFFFFFFFF - (stride - 1)))))]),
            b.barrier(), b.store("sa", LID, b.load("sb", LID)), b.barrier()]
        stride *= 2
    body.append(b.if_(b.lt(LID, n), [b.store("out", LID, b.load("sa", LID))]))
    prog = b.program([b.read("in", 0, b.U32), b.output("out", 1, b.U32, n),
                      b.workgroup("sa", lanes, b.U32), b.workgroup("sb", lanes, b.U32)],
                     body, workgroup_size=(lanes, 1, 1))
    out = reference.run(prog, [np.array([1, 2, 3, 4], np.uint32)], grid=(1, 1, 1))
    assert out["out"].tolist() == [1, 3, 6, 10]
    wrap = reference.run(prog, [np.array([0xFFFFFFFF, 1, 1, 0], np.uint32)], grid=(1, 1, 1))
    assert wrap["out"].tolist() == [0xFFFFFFFF, 0, 1, 1]


def test_tiled_dot_product_over_several_workgroups() -> None:
    n, wg = 777, 256
    v = b.var
    body = [b.let("local", LID),
            b.if_(b.eq(WID, 0), [
                b.let("acc", 0),
                b.loop("chunk", 0, (n + wg - 1) // wg, [
                    b.let("idx", b.add(b.mul(v("chunk"), wg), v("local"))),
                    b.if_(b.lt(v("idx"), n), [b.assign("acc", b.add(v("acc"), b.mul(
                        b.load("lhs", v("idx")), b.load("rhs", v("idx")))))])]),
                b.store("scratch", v("local"), v("acc"))]),
            b.barrier()]
    stride = 128
    while stride:
        body += [b.if_(b.and_(b.eq(WID, 0), b.lt(v("local"), stride)), [
            b.store("scratch", v("local"), b.add(b.load("scratch", v("local")),
                                                 b.load("scratch", b.add(v("local"), stride))))]),
            b.barrier()]
        stride //= 2
    body.append(b.if_(b.and_(b.eq(WID, 0), b.eq(v("local"), 0)),
                      [b.store("out", 0, b.load("scratch", 0))]))
    prog = b.program([b.read("lhs", 0, b.U32), b.read("rhs", 1, b.U32),
                      b.workgroup("scratch", wg, b.U32), b.output("out", 2, b.U32, 1)],
                     body, workgroup_size=(wg, 1, 1))
    i = np.arange(n, dtype=np.uint64)
    lhs, rhs = ((17 * i + 3) % 2 ** 32).astype(np.uint32), ((29 * i + 11) % 2 ** 32)
    out = reference.run(prog, [lhs, rhs.astype(np.uint32)])  # grid inferred: 4 workgroups
    assert out["out"].tolist() == [4007775501]


def test_softmax_with_tree_reduction_is_bit_exact() -> None:
    v = b.var
    body = [b.let("x", b.load("in", LID)), b.store("sh", LID, v("x")), b.barrier()]

    def tree(combine):
        steps = []
        for stride in (2, 1):
            steps += [b.if_(b.lt(LID, stride), [b.store("sh", LID, combine(
                b.load("sh", LID), b.load("sh", b.add(LID, stride))))]), b.barrier()]
        return steps

    body += tree(b.max_)
    body += [b.let("m", b.load("sh", 0)), b.barrier(),
             b.let("e", b.exp(b.sub(v("x"), v("m")))), b.store("sh", LID, v("e")), b.barrier()]
    body += tree(b.add)
    body.append(b.store("out", LID, b.div(v("e"), b.load("sh", 0))))
    prog = b.program([b.read("in", 0, b.F32), b.workgroup("sh", 4, b.F32),
                      b.output("out", 1, b.F32, 4)], body, workgroup_size=(4, 1, 1))
    out = reference.run(prog, [np.array([0.5, -1.0, 1.5, 0.25], np.float32)], grid=(1, 1, 1))
    assert out["out"].view(np.uint32).tolist() == [0x3E58F07B, 0x3D419F74, 0x3F136CF3,
                                                  0x3E28F3DB]


def _region_generators(nodes) -> list[str]:  # noqa: ANN001 - a node tuple
    found: list[str] = []
    for node in nodes:
        if isinstance(node, Region):
            found.append(node.generator)
        found += _region_generators(getattr(node, "body", ()) or ())
    return found


def test_blake3_compression_regions_and_rotates() -> None:
    prog = blake3_compress_program()  # the library's program (vyre/programs/blake3.py)
    gens = _region_generators(prog.entry)
    assert gens.count("vyre-primitives::hash::blake3_g") == 7 * 8  # 8 G calls in each of 7 rounds
    for message, digest in (
        (b"", "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"),
        (b"abc", "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"),
    ):
        msg = np.frombuffer(message.ljust(64, b"\0"), dtype="<u4")
        params = np.array([0, 0, len(message), 11], np.uint32)
        out = reference.run_bytes(prog, [np.array(IV, np.uint32), msg, params], grid=(1, 1, 1))
        assert out["cv_out"].hex() == digest


def test_calls_are_inlined_from_callee_programs() -> None:
    # add3(x, y) = x + 3*y with scalar arguments; sum2(v) = v[0] + v[1] with a BufferRef.
    add3 = b.program([b.read("x", 0, b.U32), b.read("y", 1, b.U32), b.output("r", 2, b.U32, 1)],
                     [b.let("t", b.mul(b.load("y", 0), 3)),
                      b.store("r", 0, b.add(b.load("x", 0), b.var("t")))])
    sum2 = b.program([b.read("v", 0, b.U32), b.output("r", 1, b.U32, 1)],
                     [b.if_(b.eq(b.buf_len("v"), 4), [
                         b.store("r", 0, b.add(b.load("v", 0), b.load("v", 1)))])])
    prog = b.program([b.read("a", 0, b.U32), b.output("out", 1, b.U32, 4)], [
        b.let("t", 100),
        b.store("out", GID, b.add(b.call("add3", b.load("a", GID), 5), b.var("t"))),
        b.if_(b.eq(GID, 3), [b.store("out", 3, b.call("sum2", b.buffer_ref("a")))])],
        workgroup_size=(4, 1, 1))
    a = np.array([1, 2, 3, 4], np.uint32)
    out = reference.run(prog, [a], grid=(1, 1, 1), callees={"add3": add3, "sum2": sum2})
    assert out["out"].tolist() == [116, 117, 118, 3]
    with pytest.raises(reference.ReferenceExecutionError, match="recursive"):
        loop = b.program([b.read("x", 0, b.U32), b.output("r", 1, b.U32, 1)],
                         [b.store("r", 0, b.call("self", b.load("x", 0)))])
        caller = b.program([b.read("a", 0, b.U32), b.output("out", 1, b.U32, 4)],
                           [b.store("out", 0, b.call("self", b.load("a", 0)))])
        reference.run(caller, [a], grid=(1, 1, 1), callees={"self": loop})
