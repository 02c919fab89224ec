"""Open-loop load on the local server (`quarry serve`) over loopback: searches arrive at a fixed rate
whatever the server's speed (no coordinated omission: each latency is measured from the request's
*scheduled* time), for keyword and hybrid searches. Reports the sustained rate, P50/P99 and errors per
offered rate, and the highest offered rate held with zero errors.

The corpus is ingested in-process first (passage embeddings cached on disk, `.quarry/embeddings`), then
the server runs as its own process tree (`--workers`) on that data directory. The search cache is off
(TTL 0) unless `--cache` is given, so every search does the work.

    .venv/bin/python bench/load.py [--entities 10000] [--rates 50,100,150] [--seconds 20] [--workers 2]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")

from bench._common import queries, summary, synthetic_entities  # noqa: E402

KEY = "bench-load-key"
SENDERS = 64  # client threads: enough that the client never throttles the offered rate on loopback
BULK = 500  # POST /entities maximum
STARTUP_SECONDS = 120.0  # the server prints its URL once the socket is bound


def ingest(data_dir: Path, n: int, cache_dir: str) -> float:
    """Index n synthetic entities into data_dir through the handler (embeddings cached on disk)."""
    from bench.search_latency import call, event
    from handlers import api
    from infra.embedding_cache import CachingEmbedder
    from infra.local.embedder import LocalEmbedder
    from infra.settings import load_settings
    from infra.wiring import Container, set_container

    container = Container(load_settings(data_dir=data_dir))
    container.__dict__["embedder"] = CachingEmbedder(LocalEmbedder(), cache_dir, progress=False)
    set_container(container)
    items = synthetic_entities(n)
    started = time.perf_counter()
    for i in range(0, n, BULK):
        body = call(api.lambda_handler, event("/entities", {"items": items[i : i + BULK]}))
        assert body["indexed"] == len(items[i : i + BULK]), body
    set_container(None)
    return time.perf_counter() - started


def start_server(data_dir: Path, workers: int, cache: bool) -> tuple[subprocess.Popen[str], int]:
    env = {
        **os.environ,
        "QUARRY_API_KEYS": json.dumps({KEY: {"tenant": "bench", "scopes": ["read"]}}),
        "QUARRY_CACHE_TTL_SECONDS": "300" if cache else "0",
        "QUARRY_ACCESS_LOG": "false",  # nobody reads the server's stdout past its URL: a full pipe would block it
    }
    command = [
        sys.executable,
        "-m",
        "handlers.cli",
        "serve",
        "--port",
        "0",
        "--workers",
        str(workers),
        "--data-dir",
        str(data_dir),
    ]
    proc = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parent.parent
    )
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        line = proc.stdout.readline() if proc.stdout else ""
        found = re.search(r"http://[\d.]+:(\d+)", line)
        if found:
            return proc, int(found.group(1))
        if proc.poll() is not None:
            break
    proc.terminate()
    raise RuntimeError("the server did not start")


class Sender:
    """Keep-alive connections, one per sender thread."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.local = threading.local()

    def search(self, body: dict[str, Any]) -> int:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(
                "POST",
                "/search",
                json.dumps(body),
                {"authorization": f"Bearer {KEY}", "content-type": "application/json"},
            )
            response = conn.getresponse()
            response.read()
            return response.status
        except (http.client.HTTPException, OSError):
            conn.close()
            self.local.conn = None
            return 0  # a dropped connection is an error


def run_rate(port: int, strategy: str, rate: float, seconds: float, stream: list[str]) -> dict[str, Any]:
    """Offer `rate` searches/s for `seconds`; latency from each request's scheduled time."""
    sender = Sender(port)
    total = int(rate * seconds)
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    lock = threading.Lock()
    start = time.perf_counter() + 0.2

    def fire(i: int, scheduled: float) -> None:
        status = sender.search({"query": stream[i % len(stream)], "strategy": strategy, "limit": 20})
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
    ok = statuses.get(200, 0)
    errors = total - ok
    return {
        "strategy": strategy,
        "offered_per_s": rate,
        "requests": total,
        "ok": ok,
        "errors": errors,
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "sustained_per_s": ok / elapsed,
        "latency_ms": summary(latencies) if latencies else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--rates", default="50,100,150", help="offered searches/s, comma-separated")
    parser.add_argument("--seconds", type=float, default=20.0, help="per rate and strategy")
    parser.add_argument("--strategies", default="keyword,hybrid")
    parser.add_argument(
        "--workers", type=int, default=0, help="server worker processes (default: one per core)"
    )
    parser.add_argument("--cache", action="store_true", help="leave the search cache on")
    parser.add_argument("--cache-dir", default=".quarry/embeddings")
    parser.add_argument("--json", default="bench/results/load.json")
    args = parser.parse_args()

    rates = [float(r) for r in args.rates.split(",")]
    stream = queries(500)
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        ingest_s = ingest(data, args.entities, args.cache_dir)
        print(f"{args.entities} entities ingested in {ingest_s:.1f} s", flush=True)
        proc, port = start_server(data, args.workers, args.cache)
        try:
            for strategy in args.strategies.split(","):
                run_rate(port, strategy, 10, 2, stream)  # warm-up: each worker loads the model
                for rate in rates:
                    row = run_rate(port, strategy, rate, args.seconds, stream)
                    results.append(row)
                    lat = row["latency_ms"] or {"p50": float("nan"), "p99": float("nan")}
                    print(
                        f"{strategy:<8} offered {rate:>6.0f}/s  sustained {row['sustained_per_s']:>6.1f}/s  "
                        f"P50 {lat['p50']:>7.1f} ms  P99 {lat['p99']:>8.1f} ms  errors {row['errors']} "
                        f"{row['statuses']}",
                        flush=True,
                    )
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    held = {
        s: max([r["offered_per_s"] for r in results if r["strategy"] == s and r["errors"] == 0], default=0)
        for s in args.strategies.split(",")
    }
    print(
        "highest offered rate held with zero errors: " + ", ".join(f"{s} {v:.0f}/s" for s, v in held.items())
    )
    out = {
        "entities": args.entities,
        "seconds_per_rate": args.seconds,
        "workers": args.workers or os.cpu_count(),
        "cache": args.cache,
        "runs": results,
        "held_with_zero_errors": held,
        "machine": f"{os.cpu_count()} cores, shared with other work while measured",
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
