"""Where a search's time goes on the OpenSearch path, phase by phase, through the HTTP API Lambda handler.

Synthetic entities (bench/_common.py) go into a fresh index at QUARRY_OPENSEARCH_URL through `POST
/entities`; then every strategy is searched through the handler with the search cache off, and each
search's wall time is split into:

- `embed`: the query embedding (the model's own forward pass);
- `node`: the time the node says it spent (`took` of each answer: query and fetch phases on the shards);
- `wire`: each HTTP exchange minus the node's `took` (sockets, the node's HTTP and JSON layers, and the
  coordinating node's work outside `took`), measured around opensearch-py's Connection;
- `client`: opensearch-py's own work around each exchange (serialising the body, parsing the answer),
  the Transport minus the Connection;
- `quarry`: everything else in the handler (parsing, fusion, snippets, the response model, Powertools).

It also counts round trips per search and the bytes sent and received. The same query sent directly to
the node (`--direct`: the adapter's own lexical body, one `_search` on a keep-alive connection) gives the
node's floor for the keyword goal. Last, a hybrid search's first `_msearch` is sent directly with its
vector leg whole and for its ranking only (what it sends with feedback on), alternating query by query.

    QUARRY_OPENSEARCH_URL=http://127.0.0.1:9200 .venv/bin/python bench/opensearch_profile.py \
        [--entities 10000] [--queries 200] [--reuse PREFIX] [--settle] [--json bench/results/opensearch_profile.json]

A fresh index has many segments, and the node's time grows with them; `--settle` force-merges it to one
first, as an index no one writes to ends up after background merging (with `--reuse`, the second run of a
pair measures the same index settled).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")

from bench._common import percentile, queries, write_json  # noqa: E402
from bench.search_latency import call, event, ingest  # noqa: E402

STRATEGIES = ("keyword", "semantic", "hybrid")
PHASES = ("embed", "node", "wire", "client", "quarry")
LIMIT = 20  # results per search, as bench/search_latency.py
WARMUP = 10


class Recorder:
    """Per-search accumulators, filled by the wrappers below and read after each search."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.ms: dict[str, float] = defaultdict(float)
        self.trips: list[tuple[str, float, float]] = []  # (request, HTTP ms, node `took` ms) in order
        self.sent = self.received = 0
        self.bodies: list[Any] = []
        self.raw: list[tuple[str, Any, Any]] = []  # (url, query parameters, body bytes) as sent


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def instrument(client: Any, embedder: Any, rec: Recorder) -> None:
    """Wrap the client's Transport, each Connection and the embedder so every search fills `rec`."""
    transport = client.transport
    inner_transport = transport.perform_request

    def transport_call(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        before = rec.ms["http"]
        try:
            answer = inner_transport(method, url, *args, **kwargs)
        finally:
            rec.ms["client"] += _ms(start) - (rec.ms["http"] - before)
        took = float(answer.get("took") or 0.0) if isinstance(answer, dict) else 0.0
        rec.ms["node"] += took
        rec.ms["wire"] -= took
        path = url.rsplit("/", 1)[-1] if "/_" in url else url
        rec.trips.append((f"{method} {path}", rec.ms["http"] - before, took))
        rec.bodies.append((url, kwargs.get("body")))
        return answer

    transport.perform_request = transport_call
    for connection in transport.connection_pool.connections:
        inner = connection.perform_request

        def http_call(*args: Any, _inner: Callable[..., Any] = inner, **kwargs: Any) -> Any:
            start = time.perf_counter()
            status, headers, data = _inner(*args, **kwargs)
            spent = _ms(start)
            rec.ms["http"] += spent
            rec.ms["wire"] += spent
            body = args[3] if len(args) > 3 else kwargs.get("body")
            params = args[2] if len(args) > 2 else kwargs.get("params")
            rec.raw.append((str(args[1] if len(args) > 1 else kwargs.get("url")), params, body))
            rec.sent += len(body or b"")
            rec.received += len(data or b"")
            return status, headers, data

        connection.perform_request = http_call
    inner_embed = embedder.embed_query

    def embed_query(texts: Any) -> Any:
        start = time.perf_counter()
        try:
            return inner_embed(texts)
        finally:
            rec.ms["embed"] += _ms(start)

    embedder.embed_query = embed_query


def profile(
    handler: Any, rec: Recorder, strategy: str, stream: list[str], direct: Any = None
) -> dict[str, Any]:
    """Run the stream through the handler; per phase P50 and mean ms, this process's CPU ms per search
    (`cpu`: the embedding, opensearch-py and Quarry; the node is another process), round trips, bytes.
    With `direct` (a second client), each search's first request is also sent straight to the node right
    after it: its first query through opensearch-py (`direct_*`), and its exact bytes over a bare
    keep-alive HTTP connection (`bare_*`: no client library, the answer not parsed beyond `took`)."""
    bare = _bare_connection() if direct is not None else None
    for q in stream[:WARMUP]:
        call(handler, event("/search", {"query": q, "strategy": strategy, "limit": LIMIT}))
    rows: list[dict[str, float]] = []
    trips: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for q in stream:
        rec.reset()
        cpu, start = time.process_time(), time.perf_counter()
        call(handler, event("/search", {"query": q, "strategy": strategy, "limit": LIMIT}))
        total, cpu = _ms(start), (time.process_time() - cpu) * 1000
        row = {p: rec.ms[p] for p in PHASES if p != "quarry"}
        row["quarry"] = total - sum(row.values())
        row.update(total=total, cpu=cpu, trips=len(rec.trips), sent=rec.sent, received=rec.received)
        if direct is not None and bare is not None:
            row["direct_wall"], row["direct_took"] = replay(direct, rec.bodies[0][1])
            row["bare_wall"], row["bare_took"] = bare_exchange(bare, *rec.raw[0])
        rows.append(row)
        for n, (name, http, took) in enumerate(rec.trips, 1):
            trips[f"{n}. {name}"].append((http, took))
    out: dict[str, Any] = {}
    for name in rows[0]:
        values = [r[name] for r in rows]
        out[name] = {
            "p50": percentile(values, 50),
            "p99": percentile(values, 99),
            "mean": sum(values) / len(values),
        }
    out["requests"] = {
        name: {
            "share": round(len(got) / len(stream), 2),
            "http_p50": percentile([h for h, _ in got], 50),
            "took_p50": percentile([t for _, t in got], 50),
        }
        for name, got in sorted(trips.items())
    }
    return out


def replay(client: Any, lines: Any) -> tuple[float, float]:
    """The first search of a recorded `_msearch` sent alone to the node as `_search` (wall ms, took ms)."""
    if isinstance(lines, (str, bytes)):  # the Transport sees `_msearch` bodies as NDJSON already
        lines = [
            json.loads(line) for line in (lines.decode() if isinstance(lines, bytes) else lines).splitlines()
        ]
    header, body = lines[0], lines[1]
    params = {k: str(v).lower() if isinstance(v, bool) else v for k, v in header.items() if k != "index"}
    start = time.perf_counter()
    answer = client.search(index=header["index"], body=body, params=params)
    return _ms(start), float(answer["took"])


def _bare_connection() -> Any:
    """A keep-alive HTTP connection to the node of QUARRY_OPENSEARCH_URL (no auth: the local node)."""
    import http.client
    from urllib.parse import urlsplit

    url = urlsplit(os.environ["QUARRY_OPENSEARCH_URL"].split(",")[0])
    return http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port or 9200, timeout=30)


