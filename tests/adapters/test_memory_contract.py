"""The memory contract (tests/adapters/memory_contract.py) on every SearchIndex adapter: SqliteIndex with
either keyword engine, the in-memory fake, and OpenSearchIndex on the live node (QUARRY_OPENSEARCH_URL)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infra.local.sqlite_index import SqliteIndex
from tests.adapters.memory_contract import RelevanceContract, SupersessionContract
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
        index = SqliteIndex(tmp_path / "index.db", keyword_engine=engine)
        yield fake_container(tmp_path, embedder=embedder, index=index)
        return
    client = live_client(request.getfixturevalue("opensearch_url"))
    with fresh_live_index(client, DIM) as live:
        yield fake_container(tmp_path, embedder=embedder, index=live)


class TestSupersession(SupersessionContract):
    """Supersession, once per adapter."""


class TestRelevance(RelevanceContract):
    """Relevance floor, decay and reinforcement, once per adapter."""
