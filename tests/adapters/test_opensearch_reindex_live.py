"""`quarry reindex` on a live OpenSearch node: a new index generation built with another model behind the
alias, swapped in while a thread keeps searching; a write landing on the old generation during the copy is
in the new one; the old generation is gone; a second run makes generation 3; the process's query embedder
follows the generation's model (recorded in its `_meta`).

The fast tests switch between deterministic fakes of different dimensions (64 → 32 → 16), so a vector of
the wrong model could not go unnoticed; the slow one runs the service on a copy of the real model folder.
Skipped without QUARRY_OPENSEARCH_URL (a failure with QUARRY_REQUIRE_OPENSEARCH=1, as in CI).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.errors import UnavailableError
from core.indexing.indexing_service import IndexingService
from core.models import EntityKey
from core.search.search_api import SearchRequest
from infra.opensearch import build_opensearch_index, mapping
from infra.opensearch.reindex import OpenSearchReindexer
from infra.text_models.model_switch import reindex_opensearch, reindex_store
from infra.text_models.switching_embedder import SwitchingEmbedder
from infra.wiring.root import Container
from tests.adapters.opensearch_live_support import live_client
from tests.conftest import FakeEmbedder, make_container

pytestmark = [pytest.mark.live]
TENANTS = ("acme", "beta")
MEMORIES = 30
GENERATIONS = (1, 2, 3, 4)  # every name a test may create, deleted by name afterwards


class WritesWhileEmbedding(FakeEmbedder):
    """A new model whose first embedding call (the copy's first page) makes a write land on the old index."""

    def __init__(self, dimension: int, write: Any = None) -> None:
        super().__init__(dimension)
        self._write = write

    def embed(self, texts: Any) -> Any:
        if self._write is not None:
            write, self._write = self._write, None
            write()
        return super().embed(texts)


def content(i: int) -> str:
    return f"harbor crane log {i} cargo ship berth {i % 7} tide{i} pier{i}"


@pytest.fixture
def prefix(opensearch_url: str) -> Iterator[str]:
    name = f"quarry-test-{uuid.uuid4().hex[:10]}"
    yield name
    client = live_client(opensearch_url)
    for generation in GENERATIONS:  # by name: wildcard deletes may be refused (destructive_requires_name)
        client.indices.delete(index=mapping.index_name(name, generation), ignore=404)
    client.indices.delete_index_template(name=mapping.template_name(name), ignore=404)


@pytest.fixture
def models(tmp_path: Path) -> dict[str, Any]:
    """Model folders (empty: their fakes are what `load_embedder` returns for them)."""
    folders = {}
    for name in ("small-32", "tiny-16"):
        folders[name] = tmp_path / name
        folders[name].mkdir()
    return folders


def stack(tmp_path: Path, opensearch_url: str, prefix: str, loads: dict[str, Any]) -> Container:
    """A container on the live node (64-dimension fake configured) whose model folders load `loads`."""
    configured = FakeEmbedder(64)
    c = make_container(
        tmp_path / "data",
        configured,
        index="opensearch",
        opensearch_url=opensearch_url,
        opensearch_index_prefix=prefix,
        opensearch_refresh="true",
    )
    c.override(load_embedder=lambda folder: loads[str(Path(folder).resolve())])
    index: Any = c.index
    c.override(embedder=SwitchingEmbedder(configured, c.load_embedder, lambda _t: index.live_model_dir()))
    for tenant in TENANTS:
        items = [{"type": "memory", "id": f"m-{i}", "content": content(i)} for i in range(MEMORIES)]
        items.append({"type": "document", "id": "d-1", "title": "Berth manual", "text": "quay gantry " * 400})
        report = c.indexing.bulk(tenant, items, 0.0)
        assert report.indexed == MEMORIES + 1, report.errors
    return c


def semantic_ids(c: Container, tenant: str, query: str) -> list[str]:
    found = c.search.search(tenant, SearchRequest(query=query, strategy="semantic", limit=10))
    return [r.entity_id for r in found.results]


def every_entity_is_found_semantically(c: Container) -> None:
    for tenant in TENANTS:
        for i in range(MEMORIES):
            assert f"m-{i}" in semantic_ids(c, tenant, content(i)), (tenant, i)
        assert "d-1" in semantic_ids(c, tenant, "quay gantry")


def test_reindex_builds_a_new_generation_and_swaps_it_in_with_searches_answering(
    tmp_path: Path, opensearch_url: str, prefix: str, models: dict[str, Path]
) -> None:
    small = str(models["small-32"].resolve())
    loads: dict[str, Any] = {}
    c = stack(tmp_path, opensearch_url, prefix, loads)
    client = live_client(opensearch_url)

    def write_during_copy() -> None:  # a server write, embedded with the live (old) model
        c.indexing.put("acme", "memory", "late", {"content": "lighthouse keeper evening report"}, 1.0)

    loads[small] = WritesWhileEmbedding(32, write_during_copy)
    request = SearchRequest(query="harbor crane cargo", strategy="semantic", limit=10)
    answers: list[int] = []
    failures: list[BaseException] = []
    stop = threading.Event()

    def searching() -> None:
        for _ in range(10_000):  # bounded: the reindex takes far fewer
            if stop.is_set():
                return
            try:
                answers.append(
                    len(
                        c.search.search(
                            "beta", request.model_copy(update={"query": f"{request.query} {len(answers)}"})
                        ).results
                    )
                )
            except BaseException as exc:  # noqa: BLE001 - the test reports any failure
                failures.append(exc)

    reader = threading.Thread(target=searching)
    reader.start()
    try:
        report = reindex_store(c, small, settle_seconds=0.5)
    finally:
        stop.set()
        reader.join()

    assert failures == [] and len(answers) > 0 and min(answers) > 0, (failures[:3], answers[-5:])
    assert report["old_index"] == f"{prefix}-v1" and report["new_index"] == f"{prefix}-v2"
    assert report["dimension"] == 32 and report["documents"] == 2 * (MEMORIES + 1)
    assert report["caught_up"] >= 1 and sorted(report["tenants"]) == sorted(TENANTS)
    assert not client.indices.exists(index=f"{prefix}-v1")
    assert sorted(client.indices.get_alias(name=prefix)) == [f"{prefix}-v2"]
    live = client.indices.get_mapping(index=prefix)[f"{prefix}-v2"]
    assert mapping.index_model(live) == {
        "model_dir": small,
        "model_id": "fake-hashing",
        "generation": 2,
        "dimension": 32,
    }
    assert c.embedder.dimension == 32  # the query embedder followed the swap
    every_entity_is_found_semantically(c)
    assert semantic_ids(c, "acme", "lighthouse keeper evening report")[0] == "late"  # written during the copy
    stored = c.index.chunk_vectors(
        "acme", [(EntityKey("memory", "late"), 0), (EntityKey("memory", "m-1"), 0)]
    )
    assert {len(v) for v in stored.values()} == {32}

    # A second run: generation 3, on a third model; generation 2 is deleted in turn.
    tiny = str(models["tiny-16"].resolve())
    loads[tiny] = FakeEmbedder(16)
    again = reindex_store(c, tiny, settle_seconds=0.2)
    assert again["new_index"] == f"{prefix}-v3" and again["dimension"] == 16
    assert not client.indices.exists(index=f"{prefix}-v2")
    assert c.embedder.dimension == 16
    every_entity_is_found_semantically(c)
    # A process starting now (the container as wiring builds it, configured with the 64-dimension model)
    # embeds with the model the live generation names, and its index checks vectors of that dimension.
    cold = Container(c.settings, configured_embedder=FakeEmbedder(64), load_embedder=c.load_embedder)
    assert cold.embedder.dimension == 16 and cold.embedder.for_tenant("acme") is loads[tiny]  # type: ignore[attr-defined]
    assert "m-4" in semantic_ids(cold, "beta", content(4))


def test_a_write_embedded_with_the_swapped_out_model_is_a_503_to_retry_and_a_tenant_run_is_refused(
    tmp_path: Path, opensearch_url: str, prefix: str, models: dict[str, Path]
) -> None:
    small = str(models["small-32"].resolve())
    c = stack(tmp_path, opensearch_url, prefix, {small: FakeEmbedder(32)})
    stale_process = IndexingService(c.index, FakeEmbedder(64), c.registry, c.cache)  # has not noticed yet
    reindex_store(c, small, settle_seconds=0)
    with pytest.raises(UnavailableError, match="reindexed with another embedding model") as caught:
        stale_process.put(
            "acme", "memory", "stale", {"content": "written by a process on the old model"}, 1.0
        )
    assert caught.value.retry_after >= 1
    c.indexing.put("acme", "memory", "stale", {"content": "written by a process on the old model"}, 1.0)
    assert semantic_ids(c, "acme", "written by a process on the old model")[0] == "stale"
    with pytest.raises(Exception, match="every tenant shares one index"):
        reindex_store(c, small, tenant="acme")


def test_a_second_run_while_the_next_generation_exists_is_refused(
    tmp_path: Path, opensearch_url: str, prefix: str, models: dict[str, Path]
) -> None:
    small = str(models["small-32"].resolve())
    c = stack(tmp_path, opensearch_url, prefix, {small: FakeEmbedder(32)})
    live_client(opensearch_url).indices.create(index=f"{prefix}-v2")  # a run in progress (or crashed)
    with pytest.raises(Exception, match=f"index {prefix}-v2 exists: another quarry reindex is running"):
        reindex_store(c, small, settle_seconds=0)
    assert sorted(live_client(opensearch_url).indices.get_alias(name=prefix)) == [f"{prefix}-v1"]
    assert "m-3" in semantic_ids(c, "acme", content(3))


class SaltedEmbedder(FakeEmbedder):
    """Another model of the same dimension: other vectors for the same text."""

    def embed(self, texts: Any) -> Any:
        return super().embed([f"salted {t}" for t in texts])


def test_settle_brings_late_writes_over_and_re_embeds_writes_of_the_old_model(
    tmp_path: Path, opensearch_url: str, prefix: str, models: dict[str, Path]
) -> None:
    """Same dimension, another model: nothing refuses a vector of the old model, so the settle pass must
    re-embed what a process still on it wrote after the swap, and copy what landed on the old generation
    after the last catch-up (a bulk that resolved the alias just before the swap)."""
    small = str(models["small-32"].resolve())
    new = SaltedEmbedder(64)
    c = stack(tmp_path, opensearch_url, prefix, {small: new})
    client = live_client(opensearch_url)
    index: Any = c.index
    stale_process = IndexingService(c.index, FakeEmbedder(64), c.registry, c.cache)
    late_id = "acme:memory:m-2"

    def after_swap(tenants: list[str]) -> None:
        stale_process.put("acme", "memory", "stale", {"content": "lighthouse keeper evening report"}, 1.0)
        old = client.get(index=f"{prefix}-v1", id=late_id, routing="acme")["_source"]
        client.index(
            index=f"{prefix}-v1", id=late_id, body={**old, "version": 7}, refresh=True, routing="acme"
        )

    reindexer = OpenSearchReindexer(index.client, prefix, c.registry, new, small)
    report = reindex_opensearch(reindexer, settle_seconds=0, on_swap=after_swap)
    assert report.settled == 2
    wanted = [(EntityKey("memory", "stale"), 0), (EntityKey("memory", "m-2"), 0)]
    stored = c.index.chunk_vectors("acme", wanted)
    assert np.allclose(stored[wanted[0]], new.embed(["lighthouse keeper evening report"])[0], atol=1e-6)
    assert np.allclose(stored[wanted[1]], new.embed([content(2)])[0], atol=1e-6)
    assert c.index.get("acme", [EntityKey("memory", "m-2")])[EntityKey("memory", "m-2")].version == 7
    assert not client.indices.exists(index=f"{prefix}-v1")


@pytest.mark.embedder
@pytest.mark.slow
def test_the_cli_reindexes_the_opensearch_index_to_a_model_folder(
    tmp_path: Path, opensearch_url: str, prefix: str
) -> None:
    import json

    from tests.adapters.reindex_cli import ingested_with_a_model_copy

    folder, quarry = ingested_with_a_model_copy(
        tmp_path,
        QUARRY_INDEX="opensearch",
        QUARRY_OPENSEARCH_URL=opensearch_url,
        QUARRY_OPENSEARCH_INDEX_PREFIX=prefix,
        QUARRY_OPENSEARCH_REFRESH="true",
    )
    done = quarry("reindex", "--model-dir", str(folder), "--settle-seconds", "0")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["new_index"] == f"{prefix}-v2" and report["documents"] == 5
    assert report["model_id"] == "local:minilm-copy" and report["dimension"] == 384
    for i in range(5):  # a new process: its query embedder is the generation's model, read from `_meta`
        found = quarry("search", f"crane note {i}", "--json", "--strategy", "semantic")
        assert json.loads(found.stdout)["results"][0]["entity_id"] == f"n{i}"
    refused = quarry("reindex", "--model-dir", str(folder), "--tenant", "dev")
    assert refused.returncode == 2 and "every tenant shares one index" in refused.stderr


def test_a_reindex_moves_the_shared_index_and_every_tenants_own_index(
    tmp_path: Path, opensearch_url: str, prefix: str, models: dict[str, Path]
) -> None:
    small = str(models["small-32"].resolve())
    c = make_container(
        tmp_path / "data",
        index="opensearch",
        opensearch_url=opensearch_url,
        opensearch_index_prefix=prefix,
        opensearch_refresh="true",
        opensearch_own_index_tenants=["acme"],  # acme has an index of its own, beta shares
    )
    c.override(
        configured_embedder=FakeEmbedder(64),
        load_embedder=lambda folder: {small: FakeEmbedder(32)}[str(Path(folder).resolve())],
    )
    try:
        for tenant in TENANTS:
            items = [{"type": "memory", "id": f"m-{i}", "content": content(i)} for i in range(MEMORIES)]
            items.append(
                {"type": "document", "id": "d-1", "title": "Berth manual", "text": "quay gantry " * 400}
            )
            assert c.indexing.bulk(tenant, items, 0.0).indexed == MEMORIES + 1
        report = reindex_store(c, small, settle_seconds=0)
        (own,) = report["own_indexes"]
        assert report["tenants"] == ["beta"] and own["tenants"] == ["acme"]
        assert own["new_index"].endswith("-v2") and own["dimension"] == 32 == report["dimension"]
        assert {c.embedder.for_tenant(t).dimension for t in TENANTS} == {32}  # type: ignore[attr-defined]
        every_entity_is_found_semantically(c)
    finally:
        c.index.drop()


class Reversed(FakeEmbedder):
    """A new model of the same dimension whose every vector points the other way."""

    def embed(self, texts: Any) -> Any:
        return [-v for v in super().embed(texts)]


class SwapAfterRead:
    """The index's client: its first `_mget` (a memory use's read) is answered, then the reindex swaps."""

    def __init__(self, client: Any, swap: Any) -> None:
        self._client, self._swap = client, swap

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def mget(self, *args: Any, **kwargs: Any) -> Any:
        answer = self._client.mget(*args, **kwargs)
        swap, self._swap = self._swap, None
        if swap is not None:
            swap()
        return answer


def test_a_memory_use_read_before_the_swap_and_written_after_it_keeps_the_new_models_vectors(
    tmp_path: Path, opensearch_url: str, prefix: str
) -> None:
    from core.ports import MetadataTouch

    c = make_container(
        tmp_path / "data", FakeEmbedder(32), index="opensearch", opensearch_url=opensearch_url,
        opensearch_index_prefix=prefix, opensearch_refresh="true",
    )  # fmt: skip
    key = EntityKey("memory", "m")
    c.indexing.put("acme", "memory", "m", {"content": "the deploy window is friday morning"}, 1.0)
    (old,) = c.index.chunk_vectors("acme", [(key, 0)]).values()
    client = live_client(opensearch_url)
    reindexer = OpenSearchReindexer(client, prefix, c.registry, Reversed(32), str(tmp_path / "new"))
    reindexer.create()
    reindexer.copy()
    reindexer.catch_up()
    # The use is read on the old generation and written once the alias names the new one and the settle
    # has looked (a flush slower than `settle_seconds`, under load); the new copy of the memory sits at the
    # same `_seq_no` as the old one (the copy wrote its shard in the same order).
    version = c.index.get("acme", [key])[key].version

    def swap_and_settle() -> None:
        reindexer.swap()
        reindexer.settle()

    # an index like the container's, over a client that lets the reindex swap after the read
    touching = build_opensearch_index(
        SwapAfterRead(live_client(opensearch_url), swap_and_settle), dimension=32, prefix=prefix, refresh=True
    )
    touching.touch_metadata("acme", [MetadataTouch(key, version, {"access_count": 1})])
    reindexer.drop_old()
    (stored,) = c.index.chunk_vectors("acme", [(key, 0)]).values()
    assert np.allclose(stored, -np.asarray(old), atol=1e-6), "the new model's vector was overwritten"
