"""What a search shows comes from doc values (infra/opensearch/mapping.py, TITLE_VALUE), on a live node:
values too long for a doc value are still shown whole (read from `_source`), and an index made before
those doc values (or before routing) keeps being searched and written as it was."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from core.models import EntityKey, Filters, LexicalQuery
from infra.opensearch import OpenSearchIndex, build_opensearch_index, mapping
from tests.adapters.opensearch_live_support import fresh_live_index, live_client
from tests.adapters.search_index_contract import DIM, record, unit

pytestmark = [pytest.mark.live]
LONG = mapping.DISPLAY_VALUE_UNITS + 10


@pytest.fixture
def client(opensearch_url: str) -> Any:
    return live_client(opensearch_url)


def test_values_too_long_for_a_doc_value_are_shown_whole(client: Any) -> None:
    long_text = "harbor " + "x" * LONG
    metadata = {"notes": "y" * LONG, "kind": "long"}
    with fresh_live_index(client, DIM) as index:
        entity = record("t", "memory", "long", long_text, metadata=metadata)
        index.upsert(entity)
        index.upsert(record("t", "memory", "short", "harbor crane", metadata={"kind": "short"}))
        got = index.retrieve("t", LexicalQuery(("harbor",)), unit(1, 1), Filters(), 5)
        for found in (got.lexical, got.vector):
            by_id = {c.key.entity_id: c for c in found}
            assert by_id["long"].text == long_text and by_id["long"].metadata == metadata
            assert by_id["long"].title == entity.title and by_id["short"].metadata == {"kind": "short"}


@pytest.fixture
def older_index(client: Any) -> Iterator[OpenSearchIndex]:
    """An index laid out as before display doc values and routing (one shard, no `_routing`)."""
    prefix = f"quarry-test-{uuid.uuid4().hex[:10]}"
    body = mapping.create_index_body(prefix, DIM)
    body["settings"]["index"] = {"knn": True}
    properties = body["mappings"].pop("properties")
    body["mappings"] = {"dynamic": "strict", "properties": properties}
    for name in (
        mapping.TITLE_VALUE,
        mapping.METADATA_VALUE,
        mapping.DISPLAY_CLIPPED,
        mapping.FEEDBACK_VECTORS,
    ):
        del properties[name]
    properties["title"].pop("copy_to")
    chunk = properties[mapping.CHUNKS]["properties"]
    del chunk["text_value"]
    chunk["text"].pop("copy_to")
    client.indices.create(index=mapping.index_name(prefix), body=body)
    try:
        yield build_opensearch_index(client, dimension=DIM, prefix=prefix, refresh=True)
    finally:
        client.indices.delete(index=mapping.index_name(prefix), ignore=404)


def test_an_index_made_before_display_values_and_routing_is_searched_and_written_as_before(
    older_index: OpenSearchIndex,
) -> None:
    key = EntityKey("task", "a")
    older_index.upsert(record("t", "task", "a", "harbor crane", metadata={"status": "open"}))
    older_index.update_metadata("t", key, 2, {"content": "harbor crane"}, {"status": "done"}, "2026-11-02")
    (hit,) = older_index.lexical("t", LexicalQuery(("harbor",)), Filters(), 5)
    assert hit.key == key and hit.metadata == {"status": "done"} and hit.text == "harbor crane"
    assert older_index.get("t", [key])[key].version == 2
    assert older_index.delete("t", key, None).value == "applied"
    assert older_index.lexical("t", LexicalQuery(("harbor",)), Filters(), 5) == []


def test_a_process_configured_for_routing_reads_an_unrouted_index_as_it_was_written(client: Any) -> None:
    from infra.opensearch.layout import Layout

    unrouted = Layout(shards=3, replicas="0", routed=False)
    with fresh_live_index(client, DIM, layout=unrouted) as written:
        keys = [EntityKey("memory", f"m{i}") for i in range(12)]  # over the three shards
        written.upsert_many([record("t", "memory", k.entity_id, f"harbor {k.entity_id}") for k in keys])
        # a new process whose configuration asks for routing: its first call is a read
        reader = build_opensearch_index(client, dimension=DIM, prefix=written.alias, layout=Layout(shards=3))
        assert sorted(reader.get("t", keys)) == sorted(keys)
        assert len(reader.lexical("t", LexicalQuery(("harbor",)), Filters(), 50)) == len(keys)


def test_an_index_made_before_the_compact_feedback_vectors_is_written_and_searched_as_before(
    client: Any,
) -> None:
    # Given an index whose strict mapping lacks the compact vectors, when entities are written, updated
    # and searched with vectors asked, then every write is taken and no vectors come with the hits (the
    # feedback reads them by `_mget`: chunk_vectors); an index with the field returns them.
    from core.models import ALL_CHUNKS, CandidateQuery

    prefix = f"quarry-test-{uuid.uuid4().hex[:10]}"
    body = mapping.create_index_body(prefix, DIM)
    del body["mappings"]["properties"][mapping.FEEDBACK_VECTORS]
    client.indices.create(index=mapping.index_name(prefix), body=body)
    try:
        older = build_opensearch_index(client, dimension=DIM, prefix=prefix, refresh=True)
        key = EntityKey("task", "a")
        assert older.upsert(record("t", "task", "a", "harbor crane", vec=unit(1, 0))).value == "applied"
        older.update_metadata("t", key, 2, {"content": "harbor crane"}, {"status": "done"}, "2026-11-02")
        spec = CandidateQuery(LexicalQuery(("harbor",)), unit(1, 0), Filters(), 5, True, with_vectors=True)
        (got,) = older.retrieve_many("t", [spec])
        assert [c.key for c in got.lexical] == [key] and [c.key for c in got.vector] == [key]
        assert not got.vectors and set(older.chunk_vectors("t", [(key, ALL_CHUNKS)])) == {(key, 0)}
    finally:
        client.indices.delete(index=mapping.index_name(prefix), ignore=404)
    with fresh_live_index(client, DIM) as current:
        current.upsert(record("t", "task", "a", "harbor crane", vec=unit(1, 0)))
        (got,) = current.retrieve_many("t", [spec])
        assert set(got.vectors) == {key} and list(got.vectors[key]) == [0]
