"""`hurray-gpu bench` from an installed (non-editable) package: the suites ship in the wheel,
progress shows while they run, every report table is filled, plots label their axes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from hurray_gpu.cli.bench import (
    INSTALLED_SUITES,
    find_bench_dir,
    load_results,
    plot_labels,
    suite_table,
    write_report,
)

ROOT = Path(__file__).resolve().parents[2]


def test_a_checkout_runs_its_own_bench_dir() -> None:
    assert find_bench_dir() == ROOT / "bench"


def test_every_committed_result_fills_its_table(tmp_path: Path) -> None:
    records = [{"suite": p.stem, "returncode": 0, "text": "", "seconds": 1.0, "json": p}
               for p in sorted((ROOT / "docs" / "bench").glob("*.json")) if p.stem != "run"]
    assert len(records) >= 10
    write_report(tmp_path, load_results(records), quick=False)
    report = (tmp_path / "report.md").read_text()
    assert "(no rows)" not in report
    for rec in records:
        header, rows = suite_table(rec["suite"], rec["data"])
        assert rows and header, rec["suite"]
        assert all(len(r) == len(header) for r in rows)


def test_dlpack_rows_name_paths_and_ratios() -> None:
    data = json.loads((ROOT / "docs" / "bench" / "dlpack.json").read_text())
    header, rows = suite_table("dlpack", data)
    assert header[:2] == ["path", "peer"] and "vs_peer" in header
    assert [r[0] for r in rows] == ["hurray -> torch", "hurray -> numpy"]


@pytest.mark.parametrize(("column", "unit"), [("h2d_gbps", "GB/s"), ("mb_per_s", "MB/s"),
                                              ("per_second", "operations per second"),
                                              ("vs_peer", "speed vs peer")])
def test_plot_axes_carry_units(column: str, unit: str) -> None:
    header = ["op", "size", column]
    rows = [["a", "1 MiB", 2.0], ["b", "2 MiB", 3.0]]
    cols, labels, xlabel, ylabel = plot_labels(header, rows)
    assert cols == [2] and labels == [0, 1]
    assert ylabel.startswith(unit) and xlabel == "op / size"


def test_progress_on_a_terminal_shows_the_running_suite(tmp_path: Path) -> None:
    import pty

    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"}
    proc = subprocess.Popen([sys.executable, "-m", "hurray_gpu.cli", "bench", "--quick",
                             "--suite", "codec", "--out", str(tmp_path)], stdin=slave,
                            stdout=subprocess.DEVNULL, stderr=slave, env=env, cwd=ROOT)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the terminal closed: the command has ended
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert proc.wait(timeout=300) == 0
    text = seen.decode(errors="replace")
    assert "0/1" in text and "codec" in text  # the bar, while the suite ran
    assert "codec: exit 0 in" in text  # the line each finished suite leaves
    assert "bench: [1/1]" not in text  # the plain lines are for pipes


@pytest.mark.slow
def test_bench_runs_from_a_wheel_install(tmp_path: Path) -> None:
    # Built from a copy of the sources: setuptools reuses (and would ship) a build/ folder.
    src = tmp_path / "src"
    skip = shutil.ignore_patterns("__pycache__", "out")
    for name in ("hurray_gpu", "vyre", "bench"):
        shutil.copytree(ROOT / name, src / name, ignore=skip)
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, src / name)
    wheels = tmp_path / "wheels"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                            "--no-build-isolation", "-w", str(wheels), str(src)],
                           capture_output=True, text=True, timeout=600, check=False,
                           cwd=tmp_path)
    assert build.returncode == 0, build.stdout + build.stderr
    (wheel,) = wheels.glob("hurray_gpu-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    suites = sorted(n for n in names if n.startswith(f"hurray_gpu/{INSTALLED_SUITES}/"))
    assert f"hurray_gpu/{INSTALLED_SUITES}/_timing.py" in suites
    shipped = {Path(n).name for n in suites}
    assert shipped == {p.name for p in (ROOT / "bench").glob("*.py")}
    target = tmp_path / "site"
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--target",
                              str(target), str(wheel)], capture_output=True, text=True,
                             timeout=600, check=False)
    assert install.returncode == 0, install.stdout + install.stderr
    assert not (target / "bench").exists() and not (target / "tests").exists()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(target)  # the installed copy, not this checkout
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    out = tmp_path / "report"
    done = subprocess.run([sys.executable, "-m", "hurray_gpu.cli", "bench", "--quick", "--suite",
                           "codec", "--out", str(out)], capture_output=True, text=True, env=env,
                          cwd=elsewhere, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "bench: [1/1] codec ..." in done.stderr and "codec: exit 0" in done.stderr
    report = (out / "report.md").read_text()
    assert "## codec" in report and "(no rows)" not in report and "vyre decode" in report
    where = subprocess.run([sys.executable, "-c", "import hurray_gpu.cli.bench as b; "
                            "print(b.find_bench_dir())"], capture_output=True, text=True,
                           env=env, cwd=elsewhere, timeout=120, check=True)
    assert Path(where.stdout.strip()) == target / "hurray_gpu" / INSTALLED_SUITES
    readme = subprocess.run([sys.executable, "-m", "hurray_gpu.cli", "bench", "--readme",
                             str(out)], capture_output=True, text=True, env=env, cwd=elsewhere,
                            timeout=120, check=False)
    assert readme.returncode == 1 and "has none Fix: run" in readme.stderr  # no README there
    assert not (target / "hurray_gpu" / "README.md").exists()
    shutil.rmtree(target)