def bare_exchange(connection: Any, url: str, params: Any, body: Any) -> tuple[float, float]:
    """A request's exact bytes sent again over `connection` (wall ms, the node's `took` ms): the floor any
    client reaches on this machine, the node's HTTP layer and its JSON included."""
    from urllib.parse import urlencode

    query = urlencode({k: v.decode() if isinstance(v, bytes) else v for k, v in (params or {}).items()})
    data = body if isinstance(body, bytes) else (body or "").encode()
    headers = {"content-type": "application/x-ndjson" if url.endswith("_msearch") else "application/json"}
    start = time.perf_counter()
    connection.request("POST", f"{url}?{query}" if query else url, body=data, headers=headers)
    answer = connection.getresponse().read()
    wall = _ms(start)
    return wall, float(json.loads(answer).get("took") or 0.0)


def first_legs(client: Any, container: Any, stream: list[str]) -> dict[str, dict[str, float]]:
    """A hybrid search's first `_msearch` (both legs, k = 100) sent directly, its vector leg whole (with the
    inner hit naming each hit's best chunk) or for its ranking only (what feedback needs), alternating query
    by query: the node's `took` and the wall time, P50 ms."""
    from core.models import Filters, LexicalQuery
    from core.search.query import parse_query
    from infra.opensearch import query_bodies

    index = container.index
    tenant, depth = "bench", 100
    filters = Filters(entity_types=container.registry.names())  # what a search without filters asks
    got: dict[str, tuple[list[float], list[float]]] = {"whole": ([], []), "ranking": ([], [])}
    for n, q in enumerate(stream):
        parsed = parse_query(q, container.registry)
        lexical = query_bodies.lexical_body(
            tenant, LexicalQuery(parsed.terms, parsed.phrases, weights=parsed.weights), filters, depth
        )
        vector = container.embedder.embed_query([parsed.text])[0]
        searches = {
            "whole": [lexical, query_bodies.vector_body(tenant, vector, filters, depth)],
            "ranking": [lexical, query_bodies.vector_ranking_body(tenant, vector, filters, depth)],
        }
        for kind in ("whole", "ranking") if n % 2 else ("ranking", "whole"):
            lines = query_bodies.msearch_lines(index.alias, searches[kind], tenant)
            start = time.perf_counter()
            answer = client.msearch(body=lines, filter_path=query_bodies.MSEARCH_FILTER_PATH)
            got[kind][1].append(_ms(start))
            got[kind][0].append(float(answer["took"]))
    return {
        kind: {"took_p50": percentile(took, 50), "wall_p50": percentile(wall, 50)}
        for kind, (took, wall) in got.items()
    }


