"""Reference retrievers side by side with Quarry, scored by the same metric code (core.search.ranking_metrics).

BM25 = bm25s (k1=1.2, b=0.75, Lucene variant, English Snowball stemmer via PyStemmer, English stop
words) over title + text; dense = all-MiniLM-L6-v2 cosine over title + text (exact search); fusions over
the union of both top-100 lists: RRF k=60 (rank from 0), convex 0.6·cosine + 0.4·BM25/max(BM25), and
min-max 0.5/0.5. A document missing from one list gets 0 from it. These are bench/QUALITY.md's reference
rows; BM25 on SciFact test agrees with the published Lucene figure (Pyserini's BEIR runs, nDCG@10 0.679),
which proves the metric code.

    .venv/bin/python bench/baselines.py --dataset ../shared/datasets/scifact [--split test] [--json F]
    .venv/bin/python bench/baselines.py --smoke   # tests/fixtures/beir_tiny, hashing vectors: that it runs
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import SMOKE_DATASET, HashingEmbedder, write_json  # noqa: E402
from core.ports import Embedder  # noqa: E402
from core.search.ranking_metrics import Metrics, evaluate, ranking_from_scores  # noqa: E402
from infra.beir.datasets import BeirDataset, load_beir  # noqa: E402
from infra.beir.embedding_cache import CachingEmbedder  # noqa: E402

DEPTH = 100  # candidates per retriever: Recall@100 needs 100, and fusion runs over both top-100 lists
BM25_K1 = 1.2  # BEIR's setting (Lucene / Pyserini default is 0.9)
BM25_B = 0.75  # same
RRF_K = 60  # Cormack et al. 2009
CONVEX_ALPHA = 0.6  # docs/conformance.md#convex-fusion
MINMAX_WEIGHT = 0.5  # equal weights, as Pyserini's fusion experiments
DEFAULT_CACHE = Path(__file__).resolve().parent.parent / ".quarry" / "embeddings"

Scores = dict[str, dict[str, float]]  # query id → doc id → score


def doc_text(title: str, text: str) -> str:
    """BEIR's passage text for both retrievers: title, a space, body."""
    return f"{title} {text}".strip()


def bm25_run(data: BeirDataset, depth: int = DEPTH) -> Scores:
    """Top-`depth` BM25 scores per test query with bm25s."""
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    ids = [d.doc_id for d in data.corpus]
    corpus_tokens = bm25s.tokenize(
        [doc_text(d.title, d.text) for d in data.corpus], stopwords="en", stemmer=stemmer, show_progress=False
    )
    model = bm25s.BM25(k1=BM25_K1, b=BM25_B)
    model.index(corpus_tokens, show_progress=False)
    qids = list(data.queries)
    query_tokens = bm25s.tokenize(
        [data.queries[q] for q in qids], stopwords="en", stemmer=stemmer, show_progress=False
    )
    docs, scores = model.retrieve(query_tokens, k=min(depth, len(ids)), show_progress=False)
    return {
        qid: {ids[int(d)]: float(s) for d, s in zip(row_d, row_s, strict=True) if s > 0}
        for qid, row_d, row_s in zip(qids, docs, scores, strict=True)
    }


def dense_run(data: BeirDataset, embedder: Embedder, depth: int = DEPTH) -> Scores:
    """Top-`depth` cosine scores per test query (exact search over unit vectors)."""
    ids = [d.doc_id for d in data.corpus]
    matrix = np.vstack(embedder.embed([doc_text(d.title, d.text) for d in data.corpus]))
    qids = list(data.queries)
    queries = np.vstack(embedder.embed([data.queries[q] for q in qids]))
    sims = queries @ matrix.T
    run: Scores = {}
    for qid, row in zip(qids, sims, strict=True):
        top = np.argpartition(-row, min(depth, len(ids) - 1))[:depth]
        run[qid] = {ids[i]: float(row[i]) for i in top}
    return run


def fuse_rrf(lexical: Mapping[str, float], vector: Mapping[str, float], k: int = RRF_K) -> dict[str, float]:
    """Σ 1/(k + rank + 1), rank from 0 in each list."""
    fused: dict[str, float] = {}
    for scores in (lexical, vector):
        for rank, doc in enumerate(ranking_from_scores(scores)):
            fused[doc] = fused.get(doc, 0.0) + 1.0 / (k + rank + 1)
    return fused


