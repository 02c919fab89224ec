"""Current search defaults against a candidate set, side by side on one fresh index per dataset: every
strategy of `quarry eval` on each split, so a proposed default can be judged before it is adopted.

    .venv/bin/python bench/quality_defaults.py --dataset ../shared/datasets/scifact --splits test,train \\
        --alpha 0.7 --semantic-lean 0.0 --min-depth 100 [--json bench/results/defaults_compared_scifact.json]
    .venv/bin/python bench/quality_defaults.py --smoke   # tests/fixtures/beir_tiny, hashing vectors, α 0.7

The candidate's α, question lean (core.search.search_service.SEMANTIC_LEAN) and minimum candidate depth replace
the current ones only inside this process. Embeddings come from the on-disk cache (.quarry/embeddings).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import core.search.planning as search_module  # noqa: E402
from bench._common import SMOKE_DATASET, HashingEmbedder, write_json  # noqa: E402
from core.indexing.entity_types import EntityTypeRegistry  # noqa: E402
from core.indexing.indexing_service import IndexingService  # noqa: E402
from core.search.planning import SearchSettings  # noqa: E402
from core.search.search_service import SearchService  # noqa: E402
from infra.beir.datasets import load_beir  # noqa: E402
from infra.beir.embedding_cache import CachingEmbedder  # noqa: E402
from infra.beir.evaluation import ALL_STRATEGIES, INDEX_FILE, evaluate_strategies, ingest  # noqa: E402
from infra.timing.clock import SystemClock  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def build_index(dataset: Path, split: str, cache_dir: Path, work: Path, smoke: bool) -> tuple[Any, ...]:
    """A fresh index in `work` holding the corpus (hashing vectors for a smoke run, else MiniLM's);
    returns (index, embedder, registry, clock, name)."""
    from infra.local.cache import MemoryCache
    from infra.local.onnx.embedder import LocalEmbedder
    from infra.local.sqlite.index import build_sqlite_index

    embedder: Any = (
        HashingEmbedder() if smoke else CachingEmbedder(LocalEmbedder(), cache_dir, progress=False)
    )
    work.mkdir(parents=True, exist_ok=True)
    for stale in work.glob(INDEX_FILE + "*"):
        stale.unlink()
    index, registry, clock = build_sqlite_index(work / INDEX_FILE), EntityTypeRegistry(), SystemClock()
    corpus = load_beir(dataset, split)
    ingest(corpus, IndexingService(index, embedder, registry, MemoryCache()), clock.now(), progress=not smoke)
    return index, embedder, registry, clock, corpus.name


def compare(args: argparse.Namespace, work: Path) -> tuple[str, dict[str, dict[str, dict[str, float]]]]:
    """Figures of every strategy under the current and the candidate defaults, per split."""
    from infra.local.cache import MemoryCache

    splits = [s for s in args.splits.split(",") if s]
    index, embedder, registry, clock, name = build_index(
        args.dataset, splits[0], args.cache_dir, work, args.smoke
    )

    def make(settings: SearchSettings) -> SearchService:
        return SearchService(index, embedder, MemoryCache(), registry, clock, settings)

    current = SearchSettings()
    candidate = dataclasses.replace(current, alpha=args.alpha, min_depth=args.min_depth)
    lean = search_module.SEMANTIC_LEAN
    out: dict[str, dict[str, dict[str, float]]] = {}
    for split in splits:
        data = load_beir(args.dataset, split)
        for label, settings, semantic_lean in (
            ("current", current, lean),
            ("candidate", candidate, args.semantic_lean),
        ):
            search_module.SEMANTIC_LEAN = semantic_lean
            try:
                metrics, _ = evaluate_strategies(data, make, list(ALL_STRATEGIES), settings)
            finally:
                search_module.SEMANTIC_LEAN = lean
            out[f"{split}/{label}"] = {n: m.as_dict() for n, m in metrics.items()}
            cells = " ".join(f"{n}:{m.ndcg_at_10:.4f}" for n, m in metrics.items())
            print(f"{name} {split:<5} {label:<9} nDCG@10 {cells}", flush=True)
    return name, out


def main(argv: Sequence[str] | None = None) -> int:
    """Print current vs candidate figures per split (and write them as JSON)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", type=Path, help="a BEIR folder (required unless --smoke)")
    p.add_argument("--splits", default="test")
    p.add_argument("--alpha", type=float, help="the candidate α (required unless --smoke: 0.7)")
    p.add_argument("--semantic-lean", type=float, default=search_module.SEMANTIC_LEAN)
    p.add_argument("--min-depth", type=int, default=SearchSettings().min_depth)
    p.add_argument("--cache-dir", type=Path, default=REPO / ".quarry" / "embeddings")
    p.add_argument("--work-dir", type=Path, help="default .quarry/eval/<dataset> (a temp dir with --smoke)")
    p.add_argument("--json", type=Path)
    p.add_argument("--smoke", action="store_true", help="tests/fixtures/beir_tiny, hashing vectors, α 0.7")
    args = p.parse_args(argv)
    if args.smoke:
        args.dataset, args.splits = args.dataset or SMOKE_DATASET, "test,train"
        args.alpha = 0.7 if args.alpha is None else args.alpha
    if args.dataset is None or args.alpha is None:
        p.error("--dataset and --alpha are required")
    with tempfile.TemporaryDirectory(prefix="quarry-defaults-") as scratch:
        default_work = (
            Path(scratch) if args.smoke else REPO / ".quarry" / "eval" / args.dataset.resolve().name
        )
        name, out = compare(args, args.work_dir or default_work)
    if args.json:
        candidate = {"alpha": args.alpha, "semantic_lean": args.semantic_lean, "min_depth": args.min_depth}
        write_json(args.json, {"dataset": name, "candidate": candidate, **out}, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
