"""`SqsJobQueue` (AWS: the indexing consumer reads the parts) and the local job store; the local queue is
infra/local/job_queue.py."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

from core.errors import UnavailableError
from core.indexing.write_jobs import SQS_MAX_MESSAGE_BYTES, Job
from infra.job_payloads import S3JobPayloads, outgoing
from infra.local.sqlite.connect import immediate, open_sqlite
from infra.local.sqlite.errors import reported

# SQS: short timeouts and botocore's standard retry mode, 3 attempts: a send stays within a few seconds,
# far under the API function's 29 s (the caller gets 503 and retries the whole request).
SQS_CONNECT_TIMEOUT_SECONDS = 2
SQS_READ_TIMEOUT_SECONDS = 5
SQS_MAX_ATTEMPTS = 3


def default_sqs_client() -> Any:
    import boto3
    from botocore.config import Config

    config = Config(
        connect_timeout=SQS_CONNECT_TIMEOUT_SECONDS,
        read_timeout=SQS_READ_TIMEOUT_SECONDS,
        retries={"mode": "standard", "total_max_attempts": SQS_MAX_ATTEMPTS},
    )
    return boto3.client("sqs", config=config)


class SqsJobQueue:
    """JobQueue on an SQS queue: one message per part, its body the part's encoded JSON
    (core/indexing/write_jobs.py encode_message); a part above SQS's 262,144 bytes goes to the payload
    bucket and its message points to it (infra/job_payloads.py). Without a bucket such a part is refused
    before anything is stored (JobSettings.max_message_bytes)."""

    def __init__(
        self, queue_url: str, client: Any | None = None, payloads: S3JobPayloads | None = None
    ) -> None:
        self._url, self._client = queue_url, client or default_sqs_client()
        self._payloads = payloads

    def discard_tenant(self, tenant_id: str) -> int:
        """SQS cannot drop chosen messages: the tenant's parts are discarded when processed (their job is
        gone and the tenant fenced, core/indexing/write_job_service.py)."""
        return 0

    def send(self, messages: Sequence[dict[str, Any]]) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        for message in messages:
            body, pointer = outgoing(message, SQS_MAX_MESSAGE_BYTES, self._payloads)
            try:
                self._client.send_message(QueueUrl=self._url, MessageBody=body)
            except (BotoCoreError, ClientError) as exc:
                self._withdraw(pointer)
                raise UnavailableError("sqs", f"the job queue refused the job: {type(exc).__name__}") from exc

    def _withdraw(self, pointer: dict[str, Any] | None) -> None:
        """Delete the object of a part whose message could not be sent (else the lifecycle rule would)."""
        if pointer is not None and self._payloads is not None:
            with suppress(UnavailableError):
                self._payloads.release(pointer)


class SqliteJobStore:
    """JobStore in the local SQLite file (a job's parts update one row under SQLite's write lock)."""

    def __init__(self, path: str | Path) -> None:
        self._conn = open_sqlite(path)
        self._lock = threading.Lock()
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS jobs (tenant_id TEXT NOT NULL, job_id TEXT NOT NULL, "
            "job TEXT NOT NULL, PRIMARY KEY (tenant_id, job_id))"
        )

    def create_job(self, job: Job) -> None:
        with self._lock, reported():
            self._conn.execute("INSERT INTO jobs VALUES (?, ?, ?)", (job.tenant_id, job.job_id, _dump(job)))

    def get_job(self, tenant_id: str, job_id: str) -> Job | None:
        with reported():
            row = self._conn.execute(
                "SELECT job FROM jobs WHERE tenant_id = ? AND job_id = ?", (tenant_id, job_id)
            ).fetchone()
        return _load(row[0]) if row else None

    def delete_job(self, tenant_id: str, job_id: str) -> None:
        with self._lock, reported():
            self._conn.execute("DELETE FROM jobs WHERE tenant_id = ? AND job_id = ?", (tenant_id, job_id))

    def record_part(self, tenant_id: str, job_id: str, part: int, report: dict[str, Any], at: str) -> None:
        with self._lock, reported(), immediate(self._conn):
            job = self.get_job(tenant_id, job_id)
            if job is not None:
                job.reports[part], job.updated_at = report, at
                self._conn.execute(
                    "UPDATE jobs SET job = ? WHERE tenant_id = ? AND job_id = ?",
                    (_dump(job), tenant_id, job_id),
                )

    def purge_tenant(self, tenant_id: str) -> int:
        """Erase the tenant's jobs (their bytes zeroed, the WAL truncated)."""
        with self._lock, reported():
            self._conn.execute("PRAGMA secure_delete = ON")
            removed = self._conn.execute("DELETE FROM jobs WHERE tenant_id = ?", (tenant_id,)).rowcount
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return int(removed)


def _dump(job: Job) -> str:
    return json.dumps({**{s: getattr(job, s) for s in Job.__slots__ if s != "reports"},
                       "reports": {str(p): r for p, r in job.reports.items()}})  # fmt: skip


def _load(text: str) -> Job:
    raw = json.loads(text)
    raw["reports"] = {int(p): r for p, r in raw.get("reports", {}).items()}
    return Job(**raw)
