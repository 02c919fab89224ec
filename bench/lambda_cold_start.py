"""Cold and warm starts of the functions as Lambda runs them, measured from outside: the built artifact in
the Lambda Runtime Interface Emulator (deploy/lambda_local.py), DynamoDB on moto_server, the OpenSearch node,
the local-embedder layer at /opt (samconfig.toml's local parameters).

- Cold: for each function, `--starts` fresh emulators. `first answer` is the time from starting the
  emulator to the first invocation's answer (the emulator's start, the runtime's, the handler's import
  and its first run); `first Duration` is that invocation's REPORT Duration, which holds the runtime's
  start and the import because the emulator starts the runtime inside the first invocation — its own
  `Init Duration` only times handing over the init request, so it is not reported. The same for a handler
  that does nothing (`runtime`): the API's figure beyond it is what Quarry's import and first request cost.
  The API function twice: first asked `GET /health` (what its init and the resolver cost) and first asked
  a keyword search (plus the AWS SDK, the clients and the requests' DynamoDB and OpenSearch reads).
- Warm: the API function's REPORT Duration (and the round trip through the emulator) for health, keyword
  search, hybrid search and one context assembly, search cache off (QUARRY_CACHE_TTL_SECONDS=0).
- Peak RSS (VmHWM) of each function's runtime process after its runs: the emulator's "Max Memory Used"
  only repeats the configured size.
- The same hybrid searches through the emulated function and the API handler called in this interpreter
  with the function's settings and backends, alternately (what the emulator adds), and through
  `quarry serve` (one worker) twice: on the function's own backends (the OpenSearch node, DynamoDB on
  moto_server, the same indexed items: the same search on the same backends) and on the embedded backend
  (SQLite, tantivy, memory-mapped vectors) over the same synthetic items — each round trip beside the
  emulated function's.

    scripts/with-opensearch.sh .venv/bin/python bench/lambda_cold_start.py [--starts 10] [--warm 30]
        [--items 200] [--json bench/results/lambda_cold_start.json] [--env QUARRY_FEEDBACK_DOCS=0]
    ... --smoke    one start of the API function and of the runtime alone, two warm runs, 20 items
                   (tests/lambda_runtime/test_cold_start_bench.py)
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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import percentile, queries, synthetic_entities, write_json  # noqa: E402
from deploy.lambda_emulator import EmulatedFunction  # noqa: E402
from deploy.lambda_local import Deployment, deployment  # noqa: E402

EVENTS = Path(__file__).resolve().parent.parent / "events"
TENANT = "bench"  # the tenant bench/load.py's server key reads
BULK = 100  # items per POST /entities: below AsyncMinChunks (200), so indexed in the request
SETTLE_SECONDS = 60.0
SEARCH_FIRST = "ApiFunction (first request a keyword search)"
NOOP = "def handler(event, context):\n    return {}\n"


def api_event(method: str, path: str, body: Any = None) -> dict[str, Any]:
    sample = json.loads((EVENTS / "search.json").read_text())
    sample["rawPath"] = sample["requestContext"]["http"]["path"] = path
    sample["requestContext"]["http"]["method"] = method
    sample["requestContext"]["authorizer"] = {"lambda": {"tenant": TENANT, "scopes": ["read", "write"]}}
    sample["body"] = None if body is None else json.dumps(body)
    return sample


def answered(function: EmulatedFunction, event: Any) -> Any:
    answer = function.invoke(event)
    if answer.function_error:
        raise RuntimeError(
            f"{function.spec.logical_id} failed: {answer.body[:500]!r}\n{function.output()[-2000:]}"
        )
    return answer


def first_events() -> dict[str, Any]:
    """What each function's first invocation answers (its usual work, not an empty event)."""
    change = {"op": "upsert", "type": "memory", "id": "cold", "tenant_id": "acme", "version": 1,
              "entity": {"content": "a cold start writes this note"}}  # fmt: skip
    record = json.loads((EVENTS / "sqs_entity_changes.json").read_text())["Records"][0]
    return {
        "ApiFunction": api_event("GET", "/health"),
        "IndexingConsumerFunction": {"Records": [{**record, "body": json.dumps(change)}]},
        "NightlyEvalFunction": json.loads((EVENTS / "eventbridge_nightly_eval.json").read_text()),
        "PreTokenGenerationFunction": json.loads((EVENTS / "pretoken_generation.json").read_text()),
    }


