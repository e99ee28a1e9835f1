"""``python -m vyre inspect|run`` (the same commands as ``hurray-gpu vyre``), and what
``run --json`` prints: every output's bytes in hex and its values as the buffer's element type."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import vyre
from tests._support import stable_rng
from vyre import builder as b
from vyre.cli import main

ROOT = Path(__file__).resolve().parents[2]
VYRE = ROOT / "tests" / "golden" / "vyre"
K02_A = "000000000100000002000000030000006400000056555555ffffffff07000000"
K02_B = "0a000000140000001e00000028000000320000000100000002000000ffffffff"
K02_OUT = "0a0000001700000024000000310000005e01000003000000ffffffff14000000"


def test_python_m_vyre_run_exists_and_matches_the_kat() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "vyre", "run", str(VYRE / "k02_add_mul.vir"),
                           "--kat", str(VYRE / "k02_add_mul.kat.json")],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert "kat out: match" in done.stdout and "reference interpreter" in done.stdout
    done = subprocess.run([sys.executable, "-m", "vyre", "inspect", str(VYRE / "k02_add_mul.vir")],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300,
                          check=False)
    assert done.returncode == 0 and "decode: ok" in done.stdout, done.stderr


def test_run_json_has_hex_and_typed_values(capsys: pytest.CaptureFixture) -> None:
    prog = str(VYRE / "k02_add_mul.vir")
    assert main(["run", prog, "--grid", "2,1,1", "--json", "--inputs", f"a=hex:{K02_A}",
                 f"b=hex:{K02_B}", f"out=hex:{'00' * 32}"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["outputs"] == {"out": K02_OUT}
    assert result["dtypes"] == {"out": "uint32"}
    assert result["values"]["out"] == np.frombuffer(bytes.fromhex(K02_OUT), "<u4").tolist()
    assert result["values"]["out"][6] == 0xFFFFFFFF  # unsigned, not -1


def test_run_json_values_of_float_and_signed_buffers(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture) -> None:
    """f32 outputs are floats (NaN and infinities spelled as strings, which JSON can hold),
    i32 outputs are signed; both equal the reference interpreter's arrays."""
    prog = b.program(
        [b.read("x", 0, b.F32), b.output("y", 1, b.F32, 8), b.read_write("n", 2, b.I32, 8)],
        [b.let("i", b.invocation_id(0)),
         b.store("y", b.var("i"), b.mul(b.load("x", b.var("i")), b.load("x", b.var("i")))),
         b.store("n", b.var("i"), b.sub(b.lit_i32(0), b.cast(b.I32, b.var("i"))))],
        workgroup_size=(8, 1, 1))
    path = tmp_path / "sq.vir"
    path.write_bytes(vyre.to_wire(prog))
    x = stable_rng("vyre-cli-json").standard_normal(8).astype(np.float32)
    x[:3] = [np.inf, np.nan, 3.0e30]  # inf, nan, and a square that overflows to inf
    assert main(["run", str(path), "--json", "--grid", "1,1,1",
                 "--inputs", f"x=hex:{x.tobytes().hex()}", f"n=hex:{'00' * 32}"]) == 0
    result = json.loads(capsys.readouterr().out)
    want = vyre.reference.run(prog, {"x": x.tobytes(), "n": bytes(32)}, grid=(1, 1, 1))
    assert result["dtypes"] == {"y": "float32", "n": "int32"}
    assert result["values"]["y"][:3] == ["inf", "nan", "inf"]
    assert result["values"]["y"][3:] == want["y"][3:].tolist()
    assert result["values"]["n"] == want["n"].tolist() == [0, -1, -2, -3, -4, -5, -6, -7]
    assert bytes.fromhex(result["outputs"]["y"]) == want["y"].tobytes()


def test_errors_are_one_line_with_a_fix(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["run", str(tmp_path / "none.vir")]) == 2  # an I/O error, as for inspect
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "Fix:" in err and "\n" not in err
    assert main(["run", str(VYRE / "k02_add_mul.vir"), "--inputs", "a"]) == 1
    err = capsys.readouterr().err.strip()
    assert "NAME=SRC" in err and "Fix:" in err
