"""The search bodies the OpenSearch adapter sends (BM25 over the boosted tiers, k-NN, facets, `_msearch`),
as plain dicts (no client, no I/O), so each one can be validated without a cluster against
the OpenSearch API specification (docs/configuration.md#opensearch-spec); the write and read-by-key bodies are
in bodies.py (tests/adapters/test_opensearch_spec.py checks both).

- Queries never embed user text in query syntax: terms and phrases go into `multi_match.query`, which is
  analysed as plain text (no `query_string`). The tenant and every filter sit inside the query (a bool
  `filter` for BM25, the k-NN `filter` for vectors: efficient filtering, never a post-filter).
- The k-NN filter targets parent (entity) fields from inside a `nested` k-NN query. OpenSearch decides
  whether such a filter is a parent filter with `NestedHelper.mightMatchNestedDocs`; a bool counts as
  parent-level when any required clause is, and the tenant `term` is always a required clause, so the
  filter is joined to the chunks correctly even on versions with the k-NN plugin's parent-filter bug
  (docs/architecture.md#knn-parent-filter).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.models import Condition, Filters, LexicalQuery, MatchMode, Vector
from core.search.filters import COLUMN_FIELDS
from infra.opensearch import mapping as m
from infra.opensearch.documents import keyword, metadata_term, range_limits, range_term

MAX_WINDOW = 10_000  # OpenSearch `index.max_result_window` default; also the k-NN plugin's maximum k
INNER_HITS_NAME = "best_chunk"
FUZZINESS = "AUTO"  # Lucene AUTO: 0 edits up to 2 chars, 1 up to 5, else 2 (core.text.fuzzy_budget)
PREFIX_EXPANSIONS = 50  # terms one prefix may expand to (OpenSearch's max_expansions default)

# What a search reads of each hit: doc values only, never a stored field (not even `_id`: reading one means
# loading the document's stored `_source` block, with every chunk's vector). See mapping.py, TITLE_VALUE.
_LEAN_INNER_HITS: dict[str, Any] = {
    "name": INNER_HITS_NAME,
    "size": 1,
    "_source": False,
    "stored_fields": "_none_",
    "docvalue_fields": [m.CHUNK_NO, m.CHUNK_TEXT_VALUE],
}
# An index made before those doc values (mapping.has_display_values) is read from `_source`, as before.
_SOURCE_INNER_HITS: dict[str, Any] = {
    "name": INNER_HITS_NAME,
    "size": 1,
    "_source": False,
    "fields": [m.CHUNK_NO, m.CHUNK_TEXT],
}


def clamp(k: int) -> int:
    """k limited to what one OpenSearch search can return."""
    return max(0, min(k, MAX_WINDOW))


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
        clauses.append({"terms": {m.METADATA: [metadata_term(key, v) for v in values]}})
    clauses.extend(c for c, negated in map(condition_clause, filters.conditions) if not negated)
    return clauses


def condition_clause(condition: Condition) -> tuple[dict[str, Any], bool]:
    """One range/not/exists condition (core/search/filters.py) as a clause, and whether it goes in `must_not`;
    the same semantics as infra/local/sqlite/sql.py condition_sql."""
    field, op, values = condition.field, condition.op, condition.values
    if op == "exists":
        if condition.column:
            return {"exists": {"field": field}}, not values[0]
        return {"prefix": {m.METADATA: metadata_term(field, "")}}, not values[0]
    if op == "not":
        if condition.column:
            return _terms(field, values), True
        return {"terms": {m.METADATA: [metadata_term(field, v) for v in values]}}, True
    if condition.column:  # created_at / updated_at: ISO 8601 keywords, in text order
        return {"range": {field: {op: values[0]}}}, False
    # The key's range terms only: bounded on the open side by the first or past-the-last of them.
    low, high = range_limits(field, condition.kind)
    other = {"lt": high} if op in ("gt", "gte") else {"gte": low}
    return {"range": {m.METADATA: {op: range_term(field, condition.kind, values[0]), **other}}}, False


def filter_query(tenant_id: str, filters: Filters) -> dict[str, Any]:
    """The filters as one bool query (entities without an owner survive `exclude_owner`)."""
    query: dict[str, Any] = {"filter": filter_clauses(tenant_id, filters)}
    excluded = [] if filters.exclude_owner is None else [{"term": {m.OWNER: filters.exclude_owner}}]
    excluded.extend(c for c, negated in map(condition_clause, filters.conditions) if negated)
    if excluded:
        query["must_not"] = excluded
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
        # cross_fields scores the term once over the three tiers as if they were one field (blended
        # document frequency, the best boosted tier), which is closer to FTS5's bm25 over weighted
        # columns (one saturation per row) than most_fields' sum of per-tier BM25 scores. Measured on
        # SciFact (keyword nDCG@10): most_fields 0.617, cross_fields 0.680, FTS5 0.695.
        # (Fuzzy matching above cannot use cross_fields: OpenSearch refuses fuzziness there.)
        spec = {"type": "cross_fields", "fields": _fields(plain=False)}
    return {"multi_match": {"query": term, **spec}}


def phrase_clause(phrase: str) -> dict[str, Any]:
    """A required phrase: its words adjacent and in order, in any one tier."""
    return {"multi_match": {"query": phrase, "type": "phrase", "fields": _fields(plain=False)}}


MAX_TERM_WEIGHT = 8  # as the SQLite index: query-term frequency, bounded


def _weighted(clause: dict[str, Any], weight: int) -> dict[str, Any]:
    """A term clause boosted by its query-term frequency (BM25's query side, as Lucene scores a repeat)."""
    if weight > 1:
        clause["multi_match"]["boost"] = min(weight, MAX_TERM_WEIGHT)
    return clause


def text_query(query: LexicalQuery) -> dict[str, Any]:
    """Phrases all required, terms ORed (at least one must match), scored per chunk."""
    inner: dict[str, Any] = {}
    if query.phrases:
        inner["must"] = [phrase_clause(p) for p in query.phrases]
    if query.terms:
        inner["should"] = [
            _weighted(term_clause(t, query.mode), query.weight(i)) for i, t in enumerate(query.terms)
        ]
        inner["minimum_should_match"] = 1
    return {"bool": inner}


def _nested(query: dict[str, Any], lean: bool) -> dict[str, Any]:
    return {
        "nested": {
            "path": m.CHUNKS,
            "score_mode": "max",
            "query": query,
            "inner_hits": dict(_LEAN_INNER_HITS if lean else _SOURCE_INNER_HITS),
        }
    }


def _envelope(size: int, query: dict[str, Any], lean: bool, vectors: bool = False) -> dict[str, Any]:
    """The hits' fields: doc values (`lean`; with `vectors`, the compact feedback vectors too), else
    `_source` (an older index, which has no compact vectors either)."""
    if not lean:
        return {
            "size": size,
            "track_total_hits": False,
            "_source": {"includes": list(m.CANDIDATE_FIELDS)},
            "query": query,
        }
    return {
        "size": size,
        "track_total_hits": False,
        "_source": False,
        "stored_fields": "_none_",
        "docvalue_fields": [*m.CANDIDATE_VALUES, *((m.FEEDBACK_VECTORS,) if vectors else ())],
        "query": query,
    }


def lexical_body(
    tenant_id: str, query: LexicalQuery, filters: Filters, k: int, lean: bool = True, vectors: bool = False
) -> dict[str, Any]:
    """BM25 search: the best chunk per entity (nested, score_mode max) inside the tenant's filters."""
    scope = filter_query(tenant_id, filters)
    scope["bool"]["must"] = [_nested(text_query(query), lean)]
    return _envelope(clamp(k), scope, lean, vectors)


def facets_body(
    tenant_id: str, query: LexicalQuery | None, filters: Filters, fields: Sequence[str], size: int
) -> dict[str, Any]:
    """Counts, no hits: per field a `terms` aggregation (documents per value) over the entities the query's
    words match inside the filters (every entity inside them without words). Metadata values come from the
    `key=value` filter terms (their key's prefix kept by `include`, then cut off: catalog.OpenSearchCatalog.facets)."""
    scope = filter_query(tenant_id, filters)
    if query is not None and not query.empty:
        scope["bool"]["must"] = [{"nested": {"path": m.CHUNKS, "query": text_query(query)}}]
    aggs: dict[str, Any] = {}
    for n, field in enumerate(fields):
        if field in COLUMN_FIELDS:
            terms: dict[str, Any] = {"field": field}
        else:
            terms = {"field": m.METADATA, "include": _literal_regexp(metadata_term(field, "")) + ".*"}
        aggs[f"f{n}"] = {"terms": {**terms, "size": size, "order": [{"_count": "desc"}, {"_key": "asc"}]}}
    return {"size": 0, "track_total_hits": False, "query": scope, "aggs": aggs}


def _literal_regexp(text: str) -> str:
    """`text` as a Lucene regular expression matching itself (every character but letters and digits
    escaped; Lucene's syntax reserves many more than Java's)."""
    return "".join(ch if ch.isalnum() and ch.isascii() else "\\" + ch for ch in text)


def _knn(tenant_id: str, embedding: Vector, filters: Filters, size: int) -> dict[str, Any]:
    knn = {
        m.EMBEDDING: {
            "vector": [float(x) for x in embedding],
            "k": size,
            "filter": filter_query(tenant_id, filters),
        }
    }
    return {"knn": knn}


def vector_body(
    tenant_id: str, embedding: Vector, filters: Filters, k: int, lean: bool = True, vectors: bool = False
) -> dict[str, Any]:
    """k-NN search with efficient filtering: the filter runs inside the HNSW search, on parent fields."""
    size = clamp(k)
    return _envelope(size, _nested(_knn(tenant_id, embedding, filters, size), lean), lean, vectors)


# What a ranking-only k-NN search reads of each hit: who it is (and the defence-in-depth tenant check).
RANKING_VALUES = (m.TENANT, m.DELETED, m.ENTITY_TYPE, m.ENTITY_ID)


def vector_ranking_body(
    tenant_id: str, embedding: Vector, filters: Filters, k: int, vectors: bool = False
) -> dict[str, Any]:
    """`vector_body` for the ranking only (CandidateQuery.vector_ranking_only): the same hits and scores,
    without the inner hit naming each hit's best chunk (on the node it runs the nested query again for
    every hit: bench/opensearch_profile.py) and without display values (with `vectors`: the compact
    feedback vectors, mapping.FEEDBACK_VECTORS)."""
    size = clamp(k)
    query = {"path": m.CHUNKS, "score_mode": "max", "query": _knn(tenant_id, embedding, filters, size)}
    return {
        "size": size,
        "track_total_hits": False,
        "_source": False,
        "stored_fields": "_none_",
        "docvalue_fields": [*RANKING_VALUES, *((m.FEEDBACK_VECTORS,) if vectors else ())],
        "query": {"nested": query},
    }


# What of an `_msearch` answer the adapter reads: the node leaves out the rest (each hit's index name but
# the first's, total counts, max scores, nested metadata but the chunk offset), which on a hybrid search's
# 200 hits was a third of the bytes it serialised and the client parsed.
MSEARCH_FILTER_PATH = ",".join(
    [
        "took",
        "responses.status",
        "responses.error",
        "responses.timed_out",
        "responses._shards",
        "responses.hits.hits._index",
        "responses.hits.hits._score",
        "responses.hits.hits._source",
        "responses.hits.hits.fields",
        f"responses.hits.hits.inner_hits.{INNER_HITS_NAME}.hits.hits.fields",
        f"responses.hits.hits.inner_hits.{INNER_HITS_NAME}.hits.hits._nested.offset",
    ]
)


def msearch_lines(
    alias: str, bodies: Sequence[dict[str, Any]], routing: str | None = None
) -> list[dict[str, Any]]:
    """Header/body line pairs for `_msearch`, every search against the alias (with `routing`: only the
    tenant's shard). No search may answer from some shards only: a shard that fails fails the search
    (`allow_partial_search_results`), which the adapter reports as unavailable (responses.partial)."""
    header: dict[str, Any] = {"index": alias, "allow_partial_search_results": False}
    if routing is not None:
        header["routing"] = routing
    lines: list[dict[str, Any]] = []
    for body in bodies:
        lines.append(dict(header))
        lines.append(body)
    return lines
