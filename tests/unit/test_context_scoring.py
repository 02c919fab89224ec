"""One scale for all sources: per-source RRF normalised to [0, 1], × weight × recency, ×0.5 for other
namespaces; budgets and weights resolved caller → `*` → defaults; source slices map onto index filters."""

from __future__ import annotations

import pytest

from core.context.budget import (
    NULL_NAMESPACE_BUDGET,
    BudgetOrigin,
    effective_shares,
    resolve_budget,
    resolve_weights,
)
from core.context.scoring import CROSS_NAMESPACE_SCORE_DISCOUNT, RECENCY_FLOOR, recency, score_source
from core.context.sources import DEFAULT_SOURCES, parse_sources, select_sources, union_filters
from core.errors import InvalidInputError
from core.models import Candidate, CandidateLists, EntityKey
from core.state import CallerBudget, SourceWeight
from core.timestamps import iso_timestamp, parse_timestamp

NOW = parse_timestamp("2026-06-01T12:00:00Z") or 0.0
HOUR = 3600.0


def cand(entity_id: str, score: float, age_hours: float = 0.0, namespace: str | None = None) -> Candidate:
    return Candidate(
        key=EntityKey("memory", entity_id),
        score=score,
        chunk_no=0,
        title=entity_id,
        text=f"text of {entity_id}",
        source="memory",
        owner=None,
        namespace=namespace,
        created_at=iso_timestamp(NOW - age_hours * HOUR),
        updated_at=iso_timestamp(NOW),
        metadata={},
    )


def by_id(items: list) -> dict[str, float]:
    return {i.id: i.score for i in items}


def test_scores_are_normalised_per_source_so_the_best_hit_is_one() -> None:
    got = CandidateLists(lexical=(cand("a", 12.0), cand("b", 3.0)), vector=(cand("b", 0.9), cand("c", 0.5)))
    items = score_source("memory", got, weight=1.0, now=NOW)
    assert [i.id for i in items] == ["memory:b", "memory:a", "memory:c"]  # b is in both lists
    assert items[0].normalised == 1.0 and all(0.0 < i.normalised <= 1.0 for i in items)


def test_weight_and_cross_namespace_discount_multiply_the_score() -> None:
    got = CandidateLists(lexical=(cand("a", 5.0), cand("b", 4.0)))
    plain = by_id(score_source("memory", got, weight=1.0, now=NOW))
    weighted = by_id(score_source("memory", got, weight=1.4, now=NOW))
    cross = score_source("memory", got, weight=1.0, now=NOW, cross_namespace=True)
    assert weighted["memory:a"] == pytest.approx(1.4 * plain["memory:a"])
    assert by_id(cross)["memory:b"] == pytest.approx(CROSS_NAMESPACE_SCORE_DISCOUNT * plain["memory:b"])
    assert all(i.cross_namespace for i in cross)


def test_a_fresher_item_outranks_an_equally_relevant_old_one() -> None:
    # one item lexical-only, the other vector-only at the same rank: equal RRF, so age decides
    got = CandidateLists(
        lexical=(cand("old", 5.0, age_hours=24 * 30),), vector=(cand("new", 0.8, age_hours=1),)
    )
    items = score_source("memory", got, weight=1.0, now=NOW)
    assert [i.id for i in items] == ["memory:new", "memory:old"]
    assert items[1].score == pytest.approx(items[0].normalised * recency(items[1].created_at, NOW))


@pytest.mark.parametrize(
    ("age_days", "expected"),
    # 1/(1 + ln(1 + days)). The shared-utils seed's comment says "a week ≈ 0.5"; its own formula gives 0.325
    # (a day
    # gives 0.59): the formula is the contract, so these are its values.
    [(0, 1.0), (1, 0.591), (7, 0.325), (30, 0.226)],
)
def test_recency_boost_decays_logarithmically(age_days: float, expected: float) -> None:
    assert recency(iso_timestamp(NOW - age_days * 24 * HOUR), NOW) == pytest.approx(expected, abs=0.01)


def test_recency_never_drops_below_the_floor_and_undated_items_get_it() -> None:
    assert recency(iso_timestamp(NOW - 100 * 365 * 24 * HOUR), NOW) == RECENCY_FLOOR
    assert recency("not a date", NOW) == RECENCY_FLOOR


def test_weak_vector_hits_are_dropped_before_fusion() -> None:
    got = CandidateLists(vector=(cand("close", 0.6), cand("noise", 0.05)))
    items = score_source("memory", got, weight=1.0, now=NOW, min_vector_similarity=0.2)
    assert [i.id for i in items] == ["memory:close"]


