"""The memory contract (tests/adapters/memory_contract.py) on every SearchIndex adapter: SqliteIndex with
either keyword engine, the in-memory fake, and OpenSearchIndex on the live node (QUARRY_OPENSEARCH_URL)."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from core.models import EntityKey
from infra.local.sqlite.index import build_sqlite_index
from infra.opensearch import documents
from tests.adapters.memory_contract import TENANT, IntegrityContract, RelevanceContract, SupersessionContract
from tests.adapters.opensearch_live_support import fresh_live_index, live_client
from tests.conftest import FakeEmbedder
from tests.fakes import FakeSearchIndex, fake_container

DIM = 64


@pytest.fixture(
    params=["sqlite", "sqlite-tantivy", "fake", pytest.param("opensearch", marks=pytest.mark.live)]
)
def c(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    embedder = FakeEmbedder(DIM)
    if request.param == "fake":
        yield fake_container(tmp_path, embedder=embedder, index=FakeSearchIndex())
        return
    if request.param.startswith("sqlite"):
        engine = "tantivy" if request.param == "sqlite-tantivy" else "fts5"
        index = build_sqlite_index(tmp_path / "index.db", keyword_engine=engine)
        yield fake_container(tmp_path, embedder=embedder, index=index)
        return
    client = live_client(request.getfixturevalue("opensearch_url"))
    with fresh_live_index(client, DIM) as live:
        yield fake_container(tmp_path, embedder=embedder, index=live)


def _tamper_sqlite(path: Path) -> Callable[[Any, str, str], None]:
    def tamper(c: Any, eid: str, content: str) -> None:
        with sqlite3.connect(path) as conn:
            conn.execute(
                "UPDATE idx_entities SET title = ?, body = json_set(body, '$.content', ?) "
                "WHERE tenant_id = ? AND entity_type = 'memory' AND entity_id = ?",
                (content, content, TENANT, eid),
            )

    return tamper


def _tamper_fake(c: Any, eid: str, content: str) -> None:
    entry = c.index.entries[(TENANT, EntityKey("memory", eid))]
    entry.entity = dataclasses.replace(
        entry.entity, title=content, body={**entry.entity.body, "content": content}
    )


def _tamper_opensearch(c: Any, eid: str, content: str) -> None:
    live = c.index
    doc = {
        "title": content,
        "body": {
            **c.index.get(TENANT, [EntityKey("memory", eid)])[EntityKey("memory", eid)].body,
            "content": content,
        },
    }
    live._client.update(
        index=live.alias,
        id=documents.doc_id(TENANT, EntityKey("memory", eid)),
        body={"doc": doc},
        refresh=True,
        routing=TENANT,  # a routed index (infra/opensearch/layout.py) places the tenant on one shard
    )


@pytest.fixture
def tamper(c: Any, tmp_path: Path) -> Callable[[Any, str, str], None]:
    """Rewrites a memory's stored content without going through the index adapter's writes."""
    kind = type(c.index).__name__
    if kind == "SqliteIndex":
        return _tamper_sqlite(tmp_path / "index.db")
    if kind == "FakeSearchIndex":
        return _tamper_fake
    return _tamper_opensearch


class TestSupersession(SupersessionContract):
    """Supersession, once per adapter."""


class TestRelevance(RelevanceContract):
    """Relevance floor, decay and reinforcement, once per adapter."""


class TestIntegrity(IntegrityContract):
    """Integrity, trust and tags, once per adapter."""
