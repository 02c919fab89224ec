"""Write jobs: the queue their parts wait in and the store of their reports (docs/architecture.md, Ports and
adapters).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from core.indexing.write_jobs import Job


class JobQueue(Protocol):
    """Where write-job parts wait for the indexing consumer (SQS in AWS; a background thread locally)."""

    def send(self, messages: Sequence[dict[str, Any]]) -> None:
        """Enqueue every message, or raise UnavailableError (then the caller gets 503 and nothing is queued
        that it was told about)."""
        ...

    def discard_tenant(self, tenant_id: str) -> int:
        """Drop the tenant's parts still waiting (an erase); a queue that cannot (SQS) returns 0 and its
        parts are discarded when processed, their job being gone."""
        ...


class JobStore(Protocol):
    """Write jobs and the report of each processed part — per tenant."""

    def create_job(self, job: Job) -> None: ...

    def get_job(self, tenant_id: str, job_id: str) -> Job | None: ...

    def delete_job(self, tenant_id: str, job_id: str) -> None:
        """Remove one job (its parts could not all be queued); nothing when it is already gone."""
        ...

    def record_part(self, tenant_id: str, job_id: str, part: int, report: dict[str, Any], at: str) -> None:
        """Store one part's report; recording a part twice (a queue re-delivery) keeps one report; a job
        that no longer exists (erased) stays absent."""
        ...

    def purge_tenant(self, tenant_id: str) -> int:
        """Erase every job of the tenant (they hold its entity ids and errors); how many."""
        ...
