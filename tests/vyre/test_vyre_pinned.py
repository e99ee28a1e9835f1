"""Rust-pinned and derived vectors of the vyre 0.7.2 wire format, built with the builder API."""

from __future__ import annotations

import blake3
import pytest

from vyre import builder as b
from vyre import from_wire, ir, to_wire

OUT = b.read_write("out", 0, b.U32, 1)
OUT_O = b.output("out", 0, b.U32, 1)


def _loop_add(stop: int) -> list[ir.Node]:
    return [
        b.let("acc", 0),
        b.loop("i", 0, stop, [b.assign("acc", b.add(b.var("acc"), b.var("i")))]),
    ]


PINNED = {
    "trivial_const": (
        b.program([OUT], [b.store("out", 0, 42)]), 197,
        "22325167b0cb84193a1d5cfe581e9e2f95fd5721a5cf3f4fd2fdd80d49dcf062",
    ),
    "one_op_add": (
        b.program([OUT], [b.store("out", 0, b.add(1, 2))]), 204,
        "c202412743128a5f2b944de76a272503b4244e3b009b440613e74cef56cd22ed",
    ),
    "loop_add": (
        b.program([OUT], [*_loop_add(4), b.store("out", 0, b.var("acc"))]), 257,
        "42042606253dd42ac84317e40997166aa3fb704c4a05ead4cce851f312ee6b4e",
    ),
    "composed_nested": (
        b.program([OUT], [b.region("outer", [b.region("inner", [b.store("out", 0, 7)])])]), 200,
        "17fe6fe62d2b37144bf29d8994412572e7b7a6dbf0f93c137b89dc413b496983",
    ),
    "region_chain": (
        b.program([OUT], [b.region("vyre.intrinsics.math.accum", [
            *_loop_add(3),
            b.let("dial", b.call("vyre-conform.test.identity_u32", b.var("acc"))),
            b.store("out", 0, b.var("dial")),
        ])]), 324,
        "984aec1c4b0ffb081687e23fad358cc2f3645f85c5e85d7c0f9cbe1d113e6b49",
    ),
    "empty": (
        b.program([], []), 137,
        "9d1c2e9adf1489c390d879a31a3343a213a3122035a3c23ed12d4be026fcc641",
    ),
    "empty_program": (
        b.program([OUT_O], [b.return_()]), 180,
        "efe031a75d543a878fb4771b1597740b6b3fbdb4bd9f7f42ee57cf05afe06ef5",
    ),
    "barrier_only": (
        b.program([OUT_O], [b.barrier(), b.return_()], workgroup_size=(64, 1, 1)), 182,
        "7ceff27162aeadea556c4b0e21143475b5ac948c54e80072fa0dec2205205644",
    ),
    "indirect_dispatch": (
        b.program([b.read("counts", 0, b.U32)], [ir.IndirectDispatch("counts", 16)],
                  workgroup_size=(64, 1, 1)), 200,
        "fd60fe1bed237c90fe76d2150bba6f2a359707d7829ffc1f3fd6c93e2d2ee52f",
    ),
    "async_load_wait": (
        b.program([OUT_O], [
            ir.AsyncLoad("__legacy_src__", "__legacy_dst__", b.lit_u32(0), b.lit_u32(0),
                         "tile-0"),
            ir.AsyncWait("tile-0"),
        ]), 247,
        "1337c475d345dfdc36a1a2d259a6a49cc316e9a0929952f65efca4c330e70410",
    ),
    "literal_u32_store": (
        b.program([OUT_O], [b.store("out", 0, 42), b.return_()]), 198,
        "c591bff7ecb4e1703ec0b8bc2dacc48c530ffec22aff238c2acda35c2602b0c5",
    ),
    "literal_bool": (
        b.program([OUT_O], [b.let("b", True), b.return_()]), 188,
        "d48b5a2393dd8b12baad1af7472cbafbc9a81be2567d659bd1b075ce74c078ec",
    ),
    "bin_op_add": (
        b.program([OUT_O], [b.store("out", 0, b.add(1, 2)), b.return_()]), 205,
        "3a31ba4035dbf71fd8ad8e472801cef80edd2519ffb0d75a927e23265f8b4dd3",
    ),
    "if_then_else": (
        b.program([OUT_O], [
            b.if_(True, [b.store("out", 0, 1)], [b.store("out", 0, 0)]), b.return_(),
        ]), 227,
        "34ad33845941cf4090d0d5d51e6ccaf7ce2694c3d4020e8bbe053d402d35dab9",
    ),
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_pinned_vector(name: str) -> None:
    program, length, digest = PINNED[name]
    blob = to_wire(program)
    assert len(blob) == length
    assert blake3.blake3(blob).hexdigest() == digest
    assert from_wire(blob) == program


def test_trivial_const_annotated_bytes() -> None:
    blob = to_wire(PINNED["trivial_const"][0])
    assert blob[:8] == bytes.fromhex("5659524506000400")
    assert blob[8:40].hex() == "cf84aacf1025cbc96b8c7d114a3646864473fd11f6143bb6690ff093de665599"
    assert blob[40:63] == b"\x02\x15vyre.program.metadata"
    assert blob.endswith(bytes.fromhex("0100000101000101060000000000010100"))


def test_region_chain_with_head_op_id() -> None:
    program = b.program([OUT], [b.region("vyre.intrinsics.math.accum", [
        *_loop_add(3),
        b.let("dial", b.call("vyre_conform_test::identity_u32", b.var("acc"))),
        b.store("out", 0, b.var("dial")),
    ])])
    blob = to_wire(program)
    assert len(blob) == 325
    assert blake3.blake3(blob).hexdigest() == (
        "20833f6b55d44af16092bd1eab94eb5a522ce1b495dab15f7d08500800fc02e8"
    )


def test_output_set_bytes_for_mixed_access() -> None:
    program = b.program([
        b.read("input", 0, b.U32, 4), b.output("out", 1, b.U32, 4),
        b.read_write("scratch_out", 2, b.U32, 4),
        ir.BufferDecl.storage("write_only", 3, ir.BufferAccess.WRITE_ONLY, b.U32, 4),
    ], [b.return_()], workgroup_size=(64, 1, 1))
    assert to_wire(program).endswith(bytes.fromhex("03010203"))
