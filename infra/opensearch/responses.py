"""Parsers for OpenSearch responses (plain dicts in, core values out; no client, no I/O)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.errors import UnavailableError
from core.models import Candidate, EntityKey, JsonObject, WriteOutcome
from infra.opensearch import mapping as m
from infra.opensearch.errors import BACKEND, INDEX_MISSING, UNAVAILABLE_RETRY_AFTER, error_parts
from infra.opensearch.query_bodies import INNER_HITS_NAME

# "[id]: version conflict, current version [12] is higher or equal to the one provided [10]"
# (OpenSearch VersionType.EXTERNAL.explainConflictForWrites).
_CONFLICT = re.compile(r"current version \[(-?\d+)\]")
VERSION_CONFLICT = "version_conflict_engine_exception"


def bm25(score: float) -> float:
    """Lexical scores are OpenSearch's BM25 `_score` as they are."""
    return score


def cosine(score: float) -> float:
    """The raw cosine from a `cosinesimil` score: OpenSearch returns (1 + cos) / 2 (k-NN spaces docs)."""
    return max(-1.0, min(1.0, 2.0 * score - 1.0))


def _first(fields: Mapping[str, Any], name: str) -> Any:
    values = fields.get(name)
    if isinstance(values, list):
        return values[0] if values else None
    return values


def _best_chunk(hit: Mapping[str, Any]) -> tuple[int, str]:
    """(chunk_no, text) of the chunk that matched, from the nested inner hit."""
    inner = (hit.get("inner_hits") or {}).get(INNER_HITS_NAME) or {}
    hits = (inner.get("hits") or {}).get("hits") or []
    if not hits:
        return 0, ""
    best = hits[0]
    fields = best.get("fields") or {}
    chunk_no = _first(fields, m.CHUNK_NO)
    if chunk_no is None:
        chunk_no = (best.get("_nested") or {}).get("offset", 0)
    text = _first(fields, m.CHUNK_TEXT_VALUE)
    if text is None:
        text = _first(fields, m.CHUNK_TEXT)
    return int(chunk_no), str(text or "")


def hit_values(hit: Mapping[str, Any]) -> dict[str, Any]:
    """A hit's entity fields by name: its doc values (a lean search) or its `_source` (an older index)."""
    if "_source" in hit:
        return dict(hit.get("_source") or {})
    # doc values come as one-element lists (the search asks for nothing else)
    values = {name: found[0] for name, found in (hit.get("fields") or {}).items() if found}
    values["title"] = values.pop(m.TITLE_VALUE, "")
    meta = values.pop(m.METADATA_VALUE, None)
    if meta is not None:
        values[m.METADATA_RAW] = json.loads(meta) if meta != "{}" else {}
    return values


def needs_source(hit: Mapping[str, Any]) -> bool:
    """True for a lean hit whose doc values cannot show it whole: a value too long for a doc value
    (mapping.DISPLAY_CLIPPED), or a document written without them; its `_source` is read instead."""
    if "_source" in hit:
        return False
    fields = hit.get("fields") or {}
    return bool(_first(fields, m.DISPLAY_CLIPPED)) or m.METADATA_VALUE not in fields


def candidate(hit: Mapping[str, Any], score: float, values: Mapping[str, Any] | None = None) -> Candidate:
    """One search hit (entity fields, `values` when already read, + best-chunk inner hit) as a Candidate."""
    source = hit_values(hit) if values is None else values
    chunk_no, text = _best_chunk(hit)
    return Candidate(
        key=EntityKey(str(source[m.ENTITY_TYPE]), str(source[m.ENTITY_ID])),
        score=score,
        chunk_no=chunk_no,
        title=str(source.get("title") or ""),
        text=text,
        source=str(source.get(m.SOURCE) or ""),
        owner=source.get(m.OWNER),
        namespace=source.get(m.NAMESPACE),
        created_at=str(source.get("created_at") or ""),
        updated_at=str(source.get("updated_at") or ""),
        metadata=dict(source.get(m.METADATA_RAW) or {}),
    )


def candidates(
    response: Mapping[str, Any], k: int, tenant_id: str, convert: Callable[[float], float]
) -> list[Candidate]:
    """Hits best first → at most k Candidates, one per entity, never another tenant's."""
    out: list[Candidate] = []
    seen: set[EntityKey] = set()
    if k <= 0:
        return out
    for hit in (response.get("hits") or {}).get("hits") or []:
        score = convert(float(hit.get("_score") or 0.0))
        fields = hit.get("fields")
        if "_source" in hit or not fields:
            source = hit_values(hit)
            if source.get(m.TENANT) != tenant_id or source.get(m.DELETED):
                continue  # defence in depth: the query already filters on both
            found = candidate(hit, score, source)
        else:
            found = _lean_candidate(hit, fields, score, tenant_id)  # type: ignore[assignment]
            if found is None:
                continue
        if found.key in seen:
            continue
        seen.add(found.key)
        out.append(found)
        if len(out) >= k:
            break
    return out


