"""Command line: ``python -m fuzz {atheris,smoke,seeds,replay} HARNESS ...`` (see README.md)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from . import HARNESS_NAMES


def _atheris(name: str, libfuzzer_args: list[str]) -> int:
    import atheris

    with atheris.instrument_imports(include=["hurray_gpu", "vyre"]):
        from .harnesses import get

        harness = get(name)
    # Tracing every input halves the speed but enforces the memory bound exactly; libFuzzer's
    # -rss_limit_mb only sees touched pages, and -malloc_limit_mb needs a sanitizer runtime.
    measure = os.environ.get("FUZZ_TRACEMALLOC", "1") != "0"
    from ._engine import SLOWDOWN, STICKY_TRACING

    SLOWDOWN[0] = 4.0
    STICKY_TRACING[0] = measure  # every input is traced: never pay the start/stop leak

    def test_one_input(data: bytes) -> None:
        harness.one_input(data, measure_memory=measure)

    atheris.Setup([sys.argv[0], *libfuzzer_args], test_one_input)
    atheris.Fuzz()
    return 0


def _smoke(name: str, inputs: int, seed: int, save_to: str | None) -> int:
    from ._engine import smoke
    from .harnesses import get

    def keep(data: bytes, exc: BaseException) -> None:
        if save_to:
            Path(save_to).mkdir(parents=True, exist_ok=True)
            Path(save_to, f"smoke-{name}-{seed}").write_bytes(data)
        print(f"FAILED on input {data.hex()}: {exc}", file=sys.stderr)

    t0 = time.perf_counter()
    stats = smoke(get(name), inputs, seed=seed, on_failure=keep)
    print(f"{name}: {stats.inputs} inputs reached the decoder ({stats.decoded} decoded, "
          f"{stats.rejected} rejected) in {time.perf_counter() - t0:.2f} s; "
          f"slowest {stats.max_seconds * 1e3:.2f} ms; {stats.memory_checked} memory-checked; "
          f"{stats.notes or ''}")
    return 0


def _replay(name: str, files: list[str]) -> int:
    from ._engine import FuzzFailure
    from .harnesses import get

    harness, failed = get(name), 0
    for f in files:
        try:
            harness.one_input(Path(f).read_bytes(), measure_memory=True)
        except FuzzFailure as exc:
            failed += 1
            print(f"{f}: {exc}")
    print(f"{len(files) - failed} passed, {failed} failed")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    """Entry point.

    Returns:
        The process exit status.
    """
    parser = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("atheris", help="coverage-guided run; extra args go to libFuzzer")
    a.add_argument("harness", choices=HARNESS_NAMES)
    s = sub.add_parser("smoke", help="deterministic in-process mutation loop")
    s.add_argument("harness", choices=HARNESS_NAMES)
    s.add_argument("--inputs", type=int, default=20_000)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--save-failure", metavar="DIR")
    w = sub.add_parser("seeds", help="write the seed inputs into DIR")
    w.add_argument("harness", choices=HARNESS_NAMES)
    w.add_argument("dir")
    r = sub.add_parser("replay", help="run inputs through the harness, memory checked")
    r.add_argument("harness", choices=HARNESS_NAMES)
    r.add_argument("files", nargs="+")
    args, rest = parser.parse_known_args(argv)
    if args.cmd == "atheris":
        return _atheris(args.harness, rest)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.cmd == "smoke":
        return _smoke(args.harness, args.inputs, args.seed, args.save_failure)
    if args.cmd == "seeds":
        from .seeds import write_seeds

        print(write_seeds(args.harness, args.dir))
        return 0
    return _replay(args.harness, args.files)


if __name__ == "__main__":
    sys.exit(main())
