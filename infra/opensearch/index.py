"""OpenSearchIndex: the production SearchIndex (BM25 + k-NN in one OpenSearch index behind an alias).

The adapter only sequences calls: bodies come from `bodies`/`mapping`/`documents`, responses are read by
`responses`, failures are translated by `errors`. Retries come from libraries, paced by one RetryPolicy:
whole requests by opensearch-py's Transport (`client.build_client`), throttled `_bulk` items by
opensearch-py's `helpers.streaming_bulk`, throttled or failed `_msearch` items by tenacity (opensearch-py
has no helper for those).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from core.errors import InvalidInputError, PayloadTooLargeError, QuarryError, UnavailableError
from core.models import (
    ALL_CHUNKS,
    Candidate,
    CandidateLists,
    CandidateQuery,
    EntityKey,
    EntityRecord,
    Filters,
    LexicalQuery,
    Placement,
    StoredEntity,
    Vector,
    WriteOutcome,
)
from infra.opensearch import bodies, documents, mapping, responses
from infra.opensearch.catalog import OpenSearchCatalog
from infra.opensearch.client import RetryPolicy, node_timeout
from infra.opensearch.errors import (
    BACKEND,
    INDEX_MISSING,
    RETRYABLE_STATUSES,
    UNAVAILABLE_RETRY_AFTER,
    classify,
    error_parts,
    translated,
)
from infra.opensearch.layout import Layout
from infra.opensearch.lifecycle import IndexLifecycle
from infra.opensearch.responses import ItemResult

_log = logging.getLogger(__name__)
Refresh = bool | str  # False (default), True, or "wait_for" (tests, the local dev server)
# Bytes per `_bulk` request. Amazon OpenSearch Service refuses requests above 10 MiB on small instance
# types (100 MiB on larger ones) with a 413, and recommends bulk requests of 5–15 MiB: 5 MiB stays
# below every cap with room to spare. QUARRY_OPENSEARCH_MAX_BULK_BYTES changes it.
DEFAULT_MAX_BULK_BYTES = 5 * 1024 * 1024
REFRESH_INTERVAL_SECONDS = 1.0  # OpenSearch's default index.refresh_interval (the mapping keeps it)
# How often a process reads which model built the generation behind the alias (one GET _mapping): a
# `quarry reindex` swap is followed within this; its settle wait is longer (infra/opensearch/reindex.py).
DEFAULT_MODEL_CHECK_SECONDS = 5.0


Write = tuple[str, bodies.SeqNo | None, dict[str, Any]]  # doc id, the read's (seq_no, term) or None, source
# What a write makes of the stored document (None: none yet): the new `_source`, or the outcome without
# writing (stale, duplicate, not found).
Build = Callable[[Mapping[str, Any] | None], "dict[str, Any] | WriteOutcome"]
# No new `_msearch` attempt for throttled items after this long (each attempt is itself bounded by the
# Transport's budget; these only add round trips to a search that was answered).
ITEM_RETRY_BUDGET_SECONDS = 2.0
_NO_SPLIT = 2**62  # streaming_bulk's own byte limit, set out of reach: one request per call
# OpenSearch's own default: an acknowledged write is on every in-sync copy of its shard, even when only the
# primary is active (docs/scaling.md, "What an acknowledged write means"). "all" refuses writes while a
# replica is missing instead.
DEFAULT_ACTIVE_SHARDS = "1"
CAS_ROUNDS = 16  # read-decide-write rounds per write before giving up under contention (each loses only
# to a write that landed in between, so a round that fails means another writer made progress)


def _as_bulk_pair(pair: tuple[dict[str, Any], dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """streaming_bulk's expand_action_callback: our actions are already (action line, source line)."""
    return pair


class _TooLarge(Exception):
    """A `_bulk` request the cluster refused as too large (HTTP 413)."""


