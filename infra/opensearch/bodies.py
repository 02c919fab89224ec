"""Every request body the OpenSearch adapter sends, as plain dicts (no client, no I/O), so each one can be
validated against the official API specification without a cluster.

- Writes are compare-and-set: the adapter reads the stored document's version with its `_seq_no` and
  `_primary_term`, decides (a version not newer than the stored one is stale or a duplicate), and writes
  with a bulk `create` (no document yet) or an `index` action with `if_seq_no`/`if_primary_term`.
  OpenSearch refuses the write (409) when anything wrote the document since the read, and the adapter
  reads again: a stale write loses even when writers race, and a metadata update (read, modify, write)
  is always built on the latest document. External versioning cannot do the latter: OpenSearch refuses
  `if_seq_no` together with a version ("compare and write operations can not use versioning").
  Deletes are tombstone documents written the same way; a real `delete` would forget the entity's
  version after `index.gc_deletes` (60 s) and let a delayed older write resurrect it.
- Queries never embed user text in query syntax: terms and phrases go into `multi_match.query`, which is
  analysed as plain text (no `query_string`). The tenant and every filter sit inside the query (a bool
  `filter` for BM25, the k-NN `filter` for vectors: efficient filtering, never a post-filter).
- The k-NN filter targets parent (entity) fields from inside a `nested` k-NN query. OpenSearch decides
  whether such a filter is a parent filter with `NestedHelper.mightMatchNestedDocs`; a bool counts as
  parent-level when any required clause is, and the tenant `term` is always a required clause, so the
  filter is joined to the chunks correctly even on versions with the k-NN plugin's parent-filter bug
  (docs/architecture.md#knn-parent-filter).

Size: longer than ~300 lines on purpose: every body the adapter sends is here, so the spec test
(tests/adapters/test_opensearch_spec.py) checks them as one set and no other module builds a body.
"""

from __future__ import annotations

import json
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


# -- writes ------------------------------------------------------------------------------------------


SeqNo = tuple[int, int]  # (_seq_no, _primary_term) of the document as read


def write_action(alias: str, doc_id: str, seq: SeqNo | None, routing: str | None = None) -> dict[str, Any]:
    """The bulk action line that writes a whole document through the alias, only if it is unchanged since
    it was read (`seq`), or only if it does not exist yet (`seq` None: a `create`); with `routing` (the
    tenant, on a routed index: layout.py) to its tenant's shard."""
    meta: dict[str, Any] = {"_index": alias, "_id": doc_id, "require_alias": True}
    if routing is not None:
        meta["routing"] = routing
    if seq is None:
        return {"create": meta}
    return {"index": {**meta, "if_seq_no": seq[0], "if_primary_term": seq[1]}}


