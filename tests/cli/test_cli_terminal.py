"""The CLI in a terminal: output fits 80 and 100 columns, every table column has a header,
`demo` prints each step once, `inspect` names its codes (`--json` keeps them), a closed pipe
ends quietly, `--version`, and diagnostics on stderr through `logging` (JSON stays JSON)."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import hurray_gpu as hg
from hurray_gpu.cli import BROKEN_PIPE_STATUS, main
from hurray_gpu.cli.common import listing, render_text, table
from hurray_gpu.cli.demo import _render, run_demo

ROOT = Path(__file__).resolve().parents[2]
VYRE = ROOT / "tests" / "golden" / "vyre"


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """One quick demo through the CLI at 80 columns: (its out dir, stdout, stderr)."""
    out = tmp_path_factory.mktemp("demo")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80"}
    done = subprocess.run([sys.executable, "-m", "hurray_gpu.cli", "demo", "--quick",
                           "--device", "cpu", "--out-dir", str(out)], capture_output=True,
                          text=True, env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return out, done.stdout, done.stderr


def _widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def _run(argv: list[str], capsys: pytest.CaptureFixture) -> str:
    assert main(argv) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("columns", [80, 100])
def test_every_command_fits_the_terminal(columns: int, demo_run: tuple[Path, str, str],
                                         tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture) -> None:
    out_dir, demo_text, _ = demo_run
    monkeypatch.setenv("COLUMNS", str(columns))
    texts = {"demo (80)": demo_text,
             "devices": _run(["devices"], capsys),
             "inspect": _run(["inspect", str(out_dir / "demo.hrry")], capsys),
             "cache info": _run(["cache", "info"], capsys),
             "vyre inspect": _run(["vyre", "inspect", str(VYRE / "k02_add_mul.vir")], capsys),
             "vyre run": _run(["vyre", "run", str(VYRE / "k02_add_mul.vir"), "--kat",
                               str(VYRE / "k02_add_mul.kat.json")], capsys),
             "materialize": _run(["materialize", str(out_dir / "demo.hrry"),
                                  "layers.0.attn.out.weight", "--device", "cpu", "--out",
                                  str(tmp_path / "w.npy")], capsys)}
    for name, text in texts.items():
        assert text.strip(), name
        assert _widest(text) <= columns, (name, [ln for ln in text.splitlines()
                                                 if len(ln) > columns])
    assert _widest(demo_text) > 70  # the table uses the width it has


def test_demo_prints_each_step_once(demo_run: tuple[Path, str, str]) -> None:
    _, out, err = demo_run
    assert err == ""  # no second copy of the steps on stderr
    assert "SOME CHECKS FAILED" not in out and "all checks passed" in out
    # Cells wrap at 80 columns; compare the demo's steps, rendered wide, once each.
    header = out.splitlines()[0].split()
    assert header == ["step", "ran", "on", "ms", "GB/s", "ok", "check"]
    assert out.count("vyre checksum") == 1 and out.count("re-check every result") == 1


def test_a_demo_rendered_wide_has_one_row_per_step(tmp_path: Path) -> None:
    rec = run_demo("cpu", quick=True, out_dir=str(tmp_path), progress=False)
    text = render_text(*_render(rec, 1.0), width=400)
    for step in rec.steps:
        assert text.count(step.step) == 1, step.step
    assert _widest(render_text(*_render(rec, 1.0), width=100)) <= 100


def test_every_table_column_has_a_header() -> None:
    with pytest.raises(ValueError, match="header"):
        table(["name", ""], [["a", 1]])
    text = render_text(table(["name", "n"], [["a", 1], ["b", 22]]), width=80)
    assert text.splitlines()[0].split() == ["name", "n"]


def test_name_lists_say_how_many_more() -> None:
    assert listing(["a", "b"]) == "a, b"
    assert listing([f"t{i}" for i in range(12)]) == ("t0, t1, t2, t3, t4, t5, t6, t7 and 4 "
                                                    "more")
    assert listing([]) == "nothing"


def test_inspect_names_codes_and_json_keeps_them(demo_run: tuple[Path, str, str],
                                                 capsys: pytest.CaptureFixture,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(demo_run[0] / "demo.hrry")
    monkeypatch.setenv("COLUMNS", "200")
    text = _run(["inspect", path], capsys)
    assert "scale type float16" in text and "symmetric yes" in text  # int4 per-block
    assert "composite member: base" in text and "composite member: correction" in text
    assert "composition rule overlay, combine op add, member count 2" in text
    assert "tile shape [16, 16], outer layout row_major, inner layout row_major" in text
    assert re.search(r"nnz [0-9]+, is sorted yes", text)
    assert "kv role key" in text and "kv role value" in text
    assert "scale_type_tag" not in text and "{" not in text  # no raw dicts, no codes
    report = json.loads(_run(["inspect", path, "--json"], capsys))
    (qkv,) = [t for t in report["tensors"] if t["name"] == "layers.0.attn.qkv.weight"]
    assert qkv["quantization"]["scale_type_tag"] == 1  # float16's code, as stored
    paged = [t for t in report["tensors"] if t["layout"]["name"] == "block_paged"]
    assert sorted(t["layout"]["kv_role"] for t in paged) == [0, 1]


def test_a_closed_pipe_ends_quietly(demo_run: tuple[Path, str, str]) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "hurray_gpu.cli", "inspect",
                             str(demo_run[0] / "demo.hrry")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    proc.stdout.close()  # the reader goes away before the first write (`| head -0`)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == BROKEN_PIPE_STATUS == 141
    assert err == b""  # no traceback, no "error: ... Fix: check the path"


def test_version(capsys: pytest.CaptureFixture) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"hurray-gpu {hg.__version__}\n"


def test_debug_diagnostics_go_to_stderr_and_json_stays_json(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HURRAY_GPU_DEBUG": "2",
           "HURRAY_GPU_CACHE_DIR": str(tmp_path / "cache")}  # cold: kernels compile
    argv = [sys.executable, "-m", "hurray_gpu.cli", "vyre", "run", str(VYRE / "k02_add_mul.vir"),
            "--kat", str(VYRE / "k02_add_mul.kat.json"), "--device", "cpu", "--json"]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["kat_match"]  # stdout is exactly the JSON document
    assert "DEBUG hurray_gpu.runtime.program: cpu kernel" in done.stderr
    assert "compiled in" in done.stderr
    again = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300,
                           check=False)
    assert "disk cache hit" in again.stderr and "compiled in" not in again.stderr
    quiet = subprocess.run(argv, capture_output=True, text=True,
                           env={**env, "HURRAY_GPU_DEBUG": "0"}, timeout=300, check=False)
    assert quiet.stderr == "" and json.loads(quiet.stdout)["kat_match"]


@pytest.mark.parametrize(("argv", "level"), [([], logging.WARNING), (["-v"], logging.INFO),
                                              (["-vv"], logging.DEBUG),
                                              (["-vv", "--log-level", "error"], logging.ERROR)])
def test_log_level_options(argv: list[str], level: int, capsys: pytest.CaptureFixture,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HURRAY_GPU_DEBUG", raising=False)
    assert main([*argv, "cache", "info", "--json"]) == 0
    logger = logging.getLogger("hurray_gpu")
    assert logger.level == level
    handlers = [h for h in logger.handlers if not isinstance(h, logging.NullHandler)]
    assert len(handlers) == 1 and handlers[0].stream is sys.stderr  # type: ignore[attr-defined]
    capsys.readouterr()


@pytest.mark.parametrize(("argv", "level"), [
    (["cache", "info", "--json", "-v"], logging.INFO),  # after the subcommand
    (["cache", "-vv", "info", "--json"], logging.DEBUG),  # between it and its own subcommand
    (["-v", "cache", "info", "-v", "--json"], logging.DEBUG),  # the counts add up
    (["cache", "info", "--log-level", "ERROR", "--json"], logging.ERROR),
    (["--log-level", "debug", "cache", "info", "--json", "--log-level", "error"],
     logging.ERROR),  # the later one wins
    (["-vv", "cache", "info", "--json"], logging.DEBUG)])  # before it still works
def test_log_options_after_the_subcommand(argv: list[str], level: int,
                                          capsys: pytest.CaptureFixture,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HURRAY_GPU_DEBUG", raising=False)
    assert main(argv) == 0
    assert logging.getLogger("hurray_gpu").level == level
    assert json.loads(capsys.readouterr().out)  # stdout is still the JSON document


def test_the_library_adds_only_a_null_handler() -> None:
    code = ("import logging, hurray_gpu, hurray_gpu.cli, hurray_gpu.runtime.cache; "
            "print([type(h).__name__ for h in logging.getLogger('hurray_gpu').handlers])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120, check=True)
    assert done.stdout.strip() == "['NullHandler']"
