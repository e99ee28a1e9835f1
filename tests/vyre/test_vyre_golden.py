"""Golden vectors from vyre 0.7.2: byte-identical round trips and identical error texts."""

from __future__ import annotations

import json
import pathlib

import blake3
import pytest

from vyre import (
    EncodeError,
    Program,
    VersionMismatchError,
    WireValidationError,
    from_wire,
    to_wire,
)

GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "golden" / "vyre"
MANIFEST = json.loads((GOLDEN / "manifest.json").read_text())
VALID = sorted(n for n, e in MANIFEST.items() if e["kind"] == "valid")
DECODE_INVALID = sorted(
    n for n, e in MANIFEST.items() if e["kind"] == "invalid" and e.get("stage") == "decode"
)


@pytest.mark.parametrize("name", VALID)
def test_valid_blob_round_trips_byte_for_byte(name: str) -> None:
    entry = MANIFEST[name]
    blob = (GOLDEN / entry["file"]).read_bytes()
    assert len(blob) == entry["size"]
    assert blake3.blake3(blob[40:]).hexdigest() == entry["blake3_body_digest"]
    program = from_wire(blob)
    assert program.wire_version == 6
    assert to_wire(program) == blob


@pytest.mark.parametrize("name", DECODE_INVALID)
def test_invalid_blob_raises_reference_error(name: str) -> None:
    entry = MANIFEST[name]
    blob = (GOLDEN / entry["file"]).read_bytes()
    expected_text = (GOLDEN / (name + ".err")).read_text().strip()
    assert expected_text == entry["expected_error"]
    if entry["error_variant"] == "VersionMismatch":
        with pytest.raises(VersionMismatchError) as info:
            from_wire(blob)
        assert info.value.expected == entry["error_detail"]["expected"]
        assert info.value.found == entry["error_detail"]["found"]
    else:
        with pytest.raises(WireValidationError) as info:
            from_wire(blob)
        assert info.value.detail == entry["error_detail"]
    assert info.value.vyre_text == expected_text
    assert str(info.value).count("Fix:") == 1
    assert isinstance(info.value, ValueError)


def test_encode_stage_vector_zero_workgroup_axis() -> None:
    entry = MANIFEST["e01_zero_workgroup_axis"]
    with pytest.raises(EncodeError) as info:
        to_wire(Program(workgroup_size=(0, 1, 1)))
    assert info.value.detail == entry["error_detail"]
    assert info.value.vyre_text == entry["expected_error"]
    assert str(info.value).count("Fix:") == 1


def test_golden_programs_match_their_debug_dumps() -> None:
    k01 = from_wire((GOLDEN / "k01_xor_elementwise.vir").read_bytes())
    assert k01.workgroup_size == (4, 1, 1)
    assert [b.name for b in k01.buffers] == ["a", "b", "out"]
    assert k01.output_buffer_indices == (2,)
    v17 = from_wire((GOLDEN / "v17_indirect_async_trap.vir").read_bytes())
    assert v17.entry[1].count_offset == 81985529216486895
    assert v17.buffers[2].access.name == "WORKGROUP" and v17.buffers[2].kind.name == "SHARED"
    v05 = from_wire((GOLDEN / "v05_literals_f32_canonicalization.vir").read_bytes())
    bits = [n.value.bits for n in v05.entry[0].body]
    assert 0x80000000 not in bits
    assert all(b != 0x7F800001 for b in bits)
