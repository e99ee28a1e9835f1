"""The reference interpreter reproduces every golden known-answer vector byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vyre import from_wire, reference

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "vyre"
KATS = sorted(GOLDEN.glob("*.kat.json"))


def test_there_are_golden_kats() -> None:
    assert len(KATS) >= 8


@pytest.mark.parametrize("path", KATS, ids=lambda p: p.name.split(".")[0])
def test_kat_reproduces_exactly(path: Path) -> None:
    kat = json.loads(path.read_text())
    program = from_wire((GOLDEN / kat["program"]).read_bytes())
    assert list(program.workgroup_size) == kat["workgroup_size"]
    inputs = {i["buffer"]: bytes.fromhex(i["hex"]) for i in kat["inputs"]}
    out = reference.run_bytes(program, inputs, grid=tuple(kat["grid_workgroups"]))
    assert kat["error"] is None
    assert {k: v.hex() for k, v in out.items()} == {o["buffer"]: o["hex"] for o in kat["outputs"]}


@pytest.mark.parametrize("path", KATS[:2], ids=lambda p: p.name.split(".")[0])
def test_run_kat_helper_reads_the_vector_file(path: Path) -> None:
    kat = json.loads(path.read_text())
    out = reference.run_kat(path)
    assert {k: v.hex() for k, v in out.items()} == {o["buffer"]: o["hex"] for o in kat["outputs"]}


def test_kats_pass_in_legacy_list_mode_and_from_wire_bytes() -> None:
    path = GOLDEN / "k06_atomic_histogram.kat.json"
    kat = json.loads(path.read_text())
    blobs = [bytes.fromhex(i["hex"]) for i in kat["inputs"]]
    out = reference.run_bytes((GOLDEN / kat["program"]).read_bytes(), blobs,
                              grid=tuple(kat["grid_workgroups"]))
    assert out["hist"].hex() == kat["outputs"][0]["hex"]