def stats(values: list[float]) -> dict[str, float]:
    return {"p50": round(percentile(values, 50), 1), "max": round(max(values), 1)}


def cold(make: Any, event: Any, starts: int) -> dict[str, Any]:
    """`starts` fresh emulators of one function: first answer and first Duration; the last one's RSS."""
    answers, durations, rss = [], [], 0.0
    for _ in range(starts):
        function = make()
        began = time.perf_counter()
        function.start()
        answer = answered(function, event)
        answers.append((time.perf_counter() - began) * 1000)
        durations.append(answer.report.duration_ms if answer.report else float("nan"))
        rss = function.peak_rss_mb() or 0.0
        function.stop()
    return {
        "first_answer_ms": stats(answers),
        "first_duration_ms": stats(durations),
        "peak_rss_mb": round(rss, 1),
    }


def noop(local: Deployment, folder: Path) -> EmulatedFunction:
    """A handler that does nothing, in the same sandbox and runtime: the runtime's own start."""
    (folder / "python").mkdir(parents=True, exist_ok=True)
    (folder / "python" / "quarry_noop.py").write_text(NOOP)
    api = local.function("ApiFunction")
    return EmulatedFunction(
        replace(api.spec, handler="quarry_noop.handler"), api.task_root, folder, local.environment
    )


def seed(api: EmulatedFunction, items: list[dict[str, Any]], probe: str) -> None:
    """Index `items` through the API function; return once a keyword search sees them (the node
    refreshes about once a second)."""
    for start in range(0, len(items), BULK):
        answer = answered(api, api_event("POST", "/entities", {"items": items[start : start + BULK]}))
        if answer.payload["statusCode"] != 200:
            raise RuntimeError(f"seeding failed: {answer.payload}")
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:
        answer = answered(api, api_event("POST", "/search", {"query": probe, "strategy": "keyword"}))
        if json.loads(answer.payload["body"])["results"]:
            return
    raise RuntimeError("the seeded items never became searchable")


def warm(api: EmulatedFunction, runs: int, stream: list[str]) -> dict[str, Any]:
    """REPORT Duration and round trip of the warm API function per kind of request."""
    kinds = {
        "health": lambda i: api_event("GET", "/health"),
        "keyword search": lambda i: api_event("POST", "/search", {"query": stream[i], "strategy": "keyword"}),
        "hybrid search": lambda i: api_event("POST", "/search", {"query": stream[i], "strategy": "hybrid"}),
        "assembly": lambda i: api_event("POST", "/context/assemble", {"query": stream[i], "caller": "bench"}),
    }
    out = {}
    for kind, event in kinds.items():
        answered(api, event(0))  # the first of its kind loads what it needs
        durations, walls = [], []
        for i in range(runs):
            answer = answered(api, event(i % len(stream)))
            assert answer.payload["statusCode"] == 200, answer.payload
            durations.append(answer.report.duration_ms if answer.report else float("nan"))
            walls.append(answer.wall_ms)
        out[kind] = {"duration_ms": stats(durations), "round_trip_ms": stats(walls)}
    return out


def paired_hybrid(local: Deployment, api: EmulatedFunction, runs: int, stream: list[str]) -> dict[str, Any]:
    """The same hybrid searches, alternating query by query so all share the machine's noise: through the
    emulated function; through the API handler called in this interpreter with the function's settings and
    backends (what the emulator adds); through `quarry serve` on the function's backends (the same search
    on the same backends)."""
    from handlers.local_server.devserver import FakeLambdaContext
    from infra.wiring.root import set_container

    saved = dict(os.environ)
    os.environ.update(function_environment(local))
    set_container(None)
    emulated, in_process, served = [], [], []
    try:
        from handlers.lambda_functions import api as handler

        with served_search(function_environment(local)) as serve:
            for i in range(runs + 1):  # the first loads the model in each
                query = stream[i % len(stream)]
                event = api_event("POST", "/search", {"query": query, "strategy": "hybrid"})
                emulated.append(answered(api, event).wall_ms)
                started = time.perf_counter()
                if handler.lambda_handler(event, FakeLambdaContext())["statusCode"] != 200:
                    raise RuntimeError("the in-process search failed")
                in_process.append((time.perf_counter() - started) * 1000)
                served.append(serve(query))
    finally:
        set_container(None)
        os.environ.clear()
        os.environ.update(saved)
    return {
        "emulated_round_trip_ms": stats(emulated[1:]),
        "in_process_ms": stats(in_process[1:]),
        "serve_same_backends_round_trip_ms": stats(served[1:]),
    }


