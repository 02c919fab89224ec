"""A tenant's lifecycle through the HTTP API: the NDJSON export holds every record once across pages,
and DELETE /tenant leaves nothing of the tenant anywhere — search, listings, export, and the bytes of
the SQLite files — while another tenant is untouched."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from core.state import EvalRecord, SourceWeight, WeightChange
from tests.conftest import api_event, invoke

DOOMED, KEPT = "tenant-zq7x", "tenant-keep"
SECRET, VISIBLE = "zebraquokka", "lighthousekeeper"


def bulk(tenant: str, word: str, n: int = 6) -> None:
    items = [
        {"type": "memory", "id": f"{word}-{i}", "content": f"{word} note {i} about the harbor", "version": 1}
        for i in range(n)
    ]
    status, body = invoke(api_event("bulk_entities", tenant=tenant, body={"items": items}))
    assert status == 200 and body["indexed"] == n, body


def fill(tenant: str, word: str, local: Any) -> None:
    draft = {"content": f"{word} {word}draft replaced later", "version": 0}
    assert (
        invoke(api_event("put_entity", tenant=tenant, path=f"/entities/memory/{word}-0", body=draft))[0]
        == 200
    )
    bulk(tenant, word)  # version 1 replaces the draft; version 2 replaces it again below
    final = {"content": f"{word} note 0 about the harbor", "version": 2}
    assert (
        invoke(api_event("put_entity", tenant=tenant, path=f"/entities/memory/{word}-0", body=final))[0]
        == 200
    )
    assert invoke(api_event("delete_entity", tenant=tenant, path=f"/entities/memory/{word}-5"))[0] == 200
    search = invoke(api_event("search", tenant=tenant, body={"query": f"{word} harbor"}))
    assert search[0] == 200 and search[1]["results"]
    paged = {"query": f"{word} harbor", "limit": 2, "keep_alive": 60}  # a search snapshot is stored
    assert invoke(api_event("search", tenant=tenant, body=paged))[1]["next_cursor"]
    assembled = invoke(api_event("context_assemble", tenant=tenant, body={"query": word, "caller": "agent"}))[
        1
    ]
    feedback = {"assembly_id": assembled["assembly_id"], "used_source_ids": [assembled["sources"][0]["id"]]}
    assert invoke(api_event("context_feedback", tenant=tenant, body=feedback))[0] == 200
    overlay = {"role_id": f"{word}-role", "mission": f"{word} mission", "version": "1.0"}
    invoke(api_event("put_overlay", tenant=tenant, path=f"/overlays/{word}-role", body=overlay))
    change = WeightChange("agent", "memory", 1.0, 1.1, 0.2, 0.25, word, "2030-01-01T00:00:00Z")
    local.state.put_weight(tenant, SourceWeight("agent", "memory", 1.1, 0.25), change)
    local.state.put_eval(tenant, EvalRecord(f"overlay:{word}-role", "2030-01-01T00:00:00Z", {"w": word}))


def export_all(tenant: str, max_bytes: int = 10_000) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    cursor = None
    for _ in range(1000):
        query = {"max_bytes": str(max_bytes), **({"cursor": cursor} if cursor else {})}
        event = api_event("tenant_export", tenant=tenant, query=query)
        from handlers.lambda_functions.api import lambda_handler
        from handlers.local_server.devserver import FakeLambdaContext

        result = lambda_handler(event, FakeLambdaContext(aws_request_id="test"))
        assert result["statusCode"] == 200, result
        assert result["headers"]["Content-Type"] == "application/x-ndjson"
        lines = [json.loads(line) for line in result["body"].splitlines()]
        records.extend(line for line in lines if line["kind"] not in ("next", "end"))
        if lines[-1]["kind"] == "end":
            return records
        cursor = lines[-1]["cursor"]
    raise AssertionError("export never ended")


def test_export_pages_hold_every_record_exactly_once(local: Any) -> None:
    fill(DOOMED, SECRET, local)
    bulk(DOOMED, "bulkier", 40)
    one_page = export_all(DOOMED, max_bytes=4_000_000)
    paged = export_all(DOOMED, max_bytes=10_000)
    assert paged == one_page
    kinds = [r["kind"] for r in paged]
    assert kinds.count("entity") == 5 + 40  # the deleted one is gone
    assert {"overlay", "weight", "weight_change", "eval", "assembly"} <= set(kinds)
    assembly = next(r for r in paged if r["kind"] == "assembly")["data"]
    assert assembly["used_ids"]
    assert all(SECRET not in json.dumps(r) for r in export_all(KEPT))


def test_delete_tenant_needs_admin_and_the_typed_out_id(local: Any) -> None:
    status, body = invoke(
        api_event("delete_tenant", tenant=DOOMED, scopes=["read", "write"], body={"confirm": DOOMED})
    )
    assert status == 403
    status, body = invoke(api_event("delete_tenant", tenant=DOOMED, body={"confirm": "someone-else"}))
    assert status == 400 and "confirm" in body["error"]["fields"]
    status, body = invoke(api_event("delete_tenant", tenant=DOOMED, body={}))
    assert status == 400 and "confirm" in body["error"]["fields"]


def sqlite_bytes(data_dir: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(data_dir.rglob("*")) if p.is_file())


def insecure_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """Open every SQLite connection with secure_delete OFF, the default of most SQLite builds (Debian's
    turns it on at compile time), so deleted and replaced rows leave their bytes in free space."""
    from infra.local import cache
    from infra.local.sqlite import connect, snapshots, state, store

    original = connect.open_sqlite

    def insecure(path: Any) -> sqlite3.Connection:
        conn = original(path)
        conn.execute("PRAGMA secure_delete = OFF")
        return conn

    for module in (store, state, cache, snapshots):
        monkeypatch.setattr(module, "open_sqlite", insecure)


@pytest.mark.parametrize("secure_default", [True, False])
def test_delete_tenant_leaves_nothing_and_another_tenant_untouched(
    local: Any, secure_default: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not secure_default:
        insecure_by_default(monkeypatch)
    fill(DOOMED, SECRET, local)
    fill(KEPT, VISIBLE, local)
    before = export_all(KEPT)
    data_dir = local.settings.data_dir
    assert SECRET.encode() in sqlite_bytes(data_dir)

    status, report = invoke(api_event("delete_tenant", tenant=DOOMED, body={"confirm": DOOMED}))
    assert status == 200, report
    assert report["entities_removed"] == 6 and report["state_rows_removed"] > 0
    raw = sqlite_bytes(data_dir)  # the data file, its WAL and shared-memory index, before any new request
    assert SECRET.encode() not in raw and DOOMED.encode() not in raw
    assert f"{SECRET}draft".encode() not in raw  # not even an older version's bytes in free space
    assert VISIBLE.encode() in raw and KEPT.encode() in raw

    # the erased tenant stays fenced: every request is a 410 until it is reopened (test_erasure.py)
    for event in (
        api_event("search", tenant=DOOMED, body={"query": f"{SECRET} harbor"}),
        api_event("list_entities", tenant=DOOMED, path="/entities", query={}),
        api_event("tenant_export", tenant=DOOMED),
        api_event("context_log", tenant=DOOMED),
    ):
        status, body = invoke(event)
        assert status == 410 and body["error"]["code"] == "tenant_erased", body
    assert export_all(KEPT) == before
    kept = invoke(api_event("search", tenant=KEPT, body={"query": f"{VISIBLE} harbor"}))[1]
    assert len(kept["results"]) == 5
