"""Indexing consumer Lambda: entity-change events from SQS (plain or EventBridge-wrapped) or EventBridge.

Event format — the SQS message body, or the `detail` of an EventBridge event (any source/detail-type):

    {"op": "upsert" | "patch" | "delete",      upsert = create or replace, patch = partial update
     "type": "task", "id": "t-42",             entity type (built-in or configured) and id
     "tenant_id": "acme",                      the tenant: checked against the producer's allowed tenants
     "version": 7,                             optional; else entity.updated_at, else the event's time
     "entity": {"title": "...", ...}}          required for upsert and patch; absent for delete

Delivery: an SQS batch reports each failed record in `batchItemFailures` (Powertools batch utility), so
one bad record never blocks the others; SQS redelivers only those, and the queue's redrive policy moves a
record that keeps failing to the dead-letter queue. A direct EventBridge invocation is one event: a
failure raises, so Lambda's asynchronous retries and on-failure destination take over.

Producers: each producer may write only the tenants QUARRY_PRODUCER_TENANTS allows it
(`{"<producer>": ["acme", ...]}`). The producer is the EventBridge `source` (the stack's dedicated bus
admits only the named principals, each with its own sources; the rule admits only those sources from this
account), or the SQS `SenderId` for a message sent straight to the queue. The envelope and the sender are
checked together: an SQS message may carry an EventBridge envelope only when EventBridge sent it
(QUARRY_EVENTBRIDGE_SENDER_IDS), so a direct sender cannot name another producer's `source`. An event for
another tenant, or a forged envelope, is refused: logged, counted (EntityChangesRefused) and reported as
a batch item failure, so it ends in the DLQ.

Outcomes per record:
- applied, duplicate (a re-delivery) or stale (older than what is indexed: ignored and logged) → success.
- delete of an entity that is not indexed → success (the goal state, "absent", already holds); a
  versioned tombstone is left, so its older create arriving later stays deleted.
- malformed (not JSON, unknown type, missing tenant, bad field) → failure; it reaches the DLQ.
- its tenant erased (fenced), or the change older than the erase → discarded (a success; counted
  EntityChangesDiscarded): an erased tenant stays erased whatever is still queued for it.
- backend unavailable, or patch of an entity not indexed yet (its create may still be in flight) →
  failure; SQS redelivers it after the visibility timeout.

Idempotency comes from versioned writes: the index applies a version at most once and never applies an
older one, and without an explicit version the event's own timestamp (SQS SentTimestamp, EventBridge
`time`), which is the same on every re-delivery, stands in for it. The service checks the stored version
before embedding, so a re-delivery costs one index read and no Bedrock call. Powertools' idempotency
utility would add a DynamoDB round trip per record to prevent exactly what versioning already makes
harmless, so it is not used.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Literal

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from core.errors import (
    ForbiddenError,
    InvalidInputError,
    NotFoundError,
    StaleVersionError,
    TenantErasedError,
    UnavailableError,
    VersionConflictError,
    VersionSchemeError,
)
from core.indexing.indexing_service import IndexingService
from core.models import WriteOutcome
from core.payload import INT64_MAX
from handlers.observability.powertools import logger, metrics, tracer
from handlers.observability.tenant_metrics import TenantMetric
from handlers.observability.tenant_metrics import count as tenant_metric
from infra.wiring import root as wiring

MS_PER_SECOND = 1000.0
OUTCOME_METRICS = {
    WriteOutcome.APPLIED: "EntityChangesApplied",
    WriteOutcome.DUPLICATE: "EntityChangesDuplicate",
    WriteOutcome.STALE: "EntityChangesStale",
    WriteOutcome.NOT_FOUND: "EntityChangesAlreadyAbsent",
}
MALFORMED_METRIC = "EntityChangesMalformed"
REFUSED_METRIC = "EntityChangesRefused"
FAILED_METRIC = "EntityChangesFailed"
DISCARDED_METRIC = "EntityChangesDiscarded"

# The function's init: a wrong or missing setting is the runtime's init error naming the variable.
wiring.check_settings()

# Module-level like every Powertools example: a definition, no I/O. An all-failed batch is reported
# item by item rather than raised, so one poison message does not count as a function error.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


class EntityChange(BaseModel):
    """One entity-change event: what happened to which entity of which tenant."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    op: Literal["upsert", "patch", "delete"]
    type: str = Field(min_length=1)
    id: str = Field(min_length=1)
    tenant_id: str = Field(min_length=1)
    version: int | None = Field(default=None, ge=0, le=INT64_MAX)
    entity: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _entity_for_writes(self) -> EntityChange:
        if self.op != "delete" and self.entity is None:
            raise ValueError(f"entity is required for {self.op}")
        return self

    def body(self) -> dict[str, Any]:
        """The entity body, carrying the event's version when it has one."""
        body = dict(self.entity or {})
        if self.version is not None:
            body["version"] = self.version
        return body


def _event_time(value: Any) -> float | None:
    """An EventBridge `time` (ISO-8601) as epoch seconds, or None."""
    try:
        return datetime.fromisoformat(str(value)).timestamp() if value else None
    except ValueError:
        return None