@contextmanager
def served_search(env: dict[str, str] | None = None, items: int = 0) -> Iterator[Callable[[str], float]]:
    """`quarry serve` (one worker) and a function timing one hybrid search's round trip through it (ms): on
    the embedded backend over `items` ingested here, or, given the function's `env`, on the function's own
    backends (the OpenSearch node and moto_server, the items the function indexed)."""
    from bench._common import start_server
    from bench.load import KEY, ingest
    from bench.load import start_server as start_embedded

    with tempfile.TemporaryDirectory() as tmp:
        if env is None:
            ingest(Path(tmp) / "data", items, str(Path(tmp) / "embeddings"))
            server = start_embedded(Path(tmp) / "data", 1, cache=False)
        else:
            keys = json.dumps({KEY: {"tenant": TENANT, "scopes": ["read"]}})
            server = start_server(Path(tmp) / "data", 1, {**env, "QUARRY_API_KEYS": keys})
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        headers = {"authorization": f"Bearer {KEY}", "content-type": "application/json"}

        def search(query: str) -> float:
            started = time.perf_counter()
            conn.request("POST", "/search", json.dumps({"query": query, "strategy": "hybrid"}), headers)
            response = conn.getresponse()
            response.read()
            if response.status != 200:
                raise RuntimeError(f"quarry serve answered {response.status}")
            return (time.perf_counter() - started) * 1000

        try:
            yield search
        finally:
            conn.close()
            server.stop()


def serve_hybrid(runs: int, stream: list[str], items: int) -> dict[str, float]:
    """The same hybrid searches through `quarry serve` on the embedded backend."""
    with served_search(items=items) as serve:
        walls = [serve(stream[i % len(stream)]) for i in range(runs + 1)]  # the first loads the model
    return stats(walls[1:])


def function_environment(local: Deployment) -> dict[str, str]:
    """The API function's settings and backends, for a process of this machine (quiet logs, no metrics)."""
    env = {**local.stack.function("ApiFunction").environment, **local.environment}
    return env | {"POWERTOOLS_LOG_LEVEL": "WARNING", "POWERTOOLS_METRICS_DISABLED": "true"}


def run(args: argparse.Namespace, url: str) -> dict[str, Any]:
    name = f"quarry-bench-{uuid.uuid4().hex[:6]}"
    stream = queries(max(args.warm, 2))
    env = {"QUARRY_OPENSEARCH_INDEX_PREFIX": name, "QUARRY_CACHE_TTL_SECONDS": "0"}
    env |= dict(pair.split("=", 1) for pair in args.env)
    report: dict[str, Any] = {"load_average": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count()}
    report |= {"starts": args.starts, "warm_runs": args.warm, "items": args.items}
    with (
        deployment("local_invoke", url, stack_name=name, environment=env) as local,
        tempfile.TemporaryDirectory() as tmp,
    ):
        try:
            report["cold"] = {
                fn: cold(lambda fn=fn: local.function(fn), event, args.starts)
                for fn, event in first_events().items()
                if fn in args.functions
            }
            if "ApiFunction" in args.functions:  # the first request a search: the clients, the fence read
                report["cold"][SEARCH_FIRST] = cold(
                    lambda: local.function("ApiFunction"),
                    api_event("POST", "/search", {"query": "cold start", "strategy": "keyword"}),
                    args.starts,
                )
            report["cold"]["runtime (a handler doing nothing)"] = cold(
                lambda: noop(local, Path(tmp)), {}, args.starts
            )
            api = local.function("ApiFunction")
            seed(api, synthetic_entities(args.items), stream[0])
            report["warm"] = warm(api, args.warm, stream)
            report["warm_peak_rss_mb"] = round(api.peak_rss_mb() or 0.0, 1)
            report["hybrid_paired"] = paired_hybrid(local, api, args.warm, stream)
        finally:
            _delete_index(url, name)
    report["serve_hybrid_round_trip_ms"] = serve_hybrid(args.warm, stream, items=args.items)
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    lam = report["warm"]["hybrid search"]["round_trip_ms"]["p50"]
    report["hybrid_vs_serve"] = round(lam / report["serve_hybrid_round_trip_ms"]["p50"], 2)
    paired = report["hybrid_paired"]
    report["hybrid_vs_serve_same_backends"] = round(
        paired["emulated_round_trip_ms"]["p50"] / paired["serve_same_backends_round_trip_ms"]["p50"], 2
    )
    runtime = report["cold"]["runtime (a handler doing nothing)"]["first_answer_ms"]["p50"]
    report["api_beyond_runtime_ms"] = round(
        report["cold"]["ApiFunction"]["first_answer_ms"]["p50"] - runtime, 1
    )
    if SEARCH_FIRST in report["cold"]:
        first = report["cold"][SEARCH_FIRST]["first_answer_ms"]["p50"]
        report["api_search_first_beyond_runtime_ms"] = round(first - runtime, 1)
    return report


