"""Loading BEIR-format test collections (corpus.jsonl, queries.jsonl, qrels/<split>.tsv) for evaluation.

Layout (BEIR, Thakur et al. 2021): `corpus.jsonl` lines `{"_id", "title", "text"}`; `queries.jsonl` lines
`{"_id", "text"}`; `qrels/<split>.tsv` tab-separated `query-id corpus-id score` with a header line (CRLF
line endings tolerated, as SciFact ships them). Only queries that appear in the chosen qrels split are
test queries; the other queries of queries.jsonl belong to other splits.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import InvalidInputError
from core.search.ranking_metrics import Qrels

DEFAULT_SPLIT = "test"
QRELS_COLUMNS = 3  # query-id, corpus-id, score
DOCUMENT_TYPE = "document"  # a built-in type (core/indexing/entity_types.py): title^2, text; chunked


@dataclass(frozen=True, slots=True)
class BeirDocument:
    """One corpus document."""

    doc_id: str
    title: str
    text: str


@dataclass(frozen=True, slots=True)
class BeirDataset:
    """A test collection: its corpus, the queries of one split and their relevance judgements."""

    name: str
    split: str
    corpus: tuple[BeirDocument, ...]
    queries: dict[str, str]
    qrels: Qrels


def _bad(path: Path, message: str) -> InvalidInputError:
    return InvalidInputError(f"{path}: {message}", {str(path): message})


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a .jsonl file, naming the file and line of any malformed one."""
    if not path.is_file():
        raise _bad(path, "missing (a BEIR dataset needs corpus.jsonl, queries.jsonl and qrels/)")
    with path.open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise _bad(path, f"line {line_no} is not JSON: {exc.msg}") from exc
            if not isinstance(row, dict) or "_id" not in row:
                raise _bad(path, f"line {line_no} has no _id")
            yield row


def load_corpus(path: Path) -> tuple[BeirDocument, ...]:
    """Every document of corpus.jsonl (title and text default to empty)."""
    return tuple(
        BeirDocument(str(row["_id"]), str(row.get("title") or ""), str(row.get("text") or ""))
        for row in _jsonl(path)
    )


def load_queries(path: Path) -> dict[str, str]:
    """Query id → query text from queries.jsonl."""
    return {str(row["_id"]): str(row.get("text") or "") for row in _jsonl(path)}


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    """Query id → corpus id → graded relevance; header optional, CRLF tolerated."""
    if not path.is_file():
        raise _bad(path, "missing qrels split")
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8", newline=None) as handle:
        for line_no, line in enumerate(handle, start=1):
            fields = line.rstrip("\r\n").split("\t")
            if not line.strip() or (line_no == 1 and fields[0] == "query-id"):
                continue
            if len(fields) < QRELS_COLUMNS:
                raise _bad(path, f"line {line_no} needs query-id, corpus-id and score")
            try:
                score = int(float(fields[2]))
            except ValueError as exc:
                raise _bad(path, f"line {line_no} score '{fields[2]}' is not a number") from exc
            qrels.setdefault(fields[0].strip(), {})[fields[1].strip()] = score
    return qrels


def load_beir(directory: str | Path, split: str = DEFAULT_SPLIT) -> BeirDataset:
    """Load a BEIR folder; the test queries are those judged in qrels/<split>.tsv."""
    root = Path(directory)
    if not root.is_dir():
        raise _bad(root, "is not a directory")
    qrels = load_qrels(root / "qrels" / f"{split}.tsv")
    queries = load_queries(root / "queries.jsonl")
    missing = sorted(set(qrels) - set(queries))
    if missing:
        raise _bad(root / "queries.jsonl", f"has no text for judged queries {', '.join(missing[:5])}")
    return BeirDataset(
        name=root.resolve().name,
        split=split,
        corpus=load_corpus(root / "corpus.jsonl"),
        queries={qid: queries[qid] for qid in qrels},
        qrels=qrels,
    )


def document_entity(doc: BeirDocument) -> dict[str, Any]:
    """A corpus document as a Quarry `document` entity (title^2, text; chunked when long)."""
    return {"type": DOCUMENT_TYPE, "id": doc.doc_id, "title": doc.title, "text": doc.text}