_ABSENT = (None,)  # a doc value the hit does not have, read as `(fields.get(name) or _ABSENT)[0]`


def _lean_candidate(
    hit: Mapping[str, Any],
    fields: Mapping[str, Any],
    score: float,
    tenant_id: str,
) -> Candidate | None:
    """`candidate` for a lean hit, read straight from its doc values (each a one-element list): the same
    Candidate, without the intermediate dict or a call per value (200 hits per hybrid search:
    docs/benchmarks.md#opensearch-own-cpu); None for another tenant's or a deleted entity."""
    get = fields.get
    if (get(m.TENANT) or _ABSENT)[0] != tenant_id or (get(m.DELETED) or _ABSENT)[0]:
        return None  # defence in depth: the query already filters on both
    raw = (get(m.METADATA_VALUE) or _ABSENT)[0]  # parsed when read (docs/benchmarks.md#lazy-metadata)
    chunk_no, text = _best_chunk(hit)
    return Candidate(
        key=EntityKey(str((get(m.ENTITY_TYPE) or _ABSENT)[0]), str((get(m.ENTITY_ID) or _ABSENT)[0])),
        score=score,
        chunk_no=chunk_no,
        title=str((get(m.TITLE_VALUE) or _ABSENT)[0] or ""),
        text=text,
        source=str((get(m.SOURCE) or _ABSENT)[0] or ""),
        owner=(get(m.OWNER) or _ABSENT)[0],
        namespace=(get(m.NAMESPACE) or _ABSENT)[0],
        created_at=str((get("created_at") or _ABSENT)[0] or ""),
        updated_at=str((get("updated_at") or _ABSENT)[0] or ""),
        metadata=JsonObject(raw) if raw and raw != "{}" else {},
    )


class HitVectors(Mapping[EntityKey, Mapping[int, Any]]):
    """The compact feedback vectors that came with hits (mapping.FEEDBACK_VECTORS), entity → chunk number →
    float32 vector, each decoded when first read (a search reads two of its 200 hits')."""

    def __init__(self, raw: Mapping[EntityKey, str], dimension: int) -> None:
        self._raw = raw
        self._dimension = dimension
        self._read: dict[EntityKey, Mapping[int, Any]] = {}

    def __getitem__(self, key: EntityKey) -> Mapping[int, Any]:
        if key not in self._read:
            from infra.opensearch.documents import chunk_feedback_vectors

            self._read[key] = chunk_feedback_vectors(self._raw[key], self._dimension)
        return self._read[key]

    def __iter__(self) -> Iterator[EntityKey]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


def hit_vectors(response: Mapping[str, Any], tenant_id: str, into: dict[EntityKey, str]) -> None:
    """The tenant's lean hits' compact feedback vectors (base64, undecoded) into `into`, by entity; a hit
    without them (a document written before them, or an entity without vectors) adds nothing."""
    for hit in (response.get("hits") or {}).get("hits") or []:
        fields = hit.get("fields") or {}
        found = fields.get(m.FEEDBACK_VECTORS)
        if not found or _first(fields, m.TENANT) != tenant_id:
            continue
        into[EntityKey(str(_first(fields, m.ENTITY_TYPE)), str(_first(fields, m.ENTITY_ID)))] = found[0]


def incomplete(response: Mapping[str, Any], tenant_id: str) -> set[EntityKey]:
    """The tenant's entities among the hits that doc values cannot show whole (`needs_source`)."""
    out: set[EntityKey] = set()
    for hit in (response.get("hits") or {}).get("hits") or []:
        if needs_source(hit):
            values = hit_values(hit)
            if values.get(m.TENANT) == tenant_id:
                out.add(EntityKey(str(values[m.ENTITY_TYPE]), str(values[m.ENTITY_ID])))
    return out


def with_source(found: Candidate, source: Mapping[str, Any]) -> Candidate:
    """A candidate completed from its document's `_source` (title, metadata, the matched chunk's text)."""
    chunks = source.get(m.CHUNKS) or []
    text = next((str(c.get("text") or "") for c in chunks if c.get("chunk_no") == found.chunk_no), found.text)
    return found._replace(
        title=str(source.get("title") or ""),
        metadata=dict(source.get(m.METADATA_RAW) or {}),
        text=text,
    )


def partial(answer: Mapping[str, Any]) -> str | None:
    """Why a search answer (or a scroll page, a `_delete_by_query`) is not whole, or None: it timed out
    on the node, or some shards failed or did not answer (`skipped` shards count as successful: the node
    knew they hold no match)."""
    if answer.get("timed_out"):
        return "the node answered after its timeout, from the shards done by then"
    shards = answer.get("_shards") or {}
    total, successful = int(shards.get("total", 0)), int(shards.get("successful", 0))
    failures = list(shards.get("failures") or answer.get("failures") or [])
    if successful >= total and not failures and not int(shards.get("failed", 0)):
        return None
    reason = ""
    if failures:
        cause = failures[0].get("reason") or failures[0].get("cause") or {}
        reason = (
            f": {cause.get('type', 'error')}: {cause.get('reason', '')}" if isinstance(cause, Mapping) else ""
        )
    return f"{total - successful} of {total} shards did not answer{reason}"


