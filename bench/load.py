"""Open-loop load on the local server (`quarry serve`) over loopback: searches arrive at a fixed rate
whatever the server's speed (no coordinated omission: each latency is measured from the request's
*scheduled* time), for keyword and hybrid searches. Reports the sustained rate, P50/P99 and errors per
offered rate, and the highest offered rate *held*: served at ≥ 95% of the offered rate, with no error,
and a P99 within --p99-ms (default 100 ms: the keyword P99 target in docs/benchmarks.md).

Capacity is stated as a share of a bound measured in the same run, on the same machine, before the server
starts: for hybrid, the machine's cores each embedding one query at a time on one thread (the model alone,
CPU per query embedding); for keyword, the cores each running the keyword engine's own search at the same
depth (CPU per search, in-process). A figure from another machine carries over only as that share.

`--strategies` may name `floor`: hybrid searches by a tenant of one entity, on the same server. Each does
all a hybrid search does (the HTTP exchange, the key check, routing and validation, planning, the query
embedding, retrieval, fusion, the response) over next to no data, so no hybrid search holds more.

The corpus is ingested in-process first through POST /entities (bulks above QUARRY_ASYNC_MIN_CHUNKS become
write jobs, followed until done; passage embeddings cached on disk, `.quarry/embeddings`), then the
server runs as its own process tree (`--workers`) on that data directory. The search cache is off (TTL 0)
unless `--cache` is given, so every search does the work.

    .venv/bin/python bench/load.py [--entities 10000] [--rates 50,100,150] [--seconds 20] [--workers 2]
    .venv/bin/python bench/load.py --smoke   # 300 entities (one write job), 20/s for 1 s, one worker
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")

from bench._common import (  # noqa: E402
    HashingEmbedder,
    LocalServer,
    index_entities,
    queries,
    summary,
    synthetic_entities,
    tree_cpu_seconds,
    write_json,
)

KEY = "bench-load-key"
FLOOR_KEY = "bench-floor-key"  # tenant `floor`, of one entity: the `floor` rows
FLOOR = "floor"
SENDERS = 64  # client threads: enough that the client never throttles the offered rate on loopback
HELD_SHARE = 0.95  # a rate is held when at least this share of it is served...
HELD_P99_MS = 100.0  # ...with no error and a P99 within this (docs/benchmarks.md: the keyword P99 target)
BOUND_SAMPLES = 200  # queries timed for each bound (after BOUND_WARMUP untimed ones)
BOUND_WARMUP = 20
LIMIT = 20  # results per search, as every search here asks


def cpu_per_call(calls: Sequence[Any]) -> float:
    """Seconds of this process's CPU per call (after a warm-up): what one core spends on one."""
    for call in calls[:BOUND_WARMUP]:
        call()
    timed = calls[BOUND_WARMUP : BOUND_WARMUP + BOUND_SAMPLES]
    started = time.process_time()
    for call in timed:
        call()
    return (time.process_time() - started) / len(timed)


def bounds(data_dir: Path, stream: list[str], cores: int, embedder: Any = None) -> dict[str, dict[str, Any]]:
    """What bounds each strategy's capacity on this machine, measured in this run: a hybrid search cannot
    outrun `cores` engines each embedding one query at a time on one thread (the model alone); a keyword
    search cannot outrun the keyword engine's own search at the same depth. Searches/s = cores / CPU each."""
    from core.indexing.entity_types import EntityTypeRegistry
    from core.models import Filters, LexicalQuery
    from core.search.query import parse_query
    from infra.config.settings import load_settings
    from infra.wiring.root import Container

    if embedder is None:
        from infra.local.onnx.embedder import LocalEmbedder

        embedder = LocalEmbedder(threads=1)
    embed = cpu_per_call([lambda q=q: embedder.embed_query([q]) for q in stream])
    container = Container(load_settings(data_dir=data_dir))
    try:
        index, registry = container.index, EntityTypeRegistry()
        parsed = [parse_query(q, registry) for q in stream]
        lexical = [LexicalQuery(p.terms, p.phrases, weights=p.weights) for p in parsed]
        keyword = cpu_per_call([lambda q=q: index.lexical("bench", q, Filters(), LIMIT) for q in lexical])
    finally:
        container.close()
    return {
        "hybrid": {"bound": "query embedding", "cpu_ms_each": embed * 1000, "cores": cores, "per_s": cores / embed},
        "keyword": {"bound": "keyword engine search", "cpu_ms_each": keyword * 1000, "cores": cores,
                    "per_s": cores / keyword},
    }  # fmt: skip


