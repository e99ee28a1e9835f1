"""The package is layered: no import cycles, and no import from a lower layer into a higher one.

The layer table is read from docs/architecture.md (its one home). Every import statement
counts, top-level and inside functions and methods. Imports under ``if TYPE_CHECKING:`` count
for the layer rule (a type that names a higher layer is a dependency on it too) but not for
cycles: they never run, so two modules of one layer may name each other's types. Importing
``pkg.mod`` also runs ``pkg/__init__``; that implicit edge is not counted: a package
``__init__`` belongs to the layer the table gives it, and its own imports are checked like any
module's.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("hurray_gpu", "vyre")
DOC = ROOT / "docs" / "architecture.md"
# ``| n | name | `module`, `module` | ... |`` rows between these markers.
TABLE = re.compile(r"<!-- layers -->(.*?)<!-- /layers -->", re.S)


def module_files() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the packages."""
    found: dict[str, Path] = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def layer_table() -> list[tuple[int, str, tuple[str, ...]]]:
    """``(rank, name, module prefixes)`` per row of the table in docs/architecture.md."""
    match = TABLE.search(DOC.read_text(encoding="utf-8"))
    assert match, f"{DOC} has no <!-- layers --> table"
    rows = []
    for line in match.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].isdigit():
            continue
        prefixes = tuple(re.findall(r"`([\w.]+)`", cells[2]))
        rows.append((int(cells[0]), cells[1], prefixes))
    return rows


def layer_of(module: str, table: list[tuple[int, str, tuple[str, ...]]]) -> tuple[int, str]:
    """The rank and name of the longest table prefix that ``module`` falls under."""
    best: tuple[int, int, str] | None = None
    for rank, name, prefixes in table:
        for prefix in prefixes:
            inside = module == prefix or module.startswith(prefix + ".")
            if inside and (best is None or len(prefix) > best[0]):
                best = (len(prefix), rank, name)
    if best is None:
        raise AssertionError(f"{module} is in no layer of docs/architecture.md; add it there")
    return best[1], best[2]


def _type_only(tree: ast.AST) -> set[int]:
    """ids of the import nodes under ``if TYPE_CHECKING:`` blocks."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            found.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return found


def imports_of(module: str, path: Path, known: dict[str, Path],
               runtime_only: bool = False) -> Iterator[tuple[str, int]]:
    """``(imported package module, line)`` for every import statement anywhere in the file
    (only those that run, with ``runtime_only``)."""
    is_pkg = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_only(tree) if runtime_only else set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = resolve(alias.name, known)
                if target:
                    yield target, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_pkg else module.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                target = resolve(f"{source}.{alias.name}", known) if (
                    f"{source}.{alias.name}" in known) else resolve(source, known)
                if target:
                    yield target, node.lineno


def resolve(name: str, known: dict[str, Path]) -> str | None:
    """The longest known module ``name`` names (a package's __init__ for its attributes)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def graph(runtime_only: bool = False) -> dict[str, dict[str, int]]:
    """module -> {imported module: first line}, self-imports dropped.

    With ``runtime_only`` (the graph cycles are looked for in), importing ``p.q.m`` also runs
    the ``__init__`` of every enclosing package the importer is not itself inside, as Python
    does: ``p.parts`` importing ``p.io._codec`` runs ``p.io``'s ``__init__`` first.
    """
    known = module_files()
    edges: dict[str, dict[str, int]] = {}
    for module, path in known.items():
        out: dict[str, int] = {}
        for target, line in imports_of(module, path, known, runtime_only):
            implicit = _enclosing(target, known) if runtime_only else []
            for name in [target, *implicit]:
                if name != module and not module.startswith(name + "."):
                    out.setdefault(name, line)
        edges[module] = out
    return edges


def _enclosing(module: str, known: dict[str, Path]) -> list[str]:
    parts = module.split(".")
    return [p for p in (".".join(parts[:i]) for i in range(1, len(parts))) if p in known]


def cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycles() -> None:
    found = cycles(graph(runtime_only=True))
    assert not found, "import cycles (counting imports inside functions):\n" + "\n".join(
        " <-> ".join(c) for c in found)


def test_no_upward_imports() -> None:
    table = layer_table()
    bad = []
    for module, targets in graph().items():
        rank, name = layer_of(module, table)
        for target, line in targets.items():
            t_rank, t_name = layer_of(target, table)
            if t_rank > rank:
                bad.append(f"{module}:{line} ({name}) imports {target} ({t_name})")
    assert not bad, "imports from a lower layer into a higher one:\n" + "\n".join(sorted(bad))


def test_vyre_uses_only_the_core() -> None:
    """vyre reaches hurray_gpu only through errors, the kernel dialect and the runtime core."""
    allowed = ("hurray_gpu.errors", "hurray_gpu.config", "hurray_gpu.dialect",
               "hurray_gpu.runtime")
    bad = [f"{m} imports {t}" for m, targets in graph().items() if m.startswith("vyre")
           for t in targets if t.startswith("hurray_gpu")
           and not any(t == a or t.startswith(a + ".") for a in allowed)]
    assert not bad, "\n".join(sorted(bad))


def test_every_module_has_a_layer() -> None:
    table = layer_table()
    for module in module_files():
        layer_of(module, table)


@pytest.mark.parametrize("source, expect", [
    ({"a": {"b": 1}, "b": {"a": 1}}, [["a", "b"]]),
    ({"a": {"b": 1}, "b": {"c": 1}, "c": {}}, []),
    ({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}, [["a", "b", "c"]]),
])
def test_cycle_finder(source: dict[str, dict[str, int]], expect: list[list[str]]) -> None:
    assert cycles(source) == expect


def test_function_level_imports_are_seen(tmp_path: Path) -> None:
    """A cycle closed only by an import inside a function is still a cycle."""
    known = {"p.a": tmp_path / "a.py", "p.b": tmp_path / "b.py"}
    known["p.a"].write_text("from p.b import x\n")
    known["p.b"].write_text("def f():\n    from p.a import y\n")
    edges = {m: dict(imports_of(m, p, known)) for m, p in known.items()}
    assert cycles(edges) == [["p.a", "p.b"]]


def test_importing_a_submodule_runs_its_package_init(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """``p.a`` importing ``p.q.c`` runs ``p.q``'s __init__, which imports ``p.a``: a cycle."""
    files = {"p": "__init__.py", "p.a": "a.py", "p.q": "q/__init__.py", "p.q.c": "q/c.py"}
    known = {m: tmp_path / f for m, f in files.items()}
    (tmp_path / "q").mkdir()
    for m, text in {"p": "", "p.a": "from p.q import c\n", "p.q": "from p.a import x\n",
                    "p.q.c": ""}.items():
        known[m].write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "module_files", lambda: known)
    assert cycles(graph(runtime_only=True)) == [["p.a", "p.q"]]


def test_type_only_imports_count_for_layers_not_cycles(tmp_path: Path) -> None:
    known = {"p.a": tmp_path / "a.py", "p.b": tmp_path / "b.py"}
    known["p.a"].write_text("from p.b import x\n")
    known["p.b"].write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                            "    from p.a import y\n")
    every = {m: dict(imports_of(m, p, known)) for m, p in known.items()}
    running = {m: dict(imports_of(m, p, known, True)) for m, p in known.items()}
    assert "p.a" in every["p.b"] and "p.a" not in running["p.b"]
    assert cycles(running) == []
