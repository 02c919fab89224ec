"""Scoring, governance filters and MMR diversity, on hand-made candidates."""

from __future__ import annotations

import numpy as np
import pytest

from core.governance.bundle import RejectReason
from core.governance.overlay import RetrievalPolicy, RoleOverlay, SourcePolicy
from core.governance.query_builder import build_query
from core.governance.screening import SUPPRESS_PENALTY, Scored, screen
from core.governance.selection import (
    NEAR_DUPLICATE_COSINE,
    Similarity,
    cosine_similarity,
    jaccard_similarity,
    select_mmr,
)
from core.governance.terms import freshness, stem, stems, trust_score
from core.models import Candidate, EntityKey
from tests.fakes import NOW
from tests.unit.governance_fakes import overlay


def candidate(doc_id: str, text: str, score: float = 1.0, **fields: object) -> Candidate:
    values: dict[str, object] = {
        "key": EntityKey("document", doc_id),
        "score": score,
        "chunk_no": 0,
        "title": doc_id,
        "text": text,
        "source": "wiki",
        "owner": None,
        "namespace": None,
        "created_at": "2026-01-14T00:00:00Z",
        "updated_at": "",
        "metadata": {"trust": "medium"},
    }
    values.update(fields)
    return Candidate(**values)  # type: ignore[arg-type]


def scored(doc_id: str, final: float, text: str = "") -> Scored:
    c = candidate(doc_id, text)
    return Scored(
        c,
        f"{doc_id}#0",
        stems(text),
        0,
        0,
        final,
        final,
        final,
        final,
        0.6,
        "medium",
        1.0,
        None,
        False,
        False,
        0.0,
        1.0,
        None,
        final,
        (),
    )


def similarity(matrix: list[list[float]]) -> Similarity:
    return Similarity(np.asarray(matrix, dtype=np.float64), "cosine", NEAR_DUPLICATE_COSINE)


# A and A2 say nearly the same thing (0.9); B is different (0.1) but less relevant.
POOL = [scored("a", 0.9), scored("a2", 0.85), scored("b", 0.6)]
SIM = similarity([[1.0, 0.9, 0.1], [0.9, 1.0, 0.1], [0.1, 0.1, 1.0]])


def chosen_ids(selection) -> list[str]:  # type: ignore[no-untyped-def]
    return [s.candidate.key.entity_id for s, _ in selection.chosen]


def test_mmr_with_lambda_one_is_plain_relevance_order() -> None:
    assert chosen_ids(select_mmr(POOL, SIM, k=2, diversity=1.0)) == ["a", "a2"]


def test_mmr_trades_a_redundant_chunk_for_a_different_one() -> None:
    selection = select_mmr(POOL, SIM, k=2, diversity=0.5)
    assert chosen_ids(selection) == ["a", "b"]
    assert [r.reason for r in selection.rejected] == [RejectReason.OVER_LIMIT]
    assert selection.chosen[1][1] == pytest.approx(0.5 * 0.6 - 0.5 * 0.1)


def test_near_duplicates_are_rejected_whatever_lambda_and_room() -> None:
    sim = similarity([[1.0, 0.97, 0.1], [0.97, 1.0, 0.1], [0.1, 0.1, 1.0]])
    selection = select_mmr(POOL, sim, k=10, diversity=1.0)
    assert chosen_ids(selection) == ["a", "b"]
    (dup,) = selection.rejected
    assert dup.reason is RejectReason.NEAR_DUPLICATE and "a#0" in dup.detail and "0.97" in dup.detail


def test_cosine_and_jaccard_similarity_matrices() -> None:
    v = [np.array([1.0, 0.0], np.float32), np.array([3.0, 3.0], np.float32)]
    assert cosine_similarity(v).matrix[0, 1] == pytest.approx(np.sqrt(0.5))
    pool = [scored("x", 1, "rotate the keys"), scored("y", 1, "rotating keys"), scored("z", 1, "bake bread")]
    m = jaccard_similarity(pool).matrix
    assert m[0, 1] == 1.0 and m[0, 2] == 0.0 and m[2, 2] == 1.0


def governed(
    cands: list[Candidate], task: str, vector: list[Candidate] | None = None, **overlay_changes: object
) -> tuple[list[Scored], list]:  # type: ignore[type-arg]
    """Screen `cands` as the lexical list (and, unless given, as the vector list too)."""
    ov = RoleOverlay.model_validate(overlay(**overlay_changes))
    built = build_query(task, ov, None)
    vec = cands if vector is None else vector
    result = screen(cands, vec, built, ov.retrieval_policy, ov.source_policy, "hybrid", NOW)
    return list(result.kept), list(result.rejected)


