"""Reference memory rules, f32 canonicalization, the input/output ABI and grid inference."""

from __future__ import annotations

import numpy as np
import pytest

from vyre import builder as b
from vyre import reference
from vyre.ir import BufferAccess, Scalar

GID = b.invocation_id(0)


def test_out_of_bounds_loads_read_zero_and_stores_are_dropped() -> None:
    prog = b.program(
        [b.read("u", 0, b.U32), b.read("f", 1, b.F32), b.read("i", 2, b.I32),
         b.read_write("rw", 3, b.U32), b.output("out", 4, b.U32, 4)],
        [b.store("out", 0, b.load("u", 4)),
         b.store("out", 1, b.cast(b.U32, b.load("f", 1000))),
         b.store("out", 2, b.cast(b.U32, b.load("i", 0xFFFFFFFF))),
         b.store("out", 3, b.buf_len("u")),
         b.store("rw", 2, 5), b.store("rw", 0xFFFFFFFF, 6)])
    out = reference.run(prog, {"u": np.arange(1, 5, dtype=np.uint32),
                               "f": np.ones(3, np.float32), "i": np.full(2, -1, np.int32),
                               "rw": np.full(2, 9, np.uint32)}, grid=(1, 1, 1))
    assert out["out"].tolist() == [0, 0, 0, 4]
    assert out["rw"].tolist() == [9, 9]


def test_buflen_counts_supplied_bytes_and_declared_outputs() -> None:
    prog = b.program([b.read("a", 0, b.U32), b.read("h", 1, b.U16),
                      b.output("out", 2, b.U32, 3)],
                     [b.store("out", 0, b.add(b.buf_len("a"), b.load("a", 4))),
                      b.store("out", 1, b.buf_len("h")), b.store("out", 2, b.buf_len("out"))])
    a = (np.arange(1, 6, dtype=np.uint32).tobytes() + b"\x07\x00")
    out = reference.run(prog, [a, bytes(7)], grid=(1, 1, 1))
    assert out["out"].tolist() == [5 + 5, 3, 3]


def test_f32_canonicalization_on_load_literal_arithmetic_and_store() -> None:
    bits = np.array([0x00000001, 0x80000010, 0x7FA00001, 0xFFC00123, 0x00800000],
                    dtype=np.uint32)
    prog = b.program(
        [b.read("f", 0, b.F32), b.output("out", 1, b.F32, 9)],
        [*[b.store("out", i, b.load("f", i)) for i in range(5)],
         b.store("out", 5, b.lit_f32_bits(0x7F800001)),
         b.store("out", 6, b.mul(b.load("f", 4), 0.5)),          # min normal / 2 -> +0
         b.store("out", 7, b.mul(b.load("f", 4), -0.25)),        # -> -0
         b.store("out", 8, b.sub(b.load("f", 2), 1.0))])         # NaN -> canonical NaN
    out = reference.run(prog, {"f": bits.view(np.float32)}, grid=(1, 1, 1))["out"]
    assert out.view(np.uint32).tolist() == [
        0, 0x80000000, 0x7FC00000, 0x7FC00000, 0x00800000, 0x7FC00000, 0, 0x80000000,
        0x7FC00000]


def test_u32_value_stored_into_f32_memory_keeps_its_bits_and_bool_loads_raw_word() -> None:
    prog = b.program(
        [b.read("bw", 0, b.BOOL), b.output("out", 1, b.U32, 2)],
        [b.store("out", 0, b.cast(b.U32, b.load("bw", 0))),
         b.store("out", 1, b.select(b.load("bw", 1), 7, 8))])
    out = reference.run(prog, {"bw": np.array([5, 0], np.uint32)}, grid=(1, 1, 1))
    assert out["out"].tolist() == [5, 8]
    raw = b.program([b.output("f", 0, b.F32, 2)],
                    [b.store("f", 0, 0x3FC00000), b.store("f", 1, 0x7F800001)])
    got = reference.run(raw, grid=(1, 1, 1), validate=False)["f"].view(np.uint32)
    assert got.tolist() == [0x3FC00000, 0x7FC00000]


def _abi_program():
    return b.program(
        [b.read("a", 0, b.U32), b.read_write("acc", 1, b.U32, 2),
         b.workgroup("scratch", 4, b.U32),
         b.output("out", 2, b.U32, 8).with_(output_byte_range=(4, 12))],
        [b.if_(b.lt(GID, 4), [b.store("out", GID, b.add(b.load("a", GID), 1))]),
         b.if_(b.eq(GID, 0), [b.store("acc", 1, 99)])], workgroup_size=(4, 1, 1))


