"""The three-node cluster of `scripts/opensearch.sh cluster-up` (started by `make test` through
scripts/with-opensearch.sh, which exports QUARRY_OPENSEARCH_CLUSTER_URL): nodes are killed with SIGKILL and
started again by PID through the same script, and every test leaves all three nodes running and the cluster
green. Without a cluster these tests skip with a reason, or fail when QUARRY_REQUIRE_OPENSEARCH=1 (CI)."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infra.opensearch import build_client, mapping
from tests.conftest import FakeEmbedder, make_container

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "opensearch.sh"
NODES = (1, 2, 3)
GREEN_SECONDS = 120.0  # a restarted node recovers its shards from its own disk: seconds, not minutes
HOWTO = (
    "no OpenSearch cluster: QUARRY_OPENSEARCH_CLUSTER_URL is not set. `make test` starts one (needs java 17 "
    "and mvn); or `make opensearch-cluster-up` and "
    "QUARRY_OPENSEARCH_CLUSTER_URL=$(scripts/opensearch.sh cluster-url) pytest tests/cluster"
)


class Cluster:
    """The running cluster: its client, and its nodes killed and started by PID (scripts/opensearch.sh)."""

    def __init__(self, urls: str) -> None:
        self.urls = urls
        self.client = build_client(urls, timeout=10.0, max_retries=3)
        self.killed: set[int] = set()

    def kill(self, node: int) -> None:
        """SIGKILL one node (its process is gone when this returns)."""
        subprocess.run([str(SCRIPT), "node-kill", str(node)], check=True, capture_output=True)
        self.killed.add(node)

    def start(self, node: int) -> None:
        """Start a node again (same ports, same data) and wait until it has rejoined."""
        subprocess.run([str(SCRIPT), "node-start", str(node)], check=True, capture_output=True)
        self.killed.discard(node)

    def wait_green(self, index: str | None = None) -> None:
        """Every node in, every shard of every index (or of `index`) assigned."""
        deadline = time.monotonic() + GREEN_SECONDS
        while time.monotonic() < deadline:
            health = self.client.cluster.health(
                index=index, wait_for_status="green", timeout="2s", request_timeout=10, ignore=408
            )
            if health["status"] == "green" and health["number_of_nodes"] == len(NODES):
                return
        raise AssertionError(f"the cluster was not green within {GREEN_SECONDS:g} s: {health}")

    def primary_nodes(self, index: str) -> set[int]:
        """The nodes (1-3) holding a primary of `index`."""
        rows = self.client.cat.shards(index=index, params={"format": "json", "h": "prirep,node"})
        return {int(r["node"].rsplit("-", 1)[-1]) for r in rows if r["prirep"] == "p" and r.get("node")}


@pytest.fixture(scope="session")
def cluster() -> Cluster:
    urls = os.environ.get("QUARRY_OPENSEARCH_CLUSTER_URL", "")
    if not urls:
        if os.environ.get("QUARRY_REQUIRE_OPENSEARCH", "") not in ("", "0"):
            pytest.fail(f"QUARRY_REQUIRE_OPENSEARCH is set but there is {HOWTO}", pytrace=False)
        pytest.skip(HOWTO)
    return Cluster(urls)


@pytest.fixture
def healthy(cluster: Cluster) -> Iterator[Cluster]:
    """The cluster, whole and green before the test and again after it (a node it killed is started)."""
    cluster.wait_green()
    yield cluster
    for node in sorted(cluster.killed):
        cluster.start(node)
    cluster.wait_green()


@pytest.fixture
def prefix(cluster: Cluster) -> Iterator[str]:
    """A fresh alias name; its generations and template are deleted afterwards."""
    name = f"quarry-cluster-{uuid.uuid4().hex[:10]}"
    yield name
    for generation in (1, 2):
        cluster.client.indices.delete(index=mapping.index_name(name, generation), ignore=404)
    cluster.client.indices.delete_index_template(name=mapping.template_name(name), ignore=404)


def container_on(cluster: Cluster, data_dir: Path, prefix: str, **settings: Any) -> Any:
    """A local container whose index is an alias on the cluster (fake embedder, search cache off)."""
    options: dict[str, Any] = {
        "index": "opensearch",
        "opensearch_url": cluster.urls,
        "opensearch_index_prefix": prefix,
        "cache_ttl_seconds": 0,
        "async_min_chunks": 10_000,  # bulks are written in the request, not as jobs
        "opensearch_max_retries": 2,
        **settings,
    }
    return make_container(data_dir, FakeEmbedder(), **options)
