"""The kernel composer's checks (hurray_gpu/dialect/compose.py), and the rule that kernel modules
build variants only through it: no kernel module edits kernel text with regexes, ``replace``
or brace counting."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from hurray_gpu.dialect.compose import Piece, compose, compose_kernel
from hurray_gpu.dialect.kernel import buf, scalar
from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.kernels import KERNELS
from hurray_gpu.kernels.dequant import AFFINE, DENSE, SCHEMES, Element, dequant_kernel

KERNEL_DIR = Path(__file__).resolve().parents[2] / "hurray_gpu" / "kernels"
# Tooling, not kernel modules (NVRTC loading, offline compile checks, the command line).
NOT_KERNEL_MODULES = {"rtc.py", "check.py", "__main__.py"}
# str/re methods that edit or search text: a kernel module calling one is doing text surgery.
SURGERY = {"replace", "sub", "subn", "search", "match", "fullmatch", "findall", "finditer",
           "find", "rfind", "index", "rindex", "count", "split", "rsplit", "partition",
           "rpartition", "format", "translate", "strip", "lstrip", "rstrip", "removeprefix",
           "removesuffix", "splitlines", "expandtabs"}


def _seq(*pieces: Piece) -> Piece:
    """The pieces one after another."""
    holes = {f"p{k}": p for k, p in enumerate(pieces)}
    return Piece("seq", "\n".join(f"$p{k}" for k in range(len(pieces)))).fill(**holes)


def _raises(piece: Piece, match: str, names: tuple[str, ...] = ("n", "dst")) -> None:
    with pytest.raises(UnsupportedOpError, match=match) as info:
        compose("k", piece, names)
    assert "Fix:" in str(info.value)


def test_a_name_no_piece_declares_is_an_error() -> None:
    use = Piece("use", "STORE(dst, 0u, y + n);")
    _raises(use, r"piece 'use' uses 'y', which no piece before it declares")


def test_a_name_declared_only_after_its_use_is_an_error() -> None:
    late = _seq(Piece("use", "STORE(dst, 0u, x);"), Piece("def", "u32 x = n;"))
    _raises(late, r"piece 'use' uses 'x'")
    # The same pieces the other way round compose.
    assert compose("k", _seq(Piece("def", "u32 x = n;"), Piece("use", "STORE(dst, 0u, x);")),
                   ("n", "dst")) == "u32 x = n;\nSTORE(dst, 0u, x);"


def test_a_redefined_name_is_an_error() -> None:
    twice = _seq(Piece("a", "u32 x = n;"), Piece("b", "u32 x = 1u;"))
    _raises(twice, r"piece 'b' declares 'x', which piece 'a' already declares")
    _raises(Piece("p", "u32 n = 1u;"), r"declares 'n', which a parameter already declares")


def test_hiding_a_visible_name_in_an_inner_scope_is_an_error() -> None:
    inner = Piece("inner", "if (n > 0u) {\n    u32 x = 2u;\n}")
    _raises(_seq(Piece("outer", "u32 x = n;"), inner), r"piece 'inner' declares 'x'")


def test_names_leave_scope_with_their_block_or_loop() -> None:
    block = _seq(Piece("block", "if (n > 0u) {\n    u32 x = n;\n}"),
                 Piece("after", "STORE(dst, 0u, x);"))
    _raises(block, r"piece 'after' uses 'x'")
    loop = _seq(Piece("loop", "for (u32 w = 0u; w < n; w++) STORE(dst, w, w);"),
                Piece("after", "STORE(dst, 0u, w);"))
    _raises(loop, r"piece 'after' uses 'w'")
    # Sibling scopes may each declare the same name.
    again = _seq(Piece("a", "for (u32 w = 0u; w < n; w++) {\n    STORE(dst, w, w);\n}"),
                 Piece("b", "for (u32 w = 0u; w < n; w++) STORE(dst, w, 0u);"),
                 Piece("c", "{\n    u32 w = n;\n}"), Piece("d", "u32 w = 1u;"))
    assert "u32 w = 1u;" in compose("k", again, ("n", "dst"))


def test_a_missing_piece_is_an_error() -> None:
    template = Piece("template", "u32 x = n;\n$tail")
    _raises(template, r"piece 'template' is missing the pieces for \['\$tail'\]")
    # An empty string is the explicit "no piece here": it leaves no line either.
    assert compose("k", template.fill(tail=""), ("n",)) == "u32 x = n;\n"


def test_filling_a_hole_that_is_not_there_is_an_error() -> None:
    template = Piece("template", "STORE(dst, $k, n);")
    with pytest.raises(UnsupportedOpError, match=r"has no open hole \$v"):
        template.fill(v="1u")
    with pytest.raises(UnsupportedOpError, match=r"has no open hole \$k"):
        template.fill(k="0u").fill(k="1u")


def test_a_broken_defines_promise_is_an_error() -> None:
    promise = Piece("items", "u32 first = n;", defines=("first", "last"))
    _raises(promise, r"piece 'items' promises \['last'\] but does not declare them")
    nested = Piece("items", "{\n    u32 last = n;\n}", defines=("last",))
    _raises(nested, r"promises \['last'\]")


def test_unbalanced_braces_are_an_error() -> None:
    _raises(Piece("open", "if (n > 0u) {"), "unbalanced braces")
    _raises(Piece("close", "}"), r"piece 'close' closes a brace it did not open")


def test_expression_holes_keep_their_meaning() -> None:
    store = Piece("store", "STORE(dst, $k + shift, $v);")
    text = compose("k", store.fill(k="k + 1u", v="a | b"), ("dst", "k", "shift", "a", "b"))
    # Parenthesised where an operator follows; the delimited $v as written.
    assert text == "STORE(dst, (k + 1u) + shift, a | b);"
    assert compose("k", store.fill(k="k", v="a"), ("dst", "k", "shift", "a")) == \
        "STORE(dst, k + shift, a);"


def test_statement_holes_take_the_hole_indentation() -> None:
    outer = Piece("outer", """
        if (n > 0u) {
            $body
        }
    """).fill(body=Piece("body", "u32 x = n;\nSTORE(dst, 0u, x);"))
    assert compose("k", outer, ("n", "dst")) == \
        "if (n > 0u) {\n    u32 x = n;\n    STORE(dst, 0u, x);\n}"


def test_compose_kernel_checks_against_the_kernel_parameters_and_arrays() -> None:
    params = (buf("dst", "u32", "w"), scalar("n"))
    body = Piece("body", "STORE(tab, 0u, n);\nSTORE(dst, 0u, LOAD(tab, 0u));")
    kernel = compose_kernel(body, name="k", params=params, grid=lambda s: (1,),
                            extents=lambda s: {}, reference=lambda a: None,
                            private=(("tab", "u32", 1),))
    assert kernel.body == "STORE(tab, 0u, n);\nSTORE(dst, 0u, LOAD(tab, 0u));"
    with pytest.raises(UnsupportedOpError, match="uses 'tab'"):
        compose_kernel(body, name="k", params=params, grid=lambda s: (1,),
                       extents=lambda s: {}, reference=lambda a: None)


def test_a_dequant_formula_writing_elsewhere_is_refused() -> None:
    # The 4-bit table runs a formula for all 16 codes: a second store would fire for codes the
    # data never holds.
    leaky = Element(Piece("leaky", "f32 v = F32(code);\nSTORE(err, 0u, 1u);\n$store"), "v")
    scheme = AFFINE.__class__(**{**AFFINE.__dict__, "elements": (leaky,)})
    with pytest.raises(UnsupportedOpError, match="leaky writes other than through its"):
        dequant_kernel(scheme, "f32", DENSE, grid=lambda s: (1,), extents=lambda s: {},
                       reference=lambda a: None)


@pytest.mark.parametrize("scheme", SCHEMES, ids=lambda s: s.family)
def test_every_variant_runs_the_schemes_own_formula(scheme: object) -> None:
    """The dense, fused-layout, sparse and paged kernels of a scheme contain its element
    formulas and its parameter lookup verbatim: they are composed from the same pieces."""
    kernels = [k for name, k in KERNELS.items() if name.startswith(f"dequant_{scheme.family}_")]
    suffixes = {k.name.removeprefix(f"dequant_{scheme.family}_") for k in kernels}
    assert suffixes == {f"{kind}{v}" for kind in ("f32", "f16", "bf16")
                        for v in ("", "_sep", "_hil", "_sparse_coo", "_sparse_tree", "_paged")}
    parts = [e.formula.text for e in scheme.elements] + [scheme.lookup.text]
    for kernel in kernels:
        body = " ".join(kernel.body.split())
        for text in parts:
            own = " ".join(w for w in text.split() if not w.startswith("$"))
            assert own in body, (kernel.name, text)


def _module_strings(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level names and the expressions bound to them."""
    out: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = node.value
    return out


