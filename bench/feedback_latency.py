"""What vector feedback (core.search.pseudo_relevance) costs a hybrid search, through the HTTP API handler on 10,000
entities: the same queries with feedback on (the default) and off, interleaved query by query so that a
busy machine's load falls on both alike. The cache is bypassed (TTL 0) so every call searches; queries
are embedded by the model every time, as in bench/search_latency.py.

    .venv/bin/python bench/feedback_latency.py [--entities 10000] [--queries 200] [--cache-dir DIR]
    .venv/bin/python bench/feedback_latency.py --smoke   # 50 entities, 12 queries, hashing vectors
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import HashingEmbedder, queries, summary, write_json  # noqa: E402
from bench.search_latency import call, event, ingest  # noqa: E402


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--cache-dir", default=".quarry/embeddings")
    parser.add_argument("--json", help="default bench/results/feedback_latency.json (none with --smoke)")
    parser.add_argument("--smoke", action="store_true", help="50 entities, 12 queries, hashing vectors")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.smoke:
        args.entities, args.queries = 50, 12
    elif args.json is None:
        args.json = "bench/results/feedback_latency.json"
    model: Any = HashingEmbedder()
    if not args.smoke:
        from infra.local.onnx.embedder import LocalEmbedder

        model = LocalEmbedder()
    stream = queries(args.queries)
    took = _measure(args, model, stream)
    out = {name: summary(values) for name, values in took.items()}
    extra = [a - b for a, b in zip(took["feedback"], took["no feedback"], strict=True)]
    out["extra per query"] = summary(extra)
    label = "hashing vectors (smoke run)" if args.smoke else "all-MiniLM-L6-v2"
    print(
        f"hybrid through the handler, {args.entities} entities, {len(stream)} queries (interleaved), {label}"
    )
    for name, s in out.items():
        print(f"{name:<16} P50 {s['p50']:7.2f} ms   P99 {s['p99']:7.2f} ms   mean {s['mean']:7.2f} ms")
    if args.json:
        write_json(args.json, out)
    return 0


def _measure(args: argparse.Namespace, model: Any, stream: list[str]) -> dict[str, list[float]]:
    """Each query's hybrid search through the handler with and without feedback, interleaved (the first
    ten warm up): the milliseconds by variant."""
    from handlers.lambda_functions.api import lambda_handler
    from infra.beir.embedding_cache import CachingEmbedder
    from infra.config.settings import load_settings
    from infra.wiring.root import Container, set_container

    with tempfile.TemporaryDirectory() as tmp:
        # as bench/search_latency.py: synchronous bulks, cached corpus vectors, queries embedded by the model
        container = Container(
            load_settings(data_dir=tmp, cache_ttl_seconds=0, cache="memory", async_min_chunks=10_000)
        )
        corpus = model if args.smoke else CachingEmbedder(model, args.cache_dir, progress=False)
        container.override(embedder=corpus)
        set_container(container)
        ingest(lambda_handler, args.entities)
        container.override(embedder=model)  # the search and indexing services rebuild around it
        service = container.search
        on = dataclasses.replace(service.settings, cache_ttl_seconds=0.0)
        off = dataclasses.replace(on, feedback_docs=0, alpha=0.7)
        took: dict[str, list[float]] = {"feedback": [], "no feedback": []}
        for i, q in enumerate(stream[:10] + stream):
            for name, variant in (("feedback", on), ("no feedback", off))[:: 1 if i % 2 else -1]:
                service.settings = variant
                started = time.perf_counter()
                body = call(lambda_handler, event("/search", {"query": q, "strategy": "hybrid"}))
                elapsed = (time.perf_counter() - started) * 1000
                assert body["query_info"]["cache"] != "hit", body["query_info"]
                if i >= 10:  # the first ten warm up (model load, vector matrix)
                    took[name].append(elapsed)
        set_container(None)
    return took


if __name__ == "__main__":
    raise SystemExit(main())
