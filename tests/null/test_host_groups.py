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
    # The counter is the same in every item (from a literal and a scalar): a group scalar.
    assert "    while (k < n) {" in text
    assert "\n    k = 0u;" in text and "\n        k += 2u;" in text
    # acc's start, the store, the read, the final store: its step runs once, not per item.
    assert text.count("for (uint32_t hg_lx = 0; hg_lx < 64u; hg_lx++)") == 4


def test_group_memory_past_the_bound_is_refused() -> None:
    words = MAX_GROUP_BYTES // 4 + 1
    with pytest.raises(UnsupportedOpError, match="smaller work-group"):
        render(group_kernel(MIRROR, shared=words), "c")


# A uniform value updated inside a barrier-free uniform loop, a bound made per-item by a
# per-item branch, and a loop over that bound (kept inside the items' loop).
UNIFORM = """
u32 i = GLOBAL_ID(0);
u32 x = (i < n) ? LOAD(src, i) : 0u;
STORE(tile, i % 64u, x);
BARRIER();
u32 u = 0u;
u32 m = 3u;
if (i % 2u == 0u) { m = 5u; }
u32 s = 0u;
for (u32 k = 0u; k < 8u; k++) {
    u = u + 1u;
    s = s + LOAD(tile, (i + k) % 64u) * u;
}
for (u32 j = 0u; j < m; j++) { s = s + j; }
if (i < n) { STORE(dst, i, s); }
"""


def test_uniform_loops_run_as_the_groups_control_flow() -> None:
    text = render(group_kernel(UNIFORM), "c")
    # k and u are the same in every item: group scalars, stepped once per iteration, with the
    # items' loop inside the k loop (so the compiler vectorizes over the items).
    assert "    while (k < 8u) {" in text and "\n        u = u + 1u;" in text
    assert "\n        k++;" in text and "load_tile((hg_s->i[hg_li] + k) % 64u) * u" in text
    # m is written under a per-item branch: kept per item, its loop copied as written.
    assert "for (uint32_t j = 0u; j < hg_s->m[hg_li]; j++)" in text
