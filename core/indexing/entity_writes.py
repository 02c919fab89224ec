"""Every write, whichever door it came through (HTTP, MCP, the CLI): whether it runs now or as a job, and
whether a stale version is refused, decided here once (docs/architecture.md, Request flow).

A write above the asynchronous size (`JobService.is_large`: as many chunks as a job's first part) or a
batch above `max_batch_items` is queued as a job and answered with it; a PUT that large is still checked
first (400, 409 and duplicate are answered at once, only the embedding waits). A write older than the
stored version raises StaleVersionError (409) naming both versions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.errors import PayloadTooLargeError, StaleVersionError
from core.indexing.entity_models import entity_models
from core.indexing.write_jobs import MAX_JOB_ITEMS, Job
from core.models import WriteOutcome
from core.ports import Clock

if TYPE_CHECKING:
    from core.governance.requests import CorpusReport
    from core.indexing.bulk_writes import BulkReport
    from core.indexing.drafts import WriteResult
    from core.indexing.entity_types import EntityTypeRegistry
    from core.indexing.indexing_service import IndexingService
    from core.indexing.write_job_service import JobService


@dataclass(frozen=True, slots=True)
class Queued:
    """A write accepted as a job: answered 202 with the job, processed by the queue's consumer."""

    job: Job


def applied(result: WriteResult) -> WriteResult:
    """`result`, unless it lost to a newer stored version: then the 409 naming both versions."""
    if result.outcome is WriteOutcome.STALE:
        stored = result.stored_version if result.stored_version is not None else result.version
        raise StaleVersionError(str(result.key), stored, result.version)
    return result


class EntityWrites:
    """PUT, PATCH and DELETE of one entity, bulk writes and corpus loads: now, or as a job."""

    def __init__(
        self,
        indexing: IndexingService,
        jobs: JobService,
        registry: EntityTypeRegistry,
        clock: Clock,
        max_batch_items: int,
        max_body_bytes: int,
    ) -> None:
        self._indexing = indexing
        self._jobs = jobs
        self._registry = registry
        self._clock = clock
        self._max_batch_items = max_batch_items
        self._max_body_bytes = max_body_bytes

    def put(self, tenant_id: str, entity_type: str, entity_id: str, body: Any) -> WriteResult | Queued:
        """Create or replace; one as large as a bulk job is checked now and embedded by a job."""
        now = self._clock.now()
        item = {**body, "type": entity_type, "id": entity_id}
        costs = self._jobs.costs("bulk", [item])
        if not self._jobs.is_large(costs):
            return applied(self._indexing.put(tenant_id, entity_type, entity_id, body, now))
        early = self._indexing.check_put(tenant_id, entity_type, entity_id, body, now)
        if early is None:
            return Queued(self._jobs.submit(tenant_id, "bulk", [item], costs))
        return applied(early)

    def patch(self, tenant_id: str, entity_type: str, entity_id: str, changes: Any) -> WriteResult:
        """Update some fields (never a job: a patch re-embeds at most one entity)."""
        now = self._clock.now()
        return applied(self._indexing.patch(tenant_id, entity_type, entity_id, changes, now))

    def delete(self, tenant_id: str, entity_type: str, entity_id: str, version: int | None) -> WriteResult:
        """Remove from retrieval, leaving a versioned tombstone."""
        now = self._clock.now()
        return applied(self._indexing.delete(tenant_id, entity_type, entity_id, version, now))

    def bulk(self, tenant_id: str, items: Sequence[Any]) -> BulkReport | Queued:
        """Items checked against the published BulkItem schema (else a 400), then indexed or queued."""
        entity_models(self._registry).check_items(items)
        costs = self._jobs.costs("bulk", items)
        if self._jobs.is_large(costs) or len(items) > self._max_batch_items:
            return Queued(self._jobs.submit(tenant_id, "bulk", items, costs))
        return self._indexing.bulk(tenant_id, items, self._clock.now())

    def corpus(self, tenant_id: str, body: Any) -> CorpusReport | Queued:
        """A corpus load (POST /corpus's body): checked against the published Corpus schema, then loaded
        or queued; more than MAX_JOB_ITEMS documents is a 413."""
        from core.governance.corpus import check_documents, corpus_documents, load_corpus
        from core.governance.requests import MAX_CORPUS_DOCUMENTS

        documents = check_documents(corpus_documents(body))
        if len(documents) > MAX_JOB_ITEMS:
            raise PayloadTooLargeError(f"at most {MAX_JOB_ITEMS} documents per request", self._max_body_bytes)
        costs = self._jobs.costs("corpus", documents)
        if self._jobs.is_large(costs) or len(documents) > MAX_CORPUS_DOCUMENTS:
            return Queued(self._jobs.submit(tenant_id, "corpus", documents, costs))
        return load_corpus(self._indexing, self._registry, tenant_id, documents, self._clock.now())
