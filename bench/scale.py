"""The embedded backend as the corpus grows: 10k, 100k, 1M chunks through the SearchIndex port.

One chunk per entity, 60 words drawn from SciFact's corpus word frequencies, 384-dim unit vectors drawn
around 2,000 cluster centres (random vectors have no neighbourhoods; real embeddings do), SciFact's
queries for keyword search (narrow) and its most frequent words alone (broad), top 100. Reports ingest
rate, resident memory, vector P50/P99 exact and approximate, recall@100 of approximate vs exact, the
NumPy bound on the same vectors, a type filter, keyword P50/P99, hybrid P50 through SearchService (query
embedding excluded: a fixed vector per query), and the first search after a write.

    make bench-scale, or: .venv/bin/python bench/scale.py --sizes 10000 100000 [--work /tmp/quarry-scale] [--json FILE]
    .venv/bin/python bench/scale.py --smoke   # 300 chunks, 5 queries, tests/fixtures/beir_tiny's words, a temp dir

Indexes are kept under --work per size and reused when already built (delete them to re-ingest).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import SMOKE_DATASET, summary, write_json  # noqa: E402
from bench._scale_corpus import DIM, SCIFACT, Space, query_texts, records, vocabulary  # noqa: E402
from core.indexing.entity_types import EntityTypeRegistry  # noqa: E402
from core.models import Filters, LexicalQuery, Vector  # noqa: E402
from core.ports import Embedder  # noqa: E402
from core.search.query import parse_query  # noqa: E402
from infra.local.keywords.tantivy_query import STOP_WORDS  # noqa: E402
from infra.local.sqlite.vector_search import ANN_PROBE  # noqa: E402

STOP_WORD_QUERIES = ("the", "their", "there", "these", "to be or not to be", "this is it", "of the", "and")
K = 100
BATCH = 1000
PROBES = (8, 24, 64)
ANN_MIN_DEFAULT = 200_000  # QUARRY_ANN_MIN_CHUNKS' default
ANN_TRAIN_SECONDS = 3600.0  # a deadline for the background training (1M chunks take minutes here)
SMOKE_CHUNKS = 300


def rss_mb() -> dict[str, float]:
    out: dict[str, float] = {}
    for name, path in (("rss", "/proc/self/status"), ("pss", "/proc/self/smaps_rollup")):
        for line in Path(path).read_text().splitlines():
            key = "VmRSS:" if name == "rss" else "Pss:"
            if line.startswith(key):
                out[f"{name}_mb"] = round(int(line.split()[1]) / 1024, 1)
    return out


def stage(name: str) -> None:
    print(f"  {time.strftime('%H:%M:%S')} {name}", file=sys.stderr, flush=True)


def timed(fn: Any, items: list[Any]) -> list[float]:
    out = []
    for item in items:
        t = time.perf_counter()
        fn(item)
        out.append((time.perf_counter() - t) * 1000)
    return out


WORKER = """
import sys, json, numpy as np
from pathlib import Path
from core.models import Filters
from infra.local.sqlite.index import SqliteIndex, build_sqlite_index
index = build_sqlite_index(sys.argv[1])
for q in np.load(sys.argv[2]):
    index.vector("bench", q, Filters(), 100, exact=True)
for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
    if line.startswith(("Pss:", "Rss:")):
        print(line.split()[0], int(line.split()[1]) / 1024)
"""


def workers_pss(path: str, queries: np.ndarray) -> dict[str, float]:
    """Two processes over the same index, as the server's workers: their summed proportional memory."""
    qfile = Path(path + ".queries.npy")
    np.save(qfile, queries)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, path, str(qfile)], stdout=subprocess.PIPE, text=True, env=env
        )
        for _ in range(2)
    ]
    out: dict[str, float] = {"pss_mb": 0.0, "rss_mb": 0.0}
    for proc in procs:
        text, _ = proc.communicate(timeout=3600)
        for line in text.splitlines():
            key, value = line.split()
            out[f"{key[:-1].lower()}_mb"] += round(float(value), 1)
    qfile.unlink()
    return out


