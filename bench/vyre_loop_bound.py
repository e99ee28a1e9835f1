"""The cost of the kernel's loop pass bound (max_loop_passes, docs/reliability.md): the same
loop-heavy programs lowered with the bound and without it,
launched interleaved in one process, warm; min/median/max of --rounds rounds per device.

Usage: python bench/vyre_loop_bound.py [--quick] [--rounds 5] [--n 256] [--json out.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

if (Path(__file__).resolve().parents[1] / "hurray_gpu").is_dir():  # a checkout, not a wheel
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import importlib  # noqa: E402

from hurray_gpu.runtime.buffer import Buffer  # noqa: E402
from hurray_gpu.runtime.registry import devices  # noqa: E402
from vyre import builder as b  # noqa: E402
from vyre.execute import DEFAULT_MAX_LOOP_PASSES  # noqa: E402
from vyre.programs import matmul_program  # noqa: E402

vl = importlib.import_module("vyre.lower")  # the module (vyre.lower is also a function)


def _sum_program() -> Any:
    """Per invocation: the sum of i ^ (i >> 3) over a loop of n[0] passes."""
    i = b.var("i")
    return b.program([b.read("n", 0, b.U32), b.output("out", 1, b.U32, 64)], [
        b.let("acc", 0),
        b.loop("i", 0, b.load("n", 0), [
            b.assign("acc", b.wrapping_add(b.var("acc"), b.bit_xor(i, b.shr(i, 3))))]),
        b.store("out", b.invocation_id(0), b.var("acc"))], workgroup_size=(64, 1, 1))


def _lower(program: Any, bounded: bool) -> Any:
    """The lowering with the pass bound, or without it (as on a device with a driver budget:
    the after-loop checks stay; they run once per loop)."""
    real = vl.Ctx
    if not bounded:
        vl.Ctx = lambda *a, **k: real(*a, **{**k, "pass_budget": False})
    try:
        lowered = vl.lower(program)
    finally:
        vl.Ctx = real
    return lowered, dataclasses.replace(lowered.kernel, name=lowered.kernel.name + ("_b" if bounded else "_u"))


def _launcher(dev: Any, program: Any, bounded: bool, data: dict[str, bytes], grid: Any) -> Any:
    lowered, kernel = _lower(program, bounded)
    assert ("passmax" in kernel.body) == bounded
    args: dict[str, Any] = {}
    for slot in lowered.slots:
        args[slot.param] = Buffer.from_bytes(dev, data[slot.decl.name])
        args[slot.length] = len(data[slot.decl.name]) // 4
    if lowered.uses_trap:
        args[vl.TRAP_PARAM] = Buffer.from_bytes(dev, bytes(8))
    if bounded:
        args[vl.PASS_PARAM] = DEFAULT_MAX_LOOP_PASSES
    size = tuple(g * w for g, w in zip(grid, program.workgroup_size, strict=True))
    out = args[lowered.slots[-1].param]

    def launch() -> bytes:
        dev.run(kernel, global_size=size, wait=True, **args)
        return bytes(out.copyout())
    return launch


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5, help="rounds (at least 3)")
    parser.add_argument("--n", type=int, default=256, help="matmul size")
    parser.add_argument("--quick", action="store_true", help="n=64 and 3 rounds")
    parser.add_argument("--json", type=Path, default=None, help="write the rows here")
    opts = parser.parse_args(argv)
    rng = np.random.default_rng(5)
    n = 64 if opts.quick else opts.n
    rounds = 3 if opts.quick else max(3, opts.rounds)
    mat = {"a": rng.integers(0, 1 << 16, n * n, np.uint32).tobytes(),
           "b": rng.integers(0, 1 << 16, n * n, np.uint32).tobytes(),
           "out": bytes(4 * n * n)}
    cases = [(f"matmul {n}x{n}", matmul_program(n), mat, (-(-n // 16), -(-n // 16), 1)),
             ("loop_sum", _sum_program(), {"n": np.uint32(1 << (18 if opts.quick else 22))
                                           .tobytes(), "out": bytes(4 * 64)}, (1, 1, 1))]
    rows = []
    for dev in devices():
        if dev.kind not in ("cpu", "opencl"):
            continue
        for name, program, data, grid in cases:
            runs = {bounded: _launcher(dev, program, bounded, data, grid)
                    for bounded in (False, True)}
            assert runs[False]() == runs[True]()  # warm, and the same result
            times: dict[bool, list[float]] = {False: [], True: []}
            for _ in range(rounds):
                for bounded, launch in runs.items():
                    start = time.perf_counter()
                    launch()
                    times[bounded].append(time.perf_counter() - start)
            # Bounded time over unbounded, round by round (the two took turns).
            ratios = [b / u for b, u in zip(times[True], times[False], strict=True)]
            row: dict[str, Any] = {"device": dev.spec, "program": name}
            for key, got in (("unbounded_ms", times[False]), ("bounded_ms", times[True]),
                             ("bounded_over_unbounded", ratios)):
                got = [v * 1e3 for v in got] if key.endswith("_ms") else got
                row[key], row[f"{key}_range"] = statistics.median(got), [min(got), max(got)]
            rows.append(row)
            print(f"{dev.spec:10} {name:14} ms min/med/max unbounded "
                  f"{_three(row, 'unbounded_ms', '.1f')}  bounded {_three(row, 'bounded_ms', '.1f')}"
                  f"  ratio {_three(row, 'bounded_over_unbounded', '.3f')}")
    if opts.json:
        opts.json.parent.mkdir(parents=True, exist_ok=True)
        opts.json.write_text(json.dumps({"rounds": rounds, "rows": rows}, indent=2))


def _three(row: dict[str, Any], key: str, fmt: str) -> str:
    low, high = row[f"{key}_range"]
    return "/".join(format(v, fmt) for v in (low, row[key], high))


if __name__ == "__main__":
    main()
