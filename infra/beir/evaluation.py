"""The BEIR run, `quarry eval` (docs/architecture.md, Evaluation): a BEIR folder → a fresh index → every
test query through SearchService per strategy → nDCG@10 / Recall@100 / MRR@10 (reported by report.py
as a table, JSON and a chart).

One of three things called "eval" (docs/architecture.md lists them): this one measures ranking quality on
a public benchmark dataset from the command line. It is neither the nightly run of each overlay's golden
set (handlers/lambda_functions/nightly.py, core/governance/golden_sets.py) nor the context learning cycle (`quarry eval-cycle`,
POST /context/eval), and it stores nothing.

The corpus goes through the real write path (IndexingService: search text, ~300-token chunks, embeddings)
into a fresh SqliteIndex (or an empty OpenSearch index: `eval_index`), with embeddings cached on disk
(CachingEmbedder) so a second run embeds nothing. Strategies:

- keyword, semantic: one retriever (request strategy `keyword` / `semantic`);
- rrf: request `hybrid`, plain RRF k = 60; convex: request `hybrid`, α = 0.6 over max-normalised BM25;
- auto: what POST /search does when the request does not choose — strategy `auto` with the deployment's
  fusion settings. It is always reported and named as `default` in the JSON.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import InvalidInputError, QuarryError
from core.indexing.entity_types import EntityTypeRegistry
from core.ports import Embedder, SearchIndex
from core.search.fusion import PLAIN_CONVEX_ALPHA, RRF_K, FusionMethod
from core.search.planning import SearchSettings
from core.search.ranking_metrics import Metrics, Run, evaluate
from core.search.search_api import SearchRequest
from core.search.search_service import SearchService
from infra.beir.datasets import BeirDataset, document_entity
from infra.beir.report import EvalReport, IngestReport

if TYPE_CHECKING:
    from core.indexing.indexing_service import IndexingService
    from infra.local.sqlite.index import SqliteIndex
    from infra.wiring.root import Container

EVAL_TENANT = "eval"
SEARCH_LIMIT = 100  # Recall@100 needs 100 results; also POST /search's maximum limit
INDEX_BATCH = 128  # documents per IndexingService.bulk call (one embedding call each)
DEFAULT_STRATEGY = "auto"  # SearchRequest.strategy's default: what POST /search does unasked
ALL_STRATEGIES = ("keyword", "semantic", "rrf", "convex", DEFAULT_STRATEGY)
INDEX_FILE = "index.sqlite"
EVAL_MAX_QUERY_CHARS = 1_000_000  # no search-box limit: a BEIR query is as long as it is
EVAL_MAX_TERMS = 1024  # likewise (each distinct term is one OR branch of the lexical query)


@dataclass(frozen=True, slots=True)
class StrategySpec:
    """How one reported strategy is run: the request's strategy and the service's fusion settings."""

    request_strategy: str
    settings: SearchSettings


def strategy_specs(default: SearchSettings) -> dict[str, StrategySpec]:
    """The reported strategies; rrf and convex are the plain formulas (docs/conformance.md#rrf-k,
    docs/conformance.md#convex-fusion), auto is the deployment's."""
    naive = dataclasses.replace(default, feedback_docs=0)  # the plain formulas alone, no feedback
    plain_rrf = dataclasses.replace(naive, fusion=FusionMethod.RRF, alpha=0.5, rrf_k=RRF_K)
    plain_convex = dataclasses.replace(naive, fusion=FusionMethod.CONVEX, alpha=PLAIN_CONVEX_ALPHA)
    return {
        "keyword": StrategySpec("keyword", default),
        "semantic": StrategySpec("semantic", default),
        "rrf": StrategySpec("hybrid", plain_rrf),
        "convex": StrategySpec("hybrid", plain_convex),
        DEFAULT_STRATEGY: StrategySpec("auto", default),
    }


def _progress(total: int, desc: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="doc", disable=not enabled)


def ingest(data: BeirDataset, indexing: IndexingService, now: float, progress: bool = True) -> IngestReport:
    """Index the whole corpus as `document` entities in batches; per-document errors are collected."""
    started = time.perf_counter()
    report = IngestReport(documents=len(data.corpus))
    with _progress(len(data.corpus), f"indexing {data.name}", progress) as bar:
        for start in range(0, len(data.corpus), INDEX_BATCH):
            batch = data.corpus[start : start + INDEX_BATCH]
            report.empty.extend(d.doc_id for d in batch if not (d.title.strip() or d.text.strip()))
            kept = [d for d in batch if d.title.strip() or d.text.strip()]
            result = indexing.bulk(EVAL_TENANT, [document_entity(d) for d in kept], now)
            report.indexed += result.indexed
            for err in result.errors:
                report.errors.append({**err, "entity_id": kept[int(err["index"])].doc_id})
            bar.update(len(batch))
    report.seconds = time.perf_counter() - started
    return report


def run_queries(
    service: SearchService,
    data: BeirDataset,
    strategy: str,
    limit: int = SEARCH_LIMIT,
    errors: dict[str, str] | None = None,
) -> Run:
    """Every test query through the search service: query id → entity ids, best first. A query the
    service refuses or fails is recorded in `errors` (and ranks nothing) instead of ending the run."""
    run: dict[str, list[str]] = {}
    for qid, text in data.queries.items():
        if not text.strip():
            run[qid] = []
            continue
        request = SearchRequest(query=text, limit=limit, strategy=strategy)  # type: ignore[arg-type]
        try:
            response = service.search(EVAL_TENANT, request)
        except QuarryError as exc:
            if errors is None:
                raise
            errors[qid] = exc.message
            run[qid] = []
            continue
        run[qid] = [r.entity_id for r in response.results]
    return run


ServiceFactory = Callable[[SearchSettings], SearchService]


def evaluate_strategies(
    data: BeirDataset,
    make_service: ServiceFactory,
    strategies: Sequence[str],
    default: SearchSettings,
    query_errors: dict[str, dict[str, str]] | None = None,
) -> tuple[dict[str, Metrics], dict[str, float]]:
    """Metrics and wall time per strategy; each strategy gets its own service (and result cache)."""
    specs = strategy_specs(default)
    unknown = [s for s in strategies if s not in specs]
    if unknown:
        choices = ", ".join(specs)
        raise InvalidInputError(f"unknown strategies {unknown}", {"strategies": f"choose from {choices}"})
    metrics: dict[str, Metrics] = {}
    seconds: dict[str, float] = {}
    for name in strategies:
        spec = specs[name]
        started = time.perf_counter()
        failed = query_errors.setdefault(name, {}) if query_errors is not None else None
        run = run_queries(make_service(spec.settings), data, spec.request_strategy, errors=failed)
        seconds[name] = time.perf_counter() - started
        metrics[name] = evaluate(run, data.qrels)
    return metrics, seconds


def _ordered(strategies: Sequence[str]) -> list[str]:
    """The requested strategies, de-duplicated, with the default always included (last)."""
    chosen = [s for s in dict.fromkeys(strategies) if s != DEFAULT_STRATEGY]
    return [*chosen, DEFAULT_STRATEGY]


def _fresh_sqlite_index(work_dir: Path, keyword_engine: str = "tantivy") -> SqliteIndex:
    from infra.local.sqlite.index import build_sqlite_index

    path = Path(work_dir) / INDEX_FILE
    for stale in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        stale.unlink(missing_ok=True)  # a fresh index every run
    for derived in (".vectors", ".tantivy"):
        shutil.rmtree(path.with_name(path.name + derived), ignore_errors=True)
    return build_sqlite_index(path, keyword_engine="fts5" if keyword_engine == "fts5" else "tantivy")


@contextmanager
def eval_index(settings: Any, dimension: int, kind: str) -> Iterator[SearchIndex | None]:
    """A fresh, empty OpenSearch index for one evaluation (deleted afterwards), or None for the local one.

    It lives beside the production alias on the configured cluster (`<prefix>-eval-<random>`), refreshed
    after every bulk so the queries see every document.
    """
    if kind != "opensearch":
        yield None
        return
    from infra.opensearch import build_index

    prefix = f"{settings.opensearch_index_prefix}-eval-{uuid.uuid4().hex[:8]}"
    scoped = settings.model_copy(update={"opensearch_index_prefix": prefix, "opensearch_refresh": "true"})
    index = build_index(scoped, dimension)
    try:
        yield index
    finally:
        index.drop()


def _eval_container(
    work_dir: Path,
    embedder: Embedder,
    index: SearchIndex,
    registry: EntityTypeRegistry,
    settings: SearchSettings,
) -> Container:
    """The composition root (infra/wiring/root.py) around one evaluation's index, embedder and search settings;
    everything else local and in memory, whatever the environment configures."""
    from infra.config.settings import load_settings
    from infra.local.cache import MemoryCache
    from infra.wiring.root import Container

    local = load_settings(data_dir=work_dir, index="sqlite", state="sqlite", cache="memory")
    parts = {"index": index, "embedder": embedder, "registry": registry, "search_settings": settings}
    return Container(local, **parts, cache=MemoryCache())


def evaluate_dataset(
    data: BeirDataset,
    embedder: Embedder,
    work_dir: Path,
    strategies: Sequence[str] = ALL_STRATEGIES,
    default: SearchSettings | None = None,
    registry: EntityTypeRegistry | None = None,
    progress: bool = True,
    tune: bool = False,
    index: SearchIndex | None = None,
    keyword_engine: str = "tantivy",
) -> EvalReport:
    """Ingest `data` into a fresh index (SQLite under `work_dir` unless an empty `index` is given) and score
    every strategy on its test queries.

    With `tune`, also grid-search the fusion setting on these queries (core.search.fusion_tuning) and report it.
    """
    from infra.local.cache import MemoryCache

    # The evaluation is for long queries too: the search box's limits (1,000 characters, 20 terms) would
    # cut them, so they are lifted here; everything else is the deployment's setting.
    settings = dataclasses.replace(
        default or SearchSettings(), max_query_chars=EVAL_MAX_QUERY_CHARS, max_terms=EVAL_MAX_TERMS
    )
    fresh = None
    if index is None:
        index = fresh = _fresh_sqlite_index(work_dir, keyword_engine)
    c = _eval_container(work_dir, embedder, index, registry or EntityTypeRegistry(), settings)
    ingested = ingest(data, c.indexing, c.clock.now(), progress)
    if fresh is not None:
        fresh.settle()  # rank with the keyword engine alone, not its merge of the newest chunks

    def make_service(s: SearchSettings) -> SearchService:
        return c.override(search_settings=s, cache=MemoryCache()).search  # each strategy its own cache

    query_errors: dict[str, dict[str, str]] = {}
    metrics, seconds = evaluate_strategies(data, make_service, _ordered(strategies), settings, query_errors)
    tuner = c.override(search_settings=settings).fusion_tuning
    return EvalReport(
        dataset=data.name,
        split=data.split,
        queries=len(data.qrels),
        default=DEFAULT_STRATEGY,
        strategies=metrics,
        ingest=ingested,
        search_seconds=seconds,
        query_errors={k: v for k, v in query_errors.items() if v},
        tuning=tuner.tune(EVAL_TENANT, data.queries, data.qrels) if tune else None,
    )


def run_eval(
    dataset_dir: str | Path,
    embedder: Embedder,
    split: str = "test",
    strategies: Sequence[str] = ALL_STRATEGIES,
    default: SearchSettings | None = None,
    work_dir: str | Path | None = None,
    registry: EntityTypeRegistry | None = None,
    progress: bool = True,
    tune: bool = False,
    index: SearchIndex | None = None,
    keyword_engine: str = "tantivy",
) -> EvalReport:
    """Load a BEIR folder and evaluate it (in `work_dir`, else a temporary directory removed afterwards),
    on `index` (fresh and empty) when given, else a fresh SQLite index ranking keywords with
    `keyword_engine`."""
    from infra.beir.datasets import load_beir

    data = load_beir(dataset_dir, split)
    args = (strategies, default, registry, progress, tune, index, keyword_engine)
    if work_dir is not None:
        Path(work_dir).mkdir(parents=True, exist_ok=True)
        return evaluate_dataset(data, embedder, Path(work_dir), *args)
    with tempfile.TemporaryDirectory(prefix="quarry-eval-") as tmp:
        return evaluate_dataset(data, embedder, Path(tmp), *args)
