"""The StateStore contract: every adapter's test module subclasses `StateStoreContract` and provides a
`store` fixture returning a fresh, empty store. Tenant isolation is checked on every read."""

from __future__ import annotations

import pytest

from core.errors import ConflictError, InvalidInputError
from core.state import CallerBudget, EvalRecord, SourceWeight
from tests.adapters.statestore_data import T1, T2, at, change, entry
from tests.adapters.statestore_learning_contract import LearningContract


class StateStoreContract(LearningContract):
    """Behaviour every StateStore adapter must show (the learning part lives in LearningContract)."""

    # weights, budgets, history

    def test_weights_upsert_list_and_isolation(self, store):
        store.put_weight(T1, SourceWeight("agent", "memory", 1.0, 0.3, False, at(1)), None)
        store.put_weight(T1, SourceWeight("agent", "vault", 0.8, 0.2, False, at(1)), None)
        store.put_weight(T1, SourceWeight("*", "memory", 0.5, 0.1, False, at(1)), None)
        store.put_weight(T1, SourceWeight("agent", "memory", 1.4, 0.35, False, at(2)), None)
        store.put_weight(T2, SourceWeight("agent", "memory", 0.1, 0.05, False, at(3)), None)

        assert store.get_weights(T1, "agent") == [
            SourceWeight("agent", "memory", 1.4, 0.35, False, at(2)),
            SourceWeight("agent", "vault", 0.8, 0.2, False, at(1)),
        ]
        assert [(w.caller, w.source) for w in store.list_weights(T1)] == [
            ("*", "memory"),
            ("agent", "memory"),
            ("agent", "vault"),
        ]
        assert store.list_weights(T2) == [SourceWeight("agent", "memory", 0.1, 0.05, False, at(3))]
        assert store.get_weights(T1, "nobody") == []
        assert store.list_weights("tenant-empty") == []

    def test_caller_names_with_separators_do_not_collide(self, store):
        store.put_weight(T1, SourceWeight("a#b", "memory", 1.0, 0.3), None)
        store.put_weight(T1, SourceWeight("a", "b#memory", 0.7, 0.2), None)
        assert [w.source for w in store.get_weights(T1, "a")] == ["b#memory"]
        assert [w.source for w in store.get_weights(T1, "a#b")] == ["memory"]

    def test_manual_flag_round_trips(self, store):
        store.put_weight(T1, SourceWeight("agent", "vault", 0.9, 0.4, True, at(1)), None)
        assert store.get_weights(T1, "agent")[0].manual is True
        store.put_weight(T1, SourceWeight("agent", "vault", 0.9, 0.4, False, at(2)), None)
        assert store.get_weights(T1, "agent")[0].manual is False

    def test_put_weight_appends_history_only_when_given(self, store):
        store.put_weight(T1, SourceWeight("agent", "memory", 1.1, 0.3), change("agent", "memory", 1.1, at(1)))
        store.put_weight(T1, SourceWeight("agent", "memory", 1.2, 0.3), None)
        assert store.list_history(T1, None, 10) == [change("agent", "memory", 1.1, at(1))]

    def test_history_is_newest_first_filtered_limited_and_isolated(self, store):
        for i, caller in enumerate(["a", "b", "a", "b", "a"]):
            store.put_weight(
                T1, SourceWeight(caller, "memory", 1.0 + i / 10, 0.2), change(caller, "memory", i, at(i))
            )
        store.put_weight(T2, SourceWeight("a", "memory", 0.3, 0.2), change("a", "memory", 99, at(99)))

        assert [c.new_weight for c in store.list_history(T1, None, 10)] == [4, 3, 2, 1, 0]
        assert [c.new_weight for c in store.list_history(T1, "a", 10)] == [4, 2, 0]
        assert [c.new_weight for c in store.list_history(T1, "a", 2)] == [4, 2]
        assert [c.new_weight for c in store.list_history(T2, None, 10)] == [99]
        assert store.list_history(T1, "nobody", 10) == []

    def test_budgets_upsert_get_list_and_isolation(self, store):
        store.put_budget(T1, CallerBudget("agent", 2000, 500, 4000, at(1)))
        store.put_budget(T1, CallerBudget("*", 1500, 500, 3000, at(1)))
        store.put_budget(T1, CallerBudget("agent", 2200, 500, 4000, at(2)))

        assert store.get_budget(T1, "agent") == CallerBudget("agent", 2200, 500, 4000, at(2))
        assert [b.caller for b in store.list_budgets(T1)] == ["*", "agent"]
        assert store.get_budget(T2, "agent") is None
        assert store.list_budgets(T2) == []

    # assembly log and feedback

    def test_logged_assembly_round_trips_and_is_invisible_to_other_tenants(self, store):
        logged = entry("a-1", at(1), namespace="ops")
        store.log_assembly(logged)
        assert store.get_assembly(T1, "a-1") == logged
        assert store.get_assembly(T2, "a-1") is None
        assert store.get_assembly(T1, "missing") is None
        assert store.list_assemblies(T2, None, None, 10, None).entries == ()

    def test_logging_an_id_twice_is_a_conflict_and_keeps_the_first(self, store):
        store.log_assembly(entry("a-1", at(1), caller="first"))
        with pytest.raises(ConflictError):
            store.log_assembly(entry("a-1", at(2), caller="second"))
        assert store.get_assembly(T1, "a-1").caller == "first"
        store.log_assembly(entry("a-1", at(3), tenant=T2))  # ids are per tenant
        assert store.get_assembly(T2, "a-1").created_at == at(3)

    def test_feedback_attaches_and_refuses_unknown_or_foreign_assemblies(self, store):
        store.log_assembly(entry("a-1", at(1)))
        assert store.record_feedback(T1, "a-1", ["m-1"], 90, at(2)) is True
        assert store.record_feedback(T2, "a-1", ["v-9"], 1, at(3)) is False
        assert store.record_feedback(T1, "missing", [], None, at(3)) is False

        stored = store.get_assembly(T1, "a-1")
        assert (stored.used_ids, stored.tokens_used, stored.feedback_at) == (("m-1",), 90, at(2))

    def test_feedback_with_no_used_ids_is_still_feedback(self, store):
        store.log_assembly(entry("a-1", at(1)))
        assert store.record_feedback(T1, "a-1", [], None, at(2))
        assert store.get_assembly(T1, "a-1").used_ids == ()
        assert [e.assembly_id for e in store.unprocessed_assemblies(T1, "agent", 10)] == ["a-1"]

    def test_log_pages_are_newest_first_without_overlap_or_gap(self, store):
        for i in range(25):
            store.log_assembly(entry(f"a-{i:02d}", at(i)))
        seen, cursor, pages = [], None, 0
        while True:
            page = store.list_assemblies(T1, None, None, 10, cursor)
            seen += [e.assembly_id for e in page.entries]
            pages += 1
            cursor = page.next_cursor
            if cursor is None:
                break
        assert pages == 3
        assert seen == [f"a-{i:02d}" for i in reversed(range(25))]

    def test_log_pages_break_timestamp_ties_deterministically(self, store):
        for i in range(7):
            store.log_assembly(entry(f"same-{i}", at(5)))
        first = store.list_assemblies(T1, None, None, 4, None)
        second = store.list_assemblies(T1, None, None, 4, first.next_cursor)
        ids = [e.assembly_id for e in first.entries + second.entries]
        assert sorted(ids) == [f"same-{i}" for i in range(7)] and len(set(ids)) == 7
        assert second.next_cursor is None

    def test_log_cursor_is_stable_under_concurrent_inserts(self, store):
        for i in range(10):
            store.log_assembly(entry(f"old-{i}", at(i)))
        first = store.list_assemblies(T1, None, None, 4, None)
        for i in range(5):
            store.log_assembly(entry(f"new-{i}", at(100 + i)))
        rest, cursor = [], first.next_cursor
        while cursor is not None:
            page = store.list_assemblies(T1, None, None, 4, cursor)
            rest += [e.assembly_id for e in page.entries]
            cursor = page.next_cursor
        assert [e.assembly_id for e in first.entries] + rest == [f"old-{i}" for i in reversed(range(10))]

    def test_log_filters_by_caller_and_namespace_across_pages(self, store):
        for i in range(30):
            caller = ["alpha", "beta"][i % 2]
            namespace = [None, "ops", "dev"][i % 3]
            store.log_assembly(entry(f"a-{i:02d}", at(i), caller=caller, namespace=namespace))
        store.log_assembly(entry("foreign", at(50), tenant=T2, caller="alpha", namespace="ops"))

        def all_pages(caller, namespace):
            ids, cursor = [], None
            while True:
                page = store.list_assemblies(T1, caller, namespace, 3, cursor)
                assert len(page.entries) <= 3
                ids += [e.assembly_id for e in page.entries]
                if (cursor := page.next_cursor) is None:
                    return ids

        expected = [f"a-{i:02d}" for i in reversed(range(30)) if i % 2 == 0 and i % 3 == 1]
        assert all_pages("alpha", "ops") == expected
        assert all_pages("beta", None) == [f"a-{i:02d}" for i in reversed(range(30)) if i % 2 == 1]
        assert all_pages(None, "dev") == [f"a-{i:02d}" for i in reversed(range(30)) if i % 3 == 2]

    def test_a_page_of_exactly_the_remaining_rows_has_no_next_cursor(self, store):
        for i in range(6):
            store.log_assembly(entry(f"a-{i}", at(i)))
        first = store.list_assemblies(T1, None, None, 3, None)
        second = store.list_assemblies(T1, None, None, 3, first.next_cursor)
        assert len(second.entries) == 3 and second.next_cursor is None

    def test_a_forged_cursor_is_invalid_input(self, store):
        store.log_assembly(entry("a-1", at(1)))
        with pytest.raises(InvalidInputError) as err:
            store.list_assemblies(T1, None, None, 10, "not-a-cursor!")
        assert "cursor" in err.value.fields

    def test_callers_are_distinct_sorted_and_per_tenant(self, store):
        for i, caller in enumerate(["zeta", "alpha", "zeta", "mid"]):
            store.log_assembly(entry(f"a-{i}", at(i), caller=caller))
        store.log_assembly(entry("b-1", at(9), tenant=T2, caller="other"))
        assert store.list_callers(T1) == ["alpha", "mid", "zeta"]
        assert store.list_callers(T2) == ["other"]
        assert store.list_callers("tenant-empty") == []

    # overlays and evals

    def test_overlays_crud_and_isolation(self, store):
        overlay = {"mission": "triage", "vocabulary": {"boost": ["p1"], "suppress": []}, "weight": 0.75}
        store.put_overlay(T1, "oncall", overlay)
        assert store.get_overlay(T1, "oncall") == overlay
        assert store.get_overlay(T2, "oncall") is None
        assert store.delete_overlay(T2, "oncall") is False

        store.put_overlay(T1, "writer", {"mission": "docs"})
        store.put_overlay(T2, "auditor", {"mission": "audit"})
        assert store.list_overlays(T1) == ["oncall", "writer"]
        assert store.list_overlays(T2) == ["auditor"]
        assert (T1, "oncall") in store.overlay_owners() and (T2, "auditor") in store.overlay_owners()
        assert store.delete_overlay(T1, "writer") is True
        assert (T1, "writer") not in store.overlay_owners()

        store.put_overlay(T1, "oncall", {"mission": "replaced"})
        assert store.get_overlay(T1, "oncall") == {"mission": "replaced"}
        assert store.delete_overlay(T1, "oncall") is True
        assert store.get_overlay(T1, "oncall") is None
        assert store.delete_overlay(T1, "oncall") is False

    def test_evals_are_newest_first_filtered_limited_and_isolated(self, store):
        for i, name in enumerate(["scifact", "nfcorpus", "scifact"]):
            store.put_eval(T1, EvalRecord(name, at(i), {"ndcg@10": 0.5 + i / 10, "strategy": "rrf"}))
        store.put_eval(T2, EvalRecord("scifact", at(9), {"ndcg@10": 0.1}))

        assert [(r.name, r.at) for r in store.list_evals(T1, None, 10)] == [
            ("scifact", at(2)),
            ("nfcorpus", at(1)),
            ("scifact", at(0)),
        ]
        assert store.list_evals(T1, "scifact", 1) == [
            EvalRecord("scifact", at(2), {"ndcg@10": 0.7, "strategy": "rrf"})
        ]
        assert [r.metrics for r in store.list_evals(T2, None, 10)] == [{"ndcg@10": 0.1}]