class OpenSearchIndex(IndexLifecycle, OpenSearchCatalog):
    """SearchIndex over OpenSearch: one document per entity, chunks nested, writes compare-and-set."""

    def __init__(
        self,
        client: Any,
        dimension: int,
        prefix: str = "quarry",
        refresh: Refresh = False,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        auto_create: bool = True,
        max_bulk_bytes: int = DEFAULT_MAX_BULK_BYTES,
        model_check_seconds: float = DEFAULT_MODEL_CHECK_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
        layout: Layout | None = None,
        wait_for_active_shards: str = DEFAULT_ACTIVE_SHARDS,
        request_timeout: float | None = None,
    ) -> None:
        self._client = client
        self._model_dir: str | None = None
        self._live_index: str | None = None
        self._model_checked = -math.inf
        self._model_check_seconds = model_check_seconds
        self._monotonic = monotonic
        self._dimension = dimension
        self._prefix = prefix
        self._alias = prefix
        self._refresh = refresh
        self._retry = retry or RetryPolicy()
        self._sleep = sleep  # tenacity's waits between `_msearch` attempts (tests record them)
        self._ready = not auto_create
        self._max_bulk_bytes = max_bulk_bytes
        self._display_values = True  # an index this adapter creates has them; an older one is read in _adopt
        self._layout = layout or Layout()
        self._routed = self._layout.routed  # of the live index, once read (lifecycle._adopt)
        # Every `_bulk` says how many copies of each shard must be active before it writes, and how long a
        # primary that is not (a node just lost, a replica being promoted) is waited for: less than the
        # client waits for the answer, so a write the node cannot place is answered 503 by the node, not
        # left running after the client gave up and sent it again (client.node_timeout). opensearch-py
        # takes `timeout` for its own unless `request_timeout` is given too.
        self._write_params: dict[str, Any] = {"wait_for_active_shards": wait_for_active_shards}
        if request_timeout is not None:
            self._write_params.update(timeout=node_timeout(request_timeout), request_timeout=request_timeout)

    @property
    def visibility_delay_seconds(self) -> float:
        """0 when writes wait for a refresh; else the index refresh interval (a search may miss a write)."""
        return 0.0 if self._refresh else REFRESH_INTERVAL_SECONDS

    @property
    def client(self) -> Any:
        """The opensearch-py client (for `quarry reindex`, which works beside the adapter)."""
        return self._client

    @property
    def layout(self) -> Layout:
        """The layout of the index generations this adapter creates."""
        return self._layout

    @property
    def alias(self) -> str:
        """The alias every read and write goes through."""
        return self._alias

    # -- retried calls ----------------------------------------------------------------------------------

    def _bulk(self, writes: Sequence[Write]) -> list[ItemResult]:
        """Write in as many `_bulk` requests as the byte limit needs; one result per write, in order."""
        if not self._ready:
            self.ensure_index()
        sizes = [bodies.write_bytes(self._alias, *w) for w in writes]
        results: list[ItemResult] = []
        for batch in bodies.byte_batches(sizes, self._max_bulk_bytes):
            results.extend(self._bulk_halving([writes[p] for p in batch]))
        return results

    def _bulk_halving(self, writes: Sequence[Write]) -> list[ItemResult]:
        """One `_bulk`; refused as too large (413: the domain's cap is below our limit), halves, down to
        one entity, which is then the caller's error (413), never an outage."""
        try:
            return self._bulk_request(writes)
        except _TooLarge as exc:
            if len(writes) == 1:
                raise PayloadTooLargeError(
                    f"entity {writes[0][0]} is too large for the OpenSearch request size limit: {exc}",
                    self._max_bulk_bytes,
                ) from exc
            half = len(writes) // 2
            return self._bulk_halving(writes[:half]) + self._bulk_halving(writes[half:])

    def _bulk_request(self, writes: Sequence[Write]) -> list[ItemResult]:
        """One `_bulk` through opensearch-py's `streaming_bulk`, which resends only the items answered 429
        (after RetryPolicy's backoff, doubling up to its cap); one ItemResult per write, in order."""
        from opensearchpy.exceptions import TransportError
        from opensearchpy.helpers import streaming_bulk

        params: dict[str, Any] = dict(self._write_params)
        if self._refresh is not False:
            params["refresh"] = self._refresh
        pairs = [bodies.write_pair(self._alias, *write, self._routed) for write in writes]
        # streaming_bulk yields resent items after the others: match answers to writes by document id
        answers: dict[str, list[Mapping[str, Any]]] = {}
        with translated():
            try:
                for _, item in streaming_bulk(
                    self._client,
                    pairs,
                    chunk_size=len(pairs),
                    max_chunk_bytes=_NO_SPLIT,  # `_bulk` already cut the writes into byte batches
                    expand_action_callback=_as_bulk_pair,
                    raise_on_error=False,
                    max_retries=self._retry.max_retries,
                    initial_backoff=self._retry.base,  # type: ignore[arg-type]  # seconds, typed as int
                    max_backoff=self._retry.cap,  # type: ignore[arg-type]
                    **params,
                ):
                    (_, body), *_ = item.items()
                    answers.setdefault(str(body.get("_id")), []).append(item)
            except TransportError as exc:
                if exc.status_code == 413:
                    raise _TooLarge(str(exc.error)) from exc
                raise
        ordered = [answers[doc_id].pop(0) for doc_id, *_ in writes if answers.get(doc_id)]
        return responses.bulk_items({"items": ordered}, len(writes))

    def _route(self, tenant_id: str) -> str | None:
        """The routing value of the tenant's requests: the tenant on a routed index (layout.py), else none
        (an existing index is read first: one made before routing is read and written without it)."""
        self._ensure_for_reads()
        return tenant_id if self._routed else None

    def _msearch(
        self, searches: Sequence[dict[str, Any]], routing: str | None = None
    ) -> list[Mapping[str, Any] | QuarryError | None]:
        """Run searches in one `_msearch`: per search its result, None when the index does not exist yet,
        or the error that search alone failed with. Searches answered 429/5xx inside the 200 response are
        run again alone (tenacity: RetryPolicy's attempts, full-jitter exponential waits, a time budget)."""
        from tenacity import (
            Retrying,
            retry_if_result,
            stop_after_attempt,
            stop_after_delay,
            wait_random_exponential,
        )

        self._ensure_for_reads()
        items: list[Mapping[str, Any]] = [{} for _ in searches]
        pending = list(range(len(searches)))

        def attempt() -> list[int]:
            nonlocal pending
            lines = bodies.msearch_lines(self._alias, [searches[p] for p in pending], routing)
            with translated():
                response = self._client.msearch(body=lines, filter_path=bodies.MSEARCH_FILTER_PATH)
            for p, item in zip(pending, responses.msearch_items(response, len(pending)), strict=True):
                items[p] = item
            # throttled, unavailable, or answered from some shards only: asked again (a replica is promoted
            # within moments of its primary's node leaving)
            pending = [
                p
                for p in pending
                if int(items[p].get("status", 200)) in RETRYABLE_STATUSES or responses.partial(items[p])
            ]
            return pending

        Retrying(
            stop=stop_after_attempt(self._retry.max_retries + 1)
            | stop_after_delay(ITEM_RETRY_BUDGET_SECONDS),
            wait=wait_random_exponential(multiplier=self._retry.base, max=self._retry.cap),
            retry=retry_if_result(bool),  # some searches still throttled; an exception is not retried here
            retry_error_callback=lambda state: state.outcome.result() if state.outcome else None,
            sleep=self._sleep,
        )(attempt)
        if self._live_index is not None and responses.hit_indices(items) - {self._live_index}:
            self.recheck_model()  # answered by another generation: a reindex swapped the alias
        return [self._search_result(item) for item in items]

    def _search_result(self, item: Mapping[str, Any]) -> Mapping[str, Any] | QuarryError | None:
        if "error" not in item:
            why = responses.partial(item)
            if why is None:
                return item
            return UnavailableError(BACKEND, f"a search answered partially: {why}", UNAVAILABLE_RETRY_AFTER)
        error_type, reason = error_parts(item)
        if error_type == INDEX_MISSING:
            return None  # nothing was ever indexed: an empty result, not an outage
        status = int(item.get("status", 500))
        if status == 400 and responses.is_dimension_error(item.get("error")):
            # A query vector of the model a reindex just swapped out: no vector hits, and the next call
            # reads the new generation's model (SearchService then embeds again with it).
            self.recheck_model()
            return None
        return classify(status, error_type, reason)

    def _fetch(
        self, tenant_id: str, doc_ids: Sequence[str], with_chunks: bool = False, vectors_only: bool = False
    ) -> list[Mapping[str, Any]]:
        from opensearchpy.exceptions import NotFoundError

        routing = [self._route(tenant_id)] * len(doc_ids)
        with translated():
            try:
                body = bodies.mget_body(doc_ids, with_chunks, routing=routing, vectors_only=vectors_only)
                response = self._client.mget(body=body, index=self._alias)
            except NotFoundError as exc:
                if error_parts(exc.info)[0] == INDEX_MISSING:
                    return []  # nothing was ever indexed
                raise
        return responses.mget_sources(response)

    def _fetch_for_write(self, docs: Sequence[tuple[str, str]], read: str) -> dict[str, responses.StoredDoc]:
        """The stored documents among `docs` ((tenant, doc id) pairs; `read`: "version", "entity" or "all"
        of each), with `_seq_no`/`_primary_term`; `_mget` is real time: it sees every write, refreshed or
        not."""
        if not self._ready:
            self.ensure_index()
        body = bodies.mget_body(
            [doc_id for _, doc_id in docs],
            with_chunks=read == "all",
            version_only=read == "version",
            routing=[self._route(tenant) for tenant, _ in docs],
        )
        with translated():
            response = self._client.mget(body=body, index=self._alias)
        return responses.mget_docs(response)

    def _cas(self, jobs: Sequence[tuple[str, str, Build]], read: str = "version") -> list[WriteOutcome]:
        """Compare-and-set writes: read each document, let its `Build` decide, write only if unchanged
        since the read; a write that lost to another in between is decided again on the new document."""
        if not jobs:
            return []
        outcomes: list[WriteOutcome | None] = [None] * len(jobs)
        pending = list(range(len(jobs)))
        for _ in range(CAS_ROUNDS):
            stored = self._fetch_for_write([jobs[p][:2] for p in pending], read)
            writes: list[Write] = []
            positions: list[int] = []
            for p in pending:
                _, doc_id, build = jobs[p]
                found = stored.get(doc_id)
                decided = build(found.source if found else None)
                if isinstance(decided, WriteOutcome):
                    outcomes[p] = decided
                    continue
                source = documents.for_layout(decided, self._display_values)
                writes.append((doc_id, found.seq if found else None, source))
                positions.append(p)
            pending = []
            for p, item in zip(positions, self._bulk(writes) if writes else [], strict=True):
                if item.ok:
                    outcomes[p] = WriteOutcome.APPLIED
                elif item.conflict:
                    pending.append(p)  # written since our read: decide again
                else:
                    raise self._write_error(item)
            if not pending:
                return [o for o in outcomes if o is not None]
        raise UnavailableError(
            BACKEND, f"{len(pending)} writes kept losing to concurrent writes", UNAVAILABLE_RETRY_AFTER
        )

    # -- writes -----------------------------------------------------------------------------------------

    def _write_error(self, item: ItemResult) -> QuarryError:
        """A refused write; one refused for its vector dimension was embedded with the model of the
        generation a reindex just swapped out: a 503 to retry (this process follows the new model by
        then), never the caller's 400."""
        if item.status == 400 and item.dimension_mismatch:
            self.recheck_model()
            return UnavailableError(
                BACKEND, f"the index was reindexed with another embedding model: {item.reason}", 1
            )
        return classify(item.status, item.error_type, item.reason)

    def _check_dimension(self, record: EntityRecord) -> None:
        for chunk in record.chunks:
            if chunk.embedding is not None and len(chunk.embedding) != self._dimension:
                path = f"chunks.{chunk.chunk_no}.embedding"
                raise InvalidInputError(
                    f"embedding has {len(chunk.embedding)} dimensions, the index expects {self._dimension}",
                    {path: f"must have {self._dimension} dimensions"},
                )

    def upsert_many(self, records: Sequence[EntityRecord]) -> list[WriteOutcome]:
        """Upsert many entity versions (one `_mget` and one `_bulk` per round); one outcome per record."""
        for record in records:
            self._check_dimension(record)
        return self._cas(
            [(r.tenant_id, documents.doc_id(r.tenant_id, r.key), _replace_with(r)) for r in records]
        )

    def upsert(self, record: EntityRecord) -> WriteOutcome:
        """Store a whole entity version, unless the stored one is as new or newer."""
        return self.upsert_many([record])[0]

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
        """Rewrite the stored document with new body/metadata (and placement) at `version`, text and vectors
        kept, built on the document as it is when written (a write landing after the read: read again)."""

        def build(stored: Mapping[str, Any] | None) -> dict[str, Any] | WriteOutcome:
            if not _owned(stored, tenant_id) or stored.get(mapping.DELETED):  # type: ignore[union-attr]
                return WriteOutcome.NOT_FOUND
            assert stored is not None
            refused = responses.refused(int(stored[mapping.VERSION]), version)
            return refused or documents.with_metadata(stored, version, body, metadata, updated_at, placement)

        return self._cas([(tenant_id, documents.doc_id(tenant_id, key), build)], read="all")[0]

    def delete(self, tenant_id: str, key: EntityKey, version: int | None) -> WriteOutcome:
        """Replace the entity by a tombstone at `version` (stored + 1 when None); see SearchIndex.delete.

        Unknown with a version: a tombstone alone (an older write arriving later is refused). A live
        document at exactly `version` is replaced (a delete wins a tie).
        """

        def build(stored: Mapping[str, Any] | None) -> dict[str, Any] | WriteOutcome:
            if not _owned(stored, tenant_id):
                if version is None:
                    return WriteOutcome.NOT_FOUND
                return documents.new_tombstone(tenant_id, key, version)
            assert stored is not None
            current = int(stored[mapping.VERSION])
            effective = current + 1 if version is None else version
            if effective == current and not stored.get(mapping.DELETED):
                return documents.tombstone(stored, effective)  # a delete wins a tie
            refused = responses.refused(current, effective)
            return refused or documents.tombstone(stored, effective)

        return self._cas([(tenant_id, documents.doc_id(tenant_id, key), build)], read="entity")[0]

    # -- reads ------------------------------------------------------------------------------------------

    def get(self, tenant_id: str, keys: Sequence[EntityKey]) -> dict[EntityKey, StoredEntity]:
        """The stored entities among `keys` (tombstones included, flagged deleted)."""
        unique = sorted(set(keys))
        if not unique:
            return {}
        found = self._fetch(tenant_id, [documents.doc_id(tenant_id, k) for k in unique])
        entities = (documents.stored_entity(s) for s in found if s.get(mapping.TENANT) == tenant_id)
        return {e.key: e for e in entities}

    def chunk_vectors(
        self, tenant_id: str, chunks: Sequence[tuple[EntityKey, int]]
    ) -> dict[tuple[EntityKey, int], Vector]:
        """Stored chunk embeddings, from one `_mget` of the entities' chunk numbers and vectors (no text)."""
        import numpy as np

        keys = sorted({key for key, _ in chunks})
        wanted = set(chunks)
        out: dict[tuple[EntityKey, int], Vector] = {}
        ids = [documents.doc_id(tenant_id, k) for k in keys]
        for doc in self._fetch(tenant_id, ids, vectors_only=True):
            if doc.get(mapping.TENANT) != tenant_id:
                continue
            key = EntityKey(str(doc.get(mapping.ENTITY_TYPE)), str(doc.get(mapping.ENTITY_ID)))
            every = (key, ALL_CHUNKS) in wanted
            for chunk in doc.get(mapping.CHUNKS) or []:
                ref = (key, int(chunk.get("chunk_no", ALL_CHUNKS)))
                if (every or ref in wanted) and ref[1] != ALL_CHUNKS and chunk.get("embedding") is not None:
                    out[ref] = np.asarray(chunk["embedding"], dtype=np.float32)
        return out

    def _matches_dimension(self, embedding: Vector) -> bool:
        """A query vector of another dimension finds nothing (as in the local index), and is logged."""
        if len(embedding) == self._dimension:
            return True
        self.recheck_model()  # the query's model may be the one a reindex just swapped in (or out)
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
    ) -> CandidateLists:
        """The lexical and the vector list in ONE `_msearch` round trip."""
        return self.retrieve_many(tenant_id, [CandidateQuery(query, embedding, filters, k)])[0]

    def retrieve_many(self, tenant_id: str, specs: Sequence[CandidateQuery]) -> list[CandidateLists]:
        """Every spec's lexical and vector list in ONE `_msearch` round trip (a context assembly's sources).

        One search the cluster refuses as invalid (a zero query vector, which cosinesimil rejects) empties
        only its own list; only when every search fails is the failure raised. A search the cluster could
        not answer whole (a shard unavailable, throttled past the retries, answered from some shards only)
        fails them all: never a list silently shorter than the index holds."""
        searches = self._searches(tenant_id, specs)
        lists: list[dict[str, list[Candidate]]] = [{"lexical": [], "vector": []} for _ in specs]
        if searches:
            results = self._msearch([body for *_, body in searches], self._route(tenant_id))
            failed = [r for r in results if isinstance(r, QuarryError)]
            unavailable = [r for r in failed if isinstance(r, UnavailableError)]
            if unavailable or (failed and len(failed) == len(results)):
                raise (unavailable or failed)[0]  # never an answer from some of the searches only
            incomplete: set[EntityKey] = set()
            for (n, kind, k, _), result in zip(searches, results, strict=True):
                if isinstance(result, QuarryError):
                    _log.warning("%s search failed, returning the other lists only: %s", kind, result)
                    continue
                if result is None:
                    continue
                if kind == "ranking":  # who and how similar only: nothing of it is shown
                    found = responses.candidates(result, k, tenant_id, responses.cosine)
                    lists[n]["vector"] = [replace(c, chunk_no=ALL_CHUNKS) for c in found]
                    continue
                convert = responses.bm25 if kind == "lexical" else responses.cosine
                lists[n][kind] = responses.candidates(result, k, tenant_id, convert)
                incomplete |= responses.incomplete(result, tenant_id)
            if incomplete:
                self._complete(tenant_id, incomplete, lists)
        return [CandidateLists(lexical=tuple(got["lexical"]), vector=tuple(got["vector"])) for got in lists]

    def _searches(
        self, tenant_id: str, specs: Sequence[CandidateQuery]
    ) -> list[tuple[int, str, int, dict[str, Any]]]:
        """(spec position, kind, k, body) of every search the specs need: "lexical", "vector", or "ranking"
        (a vector list wanted for its ranking only, on an index with display values)."""
        searches: list[tuple[int, str, int, dict[str, Any]]] = []
        for n, spec in enumerate(specs):
            k = bodies.clamp(spec.k)
            if spec.query is not None and not spec.query.empty and k > 0:
                body = bodies.lexical_body(tenant_id, spec.query, spec.filters, k, self._display_values)
                searches.append((n, "lexical", k, body))
            vector = spec.embedding
            if vector is not None and k > 0 and self._matches_dimension(vector) and any(vector):
                if spec.vector_ranking_only and self._display_values:
                    body = bodies.vector_ranking_body(tenant_id, vector, spec.filters, k)
                    searches.append((n, "ranking", k, body))
                else:
                    body = bodies.vector_body(tenant_id, vector, spec.filters, k, self._display_values)
                    searches.append((n, "vector", k, body))
        return searches

    def _complete(
        self, tenant_id: str, keys: set[EntityKey], lists: list[dict[str, list[Candidate]]]
    ) -> None:
        """Fill in, from `_source`, the candidates whose doc values could not show them whole (rare: a
        value too long for a doc value, or a document an older writer wrote)."""
        sources = {
            documents.stored_entity(s).key: s
            for s in self._fetch(
                tenant_id, [documents.doc_id(tenant_id, k) for k in sorted(keys)], with_chunks=True
            )
            if s.get(mapping.TENANT) == tenant_id
        }
        for got in lists:
            for kind, found in got.items():
                got[kind] = [
                    responses.with_source(c, sources[c.key]) if c.key in sources else c for c in found
                ]


def _owned(stored: Mapping[str, Any] | None, tenant_id: str) -> bool:
    return stored is not None and stored.get(mapping.TENANT) == tenant_id


def _replace_with(record: EntityRecord) -> Build:
    """A whole new version replaces the stored document unless that one is as new or newer."""

    def build(stored: Mapping[str, Any] | None) -> dict[str, Any] | WriteOutcome:
        if stored is not None:
            refused = responses.refused(int(stored[mapping.VERSION]), record.version)
            if refused is not None:
                return refused
        return documents.entity_source(record)

    return build
