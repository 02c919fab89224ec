"""The SearchSnapshots contract (core/ports/) on every adapter: SQLite, DynamoDB (moto) and the fake.

A stored snapshot reads back byte for byte (a body above DynamoDB's 400 KB item limit included), only for
its tenant and only until its expiry; extending moves the expiry of a live one and never revives a lapsed
one; an erase removes every snapshot of the tenant and no other's."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.search.paging import SearchSnapshot
from infra.dynamodb.search_snapshots import CHUNK_BYTES, DynamoSearchSnapshots
from infra.dynamodb.state import DynamoStateStore
from infra.local.sqlite.snapshots import SqliteSearchSnapshots
from tests.adapters.moto_support import moto_dynamodb
from tests.fakes import FakeSearchSnapshots

NOW = 1_768_435_200.0


@pytest.fixture(scope="module")
def dynamodb() -> Iterator[Any]:
    with pytest.MonkeyPatch.context() as patch, moto_dynamodb(patch) as client:
        yield client


@pytest.fixture(params=["sqlite", "dynamodb", "fake"])
def snapshots(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "sqlite":
        return SqliteSearchSnapshots(tmp_path / "quarry.db")
    if request.param == "dynamodb":
        client = request.getfixturevalue("dynamodb")
        table = f"state-{os.urandom(4).hex()}"
        DynamoStateStore(table, client=client).ensure_tables()
        return DynamoSearchSnapshots(table, client=client)
    return FakeSearchSnapshots()


def snapshot(tenant: str = "acme", sid: str = "s-1", body: bytes = b"ranked", **kw: Any) -> SearchSnapshot:
    values: dict[str, Any] = {"created_at": NOW, "expires_at": NOW + 60, "keep_alive": 60.0, **kw}
    return SearchSnapshot(tenant, sid, "fp-1", body=body, **values)


def test_a_snapshot_reads_back_as_stored(snapshots: Any) -> None:
    snapshots.put(snapshot())
    assert snapshots.get("acme", "s-1", NOW + 1) == snapshot()
    assert snapshots.get("acme", "s-2", NOW + 1) is None


def test_a_body_above_one_dynamodb_item_reads_back_whole(snapshots: Any) -> None:
    body = os.urandom(CHUNK_BYTES * 2 + 12_345)  # incompressible: three items on DynamoDB
    snapshots.put(snapshot(body=body))
    got = snapshots.get("acme", "s-1", NOW + 1)
    assert got is not None and got.body == body


def test_another_tenant_never_reads_a_snapshot(snapshots: Any) -> None:
    snapshots.put(snapshot())
    assert snapshots.get("initech", "s-1", NOW + 1) is None
    assert snapshots.extend("initech", "s-1", NOW + 500, NOW + 1) is False


def test_a_snapshot_is_gone_at_its_expiry_whether_or_not_it_was_removed(snapshots: Any) -> None:
    snapshots.put(snapshot())
    assert snapshots.get("acme", "s-1", NOW + 59.9) is not None
    assert snapshots.get("acme", "s-1", NOW + 60) is None


def test_extending_moves_the_expiry_of_a_live_snapshot_only(snapshots: Any) -> None:
    snapshots.put(snapshot())
    assert snapshots.extend("acme", "s-1", NOW + 110, NOW + 50) is True
    got = snapshots.get("acme", "s-1", NOW + 100)
    assert got is not None and got.expires_at == NOW + 110 and got.body == b"ranked"
    assert snapshots.extend("acme", "s-1", NOW + 500, NOW + 110) is False  # lapsed: never revived
    assert snapshots.get("acme", "s-1", NOW + 111) is None
    assert snapshots.extend("acme", "missing", NOW + 500, NOW) is False


def test_purging_a_tenant_removes_its_snapshots_and_no_others(snapshots: Any) -> None:
    snapshots.put(snapshot(sid="s-1"))
    snapshots.put(snapshot(sid="s-2", body=os.urandom(CHUNK_BYTES + 1)))
    snapshots.put(snapshot(tenant="initech", sid="s-1"))
    assert snapshots.purge_tenant("acme") == 2
    assert snapshots.get("acme", "s-1", NOW) is None and snapshots.get("acme", "s-2", NOW) is None
    assert snapshots.get("initech", "s-1", NOW) is not None
    assert snapshots.purge_tenant("acme") == 0


def test_a_tenant_whose_id_extends_anothers_shares_nothing(snapshots: Any) -> None:
    snapshots.put(snapshot(tenant="acme#S"))
    snapshots.put(snapshot(tenant="acme"))
    assert snapshots.purge_tenant("acme") == 1
    assert snapshots.get("acme#S", "s-1", NOW) is not None
