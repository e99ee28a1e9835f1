"""The README's Performance tables, generated from the JSON of a ``hurray-gpu bench`` run.

``hurray-gpu bench --readme DIR`` copies the suites' JSON and the run record (``run.json``:
detected machine, date, commit, devices) from DIR into docs/bench/ and rewrites the README's
block between :data:`BEGIN` and :data:`END` from those files. Every number in the block is a
field of that JSON (or arithmetic on fields), never typed, so a test re-renders the block from
docs/bench/ and compares it with the README. A suite without JSON, or whose JSON lacks a field
the table needs, is named in the block rather than left out.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hurray_gpu.errors import HurrayGPUError

__all__ = ["BEGIN", "END", "SUITES", "num", "render", "replace_block", "update_readme"]

BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"
RUN_FILE = "run.json"
HEADER = ("what", "ours: median (min-max)", "peer or limit, same run",
          "ratio: min / median / max")
# One table row: the device it ran on (None: the host, no device) and its four cells.
Row = tuple[str | None, str, str, str, str]


class _Missing(KeyError):
    """A field the table needs is not in a suite's JSON."""


def num(value: float) -> str:
    """Three significant digits, thousands separated (``27,500``, ``17.9``, ``0.300``)."""
    value = float(f"{value:.3g}")
    size = abs(value)
    if size >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}" if size >= 10 else f"{value:.2f}" if size >= 1 else f"{value:#.3g}"


def span(mid: float, low: float, high: float, unit: str = "") -> str:
    """A measured value: ``median (min-max) unit``."""
    return f"{num(mid)} ({num(low)}-{num(high)})" + (f" {unit}" if unit else "")


def three(mid: float, low: float, high: float, label: str = "") -> str:
    """A ratio: ``min / median / max label``."""
    return f"{num(low)} / {num(mid)} / {num(high)}" + (f" {label}" if label else "")


class _Fields:
    """One JSON object of a suite; a missing field raises :class:`_Missing` naming it."""

    def __init__(self, suite: str, data: Any) -> None:
        if not isinstance(data, dict):
            raise _Missing(f"{suite}.json holds {type(data).__name__} where an object belongs")
        self.suite, self.data = suite, data

    def __getitem__(self, key: str) -> Any:
        if key not in self.data:
            raise _Missing(f"{self.suite}.json has no field {key!r} (written by another "
                           f"version of its suite)")
        return self.data[key]

    def get(self, key: str) -> Any:
        return self.data.get(key)

    def sub(self, key: str) -> _Fields:
        return _Fields(self.suite, self[key])

    def rows(self, key: str) -> list[_Fields]:
        if not isinstance(self[key], list):
            raise _Missing(f"{self.suite}.json: {key!r} is not a list")
        return [_Fields(self.suite, r) for r in self[key]]

    def _three(self, key: str, scale: float, mid: str | None) -> tuple[float, float, float]:
        low, high = self[f"{key}_range"]
        return self[mid or key] * scale, low * scale, high * scale

    def span(self, key: str, unit: str = "", scale: float = 1.0, mid: str | None = None) -> str:
        """``key`` (or ``mid``) with ``key_range``, times ``scale``."""
        return span(*self._three(key, scale, mid), unit)

    def ratio(self, key: str, label: str = "", mid: str | None = None) -> str:
        """The ratio ``key`` (or ``mid``) with ``key_range``."""
        return three(*self._three(key, 1.0, mid), label)


def _dequant(d: _Fields) -> tuple[str, list[Row]]:
    threads = d.get("threads") or next((r.get("threads") for r in d.rows("rows")
                                        if r.get("threads")), None)
    caption = (f"{d['elements']:,} elements, {d['runs']} runs, {d['clock']} clock"
               + (f", {threads} threads" if threads else "") + "; limit: the device's copy of "
               "as many bytes; peers through their public APIs, allocating their outputs as "
               "ours does (\"kernels alone\": both kernels into reused outputs)")
    peer_rate = {r["op"]: r["gelem_s"] for r in d.rows("rows") if r["impl"] != "hurray_gpu"}
    out: list[Row] = []
    for r in d.rows("rows"):
        if r["impl"] != "hurray_gpu":
            continue
        peer, ratio = "no peer measured", r.ratio("roof_fraction", "of copy")
        if r.get("vs_peer") is not None:
            rate = peer_rate.get(r["op"])
            peer = f"`{r['peer']}`" + (f" {num(rate)} Gelem/s" if rate else "")
            ratio += f"; {r.ratio('vs_peer', 'x peer')}"
            if r.get("kernel_vs_peer") is not None:
                ratio += f"; kernels alone {r.ratio('kernel_vs_peer', 'x peer')}"
        roof = (r.span("roof_gbps") if r.get("roof_gbps_range") else num(r["roof_gbps"]))
        out.append((r["device"], f"{r['op']}, {r['device']}",
                    f"{r.span('gbps', 'GB/s')}; {num(r['gelem_s'])} Gelem/s",
                    f"copy {roof} GB/s; {peer}", ratio))
    return caption, out


def _layout(d: _Fields) -> tuple[str, list[Row]]:
    side = max(d["sides"])
    per_dev = d.sub("sizes").sub(str(side))
    out: list[Row] = []
    for spec in per_dev.data:
        dev = per_dev.sub(spec)
        for name, lay in dev.sub("layouts").data.items():
            r = _Fields("layout", lay)
            out.append((spec, f"{name} -> row-major, {spec}", r.span("gbps", "GB/s"),
                        f"copy {r.span('copy_gbps', 'GB/s')}",
                        r.ratio("fraction_of_copy", "of copy")))
        for r in dev.rows("csr_to_dense"):
            ours = (f"fresh {r.span('fresh_seconds', 'ms', 1e3)}; "
                    f"reused {r.span('seconds', 'ms', 1e3)}")
            if r.get("speedup_vs_scipy") is None:
                peer, ratio = "scipy not installed", ""
            else:
                peer = (f"scipy `toarray()` {r.span('scipy_fresh_seconds', 'ms', 1e3)}; "
                        f"`toarray(out=)` {r.span('scipy_warm_seconds', 'ms', 1e3)}")
                ratio = (f"fresh {r.ratio('speedup_vs_scipy_fresh', 'x scipy')}; "
                         f"reused {r.ratio('speedup_vs_scipy_warm', 'x scipy')}")
            out.append((spec, f"CSR -> dense, {r['density']:.0%} dense, {spec}", ours, peer,
                        ratio))
    caption = (f"{side} x {side} {d['dtype']}, {d['runs']} runs; CSR rows: fresh output memory "
               "on both sides, then reused memory on both sides")
    return caption, out


def _kv_cache(d: _Fields) -> tuple[str, list[Row]]:
    c = d.sub("config")
    out: list[Row] = []
    for r in d.rows("devices"):
        dev = r["device"]
        copy = f"copy {r.span('roof_copy_gb_per_s', 'GB/s')}"
        if r.get("torch_device") is None:
            decode = gather = ("torch not installed", "")
        else:
            decode = (f"torch ({r['torch_device']}) "
                      f"{r.span('torch_decode_tokens_per_s', 'tokens/s')}",
                      r.ratio("decode_vs_torch", "x torch"))
            gather = (f"torch `index_select` {r.span('torch_gather_gb_per_s', 'GB/s')}",
                      r.ratio("gather_vs_torch", "x torch"))
        out += [(dev, f"decode step, {dev}", r.span("decode_tokens_per_s", "tokens/s"), *decode),
                (dev, f"gather, {dev}", r.span("gather_gb_per_s", "GB/s"),
                 f"{gather[0]}; {copy}", "; ".join(filter(None, (
                     gather[1], r.ratio("gather_vs_roof", "of copy"))))),
                (dev, f"prefill (bulk append), {dev}", r.span("prefill_gb_per_s", "GB/s"),
                 "the same copy, in the prefill's rounds", r.ratio("prefill_vs_roof", "of copy"))]
    tokens = {r["tokens"] for r in d.rows("devices")}
    steps = {r.get("steps_per_sample") or 1 for r in d.rows("devices")}
    caption = (f"{c['seqs']} sequences of 1..{c['max_len']} tokens ("
               + ", ".join(f"{t:,}" for t in sorted(tokens)) + f" in all after decoding), "
               f"layers: {c['layers']}, {c['heads']} x {c['head_dim']} fp16, 10% forks per "
               f"decode step, {'/'.join(map(str, sorted(steps)))} decode steps per sample, "
               f"{c['runs']} runs")
    return caption, out + [(s["device"], f"{s['device']}: skipped", s["why"], "", "")
                           for s in d.rows("skipped")]


def _transfer(d: _Fields) -> tuple[str, list[Row]]:
    out: list[Row] = []
    for r in d.rows("results"):
        exact = "" if r["bit_exact"] else " (NOT bit-exact)"
        out.append((r["device"], f"{r['device']} {r['memory_class']}{exact}",
                    f"H2D {r.span('h2d_gbps')}; D2H {r.span('d2h_gbps')} GB/s",
                    f"NumPy copy {r.span('numpy_copy_gbps', 'GB/s')}",
                    f"H2D {r.ratio('h2d_vs_copy')}; D2H {r.ratio('d2h_vs_copy')} of copy"))
    return f"{d['bytes'] / 2**20:g} MiB each way, {d['runs']} runs", out


def _vyre_exec(d: _Fields) -> tuple[str, list[Row]]:
    mm, b3 = d.sub("matmul"), d.sub("blake3")
    out: list[Row] = []
    for label, r in ((k, mm.sub("devices").sub(k)) for k in mm.sub("devices").data):
        out.append((label, f"u32 matmul, {label}", r.span("seconds", "ms", 1e3, "seconds_median"),
                    f"reference ~{num(mm['reference_s'])} s",
                    r.ratio("speedup_vs_reference", "x reference", "speedup_vs_reference_median")))
    for spec, r in ((k, b3.sub("devices").sub(k)) for k in b3.sub("devices").data):
        out.append((spec, f"BLAKE3, {spec}", r.span("mib_per_s", "MiB/s", mid="mib_per_s_median"),
                    f"reference ~{num(b3['reference_s'])} s",
                    r.ratio("speedup_vs_reference", "x reference", "speedup_vs_reference_median")))
    if d.data.get("tiled_host_vs_opencl"):  # host C's region splitting against pocl
        t = d.sub("tiled_host_vs_opencl")
        wall, cpu = t["ratio"], t["cpu_time_ratio"]
        out.append(("cpu:0", f"tiled u32 matmul, cpu:0 vs opencl:0 ({t['rounds']} interleaved "
                    "rounds)", span(t["cpu_ms"][1], t["cpu_ms"][0], t["cpu_ms"][2], "ms"),
                    f"opencl:0 {span(t['opencl_ms'][1], t['opencl_ms'][0], t['opencl_ms'][2])} "
                    "ms", f"{three(wall[1], wall[0], wall[2], 'x opencl wall time')}; "
                    f"{three(cpu[1], cpu[0], cpu[2], 'x opencl CPU time')}"))
    for spec, r in ((k, d.sub("kernel_overhead").sub(k)) for k in d["kernel_overhead"]):
        goal = r["goal_us"]
        low, high = r["overhead_us_range"]
        out.append((spec, f"`Kernel(...)` Python time outside the enqueue, {spec}",
                    f"{r.span('overhead_us', 'us')} of {r.span('call_us', 'us')} per call",
                    f"goal {num(goal)} us",
                    three(r["overhead_us"] / goal, low / goal, high / goal, "of goal")))
    caption = (f"u32 matmul {mm['n']} x {mm['n']}, BLAKE3 of {b3['mib']:g} MiB; the reference "
               f"interpreter runs once on a part and is scaled (matmul: {mm['how']}; BLAKE3: "
               f"{b3['reference_kib']} KiB)")
    return caption, out


def _loop_bound(d: _Fields) -> tuple[str, list[Row]]:
    out: list[Row] = [(r["device"], f"{r['program']}, {r['device']}",
                       r.span("bounded_ms", "ms"), f"unbounded {r.span('unbounded_ms', 'ms')}",
                       r.ratio("bounded_over_unbounded", "x the unbounded time"))
                      for r in d.rows("rows")]
    return f"the same programs lowered with and without the bound, {d['rounds']} rounds", out


def _dlpack(d: _Fields) -> tuple[str, list[Row]]:
    return "time per round trip, warm", [
        (None, f"`{r['path']}`", r.span("us", "us"), f"`{r['peer']}` {r.span('peer_us', 'us')}",
         r.ratio("vs_peer", "x peer")) for r in d.rows("rows")]


def _codec(d: _Fields) -> tuple[str, list[Row]]:
    out: list[Row] = []
    for r in d.rows("rows"):
        unit = "per_second" if r.get("per_second") is not None else "mb_per_s"
        out.append((None, r["op"], r.span(unit, "/s" if unit == "per_second" else "MB/s"),
                    "none (absolute numbers)", ""))
    return "decode and encode rates", out


def _cold_start(d: _Fields) -> tuple[str, list[Row]]:
    out: list[Row] = []
    for r in d.rows("results"):
        dev = None if r["device"] == "-" else r["device"]
        peer, ratio = [], []
        if r.get("goal_ms") is not None:
            low, high = r["over_goal_ratio_range"]
            peer.append(f"goal {num(r['goal_ms'])} ms")
            ratio.append(three(r["median_over_goal_ratio"], low, high, "of goal"))
        if dev is not None:
            peer.append(f"steady call {r.span('steady_call_ms', 'ms', mid='steady_call_ms_median')}")
            ratio.append(r.ratio("over_steady_ratio", "x the steady call's time"))
        out.append((dev, r["what"] + (f", {dev}" if dev else ""),
                    span(r["median_ms"], r["min_ms"], r["max_ms"], "ms"), "; ".join(peer),
                    "; ".join(ratio)))
    out += [(u["device"], f"{u['device']}: not measured", u["error"], "", "")
            for u in d.rows("unavailable")]
    return f"every sample a fresh process, {d['runs']} rounds", out


def _small_calls(d: _Fields) -> tuple[str, list[Row]]:
    out: list[Row] = []
    for r in d.rows("rows"):
        peer = (f"`{r['peer']}` {r.span('peer_us_per_call', 'us')}"
                if r.get("peer") else "no peer measured")
        out.append((r["device"], f"{r['op']}, {r['elements']:,} elements, {r['device']}",
                    r.span("us_per_call", "us"), peer,
                    r.ratio("vs_peer", "x peer") if r.get("peer") else ""))
    return "time per call, warm, the calls of a round in turn", out


def _transport(d: _Fields) -> tuple[str, list[Row]]:
    out: list[Row] = []
    for r in d.rows("rows"):
        if r.get("ratio") is None:
            peer, ratio = f"{r['peer']}: {r.get('missing') or 'not measured'}", ""
        else:
            peer = f"{r['peer']} {r.span('peer_value', r['metric'])}"
            ratio = r.ratio("ratio", r["ratio_label"]) + (
                f" (goal {r['goal']})" if r["goal"] != "-" else "")
        ours = r.span("ours", r["metric"]) + (f"; {r.span('tokens_per_s', 'tokens/s')}"
                                              if r.get("tokens_per_s") else "")
        out.append((None, r["case"], ours, peer, ratio))
    caption = (f"loopback TCP, servers in a child process, {d['runs']} runs; Flight batches "
               f"of {d['flight_batch_bytes'] / 2**20:g} MiB; KV: {d['kv_tokens']:,} tokens, "
               f"{' x '.join(map(str, d['kv_geometry'][:3]))} fp16")
    return caption, out


def _convert(d: _Fields) -> tuple[str, list[Row]]:
    out: list[Row] = []
    for r in d.rows("results"):
        goal = r.get("goal_mb_per_s")
        rss = (f"; peak RSS +{num(r['rss_growth_mib'])} MiB (largest tensor "
               f"{num(r['largest_tensor_mib'])} MiB)" if r.get("rss_growth_mib") is not None else "")
        out.append((None, f"{r['case']}, {r['source_mib']:,.0f} MiB of source",
                    r.span("convert_mb_per_s", "MB/s") + rss,
                    f"copying the same file {num(r['copy_mb_per_s'])} MB/s"
                    + (f"; goal {num(goal)} MB/s" if goal else ""),
                    r.ratio("convert_over_copy_ratio", "of copy")))
    return f"source file to .hrry, interleaved with a copy of the same file, {d['runs']} runs", out


def _crmath(d: _Fields) -> tuple[str, list[Row]]:
    out: list[Row] = [
        ("cpu:0", f"CR_{r['function']} over [{num(r['domain'][0])}, {num(r['domain'][1])}], cpu:0",
         r.span("ours_gelem_s", "G/s"), f"`{r['libm']}` {r.span('libm_gelem_s', 'G/s')}",
         r.ratio("vs_peer", "x libm")) for r in d.rows("rows")]
    return (f"correctly rounded f32 functions vs the host libm's f32 ones (not correctly "
            f"rounded), {d['n']:,} inputs, {d['runs']} rounds, {d['clock']} time"), out


# (suite, title, row builder), in the README's order.
SUITES: tuple[tuple[str, str, Callable[[_Fields], tuple[str, list[Row]]]], ...] = (
    ("dequant", "Dequantization", _dequant), ("layout", "Layout conversion", _layout),
    ("small_calls", "Small calls", _small_calls), ("kv_cache", "Paged KV cache", _kv_cache), ("transfer", "Host <-> device copies", _transfer),
    ("vyre_exec", "vyre programs", _vyre_exec),
    ("vyre_loop_bound", "vyre loop pass bound", _loop_bound),
    ("crmath", "Correctly rounded f32 functions", _crmath),
    ("dlpack", "DLPack hand-off", _dlpack), ("transport", "Network protocol", _transport),
    ("codec", "Codecs", _codec), ("convert", "Checkpoint conversion", _convert),
    ("cold_start", "Cold start", _cold_start))


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise HurrayGPUError(f"cannot read {path}: {exc}",
                             fix=f"rerun `hurray-gpu bench --out {path.parent}`.") from exc


def _machine(run: _Fields, measured: set[str]) -> str:
    text = (f"Run of {run['date']}, commit `{run['commit']}`, `{run['command']}`"
            + (" (quick sizes: fixed per-call costs dominate; indicative only)"
               if run["mode"] == "quick" else "") + f". Machine (detected): {run['machine']}.")
    kinds = {m.split(":")[0] for m in measured}
    if not kinds & {"cuda", "rocm"}:
        emulated = [f"{d['spec']} = {d['name']}" for d in run.rows("devices") if d["emulated"]]
        text += " **No GPU was measured** (no cuda or rocm device)" + (
            f"; emulated on the same CPU: {', '.join(emulated)}." if emulated else ".")
    return text


def render(src: Path) -> tuple[str, list[str]]:
    """The block (markers excluded) for the JSON in ``src``, and the problems found (a suite
    not measured, failed, or with a field missing), each also stated in the block."""
    run = _load(src / RUN_FILE)
    ran = run.get("suites", {}) if isinstance(run, dict) else {}
    sections, problems, measured = [], [], set()
    for suite, title, build in SUITES:
        head = f"**{title}** (`bench/{suite}.py`"
        data = _load(src / f"{suite}.json")
        code = ran.get(suite, {}).get("returncode", 0)
        try:
            if data is None:
                raise _Missing(f"no {suite}.json in this run"
                               + (f" (the suite exited with code {code})" if code else ""))
            caption, rows = build(_Fields(suite, data))
        except _Missing as exc:
            problems.append(f"{suite}: {exc.args[0]}")
            sections.append(f"{head}): not shown: {exc.args[0]}.")
            continue
        if code:
            problems.append(f"{suite}: exited with code {code}")
            caption += f"; the suite exited with code {code}, see its report"
        measured |= {r[0].split()[0] for r in rows if r[0]}
        lines = [f"{head}: {caption})", "", "| " + " | ".join(HEADER) + " |",
                 "|" + "---|" * len(HEADER)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r[1:]) + " |" for r in rows]
        sections.append("\n".join(lines))
    try:
        if run is None:
            raise _Missing(f"no {RUN_FILE} (the run record)")
        machine = _machine(_Fields("run", run), measured)
    except _Missing as exc:
        problems.insert(0, f"run: {exc.args[0]}")
        machine = f"Machine, date and commit unknown: {exc.args[0]}."
    intro = (f"<!-- Generated by `hurray-gpu bench --readme DIR` from docs/bench/*.json: edit "
             f"those by rerunning the bench, not this block. -->\n\n{machine}\n\n"
             "Every figure is the median (min-max) of warm runs. A ratio is min / median / max "
             "over the runs, each run's ratio taken between calls that took turns in it (or "
             "against a fixed goal or one-off reference): `x peer` is our speed over the "
             "peer's (above 1: ours is faster), `of copy` the fraction of the copy bandwidth "
             "reached, `of goal` our time over the goal (below 1: met).")
    return "\n\n".join([intro, *sections]) + "\n", problems


def replace_block(text: str, block: str, name: str = "README.md") -> str:
    """``text`` with the part between the markers replaced by ``block``.

    Raises:
        HurrayGPUError: the markers are missing or out of order.
    """
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise HurrayGPUError(f"{name} has no {BEGIN} ... {END} block",
                             fix=f"put the line {BEGIN} and, below it, {END} where the "
                                 "generated tables belong (its Performance section).")
    return text[:start + len(BEGIN)] + "\n" + block + text[end:]


def update_readme(src: Path, root: Path) -> list[str]:
    """Copy the run's JSON from ``src`` into ``root``/docs/bench (replacing what was there)
    and rewrite ``root``/README.md's block from it; returns :func:`render`'s problems."""
    store = root / "docs" / "bench"
    if src.resolve() != store.resolve():
        store.mkdir(parents=True, exist_ok=True)
        for old in store.glob("*.json"):
            old.unlink()
        for name in [RUN_FILE] + [f"{suite}.json" for suite, _, _ in SUITES]:
            if (src / name).is_file():
                shutil.copyfile(src / name, store / name)
    block, problems = render(store)
    readme = root / "README.md"
    readme.write_text(replace_block(readme.read_text(encoding="utf-8"), block),
                      encoding="utf-8")
    return problems
