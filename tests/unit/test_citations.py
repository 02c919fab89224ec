"""The design lives in the repository: comments and docstrings cite `docs/` (or a public paper or spec by
name), never a document a reader of the repository cannot open — the specifications Quarry started from,
DESIGN.md, an issue tracker's numbers, a path beside the checkout — and every `docs/<file>.md#anchor` they
cite exists, so renaming an anchor without its citations fails here."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECKED = ("core", "infra", "handlers")  # no outside citation in a comment or docstring
ANCHORED = (*CHECKED, "bench", "scripts")  # every docs/ anchor cited resolves

# What a reader cannot open, by what a comment would say when citing it.
OUTSIDE = {
    "a specification document": re.compile(
        r"\bseeds?\b|\bnexus\b|\bthefold\b|gateway-context-assembly|gateway-shared-search-utils"
        r"|role-overlay-retrieval-api|shared-utils",
        re.IGNORECASE,
    ),
    "DESIGN.md": re.compile(r"\bDESIGN(\.md| §)"),
    "an issue number": re.compile(r"\bissues? #?\d+", re.IGNORECASE),
    "a path beside the repository": re.compile(r"\.\./shared"),
}
RANDOM_SEED = re.compile(r"random|rng|hypothesis", re.IGNORECASE)  # "a fixed random seed" is no citation
DOC_ANCHOR = re.compile(r"\bdocs/([\w/.-]+\.md)#([\w-]+)")
MD_LINK_ANCHOR = re.compile(r"\]\(([\w/.-]+\.md)#([\w-]+)\)")
HTML_ANCHOR = re.compile(r"""<a\s+(?:id|name)=["']([^"']+)["']""")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def prose(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring of a module: what a reader reads, not what runs."""
    pieces = [
        (tok.start[0], tok.string)
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            docstring = ast.get_docstring(node, clean=False)
            if docstring is not None:
                first = node.body[0].lineno
                pieces += [(first + i, line) for i, line in enumerate(docstring.splitlines())]
    return sorted(pieces)


def outside_citations(source: str) -> list[str]:
    """`line: what it cites: the text` for each comment or docstring line citing what a reader cannot open."""
    found = []
    for line, text in prose(source):
        for what, pattern in OUTSIDE.items():
            match = pattern.search(text)
            if match and not (what == "a specification document" and RANDOM_SEED.search(text)):
                found.append(f"{line}: {what} ({match.group(0)!r}): {text.strip()}")
    return found


def slug(heading: str) -> str:
    """The anchor a Markdown renderer (GitHub's rule) gives a heading."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """Every anchor a Markdown document offers: explicit `<a id>`s and its headings' slugs."""
    return set(HTML_ANCHOR.findall(markdown)) | {slug(h) for h in HEADING.findall(markdown)}


def missing_anchors(cited: list[tuple[str, str]], docs: Path) -> list[str]:
    """`file.md#anchor` for each cited anchor its document (under `docs`) does not have."""
    missing = []
    for name, anchor in cited:
        path = docs / name
        if not path.is_file() or anchor not in anchors(path.read_text(encoding="utf-8")):
            missing.append(f"{name}#{anchor}")
    return missing


def modules(*packages: str, root: Path = ROOT) -> list[Path]:
    return sorted(p for package in packages for p in (root / package).rglob("*.py"))


def test_no_comment_or_docstring_cites_what_a_reader_cannot_open() -> None:
    found = {
        str(path.relative_to(ROOT)): hits
        for path in modules(*CHECKED)
        if (hits := outside_citations(path.read_text(encoding="utf-8")))
    }
    assert not found, (
        "say it in Quarry's words and cite docs/ (e.g. docs/conformance.md#rrf-k):\n"
        + "\n".join(f"{path}:{hit}" for path, hits in found.items() for hit in hits)
    )


def test_every_docs_anchor_cited_from_code_exists() -> None:
    cited = {
        (str(path.relative_to(ROOT)), name, anchor)
        for path in modules(*ANCHORED)
        for _, text in prose(path.read_text(encoding="utf-8"))
        for name, anchor in DOC_ANCHOR.findall(text)
    }
    assert len(cited) > 50  # the code does cite docs/conformance.md: a scan finding nothing is broken
    missing = [
        f"{path}: docs/{hole}"
        for path, name, anchor in sorted(cited)
        for hole in missing_anchors([(name, anchor)], ROOT / "docs")
    ]
    assert not missing, "anchors cited but not in the document:\n" + "\n".join(missing)


def test_every_anchor_linked_between_documents_exists() -> None:
    documents = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md", ROOT / "bench" / "QUALITY.md"]
    missing = [
        f"{doc.relative_to(ROOT)}: {hole}"
        for doc in documents
        for name, anchor in MD_LINK_ANCHOR.findall(doc.read_text(encoding="utf-8"))
        for hole in missing_anchors([(Path(name).name, anchor)], (doc.parent / name).parent)
    ]
    assert not missing, "links to anchors the target document lacks:\n" + "\n".join(missing)


@pytest.mark.parametrize(
    "bad",
    [
        "RRF_K = 60  # seed gateway-shared-search-utils: k = 60\n",
        "X = 1  # the context-assembly seed's batch size\n",
        'def f() -> None:\n    """Cache TTL (nexus §6.2)."""\n',
        "Y = 2  # decided in issue 12\n",
        "Y = 2  # see issue #33\n",
        '"""Goals: DESIGN.md §8."""\n',
        "Z = 3  # ../shared/seeds/thefold-hybrid-memory-search.md\n",
    ],
)
def test_an_outside_citation_is_found(bad: str, tmp_path: Path) -> None:
    """Given a module citing what a reader cannot open, the scan the tests use reports it."""
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "bad.py").write_text(bad, encoding="utf-8")
    (found,) = modules("core", root=tmp_path)
    assert outside_citations(found.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "fine",
    [
        "rng = make(seed)  # a fixed random seed keeps the bench reproducible\n",
        "X = 1  # docs/conformance.md#rrf-k: score = Σ 1/(k + rank + 1)\n",
        "Y = 2  # https://github.com/opensearch-project/k-NN/issues/2222, fixed in 3.5\n",
        'MESSAGE = "the seed\'s integer ids"  # a string the API answers is code, not a citation\n',
    ],
)
def test_what_is_no_outside_citation_passes(fine: str) -> None:
    assert outside_citations(fine) == []


def test_a_renamed_anchor_is_found(tmp_path: Path) -> None:
    (tmp_path / "conformance.md").write_text(
        '# Conformance\n\n## Behaviours and constants\n\n- <a id="rrf-k"></a>**RRF**\n', encoding="utf-8"
    )
    cited = [("conformance.md", "rrf-k"), ("conformance.md", "behaviours-and-constants")]
    assert missing_anchors(cited, tmp_path) == []
    assert missing_anchors([("conformance.md", "rrf-constant")], tmp_path) == ["conformance.md#rrf-constant"]
    assert missing_anchors([("gone.md", "rrf-k")], tmp_path) == ["gone.md#rrf-k"]