def build(index: Any, n: int, words: list[str], p: np.ndarray, space: Space) -> dict[str, float]:
    have = len(index.lexical("bench", LexicalQuery(("the",)), Filters(), 1))
    if have:
        return {}
    started, pure = time.perf_counter(), 0.0
    for start in range(0, n, BATCH):
        batch = records(start, min(BATCH, n - start), words, p, space)
        t = time.perf_counter()
        index.upsert_many(batch)
        pure += time.perf_counter() - t
        if start and start % (BATCH * 100) == 0:
            print(f"  {start} ingested, {start / pure:.0f}/s", file=sys.stderr, flush=True)
    return {"ingest_per_s": round(n / pure, 1), "ingest_wall_s": round(time.perf_counter() - started, 1)}


def lexical_queries(
    registry: EntityTypeRegistry, words: list[str], texts: list[str]
) -> dict[str, list[LexicalQuery]]:
    """Narrow (the dataset's queries), broad (one frequent word) and stop-word-only keyword queries."""
    narrow = []
    for text in texts[:300]:
        parsed = parse_query(text, registry)
        narrow.append(LexicalQuery(tuple(parsed.terms), tuple(parsed.phrases)))
    # Frequent content words (not Lucene's English stop words, which the tantivy index leaves out): each
    # matches a large share of the corpus. Queries of stop words alone are measured apart: the tantivy
    # engine hands them to FTS5, which scores every match.
    common = [w for w in words[:400] if len(w) > 4 and w not in STOP_WORDS][:100]
    broad = [LexicalQuery((w,)) for w in common]
    stop_only = [LexicalQuery(tuple(t.split())) for t in STOP_WORD_QUERIES] * 5  # 40 samples
    return {"narrow": [q for q in narrow if not q.empty], "broad": broad, "stop_words_only": stop_only}


def measure_keyword(
    index: Any, n: int, space: Space, words: list[str], texts: list[str], queries: int
) -> dict[str, Any]:
    """Keyword P50/P99 (narrow and broad, with a type filter too), hybrid P50 through SearchService, and
    the first keyword search after a write, on whichever keyword engine the index runs."""
    res: dict[str, Any] = {"keyword_engine": "tantivy" if index.store.keywords is not None else "fts5"}
    qv = space.vectors(99, queries)
    stage("keyword")
    registry = EntityTypeRegistry()
    tasks = Filters(entity_types=("task",))
    for name, qs in lexical_queries(registry, words, texts).items():
        res[f"keyword_{name}"] = summary(
            timed(lambda q: index.lexical("bench", q, Filters(), K), qs[:queries])
        )
        res[f"keyword_{name}_type_filter"] = summary(
            timed(lambda q: index.lexical("bench", q, tasks, K), qs[:queries])
        )
    res |= _hybrid(index, n, qv, texts[:queries], registry)
    res |= _first_keyword_search_after_write(index, n, space, words)
    return res


class _FixedEmbedder(Embedder):
    """The given vector of each query text (the fallback for any other)."""

    dimension, model_id = DIM, "fixed"

    def __init__(self, vectors: dict[str, Any], fallback: Any) -> None:
        self._vectors, self._fallback = vectors, fallback

    def embed(self, xs: Sequence[str]) -> list[Vector]:
        return [self._vectors.get(x, self._fallback) for x in xs]

    def embed_query(self, xs: Sequence[str]) -> list[Vector]:
        return self.embed(xs)


class _NoCache:
    def get(self, key: str, now: float) -> None:
        return None

    def set(self, *args: Any) -> None: ...

    def incr(self, key: str) -> int:
        return 0

    def counter(self, key: str) -> int:
        return 0


def _hybrid(index: Any, n: int, qv: Any, texts: list[str], registry: EntityTypeRegistry) -> dict[str, Any]:
    """Hybrid P50/P99 through SearchService (top 20), the query vectors given; at a size a default
    server runs the approximate index at, once it is trained (and how long that took)."""
    from core.search.search_api import SearchRequest
    from core.search.search_service import SearchService
    from infra.timing.clock import SystemClock

    res: dict[str, Any] = {}
    if n >= ANN_MIN_DEFAULT:  # hybrid as a server that has been up a while runs it: approximate index trained
        t = time.perf_counter()
        index.vector("bench", qv[0], Filters(), K)  # opens the tenant's vectors; training starts behind it
        res["ann_train_s"] = trained(index, t)
        index.vector_search.ann_probe = ANN_PROBE
    embedder = _FixedEmbedder(dict(zip(texts, qv, strict=False)), qv[0])
    service = SearchService(index, embedder, _NoCache(), registry, SystemClock())  # type: ignore[arg-type]
    hybrid = lambda t: service.search("bench", SearchRequest(query=t, strategy="hybrid", limit=20))  # noqa: E731
    stage("hybrid")
    hybrid(texts[0])  # the vector store open (or caught up): not a search
    res["hybrid_service_top20"] = summary(timed(hybrid, texts))
    return res


