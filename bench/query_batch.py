"""What query batching buys `quarry serve` at saturation (docs/benchmarks.md#query-batching): for each
QUARRY_QUERY_BATCH given, a server over the same data, driven closed-loop by `--clients` threads sending
hybrid searches back to back (so each worker's queue always holds searches: the case batching is for),
the servers taking turns round by round so they share the machine's noise. Reports per setting the searches
answered per second, the server processes' CPU per search (from /proc: what a busy machine inflates least)
and the latency P50 / P99, with the load average of each turn.

A first pass, before any server starts, measures the model alone: CPU per query embedding in calls of
1, 2, 4, 8 and 16 queries, one onnxruntime thread (as each worker of `quarry serve` on 2 cores runs it).

    .venv/bin/python bench/query_batch.py [--entities 2000] [--query-batch 1,4,8] [--workers 2]
                                          [--clients 16] [--seconds 8] [--rounds 2] [--json FILE]
    .venv/bin/python bench/query_batch.py --smoke   # 300 entities, hashing embedder, 1 s a turn
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
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")

from bench._common import HashingEmbedder, LocalServer, queries, summary, tree_cpu_seconds, write_json  # noqa: E402
from bench.load import KEY, LIMIT, ingest, start_server  # noqa: E402

MODEL_BATCHES = (1, 2, 4, 8, 16)  # queries per model call in the first pass
MODEL_QUERIES = 240  # queries embedded per batch size in the first pass (a multiple of every size)


def model_cost(stream: list[str], embedder: Any = None) -> dict[str, float]:
    """CPU ms per query embedding, by queries per call (one onnxruntime thread)."""
    if embedder is None:
        from infra.local.onnx.embedder import LocalEmbedder

        embedder = LocalEmbedder(threads=1)
    texts = stream[:MODEL_QUERIES]
    embedder.embed_query(texts[:4])  # load and warm
    out: dict[str, float] = {}
    for size in MODEL_BATCHES:
        started = time.process_time()
        for i in range(0, len(texts), size):
            embedder.embed_query(texts[i : i + size])
        out[str(size)] = round((time.process_time() - started) * 1000 / len(texts), 3)
    return out


def saturate(server: LocalServer, clients: int, seconds: float, stream: list[str]) -> dict[str, Any]:
    """`clients` threads sending hybrid searches back to back for `seconds`; rate, CPU, latency."""
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    stop = time.perf_counter() + seconds

    def client(n: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        headers = {"authorization": f"Bearer {KEY}", "content-type": "application/json"}
        i = n
        while time.perf_counter() < stop:
            body = json.dumps({"query": stream[i % len(stream)], "strategy": "hybrid", "limit": LIMIT})
            started = time.perf_counter()
            conn.request("POST", "/search", body, headers)
            response = conn.getresponse()
            response.read()
            with lock:
                if response.status == 200:
                    latencies.append((time.perf_counter() - started) * 1000)
                else:
                    errors[0] += 1
            i += clients
        conn.close()

    cpu_before, started = tree_cpu_seconds(server.proc.pid), time.perf_counter()
    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed, cpu = time.perf_counter() - started, tree_cpu_seconds(server.proc.pid) - cpu_before
    ok = len(latencies)
    return {
        "searches_per_s": round(ok / elapsed, 1),
        "server_cpu_ms_per_search": round(cpu * 1000 / ok, 2) if ok else None,
        "latency_ms": summary(latencies) if latencies else None,
        "errors": errors[0],
        "load_average": round(os.getloadavg()[0], 2),
    }


def run_turns(
    data: Path, settings: list[int], args: argparse.Namespace, stream: list[str]
) -> list[dict[str, Any]]:
    """A server per setting over `data`, warmed, then `args.rounds` rounds of a turn each at saturation."""
    turns: list[dict[str, Any]] = []
    servers: dict[int, LocalServer] = {}
    try:
        for n in settings:
            servers[n] = start_server(data, args.workers, False, n)
            saturate(servers[n], args.clients, min(2.0, args.seconds), stream)  # warm: the model loads
        for r in range(args.rounds):
            for n, server in servers.items():
                turn = {"round": r, "query_batch": n, **saturate(server, args.clients, args.seconds, stream)}
                turns.append(turn)
                lat = turn["latency_ms"] or {"p50": float("nan"), "p99": float("nan")}
                print(
                    f"round {r} query batch {n:>2}: {turn['searches_per_s']:>6.1f} searches/s  "
                    f"server CPU {turn['server_cpu_ms_per_search']} ms/search  P50 {lat['p50']:.1f} ms  "
                    f"P99 {lat['p99']:.1f} ms  errors {turn['errors']}  load {turn['load_average']}",
                    flush=True,
                )
    finally:
        for server in servers.values():
            server.stop()
    return turns


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entities", type=int, default=2000)
    parser.add_argument("--query-batch", default="1,4,8", help="QUARRY_QUERY_BATCH settings, comma-separated")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--clients", type=int, default=16, help="closed-loop client threads")
    parser.add_argument("--seconds", type=float, default=8.0, help="per turn")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cache-dir", default=".quarry/embeddings")
    parser.add_argument("--json", help="default bench/results/query_batch.json (none with --smoke)")
    parser.add_argument("--smoke", action="store_true", help="300 entities, hashing embedder, 1 s a turn")
    args = parser.parse_args(argv)
    fake = HashingEmbedder() if args.smoke else None
    if args.smoke:
        args.entities, args.seconds, args.rounds, args.workers, args.clients = 300, 1.0, 1, 1, 4
    elif args.json is None:
        args.json = "bench/results/query_batch.json"
    settings = [int(n) for n in args.query_batch.split(",")]
    stream = queries(500)
    model = model_cost(stream, fake)
    print("model alone, CPU ms per query by queries per call: " + json.dumps(model), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        ingest(data, args.entities, args.cache_dir, fake)
        turns = run_turns(data, settings, args, stream)
    out = {
        "entities": args.entities,
        "workers": args.workers,
        "clients": args.clients,
        "seconds_per_turn": args.seconds,
        "model_cpu_ms_per_query_by_batch": model,
        "turns": turns,
        "cpu": os.cpu_count(),
    }
    if args.json:
        write_json(args.json, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
