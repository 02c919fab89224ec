"""The retried calls, a part of OpenSearchIndex: `_bulk` (cut into byte batches, halved when a domain refuses one
as too large, throttled items resent by opensearch-py's `helpers.streaming_bulk`), `_msearch` (throttled or
failed items run again by tenacity: opensearch-py has no helper for those) and `_mget` (real time, for
reads and for the compare-and-set writes). All paced by one RetryPolicy (client.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from core.errors import PayloadTooLargeError, QuarryError, UnavailableError
from infra.opensearch import bodies, query_bodies, responses
from infra.opensearch.client import RetryPolicy
from infra.opensearch.errors import (
    BACKEND,
    INDEX_MISSING,
    RETRYABLE_STATUSES,
    UNAVAILABLE_RETRY_AFTER,
    classify,
    error_parts,
    translated,
)
from infra.opensearch.index_lifecycle import IndexLifecycle
from infra.opensearch.responses import ItemResult

Refresh = bool | str  # False (default), True, or "wait_for" (tests, the local dev server)
Write = tuple[str, bodies.SeqNo | None, dict[str, Any]]  # doc id, the read's (seq_no, term) or None, source
# No new `_msearch` attempt for throttled items after this long (each attempt is itself bounded by the
# Transport's budget; these only add round trips to a search that was answered).
ITEM_RETRY_BUDGET_SECONDS = 2.0
_NO_SPLIT = 2**62  # streaming_bulk's own byte limit, set out of reach: one request per call


def _as_bulk_pair(pair: tuple[dict[str, Any], dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """streaming_bulk's expand_action_callback: our actions are already (action line, source line)."""
    return pair


class _TooLarge(Exception):
    """A `_bulk` request the cluster refused as too large (HTTP 413)."""


class IndexCalls:
    """The retried calls, a part of OpenSearchIndex (see module docstring): the client's requests through
    the alias, the index made ready first by the lifecycle part."""

    def __init__(
        self,
        client: Any,
        lifecycle: IndexLifecycle,
        refresh: Refresh,
        retry: RetryPolicy,
        sleep: Callable[[float], None],
        max_bulk_bytes: int,
        write_params: dict[str, Any],
    ) -> None:
        """`sleep`: tenacity's waits between `_msearch` attempts (tests record them); `write_params`: every
        `_bulk`'s wait_for_active_shards and timeouts (build_opensearch_index)."""
        self._client = client
        self._lifecycle = lifecycle
        self._alias = lifecycle.alias
        self._refresh = refresh
        self._retry = retry
        self._sleep = sleep
        self._max_bulk_bytes = max_bulk_bytes
        self._write_params = write_params

    def bulk(self, writes: Sequence[Write]) -> list[ItemResult]:
        """Write in as many `_bulk` requests as the byte limit needs; one result per write, in order."""
        self._lifecycle.ensure_for_writes()
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
        pairs = [bodies.write_pair(self._alias, *write, self._lifecycle.routed) for write in writes]
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

    def msearch(
        self, searches: Sequence[dict[str, Any]], routing: str | None = None
    ) -> list[Mapping[str, Any] | QuarryError | None]:
        """Run searches in one `_msearch`: per search its result, None when the index does not exist yet,
        or the error that search alone failed with. Searches answered 429/5xx inside the 200 response are
        run again alone (tenacity: RetryPolicy's attempts, full-jitter exponential waits, a time budget)."""
        self._lifecycle.ensure_for_reads()
        items: list[Mapping[str, Any]] = [{} for _ in searches]
        pending = list(range(len(searches)))

        def attempt() -> list[int]:
            nonlocal pending
            lines = query_bodies.msearch_lines(self._alias, [searches[p] for p in pending], routing)
            with translated():
                response = self._client.msearch(body=lines, filter_path=query_bodies.MSEARCH_FILTER_PATH)
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

        self._item_retrying()(attempt)
        if self._lifecycle.live_index is not None and responses.hit_indices(items) - {
            self._lifecycle.live_index
        }:
            self._lifecycle.recheck_model()  # answered by another generation: a reindex swapped the alias
        return [self._search_result(item) for item in items]

    def _item_retrying(self) -> Any:
        """tenacity's Retrying for the `_msearch` items still pending: called again while an attempt returns
        some (RetryPolicy's attempts, full-jitter exponential waits, ITEM_RETRY_BUDGET_SECONDS in all)."""
        from tenacity import (
            Retrying,
            retry_if_result,
            stop_after_attempt,
            stop_after_delay,
            wait_random_exponential,
        )

        return Retrying(
            stop=stop_after_attempt(self._retry.max_retries + 1)
            | stop_after_delay(ITEM_RETRY_BUDGET_SECONDS),
            wait=wait_random_exponential(multiplier=self._retry.base, max=self._retry.cap),
            retry=retry_if_result(bool),  # some searches still throttled; an exception is not retried here
            retry_error_callback=lambda state: state.outcome.result() if state.outcome else None,
            sleep=self._sleep,
        )

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
            self._lifecycle.recheck_model()
            return None
        return classify(status, error_type, reason)

    def fetch(
        self, tenant_id: str, doc_ids: Sequence[str], with_chunks: bool = False, vectors_only: bool = False
    ) -> list[Mapping[str, Any]]:
        from opensearchpy.exceptions import NotFoundError

        routing = [self._lifecycle.route(tenant_id)] * len(doc_ids)
        with translated():
            try:
                body = bodies.mget_body(doc_ids, with_chunks, routing=routing, vectors_only=vectors_only)
                response = self._client.mget(body=body, index=self._alias)
            except NotFoundError as exc:
                if error_parts(exc.info)[0] == INDEX_MISSING:
                    return []  # nothing was ever indexed
                raise
        return responses.mget_sources(response)

    def fetch_for_write(self, docs: Sequence[tuple[str, str]], read: str) -> dict[str, responses.StoredDoc]:
        """The stored documents among `docs` ((tenant, doc id) pairs; `read`: "version", "entity" or "all"
        of each), with `_seq_no`/`_primary_term`; `_mget` is real time: it sees every write, refreshed or
        not."""
        self._lifecycle.ensure_for_writes()
        body = bodies.mget_body(
            [doc_id for _, doc_id in docs],
            with_chunks=read == "all",
            version_only=read == "version",
            routing=[self._lifecycle.route(tenant) for tenant, _ in docs],
        )
        with translated():
            response = self._client.mget(body=body, index=self._alias)
        return responses.mget_docs(response)

    def fetch_for_touch(self, tenant_id: str, doc_ids: Sequence[str]) -> dict[str, responses.StoredDoc]:
        """What a touch needs of each document (bodies.TOUCH_FIELDS), real time, with its generation."""
        self._lifecycle.ensure_for_writes()
        with translated():
            response = self._client.mget(
                body=bodies.touch_read_body(doc_ids, self._lifecycle.route(tenant_id)), index=self._alias
            )
        return responses.mget_docs(response)

    def bulk_pairs(self, pairs: Sequence[tuple[dict[str, Any], dict[str, Any]]]) -> list[ItemResult]:
        """One `_bulk` of ready action/source pairs; one result per pair, in order."""
        if not pairs:
            return []
        params: dict[str, Any] = dict(self._write_params)
        if self._refresh is not False:
            params["refresh"] = self._refresh
        with translated():
            response = self._client.bulk(body=[line for pair in pairs for line in pair], **params)
        return responses.bulk_items(response, len(pairs))
