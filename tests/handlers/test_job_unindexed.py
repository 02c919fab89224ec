"""No silent drops for writes answered later: a write job's status (GET /jobs/{id}) and POST /corpus's
answer (at once or as a job) name the fields no search will find (`unindexed_fields`), as a synchronous
write does. Jobs run through the local SQLite queue and through SQS + DynamoDB on moto."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infra.wiring import root as wiring
from tests.conftest import FakeEmbedder, api_event, invoke, make_container
from tests.handlers.test_write_jobs import aws_jobs, drain_through_consumer  # noqa: F401 (a fixture)

TASKS = [{"type": "task", "id": f"u-{i}", "title": f"ledger {i}", "estimate": i} for i in range(300)]
TASKS[3] = {**TASKS[3], "notes": "undeclared"}
DOCUMENTS = [
    {"id": f"d-{i}", "title": f"Paper {i}", "text": "cells divide", "journal": "J"} for i in range(3)
]


def _job(job_id: str) -> dict[str, Any]:
    status, job = invoke(api_event("get_job", path=f"/jobs/{job_id}"))
    assert status == 200 and job["status"] == "done", job
    return dict(job)


def test_a_bulk_jobs_status_names_the_unindexed_fields_on_sqs(aws_jobs: Any) -> None:  # noqa: F811
    _, sqs, url, arn = aws_jobs
    status, body = invoke(api_event("bulk_entities", body={"items": TASKS}))
    assert status == 202 and body["parts"] > 1, body
    drain_through_consumer(sqs, url, arn)
    assert _job(body["job_id"])["unindexed_fields"] == ["estimate", "notes"]


def test_corpus_answers_name_the_unindexed_fields_at_once_and_as_a_job(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    container = make_container(tmp_path / "data", fake_embedder, async_min_chunks=2)
    wiring.set_container(container)
    try:
        status, body = invoke(api_event("load_corpus", body={"documents": DOCUMENTS[:1]}))
        assert status == 200 and body["unindexed_fields"] == ["journal"], body
        status, body = invoke(api_event("load_corpus", body={"documents": DOCUMENTS}))
        assert status == 202, body
        container.job_queue.drain()
        assert _job(body["job_id"])["unindexed_fields"] == ["journal"]
        status, body = invoke(api_event("bulk_entities", body={"items": TASKS[:5]}))
        assert status == 202, body  # the local queue: a background thread
        container.job_queue.drain()
        assert _job(body["job_id"])["unindexed_fields"] == ["estimate", "notes"]
    finally:
        wiring.set_container(None)
