"""The read-back and erase part of `OpenSearchIndex`: listing a tenant's entities newest first (sorted
search with `search_after` on keyword fields), their embedding status (`_mget` with chunks) and purging a
tenant (`_delete_by_query`, refreshed, so a search right after sees nothing of it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.errors import UnavailableError
from core.indexing.catalog import EmbeddingStatus, EntityPosition
from core.models import EntityKey, Filters, LexicalQuery, StoredEntity
from core.search.filters import COLUMN_FIELDS
from infra.opensearch import documents, query_bodies
from infra.opensearch import mapping as m
from infra.opensearch.calls import IndexCalls
from infra.opensearch.errors import BACKEND, INDEX_MISSING, UNAVAILABLE_RETRY_AFTER, error_parts, translated
from infra.opensearch.index_lifecycle import IndexLifecycle
from infra.opensearch.responses import partial

LISTING_SORT = ("created_at", m.ENTITY_TYPE, m.ENTITY_ID)  # all keyword fields: exact string order


def listing_body(
    tenant_id: str, entity_type: str | None, limit: int, after: EntityPosition | None
) -> dict[str, Any]:
    """A sorted search for live entities newest first, continuing after `after` (keyset)."""
    clauses: list[dict[str, Any]] = [
        {"term": {m.TENANT: tenant_id}},
        {"term": {m.DELETED: False}},
    ]
    if entity_type is not None:
        clauses.append({"term": {m.ENTITY_TYPE: entity_type}})
    body: dict[str, Any] = {
        "size": limit,
        "track_total_hits": False,
        "_source": {"excludes": [m.CHUNKS]},
        "query": {"bool": {"filter": clauses}},
        "sort": [{field: {"order": "desc", "missing": "_last"}} for field in LISTING_SORT],
    }
    if after is not None:
        body["search_after"] = [after.created_at, after.entity_type, after.entity_id]
    return body


def purge_body(tenant_id: str) -> dict[str, Any]:
    """`_delete_by_query` for every document (entities and tombstones) of the tenant."""
    return {"query": {"term": {m.TENANT: tenant_id}}}


def chunk_status(source: Mapping[str, Any]) -> EmbeddingStatus:
    """Chunk and embedded-chunk counts of a document fetched with its chunks."""
    chunks = list(source.get(m.CHUNKS) or [])
    return EmbeddingStatus(len(chunks), sum(1 for c in chunks if c.get("embedding") is not None))


def _whole(response: Mapping[str, Any], what: str) -> None:
    """Refuse an answer some shards did not give (a listing missing entities, an erase that left some)."""
    why = partial(response)
    if why is not None:
        raise UnavailableError(BACKEND, f"{what} answered partially: {why}", UNAVAILABLE_RETRY_AFTER)


class OpenSearchCatalog:
    """The catalog, a part of OpenSearchIndex: `list_entities`, `embedding_status`, `purge_tenant`,
    `facets`."""

    def __init__(self, client: Any, calls: IndexCalls, lifecycle: IndexLifecycle) -> None:
        self._client = client
        self._calls = calls
        self._lifecycle = lifecycle
        self._alias = lifecycle.alias

    def facets(
        self,
        tenant_id: str,
        query: LexicalQuery | None,
        filters: Filters,
        fields: Sequence[str],
        size: int,
    ) -> dict[str, dict[str, int]]:
        """Entities per value of each field among the query's matches (core/ports/search_index.py, Retriever.facets):
        one search, no hits, a `terms` aggregation per field (query_bodies.facets_body)."""
        from opensearchpy.exceptions import NotFoundError

        if not fields:
            return {}
        with translated():
            try:
                response = self._client.search(
                    index=self._alias,
                    body=query_bodies.facets_body(tenant_id, query, filters, fields, size),
                    routing=self._lifecycle.route(tenant_id),
                )
            except NotFoundError as exc:
                if error_parts(exc.info)[0] == INDEX_MISSING:
                    return {f: {} for f in fields}
                raise
        _whole(response, "a facet count")
        aggregations = response.get("aggregations") or {}
        out: dict[str, dict[str, int]] = {}
        for n, field in enumerate(fields):
            cut = 0 if field in COLUMN_FIELDS else len(documents.metadata_term(field, ""))
            buckets = (aggregations.get(f"f{n}") or {}).get("buckets") or []
            out[field] = {str(b["key"])[cut:]: int(b["doc_count"]) for b in buckets}
        return out

    def list_entities(
        self, tenant_id: str, entity_type: str | None, limit: int, after: EntityPosition | None
    ) -> list[StoredEntity]:
        """Live entities newest first by (created_at, entity_type, entity_id) descending, after `after`."""
        from opensearchpy.exceptions import NotFoundError

        if limit <= 0:
            return []
        with translated():
            try:
                response = self._client.search(
                    index=self._alias,
                    body=listing_body(tenant_id, entity_type, limit, after),
                    routing=self._lifecycle.route(tenant_id),
                )
            except NotFoundError as exc:
                if error_parts(exc.info)[0] == INDEX_MISSING:
                    return []
                raise
        _whole(response, "a listing")
        hits = response.get("hits", {}).get("hits", [])
        found = (documents.stored_entity(h["_source"]) for h in hits)
        return [e for e in found if e.tenant_id == tenant_id and not e.deleted]

    def embedding_status(self, tenant_id: str, keys: Sequence[EntityKey]) -> dict[EntityKey, EmbeddingStatus]:
        """Chunk and embedded-chunk counts of the live entities among `keys`."""
        unique = sorted(set(keys))
        if not unique:
            return {}
        found = self._calls.fetch(
            tenant_id, [documents.doc_id(tenant_id, k) for k in unique], with_chunks=True
        )
        out: dict[EntityKey, EmbeddingStatus] = {}
        for source in found:
            if source.get(m.TENANT) == tenant_id and not source.get(m.DELETED):
                entity = documents.stored_entity(source)
                out[entity.key] = chunk_status(source)
        return out

    def purge_tenant(self, tenant_id: str) -> int:
        """Delete every document of the tenant (tombstones too) and refresh, so searches see it gone.

        Refreshed first: `_delete_by_query` deletes what a search finds, and a document indexed since the
        last refresh (1 s by default) is not found yet — it would survive the erase."""
        from opensearchpy.exceptions import NotFoundError

        with translated():
            try:
                self._client.indices.refresh(index=self._alias)
                response = self._client.delete_by_query(
                    index=self._alias,
                    body=purge_body(tenant_id),
                    params={"refresh": "true", "conflicts": "proceed"},
                    routing=self._lifecycle.route(tenant_id),
                )
            except NotFoundError as exc:
                if error_parts(exc.info)[0] == INDEX_MISSING:
                    return 0
                raise
        _whole(response, "an erase")
        return int(response.get("deleted", 0))
