"""Renderer golden tests ("process replay") and portable-subset lint checks.

Regenerate the expected files after an intended renderer change with
``UPDATE_EXPECTED=1 pytest tests/null/test_renderer.py`` and review the diff.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

import pytest

from hurray_gpu.dialect import DIALECTS, KernelDef, buf, get_renderer, render, scalar
from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.kernels import KERNELS, get_kernel, kernel_names

EXPECTED = Path(__file__).parent / "expected"
CASES = [(k, d) for k in kernel_names() for d in sorted(DIALECTS)]


@pytest.mark.parametrize(("kernel", "dialect"), CASES, ids=[f"{k}-{d}" for k, d in CASES])
def test_rendered_source_matches_expected(kernel: str, dialect: str) -> None:
    path = EXPECTED / f"{kernel}.{DIALECTS[dialect].extension}"
    got = render(get_kernel(kernel), dialect)
    if os.environ.get("UPDATE_EXPECTED") == "1":
        path.write_text(got)
    want = path.read_text()
    diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                        str(path), "rendered"))
    assert got == want, f"rendered {dialect} source of {kernel} changed:\n{diff}"


def test_every_expected_file_has_a_kernel() -> None:
    exts = {r.extension for r in DIALECTS.values()}
    for path in EXPECTED.iterdir():
        name, ext = path.name.rsplit(".", 1)
        assert ext in exts and name in KERNELS, f"stale expected file {path.name}"


def test_render_is_pure_and_deterministic() -> None:
    kernel = get_kernel("axpy_f32")
    assert render(kernel, "opencl") == render(kernel, "opencl")


def test_opencl_uses_vload_vstore_half_only() -> None:
    text = render(get_kernel("f32_to_f16"), "opencl")
    assert "vstore_half_rte(" in text
    assert "half " not in text.replace("__global half*", "")  # no half arithmetic


def test_glsl_buffers_are_uint_words_with_bindings() -> None:
    text = render(get_kernel("copy_bytes"), "glsl")
    assert "layout(std430, set = 0, binding = 0) buffer hg_dst_block { uint dst[]; };" in text
    assert "readonly buffer hg_src_block" in text
    assert "atomicAnd(" in text and "atomicOr(" in text
    assert "layout(push_constant) uniform hg_push_block { uint n; } hg_pc;" in text


def test_cuda_entry_is_extern_c_with_launch_bounds() -> None:
    text = render(get_kernel("transpose_u32"), "cuda")
    assert 'extern "C" __global__ void __launch_bounds__(64) transpose_u32(' in text
    assert "(blockIdx.y * blockDim.y + threadIdx.y)" in text


def test_host_c_has_uniform_ctypes_entry() -> None:
    text = render(get_kernel("fill_u32"), "c")
    assert re.search(r"void fill_u32\(void \*\*hg_bufs, const uint32_t \*hg_words", text)
    assert "#pragma omp parallel for" in text


def _kernel(body: str, **kw: object) -> KernelDef:
    params = kw.pop("params", (buf("dst", "u32", "w"), buf("src", "u32", "r"), scalar("n")))
    return KernelDef(name="k", params=params, body=body,  # type: ignore[arg-type]
                     grid=lambda s: (1,), extents=lambda s: {}, reference=lambda a: None)


@pytest.mark.parametrize("body", [
    "dst[0] = 1u;",
    "#define X 1\n",
    "u32 *p = 0;",
    "STORE(src, 0u, 1u);",
    "u32 v = LOAD(dst, 0u);",
    "u32 v = LOAD(nope, 0u);",
    "u32 v = POW(1.0f, 2.0f);",
    "u32 v = GLOBAL_ID(3);",
    "unsigned int v = 0u;",
    "u32 __x = 0u;",
    "u32 hg_t = 0u;",
    "COPY8(dst, 0u);",  # a malformed COPY8
    "COPY8(src, 0u, dst, 0u);",  # stores into a read-only buffer once expanded
    "TRANSPOSE16(dst, 0u, n, src, 0u, n);",  # no total hint
    "TRANSPOSE16(dst, 0u, n, src, LOAD(src, 0u), n, n);",  # an index that is not a sum
    "TRANSPOSE16(src, 0u, n, dst, 0u, n, n);",  # stores into a read-only buffer once expanded
    "ZORDER16(dst, 0u, n, src, 0u, n);",  # no total hint
    "ZORDER16(src, 0u, n, dst, 0u, 0u, n);",  # stores into a read-only buffer once expanded
])
def test_lint_rejects_non_portable_bodies(body: str) -> None:
    with pytest.raises(UnsupportedOpError):
        get_renderer("opencl").render(_kernel(body))


def test_unknown_dialect_is_a_typed_error() -> None:
    with pytest.raises(UnsupportedOpError, match="unknown kernel dialect"):
        render(get_kernel("fill_u32"), "metal")


@pytest.mark.parametrize("name", ["out", "main", "9x", "hg_", "Bad"])
def test_reserved_or_bad_param_names_rejected(name: str) -> None:
    with pytest.raises(ValueError):
        buf(name, "u32")


def test_duplicate_params_rejected() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        _kernel("", params=(buf("a", "u32"), scalar("a")))


def test_transpose16_is_a_register_transpose_in_host_c_and_a_loop_elsewhere() -> None:
    kernel = _kernel("u32 i = GLOBAL_ID(0); TRANSPOSE16(dst, i * 16u, n, src, i + 2u, n, n);")
    host = get_renderer("c").render(kernel)
    assert "hg_t16_u32(dst, i * 16u, n, src, i + 2u, n, hg_big(n, 4u));" in host
    assert "hg_t16_fence();\n}" in host  # streamed rows are fenced before a chunk is done
    for dialect in ("opencl", "cuda", "glsl"):
        text = get_renderer(dialect).render(kernel)
        assert "hg_t16_u32" not in text and re.search(r"t8k < 16u; t8k\+\+", text), dialect
    narrow = _kernel("TRANSPOSE16(dst, 0u, n, src, 0u, n, n);",
                     params=(buf("dst", "u16", "w"), buf("src", "u16", "r"), scalar("n")))
    assert "hg_t16_u32(dst" not in get_renderer("c").render(narrow)  # u16 words: the loop


def test_zorder16_is_register_shuffles_in_host_c_and_a_loop_elsewhere() -> None:
    kernel = _kernel("u32 i = GLOBAL_ID(0); ZORDER16(dst, i * 16u, n, src, i + 2u, 0u, n); "
                     "TRANSPOSE16(dst, i * 16u, n, src, i, n, n);")
    host = get_renderer("c").render(kernel)
    assert "hg_z16_u32(dst, i * 16u, n, src, i + 2u, 0u, hg_big(n, 4u));" in host
    assert "hg_t16_fence();\n}" in host  # streamed rows are fenced before a chunk is done
    for dialect in ("opencl", "cuda", "glsl"):
        text = get_renderer(dialect).render(kernel)
        assert "hg_z16_u32" not in text and "((t8k & 8u) << 4u)" in text, dialect
    # Both 16 x 16 statements in one kernel: their shared part is guarded (compiled once).
    assert host.count("#ifndef HG_B16_BASE") == 2 and "hg_t16_u32(dst" in host


def test_copy8_is_one_block_copy_in_host_c_and_a_loop_elsewhere() -> None:
    kernel = _kernel("u32 i = GLOBAL_ID(0); COPY8(dst, i * 8u, src, i + 2u);")
    host = get_renderer("c").render(kernel)
    assert "memcpy(&dst[i * 8u], &src[i + 2u], 8 * sizeof dst[0]);" in host
    for dialect in ("opencl", "cuda", "glsl"):
        text = get_renderer(dialect).render(kernel)
        assert "memcpy(&dst" not in text and re.search(r"c8k < 8u; c8k\+\+", text), dialect
    mixed = _kernel("COPY8(dst, 0u, src, 0u);",
                    params=(buf("dst", "u32", "w"), buf("src", "u16", "r"), scalar("n")))
    assert "memcpy(&dst" not in get_renderer("c").render(mixed)  # word types differ: the loop
