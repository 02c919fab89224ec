"""Vector feedback's variants side by side on one ingested BEIR corpus (docs/benchmarks.md#feedback-without-a-second-k-nn-search):
today's second k-NN search with the feedback vectors read from the index (exact float32), the same with the
compact float16 copies that come with the hits (OpenSearch), and re-scoring the candidates in hand
(QUARRY_FEEDBACK_MODE=rescore) at vector-leg depth × 1 and × 2, with the vectors that came with the hits or,
where the index brings none (SQLite), every candidate's read from it (`ReadVectors`). The corpus is ingested once (SQLite, or
with `--index opensearch` a temporary index on QUARRY_OPENSEARCH_URL) and every variant runs the test queries
through SearchService with strategy auto, as `quarry eval` reports it.

    .venv/bin/python bench/feedback_variants.py --dataset ../shared/datasets/scifact \
        --cache-dir .quarry/embeddings [--index opensearch] [--json out.json]
    .venv/bin/python bench/feedback_variants.py --smoke   # tests/fixtures/beir_tiny, hashing vectors
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.search.planning import SearchSettings  # noqa: E402


class ExactVectors:
    """An index whose hits never carry vectors: feedback reads them from the index (today's path)."""

    def __init__(self, index: Any) -> None:
        self._index = index

    def __getattr__(self, name: str) -> Any:
        return getattr(self._index, name)

    def retrieve_many(self, tenant_id: str, specs: Any) -> list[Any]:
        return [dataclasses.replace(got, vectors={}) for got in self._index.retrieve_many(tenant_id, specs)]


class ReadVectors(ExactVectors):
    """An index whose hits carry every listed entity's stored vectors, read from it (float32): re-scoring
    as it would run on an index that returned exact vectors with its hits (one extra read per search)."""

    def retrieve_many(self, tenant_id: str, specs: Any) -> list[Any]:
        from core.models import ALL_CHUNKS

        out = []
        for got in self._index.retrieve_many(tenant_id, specs):
            keys = list(dict.fromkeys(c.key for c in (*got.lexical, *got.vector)))
            read = self._index.chunk_vectors(tenant_id, [(k, ALL_CHUNKS) for k in keys])
            vectors: dict[Any, dict[int, Any]] = {}
            for (key, number), vector in read.items():
                vectors.setdefault(key, {})[number] = vector
            out.append(dataclasses.replace(got, vectors=vectors))
        return out


def variants(default: SearchSettings) -> dict[str, tuple[SearchSettings, Any]]:
    """name → (settings, the index wrapper: None for the index as it is)."""
    search = dataclasses.replace(default, feedback_mode="search", feedback_pool=1)
    rescore = dataclasses.replace(default, feedback_mode="rescore", feedback_pool=1)
    return {
        "search, vectors read (today)": (search, ExactVectors),
        "search, vectors with the hits": (search, None),
        "rescore, vectors read": (rescore, ReadVectors),
        "rescore, vectors with the hits": (rescore, None),
        "rescore ×2 depth, vectors with the hits": (dataclasses.replace(rescore, feedback_pool=2), None),
        "rescore ×2 depth, vectors read": (dataclasses.replace(rescore, feedback_pool=2), ReadVectors),
    }


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default=None, help="a BEIR folder (required unless --smoke)")
    parser.add_argument("--split", default="test")
    parser.add_argument("--cache-dir", default=".quarry/embeddings")
    parser.add_argument("--index", choices=["sqlite", "opensearch"], default="sqlite")
    parser.add_argument("--json", default=None)
    parser.add_argument("--only", default=None, help="comma-separated numbers of the variants to run (1-6)")
    parser.add_argument("--smoke", action="store_true", help="tests/fixtures/beir_tiny, hashing vectors")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    from bench._common import SMOKE_DATASET

    if args.smoke:
        args.dataset = args.dataset or str(SMOKE_DATASET)
    elif args.dataset is None:
        parser.error("--dataset is required")

    from infra.beir.datasets import load_beir

    data = load_beir(args.dataset, args.split)
    out = _run(args, data)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


def _run(args: argparse.Namespace, data: Any) -> dict[str, Any]:
    """Ingest the dataset once, then evaluate the chosen variants on it: the figures by variant."""
    from bench._common import HashingEmbedder
    from core.indexing.entity_types import EntityTypeRegistry
    from handlers.cli.governance_commands import command_container
    from infra.beir.embedding_cache import CachingEmbedder
    from infra.beir.evaluation import (
        EVAL_MAX_QUERY_CHARS,
        EVAL_MAX_TERMS,
        _eval_container,
        _fresh_sqlite_index,
        eval_index,
        ingest,
    )

    with tempfile.TemporaryDirectory(prefix="quarry-fb-") as tmp:
        c0 = command_container(str(Path(tmp) / "data"))
        embedder: Any = (
            HashingEmbedder()
            if args.smoke
            else CachingEmbedder(c0.embedder, Path(args.cache_dir), progress=False)
        )
        settings = dataclasses.replace(
            c0.search_settings, max_query_chars=EVAL_MAX_QUERY_CHARS, max_terms=EVAL_MAX_TERMS
        )
        with eval_index(c0.settings, embedder.dimension, args.index) as given:
            index = given if given is not None else _fresh_sqlite_index(Path(tmp))
            c = _eval_container(Path(tmp), embedder, index, EntityTypeRegistry(), settings)
            report = ingest(data, c.indexing, c.clock.now(), False)
            if given is None:
                index.settle()  # type: ignore[attr-defined]
            out: dict[str, Any] = {"dataset": data.name, "index": args.index, "ingest_s": report.seconds}
            chosen = list(variants(settings).items())
            if args.only:
                chosen = [chosen[int(n) - 1] for n in args.only.split(",")]
            for name, (s, wrapper) in chosen:
                out[name] = _evaluate(
                    c, index if wrapper is None else wrapper(index), s, data, args.index, name
                )
    return out


def _evaluate(
    c: Any, index: Any, settings: SearchSettings, data: Any, kind: str, name: str
) -> dict[str, Any]:
    """One variant's figures (`auto` strategy, a fresh cache), printed."""
    from core.search.ranking_metrics import evaluate
    from infra.beir.evaluation import run_queries
    from infra.local.cache import MemoryCache

    service = c.override(index=index, search_settings=settings, cache=MemoryCache()).search
    started = time.perf_counter()
    metrics = evaluate(run_queries(service, data, "auto"), data.qrels)
    seconds = time.perf_counter() - started
    print(f"{data.name} {kind} {name:42s} nDCG@10 {metrics.ndcg_at_10:.4f} "
          f"R@100 {metrics.recall_at_100:.4f} MRR@10 {metrics.mrr_at_10:.4f} ({seconds:.0f} s)",
          flush=True)  # fmt: skip
    return {**metrics.as_dict(), "seconds": round(seconds, 1)}


if __name__ == "__main__":
    raise SystemExit(main())
