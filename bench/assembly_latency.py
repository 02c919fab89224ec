"""Context assembly latency through the HTTP API Lambda handler on 10,000 items across the five default
sources (memory, agent_memory_own, agent_memory_peer, vault_index, psychic_cache), on the embedded backend.

Reports P50 / P99 of POST /context/assemble (wall time through `handlers.lambda_functions.api.lambda_handler`), of its
retrieval (query embedding + the parallel fan-out, the response's `retrieval_ms`) and the share of time
spent outside retrieval — the engine's own overhead: validation, weights and budget lookups, scoring,
dedup, packing, rendering, logging the assembly, and the handler's JSON work. The same stream is then
run with the fan-out on one thread, to show what the parallel fan-out buys.

Embeddings: by default the real all-MiniLM-L6-v2; corpus vectors are cached on disk (`--cache-dir`,
shared with bench/search_latency.py), so only the first run pays for embedding the corpus; every query is
embedded live by the model, as in production. `--embedder hashing` swaps in a deterministic 384-dim
bag-of-words hashing embedder for corpus AND queries (no model; labelled as such in the output).

    .venv/bin/python bench/assembly_latency.py [--items 10000] [--queries 300] [--embedder minilm|hashing]
    .venv/bin/python bench/assembly_latency.py --smoke   # 50 items, 12 queries, hashing: that it runs
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "QuarryBench")
# torch's OpenMP workers spin-wait after each inference and starve the index work that follows on 2 cores:
# measured here, a query embedding interleaved with retrievals took 390-585 ms with the default (active)
# policy and 18-33 ms with PASSIVE. Must be set before torch loads; run with OMP_WAIT_POLICY=ACTIVE to
# see the default behaviour.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from bench._common import FILLER, TOPICS, VERBS, HashingEmbedder, queries, summary, write_json  # noqa: E402

TENANT = "bench"
AGENTS = [f"agent-{i}" for i in range(8)]
BULK = 500  # IndexingService.bulk batch (the POST /entities maximum)
WARMUP = 10  # first calls build the vector matrix and load the model


def sentence(rng: random.Random, topic: str) -> str:
    words = rng.sample(TOPICS[topic], 4) + rng.sample(FILLER, 3)
    rng.shuffle(words)
    return f"{rng.choice(VERBS)} {' '.join(words)}"


def corpus(n: int, seed: int = 13) -> list[dict[str, Any]]:
    """n items: 20% memory, 40% agent memory (8 owners), 20% vault documents, 20% psychic cache."""
    rng = random.Random(seed)
    items: list[dict[str, Any]] = []
    for i in range(n):
        topic = rng.choice(sorted(TOPICS))
        kind = i % 5
        common = {"id": f"x{i}", "namespace": topic, "version": 1}
        if kind == 3:
            text = ". ".join(sentence(rng, topic) for _ in range(rng.randint(3, 8)))
            items.append({"type": "document", "title": sentence(rng, topic), "text": text, **common})
            continue
        source = {0: "memory", 1: "agent_memory", 2: "agent_memory", 4: "psychic_cache"}[kind]
        body = {
            "type": "memory",
            "content": sentence(rng, topic),
            "category": topic,
            "source": source,
            **common,
        }
        if source == "agent_memory":
            body["owner"] = rng.choice(AGENTS)
        items.append(body)
    return items


def requests(n: int, seed: int = 17) -> list[dict[str, Any]]:
    """Assemble requests: the shared query stream, a random caller, a namespace half of the time."""
    rng = random.Random(seed)
    out = []
    for q in queries(n):
        topic = next((t for t, words in TOPICS.items() if any(w in q.split() for w in words)), None)
        body: dict[str, Any] = {"query": q, "caller": rng.choice(AGENTS)}
        if topic and rng.random() < 0.5:
            body["namespace"] = topic
        out.append(body)
    return out


def call(handler: Any, body: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    from handlers.local_server.devserver import FakeLambdaContext, build_event

    ev = build_event(
        "POST",
        "/context/assemble",
        {"content-type": "application/json"},
        json.dumps(body).encode(),
        {"tenant": TENANT, "scopes": ["read"]},
    )
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # Powertools prints EMF metrics per call
        result = handler(ev, FakeLambdaContext(aws_request_id="bench"))
    wall = (time.perf_counter() - started) * 1000
    if result["statusCode"] != 200:
        raise RuntimeError(result["body"])
    return wall, json.loads(result["body"])


def run(handler: Any, stream: list[dict[str, Any]]) -> dict[str, Any]:
    for body in stream[:WARMUP]:
        call(handler, body)
    walls, retrievals, tokens, fills = [], [], [], []
    for body in stream:
        wall, got = call(handler, body)
        walls.append(wall)
        retrievals.append(got["retrieval_ms"])
        tokens.append(got["total_tokens"])
        fills.append(got["total_tokens"] / got["token_budget"])
    outside = [w - r for w, r in zip(walls, retrievals, strict=True)]
    return {
        "wall_ms": summary(walls),
        "retrieval_ms": summary(retrievals),
        "outside_retrieval_ms": summary(outside),
        "outside_retrieval_share": sum(outside) / sum(walls),
        "mean_tokens": statistics.fmean(tokens),
        "mean_fill": statistics.fmean(fills),
    }


def build(data: str, embedder: Any, workers: int) -> Any:
    from infra.config.settings import load_settings
    from infra.wiring.root import Container

    settings = load_settings(data_dir=data, cache="memory", context_workers=workers)
    return Container(settings, embedder=embedder)


def ingest(c: Any, items: list[dict[str, Any]]) -> float:
    from tqdm import tqdm

    started = time.perf_counter()
    for i in tqdm(range(0, len(items), BULK), desc="ingest", unit="batch"):
        report = c.indexing.bulk(TENANT, items[i : i + BULK], c.clock.now())
        assert report.indexed == len(items[i : i + BULK]) and not report.errors, report
    return time.perf_counter() - started


def line(name: str, r: dict[str, Any]) -> str:
    w, t = r["wall_ms"], r["retrieval_ms"]
    return (
        f"{name:<22} {w['p50']:>8.2f} {w['p99']:>8.2f} {t['p50']:>9.2f} {t['p99']:>9.2f} "
        f"{r['outside_retrieval_share']:>9.1%} {r['outside_retrieval_ms']['p50']:>9.2f}"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--embedder", choices=["minilm", "hashing"], default="minilm")
    parser.add_argument("--cache-dir", default=".quarry/embeddings")
    parser.add_argument("--json", help="default bench/results/assembly_latency.json (none with --smoke)")
    parser.add_argument("--smoke", action="store_true", help="50 items, 12 queries, hashing: that it runs")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.smoke:
        args.items, args.queries, args.embedder = 50, WARMUP + 2, "hashing"
    elif args.json is None:
        args.json = "bench/results/assembly_latency.json"
    model, corpus_embedder, label = _embedders(args)
    stream = requests(args.queries)
    ingest_s, results = _measure(args, model, corpus_embedder, stream)
    _print(args, label, stream, ingest_s, results)
    out = {
        "items": args.items,
        "queries": len(stream),
        "embedder": label,
        "ingest_seconds": ingest_s,
        "runs": results,
        "machine": f"{os.cpu_count()} cores",
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
    }
    if args.json:
        write_json(args.json, out)
    return 0


def _embedders(args: argparse.Namespace) -> tuple[Any, Any, str]:
    """The query embedder, the corpus embedder and how they are named in the report."""
    from infra.beir.embedding_cache import CachingEmbedder

    if args.embedder == "minilm":
        from infra.local.onnx.embedder import LocalEmbedder

        model: Any = LocalEmbedder()
        corpus_embedder: Any = CachingEmbedder(model, args.cache_dir, progress=False)
        return (
            model,
            corpus_embedder,
            "all-MiniLM-L6-v2 (corpus vectors cached on disk, queries embedded live)",
        )
    model = HashingEmbedder()
    return (
        model,
        model,
        "HASHING stand-in (deterministic bag-of-words, 384 dims) for corpus and queries — not MiniLM",
    )


def _measure(
    args: argparse.Namespace, model: Any, corpus_embedder: Any, stream: list[dict[str, Any]]
) -> tuple[float, dict[str, Any]]:
    """Index the corpus, then the assemblies with a parallel and a sequential fan-out: the ingest time and
    each run's figures."""
    from handlers.lambda_functions import api
    from infra.wiring.root import set_container

    results = {}
    with tempfile.TemporaryDirectory() as data:
        indexer = build(data, corpus_embedder, 1)
        ingest_s = ingest(indexer, corpus(args.items))
        for name, workers in (("parallel fan-out (8)", 8), ("sequential fan-out (1)", 1)):
            c = build(data, model, workers)
            set_container(c)
            results[name] = run(api.lambda_handler, stream)
            c.fanout_executor.shutdown()
        set_container(None)
    return ingest_s, results


def _print(
    args: argparse.Namespace,
    label: str,
    stream: list[dict[str, Any]],
    ingest_s: float,
    results: dict[str, Any],
) -> None:
    print(f"\n{args.items} items (5 sources) indexed in {ingest_s:.1f} s · embedder: {label}")
    print(
        f"{len(stream)} assemblies per run after {WARMUP} warm-up calls · {os.cpu_count()} CPU cores · "
        f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}"
    )
    print(
        f"{'run':<22} {'P50 ms':>8} {'P99 ms':>8} {'retr P50':>9} {'retr P99':>9} {'outside':>9} {'out P50':>9}"
    )
    for name, r in results.items():
        print(line(name, r))
    first = next(iter(results.values()))
    print(f"mean tokens packed {first['mean_tokens']:.0f} · mean budget fill {first['mean_fill']:.1%}")


if __name__ == "__main__":
    raise SystemExit(main())
