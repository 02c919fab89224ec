"""The `quarry eval` harness (docs/architecture.md, Evaluation): a BEIR folder → a fresh local index → every
test query through SearchService per strategy → nDCG@10 / Recall@100 / MRR@10 as a table, JSON and a chart.

The corpus goes through the real write path (IndexingService: search text, ~300-token chunks, embeddings)
into a fresh SqliteIndex, with embeddings cached on disk (CachingEmbedder) so a second run embeds
nothing. Strategies:

- keyword, semantic: one retriever (request strategy `keyword` / `semantic`);
- rrf: request `hybrid`, plain RRF k = 60; convex: request `hybrid`, α = 0.6 over max-normalised BM25;
- auto: what POST /search does when the request does not choose — strategy `auto` with the deployment's
  fusion settings. It is always reported and named as `default` in the JSON.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import ConfigurationError, InvalidInputError, QuarryError
from core.indexing.entity_types import EntityTypeRegistry
from core.ports import Embedder, SearchIndex
from core.search.fusion import PLAIN_CONVEX_ALPHA, RRF_K, FusionMethod
from core.search.fusion_tuning import TuningResult
from core.search.planning import SearchSettings
from core.search.ranking_metrics import Metrics, Run, evaluate
from core.search.search_api import SearchRequest
from core.search.search_service import SearchService
from infra.beir import BeirDataset, document_entity

if TYPE_CHECKING:
    from core.indexing.indexing_service import IndexingService
    from infra.local.sqlite_index import SqliteIndex
    from infra.wiring import Container

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
    """The reported strategies; rrf and convex are the seeds' plain formulas (RRF k 60, convex α 0.6), auto is
    the deployment's."""
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


@dataclass(slots=True)
class IngestReport:
    """What loading the corpus did."""

    documents: int = 0
    indexed: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
    # documents with no text at all (Cranfield has two): nothing to index, no retriever can find them;
    # skipped and counted, not failures
    empty: list[str] = field(default_factory=list)
    seconds: float = 0.0


@dataclass(slots=True)
class EvalReport:
    """Figures per strategy on one dataset split, plus how the run went."""

    dataset: str
    split: str
    queries: int
    default: str
    strategies: dict[str, Metrics]
    ingest: IngestReport
    search_seconds: dict[str, float] = field(default_factory=dict)
    tuning: TuningResult | None = None
    # query id → what went wrong, per strategy: a failed query would score 0 and bend every figure
    query_errors: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def failures(self) -> list[str]:
        """What failed, in words (empty when every document was indexed and every query answered)."""
        out = [f"document {e.get('entity_id', e.get('index'))}: {_problem(e)}" for e in self.ingest.errors]
        for strategy, errors in self.query_errors.items():
            out.extend(f"query {qid} ({strategy}): {message}" for qid, message in errors.items())
        return out

    def to_json(self) -> dict[str, Any]:
        """`{"dataset", "queries", "default", "strategies": {name: {ndcg_at_10, recall_at_100, mrr_at_10}}}`."""
        return {
            "dataset": self.dataset,
            "split": self.split,
            "queries": self.queries,
            "default": self.default,
            "strategies": {name: m.as_dict() for name, m in self.strategies.items()},
            "ingest": {
                "documents": self.ingest.documents,
                "indexed": self.ingest.indexed,
                "errors": len(self.ingest.errors),
                "empty": len(self.ingest.empty),
                "seconds": round(self.ingest.seconds, 1),
            },
            "search_seconds": {k: round(v, 2) for k, v in self.search_seconds.items()},
            "query_errors": {k: len(v) for k, v in self.query_errors.items() if v},
            **({"tuning": _tuning_json(self.tuning)} if self.tuning else {}),
        }


