"""The learning half of the StateStore contract: selecting pending rows and applying updates atomically."""

from __future__ import annotations

from core.state import MAX_LEARNING_ROWS, CallerBudget, LearningUpdate, SourceWeight
from tests.adapters.statestore_data import (
    FULL_UPDATE_SOURCES,
    T1,
    T2,
    at,
    change,
    entry,
    snapshot,
    update,
    with_feedback,
)


class LearningContract:
    """What every StateStore must do for the learning cycle (two cycles never both apply)."""

    def test_pending_callers_counts_only_unprocessed_rows_with_feedback(self, store):
        with_feedback(store, [f"a-{i}" for i in range(3)], caller="agent")
        with_feedback(store, [f"b-{i}" for i in range(2)], caller="bot", start=10)
        with_feedback(store, [f"c-{i}" for i in range(3)], tenant=T2, caller="agent", start=20)
        for i in range(5):  # no feedback: never pending
            store.log_assembly(entry(f"quiet-{i}", at(40 + i), caller="bot"))

        assert store.pending_callers(3) == [(T1, "agent"), (T2, "agent")]
        assert store.pending_callers(2) == [(T1, "agent"), (T1, "bot"), (T2, "agent")]
        assert store.apply_learning(T1, update(["a-0"]))
        assert store.pending_callers(3) == [(T2, "agent")]

    def test_rows_without_feedback_join_once_settled(self, store):
        for i in range(3):  # no feedback, logged at 0, 1, 2
            store.log_assembly(entry(f"q-{i}", at(i)))
        fed = with_feedback(store, ["f-0", "f-1"], start=10)
        store.log_assembly(entry("q-bot", at(0), caller="bot"))

        assert store.pending_callers(3) == []  # feedback only: 2 rows
        assert store.pending_callers(3, settled_before=at(2)) == [(T1, "agent")]  # + the 2 logged before
        ready = store.unprocessed_assemblies(T1, "agent", 10, settled_before=at(2))
        assert [e.assembly_id for e in ready] == ["q-0", "q-1", *fed]
        assert [e.assembly_id for e in store.unprocessed_assemblies(T1, "agent", 2, at(2))] == ["q-0", "q-1"]
        assert store.apply_learning(T1, update([e.assembly_id for e in ready]))
        assert store.unprocessed_assemblies(T1, "agent", 10, settled_before=at(2)) == []
        assert [e.assembly_id for e in store.unprocessed_assemblies(T1, "agent", 10, at(3))] == ["q-2"]
        assert store.pending_callers(1, settled_before=at(3)) == [(T1, "agent"), (T1, "bot")]

    def test_unprocessed_assemblies_are_oldest_first_with_feedback_only(self, store):
        store.log_assembly(entry("no-feedback", at(0)))
        ids = with_feedback(store, ["a-3", "a-1", "a-2"], start=1)
        with_feedback(store, ["other-caller"], caller="bot", start=10)
        with_feedback(store, ["foreign"], tenant=T2, start=20)

        assert [e.assembly_id for e in store.unprocessed_assemblies(T1, "agent", 10)] == ids
        assert [e.assembly_id for e in store.unprocessed_assemblies(T1, "agent", 2)] == ids[:2]
        assert store.apply_learning(T1, update(ids[:1]))
        assert [e.assembly_id for e in store.unprocessed_assemblies(T1, "agent", 10)] == ids[1:]
        assert store.unprocessed_assemblies(T2, "bot", 10) == []

    def test_apply_learning_writes_everything_and_marks_rows_processed(self, store):
        ids = with_feedback(store, ["a-1", "a-2"])
        assert store.apply_learning(T1, update(ids, weight=1.3)) is True

        assert store.get_weights(T1, "agent") == [SourceWeight("agent", "memory", 1.3, 0.3, False, at(500))]
        assert store.list_history(T1, "agent", 10) == [change("agent", "memory", 1.3, at(500))]
        assert store.get_budget(T1, "agent") == CallerBudget("agent", 2200, 500, 4000, at(500))
        assert all(store.get_assembly(T1, i).processed for i in ids)
        assert store.unprocessed_assemblies(T1, "agent", 10) == []

    def test_a_second_cycle_on_the_same_rows_is_refused_and_changes_nothing(self, store):
        ids = with_feedback(store, ["a-1", "a-2", "a-3"])
        assert store.apply_learning(T1, update(ids, weight=1.3)) is True
        before = snapshot(store)
        assert store.apply_learning(T1, update(ids, weight=0.2)) is False
        assert snapshot(store) == before

    def test_one_already_processed_row_refuses_the_whole_update(self, store):
        ids = with_feedback(store, ["a-1", "a-2", "a-3"])
        assert store.apply_learning(T1, update(ids[:1], weight=1.1))
        before = snapshot(store)
        assert store.apply_learning(T1, update(ids, weight=0.4)) is False
        assert snapshot(store) == before
        assert [e.assembly_id for e in store.unprocessed_assemblies(T1, "agent", 10)] == ids[1:]

    def test_apply_learning_cannot_touch_another_tenants_rows(self, store):
        ids = with_feedback(store, ["a-1"], tenant=T2)
        assert store.apply_learning(T1, update(ids)) is False
        assert store.list_weights(T1) == [] and store.list_budgets(T1) == []
        assert store.get_assembly(T2, "a-1").processed is False

    def test_apply_learning_without_a_budget_keeps_the_budget(self, store):
        store.put_budget(T1, CallerBudget("agent", 1800, 500, 4000, at(1)))
        ids = with_feedback(store, ["a-1"], start=2)
        assert store.apply_learning(T1, LearningUpdate("agent", (), (), None, tuple(ids)))
        assert store.get_budget(T1, "agent") == CallerBudget("agent", 1800, 500, 4000, at(1))
        assert store.get_assembly(T1, "a-1").processed

    def test_a_full_size_learning_update_applies_in_one_piece(self, store):
        ids = with_feedback(store, [f"a-{i:03d}" for i in range(MAX_LEARNING_ROWS)])
        sources = [f"source-{i:02d}" for i in range(FULL_UPDATE_SOURCES)]
        full = LearningUpdate(
            caller="agent",
            weights=tuple(SourceWeight("agent", s, 0.9, 0.05, False, at(900)) for s in sources),
            history=tuple(change("agent", s, 0.9, at(900)) for s in sources),
            budget=CallerBudget("agent", 2100, 500, 4000, at(900)),
            processed_ids=tuple(ids),
        )
        assert store.apply_learning(T1, full) is True
        assert len(store.get_weights(T1, "agent")) == FULL_UPDATE_SOURCES
        assert store.pending_callers(1) == []
