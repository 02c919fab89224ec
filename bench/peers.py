"""Quarry's local server beside a real OpenSearch node: keyword search over loopback HTTP.

SciFact (5,183 abstracts, its 300 test queries) goes into both:

- OpenSearch (the node at --opensearch, default http://127.0.0.1:9200): an index of its own (unique name,
  deleted at the end), `title` and `text` analysed with the `english` analyzer, one shard, and the search a
  peer user would write: `multi_match` over `title` and `text` (BM25, as BEIR's baseline), `_source: [title]`
  and a highlighted fragment of `text` (one fragment of up to 200 characters, `<mark>` tags, like Quarry's
  snippet);
- Quarry: the corpus ingested in-process through IndexingService into a temporary data directory (passage
  embeddings read from --cache-dir, so nothing is embedded twice), then `quarry serve` started on a free
  loopback port over that directory and stopped by PID at the end; `POST /search` with
  `strategy: keyword`. Its search cache is off (TTL 0, as in bench/load.py): every search does the work.

Each side is asked every query at top 10 and top 100 over one keep-alive connection, one request at a
time; the two sides alternate query by query (the order flips each query) so they share the machine's
noise. After a warm-up pass, --rounds passes are timed: P50/P99/mean per side per size, client time from
sending the request to the parsed JSON answer. nDCG@10 / Recall@100 / MRR@10 of both top-100 answers are
computed with core/search/ranking_metrics.py, so speed is not bought with ranking. Figures go to --json.

    .venv/bin/python bench/peers.py [--rounds 3] [--workers 0] [--json bench/results/peers.json]
    .venv/bin/python bench/peers.py --smoke   # tests/fixtures/beir_tiny, one round, one worker
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")

from bench._common import (  # noqa: E402
    SMOKE_DATASET,
    HashingEmbedder,
    LocalServer,
    shared_datasets,
    start_server,
    summary,
    write_json,
)

KEY = "bench-peers-key"
SIZES = (10, 100)
SNIPPET_CHARS = (
    200  # core/search/snippet.py SNIPPET_CHARS: the peer's fragment is as long as Quarry's snippet
)
BULK_DOCS = 1000  # documents per _bulk request
DEFAULT_DATASET = shared_datasets() / "scifact"
DEFAULT_CACHE = Path(".quarry/embeddings")  # as bench/load.py; `quarry eval --cache-dir` shares one


class Client:
    """One keep-alive HTTP/1.1 connection; `post` returns (milliseconds, parsed JSON)."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.headers = {"content-type": "application/json", **(headers or {})}
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else (body if isinstance(body, str) else json.dumps(body))
        self.conn.request(method, path, data, self.headers)
        response = self.conn.getresponse()
        raw = response.read()
        return response.status, json.loads(raw) if raw else None

    def post(self, path: str, body: dict[str, Any]) -> tuple[float, Any]:
        started = time.perf_counter()
        status, answer = self.request("POST", path, body)
        took = (time.perf_counter() - started) * 1000
        if status != 200:
            raise RuntimeError(f"{self.host}:{self.port}{path} answered {status}: {answer}")
        return took, answer

    def close(self) -> None:
        self.conn.close()


# --- OpenSearch ------------------------------------------------------------------------------------------

