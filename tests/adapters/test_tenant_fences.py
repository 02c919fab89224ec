"""The TenantFences contract on SQLite and DynamoDB (moto): a fence is kept under a hash of the tenant id
(never the id), survives the tenant's purge, closes again on a second erase and keeps its erase time
after a reopen; job stores forget an erased tenant's jobs and never bring one back."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.indexing.write_jobs import Job
from core.state import TenantFence, fence_mark
from infra.dynamodb.fences import DynamoTenantFences
from infra.dynamodb.jobs import DynamoJobStore
from infra.dynamodb.state import DynamoStateStore
from infra.jobs.sqlite_store import SqliteJobStore
from infra.local.sqlite.fences import SqliteTenantFences
from infra.local.sqlite.state import SqliteStateStore
from tests.adapters.moto_support import moto_dynamodb

TENANT = "tenant-fenced-7q"


@pytest.fixture(scope="module")
def dynamodb() -> Iterator[Any]:
    with pytest.MonkeyPatch.context() as patch, moto_dynamodb(patch) as client:
        yield client


@pytest.fixture(params=["sqlite", "dynamodb"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Any, Any, Any, Any]:
    """(fences, state store, job store, raw dump of everything stored) on one backend."""
    if request.param == "sqlite":
        path = tmp_path / "quarry.db"
        state = SqliteStateStore(path)

        def dump_sqlite() -> bytes:
            return b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())

        return SqliteTenantFences(path), state, SqliteJobStore(path), dump_sqlite
    client = request.getfixturevalue("dynamodb")
    table = f"state-{uuid.uuid4().hex[:10]}"
    state = DynamoStateStore(table, client=client)
    state.ensure_tables()

    def dump_dynamodb() -> bytes:
        return json.dumps(client.scan(TableName=table)["Items"]).encode()

    return DynamoTenantFences(table, client), state, DynamoJobStore(table, client), dump_dynamodb


def test_a_fence_is_kept_under_a_hash_and_outlives_the_purge(stores: tuple[Any, Any, Any, Any]) -> None:
    fences, state, jobs, dump = stores
    assert fences.fence_of(TENANT) is None
    fences.fence(TENANT, 100.0)
    state.purge_tenant(TENANT)
    assert fences.fence_of(TENANT) == TenantFence(100.0)
    assert fences.fence_of("another-tenant") is None
    raw = dump()
    assert fence_mark(TENANT).encode() in raw and TENANT.encode() not in raw
    fences.reopen(TENANT, 200.0)
    reopened = fences.fence_of(TENANT)
    assert reopened == TenantFence(100.0, 200.0) and not reopened.closed
    assert reopened.refuses(since=99.0) and not reopened.refuses(since=150.0) and not reopened.refuses()
    fences.fence(TENANT, 300.0)  # erased again: closed again, from the new time
    assert fences.fence_of(TENANT) == TenantFence(300.0)


def test_an_erased_tenants_jobs_are_gone_and_a_late_part_never_brings_one_back(
    stores: tuple[Any, Any, Any, Any],
) -> None:
    _, _, jobs, dump = stores
    for job_id in ("j1", "j2"):
        jobs.create_job(Job(job_id, TENANT, "bulk", 3, 3, 2, "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"))
    jobs.create_job(Job("j3", "other", "bulk", 1, 1, 1, "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"))
    jobs.record_part(
        TENANT, "j1", 0, {"indexed": 1, "errors": [{"entity_id": "secret-id"}]}, "2026-01-01T00:00:01Z"
    )
    assert jobs.purge_tenant(TENANT) == 2
    jobs.record_part(TENANT, "j1", 1, {"indexed": 1, "errors": []}, "2026-01-01T00:00:02Z")  # a late part
    assert jobs.get_job(TENANT, "j1") is None and jobs.get_job(TENANT, "j2") is None
    assert jobs.get_job("other", "j3") is not None
    raw = dump()
    assert TENANT.encode() not in raw and b"secret-id" not in raw


def test_purges_since_the_fence_add_up_and_a_new_fence_starts_the_count_again(
    stores: tuple[Any, Any, Any, Any],
) -> None:
    fences, _, _, dump = stores
    assert fences.removed_since_fence(TENANT) == {}
    fences.fence(TENANT, 100.0)
    fences.count_removed(TENANT, {"entities": 30, "jobs": 1})  # a racing unit's purge, first
    fences.count_removed(TENANT, {"entities": 2, "state_rows": 4})  # the erase's own
    assert fences.removed_since_fence(TENANT) == {"entities": 32, "jobs": 1, "state_rows": 4}
    assert fences.removed_since_fence("other") == {}
    assert TENANT.encode() not in dump()
    fences.fence(TENANT, 200.0)
    assert fences.removed_since_fence(TENANT) == {}
