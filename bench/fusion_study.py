"""Fusion study on a BEIR dataset through Quarry's own index: every fusion setting re-scored offline on
the candidate lists POST /search retrieves (same depth, same parse, same α lean), plus the tuner's pick.

    .venv/bin/python bench/fusion_study.py --dataset ../shared/datasets/scifact --split train
        [--work-dir .quarry/eval/scifact] [--reuse] [--json FILE]
    .venv/bin/python bench/fusion_study.py --smoke   # tests/fixtures/beir_tiny, hashing vectors, a temp dir

`--reuse` keeps an index already built in the work dir (the corpus is the same for every split).
Tune only on SciFact train or Cranfield; SciFact test is for reporting.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import SMOKE_DATASET, HashingEmbedder, write_json  # noqa: E402
from core.indexing.entity_types import EntityTypeRegistry  # noqa: E402
from core.search.fusion import FusionMethod  # noqa: E402
from core.search.fusion_tuning import FusionSetting, QueryLists, fused_ranking, settings_grid, tune_fusion  # noqa: E402
from core.search.planning import SearchSettings  # noqa: E402
from core.search.ranking_metrics import Metrics, Qrels, evaluate  # noqa: E402
from core.search.tuning_service import FusionTuningService, current_setting  # noqa: E402
from infra.beir.datasets import load_beir  # noqa: E402
from infra.beir.embedding_cache import CachingEmbedder  # noqa: E402
from infra.beir.evaluation import EVAL_TENANT, INDEX_FILE, SEARCH_LIMIT, ingest  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CACHE = REPO / ".quarry" / "embeddings"
FLOORS = (-1.0, 0.1, 0.2, 0.3)  # cosine floors studied; -1 keeps every vector hit
# Candidates per retriever: a limit-20 search (the API default) retrieves max(2 × 20, min_depth).
DEPTHS = (20, 40, 60, 100, 200)
PROPOSED_ALPHA = 0.7  # the α SciFact train and Cranfield favour (bench/QUALITY.md)


def metrics_of(setting: FusionSetting, runs: Mapping[str, QueryLists], qrels: Qrels) -> Metrics:
    """All three figures of one fusion setting on the collected lists."""
    run = {q: fused_ranking(setting, lists, SEARCH_LIMIT) for q, lists in runs.items()}
    return evaluate(run, qrels)


def single(runs: Mapping[str, QueryLists], qrels: Qrels, side: str) -> Metrics:
    """One retriever alone, in its own order."""
    run = {q: [c.key.entity_id for c in getattr(lists, side)][:SEARCH_LIMIT] for q, lists in runs.items()}
    return evaluate(run, qrels)


def unshifted(runs: Mapping[str, QueryLists]) -> dict[str, QueryLists]:
    """The same lists without the auto strategy's α lean (request strategy `hybrid`)."""
    return {q: QueryLists(r.lexical, r.vector) for q, r in runs.items()}


