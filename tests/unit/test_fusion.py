"""Fusion formulas: the seeds' numbers, lexical-only hits kept, determinism, monotonicity."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from core.models import Candidate, EntityKey
from core.search.fusion import FusionMethod, fuse, fuse_convex, fuse_rrf, normalise_max


def cand(name: str, score: float) -> Candidate:
    return Candidate(EntityKey("memory", name), score, 0, name, name, "memory", None, None, "", "", {})


def test_rrf_matches_the_seed_example() -> None:
    # seed nexus §3.2: 'a' at rank 1 lexical / 5 semantic, 'b' at 3 / 1 (1-based) → b wins
    lexical = [cand("a", 9), cand("x", 8), cand("b", 7)]
    vector = [cand("b", 0.9), cand("y", 0.8), cand("z", 0.7), cand("w", 0.6), cand("a", 0.5)]
    fused = {f.candidate.key.entity_id: f.score for f in fuse_rrf(lexical, vector)}
    assert abs(fused["a"] - (1 / 61 + 1 / 65)) < 1e-12
    assert abs(fused["b"] - (1 / 63 + 1 / 61)) < 1e-12
    assert fused["b"] > fused["a"]


def test_convex_matches_the_seed_scoring_test() -> None:
    # seed thefold test 5: α = 0.6, vector 0.8, bm25 1.0 → 0.88; vector only → 0.48; bm25 only → 0.4
    fused = {
        f.candidate.key.entity_id: f.score
        for f in fuse_convex([cand("both", 10.0), cand("lex", 10.0)], [cand("both", 0.8), cand("vec", 0.8)])
    }
    assert abs(fused["both"] - 0.88) < 1e-9
    assert abs(fused["vec"] - 0.48) < 1e-9
    assert abs(fused["lex"] - 0.4) < 1e-9


def test_lexical_only_hits_are_kept_and_explained() -> None:
    fused = fuse_convex([cand("lex", 3.0)], [cand("vec", 0.5)])
    lex = next(f for f in fused if f.candidate.key.entity_id == "lex")
    assert lex.lexical_rank == 0 and lex.vector_rank is None


def test_normalise_max_scales_to_one_and_keeps_zeros() -> None:
    keys = [EntityKey("m", str(i)) for i in range(3)]
    assert normalise_max(dict(zip(keys, [2.0, 1.0, 0.0], strict=True))) == dict(
        zip(keys, [1.0, 0.5, 0.0], strict=True)
    )
    assert normalise_max({keys[0]: 0.0}) == {keys[0]: 0.0}
    assert normalise_max({}) == {}


scores = st.lists(st.floats(min_value=0.0, max_value=100.0, allow_nan=False), min_size=1, max_size=15)


@given(scores, scores, st.sampled_from(list(FusionMethod)), st.floats(min_value=0, max_value=1))
def test_fusion_is_deterministic_and_sorted(
    lex: list[float], vec: list[float], method: FusionMethod, alpha: float
) -> None:
    lexical = [cand(f"d{i}", s) for i, s in sorted(enumerate(lex), key=lambda p: -p[1])]
    vector = [cand(f"d{i}", s / 100) for i, s in sorted(enumerate(vec), key=lambda p: -p[1])]
    first = fuse(method, lexical, vector, alpha)
    again = fuse(method, list(lexical), list(vector), alpha)
    assert [f.candidate.key for f in first] == [f.candidate.key for f in again]
    assert [f.score for f in first] == sorted((f.score for f in first), reverse=True)
    assert {f.candidate.key for f in first} == {c.key for c in lexical} | {c.key for c in vector}


@given(st.integers(min_value=1, max_value=8))
def test_rrf_is_monotonic_in_rank(n: int) -> None:
    lexical = [cand(f"d{i}", float(n - i)) for i in range(n)]
    fused = fuse_rrf(lexical, [])
    assert [f.candidate.key.entity_id for f in fused] == [f"d{i}" for i in range(n)]


# one list only (a keyword or a semantic search), duplicates included: fuse's one-list path gives exactly
# what the two-list formulas give (scores, ranks, raw scores, order), for both methods and any α
one_list = st.lists(
    st.tuples(st.integers(0, 12), st.floats(min_value=-1.0, max_value=100.0, allow_nan=False)), max_size=20
)


@given(one_list, st.booleans(), st.sampled_from(list(FusionMethod)), st.floats(min_value=0, max_value=1))
def test_one_list_fusion_equals_the_two_list_formulas(
    hits: list[tuple[int, float]], lexical_side: bool, method: FusionMethod, alpha: float
) -> None:
    cands = [cand(f"d{i}", s) for i, s in hits]
    lexical, vector = (cands, []) if lexical_side else ([], cands)
    general = (
        fuse_rrf(lexical, vector, k=60, alpha=alpha)
        if method is FusionMethod.RRF
        else fuse_convex(lexical, vector, alpha=alpha)
    )
    assert fuse(method, lexical, vector, alpha, 60) == general


# Each leg as an index may return it: best first, but equal scores in whatever order the index happened to
# hold them (insertion or segment order, which an evaluation with a warm embedding cache changes).
tied_leg = st.lists(st.tuples(st.integers(0, 9), st.sampled_from([1.0, 2.0, 3.0])), max_size=12)


def arrival_orders(
    hits: list[tuple[int, float]], data: st.DataObject
) -> tuple[list[Candidate], list[Candidate]]:
    """One leg best first, and the same leg with its equal-score runs shuffled."""
    ordered = [cand(f"d{i}", s) for i, s in sorted(hits, key=lambda p: -p[1])]
    shuffled: list[Candidate] = []
    for score in sorted({c.score for c in ordered}, reverse=True):
        run = [c for c in ordered if c.score == score]
        shuffled += data.draw(st.permutations(run))
    return ordered, shuffled


@given(
    tied_leg, tied_leg, st.sampled_from(list(FusionMethod)), st.floats(min_value=0, max_value=1), st.data()
)
def test_equal_scores_rank_by_key_whatever_order_they_arrived_in(
    lex: list[tuple[int, float]],
    vec: list[tuple[int, float]],
    method: FusionMethod,
    alpha: float,
    data: st.DataObject,
) -> None:
    lexical, lexical_arrived = arrival_orders(lex, data)
    vector, vector_arrived = arrival_orders(vec, data)
    first = fuse(method, lexical, vector, alpha)
    again = fuse(method, lexical_arrived, vector_arrived, alpha)
    assert [(f.candidate.key, f.score, f.lexical_rank, f.vector_rank) for f in first] == [
        (f.candidate.key, f.score, f.lexical_rank, f.vector_rank) for f in again
    ]


@given(
    st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0]), max_size=12),
    st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75]), max_size=12),
    st.sampled_from(list(FusionMethod)),
    st.integers(min_value=0, max_value=14),
)
def test_the_head_of_a_fusion_is_the_whole_rankings_head(
    lex: list[float], vec: list[float], method: FusionMethod, top: int
) -> None:
    """`top` returns what the whole ranking starts with, ties included (few distinct scores: many ties)."""
    lexical = [cand(f"d{i}", s) for i, s in enumerate(lex)]
    vector = [cand(f"d{2 * i}", s) for i, s in enumerate(vec)]
    assert fuse(method, lexical, vector, 0.8, top=top) == fuse(method, lexical, vector, 0.8)[:top]
