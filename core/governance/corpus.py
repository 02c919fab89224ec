"""Corpus loading (docs/conformance.md#corpus-loading; docs/architecture.md, Governed retrieval):
`{documents: [{id, title, text | chunks, source, trust, created_at, ...}]}` → `document` entities through the
ordinary write path → `{documents_ingested, chunks_ingested, errors}`. A bad document is reported with its
position and never blocks the others."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from core.errors import InvalidInputError, RepeatedItemError
from core.governance.governed_retrieval import DOCUMENT_TYPE
from core.governance.requests import CorpusDocument, CorpusError, CorpusReport
from core.governance.schema_validation import error_fields
from core.indexing.chunking import build_chunks
from core.indexing.entity_types import EntityTypeRegistry
from core.indexing.indexing_service import IndexingService
from core.payload import out_of_range

CORPUS_BATCH = 64  # documents per bulk write (one embedding call each): as the CLI's INGEST_BATCH

Progress = Callable[[int], None]


def corpus_documents(payload: Any) -> list[Any]:
    """The `documents` list of a corpus payload; 400 when the payload is not `{documents: [...]}`."""
    if not isinstance(payload, Mapping):
        raise InvalidInputError(
            "corpus must be a JSON object", {"body": "must be an object with `documents`"}
        )
    documents = payload.get("documents")
    if not isinstance(documents, list):
        raise InvalidInputError(
            "corpus needs a `documents` list", {"documents": "must be a list of documents"}
        )
    unknown = sorted(set(payload) - {"documents"})
    if unknown:
        raise InvalidInputError("corpus has unknown fields", {k: "is not a known field" for k in unknown})
    return documents


def check_documents(documents: list[Any]) -> list[Any]:
    """`documents` when each one is a CorpusDocument (the published schema); else a 400 naming every bad
    field as `documents.<n>.<field>`. Problems no schema states (invalid text) are reported per document."""
    if not documents:
        raise InvalidInputError("corpus has no documents", {"documents": "must hold at least one document"})
    fields: dict[str, str] = {}
    for position, raw in enumerate(documents):
        parsed = _parse(position, raw)
        if isinstance(parsed, CorpusError):
            fields |= parsed.fields or {f"documents.{position}": "must be an object"}
    if fields:
        raise InvalidInputError("request is invalid: " + ", ".join(sorted(fields)[:20]), fields)
    return documents


def _parse(position: int, raw: Any) -> CorpusDocument | CorpusError:
    where = f"documents.{position}"
    try:
        parsed = CorpusDocument.model_validate(raw)
        fields = out_of_range(raw, where)
    except ValidationError as exc:
        fields = error_fields(exc, prefix=where) | out_of_range(raw, where)
    if not fields:
        return parsed
    doc_id = raw.get("id") if isinstance(raw, Mapping) else None
    return CorpusError(
        index=position,
        id=doc_id if isinstance(doc_id, str) else None,
        error="invalid document: " + ", ".join(sorted(fields)),
        fields=fields,
    )


def document_repeats(documents: Sequence[Any]) -> dict[int, int]:
    """{position: earlier position} of every document whose id an earlier document has."""
    first: dict[str, int] = {}
    found: dict[int, int] = {}
    for position, raw in enumerate(documents):
        doc_id = raw.get("id") if isinstance(raw, Mapping) else None
        if isinstance(doc_id, str) and doc_id in first:
            found[position] = first[doc_id]
        elif isinstance(doc_id, str):
            first[doc_id] = position
    return found


def _repeated(position: int, raw: Mapping[str, Any], first: int) -> CorpusError:
    exc = RepeatedItemError(f"{DOCUMENT_TYPE}:{raw['id']}", first)
    fields = {f"documents.{position}.{k}": v for k, v in exc.fields.items()}
    return CorpusError(index=position, id=str(raw["id"]), error=exc.message, fields=fields)


def _ingest_batch(
    indexing: IndexingService,
    registry: EntityTypeRegistry,
    tenant_id: str,
    batch: Sequence[tuple[int, CorpusDocument]],
    now: float,
    report: CorpusReport,
) -> None:
    items = [doc.entity() for _, doc in batch]
    result = indexing.bulk(tenant_id, items, now)
    failed = {int(err["index"]) for err in result.errors}
    for err in result.errors:
        position, doc = batch[int(err["index"])]
        fields = {
            f"documents.{position}." + k.split(".", 2)[-1]: v for k, v in (err.get("fields") or {}).items()
        }
        report.errors.append(CorpusError(index=position, id=doc.id, error=str(err["error"]), fields=fields))
    etype = registry.get(DOCUMENT_TYPE)
    report.documents_ingested += result.indexed
    report.unindexed_fields = sorted(set(report.unindexed_fields) | result.unindexed_fields)
    report.chunks_ingested += sum(
        len(build_chunks(etype, item)) for i, item in enumerate(items) if i not in failed
    )


def load_corpus(
    indexing: IndexingService,
    registry: EntityTypeRegistry,
    tenant_id: str,
    documents: Sequence[Any],
    now: float,
    progress: Progress | None = None,
    repeats: Mapping[int, int] | None = None,
) -> CorpusReport:
    """Index every valid document (chunked unless it brings `chunks`); report counts and per-document errors.
    A document whose id an earlier one has (`repeats`, found among `documents` unless a job passes those of
    its whole request) is refused, as in a bulk."""
    report = CorpusReport(documents_ingested=0, chunks_ingested=0, errors=[])
    repeats = document_repeats(documents) if repeats is None else repeats
    valid: list[tuple[int, CorpusDocument]] = []
    for position, raw in enumerate(documents):
        parsed = (
            _parse(position, raw) if position not in repeats else _repeated(position, raw, repeats[position])
        )
        if isinstance(parsed, CorpusError):
            report.errors.append(parsed)
        else:
            valid.append((position, parsed))
    if progress is not None and len(valid) < len(documents):
        progress(len(documents) - len(valid))
    for start in range(0, len(valid), CORPUS_BATCH):
        batch = valid[start : start + CORPUS_BATCH]
        _ingest_batch(indexing, registry, tenant_id, batch, now, report)
        if progress is not None:
            progress(len(batch))
    report.errors.sort(key=lambda e: e.index)
    return report
