"""`SqliteJobStore`: the JobStore of the local server, in its SQLite file (AWS keeps jobs in DynamoDB,
infra/dynamodb/jobs.py)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from core.indexing.write_jobs import Job
from infra.local.sqlite.connect import immediate, open_sqlite
from infra.local.sqlite.errors import FAILURES, translate


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
        with self._lock:
            try:
                self._conn.execute(
                    "INSERT INTO jobs VALUES (?, ?, ?)", (job.tenant_id, job.job_id, _dump(job))
                )
            except FAILURES as exc:
                raise translate(exc) from exc

    def get_job(self, tenant_id: str, job_id: str) -> Job | None:
        try:
            row = self._conn.execute(
                "SELECT job FROM jobs WHERE tenant_id = ? AND job_id = ?", (tenant_id, job_id)
            ).fetchone()
        except FAILURES as exc:
            raise translate(exc) from exc
        return _load(row[0]) if row else None

    def delete_job(self, tenant_id: str, job_id: str) -> None:
        with self._lock:
            try:
                self._conn.execute("DELETE FROM jobs WHERE tenant_id = ? AND job_id = ?", (tenant_id, job_id))
            except FAILURES as exc:
                raise translate(exc) from exc

    def record_part(self, tenant_id: str, job_id: str, part: int, report: dict[str, Any], at: str) -> None:
        with self._lock:
            try:
                with immediate(self._conn):
                    job = self.get_job(tenant_id, job_id)
                    if job is not None:
                        job.reports[part], job.updated_at = report, at
                        self._conn.execute(
                            "UPDATE jobs SET job = ? WHERE tenant_id = ? AND job_id = ?",
                            (_dump(job), tenant_id, job_id),
                        )
            except FAILURES as exc:
                raise translate(exc) from exc

    def purge_tenant(self, tenant_id: str) -> int:
        """Erase the tenant's jobs (their bytes zeroed, the WAL truncated)."""
        with self._lock:
            try:
                self._conn.execute("PRAGMA secure_delete = ON")
                removed = self._conn.execute("DELETE FROM jobs WHERE tenant_id = ?", (tenant_id,)).rowcount
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except FAILURES as exc:
                raise translate(exc) from exc
        return int(removed)


def _dump(job: Job) -> str:
    return json.dumps({**{s: getattr(job, s) for s in Job.__slots__ if s != "reports"},
                       "reports": {str(p): r for p, r in job.reports.items()}})  # fmt: skip


def _load(text: str) -> Job:
    raw = json.loads(text)
    raw["reports"] = {int(p): r for p, r in raw.get("reports", {}).items()}
    return Job(**raw)
