"""A local SQLite file held by another writer past the busy timeout (a long transaction of another
`quarry serve` worker, an ingest, a backup) is the server's trouble, not the caller's: every route answers
503 with Retry-After naming no internals — never a 500 or SQLite's own text — and works again once the
lock is gone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infra.local.sqlite import connect
from infra.wiring import root as wiring
from tests.adapters.sqlite_locks import write_locked
from tests.conftest import FakeEmbedder, api_event, invoke, make_container

LOCK_WAIT_MS = 200  # the busy timeout in this test: a held lock is reported quickly


@pytest.fixture
def box(tmp_path: Path, fake_embedder: FakeEmbedder, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setattr(connect, "BUSY_TIMEOUT_MS", LOCK_WAIT_MS)
    container = make_container(tmp_path / "data", fake_embedder, async_min_chunks=4)
    wiring.set_container(container)
    body = {"content": "harbor notes", "version": 1}
    assert invoke(api_event("put_entity", path="/entities/memory/m-0", body=body))[0] == 200
    yield container
    wiring.set_container(None)


WRITES = [
    ("put_entity", {"path": "/entities/memory/m-1", "body": {"content": "more harbor notes", "version": 1}}),
    (
        "bulk_entities",
        {"body": {"items": [{"type": "memory", "id": f"j-{i}", "content": f"harbor {i}"} for i in range(9)]}},
    ),  # a job: the job store and the queue
    ("put_overlay", {"path": "/overlays/r", "body": {"mission": "harbor", "version": "1.0"}}),
    ("context_assemble", {"body": {"query": "harbor", "caller": "agent"}}),  # logs the assembly
    ("delete_tenant", {"body": {"confirm": "acme"}}),  # the fence
]


@pytest.mark.parametrize(("name", "kwargs"), WRITES, ids=[w[0] for w in WRITES])
def test_a_write_to_a_locked_file_is_a_503_with_retry_after_then_works(
    box: Any, name: str, kwargs: dict[str, Any]
) -> None:
    with write_locked(box.settings.sqlite_path):
        status, body = invoke(api_event(name, **kwargs))
    assert status == 503, body
    assert body["error"]["code"] == "unavailable" and "locked" not in body["error"]["message"]
    status, body = invoke(api_event(name, **kwargs))
    assert status in (200, 201, 202), body