def by_id(kept: list[Scored]) -> dict[str, Scored]:
    return {s.candidate.key.entity_id: s for s in kept}


def test_relevance_combines_coverage_weighted_bm25_and_cosine() -> None:
    lexical = [
        candidate("full", "rotate database credentials", 8.0),
        candidate("half", "database notes", 4.0),
    ]
    vector = [candidate("full", "rotate database credentials", 0.9), candidate("half", "database notes", 0.5)]
    kept, _ = governed(lexical, "rotate database credentials", vector, vocabulary={})
    full, half = by_id(kept)["full"], by_id(kept)["half"]
    assert full.lexical == pytest.approx(1.0)  # top BM25, every task term
    assert half.lexical == pytest.approx(4.0 / 8.0 * (1 / 3))  # half the top BM25, one term of three
    alpha = RetrievalPolicy().semantic_weight
    assert half.relevance == pytest.approx(alpha * 0.5 + (1 - alpha) * half.lexical)
    assert full.relevance == pytest.approx(alpha * 0.9 + (1 - alpha) * 1.0)


def test_preferred_sources_are_boosted_and_forbidden_ones_rejected() -> None:
    text = "rotate database credentials"
    cands = [
        candidate("pref", text, source="runbooks"),
        candidate("plain", text),
        candidate("bad", text, source="forum"),
    ]
    kept, rejected = governed(cands, text, source_policy={"preferred": ["runbooks"], "forbidden": ["forum"]})
    assert [s.candidate.key.entity_id for s in kept] == ["pref", "plain"]
    assert by_id(kept)["pref"].final > by_id(kept)["plain"].final
    assert [(r.scored.candidate.key.entity_id, r.reason) for r in rejected] == [
        ("bad", RejectReason.FORBIDDEN_SOURCE)
    ]


def test_suppressed_terms_and_anti_goals_halve_the_score() -> None:
    cands = [
        candidate("clean", "rotate database credentials"),
        candidate("forum", "rotate database credentials forum tips"),
        candidate("promo", "rotate database credentials with our marketing copy"),
    ]
    kept, _ = governed(
        cands,
        "rotate database credentials",
        vocabulary={"suppress": ["forum"]},
        anti_goals=["Marketing copy"],
    )
    s = by_id(kept)
    assert s["forum"].penalty == s["promo"].penalty == SUPPRESS_PENALTY
    assert "'forum'" in (s["forum"].penalty_reason or "") and "anti-goal" in (s["promo"].penalty_reason or "")
    assert s["forum"].final < s["clean"].final and s["clean"].penalty == 1.0


def test_trust_weight_reorders_equally_relevant_evidence() -> None:
    text = "rotate database credentials"
    cands = [
        candidate("low", text, metadata={"trust": "low"}),
        candidate("high", text, metadata={"trust": 0.95}),
    ]
    weights = {"relevance": 0.5, "trust": 0.5, "freshness": 0.0, "preference": 0.0}
    kept, _ = governed(cands, text, retrieval_policy={"weights": weights})
    assert [s.candidate.key.entity_id for s in kept] == ["high", "low"]
    assert by_id(kept)["high"].trust_label == "high" and by_id(kept)["low"].trust_label == "low"


def test_min_score_and_rrf_fusion() -> None:
    cands = [candidate("on", "rotate database credentials", 5.0), candidate("off", "bread", 0.1)]
    kept, rejected = governed(cands, "rotate database credentials", retrieval_policy={"fusion": "rrf"})
    assert [s.candidate.key.entity_id for s in kept] == ["on"]
    assert by_id(kept)["on"].fused == 1.0  # top of the RRF list, max-normalised
    (off,) = rejected
    assert off.reason is RejectReason.BELOW_MIN_SCORE and "min_score 0.1" in off.detail


def test_trust_freshness_and_stems() -> None:
    assert trust_score("HIGH") == 1.0 and trust_score(0.3) == 0.3 and trust_score(None) == 0.5
    assert trust_score(True) == 0.5 and trust_score(7) == 1.0
    assert freshness(0.0) == 1.0 and freshness(None) == 1.0 and 0.3 < freshness(7) < 0.35
    assert len({stem(w) for w in ("rotate", "rotates", "rotated", "rotating")}) == 1
    assert stem("policies") == stem("policy") and stem("class") == stem("classes") == "class"
    assert SourcePolicy().min_trust is None
