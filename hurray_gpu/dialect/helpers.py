"""Conversion helpers written once in the portable subset and rendered like kernel bodies.

Rounding is round-to-nearest-even, matching NumPy's ``astype(float16)`` and ml_dtypes.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["HELPERS", "helpers_for"]

F16_TO_F32 = """
FUNC f32 hg_f16_to_f32(u32 h) {
    u32 sign = (h & 0x8000u) << 16u;
    u32 expo = (h >> 10u) & 0x1fu;
    u32 mant = h & 0x3ffu;
    if (expo == 0x1fu) return AS_F32(sign | 0x7f800000u | (mant << 13u));
    if (expo != 0u) return AS_F32(sign | ((expo + 112u) << 23u) | (mant << 13u));
    // Subnormal: mant * 2^-24 is exact in f32.
    return AS_F32(sign | AS_U32(F32(mant) * 5.9604644775390625e-8f));
}
"""

F32_TO_F16 = """
FUNC u32 hg_f32_to_f16(f32 v) {
    u32 b = AS_U32(v);
    u32 sign = (b >> 16u) & 0x8000u;
    u32 a = b & 0x7fffffffu;
    if (a > 0x7f800000u) {
        // NaN keeps its top payload bits and stays a NaN, as NumPy does.
        u32 m = (a >> 13u) & 0x3ffu;
        return sign | 0x7c00u | (m == 0u ? 1u : m);
    }
    if (a >= 0x477ff000u) return sign | 0x7c00u;
    if (a >= 0x38800000u) return sign | ((a + 0xfffu + ((a >> 13u) & 1u) - 0x38000000u) >> 13u);
    u32 e = a >> 23u;
    if (e < 102u) return sign;
    u32 m = (a & 0x7fffffu) | 0x800000u;
    u32 s = 126u - e;
    return sign | ((m + (1u << (s - 1u)) - 1u + ((m >> s) & 1u)) >> s);
}
"""

BF16_TO_F32 = """
FUNC f32 hg_bf16_to_f32(u32 h) {
    return AS_F32((h & 0xffffu) << 16u);
}
"""

F32_TO_BF16 = """
FUNC u32 hg_f32_to_bf16(f32 v) {
    u32 b = AS_U32(v);
    // NaN becomes the canonical quiet NaN with its sign, as ml_dtypes does.
    if ((b & 0x7fffffffu) > 0x7f800000u) return ((b >> 16u) & 0x8000u) | 0x7fc0u;
    return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}
"""

HELPERS: dict[str, str] = {
    "hg_f16_to_f32": F16_TO_F32,
    "hg_f32_to_f16": F32_TO_F16,
    "hg_bf16_to_f32": BF16_TO_F32,
    "hg_f32_to_bf16": F32_TO_BF16,
}


def helpers_for(buffers: Iterable[tuple[str, str]], soft_f16: bool) -> list[str]:
    """Names of the helpers needed by ``(dtype, access)`` buffers, in a stable order.

    Only the directions used are emitted: compilers warn about unused static functions.
    """
    wanted: set[str] = set()
    for dtype, access in buffers:
        if dtype == "bf16" or (dtype == "f16" and soft_f16):
            if access != "w":
                wanted.add(f"hg_{dtype}_to_f32")
            if access != "r":
                wanted.add(f"hg_f32_to_{dtype}")
    return [name for name in HELPERS if name in wanted]
