"""Code, comments and docs cite only what a user who clones the repository has.

The Hurray spec is cited by document and section name, this project's docs by path; notes that
live outside the repository (fact sheets, ADR files, vyre notes) must not be cited.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("hurray_gpu", "vyre", "docs", "bench", "README.md")
SUFFIXES = {".py", ".md", ".c", ".h", ".cl", ".glsl", ".comp", ".txt", ".toml", ".cfg"}
# Section numbers (§4, §12.20) belong to documents users do not have.
FORBIDDEN = re.compile(
    r"facts §|hurray-facts|ADR-0|vyre-wire\.md|vyre-semantics\.md|\.\./shared|§\s*\d")
# The format page the citations point at, with the sections the code names.
FORMAT_SECTIONS = ("Validation policy", "Element types and sizes", "Extension Type section",
                   "Descriptor decoding", "Buffer handles and devices", "DLPack device mapping",
                   "Parameter buffers", "Shared scales and zero points", "Block counts",
                   "Buffer sizes", "Token counts per sequence", "Quantized pools",
                   "`.hrry` files", "Raw streams")


def _files() -> list[Path]:
    out = []
    for name in SCANNED:
        path = ROOT / name
        out += [path] if path.is_file() else [p for p in sorted(path.rglob("*"))
                                               if p.is_file() and p.suffix in SUFFIXES]
    return out


def external_citations(files: list[Path]) -> list[str]:
    """``path:line: text`` for every line that cites a document outside the repository."""
    hits = []
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if FORBIDDEN.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return hits


def test_no_citation_of_documents_outside_the_repository() -> None:
    hits = external_citations(_files())
    assert not hits, "cite the Hurray spec by section name or docs/ instead:\n" + "\n".join(hits)


def test_the_scan_sees_a_citation(tmp_path: Path) -> None:
    probe = ROOT / "docs" / "probe-not-committed.md"
    samples = ["x (facts §12.20)", "see hurray-facts", "ADR-018 handoff", "vyre-wire.md",
               "(semantics §6.3)", "../shared/spec"]
    try:
        probe.write_text("\n".join(samples + ["Hurray spec, Metadata: Fixed Header"]))
        hits = [h for h in external_citations(_files()) if "probe-not-committed" in h]
    finally:
        probe.unlink()
    assert len(hits) == len(samples)


def test_format_page_has_the_cited_sections() -> None:
    text = (ROOT / "docs" / "format.md").read_text(encoding="utf-8")
    headings = {line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#")}
    assert not [s for s in FORMAT_SECTIONS if s not in headings]
    cited = set()
    for path in _files():
        flat = re.sub(r"\s*\n\s*(#\s*)?", " ", path.read_text(encoding="utf-8"))
        cited |= set(re.findall(r"docs/format\.md, ([A-Z.`][\w .`/-]*?[\w`])[).;:]", flat))
    cited = {c.replace(".hrry files", "`.hrry` files") for c in cited}
    assert cited, "no citation of docs/format.md found"
    assert not sorted(cited - headings), sorted(cited - headings)
