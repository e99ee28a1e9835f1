"""``hurray-gpu bench [--quick] [--out DIR]``: run every bench/ suite, collect their JSON, write
report.md (one table per suite: ours vs. peer or limit, with ratios where the suite measured
one), run.json (the detected machine, date, commit and devices) and one PNG plot per suite
(matplotlib, headless), and print the summary. ``hurray-gpu bench --readme DIR`` runs nothing:
it regenerates the README's Performance tables from DIR's JSON (see bench_readme)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from hurray_gpu.errors import HurrayGPUError

__all__ = [
    "QUICK_ARGS", "add_parser", "find_bench_dir", "load_results", "machine_line", "run_suites",
    "suite_table", "write_report", "write_run_record",
]


# Column names that hold a rate worth plotting, most preferred first.
RATE_HINTS = ("gbps", "gb_s", "gb_per_s", "mb_per_s", "per_second", "ratio", "speedup")


def load_results(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Attach each suite's parsed JSON (``data``, or ``error`` when missing or malformed)."""
    for rec in records:
        try:
            rec["data"] = json.loads(Path(rec["json"]).read_text())
        except (OSError, ValueError) as exc:
            rec["data"], rec["error"] = None, f"no JSON result ({exc})"
    return records


def machine_line() -> str:
    """CPU model, core count, OS and Python: what the numbers were measured on."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}")


def _rows(data: Any) -> list[dict[str, Any]]:
    if isinstance(data, dict):
        for key in ("results", "rows"):
            if isinstance(data.get(key), list):
                return [r for r in data[key] if isinstance(r, dict)]
        for value in data.values():
            if isinstance(value, list) and value and all(isinstance(r, dict) for r in value):
                return value
    if isinstance(data, list):
        return [r for r in data if isinstance(r, dict)]
    return []


def _fmt(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, float):
        return str(value)
    return f"{value:.3g}" if abs(value) < 0.01 and value else f"{value:,.3f}"


def _transfer_table(data: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    peer = float(data.get("numpy_copy_gbps") or 0.0)
    header = ["device", "memory class", "H2D GB/s", "D2H GB/s", "limit: NumPy copy GB/s",
              "H2D / limit", "D2H / limit", "bit-exact"]
    rows = [[r["device"], r["memory_class"], r["h2d_gbps"], r["d2h_gbps"], peer,
             r["h2d_gbps"] / peer if peer else "-", r["d2h_gbps"] / peer if peer else "-",
             r.get("bit_exact")] for r in _rows(data)]
    return header, rows


def _generic_table(data: Any) -> tuple[list[str], list[list[Any]]]:
    rows = _rows(data)
    keys: list[str] = []
    for r in rows:
        keys += [k for k, v in r.items() if k not in keys and not isinstance(v, (dict, list))]
    return keys, [[r.get(k, "") for k in keys] for r in rows]


def suite_table(suite: str, data: Any) -> tuple[list[str], list[list[Any]]]:
    """The report table of one suite: (header, rows)."""
    if suite == "transfer" and isinstance(data, dict) and "numpy_copy_gbps" in data:
        return _transfer_table(data)
    return _generic_table(data)


def _markdown(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join("" if c is None else _fmt(c) for c in row) + " |"
              for row in rows]
    return "\n".join(lines)


def _is_num(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _numeric_columns(header: list[str], rows: list[list[Any]]) -> list[int]:
    """Columns whose filled cells are all numbers (blank or None cells allowed)."""
    out = []
    for i in range(len(header)):
        filled = [r[i] for r in rows if r[i] not in ("", None)]
        if filled and all(_is_num(v) for v in filled):
            out.append(i)
    return out


def _plot(out: Path, suite: str, header: list[str], rows: list[list[Any]]) -> str | None:
    numeric = _numeric_columns(header, rows)
    cols: list[int] = []
    for hint in RATE_HINTS:
        cols = [i for i in numeric
                if hint in header[i].lower().replace(" ", "_").replace("/", "_")][:2]
        if cols:
            break
    labels = [i for i, h in enumerate(header) if i not in numeric][:3]
    rows = [r for r in rows if any(_is_num(r[i]) for i in cols)]
    if not cols or not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [" ".join(str(r[i]) for i in labels) or str(n) for n, r in enumerate(rows)]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(rows) + 3), 4))
    width = 0.8 / len(cols)
    for k, i in enumerate(cols):
        ax.bar([x + k * width for x in range(len(rows))],
               [float(r[i]) if _is_num(r[i]) else 0.0 for r in rows], width, label=header[i])
    ax.set_xticks([x + width * (len(cols) - 1) / 2 for x in range(len(rows))])
    ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    ax.set_title(f"{suite} ({machine_line().split(',')[0]})", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = out / f"{suite}.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path.name


def _section(out: Path, rec: dict[str, Any]) -> tuple[str, str]:
    suite = rec["suite"]
    head = f"## {suite}\n\nexit code {rec['returncode']}, {rec['seconds']:.1f} s"
    if rec.get("data") is None:
        tail = rec["text"].strip().splitlines()[-3:]
        return (f"{head}\n\n{rec.get('error', 'no result')}\n\n```\n" + "\n".join(tail)
                + "\n```\n", f"{suite}: FAILED (exit {rec['returncode']})")
    header, rows = suite_table(suite, rec["data"])
    plot = _plot(out, suite, header, rows) if rows else None
    body = _markdown(header, rows) if rows else "(no rows)"
    image = f"\n\n![{suite}]({plot})" if plot else ""
    return f"{head}\n\n{body}{image}\n", f"{suite}: {len(rows)} rows, exit {rec['returncode']}"


def write_report(out: Path, records: list[dict[str, Any]], *, quick: bool) -> str:
    """Write ``out/report.md`` and ``out/<suite>.png``.

    Args:
        out: the output directory (exists).
        records: from :func:`load_results`.
        quick: the suites ran with small sizes (said in the report).

    Returns:
        The text summary (one line per suite, plus the machine).
    """
    sections, summary = [], []
    for rec in records:
        text, line = _section(out, rec)
        sections.append(text)
        summary.append(line)
    mode = "quick (small sizes: indicative only)" if quick else "full"
    header = (f"# hurray_gpu benchmark report\n\nMachine: {machine_line()}  \n"
              f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  \nMode: {mode}\n\n"
              "Ratios compare our number with the peer or limit measured in the same run "
              "(for transfers: NumPy host copy bandwidth).\n")
    (out / "report.md").write_text(header + "\n" + "\n".join(sections))
    return "\n".join([f"machine: {machine_line()}", *summary])


# Suite arguments for --quick (small sizes, few runs) and for the full run; a suite not listed
# gets ``--quick`` when its source mentions that flag, and no extra arguments otherwise.
# Three runs at least: every figure is a min/median/max.
QUICK_ARGS = {
    "transfer": ["--size-mib", "4", "--runs", "3"],
    "codec": ["--runs", "3"],
    "dequant": ["--elements", str(1 << 20), "--runs", "3"],
    "kv_cache": ["--runs", "3", "--seqs", "16", "--max-len", "64", "--layers", "1"],
    "layout": ["--side", "256", "--runs", "3"],
    "vyre_exec": ["--quick"],
}
FULL_ARGS: dict[str, list[str]] = {}
# One suite may not run longer than this (seconds).
SUITE_TIMEOUT_S = 900


def add_parser(sub: Any) -> None:
    """Register ``bench``."""
    p = sub.add_parser("bench", help="run the benchmarks; write report.md and PNG plots",
                       description=__doc__)
    p.add_argument("--quick", action="store_true", help="small sizes (well under a minute)")
    p.add_argument("--out", default="bench/out/report", help="output directory")
    p.add_argument("--suite", action="append", default=[],
                   help="run only these suites (repeatable; default: all)")
    p.add_argument("--readme", metavar="DIR", default=None,
                   help="run nothing: copy DIR's JSON (a bench --out DIR) into docs/bench/ and "
                        "regenerate README.md's Performance tables from it")
    p.set_defaults(run=run)


def find_bench_dir() -> Path:
    """The repository's bench/ directory (benchmarks ship with the source tree, not the wheel).

    Raises:
        HurrayGPUError: no bench/ next to the hurray_gpu package.
    """
    root = Path(__file__).resolve().parents[2]
    bench = root / "bench"
    if not bench.is_dir():
        raise HurrayGPUError(
            f"no bench/ directory at {bench}",
            fix="run `hurray-gpu bench` from a source checkout (pip install -e .).")
    return bench


def _suite_args(script: Path, quick: bool) -> list[str]:
    name = script.stem
    if quick:
        if name in QUICK_ARGS:
            return list(QUICK_ARGS[name])
        return ["--quick"] if "--quick" in script.read_text(encoding="utf-8") else []
    return list(FULL_ARGS.get(name, []))


def run_suites(bench: Path, out: Path, quick: bool, only: list[str]) -> list[dict[str, Any]]:
    """Run each suite as its own process, writing ``out/<suite>.json``.

    Returns:
        One record per suite: name, exit code, seconds, JSON path and the printed text.
    """
    env = dict(os.environ)
    root = str(bench.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("HURRAY_GPU_PROGRESS", "0")
    records = []
    for script in sorted(bench.glob("*.py")):
        if script.stem.startswith("_") or (only and script.stem not in only):
            continue
        json_path = out / f"{script.stem}.json"
        argv = [sys.executable, str(script), *_suite_args(script, quick), "--json", str(json_path)]
        start = time.perf_counter()
        try:
            done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=root,
                                  timeout=SUITE_TIMEOUT_S, check=False)
            code, text = done.returncode, done.stdout + done.stderr
        except subprocess.TimeoutExpired:
            code, text = -1, f"timed out after {SUITE_TIMEOUT_S} s"
        records.append({"suite": script.stem, "returncode": code, "text": text,
                        "seconds": time.perf_counter() - start, "json": json_path,
                        "args": argv[2:-2]})
        print(f"  {script.stem}: exit {code} in {records[-1]['seconds']:.1f} s", file=sys.stderr)
    return records


def _commit(root: Path) -> str:
    """The checkout's commit, marked when files differ from it (the numbers are of that code)."""
    def git(*argv: str) -> str:
        return subprocess.run(["git", "-C", str(root), *argv], capture_output=True, text=True,
                              check=True, timeout=60).stdout.strip()
    try:
        head = git("rev-parse", "--short=10", "HEAD")
        return head + (" with local changes" if git("status", "--porcelain",
                                                    "--untracked-files=no") else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown (not a git checkout)"


def write_run_record(out: Path, records: list[dict[str, Any]], quick: bool) -> None:
    """``out/run.json``: the detected machine, date, commit, command, devices and each suite's
    exit code and arguments (what the README's tables say about the run)."""
    from hurray_gpu.runtime.registry import devices

    argv = ["hurray-gpu", "bench"] + (["--quick"] if quick else [])
    (out / "run.json").write_text(json.dumps({
        "machine": machine_line(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": _commit(find_bench_dir().parent), "command": " ".join(argv),
        "mode": "quick" if quick else "full",
        "devices": [{"spec": d.spec, "name": d.name, "emulated": bool(d.emulated)}
                    for d in devices() if d.kind != "reference"],
        "suites": {r["suite"]: {"returncode": r["returncode"], "args": r["args"]}
                   for r in records}}, indent=1))


def run(args: argparse.Namespace) -> int:
    """Run the suites, write the report; 0 when every suite succeeded. With ``--readme``, only
    regenerate the README's tables (0 when every suite was shown)."""
    if args.readme is not None:
        from hurray_gpu.cli.bench_readme import update_readme

        problems = update_readme(Path(args.readme), find_bench_dir().parent)
        print(f"wrote README.md and docs/bench/ from {args.readme}")
        for line in problems:
            print(f"not shown: {line}", file=sys.stderr)
        if problems:
            print(f"error: {len(problems)} part(s) of the run are missing from README.md. Fix: "
                  "rerun `hurray-gpu bench --out DIR` with this checkout (a suite missing from "
                  "DIR is missing from the README), then `hurray-gpu bench --readme DIR`.",
                  file=sys.stderr)
        return 1 if problems else 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    records = run_suites(find_bench_dir(), out, args.quick, args.suite)
    if not records:
        raise HurrayGPUError("no benchmark suite ran",
                             fix="check the --suite names against bench/*.py.")
    write_run_record(out, records, args.quick)
    summary = write_report(out, load_results(records), quick=args.quick)
    print(summary)
    print(f"\nwrote {out / 'report.md'} and {len(list(out.glob('*.png')))} plots")
    return 0 if all(r["returncode"] == 0 for r in records) else 1
