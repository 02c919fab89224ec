"""The erase receipt counts what was removed for the erase, whoever did the removing: work that raced the
erase and ended after the fence went up purges the tenant itself (core/tenancy/fencing.py), and when it
does so before the erase's own purge, that purge finds nothing — the receipt still says what the tenant
held. The interleaving is made deterministic: the racing unit settles right after the fence, before the
erase purges. Local backend on SQLite, and with its state (fences, jobs) in DynamoDB on moto."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest
from moto import mock_aws

from core.errors import TenantErasedError
from infra.wiring import root as wiring
from tests.conftest import FakeEmbedder, api_event, invoke, make_container

TENANT = "tenant-receipt-4k"
ENTITIES = 30


@pytest.fixture(params=["sqlite", "dynamodb"])
def container(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    fake_embedder: FakeEmbedder,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Any]:
    if request.param == "sqlite":
        c = make_container(tmp_path / "data", fake_embedder)
        wiring.set_container(c)
        yield c
        wiring.set_container(None)
        return
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_DEFAULT_REGION": "us-east-1"}.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    with mock_aws():
        c = make_container(tmp_path / "data", fake_embedder, state="dynamodb", dynamodb_create_tables=True)
        wiring.set_container(c)
        yield c
        wiring.set_container(None)


def _racing_unit_settles_after_the_fence(c: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Right after the erase fences, a unit of the tenant's work admitted before it ends, finds the
    fence and purges the tenant (as another request or Lambda instance would), before the erase purges."""
    fence = c.fences.fence

    def fence_then_race(tenant_id: str, at: float) -> None:
        fence(tenant_id, at)
        with suppress(TenantErasedError):
            c.gate.settle(tenant_id)

    monkeypatch.setattr(c.fences, "fence", fence_then_race)


def test_the_receipt_counts_entities_a_racing_purge_removed_before_the_erase_purged(
    container: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    items = [{"type": "task", "id": f"r-{i}", "title": f"receipt {i}", "version": 1} for i in range(ENTITIES)]
    status, body = invoke(api_event("bulk_entities", tenant=TENANT, body={"items": items}))
    assert status == 200 and body["indexed"] == ENTITIES, body
    _racing_unit_settles_after_the_fence(container, monkeypatch)

    status, receipt = invoke(api_event("delete_tenant", tenant=TENANT, body={"confirm": TENANT}))

    assert status == 200, receipt
    assert receipt["entities_removed"] == ENTITIES
    assert container.index.purge_tenant(TENANT) == 0  # and they are gone


def test_without_a_race_the_receipt_counts_what_the_erase_removed(container: Any) -> None:
    items = [{"type": "task", "id": f"q-{i}", "title": f"receipt {i}", "version": 1} for i in range(5)]
    assert invoke(api_event("bulk_entities", tenant=TENANT, body={"items": items}))[0] == 200
    status, receipt = invoke(api_event("delete_tenant", tenant=TENANT, body={"confirm": TENANT}))
    assert status == 200 and receipt["entities_removed"] == 5, receipt
    # erasing again: a new receipt, of what this erase removed (nothing is left)
    status, again = invoke(api_event("delete_tenant", tenant=TENANT, body={"confirm": TENANT}))
    assert status == 200 and again["entities_removed"] == 0, again
