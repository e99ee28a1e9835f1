"""Golden renderings of lowered vyre known-answer programs in every dialect.

A change to the lowering or to a renderer shows up here as a diff. Regenerate after an
intended change with ``UPDATE_EXPECTED=1 pytest tests/null/test_vyre_render.py`` and review.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from hurray_gpu.dialect import DIALECTS, render
from vyre import builder as b
from vyre import from_wire
from vyre.lower import lower
from vyre.programs import matmul_tiled_program

GOLDEN = Path(__file__).parents[1] / "golden" / "vyre"
EXPECTED = Path(__file__).parent / "expected_vyre"
PROGRAMS = ("k03_loop_sum", "k05_bit_unops", "k06_atomic_histogram", "k08_minmax_saturating",
            "fma_f32", "matmul_tiled", "u64_copy")
CASES = [(p, d) for p in PROGRAMS for d in sorted(DIALECTS)]


def _fma_f32():  # noqa: ANN202 - a Program
    """Fma, which must round once everywhere (GLSL: the integer emulation helper)."""
    i = b.invocation_id(0)
    return b.program([b.read("x", 0, b.F32), b.output("y", 1, b.F32, 4)],
                     [b.store("y", i, b.fma(b.load("x", i), b.load("x", i), b.lit_f32(-1.0)))],
                     workgroup_size=(4, 1, 1))


def _u64_copy():  # noqa: ANN202 - a Program
    """A u64 buffer copied as u32 words, with a u64 comparison and a cast to u32."""
    i = b.invocation_id(0)
    x = b.load("x", i)
    return b.program([b.read("x", 0, b.U64), b.read_write("y", 1, b.U64),
                      b.read_write("z", 2, b.U32)],
                     [b.store("y", i, x), b.store("z", i, b.cast(b.U32, b.lt(x, b.load("y", i))))],
                     workgroup_size=(4, 1, 1))


def _kernel(name: str):  # noqa: ANN202 - a KernelDef
    if name == "fma_f32":
        return lower(_fma_f32()).kernel
    if name == "matmul_tiled":  # barriers and workgroup arrays (host C: region splitting)
        return lower(matmul_tiled_program(32)).kernel
    if name == "u64_copy":
        return lower(_u64_copy()).kernel
    return lower(from_wire((GOLDEN / f"{name}.vir").read_bytes())).kernel


@pytest.mark.parametrize(("program", "dialect"), CASES, ids=[f"{p}-{d}" for p, d in CASES])
def test_vyre_render_matches_expected(program: str, dialect: str) -> None:
    path = EXPECTED / f"{program}.{DIALECTS[dialect].extension}"
    got = render(_kernel(program), dialect)
    if os.environ.get("UPDATE_EXPECTED") == "1":
        path.write_text(got)
    want = path.read_text()
    diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                        str(path), "rendered"))
    assert got == want, f"rendered {dialect} source of lowered {program} changed:\n{diff}"


def test_vyre_render_expected_files_are_all_used() -> None:
    exts = {r.extension for r in DIALECTS.values()}
    for path in EXPECTED.iterdir():
        name, ext = path.name.rsplit(".", 1)
        assert ext in exts and name in PROGRAMS, f"stale expected file {path.name}"


def test_vyre_render_lowering_is_deterministic() -> None:
    assert _kernel("k06_atomic_histogram").body == _kernel("k06_atomic_histogram").body
