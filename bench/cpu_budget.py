"""Where the CPU of one search goes, by layer: each search goes through the API Lambda handler in-process
(as `quarry serve`'s engine thread runs it, without the socket), one at a time, and the process's CPU time
(every thread's: onnxruntime's and BLAS's included) is summed per layer over the run:

- the query embedding (LocalEmbedder.embed_query),
- retrieval: every call to the index's retrieve_many (the first retrieval's two legs in one call, and the
  feedback's second vector search), rankings without display values (CandidateQuery.display),
- the feedback: vector pseudo-relevance feedback around its search (pseudo_relevance.feedback_search: the
  stored vectors read, the query moved), or its re-score of the candidates in hand (feedback_rescore, with
  QUARRY_FEEDBACK_MODE=rescore),
- fusion (every call of fuse), the display values read for the memories checked and the page shown
  (SearchIndex.displayed), the results and the response model (snippets, matched terms, metadata),
- the rest of the search use case (parsing, planning, cache key, paging), and the handler around it
  (Powertools' routing, validation of request and response, JSON, middleware, logging and metrics).

A measured call inside another (the feedback's search inside the feedback) is taken out of the outer
layer, so the layers add up to the handler's total. The corpus is bench/_common.py's synthetic
tasks and memories (the load bench's), embedded by the real model (cached on disk, `.quarry/embeddings`).

    .venv/bin/python bench/cpu_budget.py [--entities 2000] [--queries 300] [--strategy hybrid] [--json FILE]
    .venv/bin/python bench/cpu_budget.py --smoke   # 50 entities, 12 queries, hashing vectors
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
# One thread per library, as each worker of `quarry serve` on a 2-core machine runs (handlers/cli/main.py
# thread_budget); set before NumPy is imported. BLAS threads left to spin would be counted as CPU.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

from bench._common import HashingEmbedder, queries, write_json  # noqa: E402
from bench.search_latency import call, event, ingest  # noqa: E402

LAYERS = ("embedding", "retrieval", "feedback", "fusion", "display", "results")


class Meter:
    """CPU seconds per layer: a wrapped callable adds the process CPU it took to its layer."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = dict.fromkeys((*LAYERS, "service", "handler"), 0.0)
        self.on = False
        self._inside: list[str] = []  # the layers being measured, outermost first

    def wrap(self, layer: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn` measured into `layer`; a measured call inside another (the feedback's search inside the
        feedback) is taken out of the outer layer, so the layers add up (service and handler excepted: they
        are the totals the rest is taken from)."""

        @functools.wraps(fn)
        def measured(*args: Any, **kwargs: Any) -> Any:
            if not self.on:
                return fn(*args, **kwargs)
            outer = next((o for o in reversed(self._inside) if o in LAYERS), None)
            self._inside.append(layer)
            started = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                took = time.process_time() - started
                self._inside.pop()
                self.cpu[layer] += took
                if outer is not None and layer in LAYERS:
                    self.cpu[outer] -= took

        return measured


@contextlib.contextmanager
def instrumented(meter: Meter, embedder: Any) -> Iterator[None]:
    """Each layer wrapped where the search path calls it (the module attribute or the method it looks
    up), and put back afterwards."""
    from core.search import candidate_fusion, search_service
    from infra.local.sqlite.index import SqliteIndex

    service = search_service.SearchService
    places: list[tuple[Any, str, str]] = [
        (embedder, "embed_query", "embedding"),
        (SqliteIndex, "retrieve_many", "retrieval"),
        (SqliteIndex, "displayed", "display"),
        (candidate_fusion, "feedback_search", "feedback"),
        (candidate_fusion, "feedback_rescore", "feedback"),  # QUARRY_FEEDBACK_MODE=rescore
        (candidate_fusion, "fuse", "fusion"),
        (service, "_response", "results"),
        (service, "search", "service"),
    ]
    saved = [(owner, name, vars(owner).get(name)) for owner, name, _ in places]
    for owner, name, layer in places:
        setattr(owner, name, meter.wrap(layer, getattr(owner, name)))
    try:
        yield
    finally:
        for owner, name, original in saved:
            if original is None:
                delattr(owner, name)  # an instance's wrapper: the class's method shows through again
            else:
                setattr(owner, name, original)


def budget(meter: Meter, searches: int) -> dict[str, float]:
    """Milliseconds of CPU per search, per layer; `service other` and `handler` are what is left."""
    per = {layer: meter.cpu[layer] * 1000 / searches for layer in LAYERS}
    per["service other"] = meter.cpu["service"] * 1000 / searches - sum(per.values())
    per["handler"] = (meter.cpu["handler"] - meter.cpu["service"]) * 1000 / searches
    per["total"] = meter.cpu["handler"] * 1000 / searches
    return per


def run(entities: int, stream: Sequence[str], strategy: str, cache_dir: str, smoke: bool) -> dict[str, float]:
    from handlers.lambda_functions import api
    from infra.beir.embedding_cache import CachingEmbedder
    from infra.config.settings import load_settings
    from infra.wiring.root import Container, set_container

    model: Any = HashingEmbedder()
    if not smoke:
        from infra.local.onnx.embedder import LocalEmbedder

        model = LocalEmbedder(threads=1)  # what each worker of `quarry serve` runs on a 2-core machine
    meter = Meter()
    with tempfile.TemporaryDirectory() as data:
        settings = load_settings(data_dir=data, cache_ttl_seconds=0, cache="memory", async_min_chunks=10_000)
        container = Container(settings, embedder=CachingEmbedder(model, cache_dir, progress=False))
        set_container(container)
        try:
            ingest(api.lambda_handler, entities)
            container.override(embedder=model)  # queries embedded by the model itself, every time
            handler = meter.wrap("handler", api.lambda_handler)
            with instrumented(meter, model):
                for q in stream[:10]:  # warm-up: the model, the vector matrix, the keyword index
                    call(handler, event("/search", {"query": q, "strategy": strategy, "limit": 20}))
                meter.on = True
                for q in stream:
                    call(handler, event("/search", {"query": q, "strategy": strategy, "limit": 20}))
        finally:
            set_container(None)
            container.close()
    return budget(meter, len(stream))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entities", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--strategy", choices=["hybrid", "keyword", "semantic", "auto"], default="hybrid")
    parser.add_argument("--cache-dir", default=".quarry/embeddings")
    parser.add_argument("--json", help="default bench/results/cpu_budget_<strategy>.json (none with --smoke)")
    parser.add_argument("--smoke", action="store_true", help="50 entities, 12 queries, hashing vectors")
    args = parser.parse_args(argv)
    if args.smoke:
        args.entities, args.queries = 50, 12
    elif args.json is None:
        args.json = f"bench/results/cpu_budget_{args.strategy}.json"
    per = run(args.entities, queries(args.queries), args.strategy, args.cache_dir, args.smoke)
    print(
        f"CPU per {args.strategy} search ({args.entities} entities, {args.queries} queries, one at a time):"
    )
    for layer, ms in per.items():
        print(f"  {layer:<14} {ms:>7.2f} ms  {ms / per['total']:>5.0%}")
    out = {
        "strategy": args.strategy,
        "entities": args.entities,
        "queries": args.queries,
        "cpu_ms_per_search": per,
        "embedder": "HASHING (smoke)" if args.smoke else "all-MiniLM-L6-v2, 1 thread",
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "cpu": _cpu_model(),
    }
    if args.json:
        write_json(args.json, out)
    return 0


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


if __name__ == "__main__":
    raise SystemExit(main())
