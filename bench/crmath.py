"""Cost of the correctly rounded f32 functions (CR_*, hurray_gpu/dialect/crmath.py) on cpu:0.

Usage: python bench/crmath.py [--n 1048576] [--runs 5] [--names SIN COS ...] [--json out.json]

For each function, one cpu:0 kernel applies ``CR_<NAME>`` to n inputs (a typical domain per
function: exp over [-80, 80], log over (0, 1e6], asin over [-1, 1]...), against the host
libm's own f32 function (``expf``, ``logf``...; InverseSqrt: ``1.0f / sqrtf``) over the same
inputs, compiled with the cpu backend's flags and spread over the same OpenMP threads (sin,
cos, tan over [-100, 100]: the Cody-Waite range; glibc's sinf/cosf/tanf are not correctly
rounded). Both write into reused outputs; the calls take turns in every round (wall time, or
with ``--clock cpu`` the process's CPU time, all threads: steadier on a loaded machine).
Reported per function: libm time / ours (``vs_peer``, below 1: ours is slower) and both G
elements/s, each min / median / max over the rounds.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._timing import on_host, ratio, rounds, spread  # noqa: E402
from hurray_gpu.dialect import KernelDef, buf, scalar  # noqa: E402
from hurray_gpu.dialect.crmath import CR_FUNCS  # noqa: E402
from hurray_gpu.runtime.buffer import Buffer  # noqa: E402
from hurray_gpu.runtime.registry import resolve_device  # noqa: E402

LIBM = {"EXP": "expf(x)", "EXP2": "exp2f(x)", "LOG": "logf(x)", "LOG2": "log2f(x)",
        "RSQRT": "1.0f / sqrtf(x)", "SINH": "sinhf(x)", "COSH": "coshf(x)",
        "TANH": "tanhf(x)", "ATAN": "atanf(x)", "ASIN": "asinf(x)", "ACOS": "acosf(x)",
        "SIN": "sinf(x)", "COS": "cosf(x)", "TAN": "tanf(x)"}
DOMAIN = {"EXP": (-80, 80), "EXP2": (-120, 120), "LOG": (0, 1e6), "LOG2": (0, 1e6),
          "RSQRT": (0, 1e6), "SINH": (-80, 80), "COSH": (-80, 80), "TANH": (-10, 10),
          "ATAN": (-100, 100), "ASIN": (-1, 1), "ACOS": (-1, 1), "SIN": (-100, 100),
          "COS": (-100, 100), "TAN": (-100, 100)}


def _kernel(name: str) -> KernelDef:
    return KernelDef(
        f"bench_cr_{name.lower()}", (buf("src", "f32"), buf("dst", "f32", "w"), scalar("n")),
        f"u32 i = GLOBAL_ID(0);\nif (i >= n) return;\nSTORE(dst, i, CR_{name}(LOAD(src, i)));",
        grid=lambda s: (s["n"],), extents=lambda s: {"src": s["n"], "dst": s["n"]},
        reference=lambda a: None, doc=f"dst = CR_{name}(src)")


def _libm(dev: Any) -> Any:
    """The libm loops, one exported function per name, built with the cpu backend's flags."""
    body = ["#include <math.h>", "#include <stdint.h>"]
    for name, call in LIBM.items():
        body.append(f"void libm_{name.lower()}(const float *restrict s, float *restrict d, "
                    f"int64_t n) {{\n#pragma omp parallel for schedule(static)\n"
                    f"    for (int64_t i = 0; i < n; i++) {{ float x = s[i]; d[i] = {call}; }}\n}}")
    tmp = Path(tempfile.mkdtemp(prefix="crmath_bench_"))
    (tmp / "libm.c").write_text("\n".join(body) + "\n")
    subprocess.run(["cc", "-shared", "-fPIC", *dev.compiler.options(), str(tmp / "libm.c"), "-o",
                    str(tmp / "libm.so"), "-lm"], check=True)
    return ctypes.CDLL(str(tmp / "libm.so"))


def bench(n: int, runs: int, names: list[str], clock: Any = time.perf_counter
          ) -> list[dict[str, Any]]:
    """One row per function: its throughput, the libm's, and libm time / ours per round."""
    dev = resolve_device("cpu:0")
    lib = _libm(dev)
    rng = np.random.default_rng(20261202)
    out: list[dict[str, Any]] = []
    for name in names:
        lo, hi = DOMAIN[name]
        x = rng.uniform(lo, hi, n).astype(np.float32)
        src, dst = Buffer.from_bytes(dev, x.tobytes()), Buffer(dev, 4 * n)
        host_dst = np.empty(n, np.float32)
        fn = getattr(lib, f"libm_{name.lower()}")
        kernel = _kernel(name)

        def ours(kernel: KernelDef = kernel, src: Buffer = src, dst: Buffer = dst) -> None:
            dev.run(kernel, dst=dst, src=src, n=n, wait=True)

        def libm(fn: Any = fn, x: np.ndarray = x, d: np.ndarray = host_dst) -> None:
            fn(ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(d.ctypes.data), ctypes.c_int64(n))

        secs = rounds({"ours": on_host(ours, clock=clock), "libm": on_host(libm, clock=clock)},
                      runs)
        med, span = ratio(secs["libm"], secs["ours"])
        got = np.frombuffer(bytes(dst.copyout()), np.float32)
        agree = float(np.mean((got == host_dst) | (np.isnan(got) & np.isnan(host_dst))))
        rates = {k: spread([n / s / 1e9 for s in v]) for k, v in secs.items()}
        out.append({"function": name, "libm": LIBM[name].replace("(x)", ""),
                    "domain": list(DOMAIN[name]), "vs_peer": med, "vs_peer_range": span,
                    "ours_gelem_s": rates["ours"][0], "ours_gelem_s_range": rates["ours"][1],
                    "libm_gelem_s": rates["libm"][0], "libm_gelem_s_range": rates["libm"][1],
                    "same_as_libm": agree})
        print(f"{name:6s} libm/ours {span[0]:.2f} / {med:.2f} / {span[1]:.2f}  "
              f"ours {rates['ours'][0]:.3f} G/s  equal to libm f32: {agree:.4%}", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1 << 20)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--names", nargs="+", choices=CR_FUNCS, default=list(CR_FUNCS))
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    result = {"n": args.n, "runs": args.runs, "clock": args.clock,
              "rows": bench(args.n, args.runs, args.names, clock)}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