@pytest.mark.parametrize(
    ("requested", "own", "wild", "namespace", "expected"),
    [
        (700, CallerBudget("a", 3000, 500, 9000), None, None, (700, BudgetOrigin.REQUEST)),
        (
            None,
            CallerBudget("a", 3000, 500, 9000),
            CallerBudget("*", 1200, 500, 9000),
            None,
            (3000, BudgetOrigin.CALLER),
        ),
        (None, None, CallerBudget("*", 1200, 500, 9000), "ns", (1200, BudgetOrigin.WILDCARD)),
        (None, None, None, None, (NULL_NAMESPACE_BUDGET, BudgetOrigin.NO_NAMESPACE)),
        (None, None, None, "ns", (4000, BudgetOrigin.DEFAULT)),
    ],
)
def test_budget_resolution_order(requested, own, wild, namespace, expected) -> None:  # type: ignore[no-untyped-def]
    got = resolve_budget(requested, own, wild, namespace, default_budget=4000)
    assert (got.tokens, got.origin) == expected


def test_weights_fall_back_from_caller_to_wildcard_to_defaults() -> None:
    own = [SourceWeight("bot", "memory", 1.3, 0.5)]
    wild = [SourceWeight("*", "memory", 0.2, 0.1), SourceWeight("*", "vault", 0.7, 0.3, manual=True)]
    rows = resolve_weights(["memory", "vault", "psychic_cache"], own, wild, "bot", configured_count=5)
    assert (rows["memory"].weight, rows["memory"].token_share) == (1.3, 0.5)
    assert (rows["vault"].weight, rows["vault"].manual) == (0.7, True)
    assert (rows["psychic_cache"].weight, rows["psychic_cache"].token_share) == (1.0, 0.2)


def test_shares_over_one_are_scaled_down_and_under_one_kept() -> None:
    rows = {n: SourceWeight("c", n, 1.0, s) for n, s in (("a", 0.8), ("b", 0.8), ("c", 0.4))}
    assert effective_shares(rows) == pytest.approx({"a": 0.4, "b": 0.4, "c": 0.2})
    few = {"a": SourceWeight("c", "a", 1.0, 0.3)}
    assert effective_shares(few) == {"a": 0.3}


def test_own_and_peer_agent_memory_split_by_owner() -> None:
    specs = {s.name: s for s in DEFAULT_SOURCES}
    own = specs["agent_memory_own"].filters("agent-7", "ns")
    peer = specs["agent_memory_peer"].filters("agent-7", None)
    assert (own.sources, own.owner, own.exclude_owner, own.namespaces) == (
        ("agent_memory",),
        "agent-7",
        None,
        ("ns",),
    )
    assert (peer.owner, peer.exclude_owner, peer.namespaces) == (None, "agent-7", ())


def test_sources_are_configurable_and_bad_configuration_names_the_key() -> None:
    specs = parse_sources({"tickets": {"sources": ["tasks"], "entity_types": ["task"], "label": "TICKET"}})
    assert specs[0].filters("x", None).entity_types == ("task",) and specs[0].display == "TICKET"
    with pytest.raises(InvalidInputError) as err:
        parse_sources({"tickets": {"owner": "everyone"}})
    assert "QUARRY_CONTEXT_SOURCES.tickets.owner" in err.value.fields


def test_a_request_may_only_name_configured_sources() -> None:
    assert [s.name for s in select_sources(DEFAULT_SOURCES, ["vault_index", "memory"])] == [
        "vault_index",
        "memory",
    ]
    with pytest.raises(InvalidInputError) as err:
        select_sources(DEFAULT_SOURCES, ["memory", "nope"])
    assert list(err.value.fields) == ["sources.1"]


def test_a_wide_retrieval_splits_back_into_sources_by_owner() -> None:
    specs = {s.name: s for s in DEFAULT_SOURCES}
    mine = Candidate(EntityKey("memory", "a"), 1.0, 0, "", "", "agent_memory", "agent-7", "x", "", "", {})
    theirs = Candidate(EntityKey("memory", "b"), 1.0, 0, "", "", "agent_memory", "agent-2", "x", "", "", {})
    plain = Candidate(EntityKey("memory", "c"), 1.0, 0, "", "", "memory", None, "x", "", "", {})
    owned = [n for n, s in specs.items() if s.matches(mine, "agent-7")]
    others = [n for n, s in specs.items() if s.matches(theirs, "agent-7")]
    assert (owned, others) == (["agent_memory_own"], ["agent_memory_peer"])
    assert [n for n, s in specs.items() if s.matches(plain, "agent-7")] == ["memory"]
    wide = union_filters(list(DEFAULT_SOURCES))
    assert wide.sources == (
        *("agent_memory", "commitments", "ideas", "memory", "people", "projects", "psychic_cache"),
        *("tasks", "vault"),
    )
    assert wide.owner is None and wide.entity_types == ()  # the seed's stores take any type