def _first_keyword_search_after_write(index: Any, n: int, space: Space, words: list[str]) -> dict[str, Any]:
    """A fresh entity's upsert, then a keyword search that must find it at once (and not after its delete)."""
    stage("first keyword search after a write")
    after: list[float] = []
    writes: list[float] = []
    for i in range(20):
        rec = records(n + 20_000_000 + i, 1, words, np.full(len(words), 1 / len(words)), space)[0]
        rec = dataclasses.replace(rec, version=time.time_ns(), title=f"zqx{i} " + rec.title)
        rec = dataclasses.replace(
            rec, chunks=(dataclasses.replace(rec.chunks[0], tiers=(rec.title, "", rec.chunks[0].text)),)
        )
        t = time.perf_counter()
        index.upsert(rec)  # acknowledged once SQLite commits; the keyword index follows before returning
        writes.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        found = index.lexical("bench", LexicalQuery((f"zqx{i}",)), Filters(), K)
        after.append((time.perf_counter() - t) * 1000)
        assert found and found[0].key == rec.key, "a fresh write must be found at once"
        index.delete("bench", rec.key, None)
        assert not index.lexical("bench", LexicalQuery((f"zqx{i}",)), Filters(), K), (
            "a delete is never served"
        )
    return {"first_keyword_search_after_write": summary(after), "one_entity_upsert": summary(writes)}


def trained(index: Any, started: float) -> float:
    """Wait for the approximate index trained in the background; seconds since `started`."""
    deadline = time.monotonic() + ANN_TRAIN_SECONDS
    while index.vector_search.tenant_vectors("bench").ivf is None:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the approximate index was not trained within {ANN_TRAIN_SECONDS:.0f} s")
        time.sleep(0.5)
    return round(time.perf_counter() - started, 1)


def measure(
    index: Any, n: int, space: Space, words: list[str], texts: list[str], queries: int
) -> dict[str, Any]:
    """Vector search exact and approximate, two workers' memory, the keyword measures, the first vector
    search after a write, and the process's memory."""
    res: dict[str, Any] = {}
    qv = space.vectors(99, queries)
    exact = _exact(index, qv, res)
    stage("two workers")
    res["two_workers"] = workers_pss(index.store.path, qv[:20])
    res["ann_train_s"] = trained(index, time.perf_counter())  # training runs in the background
    stage("approximate")
    for probe in PROBES:
        index.vector_search.ann_probe = probe
        approx = [index.vector("bench", q, Filters(), K) for q in qv]
        hits = [
            len({c.key for c in a} & {c.key for c in e}) / max(1, len(e))
            for a, e in zip(approx, exact, strict=True)
        ]
        res[f"vector_approx_probe{probe}"] = summary(
            timed(lambda q: index.vector("bench", q, Filters(), K), list(qv))
        )
        res[f"vector_approx_probe{probe}"]["recall_at_100"] = round(float(np.mean(hits)), 4)
    # what a default server would do
    index.vector_search.ann_probe = ANN_PROBE if n >= ANN_MIN_DEFAULT else 0
    res |= measure_keyword(index, n, space, words, texts, queries)
    res |= _first_vector_search_after_write(index, n, space, words)
    res["memory"] = rss_mb()
    return res


def _exact(index: Any, qv: Any, res: dict[str, Any]) -> list[Any]:
    """Exact vector search (plain, against the NumPy bound, with a type filter) into `res`: each query's
    exact hits, the truth the approximate index is scored against."""
    t = time.perf_counter()
    index.vector("bench", qv[0], Filters(), K, exact=True)  # the store built or caught up: not a search
    res["vector_store_open_s"] = round(time.perf_counter() - t, 2)
    exact = [index.vector("bench", q, Filters(), K, exact=True) for q in qv]
    stage("vector: exact, NumPy bound, type filter")
    res["vector_exact"] = summary(
        timed(lambda q: index.vector("bench", q, Filters(), K, exact=True), list(qv))
    )
    snap = index.vector_search.tenant_vectors("bench")
    matrix = snap.matrix  # the same pages the index scores (mapped, resident after the first search)
    res["numpy_bound"] = summary(timed(lambda q: np.argpartition(-(matrix @ q), K)[:K], list(qv)))
    tasks = Filters(entity_types=("task",))
    res["vector_type_filter"] = summary(
        timed(lambda q: index.vector("bench", q, tasks, K, exact=True), list(qv))
    )
    res["raw_vector_mb"] = round(matrix.nbytes / 2**20, 1)
    return exact


