"""The SearchIndex contract on every adapter: SqliteIndex (local, with either keyword engine),
OpenSearchIndex on the live node, and the in-memory FakeSearchIndex the use-case tests run on (passing the
same suite is what makes those tests' answers stand for the real backends')."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infra.local.sqlite.index import build_sqlite_index
from tests.adapters.opensearch_live_support import fresh_live_index, live_client
from tests.adapters.search_filter_contract import SearchFilterContract
from tests.adapters.search_index_contract import DIM, SearchIndexContract
from tests.fakes.index import FakeSearchIndex


@pytest.fixture(
    params=["sqlite", "sqlite-tantivy", "fake", pytest.param("opensearch", marks=pytest.mark.live)]
)
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "fake":
        yield FakeSearchIndex()
        return
    if request.param.startswith("sqlite"):
        engine = "tantivy" if request.param == "sqlite-tantivy" else "fts5"
        yield build_sqlite_index(tmp_path / "index.db", keyword_engine=engine)
        return
    client = live_client(request.getfixturevalue("opensearch_url"))
    with fresh_live_index(client, DIM) as live:
        yield live


class TestSearchIndexContract(SearchIndexContract):
    """Every test of the contract, once per adapter."""


class TestSearchFilterContract(SearchFilterContract):
    """Every filter operator, once per adapter."""
