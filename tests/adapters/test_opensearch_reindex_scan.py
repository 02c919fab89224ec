"""The OpenSearch reindexer never takes a scan cut short by a node loss for the whole index: every scroll
page is checked, the last (empty) one too, which opensearch-py's helpers.scan does not check. A catch-up
pass that read a truncated list of the old generation would take the missing documents for erased ones and
delete their copies from the new generation. The cluster is simulated by a client that answers the scroll
with one page and then an empty page from which a shard is missing (what a lost node's scroll answers)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from core.errors import UnavailableError
from core.indexing.entity_types import EntityTypeRegistry
from infra.opensearch.reindex import OpenSearchReindexer
from tests.conftest import FakeEmbedder


class _Indices:
    def refresh(self, **_: Any) -> dict[str, Any]:
        return {}


class ScrollCutShort:
    """Search answers page one of the old generation; the scroll then answers nothing, one shard short."""

    def __init__(self) -> None:
        from opensearchpy.serializer import JSONSerializer

        self.indices = _Indices()
        self.transport = SimpleNamespace(serializer=JSONSerializer())  # what helpers.streaming_bulk reads
        self.bulks: list[Any] = []

    def search(self, **_: Any) -> dict[str, Any]:
        hits = [{"_id": "a", "_seq_no": 4, "_primary_term": 1, "_source": {}}]
        return {
            "_scroll_id": "s1",
            "_shards": {"total": 3, "successful": 3, "failed": 0},
            "hits": {"hits": hits},
        }

    def scroll(self, **_: Any) -> dict[str, Any]:
        failure = {"shard": 2, "reason": {"type": "node_not_connected_exception", "reason": "node left"}}
        shards = {"total": 3, "successful": 2, "failed": 1, "failures": [failure]}
        return {"_scroll_id": "s1", "_shards": shards, "hits": {"hits": []}}

    def clear_scroll(self, **_: Any) -> dict[str, Any]:
        return {}

    def bulk(self, *args: Any, **kwargs: Any) -> Any:
        self.bulks.append((args, kwargs))
        raise AssertionError("nothing may be written or deleted after a partial scan")


def test_a_catch_up_over_a_scan_cut_short_stops_and_deletes_no_copy() -> None:
    client = ScrollCutShort()
    reindexer = OpenSearchReindexer(client, "quarry", EntityTypeRegistry(), FakeEmbedder(32), "/models/m")
    reindexer.old, reindexer.new = "quarry-v1", "quarry-v2"
    reindexer._copied = {"a": 4, "b": 7}  # both copied; "b" lives on the shard the scroll lost
    with pytest.raises(UnavailableError, match="scan of quarry-v1 answered partially"):
        reindexer.catch_up()
    assert client.bulks == []