def _envelope_producer(envelope: Mapping[str, Any], sender: str | None) -> str:
    """The producer an EventBridge envelope names (its `source`), when EventBridge delivered it: a message
    sent straight to the queue (`sender` not EventBridge's) cannot claim a source — it would write the
    tenants of whichever producer it named."""
    if sender is not None and sender not in wiring.container().settings.eventbridge_sender_ids:
        raise ForbiddenError(
            f"sender '{sender}' sent an EventBridge envelope straight to the queue; only EventBridge may "
            "name a source, a direct sender sends the change itself",
            "source",
        )
    return str(envelope.get("source") or "")


def parse_change(payload: Any, sender: str | None = None) -> tuple[EntityChange, float | None]:
    """The change in a message body or EventBridge event, and the event's time when the envelope has one.

    The producer must be allowed the change's tenant: an envelope's `source` when EventBridge delivered it
    (`sender` None: a direct EventBridge invocation; else the SQS SenderId must be EventBridge's), else
    the SQS sender itself."""
    when, producer = None, sender
    if isinstance(payload, Mapping) and "detail" in payload and "detail-type" in payload:
        producer = _envelope_producer(payload, sender)
        payload, when = payload["detail"], _event_time(payload.get("time"))
    try:
        change = EntityChange.model_validate(payload)
    except ValidationError as exc:
        fields = {".".join(str(p) for p in err["loc"]) or "event": err["msg"] for err in exc.errors()}
        raise InvalidInputError("malformed entity-change event", fields) from exc
    allowed = wiring.container().settings.producer_tenants.get(producer or "", [])
    if change.tenant_id not in allowed:
        raise ForbiddenError(f"producer '{producer}' may not write tenant '{change.tenant_id}'", "tenant")
    return change, when


def _tenant_metrics_on() -> bool:
    return wiring.container().settings.tenant_metrics


def _service() -> IndexingService:
    """The indexing service of this container (built on first use, then reused while warm)."""
    return wiring.container().indexing


def apply_change(change: EntityChange, now: float, retried: bool = False) -> WriteOutcome:
    """Send the change to the indexing service, behind the tenant's fence (a change that originated before
    the tenant's erase is discarded; `retried`, a delivery that may have run before, purges the erased
    tenant as it is discarded: core/tenancy/fencing.py); stale and already-absent outcomes are successes."""
    with wiring.container().gate.unit(change.tenant_id, since=now, retried=retried):
        return _apply(change, now)


def _apply(change: EntityChange, now: float) -> WriteOutcome:
    service = _service()
    try:
        if change.op == "delete":
            result = service.delete(change.tenant_id, change.type, change.id, change.version, now)
        elif change.op == "patch":
            result = service.patch(change.tenant_id, change.type, change.id, change.body(), now)
        else:
            result = service.put(change.tenant_id, change.type, change.id, change.body(), now)
    except (
        StaleVersionError
    ):  # an adapter may refuse an older version itself (OpenSearch external versioning)
        return WriteOutcome.STALE
    except NotFoundError:
        if change.op != "delete":
            raise
        return WriteOutcome.NOT_FOUND
    return result.outcome


def _process(message_id: str | None, parse: Callable[[], tuple[EntityChange, float]], retried: bool) -> str:
    """Parse and apply one change; log and count the outcome, or the failure before re-raising it."""
    try:
        change, now = parse()
        outcome = apply_change(change, now, retried)
    except TenantErasedError:  # its tenant was erased: discarded (a success, so it never reaches the DLQ)
        metrics.add_metric(name=DISCARDED_METRIC, unit=MetricUnit.Count, value=1)
        logger.warning("entity change discarded: its tenant was erased", extra={"message_id": message_id})
        return "discarded"
    except ForbiddenError as exc:
        metrics.add_metric(name=REFUSED_METRIC, unit=MetricUnit.Count, value=1)
        logger.warning(
            "entity change refused: its producer may not write that tenant; it ends in the dead-letter queue",
            extra={"message_id": message_id, "error": exc.message},
        )
        raise
    except (InvalidInputError, VersionSchemeError, VersionConflictError) as exc:  # fails on every delivery
        metrics.add_metric(name=MALFORMED_METRIC, unit=MetricUnit.Count, value=1)
        logger.warning(
            "malformed entity change: it fails on every delivery and ends in the dead-letter queue",
            extra={"message_id": message_id, "error": exc.message, "fields": exc.fields},
        )
        raise
    except Exception:
        metrics.add_metric(name=FAILED_METRIC, unit=MetricUnit.Count, value=1)
        logger.exception("entity change failed; it will be delivered again", extra={"message_id": message_id})
        raise
    metrics.add_metric(name=OUTCOME_METRICS[outcome], unit=MetricUnit.Count, value=1)
    if outcome is WriteOutcome.APPLIED:
        tenant_metric(TenantMetric.WRITES, change.tenant_id, 1, _tenant_metrics_on())
    log = logger.info if outcome in (WriteOutcome.APPLIED, WriteOutcome.DUPLICATE) else logger.warning
    log(
        "entity change %s",
        outcome.value,
        extra={
            "message_id": message_id,
            "op": change.op,
            "tenant_id": change.tenant_id,
            "entity": f"{change.type}:{change.id}",
            "version": change.version,
        },
    )
    return outcome.value


