"""Host C region splitting of work-group kernels (hurray_gpu.dialect.host_groups): what is kept
per item, and the bodies it refuses with a Fix."""

from __future__ import annotations

import pytest

from hurray_gpu.dialect import KernelDef, buf, render, scalar
from hurray_gpu.dialect.host_groups import MAX_GROUP_BYTES
from hurray_gpu.errors import UnsupportedOpError

# Each item publishes its word, and after the barrier adds its mirror's (a reversal per group).
MIRROR = """
u32 i = GLOBAL_ID(0);
u32 x = (i < n) ? LOAD(src, i) : 0u;
STORE(tile, i % 64u, x);
BARRIER();
u32 y = LOAD(tile, 63u - (i % 64u));
if (i < n) { STORE(dst, i, y + x); }
"""


def group_kernel(body: str, shared: int = 64, local: int = 64) -> KernelDef:
    return KernelDef(name="mirror", params=(buf("src", "u32"), buf("dst", "u32", "w"),
                                            scalar("n")),
                     body=body, grid=lambda s: (s["n"],),
                     extents=lambda s: {"src": s["n"], "dst": s["n"]},
                     reference=lambda a: None, local_size=(local, 1, 1),
                     shared=(("tile", shared),))


def test_values_live_across_a_barrier_are_kept_per_item() -> None:
    text = render(group_kernel(MIRROR), "c")
    assert "hg_s->x[hg_li] = " in text and "hg_s->i[hg_li]" in text  # read after the barrier
    assert "uint32_t y = " in text  # used only in its region: a plain local
    assert "uint32_t tile[64];" in text  # workgroup memory of the group's function
    assert text.count("for (uint32_t hg_lx = 0; hg_lx < 64u; hg_lx++)") == 2


@pytest.mark.parametrize(("body", "what"), [
    ("u32 i = GLOBAL_ID(0);\nBARRIER();\nif (i == 0u) { return; }", "'return'"),
    ("u32 i = GLOBAL_ID(0);\nBARRIER();\nu32 i = 1u;", "second declaration"),
    ("for (u32 k = 0u; k < 4u; k++) { BARRIER(); if (k == 2u) { break; } }", "'break'"),
    ("u32 a = 1u, b = 2u;\nBARRIER();", "declaration"),
    ("BARRIER();\ndo { BARRIER(); } while (0u);", "a barrier inside 'do'"),
    ("BARRIER();\nfor (u32 k = 0u, j = 1u; k < 4u; k++) { BARRIER(); }", "inside 'for'"),
    ("u32 i = GLOBAL_ID(0);\nBARRIER();\nSTORE(dst, i, undeclared);", "not declared"),
])
def test_bodies_region_splitting_cannot_keep_are_refused(body: str, what: str) -> None:
    with pytest.raises(UnsupportedOpError, match=what) as err:
        render(group_kernel(body), "c")
    assert "Fix:" in str(err.value)


def test_break_inside_a_loop_of_one_region_is_kept() -> None:
    body = ("u32 s = 0u;\nfor (u32 k = 0u; k < 4u; k++) { if (k == 2u) { break; } s = s + k; }"
            "\nBARRIER();\nSTORE(dst, GLOBAL_ID(0), s);")
    assert "break;" in render(group_kernel(body), "c")


def test_loops_without_barriers_are_kept_as_written() -> None:
    # A do-while over several lines inside one region: copied as written (lines dedented),
    # with the promoted locals read as the item's copies (the name, not 0x10u's letters).
    body = ("u32 s = 0u;\nu32 k = 0u;\nBARRIER();\ndo {\n    s = s + LOAD(src,\n"
            "                 k);\n    k++;\n} while (k < 0x10u);\nSTORE(dst, GLOBAL_ID(0), s);")
    text = render(group_kernel(body), "c")
    assert ("\n        do {\n            hg_s->s[hg_li] = hg_s->s[hg_li] + load_src(hg_s->k"
            "[hg_li]);\n            hg_s->k[hg_li]++;\n        } while (hg_s->k[hg_li] < 0x10u);"
            "\n        store_dst(hg_gid0, hg_s->s[hg_li]);") in text


def test_a_loop_holding_a_barrier_steps_the_group_together() -> None:
    body = ("u32 acc = 0u;\nfor (u32 k = 0u; k < n; k += 2u) {\n"
            "    STORE(tile, GLOBAL_ID(0) % 64u, k);\n    BARRIER();\n"
            "    acc = acc + LOAD(tile, 0u);\n    BARRIER();\n}\nSTORE(dst, GLOBAL_ID(0), acc);")
    text = render(group_kernel(body), "c")
    # The counter is kept per item; its test is the group's, with item 0's values.
    assert "    while (hg_s->k[hg_li] < n) {" in text
    assert "hg_s->k[hg_li] = 0u;" in text and "hg_s->k[hg_li] += 2u;" in text
    assert text.count("for (uint32_t hg_lx = 0; hg_lx < 64u; hg_lx++)") == 5


def test_group_memory_past_the_bound_is_refused() -> None:
    words = MAX_GROUP_BYTES // 4 + 1
    with pytest.raises(UnsupportedOpError, match="smaller work-group"):
        render(group_kernel(MIRROR, shared=words), "c")