@contextmanager
def opensearch_container(args: argparse.Namespace) -> Iterator[Any]:
    """A Container over a fresh OpenSearch index (dropped afterwards), installed for the handler."""
    from infra.beir.embedding_cache import CachingEmbedder
    from infra.config.settings import load_settings
    from infra.local.onnx.embedder import LocalEmbedder
    from infra.wiring.root import Container, set_container

    model = LocalEmbedder()
    prefix = args.reuse or f"quarry-profile-{random.randrange(16**8):08x}"
    backend = {"index": "opensearch", "opensearch_index_prefix": prefix}
    with tempfile.TemporaryDirectory() as data:
        container = Container(
            load_settings(
                data_dir=data, cache_ttl_seconds=0, cache="memory", async_min_chunks=10_000, **backend
            )
        )
        container.override(embedder=CachingEmbedder(model, args.cache_dir, progress=False))
        set_container(container)
        index: Any = container.index  # the OpenSearch adapter, not just the port
        try:
            if not args.reuse or not index.client.indices.exists_alias(name=index.alias):
                ingest(
                    __import__("handlers.lambda_functions.api", fromlist=["api"]).lambda_handler,
                    args.entities,
                )
            index.client.indices.refresh(index=index.alias)
            if args.settle:  # as background merging leaves an index no one writes to: one segment
                index.client.indices.forcemerge(index=index.alias, max_num_segments=1, request_timeout=600)
            container.override(embedder=model)  # the search and indexing services rebuild around it
            yield container
        finally:
            set_container(None)
            if not args.reuse:
                index.drop()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--cache-dir", default=".quarry/embeddings")
    parser.add_argument("--json", default="bench/results/opensearch_profile.json")
    parser.add_argument(
        "--reuse",
        default=None,
        help="an index prefix kept after the run (filled first when missing): paired runs share one index",
    )
    parser.add_argument(
        "--settle",
        action="store_true",
        help="force-merge the index to one segment before measuring (a settled index, not a fresh one)",
    )
    parser.add_argument("--smoke", action="store_true", help="40 entities, 5 queries per strategy")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.smoke:
        args.entities, args.queries = 40, 5
    if not os.environ.get("QUARRY_OPENSEARCH_URL"):
        raise SystemExit("needs QUARRY_OPENSEARCH_URL (make opensearch-up prints it)")
    from handlers.lambda_functions import api

    rec = Recorder()
    stream = queries(args.queries)
    with opensearch_container(args) as container:
        from infra.opensearch import build_client

        direct = build_client(os.environ["QUARRY_OPENSEARCH_URL"])
        instrument(container.index.client, container.embedder, rec)
        results = {
            s: profile(api.lambda_handler, rec, s, stream, direct if s == "keyword" else None)
            for s in STRATEGIES
        }
        legs = first_legs(direct, container, stream)
    _print(args, results, legs)
    out = {
        "first_msearch": legs,
        "entities": args.entities,
        "queries": args.queries,
        "settled": args.settle,
        "load_average": os.getloadavg(),
        "profile_ms": results,
    }
    write_json(args.json, out)
    return 0


