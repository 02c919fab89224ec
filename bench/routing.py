"""Tenant routing on a cluster: search latency and throughput with and without it (infra/opensearch/layout.py).

The same synthetic entities (bench/_common.py), spread over --tenants tenants, go into one index per
layout on the cluster at QUARRY_OPENSEARCH_URL (several nodes: comma-separated, as
`make opensearch-cluster-up` prints them): not routed (every search asks every shard), routed by tenant
(one shard), and routed over a partition of shards. Each index is then searched through SearchService
(query embedding included, search cache off), first one search at a time (P50 / P99 per strategy), then
from --threads threads at once for --seconds (searches per second, P50 / P99 under that load). The shards
each search touched are read from the node's answers (`_shards.total`). Indices are deleted afterwards.

    QUARRY_OPENSEARCH_URL=$(scripts/opensearch.sh cluster-url) .venv/bin/python bench/routing.py \\
        [--entities 10000] [--tenants 20] [--shards 3] [--json bench/results/routing.json]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")

from bench._common import queries, summary, synthetic_entities, write_json  # noqa: E402

STRATEGIES = ("keyword", "hybrid")
BULK = 500


def layouts(shards: int) -> dict[str, dict[str, Any]]:
    """The layouts compared: settings of each index."""
    partition = max(2, shards // 2)
    return {
        "not routed": {"opensearch_routing": "none"},
        "routed by tenant": {"opensearch_routing": "tenant"},
        f"partition of {partition}": {
            "opensearch_routing": "tenant",
            "opensearch_routing_partition_size": partition,
        },
    }


def build(data: str, shards: int, options: dict[str, Any], embedder: Any) -> Any:
    from infra.config.settings import load_settings
    from infra.wiring.root import Container

    prefix = f"quarry-routing-{random.randrange(16**8):08x}"
    settings = load_settings(
        data_dir=data,
        index="opensearch",
        opensearch_index_prefix=prefix,
        opensearch_shards=shards,
        opensearch_replicas="1",
        cache="memory",
        cache_ttl_seconds=0,
        async_min_chunks=10_000,
        **options,
    )
    return Container(settings, embedder=embedder, configured_embedder=embedder)


def ingest(container: Any, entities: int, tenants: list[str]) -> None:
    items = synthetic_entities(entities)
    for n, tenant in enumerate(tenants):
        mine = items[n :: len(tenants)]
        for start in range(0, len(mine), BULK):
            report = container.indexing.bulk(tenant, mine[start : start + BULK], time.time())
            assert not report.errors, report.errors[:3]
    container.index.client.indices.refresh(index=container.index.alias)


def touched(container: Any) -> list[int]:
    """Wrap the client so every `_msearch` answer's `_shards.total` is noted."""
    seen: list[int] = []
    inner = container.index.client.msearch

    def msearch(*args: Any, **kwargs: Any) -> Any:
        answer = inner(*args, **kwargs)
        seen.extend(int(item["_shards"]["total"]) for item in answer["responses"] if "_shards" in item)
        return answer

    container.index.client.msearch = msearch
    return seen


def searcher(container: Any, tenants: list[str], strategy: str) -> Callable[[str, int], float]:
    from core.search.search_api import SearchRequest

    def one(query: str, n: int) -> float:
        started = time.perf_counter()
        container.search.search(
            tenants[n % len(tenants)],
            SearchRequest.model_validate({"query": query, "strategy": strategy, "limit": 20}),
        )
        return (time.perf_counter() - started) * 1000

    return one


def sequential(one: Callable[[str, int], float], stream: list[str]) -> dict[str, float]:
    for n, q in enumerate(stream[:10]):
        one(q, n)
    return summary([one(q, n) for n, q in enumerate(stream)])


def concurrent(
    one: Callable[[str, int], float], stream: list[str], threads: int, seconds: float
) -> dict[str, float]:
    took: list[float] = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def worker(offset: int) -> None:
        n = offset
        while time.monotonic() < deadline:
            spent = one(stream[n % len(stream)], n)
            with lock:
                took.append(spent)
            n += threads

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return {**summary(took), "per_second": len(took) / seconds}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--tenants", type=int, default=20)
    parser.add_argument("--shards", type=int, default=3)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--json", default="bench/results/routing.json")
    parser.add_argument(
        "--smoke", action="store_true", help="30 entities, 3 tenants, 2 queries, 0.2 s, 2 threads"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.smoke:
        args.entities, args.tenants, args.queries, args.seconds, args.threads = 30, 3, 2, 0.2, 2
    if not os.environ.get("QUARRY_OPENSEARCH_URL"):
        raise SystemExit(
            "needs QUARRY_OPENSEARCH_URL (scripts/opensearch.sh cluster-url prints the cluster's)"
        )
    from infra.local.onnx.embedder import LocalEmbedder

    embedder = LocalEmbedder()
    tenants = [f"tenant-{i:03d}" for i in range(args.tenants)]
    stream = queries(args.queries)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as data:
        for name, options in layouts(args.shards).items():
            container = build(data, args.shards, options, embedder)
            try:
                results[name] = _measure(args, container, tenants, stream)
            finally:
                container.index.drop()
    _print(args, results)
    out = {
        "entities": args.entities,
        "tenants": args.tenants,
        "shards": args.shards,
        "threads": args.threads,
        "load_average": os.getloadavg(),
        "results": results,
    }
    write_json(args.json, out)
    return 0


def _measure(
    args: argparse.Namespace, container: Any, tenants: list[str], stream: list[str]
) -> dict[str, Any]:
    """One layout: ingest, then each strategy one search at a time and under load, and the shards the
    searches touched."""
    ingest(container, args.entities, tenants)
    seen = touched(container)
    row: dict[str, Any] = {}
    for strategy in STRATEGIES:
        one = searcher(container, tenants, strategy)
        row[strategy] = {
            "sequential": sequential(one, stream),
            "concurrent": concurrent(one, stream, args.threads, args.seconds),
        }
    row["shards_touched"] = sorted(set(seen))
    return row


def _print(args: argparse.Namespace, results: dict[str, Any]) -> None:
    print(f"\n{args.entities} entities over {args.tenants} tenants, {args.shards} shards, 1 replica; ms")
    for name, row in results.items():
        for strategy in STRATEGIES:
            s, c = row[strategy]["sequential"], row[strategy]["concurrent"]
            print(
                f"{name:<18} {strategy:<8} one at a time P50 {s['p50']:6.2f} P99 {s['p99']:6.2f} · "
                f"{args.threads} threads: {c['per_second']:6.1f}/s P50 {c['p50']:6.2f} P99 {c['p99']:6.2f} · "
                f"shards per search {row['shards_touched']}"
            )


if __name__ == "__main__":
    raise SystemExit(main())
