"""OpenSearchIndex: the production SearchIndex (BM25 + k-NN in one OpenSearch index behind an alias).

The adapter only sequences calls: bodies come from `bodies`/`mapping`/`documents`, responses are read by
`responses`, failures are translated by `errors`. Whole-request retries live in the client's transport
(`client.BackoffTransport`); what retries here are the parts of a 200 response that were throttled
(`_bulk` or `_msearch` items with 429/5xx), with the same backoff policy.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from core.errors import InvalidInputError
from core.models import (
    Candidate,
    EntityKey,
    EntityRecord,
    Filters,
    LexicalQuery,
    Placement,
    Retrieval,
    StoredEntity,
    Vector,
    WriteOutcome,
)
from infra.opensearch import bodies, documents, mapping, responses
from infra.opensearch.catalog import OpenSearchCatalog
from infra.opensearch.client import RetryPolicy
from infra.opensearch.errors import (
    INDEX_MISSING,
    RETRYABLE_STATUSES,
    classify,
    error_parts,
    translated,
)
from infra.opensearch.responses import ItemResult

_log = logging.getLogger(__name__)
Refresh = bool | str  # False (default), True, or "wait_for" (tests, the local dev server)
_RESOURCE_EXISTS = "resource_already_exists_exception"
REFRESH_INTERVAL_SECONDS = 1.0  # OpenSearch's default index.refresh_interval (the mapping keeps it)


class OpenSearchIndex(OpenSearchCatalog):
    """SearchIndex over OpenSearch: one document per entity, chunks nested, versions external."""

    def __init__(
        self,
        client: Any,
        dimension: int,
        prefix: str = "quarry",
        refresh: Refresh = False,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
        auto_create: bool = True,
    ) -> None:
        self._client = client
        self._dimension = dimension
        self._prefix = prefix
        self._alias = prefix
        self._refresh = refresh
        self._retry = retry or RetryPolicy()
        self._sleep = sleep
        self._jitter = jitter
        self._ready = not auto_create

    @property
    def visibility_delay_seconds(self) -> float:
        """0 when writes wait for a refresh; else the index refresh interval (a search may miss a write)."""
        return 0.0 if self._refresh else REFRESH_INTERVAL_SECONDS

    @property
    def alias(self) -> str:
        """The alias every read and write goes through."""
        return self._alias

    # -- index lifecycle --------------------------------------------------------------------------------

    def ensure_index(self) -> bool:
        """Create the template, the first index and its alias when missing; True when it created them."""
        indices = self._client.indices
        with translated():
            indices.put_index_template(
                name=mapping.template_name(self._prefix),
                body=mapping.template_body(self._prefix, self._dimension),
            )
            if indices.exists_alias(name=self._alias):
                self._ready = True
                return False
        created = self._create_first_index()
        self._ready = True
        return created

    def _create_first_index(self) -> bool:
        from opensearchpy.exceptions import RequestError

        with translated():
            try:
                self._client.indices.create(
                    index=mapping.index_name(self._prefix),
                    body=mapping.create_index_body(self._prefix, self._dimension),
                )
            except RequestError as exc:
                if error_parts(exc.info)[0] == _RESOURCE_EXISTS:
                    return False  # another container won the race: same index, same alias
                raise
        return True

    # -- retried calls ----------------------------------------------------------------------------------

    def _with_item_retries(
        self,
        count: int,
        send: Callable[[list[int]], list[Any]],
        status: Callable[[Any], int],
    ) -> list[Any]:
        """Send items `0..count-1`; resend only those answered 429/5xx, with backoff, a bounded number of times."""
        results: list[Any] = [None] * count
        pending = list(range(count))
        for attempt in range(self._retry.max_retries + 1):
            answered = send(pending)
            for position, result in zip(pending, answered, strict=True):
                results[position] = result
            pending = [p for p in pending if status(results[p]) in RETRYABLE_STATUSES]
            if not pending or attempt == self._retry.max_retries:
                break
            self._sleep(self._retry.delay(attempt, self._jitter()))
        return results

    def _bulk(
        self, writes: Sequence[tuple[str, int, dict[str, Any]]], version_type: str = "external"
    ) -> list[ItemResult]:
        if not self._ready:
            self.ensure_index()
        params = {} if self._refresh is False else {"refresh": self._refresh}

        def send(positions: list[int]) -> list[ItemResult]:
            lines = bodies.bulk_lines(self._alias, [writes[p] for p in positions], version_type)
            with translated():
                response = self._client.bulk(body=lines, **params)
            return responses.bulk_items(response, len(positions))

        return self._with_item_retries(len(writes), send, lambda item: item.status)

    def _msearch(self, searches: Sequence[dict[str, Any]]) -> list[Mapping[str, Any] | None]:
        """Run searches in one `_msearch`; None for a search whose index does not exist yet."""

        def send(positions: list[int]) -> list[Mapping[str, Any]]:
            lines = bodies.msearch_lines(self._alias, [searches[p] for p in positions])
            with translated():
                response = self._client.msearch(body=lines)
            return responses.msearch_items(response, len(positions))

        items = self._with_item_retries(len(searches), send, lambda item: int(item.get("status", 200)))
        return [self._search_result(item) for item in items]

    @staticmethod
    def _search_result(item: Mapping[str, Any]) -> Mapping[str, Any] | None:
        if "error" not in item:
            return item
        error_type, reason = error_parts(item)
        if error_type == INDEX_MISSING:
            return None  # nothing was ever indexed: an empty result, not an outage
        raise classify(int(item.get("status", 500)), error_type, reason)

    def _fetch(self, doc_ids: Sequence[str], with_chunks: bool = False) -> list[Mapping[str, Any]]:
        from opensearchpy.exceptions import NotFoundError

        with translated():
            try:
                response = self._client.mget(body=bodies.mget_body(doc_ids, with_chunks), index=self._alias)
            except NotFoundError as exc:
                if error_parts(exc.info)[0] == INDEX_MISSING:
                    return []  # nothing was ever indexed
                raise
        return responses.mget_sources(response)

    def _stored_doc(self, tenant_id: str, key: EntityKey, with_chunks: bool) -> Mapping[str, Any] | None:
        found = self._fetch([documents.doc_id(tenant_id, key)], with_chunks)
        doc = found[0] if found else None
        return doc if doc is not None and doc.get(mapping.TENANT) == tenant_id else None

    # -- writes -----------------------------------------------------------------------------------------

    def _check_dimension(self, record: EntityRecord) -> None:
        for chunk in record.chunks:
            if chunk.embedding is not None and len(chunk.embedding) != self._dimension:
                path = f"chunks.{chunk.chunk_no}.embedding"
                raise InvalidInputError(
                    f"embedding has {len(chunk.embedding)} dimensions, the index expects {self._dimension}",
                    {path: f"must have {self._dimension} dimensions"},
                )

    def upsert_many(self, records: Sequence[EntityRecord]) -> list[WriteOutcome]:
        """Upsert many entity versions in one `_bulk`; one outcome per record, in order."""
        for record in records:
            self._check_dimension(record)
        writes = [
            (documents.doc_id(r.tenant_id, r.key), r.version, documents.entity_source(r)) for r in records
        ]
        items = self._bulk(writes) if writes else []
        return [responses.write_outcome(item, r.version) for item, r in zip(items, records, strict=True)]

    def upsert(self, record: EntityRecord) -> WriteOutcome:
        """Store a whole entity version; OpenSearch's external versioning refuses anything not newer."""
        return self.upsert_many([record])[0]

    def _versioned_write(
        self,
        tenant_id: str,
        key: EntityKey,
        version: int,
        source: dict[str, Any],
        version_type: str = "external",
    ) -> WriteOutcome:
        item = self._bulk([(documents.doc_id(tenant_id, key), version, source)], version_type)[0]
        return responses.write_outcome(item, version)

    def update_metadata(
        self,
        tenant_id: str,
        key: EntityKey,
        version: int,
        body: Mapping[str, Any],
        metadata: Mapping[str, Any],
        updated_at: str,
        placement: Placement | None = None,
    ) -> WriteOutcome:
        """Rewrite the stored document with new body/metadata (and placement) at `version`; text and
        vectors kept."""
        stored = self._stored_doc(tenant_id, key, with_chunks=True)
        if stored is None or stored.get(mapping.DELETED):
            return WriteOutcome.NOT_FOUND
        refused = responses.refused(int(stored[mapping.VERSION]), version)
        if refused is not None:
            return refused
        source = documents.with_metadata(stored, version, body, metadata, updated_at, placement)
        return self._versioned_write(tenant_id, key, version, source)

    def delete(self, tenant_id: str, key: EntityKey, version: int | None) -> WriteOutcome:
        """Replace the entity by a tombstone at `version` (stored + 1 when None); see SearchIndex.delete.

        Unknown with a version: a tombstone alone. A live document at exactly `version` is replaced with
        `external_gte` (a delete wins a tie); everything else uses strict external versioning.
        """
        stored = self._stored_doc(tenant_id, key, with_chunks=False)
        if stored is None:
            if version is None:
                return WriteOutcome.NOT_FOUND
            return self._versioned_write(
                tenant_id, key, version, documents.new_tombstone(tenant_id, key, version)
            )
        current = int(stored[mapping.VERSION])
        effective = current + 1 if version is None else version
        tie = effective == current and not stored.get(mapping.DELETED)
        refused = None if tie else responses.refused(current, effective)
        if refused is not None:
            return refused
        source = documents.tombstone(stored, effective)
        return self._versioned_write(tenant_id, key, effective, source, "external_gte" if tie else "external")

    # -- reads ------------------------------------------------------------------------------------------

    def get(self, tenant_id: str, keys: Sequence[EntityKey]) -> dict[EntityKey, StoredEntity]:
        """The stored entities among `keys` (tombstones included, flagged deleted)."""
        unique = sorted(set(keys))
        if not unique:
            return {}
        found = self._fetch([documents.doc_id(tenant_id, k) for k in unique])
        entities = (documents.stored_entity(s) for s in found if s.get(mapping.TENANT) == tenant_id)
        return {e.key: e for e in entities}

    def _matches_dimension(self, embedding: Vector) -> bool:
        """A query vector of another dimension finds nothing (as in the local index), and is logged."""
        if len(embedding) == self._dimension:
            return True
        _log.warning(
            "query vector has %d dimensions, the index %d: no vector results", len(embedding), self._dimension
        )
        return False

    def lexical(self, tenant_id: str, query: LexicalQuery, filters: Filters, k: int) -> list[Candidate]:
        """BM25 over the boosted tiers, best chunk per entity, at most k."""
        return list(self.retrieve(tenant_id, query, None, filters, k).lexical)

    def vector(self, tenant_id: str, embedding: Vector, filters: Filters, k: int) -> list[Candidate]:
        """Cosine k-NN (scores converted back to raw cosine), best chunk per entity, at most k."""
        return list(self.retrieve(tenant_id, None, embedding, filters, k).vector)

    def retrieve(
        self,
        tenant_id: str,
        query: LexicalQuery | None,
        embedding: Vector | None,
        filters: Filters,
        k: int,
    ) -> Retrieval:
        """The lexical and the vector list in ONE `_msearch` round trip."""
        k = bodies.clamp(k)
        searches: list[tuple[str, dict[str, Any]]] = []
        if query is not None and not query.empty and k > 0:
            searches.append(("lexical", bodies.lexical_body(tenant_id, query, filters, k)))
        if embedding is not None and k > 0 and self._matches_dimension(embedding):
            searches.append(("vector", bodies.vector_body(tenant_id, embedding, filters, k)))
        if not searches:
            return Retrieval()
        results = self._msearch([body for _, body in searches])
        lists: dict[str, tuple[Candidate, ...]] = {"lexical": (), "vector": ()}
        for (kind, _), result in zip(searches, results, strict=True):
            convert = responses.bm25 if kind == "lexical" else responses.cosine
            found = responses.candidates(result, k, tenant_id, convert) if result is not None else []
            lists[kind] = tuple(found)
        return Retrieval(lexical=lists["lexical"], vector=lists["vector"])