def _tuning_json(result: TuningResult) -> dict[str, Any]:
    return {
        "current": result.current.describe(),
        "current_ndcg_at_10": result.current_score,
        "best": result.best.describe(),
        "best_ndcg_at_10": result.best_score,
        "adopt": result.changed,
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


_ITEM_PATH = re.compile(r"^items[.][0-9]+[.]")  # the bulk request's path of a field: not the reader's concern


def _problem(error: dict[str, Any]) -> str:
    """An ingest error in words: each bad field and what is wrong with it."""
    fields = error.get("fields") or {}
    if fields:
        return "; ".join(f"{_ITEM_PATH.sub('', k)}: {v}" for k, v in fields.items())
    return str(error.get("error"))


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
    from infra.local.sqlite_index import SqliteIndex

    path = Path(work_dir) / INDEX_FILE
    for stale in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        stale.unlink(missing_ok=True)  # a fresh index every run
    for derived in (".vectors", ".tantivy"):
        shutil.rmtree(path.with_name(path.name + derived), ignore_errors=True)
    return SqliteIndex(path, keyword_engine="fts5" if keyword_engine == "fts5" else "tantivy")


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
    """The composition root (infra/wiring.py) around one evaluation's index, embedder and search settings;
    everything else local and in memory, whatever the environment configures."""
    from infra.local.cache import MemoryCache
    from infra.settings import load_settings
    from infra.wiring import Container

    local = load_settings(data_dir=work_dir, index="sqlite", state="sqlite", cache="memory")
    parts = {"index": index, "embedder": embedder, "registry": registry, "search_settings": settings}
    return Container(local, overrides={**parts, "cache": MemoryCache()})


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


def format_table(report: EvalReport) -> str:
    """A plain-text table: one row per strategy, the default marked."""
    lines = [
        f"{report.dataset} ({report.split}): {report.queries} queries, "
        f"{report.ingest.indexed}/{report.ingest.documents} documents indexed"
        + (f" ({len(report.ingest.empty)} empty, skipped)" if report.ingest.empty else ""),
        f"{'strategy':<12} {'nDCG@10':>8} {'R@100':>8} {'MRR@10':>8}",
    ]
    for name, m in report.strategies.items():
        label = f"{name}*" if name == report.default else name
        lines.append(f"{label:<12} {m.ndcg_at_10:>8.3f} {m.recall_at_100:>8.3f} {m.mrr_at_10:>8.3f}")
    lines.append("* default: what POST /search uses when the request does not choose a strategy")
    if report.tuning is not None:
        t = report.tuning
        verdict = "adopt it" if t.changed else "keep the current setting"
        lines.append(
            f"fusion tuning: current {t.current.describe()} nDCG@10 {t.current_score:.4f}; "
            f"best {t.best.describe()} {t.best_score:.4f} -> {verdict}"
        )
    return "\n".join(lines)


def plot_report(report: EvalReport, path: str | Path) -> None:
    """A grouped bar chart (PNG, Agg canvas: no display needed) of the three metrics per strategy."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:  # a bench tool, not installed by `make setup`
        raise ConfigurationError(
            "charts need matplotlib: run `make setup-bench` (or pip install 'quarry[bench]')",
            {"--plot": "matplotlib is not installed"},
        ) from exc

    names = list(report.strategies)
    metrics = (("ndcg_at_10", "nDCG@10"), ("recall_at_100", "Recall@100"), ("mrr_at_10", "MRR@10"))
    figure = Figure(figsize=(8, 4.5), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    width = 0.8 / len(metrics)
    for i, (attr, label) in enumerate(metrics):
        xs = [j + (i - 1) * width for j in range(len(names))]
        values = [getattr(report.strategies[n], attr) for n in names]
        bars = axes.bar(xs, values, width, label=label)
        axes.bar_label(bars, labels=[f"{v:.3f}" for v in values], fontsize=7, padding=2)
    axes.set_xticks(range(len(names)), [f"{n} (default)" if n == report.default else n for n in names])
    axes.set_ylim(0, 1.15)  # headroom for the legend above bars that reach 1.0
    axes.set_ylabel("score")
    axes.set_title(f"Quarry retrieval quality — {report.dataset} ({report.split}, {report.queries} queries)")
    axes.legend(loc="upper center", ncol=len(metrics), fontsize=8)
    figure.tight_layout()
    figure.savefig(str(path))


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
    from infra.beir import load_beir

    data = load_beir(dataset_dir, split)
    args = (strategies, default, registry, progress, tune, index, keyword_engine)
    if work_dir is not None:
        Path(work_dir).mkdir(parents=True, exist_ok=True)
        return evaluate_dataset(data, embedder, Path(work_dir), *args)
    with tempfile.TemporaryDirectory(prefix="quarry-eval-") as tmp:
        return evaluate_dataset(data, embedder, Path(tmp), *args)
