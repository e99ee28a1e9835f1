"""Every error hurray_gpu and vyre raise ends with a concrete ``Fix:``, never a generic filler.

A class without its own ``default_fix`` gives no hint by itself, so every construction of it
must pass ``fix=`` (or put a ``Fix:`` into its message). The check walks the sources with
``ast``: it needs no device and sees raise sites no test reaches.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import hurray_gpu.errors as errors

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("hurray_gpu", "vyre")
# The filler that every un-hinted error used to end with.
FILLER = "see the message above and the hurray_gpu documentation"
# Classes whose __init__ always composes a specific hint (their constructors take no free
# message, or supply ``fix or "..."``); each is constructed below to prove it.
ALWAYS_HINTED = {
    "OutOfMemoryError", "BoundsViolation", "CompileError", "OutOfPagesError",
    "WireFormatError", "VersionMismatchError", "WireValidationError", "EncodeError",
    "UnknownExtensionError", "TensorNotFoundError",
}


def _sources() -> dict[Path, ast.Module]:
    files = [p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))]
    return {p: ast.parse(p.read_text(encoding="utf-8"), str(p)) for p in files}


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _classes(trees: dict[Path, ast.Module]) -> dict[str, tuple[list[str], bool | None]]:
    """Class name -> (base names, True/False if it sets a non-None/None default_fix, else None)."""
    out: dict[str, tuple[list[str], bool | None]] = {}
    for tree in trees.values():
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            default: bool | None = None
            for stmt in node.body:
                target = (stmt.targets[0] if isinstance(stmt, ast.Assign)
                          else stmt.target if isinstance(stmt, ast.AnnAssign) else None)
                if isinstance(target, ast.Name) and target.id == "default_fix":
                    value = stmt.value
                    default = not (isinstance(value, ast.Constant) and value.value is None)
            out[node.name] = ([n for n in map(_name, node.bases) if n], default)
    return out


def _mro(name: str, classes: dict[str, tuple[list[str], bool | None]]) -> list[str]:
    order, todo = [], [name]
    while todo:
        cls = todo.pop(0)
        if cls in classes and cls not in order:
            order.append(cls)
            todo += classes[cls][0]
    return order


def _hinted_by_class(name: str, classes: dict[str, tuple[list[str], bool | None]]) -> bool:
    for cls in _mro(name, classes):
        if cls in ALWAYS_HINTED:
            return True
        if classes[cls][1] is not None:
            return bool(classes[cls][1])
    return False


def _mentions_fix(node: ast.expr) -> bool:
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str) and "Fix:" in n.value
               for n in ast.walk(node))


def unhinted_raise_sites(trees: dict[Path, ast.Module]) -> list[str]:
    """``path:line: Class`` for every construction of an error that would end without a Fix."""
    classes = _classes(trees)
    ours = {c for c in classes if "HurrayGPUError" in _mro(c, classes)}
    bad = []
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            cls = _name(node.func)
            if cls not in ours or _hinted_by_class(cls, classes):
                continue
            fix = [k.value for k in node.keywords if k.arg == "fix"]
            if fix and not (isinstance(fix[0], ast.Constant) and fix[0].value is None):
                continue
            if node.args and _mentions_fix(node.args[0]):
                continue
            bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {cls}")
    return bad


def test_every_raise_site_names_a_fix() -> None:
    bad = unhinted_raise_sites(_sources())
    assert not bad, "errors raised without fix= (and no class default):\n" + "\n".join(bad)


def test_the_check_catches_a_site_without_fix() -> None:
    """The walker flags a bare raise and accepts the hinted forms (guards the guard)."""
    tree = ast.parse(
        "from hurray_gpu.errors import HurrayGPUError, UnsupportedOpError\n"
        "class Local(UnsupportedOpError):\n    pass\n"
        "raise UnsupportedOpError('no')\n"
        "raise Local('no', fix=None)\n"
        "raise UnsupportedOpError('x', fix='do y.')\n"
        "raise UnsupportedOpError('x. Fix: do y.')\n"
    )
    trees = _sources()
    trees[ROOT / "probe.py"] = tree
    bad = [b for b in unhinted_raise_sites(trees) if b.startswith("probe.py")]
    assert bad == ["probe.py:4: UnsupportedOpError", "probe.py:5: Local"]


def test_the_filler_is_gone_from_the_sources() -> None:
    hits = [str(p.relative_to(ROOT)) for p in _sources()
            if FILLER in p.read_text(encoding="utf-8")]
    assert hits == []
    assert errors.HurrayGPUError.default_fix is None


def test_an_unhinted_base_error_gets_no_filler() -> None:
    err = errors.UnsupportedOpError("something is unsupported")
    assert str(err) == "something is unsupported"
    assert FILLER not in str(err)


@pytest.mark.parametrize("make", [
    lambda: errors.HurrayFormatError("bad rank", field="rank", offset=4),
    lambda: errors.DeviceError("clEnqueue failed"),
    lambda: errors.BackendUnavailableError("no CUDA"),
    lambda: errors.OutOfMemoryError(10, 1, 2),
    lambda: errors.BoundsViolation("k", "out", "after", 9, 8),
    lambda: errors.CompileError("cc failed"),
    lambda: errors.TensorNotFoundError("w", "m.hrry", ["weight", "bias"]),
    lambda: errors.TensorNotFoundError("w", "m.hrry"),
])
def test_class_defaults_are_concrete(make) -> None:  # type: ignore[no-untyped-def]
    text = str(make())
    assert text.count("Fix:") == 1
    assert len(text.split("Fix:", 1)[1].strip()) > 20
    assert FILLER not in text


def test_vyre_errors_carry_one_fix_and_keep_vyre_text() -> None:
    from vyre.errors import EncodeError, UnknownExtensionError, WireValidationError

    generic = "Fix: recompile the frontend program set"
    trunc = WireValidationError("truncated IR wire format. Fix: provide the complete Program bytes.")
    assert str(trunc) == ("Wire-format validation failed: truncated IR wire format. "
                          "Fix: provide the complete Program bytes.")
    assert trunc.vyre_text.count("Fix:") == 2 and generic in trunc.vyre_text
    bare = WireValidationError("invalid IR wire-format header")
    assert str(bare) == bare.vyre_text and str(bare).endswith("only emits valid instructions.")
    ext = UnknownExtensionError("acme.x", "node")
    assert str(ext).startswith("Wire-format validation failed: no OpaqueNodeResolver registered "
                               "for extension kind `acme.x`. Fix: Link the crate")
    enc = EncodeError("Fix: wire version 9 is not writable; use 4, 5 or 6.")
    assert str(enc) == "Wire-format validation failed: wire version 9 is not writable. Fix: use 4, 5 or 6."
    for err in (trunc, bare, ext, enc):
        assert str(err).count("Fix:") == 1, str(err)
