"""The ``vyre`` commands: ``inspect PROG.vir`` and ``run PROG.vir --inputs ...``.

``python -m vyre`` and ``hurray-gpu vyre`` register the same two subcommands from here. ``run``
executes the program on the vyre reference interpreter (vyre.reference), a host NumPy/Python
oracle, or with ``--device D`` lowered through the dialect layer and launched on that device
(vyre.run). The output says which one ran.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from hurray_gpu.errors import HurrayGPUError, UnsupportedOpError
from vyre.execute import DEFAULT_MAX_LOOP_PASSES, run
from vyre.inspect import inspect_blob

__all__ = ["add_commands", "main", "output_json", "parse_inputs", "run_program"]

# Values shown per output buffer in the text report; --json always has every element.
SHOW_VALUES = 16
ENGINE = "vyre reference interpreter (host, Python/NumPy oracle)"


def add_commands(sub: Any, show: Callable[[str], None] = print) -> None:
    """Register ``inspect`` and ``run`` on an argparse subparsers object; each parser sets
    ``run(args) -> int`` as its default, and ``show`` (how text reports are printed; JSON is
    always printed as it is)."""
    ins = sub.add_parser("inspect", help="print header, digest check, buffers and node tree")
    ins.add_argument("path", help="the VIR0 blob (.vir), or - for stdin")
    ins.add_argument("--strict", action="store_true",
                     help="fail on unregistered extensions instead of showing them as opaque")
    ins.set_defaults(run=_run_inspect, show=show)
    r = sub.add_parser("run", help="execute on the vyre reference interpreter or a device",
                       description="Inputs are NAME=hex:0a0b..., NAME=FILE.npy (its bytes) or "
                                   "NAME=FILE (raw little-endian bytes).")
    r.add_argument("path", help="the VIR0 blob (.vir)")
    r.add_argument("--inputs", nargs="*", default=[], metavar="NAME=SRC",
                   help="input buffers by name")
    r.add_argument("--kat", help="a NAME.kat.json vector: take inputs and grid from it and "
                                 "compare the outputs with its expected bytes")
    r.add_argument("--grid", help="workgroups as X,Y,Z (default: inferred like the reference)")
    r.add_argument("--json", action="store_true",
                   help="print every output as JSON: its bytes in hex, and its values as the "
                        "buffer's element type")
    r.add_argument("--device", default="reference",
                   help="'reference' (the interpreter, default) or a device spec such as cpu, "
                        "opencl:0, vulkan:0, cuda:0: run the lowered kernels there")
    r.add_argument("--max-loop-passes", type=int, default=None, metavar="N",
                   help="device runs: loop passes one invocation may run before the run stops "
                        f"with a loop-budget error (default {DEFAULT_MAX_LOOP_PASSES})")
    r.set_defaults(run=_run_program_cmd, show=show)


def _read(path: str) -> bytes:
    return sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()


def _run_inspect(args: argparse.Namespace) -> int:
    text, ok = inspect_blob(_read(args.path), preserve_unknown=not args.strict)
    args.show(text)
    return 0 if ok else 1


def _bad_input(spec: str, why: str) -> UnsupportedOpError:
    return UnsupportedOpError(f"bad --inputs entry {spec!r}: {why}",
                              fix="write NAME=hex:..., NAME=FILE.npy or NAME=FILE.")


def parse_inputs(specs: list[str]) -> dict[str, bytes]:
    """``NAME=SRC`` entries to ``{name: bytes}``.

    Raises:
        UnsupportedOpError: a malformed entry or bad hex.
        OSError: a file cannot be read.
    """
    out: dict[str, bytes] = {}
    for spec in specs:
        name, sep, src = spec.partition("=")
        if not sep or not name or not src:
            raise _bad_input(spec, "expected NAME=SRC")
        if src.startswith("hex:"):
            try:
                out[name] = bytes.fromhex(src[4:])
            except ValueError as exc:
                raise _bad_input(spec, str(exc)) from None
        elif src.endswith(".npy"):
            out[name] = np.ascontiguousarray(np.load(src, allow_pickle=False)).tobytes()
        else:
            out[name] = Path(src).read_bytes()
    return out


def _parse_grid(text: str | None) -> tuple[int, int, int] | None:
    if text is None:
        return None
    parts = text.split(",")
    if len(parts) != 3 or not all(p.strip().isdigit() and len(p.strip()) <= 10 for p in parts):
        raise UnsupportedOpError(f"bad --grid {text!r}", fix="write --grid X,Y,Z (integers).")
    return (int(parts[0]), int(parts[1]), int(parts[2]))


def _engine(device: str) -> str:
    return ENGINE if device == "reference" else f"lowered kernels on {device}"


def run_program(path: str, inputs: dict[str, bytes], grid: Any = None,
                device: str = "reference", max_loop_passes: int | None = None
                ) -> dict[str, np.ndarray]:
    """Run a VIR0 program file; returns each output buffer as an array of its element type.

    Args:
        path: the VIR0 blob.
        inputs: input bytes by buffer name.
        grid: workgroups (X, Y, Z), or None to infer them like the reference.
        device: ``"reference"`` for the interpreter, else a device spec for the lowered kernels.
        max_loop_passes: device runs: loop passes one invocation may run (default: vyre.run's).

    Returns:
        ``{buffer name: array}`` as :func:`vyre.run` returns them (u32/bool -> uint32,
        i32 -> int32, f32 -> float32 with its raw bits, unaligned or other types -> uint8).

    Raises:
        WireFormatError / ValidationError: the blob is malformed or invalid.
        VyreReferenceError: bad inputs or a runtime error the reference defines.
        UnsupportedOpError: the program uses an op the device cannot run with the reference's
            semantics.
        HurrayGPUError: ``max_loop_passes`` given for a reference run (it has no such bound).
    """
    blob = Path(path).read_bytes()
    if device == "reference":
        if max_loop_passes is not None:
            raise HurrayGPUError("--max-loop-passes bounds device runs; the reference interpreter "
                                 "has no loop-pass bound", fix="add --device cpu (or another "
                                 "device), or drop --max-loop-passes.")
        return run(blob, inputs, grid=grid)
    passes = DEFAULT_MAX_LOOP_PASSES if max_loop_passes is None else max_loop_passes
    return run(blob, inputs, grid=grid, device=device, max_loop_passes=passes)


def _kat(path: str, kat_path: str, device: str, passes: int | None
         ) -> tuple[dict[str, np.ndarray], dict[str, bool]]:
    try:
        kat = json.loads(Path(kat_path).read_text())
        expected = {o["buffer"]: bytes.fromhex(o["hex"]) for o in kat["outputs"]}
        inputs = {i["buffer"]: bytes.fromhex(i["hex"]) for i in kat["inputs"]}
        grid = tuple(int(g) for g in kat["grid_workgroups"])
    except (ValueError, KeyError, TypeError) as exc:
        raise HurrayGPUError(f"malformed known-answer vector {kat_path}: {exc}",
                             fix="pass a NAME.kat.json from tests/golden/vyre.") from None
    out = run_program(path, inputs, grid, device, passes)
    return out, {k: k in out and out[k].tobytes() == v for k, v in expected.items()}


def _value(v: Any) -> Any:
    # JSON has no NaN or infinity: those floats are written as Python spells them ("nan").
    return v if not isinstance(v, float) or math.isfinite(v) else str(v)


def output_json(outputs: dict[str, np.ndarray], checks: dict[str, bool], engine: str
                ) -> dict[str, Any]:
    """The ``run --json`` document: engine, each output's hex bytes, element type and values,
    and the known-answer comparisons."""
    return {"engine": engine,
            "outputs": {k: a.tobytes().hex() for k, a in outputs.items()},
            "dtypes": {k: a.dtype.name for k, a in outputs.items()},
            "values": {k: [_value(v) for v in a.tolist()] for k, a in outputs.items()},
            "kat_match": checks}


def _render(outputs: dict[str, np.ndarray], checks: dict[str, bool], engine: str) -> str:
    lines = [f"ran on: {engine}"]
    for name, arr in outputs.items():
        data = arr.tobytes()
        words = np.frombuffer(data[: len(data) // 4 * 4], "<u4")
        shown = " ".join(f"{w:#010x}" for w in words[:SHOW_VALUES])
        more = " ..." if len(words) > SHOW_VALUES else ""
        lines.append(f"{name}: {len(data)} B  u32: {shown}{more}")
    for name, ok in checks.items():
        lines.append(f"kat {name}: {'match' if ok else 'MISMATCH'}")
    return "\n".join(lines)


def _run_program_cmd(args: argparse.Namespace) -> int:
    if args.kat:
        outputs, checks = _kat(args.path, args.kat, args.device, args.max_loop_passes)
    else:
        outputs = run_program(args.path, parse_inputs(args.inputs), _parse_grid(args.grid),
                              args.device, args.max_loop_passes)
        checks = {}
    engine = _engine(args.device)
    if args.json:
        print(json.dumps(output_json(outputs, checks, engine), indent=2))
    else:
        args.show(_render(outputs, checks, engine))
    return 0 if all(checks.values()) else 1


def main(argv: list[str] | None = None) -> int:
    """``python -m vyre``: the same ``inspect`` and ``run`` as ``hurray-gpu vyre``.

    Args:
        argv: arguments (default ``sys.argv[1:]``).

    Returns:
        0 on success; 1 when the blob does not decode, a run fails or a known answer does not
        match; 2 on a usage or I/O error (errors: one ``error: ... Fix: ...`` line on stderr).
    """
    parser = argparse.ArgumentParser(prog="python -m vyre", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_commands(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except HurrayGPUError as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"error: {exc}. Fix: check that the path exists and is readable.", file=sys.stderr)
        return 2
