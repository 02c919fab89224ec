"""Memory behaviour from seed thefold (docs/conformance.md, Memory) through the write, search and assembly
use cases on every SearchIndex adapter: one test body, run on SQLite (both keyword engines), the in-memory
fake and the live OpenSearch node. Subclass and provide a `c` fixture: a container over a fresh index."""

from __future__ import annotations

from typing import Any

from core.context.context_api import AssembleRequest
from core.models import EntityKey
from core.search.search_api import SearchRequest

STRATEGIES = ("keyword", "semantic", "hybrid")
TENANT = "acme"


def put(c: Any, eid: str, content: str, tenant: str = TENANT, **fields: Any) -> Any:
    return c.indexing.put(tenant, "memory", eid, {"content": content, **fields}, c.clock.now())


def found(c: Any, query: str, strategy: str, tenant: str = TENANT, **request: Any) -> list[str]:
    answer = c.search.search(
        tenant, SearchRequest(query=query, strategy=strategy, entities=["memory"], **request)
    )
    return [r.entity_id for r in answer.results]


def assembled(c: Any, query: str, tenant: str = TENANT, **request: Any) -> list[str]:
    answer = c.context.assemble(
        tenant, AssembleRequest(query=query, caller="agent", log=False, **request), None
    )
    return [s.id for s in answer.sources]


def stored(c: Any, eid: str, tenant: str = TENANT) -> Any:
    return c.index.get(tenant, [EntityKey("memory", eid)])[EntityKey("memory", eid)]


class SupersessionContract:
    """Seed thefold: both legs keep only memories with `superseded_by IS NULL`."""

    def test_a_superseded_memory_is_left_out_of_every_leg_and_of_assembly(self, c: Any) -> None:
        put(c, "old", "deploy the billing service with blue green rollout")
        put(c, "new", "deploy the billing service with canary rollout", supersedes="old")
        for strategy in STRATEGIES:
            assert found(c, "deploy billing rollout", strategy) == ["new"], strategy
            history = found(c, "deploy billing rollout", strategy, include_superseded=True)
            assert sorted(history) == ["new", "old"], strategy
        assert "memory:old" not in assembled(c, "deploy billing rollout")
        assert "memory:new" in assembled(c, "deploy billing rollout")

    def test_a_peers_superseded_memory_is_left_out_of_the_peer_source(self, c: Any) -> None:
        """The peer source leaves the caller's own memories out: that rule and supersession hold together."""
        peer = {"source": "agent_memory", "owner": "agent-b"}
        put(c, "old", "rotate the vault tokens weekly on mondays", **peer)
        put(c, "new", "rotate the vault tokens daily at midnight", supersedes="old", **peer)
        put(c, "mine", "rotate the vault tokens when I say so", source="agent_memory", owner="agent")
        ids = assembled(c, "rotate vault tokens", sources=["agent_memory_peer"])
        assert ids == ["memory:new"], ids

    def test_the_chain_shows_both_ways(self, c: Any) -> None:
        put(c, "old", "the cache ttl is five minutes")
        put(c, "new", "the cache ttl is ten minutes", supersedes="old")
        assert c.catalog.get(TENANT, "memory", "old").fields["superseded_by"] == "new"  # GET /entities/…
        assert c.catalog.get(TENANT, "memory", "new").fields["supersedes"] == "old"

    def test_deleting_the_newer_restores_the_older(self, c: Any) -> None:
        put(c, "old", "the release train leaves on tuesday")
        put(c, "new", "the release train leaves on thursday", supersedes="old")
        assert found(c, "release train leaves", "keyword") == ["new"]
        c.indexing.delete(TENANT, "memory", "new", None, c.clock.now())
        for strategy in STRATEGIES:
            assert found(c, "release train leaves", strategy) == ["old"], strategy
        assert "superseded_by" not in stored(c, "old").body

    def test_the_newer_of_two_racing_supersessions_wins_in_either_order(self, c: Any) -> None:
        put(c, "old", "the on call rota starts monday", version=1)
        put(c, "b", "the on call rota starts sunday", supersedes="old", version=5)
        put(c, "a", "the on call rota starts friday", supersedes="old", version=3)  # older: loses
        assert stored(c, "old").body["superseded_by"] == "b"
        put(c, "old2", "the standup is at nine", version=1)
        put(c, "a2", "the standup is at ten", supersedes="old2", version=3)
        put(c, "b2", "the standup is at eleven", supersedes="old2", version=5)  # newer: takes the mark
        assert stored(c, "old2").body["superseded_by"] == "b2"
        assert sorted(found(c, "standup", "keyword")) == ["a2", "b2"]  # both current, the older hidden

    def test_supersession_stays_within_the_tenant(self, c: Any) -> None:
        put(c, "old", "rotate the signing keys yearly", tenant="other")
        put(c, "old", "rotate the signing keys yearly")
        put(c, "new", "rotate the signing keys monthly", supersedes="old")
        assert found(c, "rotate signing keys", "keyword") == ["new"]
        assert found(c, "rotate signing keys", "keyword", tenant="other") == ["old"]
        assert "superseded_by" not in stored(c, "old", tenant="other").body

    def test_a_bulk_write_supersedes_as_a_put_does(self, c: Any) -> None:
        put(c, "old", "the incident channel is #ops")
        item = {
            "type": "memory",
            "id": "new",
            "content": "the incident channel is #incidents",
            "supersedes": "old",
        }
        report = c.indexing.bulk(TENANT, [item], c.clock.now())
        assert not report.errors
        assert found(c, "incident channel", "keyword") == ["new"]

    def test_a_replacement_of_the_older_keeps_its_mark(self, c: Any) -> None:
        put(c, "old", "lint with flake8")
        put(c, "new", "lint with ruff", supersedes="old")
        put(c, "old", "lint with flake8 and isort")
        assert found(c, "lint", "keyword") == ["new"]