def build_index(
    dataset: Path, split: str, work_dir: Path, cache_dir: Path, reuse: bool, smoke: bool = False
) -> tuple[Any, Any, Any]:
    """The dataset, an index holding its corpus (built unless reused), and the cached embedder (hashing
    vectors for a smoke run)."""
    from core.indexing.indexing_service import IndexingService
    from infra.local.cache import MemoryCache
    from infra.local.onnx.embedder import LocalEmbedder
    from infra.local.sqlite.index import build_sqlite_index
    from infra.timing.clock import SystemClock

    data = load_beir(dataset, split)
    embedder: Any = HashingEmbedder() if smoke else CachingEmbedder(LocalEmbedder(), cache_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    path = work_dir / INDEX_FILE
    fresh = not (reuse and path.exists())
    if fresh:
        for stale in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            stale.unlink(missing_ok=True)
    index = build_sqlite_index(path)
    if fresh:
        registry = EntityTypeRegistry()
        report = ingest(data, IndexingService(index, embedder, registry, MemoryCache()), SystemClock().now())
        print(f"indexed {report.indexed}/{report.documents} in {report.seconds:.0f}s", file=sys.stderr)
    return data, index, embedder


def floored(runs: Mapping[str, QueryLists], floor: float) -> dict[str, QueryLists]:
    """The lists with vector hits below cosine `floor` dropped (SearchSettings.min_vector_similarity)."""
    return {
        q: QueryLists(r.lexical, tuple(c for c in r.vector if c.score >= floor), r.alpha_shift)
        for q, r in runs.items()
    }


def study(raw: Mapping[str, QueryLists], qrels: Qrels, settings: SearchSettings) -> dict[str, object]:
    """Single retrievers, the grid per vector floor with and without the auto lean, the tuner's choice."""
    rows: dict[str, dict[str, float]] = {"keyword": single(raw, qrels, "lexical").as_dict()}
    for floor in FLOORS:
        auto = floored(raw, floor)
        flat = unshifted(auto)
        rows[f"semantic floor={floor}"] = single(auto, qrels, "vector").as_dict()
        for s in settings_grid():
            name = f"rrf k={s.rrf_k}" if s.method is FusionMethod.RRF else f"convex a={s.alpha:.2f}"
            rows[f"hybrid {name} floor={floor}"] = metrics_of(s, flat, qrels).as_dict()
            rows[f"auto {name} floor={floor}"] = metrics_of(s, auto, qrels).as_dict()
    runs = floored(raw, settings.min_vector_similarity)
    for depth in DEPTHS:
        cut = {q: QueryLists(r.lexical[:depth], r.vector[:depth], r.alpha_shift) for q, r in runs.items()}
        for alpha in (settings.alpha, PROPOSED_ALPHA):
            setting = FusionSetting(FusionMethod.CONVEX, alpha=alpha)
            rows[f"depth={depth} hybrid convex a={alpha:.2f}"] = metrics_of(
                setting, unshifted(cut), qrels
            ).as_dict()
            rows[f"depth={depth} auto convex a={alpha:.2f}"] = metrics_of(setting, cut, qrels).as_dict()
    tuned_auto = tune_fusion(runs, qrels, current_setting(settings))
    tuned_flat = tune_fusion(unshifted(runs), qrels, current_setting(settings))
    return {
        "rows": rows,
        "tuned_auto": {"best": tuned_auto.best.describe(), "ndcg_at_10": tuned_auto.best_score},
        "tuned_hybrid": {"best": tuned_flat.best.describe(), "ndcg_at_10": tuned_flat.best_score},
        "current": {"setting": current_setting(settings).describe(), "ndcg_at_10": tuned_auto.current_score},
    }


def smoke_options(args: Any, parser: argparse.ArgumentParser, scratch: str) -> Path:
    """The dataset and work dir of a run: for --smoke the tiny fixture and a scratch folder."""
    if args.smoke:
        args.dataset = args.dataset or SMOKE_DATASET
        return Path(scratch)
    if args.dataset is None:
        parser.error("--dataset is required")
    return Path(args.work_dir or REPO / ".quarry" / "eval" / args.dataset.resolve().name)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the study table (and write it as JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, help="a BEIR folder (required unless --smoke)")
    parser.add_argument("--split", default="test")
    parser.add_argument("--work-dir", type=Path)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--smoke", action="store_true", help="tests/fixtures/beir_tiny, hashing vectors")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="quarry-fusion-study-") as scratch:
        return run(args, smoke_options(args, parser, scratch))


def run(args: Any, work: Path) -> int:
    """Build (or reuse) the index in `work`, study it, print and write the figures."""
    data, index, embedder = build_index(
        args.dataset, args.split, work, args.cache_dir, args.reuse, smoke=args.smoke
    )
    settings = SearchSettings()
    service = FusionTuningService(index, embedder, EntityTypeRegistry(), settings)
    raw = service.lists(EVAL_TENANT, data.queries, vector_floor=-1.0)
    result = study(raw, data.qrels, settings)
    print(f"{data.name} ({args.split}, {len(data.qrels)} queries)")
    rows = cast(dict[str, dict[str, float]], result["rows"])
    for name, m in rows.items():
        print(f"{name:<24} {m['ndcg_at_10']:.4f} {m['recall_at_100']:.4f} {m['mrr_at_10']:.4f}")
    for key in ("current", "tuned_hybrid", "tuned_auto"):
        print(key, result[key])
    if args.json:
        write_json(args.json, {"dataset": data.name, "split": args.split, **result}, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
