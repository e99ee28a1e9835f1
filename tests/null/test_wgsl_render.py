"""The WGSL dialect: C's conversions made explicit, lazy ``?:``, folded constants, guarded
accesses, renamed reserved words, and what WGSL refuses (no device needed)."""

from __future__ import annotations

import re

import pytest

from hurray_gpu.dialect import KernelDef, buf, render, scalar
from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.kernels import get_kernel, kernel_names


def _kernel(body: str, *params, **fields) -> KernelDef:
    return KernelDef(name="wgsl_case", params=params or (buf("dst", "u32", "w"),
                                                         buf("src", "u32"), scalar("n")),
                     body=body, grid=lambda s: (1,), extents=lambda s: {},
                     reference=lambda a: None, **fields)


def _main(text: str) -> str:
    return text[text.index("fn hg_main("):]


def test_a_branch_that_loads_runs_only_when_chosen():
    text = _main(render(_kernel(
        "u32 i = GLOBAL_ID(0); STORE(dst, i, i + 1u < n ? LOAD(src, i + 1u) : 0u);"), "wgsl"))
    assert "select(" not in text
    assert re.search(r"if \(\(i \+ 1u\) < n\) \{\n\s+hg_t0 = load_src\(i \+ 1u\);\n\s+\} else "
                     r"\{\n\s+hg_t0 = 0u;", text), text


def test_a_pure_conditional_is_a_select():
    text = _main(render(_kernel("u32 i = GLOBAL_ID(0); STORE(dst, i, i < n ? i : n);"), "wgsl"))
    assert "store_dst(i, select(n, i, i < n));" in text


def test_c_conversions_are_explicit():
    text = _main(render(_kernel(
        "i32 a = I32(n) - 7; u32 b = n + a; f32 c = a; u32 d = n << a; i32 e = 1 << n;"
        " STORE(dst, 0u, b + d + U32(c) + U32(e));"), "wgsl"))
    assert "var a: i32 = i32(n) - 7i;" in text
    assert "var b: u32 = n + u32(a);" in text
    assert "var c: f32 = f32(a);" in text
    assert "var d: u32 = n << u32(a);" in text
    assert "var e: i32 = 1i << n;" in text


def test_integer_constants_fold_with_wrap_around():
    text = _main(render(_kernel(
        "u32 a = 0u - 1u; u32 b = -1; i32 c = 0x7fffffff + 1; u32 d = -n; u32 e = 1u << 35u;"
        " STORE(dst, 0u, a + b + U32(c) + d + e);"), "wgsl"))
    assert "var a: u32 = 0xffffffffu;" in text
    assert "var b: u32 = 0xffffffffu;" in text
    assert "var c: i32 = i32(-2147483647 - 1);" in text
    assert "var d: u32 = 0u - n;" in text  # WGSL has no unary minus on u32
    assert "var e: u32 = 8u;" in text  # WGSL's shift takes the amount modulo 32


def test_mixed_operators_are_parenthesised():
    text = _main(render(_kernel("u32 a = n + 1u << 2u & n | 3u; STORE(dst, 0u, a);"), "wgsl"))
    assert "var a: u32 = (((n + 1u) << 2u) & n) | 3u;" in text


def test_loops_and_reserved_names():
    text = _main(render(_kernel(
        "u32 loop = 0u; u32 s = 0u;"
        " for (u32 i = 0u, j = n; i < j; i++, j--) { s = s + i; }"
        " do { loop++; } while (loop < 3u);"
        " while (s > 10u) { s = s - 10u; if (s == 3u) break; else continue; }"
        " STORE(dst, 0u, s + loop);"), "wgsl"))
    assert "var loop_: u32 = 0u;" in text and "loop_++;" in text
    assert "continuing {" in text and "j--;" in text and "break if !(loop_ < 3u);" in text
    assert "while (s > 10u) {" in text


def test_every_buffer_access_checks_its_window():
    for name in kernel_names():
        text = render(get_kernel(name), "wgsl")
        accessors = re.findall(r"fn (?:load|store|atomic_\w+?)_\w+\(hg_i[^{]*\{\n(.*?)\n\}",
                               text, re.S)
        for body in accessors:
            if "hg_m_" in body:
                b = re.search(r"hg_m_(\w+)\[", body)[1]
                assert f"if (hg_k >= hg_w_{b}.y) {{" in body, (name, body)
                assert "hg_bad = 1u;" in body, (name, body)
                # the bound is the binding's length, read once per work item
                assert f"hg_w_{b} = vec2<u32>(hg_u.hg_d_{b}, arrayLength(&hg_m_{b}));" in text
        # a fault noted by an accessor reaches the fault word after every return of the body
        assert text.endswith("fn main(@builtin(global_invocation_id) hg_id: vec3<u32>) {\n"
                             "    hg_main(hg_id);\n    if (hg_bad != 0u) {\n"
                             "        atomicOr(&hg_fault, 1u);\n    }\n}\n"), name
        # no buffer is indexed outside an accessor
        outside = re.sub(r"fn (?:load|store|atomic_)\w+\(hg_i.*?\n\}", "", text, flags=re.S)
        outside = re.sub(r"arrayLength\(&hg_m_\w+\)", "", outside.split("var<uniform>")[-1])
        assert "hg_m_" not in outside, name


def test_sub_word_outputs_are_atomic_words():
    text = render(get_kernel("copy_bytes"), "wgsl")
    assert "var<storage, read_write> hg_m_dst: array<atomic<u32>>;" in text
    assert "var<storage, read_write> hg_m_src: array<u32>;" in text
    assert "atomicAnd(&hg_m_dst[hg_k]" in text and "atomicOr(&hg_m_dst[hg_k]" in text


@pytest.mark.parametrize("dialect", ["wgsl", "c", "glsl"])
def test_unknown_intrinsics_are_refused_with_a_fix(dialect):
    kernel = _kernel("f32 x = NO_SUCH_SIN(F32(n)); STORE(dst, 0u, AS_U32(x));")
    with pytest.raises(UnsupportedOpError, match=r"unknown intrinsics \['NO_SUCH_SIN'\]") as info:
        render(kernel, dialect)
    assert "Fix: call only [" in str(info.value) and "'CR_SIN'" in str(info.value)


def test_undeclared_names_are_refused():
    with pytest.raises(UnsupportedOpError, match="'undeclared' is not declared"):
        render(_kernel("STORE(dst, 0u, undeclared);"), "wgsl")