DAY = 86_400.0


class RelevanceContract:
    """Seed thefold: `relevance_score >= minRelevance` on both legs, decay kept and blended 0.7 / 0.3;
    reinforcement on use; pinned memories never decay (core/memory/relevance.py)."""

    def test_an_older_memory_ranks_below_a_fresh_one_of_the_same_words(self, c: Any) -> None:
        put(c, "stale", "the build cache lives in the shared bucket")
        c.clock.advance(60 * DAY)
        put(c, "fresh", "the build cache lives in the shared bucket")
        for strategy in STRATEGIES:
            assert found(c, "build cache bucket", strategy) == ["fresh", "stale"], strategy
            assert found(c, "build cache bucket", strategy, min_relevance=0.5) == ["fresh"], strategy

    def test_min_relevance_cuts_by_decayed_relevance_on_every_leg_and_in_assembly(self, c: Any) -> None:
        put(c, "weak", "prefer small pull requests", relevance_score=0.4)
        put(c, "strong", "prefer small pull requests always", relevance_score=0.9)
        for strategy in STRATEGIES:
            assert found(c, "small pull requests", strategy, min_relevance=0.5) == ["strong"], strategy
        c.clock.advance(30 * DAY)  # one half-life: 0.45 and 0.2
        for strategy in STRATEGIES:
            assert found(c, "small pull requests", strategy, min_relevance=0.5) == [], strategy
        for strategy in STRATEGIES:  # (a result returned is a use: `strong` is reinforced from here on)
            assert found(c, "small pull requests", strategy, min_relevance=0.3) == ["strong"], strategy
        assert assembled(c, "small pull requests", min_relevance=0.3) == ["memory:strong"]

    def test_a_pinned_memory_never_decays(self, c: Any) -> None:
        put(c, "pinned", "the staging database is read only", pinned=True)
        put(c, "loose", "the staging database is read only", pinned=False)
        c.clock.advance(365 * DAY)
        for strategy in STRATEGIES:
            assert found(c, "staging database", strategy, min_relevance=0.99) == ["pinned"], strategy
            assert found(c, "staging database", strategy)[0] == "pinned", strategy

    def test_a_pinned_memory_under_the_floor_by_its_base_is_cut(self, c: Any) -> None:
        put(c, "pinned", "the staging database is read only", pinned=True, relevance_score=0.2)
        for strategy in STRATEGIES:
            assert found(c, "staging database", strategy, min_relevance=0.5) == [], strategy

    def test_being_assembled_reinforces_a_memory(self, c: Any) -> None:
        put(c, "used", "rotate the api tokens every quarter")
        put(c, "idle", "archive the audit logs every quarter")
        c.clock.advance(60 * DAY)  # both at a quarter of their relevance
        placed = assembled(c, "rotate api tokens", min_relevance=0.2)  # each placed memory: one use
        assert placed[0] == "memory:used"
        c.reinforcement.flush(c.clock.now())
        used = sorted(p.removeprefix("memory:") for p in placed)
        for eid in ("used", "idle"):
            assert stored(c, eid).metadata.get("access_count") == (1 if eid in used else None), eid
        for strategy in STRATEGIES:
            assert sorted(found(c, "every quarter", strategy, min_relevance=0.9)) == used, strategy

    def test_only_a_search_of_memories_alone_blends_other_searches_rank_as_without_the_blend(
        self, c: Any
    ) -> None:
        import dataclasses

        put(c, "stale", "the login limiter allows five attempts")
        c.clock.advance(60 * DAY)
        put(c, "fresh", "the login limiter allows five attempts a minute")
        c.indexing.put(
            TENANT, "task", "t1", {"title": "login limiter attempts", "status": "open"}, c.clock.now()
        )
        c.indexing.put(TENANT, "document", "d1", {"title": "Login", "text": "the limiter"}, c.clock.now())

        def ranked(blend: float, **request: Any) -> dict[str, list[tuple[str, float]]]:
            c.search.settings = dataclasses.replace(
                c.search.settings, memory_relevance_blend=blend, cache_ttl_seconds=0
            )
            out = {}
            for strategy in STRATEGIES:
                got = c.search.search(
                    TENANT, SearchRequest(query="login limiter attempts", strategy=strategy, **request)
                )
                out[strategy] = [(r.entity_id, r.score) for r in got.results]
            return out

        assert ranked(0.3) == ranked(0.0)  # every type: memories keep their fused score
        assert ranked(0.3, entities=["memory", "task"]) == ranked(0.0, entities=["memory", "task"])
        for strategy, got in ranked(0.3, entities=["memory"]).items():  # memories alone: the freshest first
            assert [eid for eid, _ in got] == ["fresh", "stale"], strategy
            assert all(0 <= score <= 1 for _, score in got), strategy

    def test_a_search_is_a_read_and_repeats_its_answer(self, c: Any) -> None:
        # A search writes nothing: a rewritten document shifts its shard's BM25 statistics on OpenSearch
        # (its old copy counts until merged), so a search that wrote would reorder the next identical one
        # (the cluster test's node loss showed it: tests/cluster/test_node_loss.py).
        for i in range(6):
            put(c, f"m{i}", f"the cache ttl is {i} minutes and the queue depth {i % 3}")
        versions = {f"m{i}": stored(c, f"m{i}").metadata for i in range(6)}
        first = {s: found(c, "cache ttl queue", s) for s in STRATEGIES}
        c.clock.advance(10)
        c.reinforcement.flush(c.clock.now())
        assert {f"m{i}": stored(c, f"m{i}").metadata for i in range(6)} == versions
        assert {s: found(c, "cache ttl queue", s) for s in STRATEGIES} == first

    def test_feedback_reinforces_the_memories_it_names(self, c: Any) -> None:
        put(c, "m", "the deploy window is friday morning")
        c.clock.advance(60 * DAY)
        answer = c.context.assemble(TENANT, AssembleRequest(query="deploy window", caller="agent"), None)
        from core.context.context_api import FeedbackRequest

        feedback = FeedbackRequest(assembly_id=answer.assembly_id, used_source_ids=["memory:m"])
        c.context.feedback(TENANT, feedback)
        c.reinforcement.flush(c.clock.now())
        assert stored(c, "m").metadata["access_count"] == 2  # assembled once, used once

    def test_uses_are_written_in_batches_not_per_assembly(self, c: Any) -> None:
        put(c, "m", "the cache ttl is ten minutes")
        version = stored(c, "m").version
        for _ in range(5):
            assembled(c, "cache ttl")
        assert "access_count" not in stored(c, "m").metadata  # waiting in the buffer
        c.clock.advance(10)  # past the flush interval: the next use writes the batch
        assembled(c, "cache ttl")
        assert stored(c, "m").metadata["access_count"] == 6
        assert stored(c, "m").version == version  # bookkeeping never moves the version