def _parse_record(record: SQSRecord) -> tuple[EntityChange, float]:
    """The change in an SQS record, timed by its envelope or the record's SentTimestamp."""
    try:
        payload = json.loads(record.body)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError("message body is not JSON", {"body": str(exc)}) from exc
    change, when = parse_change(payload, record.attributes.sender_id or "")
    sent = record.attributes.sent_timestamp
    return change, when or (int(sent) / MS_PER_SECOND if sent else time.time())


def _is_job_part(record: SQSRecord) -> bool:
    """Whether the record comes from the jobs queue (only the API function may send there; a producer's
    event shaped like a job part arrives on the entity queue and is parsed, and refused, as an event)."""
    arn = wiring.container().settings.jobs_queue_arn
    return bool(arn) and record.event_source_arn == arn


def _redelivered(record: SQSRecord) -> bool:
    """Whether SQS delivered the record before: that delivery may have written and stopped short."""
    return int(record.attributes.approximate_receive_count or 1) > 1


def _read_part(body: dict[str, Any]) -> dict[str, Any] | None:
    """The part a message carries, or the one in S3 it points to (infra/jobs/s3_payloads.py); None when that
    object is gone (the part was done before, or expired)."""
    from infra.jobs.s3_payloads import is_pointer

    payloads = wiring.container().job_payloads
    if not is_pointer(body):
        return body
    if payloads is None:
        raise UnavailableError("s3", "a job part points to the payload bucket, which is not configured")
    return payloads.read(body)


def _release_part(body: dict[str, Any]) -> None:
    """Delete the S3 object of a part that is done (nothing for a part carried in its message)."""
    from infra.jobs.s3_payloads import is_pointer

    payloads = wiring.container().job_payloads
    if payloads is not None and is_pointer(body):
        payloads.release(body)


def process_job_part(record: SQSRecord) -> str:
    """One part of a bulk or corpus job: index its items and record the part's report."""
    try:
        body = json.loads(record.body)
        message = _read_part(body)
        if message is None:
            logger.warning(
                "job part already done: its payload is gone", extra={"message_id": record.message_id}
            )
            return "discarded"
        report = wiring.container().jobs.process(message, _redelivered(record))
        _release_part(body)
    except Exception as exc:
        metrics.add_metric(name=FAILED_METRIC, unit=MetricUnit.Count, value=1)
        logger.exception(
            "job part failed; it will be delivered again", extra={"message_id": record.message_id}
        )
        _fail_on_last_delivery(record, exc)
        raise
    if report.discarded:
        logger.warning(
            "job part discarded: its job or its tenant was erased", extra={"message_id": record.message_id}
        )
        return "discarded"
    metrics.add_metric(name="JobItemsIndexed", unit=MetricUnit.Count, value=report.indexed)
    tenant_metric(TenantMetric.WRITES, message["job"]["tenant_id"], report.indexed, _tenant_metrics_on())
    logger.info(
        "job part done",
        extra={"message_id": record.message_id, "job": message["job"], "indexed": report.indexed,
               "errors": len(report.errors)},
    )  # fmt: skip
    return "done"


def _fail_on_last_delivery(record: SQSRecord, exc: Exception) -> None:
    """On the part's last delivery (the queue moves it to the DLQ next), record it failed with the reason,
    so its job ends `failed` rather than `running`; a redrive that succeeds replaces the record."""
    from core.indexing.write_jobs import failure_reason

    receives = int(record.attributes.approximate_receive_count or 0)
    if receives < wiring.container().settings.jobs_max_receives:
        return
    try:
        wiring.container().jobs.fail(json.loads(record.body), failure_reason(exc, receives))
    except Exception:  # noqa: BLE001 - a body that is not a part, or the job store down: the DLQ keeps it
        logger.exception("job part could not be recorded as failed", extra={"message_id": record.message_id})


def record_handler(record: SQSRecord) -> str:
    """One SQS record; any exception makes it a `batchItemFailures` entry."""
    if _is_job_part(record):
        return process_job_part(record)
    return _process(record.message_id, lambda: _parse_record(record), _redelivered(record))


def handle_eventbridge(event: Mapping[str, Any]) -> dict[str, str]:
    """A direct EventBridge invocation: one change; failures raise (Lambda's async retries follow). An
    invocation cannot tell a retry from a first attempt, so each counts as one that may have run before:
    an erased tenant's change then costs a purge (of nothing, but for a cut-off earlier attempt's writes)."""

    def parse() -> tuple[EntityChange, float]:
        change, when = parse_change(event)
        return change, when or time.time()

    return {"outcome": _process(event.get("id"), parse, retried=True)}


@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False, capture_error=False)  # tenant data never in X-Ray
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """SQS batches report partial failures; anything else is treated as one EventBridge event."""
    _service()  # a configuration error fails the invocation, never one record at a time
    if "Records" in event:
        return dict(process_partial_response(event, record_handler, processor, context))
    return handle_eventbridge(event)