MAPPING = {
    "settings": {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"},
    "mappings": {
        "properties": {
            "title": {"type": "text", "analyzer": "english"},
            "text": {"type": "text", "analyzer": "english"},
        }
    },
}


def opensearch_body(query: str, size: int) -> dict[str, Any]:
    """What a peer user writes: BM25 over title and text as BEIR's Elasticsearch baseline queries them
    (`best_fields`, tie-breaker 0.5): the strongest of the plain forms on SciFact (nDCG@10 0.691; title^2
    best_fields 0.610, most_fields 0.670)."""
    return {
        "size": size,
        "_source": ["title"],
        "query": {"multi_match": {"query": query, "fields": ["title", "text"], "tie_breaker": 0.5}},
        "highlight": {
            "pre_tags": ["<mark>"],
            "post_tags": ["</mark>"],
            "fields": {
                "text": {
                    "fragment_size": SNIPPET_CHARS,
                    "number_of_fragments": 1,
                    "no_match_size": SNIPPET_CHARS,
                }
            },
        },
    }


def opensearch_index(client: Client, name: str, corpus: Any) -> float:
    """Create the index, bulk-load the corpus, refresh and force-merge to one segment; seconds taken."""
    started = time.perf_counter()
    status, answer = client.request("PUT", f"/{name}", MAPPING)
    if status != 200:
        raise RuntimeError(f"creating {name}: {status} {answer}")
    for start in range(0, len(corpus), BULK_DOCS):
        lines = []
        for doc in corpus[start : start + BULK_DOCS]:
            lines.append(json.dumps({"index": {"_index": name, "_id": doc.doc_id}}))
            lines.append(json.dumps({"title": doc.title, "text": doc.text}))
        client.conn.request(
            "POST", "/_bulk", "\n".join(lines) + "\n", {"content-type": "application/x-ndjson"}
        )
        response = client.conn.getresponse()
        result = json.loads(response.read())
        if response.status != 200 or result.get("errors"):
            raise RuntimeError(f"bulk into {name} failed: {str(result)[:500]}")
    client.request("PUT", f"/{name}/_settings", {"index": {"refresh_interval": "1s"}})
    client.request("POST", f"/{name}/_refresh")
    client.request("POST", f"/{name}/_forcemerge?max_num_segments=1")
    return time.perf_counter() - started


def opensearch_search(client: Client, name: str) -> Callable[[str, int], tuple[float, list[str]]]:
    def search(query: str, size: int) -> tuple[float, list[str]]:
        took, answer = client.post(f"/{name}/_search", opensearch_body(query, size))
        hits = answer["hits"]["hits"]
        assert all("title" in h["_source"] and "highlight" in h for h in hits), hits[:1]
        return took, [h["_id"] for h in hits]

    return search


# --- Quarry ----------------------------------------------------------------------------------------------


def quarry_ingest(data_dir: Path, data: Any, cache_dir: Path, smoke: bool = False) -> float:
    """The corpus through IndexingService into data_dir (the eval's write path); seconds taken. A smoke
    run embeds with hashing vectors (keyword search never reads them)."""
    from infra.beir.embedding_cache import CachingEmbedder
    from infra.beir.evaluation import ingest
    from infra.config.settings import load_settings
    from infra.local.onnx.embedder import LocalEmbedder
    from infra.timing.clock import SystemClock
    from infra.wiring.root import Container

    container = Container(load_settings(data_dir=data_dir))
    embedder = HashingEmbedder() if smoke else CachingEmbedder(LocalEmbedder(), cache_dir, progress=False)
    container.override(embedder=embedder)
    try:
        report = ingest(data, container.indexing, SystemClock().now(), progress=False)
    finally:
        container.close()  # nothing of it may write data_dir once the server has it, nor after its removal
    if report.errors or report.indexed != len(data.corpus) - len(report.empty):
        raise RuntimeError(f"ingest failed: {report.errors[:3]}")
    return report.seconds


def quarry_search(client: Client) -> Callable[[str, int], tuple[float, list[str]]]:
    def search(query: str, size: int) -> tuple[float, list[str]]:
        took, answer = client.post("/search", {"query": query, "strategy": "keyword", "limit": size})
        results = answer["results"]
        assert all("title" in r and "snippet" in r for r in results), results[:1]
        return took, [r["entity_id"] for r in results]

    return search


# --- the comparison --------------------------------------------------------------------------------------

Search = Callable[[str, int], tuple[float, list[str]]]


def alternate(sides: dict[str, Search], queries: list[str], size: int, rounds: int) -> dict[str, list[float]]:
    """Every query to every side, `rounds` times; the sides' order flips each query (shared noise)."""
    names = list(sides)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for i, query in enumerate(queries):
            order = names if (i + r) % 2 == 0 else names[::-1]
            for name in order:
                times[name].append(sides[name](query, size)[0])
    return times


def rankings(search: Search, queries: dict[str, str]) -> dict[str, list[str]]:
    """Query id → the side's top-100 ids."""
    return {qid: search(text, 100)[1] for qid, text in queries.items()}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument(
        "--opensearch", default=os.environ.get("QUARRY_OPENSEARCH_URL", "http://127.0.0.1:9200")
    )
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE, help="passage embedding cache")
    parser.add_argument("--rounds", type=int, default=3, help="timed passes over the queries per size")
    parser.add_argument("--workers", type=int, default=0, help="server worker processes (0: one per core)")
    parser.add_argument("--json", type=Path, help="default bench/results/peers.json (none with --smoke)")
    parser.add_argument(
        "--smoke", action="store_true", help="tests/fixtures/beir_tiny, one round, one worker"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.smoke:
        args.dataset, args.rounds, args.workers = SMOKE_DATASET, 1, 1
    elif args.json is None:
        args.json = ROOT / "bench" / "results" / "peers.json"

    from infra.beir.datasets import load_beir

    data = load_beir(args.dataset, "test")
    queries = [q for q in data.queries.values() if q.strip()]
    name = f"quarry-peers-{uuid.uuid4().hex[:8]}"
    node = Client(args.opensearch)
    report: dict[str, Any] = {"dataset": data.name, "queries": len(queries), "rounds": args.rounds}
    _compare(args, data, queries, node, name, report)
    report["load_average"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        write_json(args.json, report)
        print(f"wrote {args.json}")
    return 0


def _compare(
    args: argparse.Namespace, data: Any, queries: list[str], node: Client, name: str, report: dict[str, Any]
) -> None:
    """Index the corpus in OpenSearch (index `name`) and in a Quarry server, then measure both into
    `report`; the index and the server are gone afterwards."""
    from infra.beir.evaluation import EVAL_TENANT

    with tempfile.TemporaryDirectory(prefix="quarry-peers-") as tmp:
        server: LocalServer | None = None
        try:
            report["opensearch_index_seconds"] = round(opensearch_index(node, name, data.corpus), 1)
            report["quarry_ingest_seconds"] = round(
                quarry_ingest(Path(tmp), data, args.cache_dir, args.smoke), 1
            )
            keys = {KEY: {"tenant": EVAL_TENANT, "scopes": ["read"]}}
            env = {"QUARRY_API_KEYS": json.dumps(keys), "QUARRY_CACHE_TTL_SECONDS": "0"}
            server = start_server(Path(tmp), args.workers, env)
            quarry = Client(f"http://127.0.0.1:{server.port}", {"authorization": f"Bearer {KEY}"})
            sides: dict[str, Search] = {
                "opensearch": opensearch_search(node, name),
                "quarry": quarry_search(quarry),
            }
            _measure(sides, queries, data, args.rounds, report)
            quarry.close()
        finally:
            if server is not None:
                server.stop()
            node.request("DELETE", f"/{name}")
            node.close()


def _measure(
    sides: dict[str, Search], queries: list[str], data: Any, rounds: int, report: dict[str, Any]
) -> None:
    """Each side's latency per result size (alternated, after a warm-up) and its ranking quality, printed
    and put in `report`."""
    from core.search.ranking_metrics import evaluate

    for size in SIZES:  # warm-up: caches, JIT, each worker's first requests
        alternate(sides, queries, size, 1)
    report["latency_ms"] = {}
    for size in SIZES:
        times = alternate(sides, queries, size, rounds)
        report["latency_ms"][f"top{size}"] = {k: summary(v) for k, v in times.items()}
        row = "  ".join(f"{k} P50 {s['p50']:.1f} P99 {s['p99']:.1f} ms" for k, s in
                        report["latency_ms"][f"top{size}"].items())  # fmt: skip
        print(f"top {size:>3}: {row}", flush=True)
    report["quality"] = {
        side: evaluate(rankings(search, data.queries), data.qrels).as_dict() for side, search in sides.items()
    }
    for side, m in report["quality"].items():
        print(
            f"{side}: nDCG@10 {m['ndcg_at_10']:.3f}  R@100 {m['recall_at_100']:.3f}  MRR@10 {m['mrr_at_10']:.3f}"
        )


if __name__ == "__main__":
    raise SystemExit(main())
