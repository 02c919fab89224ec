"""`quarry reindex --tenant` on the embedded backend: one tenant of a data file switches model (64-dimension
fake → 32 dimensions) while another stays on its model, both searchable throughout and after; the query and
write embedders follow each tenant's own model; a later whole-file run puts every tenant on one model."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from core.search.search_api import SearchRequest
from infra.local.reindex import ReindexBusyError, SqliteReindexer, reindex
from infra.text_models.switching_embedder import ActiveModel, SwitchingEmbedder
from tests.conftest import FakeEmbedder, make_container

NEW_MODEL, OTHER_MODEL = "/models/small-32", "/models/tiny-16"
TENANTS = ("acme", "beta")


@pytest.fixture
def setup(tmp_path: Path) -> Any:
    models = {NEW_MODEL: FakeEmbedder(32), OTHER_MODEL: FakeEmbedder(16)}
    c = make_container(tmp_path / "data")
    switching = SwitchingEmbedder(FakeEmbedder(64), models.__getitem__, ActiveModel(c.settings.sqlite_path))
    c.override(embedder=switching)
    for tenant in TENANTS:
        items = [
            {"type": "memory", "id": f"m-{i}", "content": f"harbor crane log {i} cargo ship berth {i % 7}"}
            for i in range(30)
        ]
        items.append(
            {"type": "document", "id": "d-1", "title": "Berth manual", "text": "cargo cranes " * 400}
        )
        assert c.indexing.bulk(tenant, items, 0.0).indexed == 31
    return c


def dims_by_tenant(c: Any) -> dict[str, set[int]]:
    conn = sqlite3.connect(c.settings.sqlite_path)
    try:
        out: dict[str, set[int]] = {}
        for tenant, blob in conn.execute("SELECT tenant_id, embedding FROM idx_chunks"):
            out.setdefault(tenant, set()).add(len(blob) // 4)
        return out
    finally:
        conn.close()


def semantic_top(c: Any, tenant: str, query: str) -> str:
    return c.search.search(tenant, SearchRequest(query=query, strategy="semantic")).results[0].entity_id


def test_one_tenant_switches_model_and_the_other_keeps_its_own(setup: Any) -> None:
    c = setup
    request = SearchRequest(query="harbor crane cargo", strategy="semantic", limit=10)
    answers: dict[str, list[int]] = {t: [] for t in TENANTS}
    failures: list[BaseException] = []
    stop = threading.Event()

    def searching() -> None:
        while not stop.is_set():
            for tenant in TENANTS:
                try:
                    answers[tenant].append(len(c.search.search(tenant, request).results))
                except BaseException as exc:  # noqa: BLE001 - the test reports any failure
                    failures.append(exc)

    reader = threading.Thread(target=searching)
    reader.start()
    try:
        reindexer = SqliteReindexer(c.settings.sqlite_path, c.registry, tenant="acme")
        report = reindex(reindexer, FakeEmbedder(32), NEW_MODEL, settle_seconds=0)
    finally:
        stop.set()
        reader.join()
    assert failures == []
    assert all(len(a) > 0 and min(a) > 0 for a in answers.values()), answers
    assert report.tenant == "acme" and report.dimension == 32
    assert dims_by_tenant(c) == {"acme": {32}, "beta": {64}}
    assert c.embedder.for_tenant("acme").dimension == 32
    assert c.embedder.for_tenant("beta").dimension == 64  # untouched: still the configured model
    # Writes after the switch embed with each tenant's own model, and semantic search finds them.
    for tenant in TENANTS:
        c.indexing.put(tenant, "memory", "late", {"content": "lighthouse keeper evening report"}, 1.0)
        assert semantic_top(c, tenant, "lighthouse keeper report") == "late"
        assert semantic_top(c, tenant, "harbor crane log 3 cargo ship berth 3") == "m-3"
    assert dims_by_tenant(c) == {"acme": {32}, "beta": {64}}


def test_a_tenant_run_counts_only_its_chunks_and_refuses_unknown_tenants(setup: Any) -> None:
    c = setup
    conn = sqlite3.connect(c.settings.sqlite_path)
    acme_chunks = conn.execute("SELECT count(*) FROM idx_chunks WHERE tenant_id = 'acme'").fetchone()[0]
    conn.close()
    report = reindex(
        SqliteReindexer(c.settings.sqlite_path, c.registry, tenant="acme"), FakeEmbedder(32), NEW_MODEL, 0
    )
    assert report.chunks == acme_chunks and report.dimension == 32
    assert not SqliteReindexer(c.settings.sqlite_path, c.registry, tenant="nobody").has_tenant()


def test_a_whole_file_run_after_a_tenant_run_puts_every_tenant_on_its_model(setup: Any) -> None:
    c = setup
    reindex(
        SqliteReindexer(c.settings.sqlite_path, c.registry, tenant="acme"), FakeEmbedder(32), NEW_MODEL, 0
    )
    reindex(SqliteReindexer(c.settings.sqlite_path, c.registry), FakeEmbedder(16), OTHER_MODEL, 0)
    assert dims_by_tenant(c) == {"acme": {16}, "beta": {16}}
    assert {c.embedder.for_tenant(t).dimension for t in TENANTS} == {16}
    for tenant in TENANTS:
        assert semantic_top(c, tenant, "harbor crane log 5 cargo ship berth 5") == "m-5"


def test_shadow_vectors_left_by_a_crashed_run_are_not_swapped_in(setup: Any) -> None:
    """A run killed after shadowing (here: 16-dimension vectors of another model) must not leak them."""
    c = setup
    crashed = SqliteReindexer(c.settings.sqlite_path, c.registry)
    crashed.shadow(FakeEmbedder(16))
    crashed.close()
    reindex(SqliteReindexer(c.settings.sqlite_path, c.registry), FakeEmbedder(32), NEW_MODEL, 0)
    assert dims_by_tenant(c) == {"acme": {32}, "beta": {32}}


def test_a_second_run_on_the_same_data_file_is_refused_while_one_runs(setup: Any) -> None:
    c = setup
    first = SqliteReindexer(c.settings.sqlite_path, c.registry, tenant="acme")
    first.begin()
    try:
        with pytest.raises(ReindexBusyError, match="another quarry reindex is running"):
            reindex(
                SqliteReindexer(c.settings.sqlite_path, c.registry, tenant="beta"),
                FakeEmbedder(32),
                NEW_MODEL,
                0,
            )
    finally:
        first.close()
    reindex(
        SqliteReindexer(c.settings.sqlite_path, c.registry, tenant="beta"), FakeEmbedder(32), NEW_MODEL, 0
    )
    assert dims_by_tenant(c)["beta"] == {32}
