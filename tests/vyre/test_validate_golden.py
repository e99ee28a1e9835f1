"""The validator against the golden vectors' recorded ``Program::validate`` verdicts.

The manifest's ``semantic_validation_error`` lists every error the reference reported, with
its code and location; both must match exactly (warnings are not part of that list).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import vyre
from vyre.ir import Program
from vyre.validate import ValidationError, errors_of, validate

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "vyre"
MANIFEST = json.loads((GOLDEN / "manifest.json").read_text())
VALID = sorted(name for name, entry in MANIFEST.items() if entry["kind"] == "valid")
_ENTRY = re.compile(
    r'code: ValidationCode\("(V\d+)"\), phase: (\w+), location: '
    r"(?:Traversal \{ ordinal: (\d+) \}|Node\((\d+)\)|Expression \{ node: (\d+), depth: \d+ \}"
    r"|(Program))"
)


def _decode(name: str) -> Program:
    return vyre.from_wire((GOLDEN / MANIFEST[name]["file"]).read_bytes())


def _expected(name: str) -> list[tuple[str, str, int | None]]:
    text = MANIFEST[name].get("semantic_validation_error") or ""
    found = []
    for code, phase, ordinal, node, expr_node, _program in _ENTRY.findall(text):
        index = ordinal or node or expr_node
        found.append((code, phase, int(index) if index else None))
    return found


def test_manifest_has_validation_verdicts() -> None:
    assert len(VALID) >= 28
    assert all("semantic_validation_ok" in MANIFEST[name] for name in VALID)
    # every recorded error parses: the count of codes equals the count of parsed entries
    for name in VALID:
        text = MANIFEST[name].get("semantic_validation_error") or ""
        assert len(_expected(name)) == text.count("ValidationCode(")


@pytest.mark.parametrize("name", VALID)
def test_golden_program_validates_like_the_reference(name: str) -> None:
    entry = MANIFEST[name]
    diagnostics = validate(_decode(name))
    errors = errors_of(diagnostics)
    assert (not errors) == entry["semantic_validation_ok"]
    assert [(d.code, d.phase, d.node) for d in errors] == _expected(name)


@pytest.mark.parametrize("name", [n for n in VALID if not MANIFEST[n]["semantic_validation_ok"]])
def test_golden_rejection_raises(name: str) -> None:
    with pytest.raises(ValidationError) as info:
        validate(_decode(name), raise_on_error=True)
    assert info.value.errors[0].code == _expected(name)[0][0]
    assert "Fix:" in str(info.value)


def test_known_answer_programs_are_clean_including_warnings() -> None:
    for name in VALID:
        if name.startswith("k"):
            assert validate(_decode(name)) == [], name


@pytest.mark.parametrize("name", [n for n in VALID if not MANIFEST[n]["semantic_validation_ok"]])
def test_messages_match_the_reference_causes(name: str) -> None:
    text = MANIFEST[name]["semantic_validation_error"]
    causes = re.findall(r'cause: "((?:[^"\\]|\\.)*)"', text)
    errors = errors_of(validate(_decode(name)))
    assert [d.message.split(". Fix: ")[0] for d in errors] == [c.rstrip(".") for c in causes]
    for diagnostic in errors:
        assert diagnostic.message.rstrip().endswith(".")


def test_narrowing_casts_are_warnings() -> None:
    warnings = [d for d in validate(_decode("v12_casts_all_datatypes")) if not d.is_error]
    # u32 -> u8, u16, i8, i16 narrow; u32 -> i32/u64/i64 do not
    assert [(d.code, d.node) for d in warnings] == [("V035", 1), ("V035", 2), ("V035", 4),
                                                    ("V035", 5)]
