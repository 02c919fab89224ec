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
    for name in (mapping.TITLE_VALUE, mapping.METADATA_VALUE, mapping.DISPLAY_CLIPPED):
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
