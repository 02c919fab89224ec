"""Golden sets from an overlay's eval_profile: scored per strategy with core.search.ranking_metrics, stored as eval records."""

from __future__ import annotations

import pytest

from core.governance.golden_sets import EVAL_NAME_PREFIX, GOLDEN_STRATEGIES, run_golden_set, run_golden_sets
from core.governance.overlay import RoleOverlay
from core.search.ranking_metrics import ndcg_at_k
from tests.unit.governance_fakes import FakeStateStore, overlay, service

GOLDEN = {
    "golden_set": [
        {
            "id": "q-rotate",
            "task_text": "rotate database credentials",
            "expected_ids": ["rot-runbook", "rot-wiki"],
        },
        {"id": "q-expense", "task_text": "expense reimbursement reports", "expected_ids": ["expense-2025"]},
    ],
    "min_ndcg_at_10": 0.5,
}


def golden_overlay(**changes: object) -> RoleOverlay:
    return RoleOverlay.model_validate(overlay(eval_profile=GOLDEN, **changes))


def test_every_strategy_is_scored_on_the_golden_set() -> None:
    report = run_golden_set(service(), "acme", golden_overlay(source_policy={"forbidden": ["forum"]}))
    assert set(report.strategies) == set(GOLDEN_STRATEGIES) and report.skipped == {}
    assert report.queries == 2 and report.default == "convex"
    for metrics in report.strategies.values():
        assert 0.0 < metrics.ndcg_at_10 <= 1.0 and metrics.recall_at_100 == 1.0
    assert report.passed is True


def test_figures_follow_the_ranking_the_bundle_selected() -> None:
    svc = service()
    ov = golden_overlay(source_policy={"forbidden": ["forum"]})
    report = run_golden_set(svc, "acme", ov, strategies=["keyword"])
    from core.governance.requests import RetrieveRequest

    expected = []
    for q in ov.eval_profile.golden_set:
        bundle = svc.retrieve(
            "acme", RetrieveRequest(role_id="dba", task_text=q.task_text, overlay=ov), "keyword"
        )
        ranking = [c.document_id for c in bundle.selected]
        expected.append(ndcg_at_k(ranking, dict.fromkeys(q.expected_ids, 1)))
    assert report.strategies["keyword"].ndcg_at_10 == pytest.approx(sum(expected) / len(expected))


def test_semantic_is_skipped_without_an_embedder_and_the_rest_still_run() -> None:
    report = run_golden_set(service(embedder=None), "acme", golden_overlay())
    assert set(report.skipped) == {"semantic", "rrf", "convex"}
    assert report.skipped["semantic"] == "no embedder configured"
    assert set(report.strategies) == {"keyword"}
    assert report.passed is None  # the overlay's own strategy (convex) could not run


def test_run_golden_sets_stores_one_record_per_role_with_a_golden_set() -> None:
    svc = service()
    state: FakeStateStore = svc._state  # type: ignore[attr-defined]
    svc.put_overlay("acme", "dba", overlay(eval_profile=GOLDEN))
    svc.put_overlay("acme", "plain", overlay(role_id="plain"))
    reports = run_golden_sets("acme", ["dba", "plain", "missing"], svc, state, "2026-01-15T00:00:00.000Z")
    assert [r.role_id for r in reports] == ["dba"]
    ((tenant, record),) = state.evals
    assert (
        tenant == "acme"
        and record.name == EVAL_NAME_PREFIX + "dba"
        and record.at == "2026-01-15T00:00:00.000Z"
    )
    assert set(record.metrics["strategies"]) == set(GOLDEN_STRATEGIES)
    assert record.metrics["strategies"]["convex"]["ndcg_at_10"] == reports[0].strategies["convex"].ndcg_at_10


def test_tuning_an_overlay_retrieves_each_golden_query_once() -> None:
    """12 fusion settings are scored, yet the index answers each golden query once (one retrieve-once
    tuner); the result equals running each setting from scratch."""
    from core.search.tuning_service import TUNING_ALPHAS, tune_overlay

    svc = service()
    svc.put_overlay("acme", "dba", golden_overlay().model_dump(mode="json"))
    index = svc._index  # type: ignore[attr-defined]
    index.calls = index.vector_reads = 0
    tuning = tune_overlay(svc, "acme", "dba")
    assert index.calls == len(GOLDEN["golden_set"])
    assert index.vector_reads <= len(GOLDEN["golden_set"]) * 2  # the pools' vectors, each read once
    assert len(TUNING_ALPHAS) + 2 == 13  # the current setting, rrf and 11 convex α
    fresh = service()
    fresh.put_overlay("acme", "dba", golden_overlay().model_dump(mode="json"))
    best = golden_overlay(retrieval_policy=tuning.best)
    assert run_golden_set(fresh, "acme", best, (tuning.best["fusion"],)).strategies[
        tuning.best["fusion"]
    ].ndcg_at_10 == pytest.approx(tuning.best_ndcg_at_10)
