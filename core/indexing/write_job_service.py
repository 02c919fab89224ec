"""Write jobs: a bulk or corpus request above `async_min_chunks` is accepted (202) with a job
id, split into parts the indexing consumer processes from a queue, and answered later by GET /jobs/{id}.

submit → JobStore.create_job, JobQueue.send(parts) (the job deleted again when a send fails) ; consumer →
process(part) → JobStore.record_part. Why the job is stored before its parts are sent: docs/architecture.md,
Write jobs.
A re-delivered part re-runs the same versioned writes (duplicates, no re-embedding) and overwrites its
own report, so counts never double.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import IO, Any

from core.errors import InvalidInputError, NotFoundError, PayloadTooLargeError, TenantErasedError
from core.indexing.bulk_writes import item_key, repeated_items
from core.indexing.entity_models import entity_models
from core.indexing.entity_types import EntityTypeRegistry
from core.indexing.field_maps import item_mapper, parse_field_map
from core.indexing.indexing_service import IndexingService
from core.indexing.ndjson import LineRules, ToItem, accepted_parts, relined, take_in
from core.indexing.write_jobs import (
    MAX_JOB_ITEMS,
    Job,
    JobKind,
    JobPart,
    PartReport,
    encoded_bytes,
    estimate_chunks,
    part_bounds,
    split_parts,
)
from core.ports import Clock, JobQueue, JobStore
from core.tenancy.fencing import TenantGate
from core.timestamps import iso_timestamp

# Items of a part, in encoded bytes (write_jobs.encode_message): SQS takes 262,144 per message; the rest is
# headroom for the part's header (job, offset, repeats, line numbers). One item above it travels alone.
DEFAULT_PART_BYTES = 200_000


@dataclass(frozen=True, slots=True)
class JobSettings:
    """When a write becomes a job and how big its parts are (chunks bound the consumer's time).
    `max_message_bytes`: the largest part message the queue can carry at all (None: any; SQS with an S3
    payload bucket carries any part); a part above it is a 413 before anything is stored."""

    async_min_chunks: int
    part_bytes: int = DEFAULT_PART_BYTES
    max_message_bytes: int | None = None


class JobService:
    """Submit write jobs, process their parts, and report their status."""

    def __init__(
        self,
        store: JobStore,
        queue: JobQueue,
        indexing: IndexingService,
        registry: EntityTypeRegistry,
        clock: Clock,
        settings: JobSettings,
        new_id: Callable[[], str] = lambda: uuid.uuid4().hex,
        gate: TenantGate | None = None,
    ) -> None:
        self._store, self._queue, self._indexing = store, queue, indexing
        self._registry, self._clock, self._settings, self._new_id = registry, clock, settings, new_id
        self._gate = gate

    def costs(self, kind: JobKind, items: Sequence[Any]) -> list[int]:
        """Estimated chunks per item."""
        return [estimate_chunks(self._registry, kind, item) for item in items]

    def is_large(self, costs: Sequence[int]) -> bool:
        """Whether a request of these costs runs as a job rather than inside the API call."""
        return sum(costs) > self._settings.async_min_chunks

    def submit(self, tenant_id: str, kind: JobKind, items: Sequence[Any], costs: Sequence[int]) -> Job:
        """Store the job and enqueue its parts: a 413 when a part can never travel, UnavailableError (and
        no job left) when the queue cannot take them now."""
        at = iso_timestamp(self._clock.now())
        job_id = self._new_id()
        parts = list(split_parts(items, costs, self._settings.async_min_chunks, self._settings.part_bytes))
        job = Job(job_id, tenant_id, kind, len(items), sum(costs), len(parts), at, at)
        repeats = self._repeats(kind, items)
        messages = [
            JobPart(
                job_id, tenant_id, kind, n, offset, tuple(chunk), _within(repeats, offset, len(chunk))
            ).to_message()
            for n, (offset, chunk) in enumerate(parts)
        ]
        self._check_fits(max((encoded_bytes(m) for m in messages), default=0))
        self._store.create_job(job)
        with self._undone_on_failure(job):
            self._queue.send(messages)
        return job

    def _check_fits(self, largest: int) -> None:
        """A 413 naming the queue's limit when a part's message (`largest` bytes) can never be sent."""
        limit = self._settings.max_message_bytes
        if limit is not None and largest > limit:
            raise PayloadTooLargeError(
                f"an item needs a {largest}-byte queue message; the job queue takes at most {limit} bytes "
                "per message (no payload bucket is configured)",
                limit,
            )

    @contextmanager
    def _undone_on_failure(self, job: Job) -> Iterator[None]:
        """Delete the job when its parts could not all be sent: no job stays `queued` whose parts are not
        all queued (the parts sent are discarded when processed, their job being gone)."""
        try:
            yield
        except BaseException:
            self._store.delete_job(job.tenant_id, job.job_id)
            raise

    def submit_upload(
        self,
        tenant_id: str,
        stream: IO[bytes],
        entity_type: str | None = None,
        id_field: str | None = None,
        field_map: str | None = None,
    ) -> Job:
        """POST /entities/ndjson: `submit_lines` with each line mapped as asked — typed `entity_type` (else its
        own `type`), its id from `id_field` (else `id`), only the fields `field_map` names
        (`title=title,text=abstract`; else all). A bad map or an unknown type is a 400 naming it."""
        to_item = None
        if entity_type is not None or id_field is not None or field_map is not None:
            try:
                fields = parse_field_map(field_map) if field_map is not None else None
            except ValueError as exc:
                raise InvalidInputError(f"invalid map: {exc}", {"map": str(exc)}) from exc
            kind = self._registry.resolve(entity_type, path="type") if entity_type is not None else None
            to_item = item_mapper(kind, id_field or "id", fields)
        return self.submit_lines(tenant_id, stream, to_item)

    def submit_lines(self, tenant_id: str, stream: IO[bytes], to_item: ToItem | None = None) -> Job:
        """ONE bulk job for an NDJSON upload (core/indexing/ndjson.py): each line checked on its own; a refused line
        is reported in the job's status under its line number (a part of its own, recorded at once), the
        others indexed by the parts sent here one at a time; a 400 when no line is accepted."""
        rules = LineRules(
            entity_models(self._registry).item_problems,
            lambda item: item_key(self._registry, item),
            lambda item: estimate_chunks(self._registry, "bulk", item),
            MAX_JOB_ITEMS,
        )
        intake = take_in(stream, to_item, rules)
        s = self._settings
        bounds = list(part_bounds(intake.costs, intake.sizes, s.async_min_chunks, s.part_bytes))
        at = iso_timestamp(self._clock.now())
        refused = len(bounds) if intake.errors else None  # the part number of the refused lines' report
        job = Job(self._new_id(), tenant_id, "bulk", intake.total, sum(intake.costs),
                  len(bounds) + (refused is not None), at, at)  # fmt: skip
        empty = JobPart(job.job_id, tenant_id, "bulk", len(bounds), intake.total, (), lines=(intake.total,))
        self._check_fits(encoded_bytes(empty.to_message()) + max(intake.sizes, default=0))  # a one-line part
        self._store.create_job(job)
        with self._undone_on_failure(job):
            if refused is not None:
                job.reports[refused] = PartReport(errors=intake.errors).to_json()
                self._store.record_part(tenant_id, job.job_id, refused, job.reports[refused], at)
            for n, (offset, items, lines) in enumerate(accepted_parts(stream, to_item, intake, bounds)):
                part = JobPart(job.job_id, tenant_id, "bulk", n, offset, tuple(items), lines=lines)
                self._queue.send([part.to_message()])
        return job

    def status(self, tenant_id: str, job_id: str) -> Job:
        """The tenant's job (404 for an unknown id or another tenant's job)."""
        job = self._store.get_job(tenant_id, job_id)
        if job is None:
            raise NotFoundError("job", job_id)
        return job

    def _repeats(self, kind: JobKind, items: Sequence[Any]) -> dict[int, int]:
        """Items naming an entity an earlier item of the request names (refused, whichever part they are in)."""
        from core.governance.corpus import document_repeats

        return document_repeats(items) if kind == "corpus" else repeated_items(self._registry, items)

    def process(self, message: Mapping[str, Any], retried: bool = False) -> PartReport:
        """Index one part (bulk items or corpus documents) and record its report. A part of a job that is
        gone, or of an erased tenant, is discarded (`PartReport.discarded`): the erase removed the job.
        `retried`: this part may have run before (a redelivery, a claim taken over); refused because its
        tenant is erased, it purges the tenant, in case that run wrote after the erase (fencing.py)."""
        part = JobPart.from_message(message)
        gate = self._gate
        try:
            with gate.unit(part.tenant_id, retried=retried) if gate is not None else nullcontext():
                if part.erased or self._store.get_job(part.tenant_id, part.job_id) is None:
                    return PartReport(discarded=True)
                return self._process(part)
        except TenantErasedError:
            return PartReport(discarded=True)

    def _process(self, part: JobPart) -> PartReport:
        now = self._clock.now()
        if part.kind == "corpus":
            report = self._corpus(part, now)
        else:
            bulk = self._indexing.bulk(part.tenant_id, list(part.items), now, part.local_repeats())
            errors = [relined(e, part.lines) if part.lines else _shift(e, part.offset) for e in bulk.errors]
            report = PartReport(bulk.indexed, bulk.skipped_stale, 0, errors, bulk.unindexed_fields)
        self._store.record_part(part.tenant_id, part.job_id, part.part, report.to_json(), iso_timestamp(now))
        return report

    def fail(self, message: Mapping[str, Any], reason: str) -> None:
        """Record that a part will never be processed (it failed on every attempt): its job ends failed,
        saying why, instead of staying `running` forever."""
        job = message["job"]  # the header alone: a part whose items are in S3 fails without them
        at = iso_timestamp(self._clock.now())
        self._store.record_part(
            job["tenant_id"], job["id"], int(job["part"]), PartReport(failure=reason).to_json(), at
        )

    def _corpus(self, part: JobPart, now: float) -> PartReport:
        from core.governance.corpus import load_corpus

        corpus = load_corpus(
            self._indexing,
            self._registry,
            part.tenant_id,
            list(part.items),
            now,
            repeats=part.local_repeats(),
        )
        errors = [_shift(e.model_dump(mode="json"), part.offset) for e in corpus.errors]
        unindexed = set(corpus.unindexed_fields)
        return PartReport(corpus.documents_ingested, 0, corpus.chunks_ingested, errors, unindexed)


def _within(repeats: Mapping[int, int], offset: int, size: int) -> tuple[tuple[int, int], ...]:
    """The repeats whose later item lies in the part [offset, offset + size)."""
    return tuple((p, f) for p, f in sorted(repeats.items()) if offset <= p < offset + size)


def _shift(error: Mapping[str, Any], offset: int) -> dict[str, Any]:
    """An item error with its position in the whole request rather than in its part."""
    shifted = dict(error)
    position = int(shifted.get("index", 0))
    shifted["index"] = position + offset
    if isinstance(shifted.get("fields"), Mapping):
        shifted["fields"] = {_renumber(k, position, offset): v for k, v in shifted["fields"].items()}
    return shifted


def _renumber(path: str, position: int, offset: int) -> str:
    head, _, rest = path.partition(f".{position}")
    return f"{head}.{position + offset}{rest}" if rest or path.endswith(f".{position}") else path