def surgery(path: Path) -> list[str]:
    """What in ``path`` edits or searches kernel text instead of composing it."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    names = _module_strings(tree)
    for node in ast.walk(tree):
        where = f"{path.name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import | ast.ImportFrom):
            module = node.module if isinstance(node, ast.ImportFrom) else None
            if module == "re" or any(a.name == "re" for a in node.names if module is None):
                found.append(f"{where} imports re")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in SURGERY:
            found.append(f"{where} calls .{node.func.attr}()")
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "KernelDef":
            # A plain kernel's body is a literal; anything built goes through compose_kernel.
            for kw in node.keywords:
                value = names.get(kw.value.id, kw.value) if isinstance(kw.value, ast.Name) \
                    else kw.value
                if kw.arg == "body" and not (isinstance(value, ast.Constant)
                                             and isinstance(value.value, str)):
                    found.append(f"{where} builds a KernelDef body outside the composer")
    return found


def test_no_kernel_module_edits_kernel_text() -> None:
    modules = [p for p in sorted(KERNEL_DIR.glob("*.py")) if p.name not in NOT_KERNEL_MODULES]
    assert len(modules) >= 8, modules
    found = [hit for path in modules for hit in surgery(path)]
    assert not found, found


def test_the_surgery_check_finds_surgery(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text('import re\nfrom x import KernelDef\nA = "u32 i = 0u;"\n'
                   'B = re.sub("i", "so", A)\nC = A.replace("i", "so")\n'
                   'K = KernelDef(name="k", body=A + B)\nL = KernelDef(name="l", body=C)\n'
                   'M = KernelDef(name="m", body=A)\n')
    assert [hit.split(" ", 1)[1] for hit in surgery(bad)] == [
        "imports re", "calls .sub()", "calls .replace()",
        "builds a KernelDef body outside the composer",
        "builds a KernelDef body outside the composer"]
