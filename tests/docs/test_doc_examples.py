"""Every ```python block of README.md and docs/*.md runs, so the documented examples cannot rot.

Blocks of one file run in order in one namespace, in a fresh temporary working directory. A
block opts out only with a first-line marker ``# doc-test: skip (<reason>)``; that must be rare.
"""

from __future__ import annotations

import os
import re
import tempfile
import textwrap
from pathlib import Path

import pytest

from tests._support import core_tier

# Keep doc-example kernel compiles out of the user's ~/.cache (set before any device opens).
os.environ.setdefault("HURRAY_GPU_CACHE_DIR", tempfile.mkdtemp(prefix="hurray_gpu_doc_cache_"))

ROOT = Path(__file__).resolve().parents[2]
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SKIP = re.compile(r"^\s*# doc-test: skip \((?P<reason>[^)]+)\)")
BLOCK = re.compile(r"^```python[ \t]*\n(?P<body>.*?)^```[ \t]*$", re.S | re.M)
MAX_SKIPPED = 3  # opting out must stay rare


def python_blocks(path: Path) -> list[tuple[int, str]]:
    """``(first line number, source)`` of every ```python block of ``path``, in order."""
    text = path.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start("body")) + 1, textwrap.dedent(m.group("body")))
            for m in BLOCK.finditer(text)]


def _skip_reason(source: str) -> str | None:
    first = source.lstrip("\n").splitlines()[0] if source.strip() else ""
    match = SKIP.match(first)
    return match.group("reason") if match else None


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_doc_examples_run(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HURRAY_GPU_PROGRESS", "0")
    namespace: dict[str, object] = {"__name__": f"doc_example_{path.stem}"}
    for line, source in python_blocks(path):
        if _skip_reason(source) is not None:
            continue
        code = compile(source, f"{path.relative_to(ROOT)}:{line}", "exec")
        try:
            exec(code, namespace)  # noqa: S102 - running the documented example is the test
        except ModuleNotFoundError as exc:
            if not core_tier() or exc.name in ("hurray_gpu", "vyre"):
                raise
            # ci/core.sh installs no peers (the page shows one, e.g. gguf); the main tier runs it
            pytest.skip(f"{path.name}:{line} needs {exc.name}, which the core tier lacks")


def test_docs_exist_and_have_examples() -> None:
    names = {p.name for p in DOC_FILES}
    for expected in ("README.md", "concepts.md", "quantization.md", "layouts.md", "kv_cache.md",
                     "vyre.md", "troubleshooting.md", "benchmarks.md"):
        assert expected in names, expected
    for path in DOC_FILES:
        if path.name not in ("troubleshooting.md", "benchmarks.md"):
            assert python_blocks(path), f"{path.name} has no runnable python example"


def test_skips_are_rare_and_explained() -> None:
    skipped = [(p.name, line) for p in DOC_FILES for line, src in python_blocks(p)
               if _skip_reason(src) is not None]
    assert len(skipped) <= MAX_SKIPPED, skipped
    for path in DOC_FILES:  # a malformed marker would silently run (or be mistaken for one)
        for line, src in python_blocks(path):
            first = src.lstrip("\n").splitlines()[0] if src.strip() else ""
            if "doc-test" in first:
                assert _skip_reason(src), f"{path.name}:{line}: bad marker {first!r}"


def test_relative_links_resolve() -> None:
    link = re.compile(r"\]\((?!https?://|#)(?P<target>[^)#\s]+)")
    for path in DOC_FILES:
        for m in link.finditer(path.read_text(encoding="utf-8")):
            target = (path.parent / m.group("target")).resolve()
            assert target.exists(), f"{path.name}: broken link {m.group('target')}"


def test_extractor_sees_blocks_and_markers() -> None:
    sample = "x\n```python\na = 1\n```\n```bash\nls\n```\n```python\n# doc-test: skip (gpu)\n```\n"
    doc = Path(tempfile.mkdtemp()) / "s.md"
    doc.write_text(sample, encoding="utf-8")
    blocks = python_blocks(doc)
    assert [line for line, _ in blocks] == [3, 9]
    assert blocks[0][1] == "a = 1\n"
    assert _skip_reason(blocks[1][1]) == "gpu"
