"""``hurray-gpu demo``: quantize a small model's weights, store them with a KV-cache snapshot in
a .hrry file, inspect it, load it onto a device, dequantize there and check every result against
NumPy, hand one result over by DLPack, checksum it with a vyre program; time every step."""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hurray_gpu.cli.common import dump_json, format_table
from hurray_gpu.cli.demo_steps import (
    HOST,
    Recorder,
    Step,
    dequantize_all,
    dlpack_handoff,
    kv_snapshot,
    load_weights,
    recheck,
    vyre_checksum,
)

__all__ = ["add_parser", "run_demo"]

# Hidden sizes: the full demo and the --quick one (tests, slow machines).
D_MODEL, D_MODEL_QUICK = 256, 64


def add_parser(sub: Any) -> None:
    """Register ``demo``."""
    p = sub.add_parser("demo", help="the end-to-end demo on the best local device",
                       description=__doc__)
    p.add_argument("--device", default=None, help="device spec (default: the best local one)")
    p.add_argument("--quick", action="store_true", help=f"d_model {D_MODEL_QUICK} instead of "
                                                        f"{D_MODEL}")
    p.add_argument("--out-dir", default=None,
                   help="where to write demo.hrry (default: a temporary directory)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="force the load progress bar on or off (default: on a terminal)")
    p.add_argument("--json", action="store_true", help="print the steps as JSON")
    p.set_defaults(run=run)


def _has_layouts() -> bool:
    return all(importlib.util.find_spec(f"hurray_gpu.ops.{m}") is not None
               for m in ("materialize", "layout_host", "layout_composite", "layout_sparse"))


def _host_steps(rec: Recorder, d_model: int, dev: Any, path: Path) -> tuple[list, list]:
    from hurray_gpu.cli.demo_model import build_weights
    from hurray_gpu.io import report, save

    with rec.timed(f"quantize 5 weights (d_model {d_model})", HOST) as row:
        weights = build_weights(d_model)
        row.nbytes = sum(w.original.nbytes for w in weights)
        row.check = ", ".join(w.label.split(" (")[0] for w in weights)
    layouts: list[Any] = []
    if _has_layouts():
        from hurray_gpu.cli.demo_layouts import layout_tensors

        with rec.timed("build tiled embedding + SpQR overlay composite", HOST) as row:
            layouts = layout_tensors(weights, d_model)
            row.check = "; ".join(item.label for item in layouts)
    kv_tensors, kv_meta = kv_snapshot(rec, dev, seed=1)
    with rec.timed("save .hrry (weights, layouts, KV snapshot)", HOST) as row:
        save(path, {**{w.name: w.tensor for w in weights + layouts}, **kv_tensors},
             metadata={"producer": "hurray-gpu demo", "d_model": d_model, **kv_meta})
        row.nbytes = path.stat().st_size
        row.check = f"{path.name}, {row.nbytes:,} bytes"
    with rec.timed("inspect + validate the file", HOST, path.stat().st_size) as row:
        rep = report.inspect_file(str(path))
        kinds = sorted({t["layout"]["name"] if isinstance(t.get("layout"), dict) else "?"
                        for t in rep["tensors"]})
        row.check = f"{len(rep['tensors'])} tensors valid; layouts: {', '.join(kinds)}"
        row.ok = len(rep["tensors"]) == len(weights) + len(layouts) + len(kv_tensors)
    if not layouts:
        rec.notes.append("omitted: tiled-layout and SpQR overlay (int4 + f16 COO) "
                         "materialization on the device (not in this build).")
    return weights, layouts


def run_demo(device: Any = None, *, quick: bool = False, out_dir: str | None = None,
             progress: bool | None = None, echo: Any = None) -> Recorder:
    """Run every demo step.

    Args:
        device: a device spec, or None for :func:`hurray_gpu.default_device`.
        quick: use the small model.
        out_dir: where to write ``demo.hrry`` (a temporary directory when None).
        progress: the load progress bar (None: automatic).
        echo: called with each finished Step (printing as it goes).

    Returns:
        The Recorder with every step, its check, and the notes.

    Raises:
        BackendUnavailableError: the device cannot be opened (no silent fallback).
    """
    from hurray_gpu.runtime.registry import resolve_device

    dev = resolve_device(device)
    rec = Recorder(echo=echo)
    rec.notes.append(f"device: {dev.spec} ({dev.name})"
                     + (" - emulated on the CPU" if dev.emulated else ""))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(out_dir or tmp) / "demo.hrry"
        path.parent.mkdir(parents=True, exist_ok=True)
        weights, layouts = _host_steps(rec, D_MODEL_QUICK if quick else D_MODEL, dev, path)
        on_dev = load_weights(rec, path, [w.name for w in weights + layouts], dev, progress)
        results = dequantize_all(rec, weights, on_dev, dev)
        if layouts:
            from hurray_gpu.cli.demo_layouts import materialize_layouts

            results.update(materialize_layouts(rec, layouts, on_dev, dev))
        arr = dlpack_handoff(rec, results[weights[1].name], dev)
        vyre_checksum(rec, arr, weights[1].name, dev)
        recheck(rec, weights + layouts, results, dev)
    return rec


def _row(s: Step) -> list[Any]:
    gbps = f"{s.gbps:.3f}" if s.gbps is not None else "-"
    mark = {True: "ok", False: "FAIL", None: ""}[s.ok]
    return [s.step, s.where, f"{s.seconds * 1e3:.1f}", gbps, mark, s.check]


def _render(rec: Recorder, total: float) -> str:
    table = format_table(["step", "ran on", "ms", "GB/s", "", "check"],
                         [_row(s) for s in rec.steps])
    notes = "\n".join(f"note: {n}" for n in rec.notes)
    verdict = "all checks passed" if rec.all_ok else "SOME CHECKS FAILED"
    return f"{table}\n\n{notes}\n\n{verdict} ({len(rec.steps)} steps, {total:.1f} s)"


def _echo(step: Step) -> None:
    print(f"  {step.step} ... {step.seconds * 1e3:.1f} ms", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    """Run the demo; 0 when every check passed, 1 otherwise."""
    start = time.perf_counter()
    # On a terminal the load always draws its bar (the automatic rule skips small transfers).
    progress = args.progress if args.progress is not None else (sys.stderr.isatty() or None)
    rec = run_demo(args.device, quick=args.quick, out_dir=args.out_dir,
                   progress=progress, echo=None if args.json else _echo)
    total = time.perf_counter() - start
    if args.json:
        print(dump_json({"ok": rec.all_ok, "seconds": total, "notes": rec.notes,
                         "steps": [{**vars(s), "gbps": s.gbps} for s in rec.steps]}))
    else:
        print(_render(rec, total))
    return 0 if rec.all_ok else 1
