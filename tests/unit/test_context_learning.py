"""The learning cycle: effectiveness as docs/architecture.md, The learning cycle, defines it; a caller that
always uses source A and never B moves A up and B down within the clamps; manual rows never move; every change
has a history row; a second run over the same rows changes nothing; budgets grow when saturated and used,
shrink when unused."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from core.context.context_api import ManualWeightRequest
from core.context.learning import (
    EVAL_BATCH_SIZE,
    TOKEN_SHARE_MAX,
    TOKEN_SHARE_MIN,
    WEIGHT_MAX,
    WEIGHT_MIN,
    collect_stats,
    learn,
)
from core.context.learning_service import LearningService
from core.context.sources import SEED_SOURCES
from core.state import AssemblyLogEntry, AssemblySource, CallerBudget, SourceWeight
from core.timestamps import iso_timestamp
from tests.fakes import FakeStateStore

TENANT = "acme"
CALLER = "bot"
A, B = "memory", "vault_index"


class FakeClock:
    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.t = start

    def now(self) -> float:
        self.t += 1.0
        return self.t

    def monotonic(self) -> float:
        return self.t


def entry(
    n: int, used: Sequence[str] | None, budget: int = 2000, total: int = 1900, caller: str = CALLER
) -> AssemblyLogEntry:
    """An assembly returning two items from A (scores 1.0, 0.8) and two from B (1.0, 0.6), 475 tokens each."""
    items = (
        AssemblySource(f"memory:a{n}", A, 1.0, 475),
        AssemblySource(f"memory:a{n}b", A, 0.8, 475),
        AssemblySource(f"document:b{n}", B, 1.0, 475),
        AssemblySource(f"document:b{n}b", B, 0.6, 475),
    )
    return AssemblyLogEntry(
        assembly_id=f"as-{caller}-{n:05d}",
        tenant_id=TENANT,
        caller=caller,
        namespace=None,
        request_id=f"req-{n}",
        query_hash="0" * 64,
        budget=budget,
        total_tokens=total,
        sources=items,
        retrieval_ms=1.0,
        total_ms=2.0,
        created_at=iso_timestamp(1_700_000_000 + n),
        used_ids=tuple(used) if used is not None else None,
    )


def uses_a(n: int) -> list[str]:
    return [f"memory:a{n}", f"memory:a{n}b"]


@pytest.fixture
def state() -> FakeStateStore:
    return FakeStateStore()


@pytest.fixture
def service(state: FakeStateStore) -> LearningService:
    return LearningService(state, FakeClock(), SEED_SOURCES, default_budget=4000)


def log_batch(
    state: FakeStateStore, start: int, used: object = uses_a, count: int = EVAL_BATCH_SIZE, **kw: object
) -> int:
    for n in range(start, start + count):
        e = entry(n, None, **kw)  # type: ignore[arg-type]
        state.log_assembly(e)
        ids = used(n) if callable(used) else used
        state.record_feedback(TENANT, e.assembly_id, ids, None, e.created_at)  # type: ignore[arg-type]
    return start + count


def row(state: FakeStateStore, source: str, caller: str = CALLER) -> SourceWeight | None:
    return next((w for w in state.get_weights(TENANT, caller) if w.source == source), None)


def test_effectiveness_combines_confidence_usage_and_appearance() -> None:
    entries = [entry(0, ["memory:a0"]), entry(1, []), entry(2, ["memory:a2", "memory:a2b"])]
    stats = collect_stats(entries, [A, B])
    a = stats[A]
    assert (a.appearance_rate, a.usage_rate) == (1.0, 0.5)  # 3 of 6 items used
    assert a.confidence == pytest.approx((1.0 + 1.0 + 0.8) / 3)
    assert a.effectiveness == pytest.approx(0.5 * a.confidence + 0.3 * 0.5 + 0.2 * 1.0)
    assert stats[B].effectiveness == pytest.approx(0.2)  # appeared every time, never used


def test_a_source_without_evidence_does_not_move() -> None:
    entries = [entry(n, uses_a(n)) for n in range(EVAL_BATCH_SIZE)]
    rows = {s: SourceWeight(CALLER, s, 1.0, 0.2) for s in (A, B, "psychic_cache")}
    result = learn(CALLER, entries, rows, None, "2030-01-01T00:00:00.000Z")
    assert {w.source for w in result.update.weights} == {A, B}


def test_feedback_that_always_uses_a_moves_a_up_and_b_down_within_the_clamps(
    state: FakeStateStore, service: LearningService
) -> None:
    n, trail = 0, []
    for _ in range(40):
        n = log_batch(state, n)
        report = service.run(TENANT)
        assert report.callers == 1 and report.assemblies == EVAL_BATCH_SIZE
        a, b = row(state, A), row(state, B)
        assert a is not None and b is not None
        trail.append((a.weight, a.token_share, b.weight, b.token_share))
    a_weights, a_shares, b_weights, b_shares = zip(*trail, strict=True)
    assert list(a_weights) == sorted(a_weights) and list(b_weights) == sorted(b_weights, reverse=True)
    assert list(a_shares) == sorted(a_shares) and list(b_shares) == sorted(b_shares, reverse=True)
    assert a_weights[-1] > 1.4 and b_weights[-1] < 0.5  # converging on the clamped targets
    assert a_shares[-1] > 0.3 and b_shares[-1] < 0.1
    for w_a, s_a, w_b, s_b in trail:
        assert WEIGHT_MIN <= w_b < w_a <= WEIGHT_MAX and TOKEN_SHARE_MIN <= s_b < s_a <= TOKEN_SHARE_MAX


def test_every_change_has_a_history_row(state: FakeStateStore, service: LearningService) -> None:
    n = 0
    changes = 0
    for _ in range(5):
        n = log_batch(state, n)
        changes += service.run(TENANT).weights_count
    history = state.list_history(TENANT, CALLER, 1000)
    assert changes == len(history) == 10  # two sources × five cycles
    latest = {h.source: h for h in reversed(history)}
    assert latest[A].new_weight == row(state, A).weight  # type: ignore[union-attr]
    assert "effectiveness" in latest[A].reason


def test_a_manual_row_never_moves(state: FakeStateStore, service: LearningService) -> None:
    pinned = service.set_weight(TENANT, CALLER, B, ManualWeightRequest(weight=1.2, token_share=0.5))
    n = 0
    for _ in range(10):
        n = log_batch(state, n)
        service.run(TENANT)
    b = row(state, B)
    assert b is not None and (b.weight, b.token_share, b.manual) == (1.2, 0.5, True)
    assert pinned.manual
    assert row(state, A).weight > 1.0  # type: ignore[union-attr]  # learning still ran for the others
    # releasing the pin hands the row back to learning
    service.set_weight(TENANT, CALLER, B, ManualWeightRequest(manual=False))
    log_batch(state, n)
    service.run(TENANT)
    assert row(state, B).weight < 1.2  # type: ignore[union-attr]


def test_a_manual_wildcard_row_is_not_overridden_for_a_caller(
    state: FakeStateStore, service: LearningService
) -> None:
    service.set_weight(TENANT, "*", B, ManualWeightRequest(weight=0.9))
    log_batch(state, 0)
    service.run(TENANT)
    assert row(state, B) is None  # no caller row shadows the operator's `*` pin
    assert row(state, B, caller="*").weight == 0.9  # type: ignore[union-attr]


def test_running_the_cycle_twice_changes_nothing_the_second_time(
    state: FakeStateStore, service: LearningService
) -> None:
    log_batch(state, 0)
    first = service.run(TENANT)
    snapshot = (
        state.list_weights(TENANT),
        state.list_budgets(TENANT),
        state.list_history(TENANT, None, 1000),
    )
    second = service.run(TENANT)
    assert first.weights_count > 0
    assert (second.callers, second.assemblies, second.weights_count, second.budgets_count) == (0, 0, 0, 0)
    assert (
        state.list_weights(TENANT),
        state.list_budgets(TENANT),
        state.list_history(TENANT, None, 1000),
    ) == snapshot


def test_fewer_than_a_batch_waits_for_more_feedback(state: FakeStateStore, service: LearningService) -> None:
    log_batch(state, 0, count=EVAL_BATCH_SIZE - 1)
    assert service.run(TENANT).callers == 0
    assert state.list_weights(TENANT) == []


def test_budget_grows_when_saturated_and_used_and_shrinks_when_unused(
    state: FakeStateStore, service: LearningService
) -> None:
    state.put_budget(TENANT, CallerBudget(CALLER, 2000, 1000, 2300))
    n = log_batch(state, 0, used=lambda n: uses_a(n) + [f"document:b{n}"])  # 1425 of 1900 tokens used
    report = service.run(TENANT)
    assert [(b.old_budget, b.new_budget) for b in report.budget_adjustments] == [(2000, 2200)]
    n = log_batch(state, n, used=lambda n: uses_a(n) + [f"document:b{n}"])
    service.run(TENANT)
    assert state.get_budget(TENANT, CALLER).budget == 2300  # type: ignore[union-attr]  # clamped to max
    n = log_batch(state, n, used=[])
    report = service.run(TENANT)
    assert [(b.old_budget, b.new_budget) for b in report.budget_adjustments] == [(2300, 2185)]


def test_an_unsaturated_but_used_batch_keeps_its_budget(
    state: FakeStateStore, service: LearningService
) -> None:
    log_batch(state, 0, total=800)  # 40% full: the budget was not the limit
    assert service.run(TENANT).budget_adjustments == []


def test_callers_and_tenants_learn_separately(state: FakeStateStore, service: LearningService) -> None:
    log_batch(state, 0)
    log_batch(state, 0, caller="other", used=lambda n: [f"document:b{n}"])
    report = service.run(TENANT)
    assert report.callers == 2
    assert row(state, A).weight > 1.0 > row(state, A, caller="other").weight  # type: ignore[union-attr]
    assert service.run("another-tenant").callers == 0


def log_quiet(state: FakeStateStore, start: int, count: int = EVAL_BATCH_SIZE, caller: str = CALLER) -> None:
    """Assemblies logged long before the clock's now, their caller never sending feedback."""
    for n in range(start, start + count):
        state.log_assembly(entry(n, None, caller=caller))


