"""``hurray-gpu convert``: a summary table cut to the terminal, JSON, one-line refusals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.cli import main
from hurray_gpu.cli.convert import report
from hurray_gpu.io.convert import ConvertResult
from tests._support import require_peer
from tests.hurray._convert_samples import write_gguf


@pytest.fixture()
def model(tmp_path: Path) -> Path:
    write_gguf(tmp_path / "m.gguf", [("w", "Q4_0", (3, 64)), ("n", "F32", (64,))])
    return tmp_path / "m.gguf"


def test_convert_prints_a_table_and_writes_the_file(model: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "m.hrry"
    assert main(["convert", str(model), str(out), "--device", "reference"]) == 0
    text = capsys.readouterr().out
    # The heading wraps to the console's width where the temporary paths' length puts it
    # (a break may fall inside "2 tensors"): compare its words, not its lines.
    words = " ".join(text.split())
    assert "(gguf)" in words and "2 tensors" in words and "checked on reference" in words
    assert "Q4_0" in text and "int4 per-block affine, block 32" in text
    with hg.open_file(out) as f:
        assert f.names == ["w", "n"] and f.read("w").shape == (3, 64)


def test_an_existing_output_needs_force(model: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "m.hrry"
    out.write_bytes(b"keep")
    assert main(["convert", str(model), str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "--force" in err and out.read_bytes() == b"keep"
    assert main(["convert", str(model), str(out), "--force", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["tensors"] == 2 and data["kinds"] == {"Q4_0": 1, "F32": 1}


def test_a_refusal_is_one_line_with_fix(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    gguf = require_peer("gguf")
    writer = gguf.GGUFWriter(str(tmp_path / "k.gguf"), "llama")
    writer.add_tensor("blk.0.attn_q", np.zeros((1, 66), np.uint8),
                      raw_dtype=gguf.GGMLQuantizationType.IQ2_XXS)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    assert main(["convert", str(tmp_path / "k.gguf"), str(tmp_path / "k.hrry")]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "'blk.0.attn_q'" in err and "type IQ2_XXS" in err
    assert "lattice codebook" in err and "Fix:" in err
    assert not (tmp_path / "k.hrry").exists()


def test_report_lines_fit_the_terminal() -> None:
    result = ConvertResult("gguf", 3, 10**9, 10**9, 2.0, {"Q4_0": 3},
                           {"Q4_0": "int4 per-block affine, block 32"})
    text = report(result, "/a/very/long/path/to/a/model.gguf", "out.hrry", width=40)
    assert all(len(line) <= 40 for line in text.splitlines())
    assert "500 MB/s" in report(result, "m.gguf", "o.hrry", width=200)