def msearch_items(response: Mapping[str, Any], expected: int) -> list[Mapping[str, Any]]:
    """The per-search responses of an `_msearch`, in request order (each a result or an error item)."""
    items = list(response.get("responses") or [])
    if len(items) != expected:
        raise UnavailableError(BACKEND, f"_msearch returned {len(items)} responses for {expected} searches")
    return items


@dataclass(frozen=True, slots=True)
class ItemResult:
    """What one bulk action did: its HTTP status, and for failures the error type, reason and stored version."""

    status: int
    result: str | None = None
    error_type: str | None = None
    reason: str = ""
    stored_version: int | None = None
    dimension_mismatch: bool = False  # refused for a vector of another dimension (see is_dimension_error)

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def conflict(self) -> bool:
        return self.status == 409 or self.error_type == VERSION_CONFLICT


def stored_version(reason: str) -> int | None:
    """The stored version named in a version-conflict reason, if it names one."""
    match = _CONFLICT.search(reason)
    if match is None:
        return None
    return int(match.group(1))


def _item_results(items: Sequence[Mapping[str, Any]]) -> Iterator[ItemResult]:
    for item in items:
        (_, body), *_ = item.items()
        error = body.get("error") or {}
        reason = str(error.get("reason") or "") if isinstance(error, Mapping) else str(error)
        yield ItemResult(
            status=int(body.get("status", 0)),
            result=body.get("result"),
            error_type=error.get("type") if isinstance(error, Mapping) else None,
            reason=reason,
            stored_version=stored_version(reason) if reason else None,
            dimension_mismatch=is_dimension_error(error),
        )


# The k-NN plugin's words for a vector of the wrong dimension, in a write ("Vector dimension mismatch.
# Expected: 3, Given: 2") or a query ("Query vector has invalid dimension: 2. Dimension should be: 3"),
# found in the error's `caused_by` or `failed_shards`, not its top-level reason.
_DIMENSION_ERROR = re.compile(r"vector dimension mismatch|vector has invalid dimension", re.IGNORECASE)


def is_dimension_error(error: Any) -> bool:
    """True when an OpenSearch error body refuses a vector for its dimension."""
    return bool(error) and _DIMENSION_ERROR.search(json.dumps(error, default=str)) is not None


def bulk_items(response: Mapping[str, Any], expected: int) -> list[ItemResult]:
    """One ItemResult per action of a `_bulk`, in request order."""
    results = list(_item_results(response.get("items") or []))
    if len(results) != expected:
        raise UnavailableError(BACKEND, f"_bulk returned {len(results)} items for {expected} actions")
    return results


def refused(stored: int, given: int) -> WriteOutcome | None:
    """STALE / DUPLICATE when `given` is not newer than `stored`, else None (the write may proceed)."""
    if given > stored:
        return None
    return WriteOutcome.STALE if given < stored else WriteOutcome.DUPLICATE


def _mget_failure(response: Mapping[str, Any]) -> None:
    """An `_mget` that could not read every document (its shard has no active copy) is an outage, never
    a document not found."""
    for doc in response.get("docs") or []:
        if doc.get("error"):
            kind, reason = error_parts(doc)
            if kind == INDEX_MISSING:
                continue  # nothing was ever indexed: the document is not there
            detail = f"document {doc.get('_id')} could not be read: {kind}: {reason}"
            raise UnavailableError(BACKEND, detail, UNAVAILABLE_RETRY_AFTER)


def mget_sources(response: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """`_source` of every document an `_mget` found."""
    _mget_failure(response)
    return [d["_source"] for d in response.get("docs") or [] if d.get("found") and d.get("_source")]


@dataclass(frozen=True, slots=True)
class StoredDoc:
    """A document as read for a compare-and-set write: its `_source`, `(_seq_no, _primary_term)` and the
    concrete index (generation) it was read from, which the pair is valid in."""

    source: Mapping[str, Any]
    seq: tuple[int, int]
    index: str = ""


def mget_docs(response: Mapping[str, Any]) -> dict[str, StoredDoc]:
    """Every document an `_mget` found, by `_id`, with what a conditional write needs."""
    _mget_failure(response)
    return {
        str(d["_id"]): StoredDoc(
            d.get("_source") or {}, (int(d["_seq_no"]), int(d["_primary_term"])), str(d.get("_index") or "")
        )
        for d in response.get("docs") or []
        if d.get("found")
    }


def hit_indices(items: Sequence[Mapping[str, Any]]) -> set[str]:
    """The concrete indices that answered an `_msearch` (each hit's `_index`)."""
    return {
        str(hit["_index"])
        for item in items
        for hit in ((item.get("hits") or {}).get("hits") or [])
        if hit.get("_index")
    }