def _print(args: argparse.Namespace, results: dict[str, Any], legs: dict[str, dict[str, float]]) -> None:
    """Each strategy's phases and requests, the keyword query sent directly, a hybrid search's first
    _msearch's legs."""
    print(f"\n{args.entities} entities, {args.queries} queries per strategy, P50 ms (mean)")
    columns = (*PHASES, "total", "cpu")
    print(f"{'strategy':<10}" + "".join(f"{p:>15}" for p in columns) + "   trips  KB in")
    for s in STRATEGIES:
        r = results[s]
        cells = "".join(f"{r[p]['p50']:>7.2f} ({r[p]['mean']:>5.1f})" for p in columns)
        print(f"{s:<10}{cells}   {r['trips']['mean']:>5.1f}  {r['received']['mean'] / 1024:>5.0f}")
        for name, got in r["requests"].items():
            print(
                f"{'':<10}{name:<28} in {got['share']:.0%} of searches: HTTP P50 {got['http_p50']:.2f} ms, took {got['took_p50']:.0f}"
            )
    d = results["keyword"]
    print(
        f"keyword's query sent directly, right after each search: wall P50 {d['direct_wall']['p50']:.2f} "
        f"P99 {d['direct_wall']['p99']:.2f}, took P50 {d['direct_took']['p50']:.1f} "
        f"(through the handler: P50 {d['total']['p50']:.2f})"
    )
    print(
        f"its exact bytes over a bare HTTP connection: wall P50 {d['bare_wall']['p50']:.2f}, took P50 "
        f"{d['bare_took']['p50']:.1f}: the node answers {d['bare_wall']['p50'] - d['bare_took']['p50']:.2f} ms "
        "after its `took` to a client that does nothing (wall − took, P50s)"
    )
    print(
        "a hybrid search's first _msearch sent directly, its vector leg whole / for its ranking only "
        "(alternating): took P50 "
        + " / ".join(f"{legs[k]['took_p50']:.1f}" for k in ("whole", "ranking"))
        + " ms, wall P50 "
        + " / ".join(f"{legs[k]['wall_p50']:.2f}" for k in ("whole", "ranking"))
        + " ms"
    )


if __name__ == "__main__":
    raise SystemExit(main())
