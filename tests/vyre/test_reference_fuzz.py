"""Arbitrary (mostly invalid) programs: the reference raises only its typed errors, never hangs."""

from __future__ import annotations

import contextlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vyre import ValidationError, ir, reference

from strategies import programs


def _inputs(program: ir.Program, size: int) -> dict[str, bytes]:
    return {d.name: bytes(range(size)) for d in program.buffers
            if d.access != ir.BufferAccess.WORKGROUP}


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(programs(), st.sampled_from([0, 4, 13, 64]), st.booleans(), st.booleans(),
       st.sampled_from([(1, 1, 1), (2, 1, 1), (1, 2, 2)]))
def test_arbitrary_programs_raise_only_typed_errors(program, size, validate, fast, grid) -> None:
    # Anything but these typed errors (IndexError, KeyError, RecursionError...) fails.
    with contextlib.suppress(reference.VyreReferenceError, ValidationError):
        reference.run_bytes(program, _inputs(program, size), grid=grid, validate=validate,
                            fast=fast, max_steps=3000, max_buffer_bytes=1 << 16)
