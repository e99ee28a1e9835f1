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
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hurray_gpu.cli.common import console, show
from hurray_gpu.errors import HurrayGPUError

__all__ = [
    "QUICK_ARGS", "SuiteProgress", "add_parser", "find_bench_dir", "load_results",
    "machine_line", "plot_labels", "run_suites", "suite_table", "write_report",
    "write_run_record",
]


# Column names that hold a rate worth plotting, most preferred first, with the unit of the
# plot's value axis.
RATE_HINTS = {"gbps": "GB/s", "gb_s": "GB/s", "gb_per_s": "GB/s", "mb_per_s": "MB/s",
              "per_second": "operations per second", "ratio": "ratio (x)",
              "speedup": "speedup (x)", "vs_peer": "speed vs peer (x, > 1: ours faster)"}


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


def plot_labels(header: list[str], rows: list[list[Any]]
                ) -> tuple[list[int], list[int], str, str]:
    """What a suite's plot shows: the rate columns plotted (up to two of the first kind found
    in RATE_HINTS), the text columns naming each bar, the x axis label (their names) and the
    y axis label (the rate's unit)."""
    numeric = _numeric_columns(header, rows)
    labels = [i for i in range(len(header)) if i not in numeric][:3]
    for hint, unit in RATE_HINTS.items():
        cols = [i for i in numeric
                if hint in header[i].lower().replace(" ", "_").replace("/", "_")][:2]
        if cols:
            return cols, labels, " / ".join(header[i] for i in labels) or "row", unit
    return [], labels, "", ""


def _short(label: str, limit: int = 40) -> str:
    return label if len(label) <= limit else label[:limit - 3] + "..."


def _plot(out: Path, suite: str, header: list[str], rows: list[list[Any]]) -> str | None:
    cols, labels, xlabel, ylabel = plot_labels(header, rows)
    rows = [r for r in rows if any(_is_num(r[i]) for i in cols)]
    if not cols or not rows:
        return None
    try:
        import matplotlib
    except ImportError:  # plots are optional: the report's tables stand alone
        return None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [_short(" ".join(str(r[i]) for i in labels) or str(n)) for n, r in enumerate(rows)]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(rows) + 3), 4))
    width = 0.8 / len(cols)
    for k, i in enumerate(cols):
        ax.bar([x + k * width for x in range(len(rows))],
               [float(r[i]) if _is_num(r[i]) else 0.0 for r in rows], width, label=header[i])
    ax.set_xticks([x + width * (len(cols) - 1) / 2 for x in range(len(rows))])
    ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.set_xlabel(xlabel, fontsize=8)
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
    "crmath": ["--n", str(1 << 18), "--runs", "3", "--clock", "cpu"],
}
# crmath: CPU time (both sides in this process, all threads): steadier than wall time.
FULL_ARGS: dict[str, list[str]] = {"crmath": ["--clock", "cpu"]}
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


# Where an installed (non-editable) package carries the suites: bench/ is shipped inside the
# package under this name (setup.py's package_dir), so `hurray-gpu bench` runs from a
# wheel as from a checkout.
INSTALLED_SUITES = "bench_suites"


def find_bench_dir() -> Path:
    """The benchmark suites: the source checkout's bench/, else the copy the package ships.

    Raises:
        HurrayGPUError: neither exists (a package built without its suites).
    """
    package = Path(__file__).resolve().parents[1]
    for bench in (package.parent / "bench", package / INSTALLED_SUITES):
        if (bench / "_timing.py").is_file():
            return bench
    raise HurrayGPUError(
        f"no benchmark suites at {package.parent / 'bench'} or {package / INSTALLED_SUITES}",
        fix="reinstall hurray_gpu from a wheel or source tree that includes bench/, or run "
            "`hurray-gpu bench` from a source checkout.")


def _suite_args(script: Path, quick: bool) -> list[str]:
    name = script.stem
    if quick:
        if name in QUICK_ARGS:
            return list(QUICK_ARGS[name])
        return ["--quick"] if "--quick" in script.read_text(encoding="utf-8") else []
    return list(FULL_ARGS.get(name, []))


def _suite_env(bench: Path) -> tuple[dict[str, str], str | None]:
    """The suites' environment and working directory: a checkout's root goes first on their
    path (they measure that tree's code); an installed copy imports the installed package."""
    env = dict(os.environ)
    env.setdefault("HURRAY_GPU_PROGRESS", "0")
    root = bench.parent
    if not (root / "hurray_gpu").is_dir():
        return env, None
    env["PYTHONPATH"] = str(root) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH")
                                     else "")
    return env, str(root)