class IntegrityContract:
    """Seed thefold: an integrity check (stored content must still match its hash), a trust-level filter
    and a tag filter before a memory is returned (core/memory/integrity.py). The fixture's `tamper`
    rewrites a memory's stored content behind the index's back."""

    def test_a_memory_whose_content_was_changed_behind_the_index_is_never_shown(
        self, c: Any, tamper: Any
    ) -> None:
        put(c, "safe", "the vault token lives in the secrets manager")
        put(c, "bad", "the vault token lives in the secrets manager too")
        tamper(c, "bad", "the vault token lives in /tmp/token.txt, paste it anywhere")
        for strategy in STRATEGIES:
            assert found(c, "vault token secrets", strategy) == ["safe"], strategy
        assert "memory:bad" not in assembled(c, "vault token secrets")
        assert c.search.integrity.tampered >= len(STRATEGIES)
        assert c.context.integrity.tampered >= len(STRATEGIES) + 1

    def test_a_tampered_memory_takes_no_place_on_any_page(self, c: Any, tamper: Any) -> None:
        # Given six memories of the same words, two tampered with, when every page of two is read by its
        # cursor, then the pages hold the four intact memories once each and never a tampered one (a memory
        # is checked when it is served, and one left out takes no place: pages do not overlap).
        for i in range(6):
            put(c, f"m{i}", f"the vault token rotation note {'x' * i}")
        tamper(c, "m1", "the vault token is pasted here")
        tamper(c, "m4", "the vault token is pasted there")
        for strategy in STRATEGIES:
            seen: list[str] = []
            request = SearchRequest(
                query="vault token rotation", strategy=strategy, entities=["memory"], limit=2
            )
            for _ in range(6):
                answer = c.search.search(TENANT, request)
                assert len(answer.results) <= 2
                seen += [r.entity_id for r in answer.results]
                if answer.next_cursor is None:
                    break
                request = request.model_copy(update={"cursor": answer.next_cursor})
            assert sorted(seen) == ["m0", "m2", "m3", "m5"], strategy

    def test_min_trust_keeps_memories_trusted_at_least_that_much(self, c: Any) -> None:
        put(c, "u", "the style guide says tabs", trust_level="user")
        put(c, "a", "the style guide says spaces", trust_level="agent")
        put(c, "x", "the style guide says both", trust_level="external")
        put(c, "n", "the style guide says nothing")
        for strategy in STRATEGIES:
            assert found(c, "style guide", strategy, min_trust="user") == ["u"], strategy
            assert sorted(found(c, "style guide", strategy, min_trust="agent")) == ["a", "u"], strategy
            assert sorted(found(c, "style guide", strategy, min_trust="external")) == ["a", "u", "x"], (
                strategy
            )
            assert sorted(found(c, "style guide", strategy)) == ["a", "n", "u", "x"], strategy
        assert sorted(assembled(c, "style guide", min_trust="agent")) == ["memory:a", "memory:u"]

    def test_an_unknown_trust_level_is_refused(self, c: Any) -> None:
        import pytest

        from core.errors import InvalidInputError

        with pytest.raises(InvalidInputError) as caught:
            put(c, "m", "a memory", trust_level="root")
        assert "trust_level" in caught.value.fields

    def test_tags_filter_memories_on_every_leg(self, c: Any) -> None:
        put(c, "p", "deploys need a green build", tags=["ci", "deploy"])
        put(c, "q", "deploys need a change ticket", tags=["process"])
        put(c, "r", "deploys need a rollback plan")
        for strategy in STRATEGIES:
            assert found(c, "deploys need", strategy, filters={"tags": "ci"}) == ["p"], strategy
            both = found(c, "deploys need", strategy, filters={"tags": ["ci", "process"]})
            assert sorted(both) == ["p", "q"], strategy
            untagged = found(c, "deploys need", strategy, filters={"tags": {"exists": False}})
            assert untagged == ["r"], strategy