def ingest(data_dir: Path, n: int, cache_dir: str, embedder: Any = None) -> tuple[float, int]:
    """Index n synthetic entities into data_dir through the handler, waiting for the write jobs
    (MiniLM embeddings cached on disk, unless another embedder is given); (seconds, write jobs)."""
    from infra.beir.embedding_cache import CachingEmbedder
    from infra.config.settings import load_settings
    from infra.wiring.root import Container, set_container

    if embedder is None:
        from infra.local.onnx.embedder import LocalEmbedder

        embedder = CachingEmbedder(LocalEmbedder(), cache_dir, progress=False)
    container = Container(load_settings(data_dir=data_dir), embedder=embedder)
    set_container(container)
    started = time.perf_counter()
    try:
        jobs = index_entities(synthetic_entities(n))
        index_entities(synthetic_entities(1), tenant=FLOOR)
    finally:
        set_container(None)
        container.close()  # its background keyword follower must not outlive it into the server's run
    return time.perf_counter() - started, jobs


def start_server(data_dir: Path, workers: int, cache: bool, query_batch: int | None = None) -> LocalServer:
    """`quarry serve` over data_dir, reading with KEY as tenant `bench` (FLOOR_KEY: `floor`); search cache
    off unless `cache`; QUARRY_QUERY_BATCH as given (else the server's default)."""
    from bench import _common

    keys = json.dumps(
        {key: {"tenant": t, "scopes": ["read"]} for key, t in ((KEY, "bench"), (FLOOR_KEY, FLOOR))}
    )
    env = {"QUARRY_API_KEYS": keys, "QUARRY_CACHE_TTL_SECONDS": "300" if cache else "0"}
    if query_batch is not None:
        env["QUARRY_QUERY_BATCH"] = str(query_batch)
    return _common.start_server(data_dir, workers, env)


def run_servers(
    servers: dict[str, LocalServer], strategies: list[str], rates: list[float], seconds: float,
    warmup_s: float, stream: list[str],
) -> list[dict[str, Any]]:  # fmt: skip
    """Each strategy at each rate on every server in turn (alternating, so they share the machine's noise);
    each row's `strategy` names the server when there is more than one."""
    results: list[dict[str, Any]] = []
    for strategy in strategies:
        for server in servers.values():
            run_rate(server.port, strategy, 10, warmup_s, stream)  # warm-up: each worker loads the model
        for rate in rates:
            for label, server in servers.items():
                row = run_rate(server.port, strategy, rate, seconds, stream, server.proc.pid)
                row["strategy"] = f"{strategy}{label}"
                results.append(row)
                lat = row["latency_ms"] or {"p50": float("nan"), "p99": float("nan")}
                cpu = row["server_cpu_ms_per_search"] or float("nan")
                print(
                    f"{row['strategy']:<8} offered {rate:>6.0f}/s  sustained {row['sustained_per_s']:>6.1f}/s  "
                    f"P50 {lat['p50']:>7.1f} ms  P99 {lat['p99']:>8.1f} ms  errors {row['errors']} "
                    f"{row['statuses']}  server CPU {cpu:.1f} ms/search (client {row['client_cpu_ms_per_request']:.1f})  "
                    f"{'held' if held(row, HELD_P99_MS) else 'not held'}  load {os.getloadavg()[0]:.2f}",
                    flush=True,
                )
    return results


class Sender:
    """Keep-alive connections, one per sender thread."""

    def __init__(self, port: int, key: str = KEY) -> None:
        self.port = port
        self.key = key
        self.local = threading.local()
        self.opened: list[http.client.HTTPConnection] = []

    def search(self, body: dict[str, Any]) -> int:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            self.opened.append(conn)
        try:
            conn.request(
                "POST",
                "/search",
                json.dumps(body),
                {"authorization": f"Bearer {self.key}", "content-type": "application/json"},
            )
            response = conn.getresponse()
            response.read()
            return response.status
        except (http.client.HTTPException, OSError):
            conn.close()
            self.local.conn = None
            return 0  # a dropped connection is an error

    def close(self) -> None:
        for conn in self.opened:
            conn.close()


