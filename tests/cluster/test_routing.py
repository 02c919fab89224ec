"""Tenant routing on the three-node cluster (infra/opensearch/layout.py): with routing by tenant a search
touches the tenant's one shard; with a routing partition of p shards, p; without routing, every shard. Each
count is what the node itself says it asked (`_shards.total` of every `_msearch` answer), read from the
adapter's own requests through a client that records the answers it passes on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.search.search_api import SearchRequest
from tests.cluster.conftest import Cluster, container_on

pytestmark = [pytest.mark.live]
SHARDS = 3
TENANTS = ("acme", "beta", "gamma", "delta")


def record_answers(client: Any) -> list[dict[str, Any]]:
    """Keep every `_msearch` item the client receives (the client is otherwise unchanged)."""
    items: list[dict[str, Any]] = []
    msearch = client.msearch

    def recording(*args: Any, **kwargs: Any) -> Any:
        answer = msearch(*args, **kwargs)
        items.extend(answer["responses"])
        return answer

    client.msearch = recording
    return items


@pytest.mark.parametrize(
    ("routing", "partition", "touched"),
    [("tenant", 1, 1), ("tenant", 2, 2), ("none", 1, SHARDS)],
    ids=["routed by tenant", "partitioned over 2 shards", "not routed"],
)
def test_a_tenants_search_touches_only_its_shards(
    healthy: Cluster, prefix: str, tmp_path: Path, routing: str, partition: int, touched: int
) -> None:
    stack = container_on(
        healthy,
        tmp_path / "data",
        prefix,
        opensearch_shards=SHARDS,
        opensearch_replicas="1",
        opensearch_routing=routing,
        opensearch_routing_partition_size=partition,
    )
    for tenant in TENANTS:
        items = [
            {
                "type": "memory",
                "id": f"{tenant}-{i}",
                "content": f"harbor crane {tenant} log {i}",
                "version": 1,
            }
            for i in range(8)
        ]
        assert stack.indexing.bulk(tenant, items, 0.0).indexed == len(items)
    healthy.client.indices.refresh(index=prefix)
    answers = record_answers(stack.index.client)
    for tenant in TENANTS:
        for strategy in ("keyword", "semantic", "hybrid"):
            found = stack.search.search(tenant, SearchRequest(query="harbor crane log", strategy=strategy))
            assert {r.entity_id.split("-")[0] for r in found.results} == {tenant}
    assert answers and {item["_shards"]["total"] for item in answers} == {touched}
    assert all(item["_shards"]["successful"] == touched for item in answers)


def test_the_routing_bench_runs(healthy: Cluster, tmp_path: Path) -> None:
    from tests.adapters.test_opensearch_benches import run_bench

    got = run_bench("routing.py", healthy.urls, tmp_path, "--smoke")
    touched = {name: row["shards_touched"] for name, row in got["results"].items()}  # type: ignore[attr-defined]
    assert touched == {"not routed": [3], "routed by tenant": [1], "partition of 2": [2]}
