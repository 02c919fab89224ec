"""`quarry reindex` on the embedded backend: a data file switches from one embedding model (64-dimension
fake) to another (32 dimensions) while searches keep answering; writes that land during the reindex and
right after the swap end up embedded with the new model; the query embedder follows the switch."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.search.search_api import SearchRequest
from infra.local.reindex import SqliteReindexer, passage_input, reindex
from infra.text_models.switching_embedder import ActiveModel, SwitchingEmbedder
from tests.conftest import FakeEmbedder, make_container

NEW_MODEL = "/models/small-32"


class WritesWhileEmbedding(FakeEmbedder):
    """The new model; its first call makes a write land mid-reindex (embedded with the old model)."""

    def __init__(self, write: Any) -> None:
        super().__init__(32)
        self._write = write

    def embed(self, texts: Any) -> Any:
        if self._write is not None:
            write, self._write = self._write, None
            write()
        return super().embed(texts)


@pytest.fixture
def setup(tmp_path: Path) -> Any:
    old, new_plain = FakeEmbedder(64), FakeEmbedder(32)
    c = make_container(tmp_path / "data")
    switching = SwitchingEmbedder(
        old, {NEW_MODEL: new_plain}.__getitem__, ActiveModel(c.settings.sqlite_path)
    )
    c.override(embedder=switching)
    for tenant in ("acme", "beta"):
        items = [
            {"type": "memory", "id": f"m-{i}", "content": f"harbor crane log {i} cargo ship berth {i % 7}"}
            for i in range(40)
        ]
        items.append(
            {"type": "document", "id": "d-1", "title": "Berth manual", "text": "cargo cranes " * 400}
        )
        report = c.indexing.bulk(tenant, items, 0.0)
        assert report.indexed == 41, report.errors
    return c, new_plain


def chunk_dims(c: Any) -> set[int]:
    conn = sqlite3.connect(c.settings.sqlite_path)
    try:
        return {len(row[0]) // 4 for row in conn.execute("SELECT embedding FROM idx_chunks")}
    finally:
        conn.close()


def test_reindex_switches_model_with_searches_answering_throughout(setup: Any) -> None:
    c, new_plain = setup
    request = SearchRequest(query="harbor crane cargo", strategy="hybrid", limit=10)
    answers: list[int] = []
    failures: list[BaseException] = []
    stop = threading.Event()

    def searching() -> None:
        while not stop.is_set():
            try:
                answers.append(len(c.search.search("acme", request).results))
            except BaseException as exc:  # noqa: BLE001 - the test reports any failure
                failures.append(exc)

    def late_write() -> None:
        c.indexing.put("acme", "memory", "late", {"content": "harbor crane late arrival"}, 1.0)

    reader = threading.Thread(target=searching)
    reader.start()
    try:
        reindexer = SqliteReindexer(c.settings.sqlite_path, c.registry)
        report = reindex(reindexer, WritesWhileEmbedding(late_write), NEW_MODEL, settle_seconds=0)
    finally:
        stop.set()
        reader.join()
    assert failures == [] and len(answers) > 0 and min(answers) > 0
    assert report.dimension == 32 and report.swap_attempts >= 1
    assert chunk_dims(c) == {32}
    assert c.embedder.dimension == 32 and c.embedder.model_id == new_plain.model_id
    semantic = c.search.search("acme", SearchRequest(query="late arrival harbor", strategy="semantic"))
    assert semantic.results[0].entity_id == "late"
    assert c.search.search("beta", SearchRequest(query="harbor crane", strategy="semantic")).results


def test_reindexed_vectors_equal_fresh_indexing_with_the_new_model(setup: Any) -> None:
    c, new_plain = setup
    reindex(
        SqliteReindexer(c.settings.sqlite_path, c.registry), FakeEmbedder(32), NEW_MODEL, settle_seconds=0
    )
    conn = sqlite3.connect(c.settings.sqlite_path)
    rows = conn.execute(
        "SELECT c.entity_type, e.title, c.text, c.embedding FROM idx_chunks c JOIN idx_entities e "
        "ON e.tenant_id = c.tenant_id AND e.entity_type = c.entity_type AND e.entity_id = c.entity_id "
        "WHERE c.entity_type = 'document' LIMIT 1"
    ).fetchall()
    conn.close()
    etype, title, text, blob = rows[0]
    expected = FakeEmbedder(32).embed([passage_input(c.registry, etype, title, text)])[0]
    assert np.allclose(np.frombuffer(blob, np.float32), expected)
    assert passage_input(c.registry, etype, title, text).startswith("Berth manual. ")


def test_a_write_embedded_with_the_old_model_and_committed_after_the_swap_is_settled(setup: Any) -> None:
    c, _ = setup
    old = c.embedder.current()
    stale = {}

    def in_flight_write() -> None:
        # A server embedded this before the swap and commits it right after.
        from core.indexing.indexing_service import IndexingService

        stale["r"] = IndexingService(c.index, old, c.registry, c.cache).put(
            "acme", "memory", "in-flight", {"content": "harbor crane in flight"}, 2.0
        )

    reindexer = SqliteReindexer(c.settings.sqlite_path, c.registry)
    report = reindex(reindexer, FakeEmbedder(32), NEW_MODEL, settle_seconds=0, on_swap=in_flight_write)
    assert report.settled_chunks >= 1
    assert chunk_dims(c) == {32}
    hits = c.search.search("acme", SearchRequest(query="in flight harbor", strategy="semantic")).results
    assert hits[0].entity_id == "in-flight"


@pytest.mark.embedder
@pytest.mark.slow
def test_the_cli_reindexes_a_data_file_to_a_model_folder(tmp_path: Path) -> None:
    import json

    from tests.adapters.reindex_cli import ingested_with_a_model_copy

    folder, quarry = ingested_with_a_model_copy(tmp_path)
    done = quarry("reindex", "--model-dir", str(folder), "--settle-seconds", "0")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["chunks"] == 5 and report["dimension"] == 384 and report["model_id"] == "local:minilm-copy"
    found = quarry("search", "crane note 3", "--json", "--strategy", "semantic")
    assert json.loads(found.stdout)["results"][0]["entity_id"] == "n3"
    bad = quarry("reindex", "--model-dir", str(tmp_path / "nope"))
    assert bad.returncode == 2 and "--model-dir" in bad.stderr
    one = quarry("reindex", "--model-dir", str(folder), "--tenant", "dev", "--settle-seconds", "0")
    assert one.returncode == 0, one.stderr
    assert json.loads(one.stdout)["tenant"] == "dev" and json.loads(one.stdout)["chunks"] == 5
    unknown = quarry("reindex", "--model-dir", str(folder), "--tenant", "nobody")
    assert unknown.returncode == 2 and "--tenant" in unknown.stderr and "nothing indexed" in unknown.stderr
