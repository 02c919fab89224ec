"""The two keyword engines of the embedded backend, FTS5 and tantivy, query by query: every strategy of
`quarry eval` on each collection, the mean nDCG@10 of both, their difference, and whether that difference
is more than chance (a paired two-sided randomization test: the per-query differences' signs flipped at
random 20,000 times, fixed seed). A difference the test cannot tell from chance (p > 0.05) is noise:
the question "is the ranking at least as good" is answered by the differences that are not.

    .venv/bin/python bench/engine_compare.py [--cache-dir .quarry/embeddings] [--json FILE]
    .venv/bin/python bench/engine_compare.py --smoke   # tests/fixtures/beir_tiny, hashing vectors

Both engines index the same documents with the same embeddings (the cache); tantivy is settled (every
write committed) before the queries, so it ranks alone.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._common import SMOKE_DATASET, HashingEmbedder, shared_datasets, write_json  # noqa: E402
from core.indexing.entity_types import EntityTypeRegistry  # noqa: E402
from core.indexing.indexing_service import IndexingService  # noqa: E402
from core.search.planning import SearchSettings  # noqa: E402
from core.search.ranking_metrics import per_query  # noqa: E402
from core.search.search_service import SearchService  # noqa: E402
from infra.beir.datasets import load_beir  # noqa: E402
from infra.beir.embedding_cache import CachingEmbedder  # noqa: E402
from infra.beir.evaluation import (  # noqa: E402
    ALL_STRATEGIES,
    EVAL_MAX_QUERY_CHARS,
    EVAL_MAX_TERMS,
    _fresh_sqlite_index,
    ingest,
    run_queries,
    strategy_specs,
)
from infra.local.cache import MemoryCache  # noqa: E402
from infra.local.onnx.embedder import LocalEmbedder  # noqa: E402
from infra.timing.clock import SystemClock  # noqa: E402

COLLECTIONS = (("scifact", "train"), ("scifact", "test"), ("cranfield", "test"))
ENGINES = ("fts5", "tantivy")
ROUNDS = 20_000


def randomization_p(a: np.ndarray, b: np.ndarray, rounds: int = ROUNDS, seed: int = 12) -> float:
    """Two-sided p of the paired randomization test on the mean of a − b."""
    diff = a - b
    observed = abs(diff.mean())
    signs = np.random.default_rng(seed).choice((-1.0, 1.0), size=(rounds, diff.size))
    means = np.abs((signs * diff).mean(axis=1))
    return float((np.count_nonzero(means >= observed - 1e-12) + 1) / (rounds + 1))


def per_query_ndcg(
    dataset: Path, split: str, engine: str, embedder: Any, work: Path
) -> dict[str, dict[str, float]]:
    """{strategy: {query id: nDCG@10}} for one engine."""
    data = load_beir(dataset, split)
    types, clock = EntityTypeRegistry(), SystemClock()
    index = _fresh_sqlite_index(work, engine)
    ingest(data, IndexingService(index, embedder, types, MemoryCache()), clock.now(), progress=False)
    index.settle()
    settings = SearchSettings(max_query_chars=EVAL_MAX_QUERY_CHARS, max_terms=EVAL_MAX_TERMS)
    out: dict[str, dict[str, float]] = {}
    for name, spec in strategy_specs(settings).items():
        if name not in ALL_STRATEGIES:
            continue
        service = SearchService(index, embedder, MemoryCache(), types, clock, spec.settings)
        run = run_queries(service, data, spec.request_strategy)
        out[name] = {q: m.ndcg_at_10 for q, m in per_query(run, data.qrels).items()}
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cache-dir", type=Path, default=ROOT / ".quarry" / "embeddings")
    parser.add_argument(
        "--json", type=Path, help="default bench/results/engine_compare.json (none with --smoke)"
    )
    parser.add_argument("--smoke", action="store_true", help="tests/fixtures/beir_tiny, hashing vectors")
    args = parser.parse_args(argv)
    embedder: Any
    if args.smoke:
        collections, embedder = [(SMOKE_DATASET, "test")], HashingEmbedder()
    else:
        shared = shared_datasets()
        if not shared.is_dir():
            sys.exit(f"needs {shared} (SciFact, Cranfield)")
        collections = [(shared / name, split) for name, split in COLLECTIONS]
        embedder = CachingEmbedder(LocalEmbedder(), args.cache_dir)
        args.json = args.json or ROOT / "bench" / "results" / "engine_compare.json"
    rows: list[dict[str, Any]] = []
    print(f"{'collection':<16} {'strategy':<9} {'fts5':>7} {'tantivy':>8} {'diff':>7} {'p':>6}")
    for dataset, split in collections:
        name = dataset.name
        scores: dict[str, dict[str, dict[str, float]]] = {}
        for engine in ENGINES:
            with tempfile.TemporaryDirectory(prefix="quarry-engines-") as tmp:
                scores[engine] = per_query_ndcg(dataset, split, engine, embedder, Path(tmp))
        for strategy in scores["fts5"]:
            ids = sorted(scores["fts5"][strategy])
            a = np.array([scores["tantivy"][strategy][q] for q in ids])
            b = np.array([scores["fts5"][strategy][q] for q in ids])
            p = randomization_p(a, b)
            row = {
                "collection": f"{name} {split}",
                "strategy": strategy,
                "queries": len(ids),
                "fts5": round(float(b.mean()), 4),
                "tantivy": round(float(a.mean()), 4),
                "diff": round(float(a.mean() - b.mean()), 4),
                "p": round(p, 3),
            }
            rows.append(row)
            print(
                f"{row['collection']:<16} {strategy:<9} {row['fts5']:>7.4f} {row['tantivy']:>8.4f} "
                f"{row['diff']:>+7.4f} {row['p']:>6.3f}"
            )
    if args.json:
        write_json(args.json, {"rounds": ROUNDS, "rows": rows})


if __name__ == "__main__":
    main()
