"""The public API is typed for its users: ``py.typed`` ships, the declarations type checkers
see for tensor-returning functions match their implementations, and a user-style script
passes ``mypy --strict``."""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._support import skip_or_fail

ROOT = Path(__file__).resolve().parents[2]
INIT = ROOT / "hurray_gpu" / "__init__.py"
EXAMPLE = ROOT / "examples" / "typed_usage.py"


def _declarations() -> dict[str, ast.FunctionDef]:
    """The functions hurray_gpu/__init__.py declares under ``if TYPE_CHECKING:``."""
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    found: dict[str, ast.FunctionDef] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            found.update({f.name: f for f in node.body if isinstance(f, ast.FunctionDef)})
    return found


def _shape(fn: ast.FunctionDef) -> list[tuple[str, str, object]]:
    """``(name, kind, default)`` per parameter of a declaration, as inspect would say."""
    args = fn.args
    out: list[tuple[str, str, object]] = []
    plain = args.args
    defaults = [None] * (len(plain) - len(args.defaults)) + list(args.defaults)
    for a, d in zip(plain, defaults, strict=True):
        out.append((a.arg, "POSITIONAL_OR_KEYWORD",
                    inspect.Parameter.empty if d is None else ast.literal_eval(d)))
    for a, kd in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        out.append((a.arg, "KEYWORD_ONLY",
                    inspect.Parameter.empty if kd is None else ast.literal_eval(kd)))
    return out


def test_declarations_exist_for_the_tensor_returning_functions() -> None:
    declared = _declarations()
    for name in ("dequantize", "unpack", "materialize", "quantize", "relayout", "sparsify",
                 "from_dlpack", "attach", "open_file", "load"):
        assert name in declared, name
        assert declared[name].returns is not None
        assert "Any" not in ast.unparse(declared[name].returns), name


@pytest.mark.parametrize("name", sorted(_declarations()))
def test_declaration_matches_the_implementation(name: str) -> None:
    """Each declaration has its implementation's parameters: names, kinds and defaults."""
    import hurray_gpu as hg

    module, attr = hg._LAZY[name]
    impl = getattr(importlib.import_module(module), attr)
    real = [(p.name, p.kind.name, p.default) for p in inspect.signature(impl).parameters.values()]
    assert _shape(_declarations()[name]) == real


def test_py_typed_ships_with_the_package() -> None:
    assert (ROOT / "hurray_gpu" / "py.typed").is_file()
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"py.typed"' in text  # listed as package data, so wheels carry it


# What type checkers must infer for calls a user makes (reveal_type notes, one per line).
REVEALS = {
    "hg.dequantize(t)": "hurray_gpu.tensor.Tensor",
    "hg.materialize(t)": "hurray_gpu.tensor.Tensor",
    "hg.unpack(t)": "hurray_gpu.tensor.Tensor",
    "hg.quantize(x)": "hurray_gpu.tensor.Tensor",
    "hg.from_numpy(x)": "hurray_gpu.tensor.Tensor",
    "hg.from_dlpack(x)": "hurray_gpu.tensor.Tensor",
    "hg.load('m.hrry')": "dict[str, hurray_gpu.tensor.Tensor]",
    "hg.open_file('m.hrry')['w']": "hurray_gpu.tensor.Tensor",
    "hg.open_file('m.hrry').read('w')": "hurray_gpu.tensor.Tensor",
    "t[0]": "hurray_gpu.tensor.Tensor",
    "t.to('cpu', 'float16')": "hurray_gpu.tensor.Tensor",
    "t.materialize()": "hurray_gpu.tensor.Tensor",
    "t.dtype == 'float32'": "bool",
}


def test_user_example_passes_mypy_strict(tmp_path: Path) -> None:
    """The example is clean under --strict, and public calls infer Tensor, never Any."""
    try:
        import mypy.api  # noqa: F401
    except ImportError:
        skip_or_fail("mypy is not installed", "pip install mypy")
    probe = tmp_path / "reveal_probe.py"
    probe.write_text("import numpy as np\nimport hurray_gpu as hg\n"
                     "x = np.zeros(4, np.float32)\nt = hg.from_numpy(x)\n"
                     + "".join(f"reveal_type({call})\n" for call in REVEALS), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MYPYPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir",
         str(tmp_path / "cache"), "--follow-imports=silent", str(EXAMPLE), str(probe)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    out = run.stdout + run.stderr
    assert " error: " not in out and run.returncode == 0, out
    revealed = [line.split('Revealed type is "', 1)[1].rstrip('"')
                for line in out.splitlines() if "Revealed type is" in line]
    assert revealed == list(REVEALS.values()), out


def test_user_example_runs(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("typed_usage", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.roundtrip(tmp_path) < 0.05
