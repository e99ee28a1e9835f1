"""Exhaustive check of the correctly rounded f32 functions (hurray_gpu/dialect/crmath.py).

    python3 ci/crmath_exhaustive.py EXP LOG2 ...  [--work DIR] [--threads N] [--write-tables]

For every one of the 2^32 inputs, the function's host C rendering (compiled natively, OpenMP)
is compared with a correctly rounded reference: glibc's f64 function rounded to f32, except
where that f64 value lies within 2^-49 (relative) of an f32 rounding boundary, where mpmath
(256 bits) settles the result. The same pass lists the inputs whose f64 core value lies within
2*EPS of a boundary: the exceptions table. ``--write-tables`` stores them (results from mpmath)
in hurray_gpu/dialect/crmath_tables.py, and then the rendered function, with its new table, is
run again on every listed and every mpmath-settled input: the other inputs never reach the
table, so the full pass already verified them.

Resumable: the range runs in 64 chunks, each saved under --work (default /tmp/crmath-exh) as it
completes; a rerun skips chunks already done for the same function text. Prints every mismatch;
exits 1 if there is any.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hurray_gpu.dialect import crmath  # noqa: E402
from hurray_gpu.dialect.cstyle import _HOST_PRELUDE, HostCRenderer  # noqa: E402
from tests._crmath import exact  # noqa: E402

CHUNKS = 64
REF_C = {"EXP": "exp(x)", "EXP2": "exp2(x)", "LOG": "log(x)", "LOG2": "log2(x)",
         "RSQRT": "1.0 / sqrt(x)", "SINH": "sinh(x)", "COSH": "cosh(x)", "TANH": "tanh(x)",
         "ATAN": "atan(x)", "ASIN": "asin(x)", "ACOS": "acos(x)", "SIN": "sin(x)",
         "COS": "cos(x)", "TAN": "tan(x)"}

HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
%(prelude)s
%(funcs)s
static double ref_f(double x) { return %(ref)s; }
static void one(uint32_t u, double eps, double *worst) {
    float x = hg_as_f32(u);
    float ours = hg_cr_%(lname)s(x);
    double y = %(core)s;
    double m = y * (2 * eps);  /* not (y * 2) * eps: that overflows for y near DBL_MAX */
    if (isfinite(y) && hg_as_u32((float)(y - m)) != hg_as_u32((float)(y + m))) {
        #pragma omp critical
        printf("C %%u\n", u);
    }
    double r = ref_f((double)x);
    uint32_t want = hg_as_u32((float)r), got = hg_as_u32(ours);
    if (isfinite(r) && hg_as_u32((float)(r - r * 0x1p-49)) != hg_as_u32((float)(r + r * 0x1p-49))) {
        #pragma omp critical
        printf("R %%u %%u\n", u, got);
        return;
    }
    if (isfinite(y) && fabs(r) >= 0x1p-126 && fabs(r) < 0x1p127 && fabs((y - r) / r) > *worst)
        *worst = fabs((y - r) / r);
    int both_nan = ((want & 0x7fffffffu) > 0x7f800000u) && ((got & 0x7fffffffu) > 0x7f800000u);
    if (want != got && !both_nan) {
        #pragma omp critical
        printf("M %%u %%u %%u\n", u, got, want);
    }
}
int main(int argc, char **argv) {
    double eps = %(eps)r, worst = 0.0;
    if (argc == 3 && argv[1][0] == 'r') {
        int64_t lo = strtoll(argv[2], NULL, 10), hi = lo + %(span)d;
        #pragma omp parallel
        {
            double w = 0.0;
            #pragma omp for schedule(dynamic, 65536)
            for (int64_t i = lo; i < hi; i++) one((uint32_t)i, eps, &w);
            #pragma omp critical
            if (w > worst) worst = w;
        }
    } else {
        unsigned u;
        FILE *f = fopen(argv[2], "r");
        while (f && fscanf(f, "%%u", &u) == 1) {
            float x = hg_as_f32(u);
            printf("V %%u %%u\n", u, hg_as_u32(hg_cr_%(lname)s(x)));
        }
    }
    printf("W %%.6f\n", worst > 0 ? log2(worst) : -1100.0);
    return 0;
}
"""


