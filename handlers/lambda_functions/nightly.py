"""The nightly Lambda: the context learning cycle (docs/architecture.md, The learning cycle) and every stored
overlay's golden set (docs/architecture.md, Evaluation), as one task per tenant (learning) and per overlay
(golden set) — core/nightly.py.

- The EventBridge schedule invokes it with nothing the cycle needs: it plans tonight's tasks and, with a
  queue configured (QUARRY_EVAL_QUEUE_URL, as the stack sets), sends one message per task; an event whose
  `detail` names a `tenant_id` limits the plan to that tenant (handy for a manual `sam local invoke`).
- The eval-tasks queue invokes it with one task per record (batch size 1): that task runs, its figures
  are stored and emitted as metrics; a failing task is reported in `batchItemFailures`, retried by SQS and
  parked in the DLQ after 5 receives, without touching the others.
- Without a queue (locally), the scheduled run executes every task itself, one after another.

Running a task twice is harmless: the learning cycle marks the assemblies it learned from, and a golden
set's record is simply stored again.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from core.errors import TenantErasedError
from core.nightly import NightlyTask, plan_nightly
from core.timestamps import iso_timestamp
from handlers.observability.powertools import logger, metrics, tracer
from infra.wiring.root import check_settings, container

# The function's init: a wrong or missing setting is the runtime's init error naming the variable.
check_settings()

processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


def run_task(task: NightlyTask, retried: bool = False) -> dict[str, Any]:
    """Run one task, behind its tenant's fence, and emit its figures; the report is what the task changed
    or measured (nothing for a tenant erased since the plan was made). `retried`: a redelivery, which
    purges the erased tenant's state in case the first delivery wrote and stopped short (fencing.py)."""
    c = container()
    try:
        with c.gate.unit(task.tenant_id, retried=retried):
            return _run(c, task)
    except TenantErasedError:
        logger.warning("nightly task skipped: its tenant was erased", extra={"kind": task.kind})
        return {"skipped": "tenant erased"}


def _run(c: Any, task: NightlyTask) -> dict[str, Any]:
    if task.kind == "learning":
        report = c.learning.run(task.tenant_id)
        for name, value in (("LearningCallers", report.callers), ("LearningAssemblies", report.assemblies),
                            ("LearningWeightChanges", report.weights_count),
                            ("LearningBudgetChanges", report.budgets_count),
                            ("LearningSkipped", len(report.skipped))):  # fmt: skip
            metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
        logger.info("learning cycle", extra={"tenant": task.tenant_id, **report.model_dump(mode="json")})
        return {"tenant": task.tenant_id, **report.model_dump(mode="json")}
    from core.governance.golden_sets import run_golden_sets

    at = iso_timestamp(c.clock.now())
    reports = run_golden_sets(task.tenant_id, [task.role_id or ""], c.governed_retrieval, c.state, at)
    for golden in reports:
        for strategy, figures in golden.strategies.items():
            metrics.add_metric(
                name=f"GoldenNdcg10_{strategy}", unit=MetricUnit.NoUnit, value=figures.ndcg_at_10
            )
    logger.info("golden set", extra={"tenant": task.tenant_id, "role": task.role_id, "scored": len(reports)})
    return {
        "tenant": task.tenant_id,
        "golden_sets": [{"tenant": task.tenant_id, **r.to_json()} for r in reports],
    }


def record_handler(record: SQSRecord) -> str:
    """One queued task; any exception makes it a `batchItemFailures` entry."""
    retried = int(record.attributes.approximate_receive_count or 1) > 1
    run_task(NightlyTask.from_message(json.loads(record.body)), retried)
    return "done"


def _tenant_of(event: Any) -> str | None:
    detail = event.get("detail") if isinstance(event, dict) else None
    tenant = detail.get("tenant_id") if isinstance(detail, dict) else None
    return tenant if isinstance(tenant, str) and tenant else None


def run_inline(tasks: list[NightlyTask]) -> dict[str, Any]:
    """Every task in this invocation (no queue): the learning totals and the golden sets, as one report."""
    totals = {"callers": 0, "assemblies": 0, "weights_count": 0, "budgets_count": 0}
    out: dict[str, Any] = {
        "weight_adjustments": [],
        "budget_adjustments": [],
        "skipped": [],
        "golden_sets": [],
    }
    for task in tasks:
        result = run_task(task)
        for key in totals:
            totals[key] += int(result.get(key, 0))
        for key in ("weight_adjustments", "budget_adjustments", "skipped", "golden_sets"):
            out[key] += result.get(key, [])
    return {**totals, **out}


@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False, capture_error=False)  # tenant data never in X-Ray
@metrics.log_metrics(raise_on_empty_metrics=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    c = container()
    if isinstance(event, dict) and "Records" in event:
        return dict(process_partial_response(event, record_handler, processor, context))
    tasks = plan_nightly(c.state, c.clock.now(), _tenant_of(event))
    if c.settings.eval_queue_url:
        c.eval_queue.send([t.to_message() for t in tasks])
        metrics.add_metric(name="NightlyTasksQueued", unit=MetricUnit.Count, value=len(tasks))
        logger.info("nightly tasks queued", extra={"tasks": len(tasks)})
        return {"queued": len(tasks)}
    return run_inline(tasks)
