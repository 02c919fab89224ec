"""OpenSearchIndex against a real cluster: the shared SearchIndex contract plus what only a live cluster
can show (one round trip, raw cosine scores, conditional writes under concurrent writers, the template
covering a new index generation).

`make test` starts a local node for them. Skipped unless QUARRY_OPENSEARCH_URL is set (a failure instead
when QUARRY_REQUIRE_OPENSEARCH=1, as in CI). Examples:

    # a local cluster (security plugin disabled, or credentials in the URL)
    QUARRY_OPENSEARCH_URL=http://localhost:9200 .venv/bin/pytest -m live tests/adapters/test_opensearch_live.py
    # Amazon OpenSearch Service (SigV4 with the default AWS credentials)
    QUARRY_OPENSEARCH_URL=https://search-xyz.eu-west-1.es.amazonaws.com QUARRY_OPENSEARCH_REGION=eu-west-1 \\
        .venv/bin/pytest -m live tests/adapters/test_opensearch_live.py

Every test works in its own index (tests/adapters/opensearch_live_support.py), deleted afterwards.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from core.errors import ConfigurationError, PayloadTooLargeError
from core.models import EntityKey, Filters, LexicalQuery, WriteOutcome
from infra.opensearch import OpenSearchIndex, build_opensearch_index, mapping, query_bodies
from tests.adapters.opensearch_live_support import fresh_live_index, live_client
from tests.adapters.search_index_contract import DIM, lex, record, unit, vec

pytestmark = [pytest.mark.live]
CONCURRENT_VERSIONS = 24  # versions of one entity written at once by the race test
WRITER_THREADS = 8


@pytest.fixture(scope="module")
def client(opensearch_url: str) -> Any:
    return live_client(opensearch_url)


@pytest.fixture
def live_index(client: Any) -> Iterator[OpenSearchIndex]:
    """A fresh index (the SearchIndex contract itself runs in test_search_index_contract.py)."""
    with fresh_live_index(client, DIM) as index:
        yield index


class _CountingTransport:
    """Counts the HTTP requests a client makes (wraps its transport's perform_request)."""

    def __init__(self, client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        self.requests: list[tuple[str, str]] = []
        original = client.transport.perform_request

        def counted(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            self.requests.append((method, url))
            return original(method, url, *args, **kwargs)

        monkeypatch.setattr(client.transport, "perform_request", counted)


def test_retrieve_is_one_round_trip_with_raw_cosine_scores(
    live_index: OpenSearchIndex, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    vectors = {"a": unit(1, 0), "b": unit(1, 1), "c": unit(0, 1), "d": unit(-1, 0.2)}
    for entity_id, vector in vectors.items():
        live_index.upsert(record("t", "memory", entity_id, f"shared text {entity_id}", vec=vector))
    query = unit(1, 0.3)
    counter = _CountingTransport(client, monkeypatch)
    got = live_index.retrieve("t", LexicalQuery(("shared",)), query, Filters(), 10)
    assert counter.requests == [("POST", "/_msearch")]
    assert {c.key.entity_id for c in got.lexical} == set(vectors)
    expected = {k: float(np.dot(v, query)) for k, v in vectors.items()}
    assert [c.key.entity_id for c in got.vector] == sorted(expected, key=expected.__getitem__, reverse=True)
    for candidate in got.vector:
        assert candidate.score == pytest.approx(expected[candidate.key.entity_id], abs=1e-3)
    assert min(c.score for c in got.vector) < 0  # raw cosine, not OpenSearch's (1 + cos) / 2


def test_concurrent_writers_end_on_the_newest_version(live_index: OpenSearchIndex) -> None:
    versions = list(range(1, CONCURRENT_VERSIONS + 1))
    random.Random(7).shuffle(versions)

    def write(version: int) -> WriteOutcome:
        return live_index.upsert(record("t", "memory", "race", f"text of version {version}", version=version))

    with ThreadPoolExecutor(WRITER_THREADS) as pool:
        outcomes = dict(zip(versions, pool.map(write, versions), strict=True))
    assert outcomes[CONCURRENT_VERSIONS] is WriteOutcome.APPLIED
    assert set(outcomes.values()) <= {WriteOutcome.APPLIED, WriteOutcome.STALE}
    stored = live_index.get("t", [EntityKey("memory", "race")])[EntityKey("memory", "race")]
    assert stored.version == CONCURRENT_VERSIONS
    assert lex(live_index, "t", "version") == ["race"]
    hits = live_index.lexical("t", LexicalQuery(("version",)), Filters(), 5)
    assert hits[0].text == f"text of version {CONCURRENT_VERSIONS}"


def test_metadata_filters_match_numbers_booleans_and_lists(live_index: OpenSearchIndex) -> None:
    live_index.upsert(
        record("t", "task", "a", "alpha", metadata={"pinned": True, "priority": 2, "tags": ["x", "y"]})
    )
    live_index.upsert(record("t", "task", "b", "alpha", metadata={"pinned": False, "priority": 3}))
    assert lex(live_index, "t", "alpha", filters=Filters(metadata={"pinned": (True,)})) == ["a"]
    assert lex(live_index, "t", "alpha", filters=Filters(metadata={"priority": (3.0,)})) == ["b"]
    assert vec(live_index, "t", unit(1, 0), Filters(metadata={"tags": ("y",), "priority": (2,)})) == ["a"]
    (hit,) = live_index.lexical("t", LexicalQuery(("alpha",)), Filters(metadata={"pinned": (True,)}), 5)
    assert hit.metadata == {"pinned": True, "priority": 2, "tags": ["x", "y"]}


def test_phrases_are_required_and_single_cjk_characters_match(live_index: OpenSearchIndex) -> None:
    live_index.upsert(record("t", "memory", "a", "the rate limit was hit again"))
    live_index.upsert(record("t", "memory", "b", "limit the rate of growth"))
    live_index.upsert(record("t", "memory", "c", "東 京 の 天 気"))
    hits = live_index.lexical("t", LexicalQuery(("hit", "growth"), ("rate limit",)), Filters(), 5)
    assert [h.key.entity_id for h in hits] == ["a"]
    assert lex(live_index, "t", "京") == ["c"]


def test_the_template_covers_the_next_index_generation(live_index: OpenSearchIndex, client: Any) -> None:
    next_index = mapping.index_name(live_index.alias, 2)
    client.indices.create(index=next_index)
    mappings = client.indices.get_mapping(index=next_index)[next_index]["mappings"]
    embedding = mappings["properties"]["chunks"]["properties"]["embedding"]
    assert embedding["type"] == "knn_vector" and embedding["dimension"] == DIM
    assert build_opensearch_index(client, dimension=DIM, prefix=live_index.alias).ensure_index() is False


# -- what a real cluster breaks ----------------------------------------------------------------------

METADATA_FLOOD_KEYS = 5_000  # distinct metadata keys across tenants: 5× the default field limit (1,000)
FLOOD_TENANTS = 5


def test_a_metadata_key_flood_neither_fails_writes_nor_leaks_across_tenants(
    live_index: OpenSearchIndex,
) -> None:
    per_tenant = METADATA_FLOOD_KEYS // FLOOD_TENANTS
    for t in range(FLOOD_TENANTS):
        records = [
            record(
                f"t{t}", "task", f"e{i}", "flood text", metadata={f"key_{t}_{i}": f"v{i}", "shared": f"t{t}"}
            )
            for i in range(per_tenant)
        ]
        assert set(live_index.upsert_many(records)) == {WriteOutcome.APPLIED}
    only = Filters(metadata={"key_3_7": ("v7",)})
    assert lex(live_index, "t3", "flood", filters=only) == ["e7"]
    assert lex(live_index, "t2", "flood", filters=only) == []  # the same key and value, another tenant
    assert (
        len(lex(live_index, "t1", "flood", filters=Filters(metadata={"shared": ("t1",)}), k=2000))
        == per_tenant
    )


def test_a_metadata_key_and_its_dotted_child_both_index_and_filter(live_index: OpenSearchIndex) -> None:
    assert live_index.upsert(record("t1", "task", "a", "dotted", metadata={"a": "x"})) is WriteOutcome.APPLIED
    assert (
        live_index.upsert(record("t2", "task", "b", "dotted", metadata={"a.b": "y"})) is WriteOutcome.APPLIED
    )
    assert (
        live_index.upsert(record("t2", "task", "c", "dotted", metadata={"a": {"b": "y"}}))
        is WriteOutcome.APPLIED
    )
    assert lex(live_index, "t1", "dotted", filters=Filters(metadata={"a": ("x",)})) == ["a"]
    assert lex(live_index, "t2", "dotted", filters=Filters(metadata={"a.b": ("y",)})) == ["b"]
    assert lex(live_index, "t1", "dotted", filters=Filters(metadata={"a.b": ("y",)})) == []
    got = live_index.get("t2", [EntityKey("task", "c")])[EntityKey("task", "c")]
    assert got.metadata == {"a": {"b": "y"}}


NODE_REQUEST_CAP = 10 * 1024 * 1024  # http.max_content_length of the test node (scripts/opensearch.sh)


def _big(eid: str, size: int, version: int = 1) -> Any:
    big = record("t", "document", eid, f"big document {eid}", version=version)
    return replace(big, body={"content": "x" * size})


def test_a_bulk_above_the_request_size_cap_is_split_not_refused(
    live_index: OpenSearchIndex, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = [_big(f"d{i}", 1024 * 1024) for i in range(14)]  # ~14 MiB in one call
    counter = _CountingTransport(client, monkeypatch)
    assert live_index.upsert_many(records) == [WriteOutcome.APPLIED] * len(records)
    bulks = [r for r in counter.requests if r[1] == "/_bulk"]
    assert len(bulks) >= 2
    assert len(lex(live_index, "t", "big", k=50)) == len(records)


def test_an_entity_above_the_request_size_cap_is_the_callers_error(live_index: OpenSearchIndex) -> None:
    with pytest.raises(PayloadTooLargeError):
        live_index.upsert(_big("huge", NODE_REQUEST_CAP + 1024))
    assert live_index.upsert(_big("small", 1024)) is WriteOutcome.APPLIED


def test_a_limit_above_the_domains_cap_halves_refused_bulks(live_index: OpenSearchIndex, client: Any) -> None:
    generous = build_opensearch_index(
        client, dimension=DIM, prefix=live_index.alias, refresh=True, max_bulk_bytes=64 * 1024 * 1024
    )
    records = [_big(f"d{i}", 1024 * 1024) for i in range(14)]
    assert generous.upsert_many(records) == [WriteOutcome.APPLIED] * len(records)
    assert len(lex(live_index, "t", "big", k=50)) == len(records)


def test_a_cold_start_on_an_existing_index_reads_its_mapping_and_leaves_the_template(
    live_index: OpenSearchIndex, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = _CountingTransport(client, monkeypatch)
    assert build_opensearch_index(client, dimension=DIM, prefix=live_index.alias).ensure_index() is False
    assert [m for m, _ in counter.requests] == ["HEAD", "GET"]  # alias exists, its mapping: nothing written


def test_an_embedder_of_another_dimension_is_refused_as_a_configuration_error(
    live_index: OpenSearchIndex, client: Any
) -> None:
    live_index.upsert(record("t", "memory", "a", "eight dimensions"))
    wider = build_opensearch_index(client, dimension=DIM * 2, prefix=live_index.alias, refresh=True)
    wide = record("t", "memory", "b", "sixteen dimensions", vec=np.ones(DIM * 2, dtype=np.float32) / 4)
    with pytest.raises(ConfigurationError) as raised:
        wider.upsert(wide)
    assert f"{DIM} dimensions" in str(raised.value) and f"{DIM * 2}" in str(raised.value)
    with pytest.raises(ConfigurationError):
        wider.retrieve(
            "t", LexicalQuery(("dimensions",)), np.ones(DIM * 2, dtype=np.float32) / 4, Filters(), 5
        )


def test_one_search_the_cluster_refuses_fails_only_its_own_list(
    live_index: OpenSearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    live_index.upsert(record("t", "memory", "a", "zero vectors are refused by cosine"))
    original = query_bodies.vector_body

    def zeroed(tenant_id: str, embedding: Any, filters: Filters, k: int, *rest: Any) -> dict[str, Any]:
        return original(tenant_id, np.zeros(DIM, dtype=np.float32), filters, k, *rest)  # cosinesimil: a 400

    monkeypatch.setattr(query_bodies, "vector_body", zeroed)
    got = live_index.retrieve("t", LexicalQuery(("cosine",)), unit(1, 0), Filters(), 5)
    assert [c.key.entity_id for c in got.lexical] == ["a"] and got.vector == ()


def test_a_zero_query_vector_alone_finds_nothing_rather_than_failing(live_index: OpenSearchIndex) -> None:
    live_index.upsert(record("t", "memory", "a", "zero vectors are refused by cosine"))
    assert live_index.vector("t", np.zeros(DIM, dtype=np.float32), Filters(), 5) == []


def test_a_metadata_update_never_overwrites_a_write_that_landed_after_its_read(
    live_index: OpenSearchIndex, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PUT v2 lands between the metadata update's read of v1 and its write of v3: v3 keeps v2's text."""
    key = EntityKey("task", "a")
    live_index.upsert(record("t", "task", "a", "first text", version=1, metadata={"status": "open"}))
    other = build_opensearch_index(client, dimension=DIM, prefix=live_index.alias, refresh=True)
    original = client.mget
    raced: list[bool] = []

    def read_then_race(*args: Any, **kwargs: Any) -> Any:
        found = original(*args, **kwargs)
        if not raced:  # the update's read is done; another writer lands before its write
            raced.append(True)
            assert other.upsert(record("t", "task", "a", "second text", version=2)) is WriteOutcome.APPLIED
        return found

    monkeypatch.setattr(client, "mget", read_then_race)
    outcome = live_index.update_metadata("t", key, 3, {"content": "x"}, {"status": "done"}, "2026-11-03")
    assert raced and outcome is WriteOutcome.APPLIED
    assert lex(live_index, "t", "second") == ["a"] and lex(live_index, "t", "first") == []
    stored = live_index.get("t", [key])[key]
    assert stored.version == 3 and stored.metadata == {"status": "done"}