def _delete_index(url: str, prefix: str) -> None:
    from infra.opensearch import build_client, mapping

    client = build_client(url)
    for index in client.indices.get(index=f"{prefix}-v*", ignore=404) or {}:
        client.indices.delete(index=index, ignore=404)
    client.indices.delete_index_template(name=mapping.template_name(prefix), ignore=404)


def print_report(report: dict[str, Any]) -> None:
    print(
        f"load average at the start {report['load_average']} on {report['cpus']} cpus; {report['starts']} fresh starts each"
    )
    print(
        f"{'function':38} {'first answer P50/max ms':>24} {'first Duration P50/max':>24} {'peak RSS MB':>12}"
    )
    for fn, row in report["cold"].items():
        a, d = row["first_answer_ms"], row["first_duration_ms"]
        print(
            f"{fn:38} {a['p50']:>12} / {a['max']:<9} {d['p50']:>12} / {d['max']:<9} {row['peak_rss_mb']:>12}"
        )
    print(f"API cold start beyond the runtime's own start (P50): {report['api_beyond_runtime_ms']} ms"
          + (f"; first request a search: {report['api_search_first_beyond_runtime_ms']} ms"
             if "api_search_first_beyond_runtime_ms" in report else ""))  # fmt: skip
    print(f"{'warm API function':38} {'Duration P50/max ms':>24} {'round trip P50/max':>24}")
    for kind, row in report["warm"].items():
        d, w = row["duration_ms"], row["round_trip_ms"]
        print(f"{kind:38} {d['p50']:>12} / {d['max']:<9} {w['p50']:>12} / {w['max']:<9}")
    serve, paired = report["serve_hybrid_round_trip_ms"], report["hybrid_paired"]
    emulated, inproc = paired["emulated_round_trip_ms"], paired["in_process_ms"]
    print(f"hybrid, alternating: emulated round trip P50/max {emulated['p50']} / {emulated['max']} ms, "
          f"the handler in-process on the same backends {inproc['p50']} / {inproc['max']} ms")  # fmt: skip
    same = paired["serve_same_backends_round_trip_ms"]
    print(
        f"  and quarry serve on the same backends, alternating: {same['p50']} / {same['max']} ms; "
        f"emulated / serve on the same backends: {report['hybrid_vs_serve_same_backends']}x"
    )
    print(
        f"quarry serve hybrid round trip P50/max, embedded backend: {serve['p50']} / {serve['max']} ms "
        f"(emulated warm / serve: {report['hybrid_vs_serve']}x); API peak RSS {report['warm_peak_rss_mb']} MB"
    )
    print(f"load average at the end: {report['load_average_at_end']}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--starts", type=int, default=10, help="fresh emulators per function")
    parser.add_argument("--warm", type=int, default=30, help="warm invocations per kind of request")
    parser.add_argument("--items", type=int, default=200, help="synthetic entities indexed for the warm runs")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--env", nargs="*", default=[], metavar="K=V", help="function settings, e.g. QUARRY_FEEDBACK_DOCS=0"
    )
    parser.add_argument("--functions", nargs="+", default=list(first_events()), help="whose cold starts")
    parser.add_argument("--smoke", action="store_true", help="one API cold start, two warm runs, 20 items")
    args = parser.parse_args()
    if args.smoke:
        args.starts, args.warm, args.items, args.functions = 1, 2, 20, ["ApiFunction"]
    url = os.environ.get("QUARRY_OPENSEARCH_URL", "")
    if not url:
        sys.exit("QUARRY_OPENSEARCH_URL is not set: run through scripts/with-opensearch.sh")
    report = run(args, url)
    if args.json:
        write_json(args.json, report)
    print_report(report)


if __name__ == "__main__":
    main()
