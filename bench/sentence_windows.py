"""An idea, measured: vectors of two-sentence windows instead of (or beside) one vector per document.

SciFact's claims are one sentence and usually match one or two sentences of an abstract; a single MiniLM
vector of the whole abstract (truncated at 256 word pieces) blurs them. Here every abstract is split into
sentences, each window of two consecutive sentences is embedded as `title. window` (as Quarry embeds a
document's chunk), and a document scores its best window ("maxsent"), or a mix w·document + (1−w)·best window.
Reported for the semantic leg alone and fused with bm25s (convex over max-normalised BM25, the naive fusion
of bench/baselines.py) on SciFact train (choose) and test (report). Vectors come from and go to the
embedding cache (--cache-dir): the first run embeds ~39,000 windows (~5 min here).

    .venv/bin/python bench/sentence_windows.py [--cache-dir .quarry/embeddings] [--json FILE]
    .venv/bin/python bench/sentence_windows.py --smoke   # tests/fixtures/beir_tiny, hashing vectors
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._common import SMOKE_DATASET, HashingEmbedder, shared_datasets, write_json  # noqa: E402
from bench.baselines import bm25_run  # noqa: E402
from core.search.ranking_metrics import evaluate, ranking_from_scores  # noqa: E402
from infra.beir.datasets import load_beir  # noqa: E402
from infra.beir.embedding_cache import CachingEmbedder  # noqa: E402
from infra.local.onnx.embedder import LocalEmbedder  # noqa: E402

SCIFACT = shared_datasets() / "scifact"
SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])")
MIN_SENTENCE_CHARS = 20
DEPTH = 100
MIXES = (None, 0.3, 0.5)  # None: best window alone
ALPHAS = (0.6, 0.7, 0.8, 0.85)


def windows(title: str, text: str) -> list[str]:
    """Two consecutive sentences at a time (stride 1), each prefixed by the title; the text if unsplittable."""
    sentences = [s for s in SENTENCE.split(text) if len(s) > MIN_SENTENCE_CHARS]
    pieces = (
        [" ".join(sentences[j : j + 2]) for j in range(max(1, len(sentences) - 1))] if sentences else [text]
    )
    return [f"{title}. {p}" if title else p for p in pieces]


def ndcg(
    scores: np.ndarray, ids: list[str], qids: list[str], qrels: Any, bm25: dict | None, alpha: float
) -> float:
    run = {}
    for j, q in enumerate(qids):
        top = np.argsort(-scores[j])[:DEPTH]
        vector = {ids[k]: float(scores[j, k]) for k in top}
        if bm25 is None:
            run[q] = ranking_from_scores(vector)
            continue
        lexical = bm25.get(q, {})
        peak = max(lexical.values()) if lexical else 1.0
        fused = {
            d: alpha * vector.get(d, 0.0) + (1 - alpha) * lexical.get(d, 0.0) / peak
            for d in set(vector) | set(lexical)
        }
        run[q] = ranking_from_scores(fused)
    return round(evaluate(run, qrels).ndcg_at_10, 4)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--dataset", type=Path, default=SCIFACT, help="a BEIR folder with train and test qrels"
    )
    parser.add_argument("--cache-dir", type=Path, default=ROOT / ".quarry" / "embeddings")
    parser.add_argument(
        "--json", type=Path, help="default bench/results/sentence_windows.json (none with --smoke)"
    )
    parser.add_argument("--smoke", action="store_true", help="tests/fixtures/beir_tiny, hashing vectors")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    embedder: Any
    if args.smoke:
        args.dataset, embedder = SMOKE_DATASET, HashingEmbedder()
    else:
        args.json = args.json or ROOT / "bench" / "results" / "sentence_windows.json"
        embedder = CachingEmbedder(LocalEmbedder(), args.cache_dir)
    if not args.dataset.is_dir():
        sys.exit(f"needs {args.dataset}")
    corpus = load_beir(args.dataset, "test").corpus
    ids = [d.doc_id for d in corpus]
    units: list[str] = []
    owner: list[int] = []
    for i, d in enumerate(corpus):
        for w in windows(d.title, d.text):
            units.append(w)
            owner.append(i)
    print(f"{len(units)} windows for {len(corpus)} documents", file=sys.stderr)
    window_vectors = np.array(embedder.embed(units), dtype=np.float32)
    doc_vectors = np.array(
        embedder.embed([f"{d.title}. {d.text}" if d.title else d.text for d in corpus]), dtype=np.float32
    )
    owners = np.array(owner)
    out: dict[str, Any] = {"windows": len(units), "documents": len(corpus), "rows": {}}
    for split in ("train", "test"):
        _score_split(args.dataset, split, embedder, ids, doc_vectors, window_vectors, owners, out)
    if args.json:
        write_json(args.json, out)


def _score_split(
    dataset: Path,
    split: str,
    embedder: Any,
    ids: list[str],
    doc_vectors: Any,
    window_vectors: Any,
    owners: Any,
    out: dict[str, Any],
) -> None:
    """Each variant's nDCG@10 on one split's judged queries (semantic alone and convex with BM25), printed
    and put in `out["rows"]`."""
    data = load_beir(dataset, split)
    data = dataclasses.replace(data, queries={q: data.queries[q] for q in data.qrels})
    qids = list(data.qrels)
    queries = np.array(embedder.embed_query([data.queries[q] for q in qids]), dtype=np.float32)
    by_doc = queries @ doc_vectors.T
    best = np.full(by_doc.shape, -1.0, dtype=np.float32)
    by_window = queries @ window_vectors.T
    for j in range(len(qids)):
        np.maximum.at(best[j], owners, by_window[j])
    bm25 = bm25_run(data)
    variants = {"document": by_doc} | {
        ("best window" if w is None else f"{w} document + {1 - w:.1f} best window"): (
            best if w is None else w * by_doc + (1 - w) * best
        )
        for w in MIXES
    }
    for name, scores in variants.items():
        row = {"semantic": ndcg(scores, ids, qids, data.qrels, None, 0.0)}
        row |= {f"convex α {a}": ndcg(scores, ids, qids, data.qrels, bm25, a) for a in ALPHAS}
        out["rows"][f"{split}: {name}"] = row
        print(f"{split:<6} {name:<32} " + "  ".join(f"{k} {v:.4f}" for k, v in row.items()))


if __name__ == "__main__":
    main()
