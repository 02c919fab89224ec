"""The tail of `quarry serve`'s latency, one request at a time: with no queue to wait in, every answer far
slower than the median is the server pausing on its own (a full collection of Python's garbage collector
over a warm worker's heap was one: docs/benchmarks.md#frozen-heap).

The corpus is bench/_common.py's synthetic tasks and memories (the load bench's, ingested the same way),
then `quarry serve` over it (search cache off) answers --requests searches of one strategy over one
keep-alive connection, after a warm-up: P50 / P99 / P99.9 / max of the client's wall time, how many
answers took longer than --slow-ms, and the server processes' CPU per search (every thread's, from /proc).

    .venv/bin/python bench/serve_tail.py [--entities 2000] [--requests 1200] [--strategy hybrid] [--json FILE]
    .venv/bin/python bench/serve_tail.py --smoke   # 300 entities, 40 requests
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import HashingEmbedder, queries, tree_cpu_seconds, write_json  # noqa: E402
from bench.load import KEY, ingest, start_server  # noqa: E402

WARM_UP = 50  # requests before measuring: the worker loads the model and opens the tenant's indexes


def percentile(ordered: Sequence[float], share: float) -> float:
    """The value below which `share` of the ordered values lie (nearest rank)."""
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def measure(port: int, strategy: str, requests: int, stream: Sequence[str]) -> list[float]:
    """Milliseconds per search of `requests` searches, one at a time over one keep-alive connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"authorization": f"Bearer {KEY}", "content-type": "application/json"}
    walls: list[float] = []
    try:
        for i in range(requests):
            body = json.dumps({"query": stream[i % len(stream)], "strategy": strategy, "limit": 10})
            started = time.perf_counter()
            conn.request("POST", "/search", body, headers)
            response = conn.getresponse()
            response.read()
            if response.status != 200:
                raise SystemExit(f"search answered {response.status}")
            walls.append((time.perf_counter() - started) * 1000)
    finally:
        conn.close()
    return walls


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entities", type=int, default=2000)
    parser.add_argument("--requests", type=int, default=1200)
    parser.add_argument("--strategy", choices=["hybrid", "keyword", "semantic", "auto"], default="hybrid")
    parser.add_argument("--workers", type=int, default=1, help="server worker processes")
    parser.add_argument("--slow-ms", type=float, default=35.0, help="answers slower than this are counted")
    parser.add_argument("--cache-dir", default=".quarry/embeddings")
    parser.add_argument("--json", help="default bench/results/serve_tail.json (none with --smoke)")
    parser.add_argument("--smoke", action="store_true", help="300 entities, 40 requests")
    args = parser.parse_args(argv)
    if args.smoke:
        args.entities, args.requests = 300, 40
    elif args.json is None:
        args.json = "bench/results/serve_tail.json"
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        ingest(data, args.entities, args.cache_dir, HashingEmbedder() if args.smoke else None)
        server = start_server(data, args.workers, cache=False)
        try:
            stream = queries(300, seed=5)
            measure(server.port, args.strategy, WARM_UP, stream)  # measured neither for time nor CPU
            cpu = tree_cpu_seconds(server.proc.pid)
            walls = sorted(measure(server.port, args.strategy, args.requests, stream))
            cpu = tree_cpu_seconds(server.proc.pid) - cpu
        finally:
            server.stop()
    out: dict[str, Any] = {
        "entities": args.entities,
        "strategy": args.strategy,
        "workers": args.workers,
        "requests": len(walls),
        "latency_ms": {
            name: round(percentile(walls, share), 2)
            for name, share in (("p50", 0.5), ("p99", 0.99), ("p999", 0.999), ("max", 1.0))
        },
        "slow": {"over_ms": args.slow_ms, "count": sum(1 for w in walls if w > args.slow_ms)},
        "server_cpu_ms_per_search": round(cpu * 1000 / len(walls), 2),
    }
    lat = out["latency_ms"]
    print(
        f"{args.strategy}, {len(walls)} requests one at a time: P50 {lat['p50']} P99 {lat['p99']} "
        f"P99.9 {lat['p999']} max {lat['max']} ms; {out['slow']['count']} over {args.slow_ms:g} ms; "
        f"server CPU {out['server_cpu_ms_per_search']} ms per search"
    )
    if args.json:
        write_json(args.json, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
