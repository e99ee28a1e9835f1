"""Derive the polynomial coefficients of the correctly rounded f32 functions (dialect/crmath.py).

    python3 ci/crmath_coeffs.py            # rewrites hurray_gpu/dialect/crmath_coeffs.py
    python3 ci/crmath_coeffs.py --check    # exits 1 if the committed file differs

Each polynomial is a Chebyshev fit (mpmath ``chebyfit``, 256-bit arithmetic) of a smooth
function on the interval the reduction leaves, its coefficients rounded to f64; the degree is
the smallest that keeps the assembled approximation's relative error (checked at 4001 points
in 256-bit arithmetic) under 2^-62, far below the 2^-50..2^-51 that each function's rounding
test allows for its f64 evaluation; the error with the coefficients rounded to f64 (about
2^-54, from the leading coefficients) is written next to each.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mpmath as mp

mp.mp.prec = 256
TARGET = mp.mpf(2) ** -62
OUT = Path(__file__).resolve().parent.parent / "hurray_gpu" / "dialect" / "crmath_coeffs.py"

Fn = Callable[[mp.mpf], mp.mpf]


def _fit(inner: Fn, whole: Fn, assemble: Callable[[mp.mpf, list[Any]], mp.mpf],
         lo: float, hi: float) -> tuple[list[float], float]:
    """Coefficients (highest degree first) of the lowest degree fit of ``inner`` on [lo, hi]
    that, assembled, is within TARGET of ``whole`` relative; and log2 of that relative error
    once the coefficients are rounded to f64 (the leading ones' rounding dominates it: the
    functions' error bounds count it)."""
    grid = [mp.mpf(lo) + (mp.mpf(hi) - mp.mpf(lo)) * k / 4000 for k in range(4001)]
    grid = [g for g in grid if g != 0] + [mp.mpf(lo) / 2**30 if lo else mp.mpf(hi) / 2**30]
    def safe(t: mp.mpf) -> mp.mpf:  # removable singularities at 0: the limit, numerically
        return inner(t if t != 0 else mp.mpf(2) ** -200)

    for n in range(2, 40):
        poly, _ = mp.chebyfit(safe, [lo, hi], n, error=True)
        if max(abs(assemble(t, poly) / whole(t) - 1) for t in grid) < TARGET:
            coeffs = [float(c) for c in poly]
            worst = max(abs(assemble(t, coeffs) / whole(t) - 1) for t in grid)
            return coeffs, float(mp.log(worst, 2))
    raise SystemExit(f"no fit under 2^-62 on [{lo}, {hi}]")


def _horner(t: mp.mpf, coeffs: list[Any]) -> mp.mpf:
    acc = mp.mpf(0)
    for c in coeffs:
        acc = acc * t + mp.mpf(c)
    return acc


def _odd(f: Fn) -> tuple[Fn, Fn, Callable[[mp.mpf, list[Any]], mp.mpf]]:
    """f(t) = t + t^3 Q(t^2): fit Q over z = t^2."""
    def inner(z: mp.mpf) -> mp.mpf:
        t = mp.sqrt(z)
        return (f(t) - t) / t**3

    def whole(z: mp.mpf) -> mp.mpf:
        return f(mp.sqrt(z))

    def assemble(z: mp.mpf, c: list[float]) -> mp.mpf:
        t = mp.sqrt(z)
        return t + t * z * _horner(z, c)

    return inner, whole, assemble


def _even(f: Fn) -> tuple[Fn, Fn, Callable[[mp.mpf, list[Any]], mp.mpf]]:
    """f(t) = 1 + t^2 C(t^2) (f(0) = 1): fit C over z = t^2."""
    return ((lambda z: (f(mp.sqrt(z)) - 1) / z), (lambda z: f(mp.sqrt(z))),
            (lambda z, c: 1 + z * _horner(z, c)))


def _expo(base: mp.mpf) -> tuple[Fn, Fn, Callable[[mp.mpf, list[Any]], mp.mpf]]:
    """base^t = 1 + t P(t)."""
    return ((lambda t: (mp.power(base, t) - 1) / t), (lambda t: mp.power(base, t)),
            (lambda t, c: 1 + t * _horner(t, c)))


def _atanh_form(scale: mp.mpf) -> tuple[Fn, Fn, Callable[[mp.mpf, list[Any]], mp.mpf]]:
    """log((1+s)/(1-s)) * scale = s L(s^2): fit L over z = s^2."""
    def inner(z: mp.mpf) -> mp.mpf:
        s = mp.sqrt(z)
        return 2 * mp.atanh(s) * scale / s

    return (inner, lambda z: 2 * mp.atanh(mp.sqrt(z)) * scale,
            lambda z, c: mp.sqrt(z) * _horner(z, c))


# Intervals: exp2's f = x - round(x) (|f| <= 1/2 plus the f32 rounding of x + 0.5), exp's
# r = x - k ln2 (|r| <= ln2/2 plus k's f32 rounding), the log forms' s = (m-1)/(m+1) for
# m in [sqrt(1/2), sqrt(2)], sinh and tanh below their exp-form thresholds (1 and 1/2), atan
# below tan(pi/8), sin and cos on the reduced argument (|r| <= pi/4).
S_MAX = (mp.sqrt(2) - 1) / (mp.sqrt(2) + 1)
FITS: dict[str, tuple[tuple[Fn, Fn, Callable[[mp.mpf, list[Any]], mp.mpf]], float, float]] = {
    "EXP2": (_expo(mp.mpf(2)), -0.502, 0.502),
    "EXP": (_expo(mp.e), -0.3501, 0.3501),
    "LOG": (_atanh_form(mp.mpf(1)), 0.0, float(S_MAX**2 * (1 + mp.mpf(2) ** -20))),
    "LOG2": (_atanh_form(1 / mp.log(2)), 0.0, float(S_MAX**2 * (1 + mp.mpf(2) ** -20))),
    "SINH": (_odd(mp.sinh), 0.0, 1.0),
    "TANH": (_odd(mp.tanh), 0.0, 0.25),
    "ATAN": (_odd(mp.atan), 0.0, float((mp.sqrt(2) - 1) ** 2 * (1 + mp.mpf(2) ** -20))),
    "SIN": (_odd(mp.sin), 0.0, float((mp.pi / 4) ** 2 * (1 + mp.mpf(2) ** -20))),
    "COS": (_even(mp.cos), 0.0, float((mp.pi / 4) ** 2 * (1 + mp.mpf(2) ** -20))),
}
# Cody-Waite pi/2 = CW1 + CW2 + CW3 for |x| < 2^16 (k < 2^16): CW1 and CW2 have 37 bits, so
# k * CW1 and k * CW2 are exact; CW3 is the rest rounded to f64.
CW_BITS = 37


def generate() -> str:
    """The text of crmath_coeffs.py."""
    lines = ['"""Polynomial coefficients of dialect/crmath.py, highest degree first.',
             "", "Generated by ci/crmath_coeffs.py (mpmath Chebyshev fits); do not edit.",
             '"""', "", "from __future__ import annotations", "",
             "COEFFS: dict[str, tuple[float, ...]] = {"]
    for name, ((inner, whole, assemble), lo, hi) in FITS.items():
        coeffs, err = _fit(inner, whole, assemble, lo, hi)
        lines.append(f'    # on [{lo}, {hi}]: degree {len(coeffs) - 1}, relative error 2^{err:.1f}')
        lines.append(f'    "{name}": (')
        lines += [f"        {c!r}," for c in coeffs]
        lines.append("    ),")
    lines.append("}")
    lines.append("# Constants: LN2HI is ln 2 to 44 bits (k * LN2HI is exact for |k| < 512).")
    ln2 = mp.log(2)
    hi = mp.floor(ln2 * 2**44) / 2**44
    consts = {"LN2": ln2, "LN2HI": hi, "LN2LO": ln2 - hi, "PI": mp.pi, "PI_2": mp.pi / 2,
              "PI_4": mp.pi / 4}
    half_pi = mp.pi / 2
    cw1 = mp.floor(half_pi * 2 ** (CW_BITS - 1)) / 2 ** (CW_BITS - 1)
    cw2 = mp.floor((half_pi - cw1) * 2 ** (2 * CW_BITS - 1)) / 2 ** (2 * CW_BITS - 1)
    consts.update({"INV_PIO2": 2 / mp.pi, "CW1": cw1, "CW2": cw2, "CW3": half_pi - cw1 - cw2})
    lines.append("CONSTS: dict[str, float] = {")
    lines += [f'    "{k}": {float(v)!r},' for k, v in consts.items()]
    lines.append("}")
    words = int(mp.floor(2 / mp.pi * mp.mpf(2) ** 256))
    lines.append("# 2/pi in 32-bit words, most significant first: word j holds the bits of weights "
                 "2^(-32j+31)")
    lines.append("# .. 2^(-32j) (word 0 is 0: 2/pi < 1); Payne-Hanek reduction reads five "
                 "from word (e + 30) / 32.")
    lines.append("TWO_OVER_PI: tuple[int, ...] = (")
    lines += ["    0x00000000,"] + [f"    0x{(words >> (256 - 32 * j)) & 0xFFFFFFFF:08X},"
                                  for j in range(1, 9)]
    lines.append(")")
    return "\n".join(lines) + "\n"


def main() -> int:
    text = generate()
    if "--check" in sys.argv[1:]:
        same = OUT.exists() and OUT.read_text() == text
        print("crmath_coeffs: up to date" if same else "crmath_coeffs: differs; rerun")
        return 0 if same else 1
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
