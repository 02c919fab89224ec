"""Retrieval metrics: hand-computed cases, and agreement with pytrec_eval (trec_eval) on random runs."""

from __future__ import annotations

import math
import random

import pytest

from core.search.ranking_metrics import (
    Metrics,
    evaluate,
    ndcg_at_k,
    per_query,
    ranking_from_scores,
    recall_at_k,
    reciprocal_rank_at_k,
)

RANDOM_SEED = 20240611
RANDOM_QUERIES = 60


def test_perfect_ranking_scores_one_everywhere() -> None:
    judged = {"a": 2, "b": 1}
    assert evaluate({"q": ["a", "b", "x"]}, {"q": judged}) == Metrics(1.0, 1.0, 1.0)


def test_graded_gain_is_linear_and_discount_is_log2() -> None:
    # Given the less relevant document first, DCG = 1/log2(2) + 2/log2(3); ideal = 2 + 1/log2(3).
    value = ndcg_at_k(["b", "a"], {"a": 2, "b": 1}, k=10)
    assert value == pytest.approx((1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)))


def test_documents_below_the_cutoff_earn_nothing() -> None:
    ranking = [f"n{i}" for i in range(10)] + ["a"]
    judged = {"a": 1}
    assert ndcg_at_k(ranking, judged, k=10) == 0.0
    assert reciprocal_rank_at_k(ranking, judged, k=10) == 0.0
    assert recall_at_k(ranking, judged, k=100) == 1.0


def test_mrr_is_reciprocal_of_first_relevant_rank() -> None:
    assert reciprocal_rank_at_k(["x", "y", "a", "b"], {"a": 1, "b": 1}) == pytest.approx(1 / 3)


def test_zero_graded_judgements_are_not_relevant() -> None:
    judged = {"a": 0, "b": 1}
    assert recall_at_k(["a"], judged) == 0.0
    assert reciprocal_rank_at_k(["a", "b"], judged) == 0.5


def test_repeated_ids_count_once() -> None:
    assert ndcg_at_k(["a", "a", "a"], {"a": 1, "b": 1}) < 1.0
    assert recall_at_k(["a", "a"], {"a": 1, "b": 1}) == 0.5


def test_query_without_results_counts_as_zero_in_the_mean() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    scores = per_query({"q1": ["a"]}, qrels)
    assert scores["q2"] == Metrics(0.0, 0.0, 0.0)
    assert evaluate({"q1": ["a"]}, qrels).ndcg_at_10 == 0.5


def test_ties_are_ordered_like_trec_eval() -> None:
    assert ranking_from_scores({"d1": 1.0, "d3": 1.0, "d2": 2.0}) == ["d2", "d3", "d1"]


def _random_case(rng: random.Random) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    docs = [f"d{i}" for i in range(300)]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(RANDOM_QUERIES):
        qid = f"q{q}"
        judged = rng.sample(docs, rng.randint(1, 25))
        qrels[qid] = {d: rng.choice([0, 1, 1, 2, 3, 4]) for d in judged}
        retrieved = rng.sample(docs, rng.randint(0, 150))
        # Coarse scores on purpose: many ties exercise the tie order too.
        run[qid] = {d: float(rng.randint(0, 40)) for d in retrieved}
    return qrels, run


def test_agrees_with_pytrec_eval_on_random_runs() -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, run = _random_case(random.Random(RANDOM_SEED))
    ours = per_query({q: ranking_from_scores(s) for q, s in run.items()}, qrels)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100"})
    theirs = evaluator.evaluate(run)
    top10 = {q: {d: s for d, s in s_.items() if d in ranking_from_scores(s_)[:10]} for q, s_ in run.items()}
    theirs_rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top10)
    compared = 0
    for qid, figures in theirs.items():
        if not run[qid]:
            continue
        assert ours[qid].ndcg_at_10 == pytest.approx(figures["ndcg_cut_10"], abs=1e-4)
        assert ours[qid].recall_at_100 == pytest.approx(figures["recall_100"], abs=1e-4)
        assert ours[qid].mrr_at_10 == pytest.approx(theirs_rr[qid]["recip_rank"], abs=1e-4)
        compared += 1
    assert compared > RANDOM_QUERIES // 2
