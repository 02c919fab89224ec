"""Every request body the OpenSearch adapter sends, as plain dicts (no client, no I/O), so each one can be
validated against the official API specification without a cluster.

- Writes are bulk `index` actions with `version_type: external`: OpenSearch itself refuses a version
  that is not newer than the stored one (409), so a stale write loses even when two writers race.
  Deletes are tombstone documents written the same way; a real `delete` would forget its version after
  `index.gc_deletes` (60 s) and let a delayed older write resurrect the entity. `update` actions are not
  used because the update API cannot carry an external version.
- Queries never embed user text in query syntax: terms and phrases go into `multi_match.query`, which is
  analysed as plain text (no `query_string`). The tenant and every filter sit inside the query (a bool
  `filter` for BM25, the k-NN `filter` for vectors: efficient filtering, never a post-filter).
- The k-NN filter targets parent (entity) fields from inside a `nested` k-NN query. OpenSearch decides
  whether such a filter is a parent filter with `NestedHelper.mightMatchNestedDocs`; a bool counts as
  parent-level when any required clause is, and the tenant `term` is always a required clause, so the
  filter is joined to the chunks correctly even on versions with k-NN issue #2222 (fixed in 3.5).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.models import Filters, LexicalQuery, MatchMode, Vector
from infra.opensearch import mapping as m
from infra.opensearch.documents import keyword

MAX_WINDOW = 10_000  # OpenSearch `index.max_result_window` default; also the k-NN plugin's maximum k
INNER_HITS_NAME = "best_chunk"
FUZZINESS = "AUTO"  # Lucene AUTO: 0 edits up to 2 chars, 1 up to 5, else 2 (core.text.fuzzy_budget)
PREFIX_EXPANSIONS = 50  # terms one prefix may expand to (OpenSearch's max_expansions default)

_INNER_HITS: dict[str, Any] = {
    "name": INNER_HITS_NAME,
    "size": 1,
    "_source": False,
    "fields": [m.CHUNK_NO, m.CHUNK_TEXT],
}


def clamp(k: int) -> int:
    """k limited to what one OpenSearch search can return."""
    return max(0, min(k, MAX_WINDOW))


# -- writes ------------------------------------------------------------------------------------------


def index_action(alias: str, doc_id: str, version: int, version_type: str = "external") -> dict[str, Any]:
    """The bulk action line that writes a whole document at an external version, through the alias.

    `external` needs a version above the stored one; `external_gte` (a delete's tombstone over the live
    document of the same version: a delete wins a tie) accepts an equal one.
    """
    return {
        "index": {
            "_index": alias,
            "_id": doc_id,
            "version": version,
            "version_type": version_type,
            "require_alias": True,
        }
    }


def bulk_lines(
    alias: str, writes: Sequence[tuple[str, int, dict[str, Any]]], version_type: str = "external"
) -> list[dict[str, Any]]:
    """(doc id, version, source) triples as action/source line pairs for `_bulk`."""
    lines: list[dict[str, Any]] = []
    for doc_id, version, source in writes:
        lines.append(index_action(alias, doc_id, version, version_type))
        lines.append(source)
    return lines


def mget_body(doc_ids: Sequence[str], with_chunks: bool = False) -> dict[str, Any]:
    """`_mget` for entity documents; without their chunks unless asked (the embeddings are large)."""
    source: Any = True if with_chunks else {"excludes": [m.CHUNKS]}
    return {"docs": [{"_id": i, "_source": source} for i in doc_ids]}


# -- filters -----------------------------------------------------------------------------------------


def _terms(field: str, values: Sequence[Any]) -> dict[str, Any]:
    return {"terms": {field: [keyword(v) for v in values]}}


def filter_clauses(tenant_id: str, filters: Filters) -> list[dict[str, Any]]:
    """Tenant, liveness and every filter as non-scoring clauses (the tenant always comes first)."""
    clauses: list[dict[str, Any]] = [
        {"term": {m.TENANT: tenant_id}},
        {"term": {m.DELETED: False}},
    ]
    if filters.entity_types:
        clauses.append(_terms(m.ENTITY_TYPE, filters.entity_types))
    if filters.sources:
        clauses.append(_terms(m.SOURCE, filters.sources))
    if filters.namespaces:
        clauses.append(_terms(m.NAMESPACE, filters.namespaces))
    if filters.owner is not None:
        clauses.append({"term": {m.OWNER: filters.owner}})
    if filters.owners:
        clauses.append(_terms(m.OWNER, filters.owners))
    for key, values in sorted(filters.metadata.items()):
        clauses.append(_terms(f"{m.METADATA}.{key}", values))
    return clauses


def filter_query(tenant_id: str, filters: Filters) -> dict[str, Any]:
    """The filters as one bool query (entities without an owner survive `exclude_owner`)."""
    query: dict[str, Any] = {"filter": filter_clauses(tenant_id, filters)}
    if filters.exclude_owner is not None:
        query["must_not"] = [{"term": {m.OWNER: filters.exclude_owner}}]
    return {"bool": query}


# -- lexical -----------------------------------------------------------------------------------------


def _fields(plain: bool) -> list[str]:
    suffix = f".{m.PLAIN_SUBFIELD}" if plain else ""
    return [f"{f}{suffix}^{b}" for f, b in zip(m.TIER_FIELDS, m.TIER_BOOSTS, strict=True)]


def term_clause(term: str, mode: MatchMode) -> dict[str, Any]:
    """One term over the three tiers: stemmed BM25, prefix (unstemmed tiers) or fuzzy (unstemmed tiers)."""
    if mode is MatchMode.PREFIX:
        # phrase_prefix on a single term = a prefix query whose expansions are scored (BM25), unlike
        # `prefix`, which scores every match the same.
        spec: dict[str, Any] = {
            "type": "phrase_prefix",
            "fields": _fields(plain=True),
            "max_expansions": PREFIX_EXPANSIONS,
        }
    elif mode is MatchMode.FUZZY:
        spec = {"type": "most_fields", "fields": _fields(plain=True), "fuzziness": FUZZINESS}
    else:
        # most_fields sums the tiers' BM25 (boost × score), like FTS5's weighted bm25 over columns.
        spec = {"type": "most_fields", "fields": _fields(plain=False)}
    return {"multi_match": {"query": term, **spec}}


def phrase_clause(phrase: str) -> dict[str, Any]:
    """A required phrase: its words adjacent and in order, in any one tier."""
    return {"multi_match": {"query": phrase, "type": "phrase", "fields": _fields(plain=False)}}


def text_query(query: LexicalQuery) -> dict[str, Any]:
    """Phrases all required, terms ORed (at least one must match), scored per chunk."""
    inner: dict[str, Any] = {}
    if query.phrases:
        inner["must"] = [phrase_clause(p) for p in query.phrases]
    if query.terms:
        inner["should"] = [term_clause(t, query.mode) for t in query.terms]
        inner["minimum_should_match"] = 1
    return {"bool": inner}


def _nested(query: dict[str, Any]) -> dict[str, Any]:
    return {
        "nested": {
            "path": m.CHUNKS,
            "score_mode": "max",
            "query": query,
            "inner_hits": dict(_INNER_HITS),
        }
    }


def _envelope(size: int, query: dict[str, Any]) -> dict[str, Any]:
    return {
        "size": size,
        "track_total_hits": False,
        "_source": {"includes": list(m.CANDIDATE_FIELDS)},
        "query": query,
    }


def lexical_body(tenant_id: str, query: LexicalQuery, filters: Filters, k: int) -> dict[str, Any]:
    """BM25 search: the best chunk per entity (nested, score_mode max) inside the tenant's filters."""
    scope = filter_query(tenant_id, filters)
    scope["bool"]["must"] = [_nested(text_query(query))]
    return _envelope(clamp(k), scope)


def vector_body(tenant_id: str, embedding: Vector, filters: Filters, k: int) -> dict[str, Any]:
    """k-NN search with efficient filtering: the filter runs inside the HNSW search, on parent fields."""
    size = clamp(k)
    knn = {
        m.EMBEDDING: {
            "vector": [float(x) for x in embedding],
            "k": size,
            "filter": filter_query(tenant_id, filters),
        }
    }
    return _envelope(size, _nested({"knn": knn}))


def msearch_lines(alias: str, bodies: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Header/body line pairs for `_msearch`, every search against the alias."""
    lines: list[dict[str, Any]] = []
    for body in bodies:
        lines.append({"index": alias})
        lines.append(body)
    return lines