def test_input_abi_dict_logical_and_legacy_lists() -> None:
    prog = _abi_program()
    a = np.array([10, 20, 30, 40], np.uint32)
    acc = np.array([1, 2], np.uint32)
    by_name = reference.run_bytes(prog, {"a": a, "acc": acc}, grid=(1, 1, 1))
    logical = reference.run_bytes(prog, [a, acc], grid=(1, 1, 1))
    legacy = reference.run_bytes(prog, [a, acc, b"ignored"], grid=(1, 1, 1))
    assert by_name == logical == legacy
    assert list(by_name) == ["acc", "out"]
    assert np.frombuffer(by_name["acc"], np.uint32).tolist() == [1, 99]
    assert np.frombuffer(by_name["out"], np.uint32).tolist() == [21, 31]  # bytes 4..12


@pytest.mark.parametrize("inputs,match", [
    ({"a": np.zeros(4, np.uint32)}, "missing input"),
    ({"a": np.zeros(4, np.uint32), "acc": np.zeros(1, np.uint32)}, "requires at least"),
    ({"a": b"", "acc": bytes(8), "nope": b""}, "unknown"),
    ([b""], "inputs given"),
    ({"a": "text", "acc": bytes(8)}, "not bytes"),
])
def test_bad_inputs_raise_typed_errors(inputs, match) -> None:
    with pytest.raises(reference.ReferenceInputError, match=match):
        reference.run_bytes(_abi_program(), inputs, grid=(1, 1, 1))


def test_grid_inference_matches_the_reference_rule() -> None:
    prog = b.program([b.read("a", 0, b.U32), b.output("out", 1, b.U32, 10)],
                     [b.store("out", GID, b.load("a", GID))], workgroup_size=(4, 1, 1))
    assert reference.reference_grid(prog, [np.zeros(100, np.uint32)]) == (3, 1, 1)
    two_d = b.program([b.output("out", 0, b.U32, 100)], [b.store("out", GID, 1)],
                      workgroup_size=(4, 4, 1))
    assert reference.reference_grid(two_d) == (3, 3, 1)  # ceil(sqrt(ceil(100/16)))
    # Atomics force the full input span: 100 inputs / 4 lanes = 25 workgroups.
    atom = b.program([b.read("a", 0, b.U32), b.output("out", 1, b.U32, 10)],
                     [b.let("o", b.atomic_add("out", 0, 1))], workgroup_size=(4, 1, 1))
    assert reference.reference_grid(atom, [np.zeros(100, np.uint32)]) == (25, 1, 1)
    out = reference.run(prog, [np.arange(100, dtype=np.uint32)])
    assert out["out"].tolist() == list(range(10))


def test_async_load_and_wait_copy_bytes() -> None:
    prog = b.program(
        [b.read("src", 0, b.U32), b.output("dst", 1, b.U32, 4)],
        [b.ir.AsyncLoad("src", "dst", b.expr(4), b.expr(12), "t"), b.ir.AsyncWait("t")])
    out = reference.run(prog, {"src": np.array([1, 2, 3], np.uint32)}, grid=(1, 1, 1))
    assert out["dst"].tolist() == [2, 3, 0, 0]


def test_world_collectives_are_lowered_before_running() -> None:
    prog = b.program(
        [b.read("shard", 0, b.U32), b.read_write("full", 1, b.U32, 4)],
        [b.ir.AllGather("shard", "full", 0), b.ir.AllReduce("full", b.ir.CollectiveOp.SUM, 0)],
        workgroup_size=(4, 1, 1))
    out = reference.run(prog, {"shard": np.array([7, 8], np.uint32),
                               "full": np.full(4, 5, np.uint32)}, grid=(1, 1, 1))
    assert out["full"].tolist() == [7, 8, 5, 5]


def test_run_returns_typed_arrays() -> None:
    prog = b.program([b.output("o", 0, b.F32, 2)], [b.store("o", 0, 1.5)])
    out = reference.run(prog, grid=(1, 1, 1))["o"]
    assert out.dtype == np.float32 and out.tolist() == [1.5, 0.0]
    assert prog.buffers[0].access == BufferAccess.READ_WRITE
    assert prog.buffers[0].element == Scalar.F32
