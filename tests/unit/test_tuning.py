"""Fusion tuning: the grid finds the setting the golden set rewards, and never adopts a worse one."""

from __future__ import annotations

import random

from core.models import Candidate, EntityKey
from core.search.fusion import FusionMethod
from core.search.fusion_tuning import (
    FusionSetting,
    QueryLists,
    fused_ranking,
    score_setting,
    settings_grid,
    tune_fusion,
)

CURRENT = FusionSetting(FusionMethod.CONVEX, alpha=0.6)


def cand(doc: str, score: float) -> Candidate:
    return Candidate(
        key=EntityKey("document", doc),
        score=score,
        chunk_no=0,
        title=doc,
        text=doc,
        source="vault",
        owner=None,
        namespace=None,
        created_at="",
        updated_at="",
        metadata={},
    )


def lists(lexical: list[str], vector: list[str], shift: float = 0.0) -> QueryLists:
    """Lists with linearly falling scores: BM25 from 10 down, cosine from 0.9 down."""
    return QueryLists(
        lexical=tuple(cand(d, 10.0 - i) for i, d in enumerate(lexical)),
        vector=tuple(cand(d, 0.9 - 0.05 * i) for i, d in enumerate(vector)),
        alpha_shift=shift,
    )


def test_lexical_golden_set_pulls_alpha_down_and_is_adopted() -> None:
    # Given queries whose relevant document BM25 ranks first while the vector side ranks it last,
    runs = {f"q{i}": lists([f"r{i}", "x", "y"], ["x", "y", "z", f"r{i}"]) for i in range(5)}
    qrels = {f"q{i}": {f"r{i}": 1} for i in range(5)}
    # when tuning from α = 0.6,
    result = tune_fusion(runs, qrels, CURRENT)
    # then a lexical-leaning setting wins, scores perfectly, and replaces the current one.
    assert result.current_score < 1.0
    assert result.best_score == 1.0
    assert result.changed
    assert result.adopted == result.best
    assert fused_ranking(result.adopted, runs["q0"])[0] == "r0"


def test_current_setting_is_kept_when_nothing_beats_it() -> None:
    runs = {"q": lists(["a", "b"], ["a", "b"])}
    result = tune_fusion(runs, {"q": {"a": 1}}, CURRENT)
    assert result.best_score == result.current_score == 1.0
    assert not result.changed
    assert result.adopted == CURRENT


def test_adopted_setting_never_scores_below_current_on_random_golden_sets() -> None:
    rng = random.Random(7)
    docs = [f"d{i}" for i in range(30)]
    for _ in range(10):
        runs = {f"q{i}": lists(rng.sample(docs, 15), rng.sample(docs, 15)) for i in range(8)}
        qrels = {f"q{i}": {rng.choice(docs): rng.randint(1, 2)} for i in range(8)}
        current = FusionSetting(FusionMethod.CONVEX, alpha=rng.choice([0.3, 0.63, 0.8]))
        result = tune_fusion(runs, qrels, current)
        assert score_setting(result.adopted, runs, qrels) >= result.current_score


def test_small_rrf_k_wins_when_single_list_top_hits_are_right() -> None:
    # "a" is first in the lexical list only; "b" is fourth in both. 1/(k+1) beats 2/(k+4) only for small k.
    runs = {"q": lists(["a", "x", "y", "b"], ["u", "v", "w", "b"])}
    rrf_only = [s for s in settings_grid() if s.method is FusionMethod.RRF]
    result = tune_fusion(runs, {"q": {"a": 1}}, FusionSetting(FusionMethod.RRF, rrf_k=60), rrf_only)
    assert result.adopted.method is FusionMethod.RRF
    assert result.adopted.rrf_k < 5
    assert result.adopted.describe() == {"fusion": "rrf", "rrf_k": result.adopted.rrf_k}


def test_alpha_shift_moves_the_query_toward_the_vector_side() -> None:
    setting = FusionSetting(FusionMethod.CONVEX, alpha=0.0)
    assert fused_ranking(setting, lists(["a"], ["b"]))[0] == "a"
    assert fused_ranking(setting, lists(["a"], ["b"], shift=1.0))[0] == "b"


def test_query_missing_from_runs_scores_zero() -> None:
    assert score_setting(CURRENT, {}, {"q": {"a": 1}}) == 0.0