def _first_vector_search_after_write(index: Any, n: int, space: Space, words: list[str]) -> dict[str, Any]:
    """A fresh entity's vector search right after its write, beside searches for unseen queries."""
    stage("first search after a write")
    after: list[float] = []
    # Compared with searches measured in turn (same machine load) for queries never searched before, as
    # the written vector is: both read SQLite pages no earlier search touched.
    warm: list[float] = []
    fresh = space.vectors(12345, 20)
    exact = index.vector_search.ann_probe == 0
    for i in range(20):
        t = time.perf_counter()
        index.vector("bench", fresh[i], Filters(), K, exact=exact)
        warm.append((time.perf_counter() - t) * 1000)
        rec = records(n + 10_000_000 + i, 1, words, np.full(len(words), 1 / len(words)), space)[0]
        rec = dataclasses.replace(rec, version=time.time_ns())  # the index may be reused: always newer
        index.upsert(rec)
        t = time.perf_counter()
        found = index.vector("bench", rec.chunks[0].embedding, Filters(), K, exact=exact)
        after.append((time.perf_counter() - t) * 1000)
        assert found[0].key == rec.key, "a fresh write must be found at once"
        index.delete("bench", rec.key, None)
    return {
        "unseen_query_vector_search_beside_writes": summary(warm),
        "first_vector_search_after_write": summary(after),
    }


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", type=Path, default=SCIFACT, help="whose words and queries (BEIR layout)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--work", default="/tmp/quarry-scale")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--json")
    ap.add_argument(
        "--build-only", action="store_true", help="ingest (or reuse) the indexes, measure nothing"
    )
    ap.add_argument("--keyword-engine", choices=["fts5", "tantivy"], default="tantivy")
    ap.add_argument(
        "--keyword-only",
        action="store_true",
        help="measure only keyword search, hybrid through SearchService and the first keyword search "
        "after a write (with the default approximate-index threshold)",
    )
    ap.add_argument("--smoke", action="store_true", help="300 chunks, 5 queries, tests/fixtures/beir_tiny")
    args = ap.parse_args(argv)
    if args.smoke:
        with tempfile.TemporaryDirectory(prefix="quarry-scale-smoke-") as work:
            args.dataset, args.sizes, args.queries, args.work = SMOKE_DATASET, [SMOKE_CHUNKS], 5, work
            run(args)
    else:
        run(args)


def run(args: Any) -> None:
    """Build (or reuse) each size's index under --work and measure it."""
    from infra.local.sqlite.index import build_sqlite_index

    words, p = vocabulary(args.dataset)
    texts = query_texts(args.dataset)
    space = Space()
    report: dict[str, Any] = {"machine": f"{os.cpu_count()} cores, shared with other agents (busy)"}
    for n in args.sizes:
        ann_min = ANN_MIN_DEFAULT if args.keyword_only else 1
        path = Path(args.work) / f"scale-{n}.db"
        index = build_sqlite_index(path, ann_min_chunks=ann_min, keyword_engine=args.keyword_engine)
        print(f"{n} chunks", file=sys.stderr, flush=True)
        row = build(index, n, words, p, space)
        t = time.perf_counter()
        index.settle()  # the keyword index (re)built or caught up, its merges done: a server up a while
        row["keyword_index_settle_s"] = round(time.perf_counter() - t, 2)
        if args.build_only:
            continue
        if args.keyword_only:
            row |= measure_keyword(index, n, space, words, texts, args.queries)
        else:
            row |= measure(index, n, space, words, texts, args.queries)
        report[str(n)] = row
        print(json.dumps({n: row}, indent=1), flush=True)
    if args.json:
        write_json(args.json, report, indent=1)


if __name__ == "__main__":
    main()
