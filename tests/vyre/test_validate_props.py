"""Property tests: the validator is total on arbitrary IR and stable across the wire codec."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from vyre import from_wire, to_wire
from vyre.ir import Program
from vyre.validate import Diagnostic, ValidationError, errors_of, validate

from strategies import programs

CODE = re.compile(r"^V\d{3}$")


def _program_strategy() -> st.SearchStrategy[Program]:
    if programs is not None:
        return programs(canonical_f32=True)
    return st.just(Program.wrapped((), (1, 1, 1), ()))


@settings(max_examples=30, deadline=None)
@given(_program_strategy())
def test_validate_is_total_and_well_formed(program: Program) -> None:
    found = validate(program)
    for d in found:
        assert isinstance(d, Diagnostic)
        assert CODE.match(d.code)
        assert d.severity in ("error", "warning")
        assert " Fix: " in d.message
        assert d.location
    errors = errors_of(found)
    try:
        validate(program, raise_on_error=True)
    except ValidationError as exc:
        assert errors and exc.errors[0] == errors[0]
    else:
        assert not errors


@settings(max_examples=20, deadline=None)
@given(_program_strategy())
def test_wire_round_trip_keeps_the_verdict(program: Program) -> None:
    decoded = from_wire(to_wire(program), preserve_unknown=True)
    assert validate(decoded) == validate(program)