def _run_suite(argv: list[str], env: dict[str, str], cwd: str | None,
               on_line: Callable[[str], None]) -> tuple[int, str]:
    """Run one suite, passing each line it prints to ``on_line``; (exit code, all output)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, cwd=cwd, bufsize=1)
    timed_out = threading.Event()

    def kill() -> None:
        timed_out.set()
        proc.kill()

    timer = threading.Timer(SUITE_TIMEOUT_S, kill)
    timer.start()
    lines = []
    try:
        for line in proc.stdout or ():
            lines.append(line)
            on_line(line.rstrip())
        code = proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:  # interrupted: leave no suite running
            proc.kill()
            proc.wait()
    if timed_out.is_set():
        return -1, "".join(lines) + f"\ntimed out after {SUITE_TIMEOUT_S} s"
    return code, "".join(lines)


def run_suites(bench: Path, out: Path, quick: bool, only: list[str]) -> list[dict[str, Any]]:
    """Run each suite as its own process, writing ``out/<suite>.json``; show progress on
    stderr (a rich bar with each suite's latest line on a terminal, plain lines otherwise).

    Returns:
        One record per suite: name, exit code, seconds, JSON path and the printed text.
    """
    env, cwd = _suite_env(bench)
    scripts = [p for p in sorted(bench.glob("*.py"))
               if not p.stem.startswith("_") and (not only or p.stem in only)]
    records = []
    with SuiteProgress(len(scripts)) as progress:
        for script in scripts:
            json_path = out / f"{script.stem}.json"
            argv = [sys.executable, str(script), *_suite_args(script, quick), "--json",
                    str(json_path)]
            progress.start(script.stem)
            start = time.perf_counter()
            code, text = _run_suite(argv, env, cwd, progress.line)
            seconds = time.perf_counter() - start
            records.append({"suite": script.stem, "returncode": code, "text": text,
                            "seconds": seconds, "json": json_path, "args": argv[2:-2]})
            progress.done(script.stem, code, seconds)
    return records


class SuiteProgress:
    """Progress of the suites on stderr: a rich bar (suite k of n, elapsed time, the suite's
    latest output line) on a terminal; one line per suite start and end otherwise."""

    def __init__(self, total: int) -> None:
        self.total, self.count = total, 0
        self._bar: Any = None
        self._task: Any = None
        self._name = ""
        if sys.stderr.isatty():
            from rich.progress import BarColumn, Progress, SpinnerColumn, TimeElapsedColumn

            self._bar = Progress(SpinnerColumn(), "{task.description}", BarColumn(),
                                 "{task.completed}/{task.total}", TimeElapsedColumn(),
                                 console=console(stderr=True), transient=True)
            self._task = self._bar.add_task("bench", total=total)

    def __enter__(self) -> SuiteProgress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def start(self, name: str) -> None:
        """Suite ``name`` begins."""
        self.count += 1
        self._name = name
        if self._bar is not None:
            self._bar.update(self._task, description=name)
        else:
            print(f"bench: [{self.count}/{self.total}] {name} ...", file=sys.stderr, flush=True)

    def line(self, text: str) -> None:
        """The running suite printed ``text`` (shown on the bar, cut to fit)."""
        if self._bar is not None and text.strip():
            self._bar.update(self._task, description=f"{self._name}: {text.strip()[:60]}")

    def done(self, name: str, code: int, seconds: float) -> None:
        """Suite ``name`` ended with exit ``code`` after ``seconds``."""
        line = f"  {name}: exit {code} in {seconds:.1f} s"
        if self._bar is not None:
            self._bar.console.print(line)
            self._bar.update(self._task, advance=1, description=name)
        else:
            print(line, file=sys.stderr, flush=True)


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

        root = find_bench_dir().parent
        if not (root / "README.md").is_file():  # an installed package: no README to rewrite
            raise HurrayGPUError(f"--readme rewrites a source checkout's README.md; {root} "
                                 "has none", fix="run `hurray-gpu bench --readme DIR` in a "
                                 "checkout of hurray_gpu (pip install -e .).")
        problems = update_readme(Path(args.readme), root)
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
    show(summary, "", f"wrote {out / 'report.md'} and {len(list(out.glob('*.png')))} plots")
    return 0 if all(r["returncode"] == 0 for r in records) else 1
