"""The contract every SearchIndex adapter passes (SqliteIndex always; OpenSearchIndex live when
QUARRY_OPENSEARCH_URL is set). Subclass and provide an `index` fixture returning a fresh, empty index."""

from __future__ import annotations

from typing import Any

import numpy as np

from core.models import (
    ALL_CHUNKS,
    CandidateQuery,
    Chunk,
    EntityKey,
    EntityRecord,
    Filters,
    LexicalQuery,
    MatchMode,
    Placement,
    WriteOutcome,
)
from core.ports import MetadataTouch
from core.search.filters import parse_filters

DIM = 8


def unit(*values: float) -> np.ndarray:
    vec = np.zeros(DIM, dtype=np.float32)
    vec[: len(values)] = values
    return vec / np.linalg.norm(vec)


def record(
    tenant: str,
    etype: str,
    eid: str,
    text: str,
    version: int = 1,
    vec: np.ndarray | None = None,
    source: str = "memory",
    owner: str | None = None,
    namespace: str | None = None,
    metadata: dict[str, Any] | None = None,
    chunks: list[str] | None = None,
) -> EntityRecord:
    pieces = chunks or [text]
    return EntityRecord(
        tenant_id=tenant,
        key=EntityKey(etype, eid),
        version=version,
        source=source,
        owner=owner,
        namespace=namespace,
        created_at="2026-11-01T00:00:00Z",
        updated_at="2026-11-01T00:00:00Z",
        title=text[:40],
        body={"content": text},
        metadata=metadata or {},
        content_hash=str(hash(text)),
        chunks=tuple(
            Chunk(i, (p.lower(), "", ""), p, vec if vec is not None else unit(1, i + 1))
            for i, p in enumerate(pieces)
        ),
    )


def lex(index: Any, tenant: str, *terms: str, filters: Filters | None = None, k: int = 10) -> list[str]:
    hits = index.lexical(tenant, LexicalQuery(tuple(terms)), filters or Filters(), k)
    return [h.key.entity_id for h in hits]


def vec(index: Any, tenant: str, query: np.ndarray, filters: Filters | None = None, k: int = 10) -> list[str]:
    return [h.key.entity_id for h in index.vector(tenant, query, filters or Filters(), k)]