def run_rate(
    port: int, strategy: str, rate: float, seconds: float, stream: list[str], server_pid: int = 0
) -> dict[str, Any]:
    """Offer `rate` searches/s for `seconds`; latency from each request's scheduled time. With the
    server's `server_pid`, also the server processes' CPU per served search (HTTP path included), and
    always this client's own per request (it shares the cores). `floor`: tenant `floor`'s hybrid searches."""
    sender, searched = (Sender(port, FLOOR_KEY), "hybrid") if strategy == FLOOR else (Sender(port), strategy)
    cpu_before, client_before = tree_cpu_seconds(server_pid) if server_pid else 0.0, time.process_time()
    total = int(rate * seconds)
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    lock = threading.Lock()
    start = time.perf_counter() + 0.2

    def fire(i: int, scheduled: float) -> None:
        status = sender.search({"query": stream[i % len(stream)], "strategy": searched, "limit": LIMIT})
        took = (time.perf_counter() - scheduled) * 1000
        with lock:
            statuses[status] = statuses.get(status, 0) + 1
            if status == 200:
                latencies.append(took)

    with ThreadPoolExecutor(SENDERS) as pool:
        for i in range(total):
            scheduled = start + i / rate
            delay = scheduled - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            pool.submit(fire, i, scheduled)
    elapsed = time.perf_counter() - start
    sender.close()
    server_cpu = tree_cpu_seconds(server_pid) - cpu_before if server_pid else 0.0
    ok, client_cpu = statuses.get(200, 0), time.process_time() - client_before
    return {
        "strategy": strategy,
        "offered_per_s": rate,
        "requests": total,
        "ok": ok,
        "errors": total - ok,
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "sustained_per_s": ok / elapsed,
        "latency_ms": summary(latencies) if latencies else None,
        "server_cpu_ms_per_search": server_cpu * 1000 / ok if server_pid and ok else None,
        "client_cpu_ms_per_request": client_cpu * 1000 / total if total else None,
    }


def capacity_row(
    strategy: str, held_rate: float, results: list[dict[str, Any]], bound: dict[str, Any] | None
) -> dict[str, Any]:
    """A strategy's capacity beside its bound: the highest rate held, what was sustained there, and the
    share of the bound it is."""
    at = [r for r in results if r["strategy"] == strategy and r["offered_per_s"] == held_rate]
    per_s = bound["per_s"] if bound else None
    return {
        "held_per_s": held_rate,
        "sustained_per_s": at[0]["sustained_per_s"] if at else 0.0,
        "bound_per_s": per_s,
        "share_of_bound": held_rate / per_s if per_s else None,
    }


def held(row: dict[str, Any], p99_ms: float) -> bool:
    """Whether a run served its offered rate: ≥ 95% of it sustained, no error, P99 within `p99_ms`."""
    latency = row["latency_ms"]
    return (
        row["errors"] == 0
        and row["sustained_per_s"] >= HELD_SHARE * row["offered_per_s"]
        and latency is not None
        and latency["p99"] <= p99_ms
    )


