"""A long-query test collection built from SciFact, and the keyword leg against plain BM25 on it.

SciFact's claims are one sentence. People (and agents) also ask in paragraphs that restate their key
words and wander off topic; that is where a query parser that keeps each word once, caps 20 terms or turns
the `e` of "e.g." into a search term falls behind plain BM25. This builds, reproducibly (fixed seed), a
BEIR folder whose documents and qrels are SciFact's test split and whose queries are long:

    "<claim> I am trying to find out whether <claim, lower-cased>. For context, e.g. earlier I read that
     <another claim>; and also that <a third claim>. So, in short: <claim>?"

(~60–120 words: the claim three times, two off-topic claims, filler), then scores Quarry's keyword leg
(the real write path and SearchService, SQLite FTS5) and bm25s (k1 1.2, b 0.75, English stemmer and
stop words) with the same metric code. No embedding is involved.

    .venv/bin/python bench/long_queries.py [--out .quarry/scifact-long] [--json FILE]
    .venv/bin/python bench/long_queries.py --smoke   # from tests/fixtures/beir_tiny, into a temp dir
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._common import SMOKE_DATASET, shared_datasets, write_json  # noqa: E402
from bench.baselines import bm25_run  # noqa: E402
from core.ports import Embedder  # noqa: E402
from core.search.ranking_metrics import evaluate, ranking_from_scores  # noqa: E402
from infra.beir.datasets import load_beir  # noqa: E402
from infra.beir.evaluation import run_eval  # noqa: E402

SCIFACT = shared_datasets() / "scifact"
SEED = 11


class _ConstantEmbedder(Embedder):
    """The keyword leg needs no vectors; a constant one keeps ingest cheap and honest."""

    dimension = 8
    model_id = "constant"

    def embed(self, texts: Any) -> list[np.ndarray]:
        return [np.eye(8, dtype=np.float32)[0] for _ in texts]

    def embed_query(self, texts: Any) -> list[np.ndarray]:
        return self.embed(texts)


def build(out: Path, source: Path = SCIFACT) -> Path:
    """Write the long-query BEIR folder (corpus and qrels of `source` copied, queries rewritten)."""
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(source / "corpus.jsonl", out / "corpus.jsonl")
    (out / "qrels").mkdir(exist_ok=True)
    shutil.copy(source / "qrels" / "test.tsv", out / "qrels" / "test.tsv")
    data = load_beir(source, "test")
    claims = {qid: data.queries[qid] for qid in data.qrels}
    rng = random.Random(SEED)
    ids = sorted(claims)
    with (out / "queries.jsonl").open("w") as handle:
        for qid in ids:
            claim = claims[qid].strip().rstrip(".")
            a, b = rng.sample([i for i in ids if i != qid], 2)
            text = (
                f"{claim}. I am trying to find out whether {claim.lower()}. For context, e.g. earlier I read "
                f"that {claims[a].strip().rstrip('.').lower()}; and also that "
                f"{claims[b].strip().rstrip('.').lower()}. So, in short: {claim}?"
            )
            handle.write(json.dumps({"_id": qid, "text": text}) + "\n")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--source", type=Path, default=SCIFACT, help="the BEIR folder whose claims are used")
    parser.add_argument("--out", type=Path, default=ROOT / ".quarry" / "scifact-long")
    parser.add_argument(
        "--json", type=Path, help="default bench/results/long_queries.json (none with --smoke)"
    )
    parser.add_argument("--keyword-engine", choices=["fts5", "tantivy"], default="tantivy")
    parser.add_argument("--smoke", action="store_true", help="from tests/fixtures/beir_tiny, into a temp dir")
    args = parser.parse_args(argv)
    if not args.smoke:
        args.json = args.json or ROOT / "bench" / "results" / "long_queries.json"
        return run(args)
    with tempfile.TemporaryDirectory(prefix="quarry-long-queries-") as tmp:
        args.source, args.out = SMOKE_DATASET, Path(tmp)
        return run(args)


def run(args: argparse.Namespace) -> int:
    """Build the long-query folder from --source and score both systems on it."""
    if not args.source.exists():
        print(f"needs {args.source} (the shared datasets)", file=sys.stderr)
        return 2
    folder = build(args.out, args.source)
    data = load_beir(folder, "test")
    words = [len(t.split()) for t in data.queries.values()]
    report = run_eval(
        folder,
        _ConstantEmbedder(),
        strategies=["keyword"],
        progress=False,
        keyword_engine=args.keyword_engine,
    )
    if report.failures:
        print("failures:", report.failures[:5], file=sys.stderr)
        return 1
    quarry = report.strategies["keyword"]
    scores = bm25_run(data)
    bm25 = evaluate({q: ranking_from_scores(s) for q, s in scores.items()}, data.qrels)
    print(
        f"{args.source.name} long queries: {len(data.qrels)} queries, {min(words)}-{max(words)} words "
        f"(median {sorted(words)[len(words) // 2]})"
    )
    print(f"{'system':<16} {'nDCG@10':>8} {'R@100':>8} {'MRR@10':>8}")
    for name, m in (("quarry keyword", quarry), ("bm25s", bm25)):
        print(f"{name:<16} {m.ndcg_at_10:>8.3f} {m.recall_at_100:>8.3f} {m.mrr_at_10:>8.3f}")
    if args.json:
        body = {"queries": len(data.qrels), "quarry_keyword": quarry.as_dict(), "bm25s": bm25.as_dict()}
        write_json(args.json, body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
