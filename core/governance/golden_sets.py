"""Golden sets of role overlays (docs/architecture.md, Evaluation): every query of an overlay's eval_profile
goes through governed retrieval per strategy, the selected documents (in order) are scored with
core.search.ranking_metrics's nDCG@10 / Recall@100 / MRR@10 against the expected ids, and the figures are stored as
eval records."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from core.errors import QuarryError
from core.governance.governed_retrieval import GovernedRetrievalService, Reuse, Strategy
from core.governance.overlay import RoleOverlay
from core.governance.requests import RetrieveRequest
from core.ports import Clock, EvalStore
from core.search.ranking_metrics import Metrics, evaluate
from core.state import EvalRecord
from core.timestamps import iso_timestamp

# The strategies every evaluation reports (docs/architecture.md, Evaluation).
GOLDEN_STRATEGIES: tuple[Strategy, ...] = ("keyword", "semantic", "rrf", "convex")
EVAL_NAME_PREFIX = "overlay:"  # eval records are named `overlay:<role_id>`
RELEVANT = 1  # an expected id is a binary judgement (graded relevance 1)


@dataclass(slots=True)
class GoldenReport:
    """Figures of one overlay's golden set per strategy, which strategy the overlay uses, and pass/fail."""

    role_id: str
    queries: int
    default: str
    strategies: dict[str, Metrics] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    min_ndcg_at_10: float | None = None

    @property
    def passed(self) -> bool | None:
        """Whether the default strategy reached min_ndcg_at_10 (None without a bar or a figure)."""
        figure = self.strategies.get(self.default)
        if self.min_ndcg_at_10 is None or figure is None:
            return None
        return figure.ndcg_at_10 >= self.min_ndcg_at_10

    def to_json(self) -> dict[str, Any]:
        """JSON-ready figures (the eval record's metrics)."""
        return {
            "role_id": self.role_id,
            "queries": self.queries,
            "default": self.default,
            "strategies": {name: m.as_dict() for name, m in self.strategies.items()},
            "skipped": dict(self.skipped),
            "min_ndcg_at_10": self.min_ndcg_at_10,
            "passed": self.passed,
        }


def run_golden_set(
    retrieval: GovernedRetrievalService,
    tenant_id: str,
    overlay: RoleOverlay,
    strategies: Sequence[Strategy] = GOLDEN_STRATEGIES,
    reuse: Reuse | None = None,
) -> GoldenReport:
    """Score the overlay's golden set per strategy (a strategy that cannot run is reported as skipped);
    `reuse` lets repeated runs over the same queries share their retrievals (overlay tuning)."""
    golden = overlay.eval_profile.golden_set
    qrels = {q.id: dict.fromkeys(q.expected_ids, RELEVANT) for q in golden}
    report = GoldenReport(
        role_id=overlay.role_id,
        queries=len(golden),
        default=overlay.retrieval_policy.fusion,
        min_ndcg_at_10=overlay.eval_profile.min_ndcg_at_10,
    )
    for strategy in strategies:
        run: dict[str, list[str]] = {}
        for q in golden:
            request = RetrieveRequest(
                role_id=overlay.role_id,
                task_text=q.task_text,
                overlay=overlay,
                context_summary=q.context_summary,
            )
            bundle = retrieval.retrieve(tenant_id, request, strategy=strategy, reuse=reuse)
            if bundle.query.mode == "lexical_degraded":
                report.skipped[strategy] = bundle.diagnostics.degraded_reason or "embedder unavailable"
                break
            run[q.id] = list(dict.fromkeys(c.document_id for c in bundle.selected))
        else:
            report.strategies[strategy] = evaluate(run, qrels)
    return report


def run_golden_sets(
    tenant_id: str,
    role_ids: Sequence[str],
    retrieval: GovernedRetrievalService,
    state: EvalStore,
    at: str,
    strategies: Sequence[Strategy] = GOLDEN_STRATEGIES,
) -> list[GoldenReport]:
    """Run and store (EvalStore.put_eval, name `overlay:<role_id>`) the golden set of each listed role.

    Roles without a stored overlay or without golden queries are skipped; one failing role does not stop
    the others (its error is stored as the record's `error`).
    """
    reports: list[GoldenReport] = []
    for role_id in role_ids:
        overlay = retrieval.find_overlay(tenant_id, role_id)
        if overlay is None or not overlay.eval_profile.golden_set:
            continue
        name = EVAL_NAME_PREFIX + role_id
        try:
            report = run_golden_set(retrieval, tenant_id, overlay, strategies)
        except QuarryError as exc:
            state.put_eval(tenant_id, EvalRecord(name=name, at=at, metrics={"error": exc.message}))
            continue
        state.put_eval(tenant_id, EvalRecord(name=name, at=at, metrics=report.to_json()))
        reports.append(report)
    return reports


class OverlayEvaluation:
    """POST /overlays/{role_id}/eval: run and store one overlay's golden set now (the nightly run does it
    for every overlay with `run_golden_sets`)."""

    def __init__(self, retrieval: GovernedRetrievalService, state: EvalStore, clock: Clock) -> None:
        self._retrieval = retrieval
        self._state = state
        self._clock = clock

    def run(self, tenant_id: str, role_id: str) -> dict[str, Any]:
        """The golden set's report; a 404 for an unknown overlay before anything runs, and a report of no
        queries (saying so) for an overlay without a golden set."""
        self._retrieval.get_overlay(tenant_id, role_id)
        at = iso_timestamp(self._clock.now())
        reports = run_golden_sets(tenant_id, [role_id], self._retrieval, self._state, at)
        if not reports:
            return {
                "role_id": role_id,
                "queries": 0,
                "strategies": {},
                "message": "the overlay has no golden set",
            }
        return reports[0].to_json()