def _bounded_as(strategy: str) -> str:
    """The bound a row's strategy is compared with: its own; the floor's is the hybrid one."""
    name = strategy.split("@")[0]
    return "hybrid" if name == FLOOR else name


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--rates", default="50,100,150", help="offered searches/s, comma-separated")
    parser.add_argument("--seconds", type=float, default=20.0, help="per rate and strategy")
    parser.add_argument(
        "--strategies",
        default="keyword,hybrid",
        help=f"keyword, hybrid and {FLOOR} (see above), comma-separated",
    )
    parser.add_argument(
        "--workers", type=int, default=0, help="server worker processes (default: one per core)"
    )
    parser.add_argument("--cache", action="store_true", help="leave the search cache on")
    parser.add_argument(
        "--query-batch",
        default="",
        help="QUARRY_QUERY_BATCH of the server (default: its own); several, comma-separated (1,4): one server "
        "each, alternated rate by rate, rows named strategy@qbN",
    )
    parser.add_argument("--cache-dir", default=".quarry/embeddings")
    parser.add_argument("--p99-ms", type=float, default=HELD_P99_MS, help="the P99 a held rate stays within")
    parser.add_argument("--json", help="default bench/results/load.json (none with --smoke)")
    parser.add_argument(
        "--smoke", action="store_true", help="300 entities (one write job), 20/s for 1 s, one worker"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    warmup_s = 2.0
    if args.smoke:
        args.entities, args.rates, args.seconds, args.workers, warmup_s = 300, "20", 1.0, 1, 0.5
    elif args.json is None:
        args.json = "bench/results/load.json"
    bound, labels, results = _measure(args, warmup_s)
    out = _report(args, bound, labels, results)
    if args.json:
        write_json(args.json, out)
    return 0


def _measure(
    args: argparse.Namespace, warmup_s: float
) -> tuple[dict[str, dict[str, Any]], dict[int | None, str], list[dict[str, Any]]]:
    """Ingest, measure each strategy's CPU bound, then offer each rate to one server per query batch:
    the bounds, the row label of each query batch, the rows."""
    rates = [float(r) for r in args.rates.split(",")]
    stream = queries(500)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        ingest_s, jobs = ingest(
            data, args.entities, args.cache_dir, HashingEmbedder() if args.smoke else None
        )
        print(f"{args.entities} entities ingested in {ingest_s:.1f} s ({jobs} write jobs)", flush=True)
        cores = os.cpu_count() or 1
        bound = bounds(data, stream, cores, HashingEmbedder() if args.smoke else None)
        for s, b in bound.items():
            print(
                f"{s} bound: {b['bound']} {b['cpu_ms_each']:.2f} ms CPU each × {cores} cores → {b['per_s']:.0f}/s"
            )
        batches = [int(n) for n in args.query_batch.split(",")] if args.query_batch else [None]
        labels = {n: ("" if len(batches) == 1 else f"@qb{n}") for n in batches}
        servers: dict[str, LocalServer] = {}
        try:
            for n in batches:
                servers[labels[n]] = start_server(data, args.workers, args.cache, n)
            results = run_servers(servers, args.strategies.split(","), rates, args.seconds, warmup_s, stream)
        finally:
            for server in servers.values():
                server.stop()
    return bound, labels, results


def _report(
    args: argparse.Namespace,
    bound: dict[str, dict[str, Any]],
    labels: dict[int | None, str],
    results: list[dict[str, Any]],
) -> dict[str, Any]:
    """The highest rate each strategy held and its share of the bound, printed; the JSON written."""
    strategies = [f"{s}{label}" for s in args.strategies.split(",") for label in labels.values()]
    highest = {
        s: max(
            [r["offered_per_s"] for r in results if r["strategy"] == s and held(r, args.p99_ms)], default=0
        )
        for s in strategies
    }
    rule = f"sustained ≥ {HELD_SHARE:.0%} of offered, no error, P99 ≤ {args.p99_ms:.0f} ms"
    print(f"highest offered rate held ({rule}): " + ", ".join(f"{s} {v:.0f}/s" for s, v in highest.items()))
    capacity = {s: capacity_row(s, highest[s], results, bound.get(_bounded_as(s))) for s in highest}
    for s, c in capacity.items():
        if c["share_of_bound"] is not None:
            print(
                f"{s}: held {c['held_per_s']:.0f}/s = {c['share_of_bound']:.0%} of its bound ({c['bound_per_s']:.0f}/s)"
            )
    return {
        "entities": args.entities,
        "seconds_per_rate": args.seconds,
        "workers": args.workers or os.cpu_count(),
        "cache": args.cache,
        "query_batch": args.query_batch or "server default",
        "runs": [{**r, "held": held(r, args.p99_ms)} for r in results],
        "held": {"rule": rule, "highest_offered_per_s": highest},
        "bounds": bound,
        "capacity": capacity,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "machine": f"{os.cpu_count()} cores, shared with other work while measured",
    }


if __name__ == "__main__":
    raise SystemExit(main())