def fuse_convex(
    lexical: Mapping[str, float], vector: Mapping[str, float], alpha: float = CONVEX_ALPHA
) -> dict[str, float]:
    """α·cosine + (1−α)·bm25/max(bm25) over the union; missing → 0."""
    top = max(lexical.values(), default=0.0) or 1.0
    keys = set(lexical) | set(vector)
    return {d: alpha * vector.get(d, 0.0) + (1 - alpha) * lexical.get(d, 0.0) / top for d in keys}


def _minmax(scores: Mapping[str, float]) -> dict[str, float]:
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    span = (high - low) or 1.0
    return {d: (s - low) / span for d, s in scores.items()}


def fuse_minmax(
    lexical: Mapping[str, float], vector: Mapping[str, float], weight: float = MINMAX_WEIGHT
) -> dict[str, float]:
    """weight·minmax(cosine) + (1−weight)·minmax(bm25) over the union; missing → 0."""
    lex, vec = _minmax(lexical), _minmax(vector)
    return {d: weight * vec.get(d, 0.0) + (1 - weight) * lex.get(d, 0.0) for d in set(lex) | set(vec)}


Fusion = Callable[[Mapping[str, float], Mapping[str, float]], dict[str, float]]
FUSIONS: dict[str, Fusion] = {"rrf": fuse_rrf, "convex": fuse_convex, "minmax": fuse_minmax}


def fused_run(lexical: Scores, vector: Scores, fusion: Fusion, depth: int = DEPTH) -> dict[str, list[str]]:
    """Each query's fused ranking, cut at `depth`."""
    return {
        q: ranking_from_scores(fusion(lexical.get(q, {}), vector.get(q, {})))[:depth]
        for q in set(lexical) | set(vector)
    }


def reference_table(data: BeirDataset, embedder: Embedder) -> dict[str, Metrics]:
    """Metrics of BM25, dense and the three fusions on `data`."""
    lexical, vector = bm25_run(data), dense_run(data, embedder)
    runs: dict[str, Mapping[str, Sequence[str]]] = {
        "bm25": {q: ranking_from_scores(s) for q, s in lexical.items()},
        "minilm": {q: ranking_from_scores(s) for q, s in vector.items()},
    }
    runs.update({name: fused_run(lexical, vector, f) for name, f in FUSIONS.items()})
    return {name: evaluate(run, data.qrels) for name, run in runs.items()}


def default_embedder(cache_dir: Path) -> Embedder:
    """all-MiniLM-L6-v2 (offline, packaged) behind the on-disk cache."""
    from infra.local.onnx.embedder import LocalEmbedder

    return CachingEmbedder(LocalEmbedder(), cache_dir)


def main(argv: Sequence[str] | None = None) -> int:
    """Print (and optionally write as JSON) the reference table for one dataset."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, help="a BEIR folder (required unless --smoke)")
    parser.add_argument("--split", default="test")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--smoke", action="store_true", help="tests/fixtures/beir_tiny, hashing vectors")
    args = parser.parse_args(argv)
    if args.smoke:
        args.dataset = args.dataset or SMOKE_DATASET
    elif args.dataset is None:
        parser.error("--dataset is required")
    data = load_beir(args.dataset, args.split)
    table = reference_table(data, HashingEmbedder() if args.smoke else default_embedder(args.cache_dir))
    print(f"{data.name} ({args.split}, {len(data.qrels)} queries)")
    if args.smoke:
        print("smoke run: hashing vectors stand in for all-MiniLM-L6-v2 (the minilm and fusion rows)")
    print(f"{'system':<10} {'nDCG@10':>8} {'R@100':>8} {'MRR@10':>8}")
    for name, m in table.items():
        print(f"{name:<10} {m.ndcg_at_10:>8.3f} {m.recall_at_100:>8.3f} {m.mrr_at_10:>8.3f}")
    if args.json:
        body = {"dataset": data.name, "split": args.split, "queries": len(data.qrels)}
        body["systems"] = {name: m.as_dict() for name, m in table.items()}
        write_json(args.json, body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
