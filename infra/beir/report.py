"""What a BEIR run (`quarry eval`, infra/beir/evaluation.py) reports: how loading the corpus went, nDCG@10 /
Recall@100 / MRR@10 per strategy, the fusion tuning when asked for — as JSON, a plain-text table, or a chart."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.errors import ConfigurationError
from core.search.fusion_tuning import TuningResult
from core.search.ranking_metrics import Metrics


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


_ITEM_PATH = re.compile(r"^items[.][0-9]+[.]")  # the bulk request's path of a field: not the reader's concern


def _problem(error: dict[str, Any]) -> str:
    """An ingest error in words: each bad field and what is wrong with it."""
    fields = error.get("fields") or {}
    if fields:
        return "; ".join(f"{_ITEM_PATH.sub('', k)}: {v}" for k, v in fields.items())
    return str(error.get("error"))


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