def write_pair(
    alias: str, doc_id: str, seq: SeqNo | None, source: dict[str, Any], routed: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One write's action and source lines; on a routed index, routed by the document's tenant."""
    return write_action(alias, doc_id, seq, str(source[m.TENANT]) if routed else None), source


def bulk_lines(
    alias: str, writes: Sequence[tuple[str, SeqNo | None, dict[str, Any]]], routed: bool = False
) -> list[dict[str, Any]]:
    """(doc id, seq, source) triples as action/source line pairs for `_bulk`."""
    return [line for w in writes for line in write_pair(alias, *w, routed)]


def write_bytes(alias: str, doc_id: str, seq: SeqNo | None, source: dict[str, Any]) -> int:
    """An upper bound of the bytes one write adds to a `_bulk` body (two NDJSON lines)."""
    lines = (write_action(alias, doc_id, seq, source.get(m.TENANT)), source)
    return sum(len(json.dumps(line, separators=(",", ":"))) + 1 for line in lines)


def byte_batches(sizes: Sequence[int], limit: int) -> list[list[int]]:
    """Positions grouped in order so each group's total stays within `limit` (a larger one goes alone)."""
    batches: list[list[int]] = []
    total = limit + 1
    for position, size in enumerate(sizes):
        if total + size > limit:
            batches.append([])
            total = 0
        batches[-1].append(position)
        total += size
    return batches


VERSION_FIELDS = (m.TENANT, m.VERSION, m.DELETED)
# What a metadata touch reads (`touch_read_body`): what it decides on, and what the display fields of the
# metadata it writes are computed from — never the chunks' vectors.
TOUCH_FIELDS = (*VERSION_FIELDS, m.METADATA_RAW, "title", m.CHUNK_TEXT)
# What a read of stored chunk vectors needs (`chunk_vectors`): not the text tiers, title or metadata.
VECTOR_FIELDS = (m.TENANT, m.ENTITY_TYPE, m.ENTITY_ID, m.CHUNK_NO, m.EMBEDDING)


def mget_body(
    doc_ids: Sequence[str],
    with_chunks: bool = False,
    version_only: bool = False,
    routing: Sequence[str | None] | None = None,
    vectors_only: bool = False,
) -> dict[str, Any]:
    """`_mget` for entity documents: without their chunks unless asked (the embeddings are large), only
    what a whole-document write decides on (tenant, version, deleted), or only the chunks' numbers and
    vectors; `routing`, one per id, on a routed index (a document is found only on its routing's shard)."""
    source: Any = True if with_chunks else {"excludes": [m.CHUNKS]}
    if version_only:
        source = {"includes": list(VERSION_FIELDS)}
    if vectors_only:
        source = {"includes": list(VECTOR_FIELDS)}
    docs: list[dict[str, Any]] = [{"_id": i, "_source": source} for i in doc_ids]
    for doc, value in zip(docs, routing or [], strict=False):
        if value is not None:
            doc["routing"] = value
    return {"docs": docs}


def touch_read_body(doc_ids: Sequence[str], routing: str | None) -> dict[str, Any]:
    """`_mget` of what a metadata touch needs of each document (TOUCH_FIELDS), with `_seq_no`."""
    docs: list[dict[str, Any]] = [{"_id": i, "_source": {"includes": list(TOUCH_FIELDS)}} for i in doc_ids]
    for doc in docs:
        if routing is not None:
            doc["routing"] = routing
    return {"docs": docs}


def touch_pair(
    index: str, doc_id: str, seq: SeqNo, fields: dict[str, Any], routing: str | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A partial update of `fields` of one document in the concrete `index` it was read from, only if it is
    unchanged since (`seq` is that index's): text and vectors are never sent, so whatever generation a
    reindex has made live meanwhile keeps its own (infra/opensearch/reindex.py)."""
    meta: dict[str, Any] = {"_index": index, "_id": doc_id, "if_seq_no": seq[0], "if_primary_term": seq[1]}
    if routing is not None:
        meta["routing"] = routing
    return {"update": meta}, {"doc": fields}


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
    the same semantics as infra/local/sqlite_sql.py condition_sql."""
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


def _envelope(size: int, query: dict[str, Any], lean: bool) -> dict[str, Any]:
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
        "docvalue_fields": list(m.CANDIDATE_VALUES),
        "query": query,
    }


def lexical_body(
    tenant_id: str, query: LexicalQuery, filters: Filters, k: int, lean: bool = True
) -> dict[str, Any]:
    """BM25 search: the best chunk per entity (nested, score_mode max) inside the tenant's filters."""
    scope = filter_query(tenant_id, filters)
    scope["bool"]["must"] = [_nested(text_query(query), lean)]
    return _envelope(clamp(k), scope, lean)


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
    tenant_id: str, embedding: Vector, filters: Filters, k: int, lean: bool = True
) -> dict[str, Any]:
    """k-NN search with efficient filtering: the filter runs inside the HNSW search, on parent fields."""
    size = clamp(k)
    return _envelope(size, _nested(_knn(tenant_id, embedding, filters, size), lean), lean)


# What a ranking-only k-NN search reads of each hit: who it is (and the defence-in-depth tenant check).
RANKING_VALUES = (m.TENANT, m.DELETED, m.ENTITY_TYPE, m.ENTITY_ID)


def vector_ranking_body(tenant_id: str, embedding: Vector, filters: Filters, k: int) -> dict[str, Any]:
    """`vector_body` for the ranking only (CandidateQuery.vector_ranking_only): the same hits and scores,
    without the inner hit naming each hit's best chunk (on the node it runs the nested query again for
    every hit: bench/opensearch_profile.py) and without display values."""
    size = clamp(k)
    query = {"path": m.CHUNKS, "score_mode": "max", "query": _knn(tenant_id, embedding, filters, size)}
    return {
        "size": size,
        "track_total_hits": False,
        "_source": False,
        "stored_fields": "_none_",
        "docvalue_fields": list(RANKING_VALUES),
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