class SearchIndexContract:
    """Behaviour shared by every SearchIndex implementation."""

    def test_touch_metadata_merges_without_moving_the_version(self, index: Any) -> None:
        index.upsert(record("t", "memory", "m", "quarterly figures", version=3, metadata={"pinned": False}))
        key = EntityKey("memory", "m")
        touch = MetadataTouch(key, 3, {"access_count": 2})
        assert index.touch_metadata("t", [touch]) == [WriteOutcome.APPLIED]
        stored = index.get("t", [key])[key]
        assert (stored.version, dict(stored.metadata)) == (3, {"pinned": False, "access_count": 2})
        floor = parse_filters({"access_count": {"gte": 2}}, (), {"access_count"})
        assert lex(index, "t", "quarterly", filters=floor) == ["m"]  # a range inside the retriever sees it
        assert vec(index, "t", unit(1, 1), floor) == ["m"]
        stale = MetadataTouch(key, 2, {"access_count": 9})
        assert index.touch_metadata("t", [stale, touch]) == [WriteOutcome.NOT_FOUND, WriteOutcome.APPLIED]
        assert index.touch_metadata("u", [touch]) == [WriteOutcome.NOT_FOUND]
        assert index.get("t", [key])[key].metadata["access_count"] == 2

    def test_upsert_then_lexical_and_vector_find_it(self, index: Any) -> None:
        assert (
            index.upsert(record("t", "memory", "a", "rate limiter caps requests", vec=unit(1, 0)))
            is WriteOutcome.APPLIED
        )
        index.upsert(record("t", "memory", "b", "grocery list milk", vec=unit(0, 1)))
        assert lex(index, "t", "limiter") == ["a"]
        assert vec(index, "t", unit(1, 0.1))[0] == "a"
        got = index.retrieve("t", LexicalQuery(("grocery",)), unit(0, 1), Filters(), 5)
        assert [c.key.entity_id for c in got.lexical] == ["b"] and got.vector[0].key.entity_id == "b"

    def test_retrieve_many_answers_each_spec_in_order(self, index: Any) -> None:
        index.upsert(record("t", "memory", "a", "rate limiter caps requests", vec=unit(1, 0)))
        index.upsert(record("t", "vault", "b", "grocery list milk", vec=unit(0, 1), source="vault"))
        specs = [
            CandidateQuery(LexicalQuery(("grocery",)), unit(0, 1), Filters(), 5),
            CandidateQuery(LexicalQuery(("limiter",)), None, Filters(sources=("memory",)), 5),
            CandidateQuery(None, unit(1, 0), Filters(sources=("vault",)), 5),
        ]
        got = index.retrieve_many("t", specs)
        assert [[c.key.entity_id for c in r.lexical] for r in got] == [["b"], ["a"], []]
        assert [[c.key.entity_id for c in r.vector][:1] for r in got] == [["b"], [], ["b"]]

    def test_chunk_vectors_are_the_stored_embeddings(self, index: Any) -> None:
        index.upsert(record("t", "document", "d", "x", chunks=["first part", "second part"]))
        d = EntityKey("document", "d")
        got = index.chunk_vectors("t", [(d, 0), (d, 1), (d, 7), (EntityKey("memory", "nope"), 0)])
        assert set(got) == {(d, 0), (d, 1)}
        assert np.allclose(got[(d, 1)], unit(1, 2), atol=1e-6)
        assert index.chunk_vectors("other", [(d, 0)]) == {}

    def test_every_chunk_vector_of_an_entity_when_asked_for_all_chunks(self, index: Any) -> None:
        index.upsert(record("t", "document", "d", "x", chunks=["first part", "second part"]))
        index.upsert(record("t", "document", "e", "y", chunks=["other"]))
        d = EntityKey("document", "d")
        got = index.chunk_vectors("t", [(d, ALL_CHUNKS)])
        assert set(got) == {(d, 0), (d, 1)}
        assert np.allclose(got[(d, 0)], unit(1, 1), atol=1e-6) and np.allclose(
            got[(d, 1)], unit(1, 2), atol=1e-6
        )
        assert index.chunk_vectors("other", [(d, ALL_CHUNKS)]) == {}

    def test_a_vector_list_for_its_ranking_only_ranks_as_the_whole_one(self, index: Any) -> None:
        # Given entities whose best chunk differs, when the vector list is asked for its ranking only,
        # then it has the same entities, order and scores as the whole list (what it may leave out: which
        # chunk matched, and what shows the entity).
        index.upsert(record("t", "memory", "a", "a", chunks=["a one", "a two"]))
        index.upsert(record("t", "memory", "b", "b", vec=unit(1, 0.2)))
        index.upsert(record("t", "memory", "c", "c", vec=unit(0.1, 1)))
        index.upsert(record("u", "memory", "x", "x", vec=unit(1, 0)))
        query = unit(1, 0.1)
        whole, ranking = index.retrieve_many(
            "t",
            [
                CandidateQuery(None, query, Filters(), 10),
                CandidateQuery(None, query, Filters(), 10, vector_ranking_only=True),
            ],
        )
        assert [c.key for c in ranking.vector] == [c.key for c in whole.vector]
        assert [c.key.entity_id for c in whole.vector] == ["b", "a", "c"]
        assert np.allclose([c.score for c in ranking.vector], [c.score for c in whole.vector], atol=1e-5)
        assert all(
            c.chunk_no in (ALL_CHUNKS, w.chunk_no) for c, w in zip(ranking.vector, whole.vector, strict=True)
        )

    def test_lists_without_display_values_rank_as_the_whole_ones_and_displayed_fills_them(
        self, index: Any
    ) -> None:
        # Given entities of the tenant and another's, when both lists are asked without display values
        # (CandidateQuery.display False), then they hold the same entities, order, scores and matched chunks
        # as the whole lists, and `displayed` gives back exactly the whole candidates, in the order asked.
        index.upsert(record("t", "document", "d", "limiter", chunks=["limiter one", "limiter two"]))
        index.upsert(record("t", "memory", "b", "limiter caps", vec=unit(1, 0.2)))
        index.upsert(record("t", "memory", "c", "token bucket", vec=unit(0.1, 1)))
        index.upsert(record("u", "memory", "x", "limiter", vec=unit(1, 0)))
        lexical, query = LexicalQuery(("limiter",)), unit(1, 0.1)
        whole, lean = index.retrieve_many(
            "t",
            [
                CandidateQuery(lexical, query, Filters(), 10),
                CandidateQuery(lexical, query, Filters(), 10, display=False),
            ],
        )
        for full, ranked in ((whole.lexical, lean.lexical), (whole.vector, lean.vector)):
            assert [(c.key, c.chunk_no) for c in ranked] == [(c.key, c.chunk_no) for c in full]
            assert np.allclose([c.score for c in ranked], [c.score for c in full], atol=1e-5)
            shown = index.displayed("t", list(reversed(ranked)))
            assert [c._replace(score=0.0, handle=None) for c in shown] == [
                c._replace(score=0.0, handle=None) for c in reversed(full)
            ]
            assert [c.score for c in shown] == [c.score for c in reversed(ranked)]
        assert [c.key.entity_id for c in whole.vector] == ["b", "d", "c"]

    def test_displayed_after_writes_shows_the_current_version_and_never_a_deleted_entity(
        self, index: Any
    ) -> None:
        # Given a ranking without display values, when one entity is deleted and another rewritten before
        # the page is displayed, then of the candidates listed without them (a handle) the deleted one is
        # left out and the rewritten one shows its current text (never the version it was ranked at),
        # keeping its place and score; a candidate the index listed with its values (OpenSearch's hits
        # carry them) is given back as it came.
        index.upsert(record("t", "memory", "a", "limiter", vec=unit(1, 0)))
        index.upsert(record("t", "memory", "b", "limiter caps", vec=unit(1, 0.2)))
        index.upsert(record("t", "memory", "c", "limiter bursts", vec=unit(1, 0.4)))
        (lean,) = index.retrieve_many(
            "t", [CandidateQuery(LexicalQuery(("limiter",)), None, Filters(), 10, display=False)]
        )
        index.delete("t", EntityKey("memory", "a"), None)
        index.upsert(record("t", "memory", "c", "limiter bursts, rewritten", version=2, vec=unit(1, 0.4)))
        listed = list(lean.lexical)
        shown = index.displayed("t", listed)
        if all(c.handle is None for c in listed):
            assert shown == listed
            return
        assert [c.key.entity_id for c in shown] == [c.key.entity_id for c in listed if c.key.entity_id != "a"]
        assert {c.key.entity_id: c.text for c in shown}["c"] == "limiter bursts, rewritten"
        assert [c.score for c in shown] == [c.score for c in listed if c.key.entity_id != "a"]
        # never another tenant's: a handle read for the wrong tenant shows nothing
        assert index.displayed("u", [c for c in lean.lexical if c.handle is not None]) == []

    def test_vectors_that_come_with_the_hits_are_the_stored_ones(self, index: Any) -> None:
        # Given entities of one and two chunks, when both lists are asked with their vectors, then any
        # vectors the index returns with the hits are the stored chunk vectors (float16 kept: 1e-3), every
        # chunk of a listed entity, and only the tenant's listed entities.
        index.upsert(record("t", "document", "d", "limiter", chunks=["first part", "second part"]))
        index.upsert(record("t", "memory", "b", "limiter caps", vec=unit(1, 0.2)))
        index.upsert(record("u", "memory", "x", "limiter", vec=unit(1, 0)))
        spec = CandidateQuery(
            LexicalQuery(("limiter",)), unit(1, 0.1), Filters(), 10, True, with_vectors=True
        )
        (got,) = index.retrieve_many("t", [spec])
        listed = {c.key for c in (*got.lexical, *got.vector)}
        assert set(got.vectors) <= listed and EntityKey("memory", "x") not in listed
        for key in got.vectors:
            stored = index.chunk_vectors("t", [(key, ALL_CHUNKS)])
            assert {(key, n) for n in got.vectors[key]} == set(stored)
            for n, v in got.vectors[key].items():
                assert np.allclose(v, stored[(key, n)], atol=1e-3)
        (plain,) = index.retrieve_many("t", [CandidateQuery(None, unit(1, 0.1), Filters(), 10)])
        assert not plain.vectors  # not asked: nothing more comes back

    def test_tenants_are_isolated(self, index: Any) -> None:
        index.upsert(record("t1", "memory", "a", "secret plans", vec=unit(1, 0)))
        assert lex(index, "t2", "secret") == [] and vec(index, "t2", unit(1, 0)) == []
        assert index.get("t2", [EntityKey("memory", "a")]) == {}

    def test_versions_order_writes(self, index: Any) -> None:
        index.upsert(record("t", "memory", "a", "version five text", version=5))
        assert index.upsert(record("t", "memory", "a", "older four text", version=4)) is WriteOutcome.STALE
        assert (
            index.upsert(record("t", "memory", "a", "version five text", version=5)) is WriteOutcome.DUPLICATE
        )
        assert lex(index, "t", "older") == [] and lex(index, "t", "five") == ["a"]
        assert index.get("t", [EntityKey("memory", "a")])[EntityKey("memory", "a")].version == 5

    def test_delete_removes_from_both_retrievers_and_keeps_a_tombstone(self, index: Any) -> None:
        index.upsert(record("t", "memory", "a", "ephemeral note", version=1, vec=unit(1, 0)))
        assert index.delete("t", EntityKey("memory", "a"), 2) is WriteOutcome.APPLIED
        assert lex(index, "t", "ephemeral") == [] and vec(index, "t", unit(1, 0)) == []
        tomb = index.get("t", [EntityKey("memory", "a")])[EntityKey("memory", "a")]
        assert tomb.deleted and tomb.version == 2
        assert index.upsert(record("t", "memory", "a", "ephemeral note", version=1)) is WriteOutcome.STALE
        assert index.upsert(record("t", "memory", "a", "reborn note", version=3)) is WriteOutcome.APPLIED
        assert lex(index, "t", "reborn") == ["a"]

    def test_a_versioned_delete_of_an_unknown_entity_leaves_a_tombstone_older_writes_cannot_pass(
        self, index: Any
    ) -> None:
        key = EntityKey("memory", "a")
        assert index.delete("t", key, None) is WriteOutcome.NOT_FOUND  # no version: nothing to remember
        assert index.delete("t", key, 3) is WriteOutcome.APPLIED
        assert index.upsert(record("t", "memory", "a", "late two", version=2)) is WriteOutcome.STALE
        assert index.upsert(record("t", "memory", "a", "late three", version=3)) is WriteOutcome.DUPLICATE
        assert index.delete("t", key, 10) is WriteOutcome.APPLIED  # a newer delete moves the tombstone on
        assert index.delete("t", key, 5) is WriteOutcome.STALE
        assert index.upsert(record("t", "memory", "a", "late seven", version=7)) is WriteOutcome.STALE
        assert lex(index, "t", "late") == [] and index.get("t", [key])[key].deleted
        assert index.get("t", [key])[key].version == 10

    def test_a_delete_at_the_stored_version_deletes(self, index: Any) -> None:
        key = EntityKey("memory", "a")
        index.upsert(record("t", "memory", "a", "tied note", version=4, vec=unit(1, 0)))
        assert index.delete("t", key, 4) is WriteOutcome.APPLIED
        assert lex(index, "t", "tied") == [] and vec(index, "t", unit(1, 0)) == []
        assert index.get("t", [key])[key].deleted
        assert index.upsert(record("t", "memory", "a", "tied note", version=4)) is not WriteOutcome.APPLIED

    def test_metadata_update_moves_source_owner_and_namespace(self, index: Any) -> None:
        index.upsert(
            record("t", "memory", "m", "payroll figures", source="memory", owner="alice", vec=unit(1, 0))
        )
        key = EntityKey("memory", "m")
        moved = Placement(source="hr-restricted", owner="bob", namespace="hr")
        outcome = index.update_metadata("t", key, 2, {"content": "payroll figures"}, {}, "2026-11-02", moved)
        assert outcome is WriteOutcome.APPLIED
        for filters, expected in [
            (Filters(sources=("memory",)), []),
            (Filters(sources=("hr-restricted",)), ["m"]),
            (Filters(owner="alice"), []),
            (Filters(owners=("bob",)), ["m"]),
            (Filters(exclude_owner="bob"), []),
            (Filters(namespaces=("hr",)), ["m"]),
        ]:
            assert lex(index, "t", "payroll", filters=filters) == expected, filters
            assert vec(index, "t", unit(1, 0), filters) == expected, filters
        stored = index.get("t", [key])[key]
        assert (stored.source, stored.owner, stored.namespace) == ("hr-restricted", "bob", "hr")

    def test_a_term_the_query_repeats_weighs_more(self, index: Any) -> None:
        """Query-term frequency (BM25's query side, as Lucene and bm25s score it)."""
        index.upsert(record("t", "memory", "a", "granite quarry alpha notes"))
        index.upsert(record("t", "memory", "b", "granite quarry beta notes"))
        index.upsert(record("t", "memory", "c", "limestone cave gamma notes"))

        def ranked(weights: tuple[int, int]) -> list[str]:
            query = LexicalQuery(("alpha", "beta"), weights=weights)
            return [h.key.entity_id for h in index.lexical("t", query, Filters(), 10)]

        assert ranked((3, 1))[0] == "a"
        assert ranked((1, 3))[0] == "b"

    def test_metadata_update_keeps_text_and_vectors(self, index: Any) -> None:
        index.upsert(record("t", "task", "a", "fix login", metadata={"status": "open"}, vec=unit(1, 0)))
        key = EntityKey("task", "a")
        outcome = index.update_metadata(
            "t", key, 2, {"content": "fix login"}, {"status": "done"}, "2026-11-02"
        )
        assert outcome is WriteOutcome.APPLIED
        done = Filters(metadata={"status": ("done",)})
        assert lex(index, "t", "login", filters=done) == ["a"] and vec(index, "t", unit(1, 0), done) == ["a"]
        assert lex(index, "t", "login", filters=Filters(metadata={"status": ("open",)})) == []

    def test_filters_apply_inside_retrieval(self, index: Any) -> None:
        index.upsert(
            record(
                "t",
                "memory",
                "mine",
                "shared words",
                owner="agent-1",
                source="agent_memory",
                namespace="ns1",
                vec=unit(1, 0),
            )
        )
        index.upsert(
            record(
                "t",
                "memory",
                "peer",
                "shared words",
                owner="agent-2",
                source="agent_memory",
                namespace="ns2",
                vec=unit(1, 0),
            )
        )
        index.upsert(
            record(
                "t",
                "task",
                "task",
                "shared words",
                source="tasks",
                metadata={"tags": ["a", "b"]},
                vec=unit(1, 0),
            )
        )
        for filters, expected in [
            (Filters(owner="agent-1"), {"mine"}),
            (Filters(exclude_owner="agent-1"), {"peer", "task"}),
            (Filters(owners=("agent-1", "agent-2")), {"mine", "peer"}),
            (Filters(owners=("agent-2",)), {"peer"}),
            (Filters(sources=("tasks",)), {"task"}),
            (Filters(namespaces=("ns2",)), {"peer"}),
            (Filters(entity_types=("memory",)), {"mine", "peer"}),
            (Filters(metadata={"tags": ("b",)}), {"task"}),
        ]:
            assert set(lex(index, "t", "shared", filters=filters)) == expected, filters
            assert set(vec(index, "t", unit(1, 0), filters)) == expected, filters

    def test_chunks_collapse_to_their_entity(self, index: Any) -> None:
        index.upsert(record("t", "document", "doc", "", chunks=["alpha words here", "alpha again there"]))
        hits = index.lexical("t", LexicalQuery(("alpha",)), Filters(), 10)
        assert [h.key.entity_id for h in hits] == ["doc"]
        index.upsert(record("t", "document", "doc", "", version=2, chunks=["beta only"]))
        assert lex(index, "t", "alpha") == []

    def test_prefix_and_fuzzy_matching(self, index: Any) -> None:
        index.upsert(record("t", "memory", "a", "kubernetes deployment"))
        assert lex(index, "t", "kuber") == []
        prefix = index.lexical("t", LexicalQuery(("kuber",), mode=MatchMode.PREFIX), Filters(), 5)
        fuzzy = index.lexical("t", LexicalQuery(("kubernetse",), mode=MatchMode.FUZZY), Filters(), 5)
        assert [h.key.entity_id for h in prefix] == ["a"] and [h.key.entity_id for h in fuzzy] == ["a"]

    def test_k_bounds_and_ordering(self, index: Any) -> None:
        for i in range(5):
            index.upsert(record("t", "memory", f"m{i}", "word " * (i + 1) + "filler", vec=unit(1, i)))
        assert len(lex(index, "t", "word", k=3)) == 3
        assert len(vec(index, "t", unit(1, 0), k=50)) == 5
        scores = [h.score for h in index.vector("t", unit(1, 0), Filters(), 5)]
        assert scores == sorted(scores, reverse=True)
        assert lex(index, "t", "word", k=0) == []

    def test_upsert_many_reports_each_outcome_in_order(self, index: Any) -> None:
        index.upsert(record("t", "memory", "old", "first text", version=5))
        outcomes = index.upsert_many(
            [
                record("t", "memory", "new", "brand new text", version=1),
                record("t", "memory", "old", "stale text", version=4),
                record("t", "memory", "old", "first text", version=5),
            ]
        )
        assert outcomes == [WriteOutcome.APPLIED, WriteOutcome.STALE, WriteOutcome.DUPLICATE]
        assert lex(index, "t", "brand") == ["new"] and lex(index, "t", "stale") == []
