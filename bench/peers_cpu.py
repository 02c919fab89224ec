"""CPU time of one keyword search on Quarry's side of bench/peers.py, layer by layer, in-process: the index's
`retrieve` alone, `SearchService.search`, and the whole HTTP API handler (API Gateway event → JSON), each the
minimum over --passes passes of SciFact's 300 test queries (process time, so other jobs on the machine
bend it less than wall time). The differences are what each layer adds around the keyword engine.

    .venv/bin/python bench/peers_cpu.py [--cache-dir .quarry/embeddings] [--passes 3]
    .venv/bin/python bench/peers_cpu.py --smoke   # tests/fixtures/beir_tiny, one pass
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")

from bench._common import SMOKE_DATASET  # noqa: E402
from bench.peers import DEFAULT_CACHE, DEFAULT_DATASET, SIZES, quarry_ingest  # noqa: E402


def cpu_ms(run: Callable[[int], Any], count: int, passes: int) -> float:
    """Minimum over `passes` of the process time per call of run(0..count-1), after one warm pass."""
    best = float("inf")
    for _ in range(passes + 1):
        started = time.process_time()
        for i in range(count):
            run(i)
        best = min(best, (time.process_time() - started) * 1000 / count)
    return best


def layers(data_dir: Path, queries: list[str], size: int, passes: int) -> dict[str, float]:
    """CPU ms per query for the index, the service and the handler at top `size`."""
    from core.models import Filters, LexicalQuery
    from core.search.planning import MIN_SINGLE_DEPTH
    from core.search.query import parse_query
    from core.search.search_api import SearchRequest
    from handlers.lambda_functions import api
    from handlers.local_server.devserver import FakeLambdaContext, build_event
    from infra.beir.evaluation import EVAL_TENANT
    from infra.config.settings import load_settings
    from infra.wiring.root import Container, set_container

    c = Container(
        load_settings(data_dir=data_dir, cache_ttl_seconds=0)
    )  # as bench/peers.py's server: no cache
    set_container(c)
    parsed = [parse_query(q, c.registry, c.search.settings.max_terms) for q in queries]
    lexical = [LexicalQuery(p.terms, p.phrases, weights=p.weights) for p in parsed]
    scope = Filters(entity_types=c.registry.names())
    depth = max(2 * size, MIN_SINGLE_DEPTH)
    requests = [SearchRequest(query=q, strategy="keyword", limit=size) for q in queries]
    grant = {"tenant": EVAL_TENANT, "scopes": ["read"]}
    headers = {"content-type": "application/json"}
    bodies = [json.dumps({"query": q, "strategy": "keyword", "limit": size}).encode() for q in queries]

    def handler(i: int) -> None:
        event = build_event("POST", "/search", headers, bodies[i], grant)
        assert api.lambda_handler(event, FakeLambdaContext(aws_request_id="cpu"))["statusCode"] == 200

    runs: dict[str, Callable[[int], Any]] = {
        "index": lambda i: c.index.retrieve(EVAL_TENANT, lexical[i], None, scope, depth),
        "service": lambda i: c.search.search(EVAL_TENANT, requests[i]),
        "handler": handler,
    }
    try:
        return {name: round(cpu_ms(run, len(queries), passes), 2) for name, run in runs.items()}
    finally:
        set_container(None)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE, help="passage embedding cache")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="tests/fixtures/beir_tiny, one pass")
    args = parser.parse_args(argv)
    if args.smoke:
        args.dataset, args.passes = SMOKE_DATASET, 1

    from infra.beir.datasets import load_beir

    data = load_beir(args.dataset, "test")
    queries = [q for q in data.queries.values() if q.strip()]
    with tempfile.TemporaryDirectory(prefix="quarry-peers-cpu-") as tmp:
        quarry_ingest(Path(tmp), data, args.cache_dir, args.smoke)
        for size in SIZES:
            with contextlib.redirect_stderr(io.StringIO()):  # Powertools' "no metrics" warning
                row = layers(Path(tmp), queries, size, args.passes)
            print(
                f"top {size:>3}: " + "  ".join(f"{k} {v:.2f}" for k, v in row.items()) + " ms CPU", flush=True
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