def test_a_caller_that_never_sends_feedback_gets_the_seeds_shrink_for_unused_budget(
    state: FakeStateStore, service: LearningService
) -> None:
    log_quiet(state, 0, count=EVAL_BATCH_SIZE - 1)
    assert service.run(TENANT).callers == 0  # the context-assembly seed's batch size still applies
    log_quiet(state, EVAL_BATCH_SIZE - 1, count=1)
    report = service.run(TENANT)
    assert (report.callers, report.assemblies) == (1, EVAL_BATCH_SIZE)
    assert [(b.old_budget, b.new_budget) for b in report.budget_adjustments] == [(2000, 1900)]  # −5%
    assert report.weight_adjustments == [] and state.list_weights(TENANT) == []  # no evidence, no move
    log_quiet(state, 100)
    service.run(TENANT)
    assert state.get_budget(TENANT, CALLER).budget == 1805  # type: ignore[union-attr]
    assert service.run(TENANT).callers == 0  # every row learned from once


def test_the_shrink_stops_at_the_callers_minimum(state: FakeStateStore, service: LearningService) -> None:
    state.put_budget(TENANT, CallerBudget(CALLER, 1000, 980, 4000))
    log_quiet(state, 0)
    log_quiet(state, 100)
    service.run(TENANT)
    assert state.get_budget(TENANT, CALLER).budget == 980  # type: ignore[union-attr]


def test_recent_assemblies_without_feedback_wait_for_it(state: FakeStateStore) -> None:
    clock = FakeClock(start=1_700_000_000 + 1800.0)  # the assemblies are half an hour old
    service = LearningService(state, clock, SEED_SOURCES, default_budget=4000)
    log_quiet(state, 0)
    assert service.run(TENANT).callers == 0  # feedback may still come
    clock.t += 3600
    assert service.run(TENANT).assemblies == EVAL_BATCH_SIZE


def test_weights_learn_from_the_rows_with_feedback_and_the_budget_from_all(
    state: FakeStateStore, service: LearningService
) -> None:
    n = log_batch(state, 0, count=3)  # 3 with feedback using A's items: half their tokens
    log_quiet(state, n, count=EVAL_BATCH_SIZE - 3)
    report = service.run(TENANT)
    assert report.assemblies == EVAL_BATCH_SIZE
    assert row(state, A).weight > 1.0 > row(state, B).weight  # type: ignore[union-attr]
    assert [b.new_budget for b in report.budget_adjustments] == [1900]  # 15% of tokens used: mostly unused
