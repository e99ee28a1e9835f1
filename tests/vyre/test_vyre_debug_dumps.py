"""Decoded golden programs print exactly like vyre 0.7.2's Debug dumps (``NAME.txt``)."""

from __future__ import annotations

import pathlib

import pytest

from vyre import from_wire

from rust_debug import program_debug, render

GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "golden" / "vyre"
BLOBS = sorted(p.stem for p in GOLDEN.glob("[kv]*.vir"))
# Dumps show literals before the encoder canonicalizes them (README: "Program dumps").
CANONICALIZED = {("-0.0", "0.0"), ("1e-45", "0.0")}


@pytest.mark.parametrize("name", BLOBS)
def test_decoded_program_matches_reference_debug_dump(name: str) -> None:
    expected = (GOLDEN / f"{name}.txt").read_text().rstrip("\n").splitlines()
    got = render(program_debug(from_wire((GOLDEN / f"{name}.vir").read_bytes()))).splitlines()
    assert len(got) == len(expected)
    diffs = {(e.strip(" ,"), g.strip(" ,")) for e, g in zip(expected, got, strict=True) if e != g}
    if name.startswith("v05"):
        assert diffs == CANONICALIZED
    else:
        assert diffs == set()


def test_encode_stage_dump_describes_the_refused_program() -> None:
    from vyre import Program

    expected = (GOLDEN / "e01_zero_workgroup_axis.txt").read_text().rstrip("\n")
    assert render(program_debug(Program(workgroup_size=(0, 1, 1)))) == expected