def render_harness(name: str) -> str:
    """The harness C source for ``name`` (the rendered host C of its functions included)."""
    r = HostCRenderer()
    funcs = [r.f64_helpers] + [r.translate(t) for t in crmath.crmath_helpers({f"CR_{name}"})]
    core = dict(crmath._CORES)[name][1]
    return HARNESS % {"prelude": _HOST_PRELUDE, "funcs": "\n".join(funcs), "ref": REF_C[name],
                      "lname": name.lower(), "core": core, "eps": crmath.EPS[name],
                      "span": 2**32 // CHUNKS}


def build(name: str, work: Path) -> tuple[Path, str]:
    """Compile the harness; returns the binary and its source digest."""
    src = render_harness(name)
    digest = hashlib.sha256(src.encode()).hexdigest()[:16]
    exe = work / f"{name}-{digest}"
    if not exe.exists():
        c = work / f"{name}-{digest}.c"
        c.write_text(src)
        subprocess.run(["cc", "-O2", "-std=gnu11", "-march=native", "-fno-math-errno",
                        "-ffp-contract=off", "-fopenmp", str(c), "-o", str(exe), "-lm"],
                       check=True)
    return exe, digest


def run_all(name: str, work: Path) -> dict[str, object]:
    """The full pass, chunk by chunk (resumable)."""
    exe, digest = build(name, work)
    lines: list[str] = []
    for k in range(CHUNKS):
        out = work / f"{name}-{digest}.{k:02d}"
        if not out.exists():
            done = subprocess.run([str(exe), "r", str(k * (2**32 // CHUNKS))], check=True,
                                  capture_output=True, text=True)
            out.with_suffix(".tmp").write_text(done.stdout)
            out.with_suffix(".tmp").replace(out)
            print(f"{name}: chunk {k + 1}/{CHUNKS}", flush=True)
        lines += out.read_text().splitlines()
    cands = sorted(int(s.split()[1]) for s in lines if s.startswith("C "))
    if len(cands) > 100_000:  # a few hundred at most for a sound error bound
        raise SystemExit(f"{name}: {len(cands)} inputs near a rounding boundary: a broken core")
    settle = [tuple(map(int, s.split()[1:])) for s in lines if s.startswith("R ")]
    bad = [s for s in lines if s.startswith("M ")]
    worst = max(float(s.split()[1]) for s in lines if s.startswith("W "))
    for u, got in settle:
        want = exact(name, u)
        if got != want and not (_nan(got) and _nan(want)):
            bad.append(f"M {u} {got} {want} (mpmath)")
    return {"candidates": cands, "settled": [u for u, _ in settle], "mismatches": bad,
            "log2_worst_rel_err": worst}


def _nan(bits: int) -> bool:
    return (bits & 0x7FFFFFFF) > 0x7F800000


def write_tables(found: dict[str, list[int]]) -> None:
    """Store the exceptions of ``found`` (merged with the other functions' current ones)."""
    tables = {k: dict(v) for k, v in crmath.TABLES.items()}
    keyed = {k: dict(v) for k, v in crmath.KEYED.items()}
    for name, cands in found.items():
        plain, keys = {}, {}
        for u in cands:
            if name == "RSQRT" and 0x800000 <= u < 0x7F800000:
                key = u & 0xFFFFFF
                keys[key] = exact(name, 0x3F000000 | key)
            else:
                plain[u] = exact(name, u)
        tables[name], keyed[name] = plain, keys
    path = ROOT / "hurray_gpu" / "dialect" / "crmath_tables.py"
    head = path.read_text().split("TABLES:")[0]
    body = ["TABLES: dict[str, dict[int, int]] = {", *_rows(tables, 8), "}",
            "# RSQRT: keyed by u & 0xffffff (mantissa and exponent parity), results for the "
            "input in [1/2, 2).", "KEYED: dict[str, dict[int, int]] = {", *_rows(keyed, 6), "}"]
    path.write_text(head + "\n".join(body) + "\n")


def _rows(tables: dict[str, dict[int, int]], width: int) -> list[str]:
    """``"NAME": _pairs(\"\"\"...\"\"\"),`` per function: four (input, result) pairs a line."""
    out = []
    for name in sorted(t for t in tables if tables[t]):
        words = [f"{k:0{width}x} {v:08x}" for k, v in sorted(tables[name].items())]
        out.append(f'    "{name}": _pairs("""')
        out += ["        " + "  ".join(words[i:i + 4]) for i in range(0, len(words), 4)]
        out.append('    """),')
    return out


def verify_listed(name: str, inputs: list[int], work: Path) -> list[str]:
    """Run the (re-rendered) function on ``inputs``; mismatches against mpmath."""
    exe, _ = build(name, work)
    lst = work / f"{name}.list"
    lst.write_text("\n".join(map(str, inputs)) + "\n")
    done = subprocess.run([str(exe), "l", str(lst)], check=True, capture_output=True, text=True)
    bad = []
    for s in done.stdout.splitlines():
        if s.startswith("V "):
            u, got = map(int, s.split()[1:])
            want = exact(name, u)
            if got != want and not (_nan(got) and _nan(want)):
                bad.append(f"M {u} {got} {want} (listed)")
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="+", choices=sorted(REF_C))
    ap.add_argument("--work", type=Path, default=Path("/tmp/crmath-exh"))
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--write-tables", action="store_true")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    failed = False
    for name in args.names:
        res = run_all(name, args.work)
        if args.write_tables:
            # Inputs in the new table ran with the old one: they are checked again below.
            cands = set(res["candidates"])  # type: ignore[call-overload]
            write_tables({name: sorted(cands)})
            importlib.reload(sys.modules["hurray_gpu.dialect.crmath_tables"])
            importlib.reload(crmath)
            listed = sorted(cands | set(res["settled"]))  # type: ignore[call-overload]
            res["mismatches"] = [m for m in res["mismatches"]  # type: ignore[attr-defined]
                                 if int(m.split()[1]) not in cands]
            res["mismatches"] += verify_listed(name, listed, args.work)  # type: ignore[operator]
        summary = {k: (len(v) if isinstance(v, list) else v) for k, v in res.items()}
        print(f"{name}: {json.dumps(summary)}")
        for line in res["mismatches"]:  # type: ignore[union-attr]
            print(f"{name}: {line}")
        failed |= bool(res["mismatches"])
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
