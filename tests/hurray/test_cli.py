"""Tests of ``hurray-gpu inspect`` (hurray_gpu.cli.main)."""

from __future__ import annotations

import json
import os
import re
import runpy
import shutil

import numpy as np
import pytest

from hurray_gpu.cli import main
from hurray_gpu.io import StreamWriter, UInt64, save

from _io_samples import sample_tensors

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "golden", "hurray", "descriptors")
EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "make_sample.py")


@pytest.fixture
def sample_file(tmp_path):
    path = tmp_path / "s.hrry"
    save(path, sample_tensors(), metadata={"producer": "test", "n": UInt64(3), "ids": [1, 2]})
    return path


def test_inspect_file_text(sample_file, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["inspect", str(sample_file)]) == 0
    out = capsys.readouterr().out
    assert "hrry_file" in out and "alignment 4096" in out
    assert re.search(r"\nproducer +string +'test'\n", out)
    assert re.search(r"\nn +u64 +3\n", out)
    assert "weights: float32 [2, 3] row_major @64 data@4096+24" in out
    assert "q: int8 [4, 3] row_major quantized=per_channel_affine" in out
    assert "buffer 2 (zero_points): 16 B, align 64, cpu, producer_synced, standard" in out
    assert "part: float32 [2, 4] composite (partition, 2 members)" in out
    assert "part/1: float32 [2, 2] row_major" in out


def test_inspect_file_json(sample_file, capsys) -> None:
    assert main(["inspect", str(sample_file), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["kind"] == "hrry_file" and report["index"]["entries"] == 7
    assert report["metadata"]["ids"] == {"type": "array<i64>", "value": [1, 2]}
    names = [t["name"] for t in report["tensors"]]
    assert names == ["weights", "flags", "q", "part", "empty"]
    q = report["tensors"][2]
    assert q["quantization"]["scheme"] == "per_channel_affine"
    assert [b["role"] for b in q["buffers"]] == ["data", "scales", "zero_points"]
    assert q["file"]["data_offset"] == 12288
    part = report["tensors"][3]
    assert part["layout"]["member_count"] == 2
    assert part["members"][1]["shard"] == {"parent_shape": [2, 4], "shard_offset": [0, 2]}


def test_inspect_stream_and_descriptor(tmp_path, capsys, monkeypatch) -> None:
    stream = tmp_path / "s.bin"
    with StreamWriter(stream) as w:
        for t in sample_tensors().values():
            w.write(t)
    assert main(["inspect", str(stream), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["kind"] == "stream" and len(report["tensors"]) == 5
    assert report["tensors"][1]["stream_offset"] == 61 + 24
    morton = os.path.join(GOLDEN, "morton_f32_4x4.bin")
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["inspect", morton]) == 0
    out = capsys.readouterr().out
    assert "descriptor: float32 [4, 4] morton" in out and "layout: bits [2, 2]" in out
    assert main(["inspect", morton, "--kind", "stream"]) == 1
    assert "truncated" in capsys.readouterr().err


def test_inspect_reports_first_problem(sample_file, tmp_path, capsys) -> None:
    data = bytearray(sample_file.read_bytes())
    data[64 + 15] = 0x30  # first tensor's layout tag -> reserved
    bad = tmp_path / "bad.hrry"
    bad.write_bytes(bytes(data))
    assert main(["inspect", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "layout" in err and "byte offset 79" in err
    assert "Fix:" in err
    assert main(["inspect", str(tmp_path / "missing.hrry")]) == 1
    assert "No such file" in capsys.readouterr().err
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    assert main(["inspect", str(empty)]) == 0  # an empty stream is valid and empty
    assert "tensors (0)" in capsys.readouterr().out


def test_make_sample_example(tmp_path, capsys) -> None:
    target = tmp_path / "sample.hrry"
    shutil.copy(EXAMPLE, tmp_path / "make_sample.py")
    module = runpy.run_path(str(tmp_path / "make_sample.py"))
    module["main"](str(target))
    assert main(["inspect", str(target), "--json"]) == 0
    report = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    dtypes = {t["dtype"] for t in report["tensors"]}
    assert {"float32", "bfloat16", "float8_e4m3", "float4_e2m1", "bool", "int64",
            "int4"} <= dtypes
    assert np.isclose(report["metadata"]["learning_rate"]["value"], 3e-4)


def test_usage_errors_return_codes(capsys) -> None:
    assert main([]) == 2
    assert main(["inspect", "--help"]) == 0
    assert "--json" in capsys.readouterr().out


def test_devices_command_lists_cpu_and_the_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    assert any(line.startswith("cpu") for line in out.splitlines())
    cuda = [line for line in out.splitlines() if line.startswith("cuda")]
    assert cuda and (re.match(r"cuda +0x01 +no ", cuda[0]) or cuda[0].startswith("cuda:0"))
    assert any(line.startswith("default: ") for line in out.splitlines())
