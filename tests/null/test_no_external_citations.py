"""Code, comments and docs cite only what a user who clones the repository has.

The Hurray spec is cited by document and section name, this project's docs by path and heading;
notes that live outside the repository (fact sheets, ADR files, vyre's semantics and wire notes)
must not be cited, neither by name nor by their section numbers.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("hurray_gpu", "vyre", "docs", "bench", "tests", "fuzz", "ci", "examples", "README.md")
# The test itself spells out the banned forms it looks for.
SELF = Path(__file__).resolve()
SUFFIXES = {".py", ".md", ".c", ".h", ".cl", ".glsl", ".comp", ".txt", ".toml", ".cfg"}
# Section numbers (§4, §12.20, "section 2.3", "gotcha 7") belong to documents users do not have.
# docs/vyre-semantics.md is this project's page: cited by path, or linked from docs/.
FORBIDDEN = re.compile(
    r"facts §|hurray-facts|ADR-0|vyre-wire\.md|(?<!docs/)(?<!\()vyre-semantics\.md|\.\./shared"
    r"|§\s*\d|(?i:(semantics|wire) (doc|note|spec)|\bsections? \d|\bgotcha \d)")
# The format page the citations point at, with the sections the code names.
FORMAT_SECTIONS = ("Validation policy", "Element types and sizes", "Extension Type section",
                   "Descriptor decoding", "Buffer handles and devices", "DLPack device mapping",
                   "Parameter buffers", "Shared scales and zero points", "Block counts",
                   "Buffer sizes", "Token counts per sequence", "Quantized pools",
                   "`.hrry` files", "Raw streams")
# The vyre semantics page and the sections the code names.
SEMANTICS_PAGE = "docs/vyre-semantics.md"
SEMANTICS_SECTIONS = ("Before execution", "Grid inference", "Lane stepping", "Subgroups",
                      "Memory", "Raw-byte loads", "BinOps", "UnOps", "Transcendentals", "Casts",
                      "Atomics")


def _files() -> list[Path]:
    out = []
    for name in SCANNED:
        path = ROOT / name
        out += [path] if path.is_file() else [p for p in sorted(path.rglob("*"))
                                               if p.is_file() and p.suffix in SUFFIXES]
    return [p for p in out if p.resolve() != SELF]


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
               "(semantics §6.3)", "../shared/spec", "(semantics doc section 2.3)",
               "see the Semantics Doc's cast table", "the wire doc", "vyre's wire spec",
               "semantics notes", "(section 1.4)", "Sections 2.3-2.5", "(gotcha 7)",
               "spec/vyre-semantics.md", "see vyre-semantics.md"]
    allowed = ["Hurray spec, Metadata: Fixed Header", "docs/vyre-semantics.md, Casts",
               "[casts](vyre-semantics.md#casts)", "the vyre semantics page"]
    try:
        probe.write_text("\n".join(samples + allowed))
        hits = [h for h in external_citations(_files()) if "probe-not-committed" in h]
    finally:
        probe.unlink()
    assert [h.split(": ", 1)[1] for h in hits] == samples


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


def _flat_text(path: Path) -> str:
    """The file as one line: wrapped comments and adjacent string literals are joined."""
    text = re.sub(r'"\s*\n\s*"', "", path.read_text(encoding="utf-8"))
    return re.sub(r"\s*\n\s*(#\s*)?", " ", text)


def semantics_citations(text: str, headings: set[str]) -> tuple[set[str], list[str]]:
    """Sections cited as ``docs/vyre-semantics.md, A, B and C`` in ``text``, and the citations
    whose first name after the comma is not a heading of the page."""
    by_length = sorted(headings, key=len, reverse=True)
    cited: set[str] = set()
    bad: list[str] = []
    for m in re.finditer(re.escape(SEMANTICS_PAGE) + ", ", text):
        rest, first = text[m.end():], True
        while True:
            name = next((h for h in by_length if re.match(re.escape(h) + r"(?!\w)", rest)), None)
            if name is None:
                if first:
                    bad.append(text[m.start():m.end() + 40])
                break
            cited.add(name)
            first = False
            sep = re.match(r"(, | and |, and )", rest[len(name):])
            if sep is None:
                break
            rest = rest[len(name) + sep.end():]
    return cited, bad


def test_semantics_page_has_the_cited_sections() -> None:
    text = (ROOT / SEMANTICS_PAGE).read_text(encoding="utf-8")
    headings = {line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#")}
    assert not [s for s in SEMANTICS_SECTIONS if s not in headings]
    cited: set[str] = set()
    bad: list[str] = []
    for path in _files():
        found, wrong = semantics_citations(_flat_text(path), headings)
        cited |= found
        bad += [f"{path.relative_to(ROOT)}: {w}" for w in wrong]
    assert not bad, "cite a heading of docs/vyre-semantics.md:\n" + "\n".join(bad)
    assert set(SEMANTICS_SECTIONS) <= cited, sorted(set(SEMANTICS_SECTIONS) - cited)


def test_semantics_citation_parser() -> None:
    headings = {"Casts", "Lane stepping", "BinOps", "UnOps", "Memory", "Grid inference"}
    text = ("a (docs/vyre-semantics.md, BinOps, UnOps and Casts). b (docs/vyre-semantics.md, "
            "Memory and Grid inference) c docs/vyre-semantics.md, Lane stepping: d "
            "(docs/vyre-semantics.md, Cast table) e docs/vyre-semantics.md, Castsx.")
    cited, bad = semantics_citations(text, headings)
    assert cited == headings and len(bad) == 2
    assert bad[0].startswith("docs/vyre-semantics.md, Cast table")
    assert bad[1].startswith("docs/vyre-semantics.md, Castsx")
