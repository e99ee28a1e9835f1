"""vyre.fingerprint (blake3 of the canonical wire bytes, as vyre 0.7.2) and structural_eq."""

from __future__ import annotations

import blake3

from vyre import builder as b
from vyre import fingerprint, ir, to_wire
from vyre.wire.fingerprint import buffer_canonical_key, canonicalized, structural_eq

A = b.read("a", 0, b.U32, 4)
B = b.read_write("b", 1, b.U32, 4)


def test_fingerprint_of_canonical_program_is_blake3_of_blob() -> None:
    program = b.program([A, B], [b.store("b", 0, b.add(b.var("x"), 1))])
    assert canonicalized(program) == program
    assert fingerprint(program) == blake3.blake3(to_wire(program)).digest()


def test_buffer_order_does_not_matter() -> None:
    body = [b.store("b", 0, 1)]
    assert fingerprint(b.program([A, B], body)) == fingerprint(b.program([B, A], body))


def test_canonical_key_compares_little_endian_length_first() -> None:
    short, longer = b.read("zz", 0, b.U32), b.read("a" * 256, 0, b.U32)
    assert buffer_canonical_key(longer) < buffer_canonical_key(short)
    program = canonicalized(ir.Program((short, longer)))
    assert [x.name for x in program.buffers] == ["a" * 256, "zz"]


def test_commutative_operands_are_ordered() -> None:
    x = b.var("x")
    lit_left = b.program([], [b.let("r", b.add(1, x))])
    lit_right = b.program([], [b.let("r", b.add(x, 1))])
    assert fingerprint(lit_left) == fingerprint(lit_right)
    assert fingerprint(b.program([], [b.let("r", b.sub(1, x))])) != fingerprint(
        b.program([], [b.let("r", b.sub(x, 1))]))
    both = b.program([], [b.let("r", b.bit_xor(b.var("y"), x))])
    swapped = b.program([], [b.let("r", b.bit_xor(x, b.var("y")))])
    assert fingerprint(both) == fingerprint(swapped)
    # Add of two non-literals keeps its order.
    assert fingerprint(b.program([], [b.let("r", b.add(b.var("y"), x))])) != fingerprint(
        b.program([], [b.let("r", b.add(x, b.var("y")))]))
    lits = canonicalized(b.program([], [b.let("r", b.mul(9, 2))]))
    assert lits.entry[0].body[0].value == b.mul(2, 9)


def test_blocks_without_lets_are_spliced() -> None:
    flat = b.program([B], [b.store("b", 0, 1), b.store("b", 1, 2)])
    nested = b.program([B], [b.block(b.store("b", 0, 1), b.block()), b.store("b", 1, 2)])
    assert fingerprint(flat) == fingerprint(nested)
    scoped = b.program([B], [b.block(b.let("t", 1)), b.store("b", 1, 2)])
    assert fingerprint(scoped) != fingerprint(b.program([B], [b.let("t", 1), b.store("b", 1, 2)]))


def test_metadata_changes_change_the_fingerprint() -> None:
    base = b.program([A], [])
    assert fingerprint(base) != fingerprint(base.with_(workgroup_size=(2, 1, 1)))
    assert fingerprint(base) != fingerprint(base.with_(non_composable_with_self=True))
    linear = b.program([A.with_(linear_type=ir.LinearType.LINEAR)], [])
    assert fingerprint(base) != fingerprint(linear)


def test_unencodable_program_gets_fallback_digest() -> None:
    bad = ir.Program(workgroup_size=(0, 1, 1))
    assert len(fingerprint(bad)) == 32
    assert fingerprint(bad) != fingerprint(ir.Program(workgroup_size=(0, 2, 1)))


def test_structural_eq_ignores_buffer_order_only() -> None:
    body = [b.store("b", 0, 1)]
    assert structural_eq(b.program([A, B], body), b.program([B, A], body))
    assert b.program([A, B], body) != b.program([B, A], body)
    assert not structural_eq(b.program([A, B], body), b.program([A, B], [b.store("b", 0, 2)]))
    assert not structural_eq(b.program([A], body), b.program([A, B], body))
