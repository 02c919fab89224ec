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

    def test_the_chain_shows_both_ways(self, c: Any) -> None:
        put(c, "old", "the cache ttl is five minutes")
        put(c, "new", "the cache ttl is ten minutes", supersedes="old")
        assert stored(c, "old").body["superseded_by"] == "new"
        assert stored(c, "new").body["supersedes"] == "old"

    def test_deleting_the_newer_restores_the_older(self, c: Any) -> None:
        put(c, "old", "the release train leaves on tuesday")
        put(c, "new", "the release train leaves on thursday", supersedes="old")
        c.indexing.delete(TENANT, "memory", "new", None, c.clock.now())
        for strategy in STRATEGIES:
            assert found(c, "release train leaves", strategy) == ["old"], strategy
        assert "superseded_by" not in stored(c, "old").body

    def test_the_newer_of_two_racing_supersessions_wins_in_either_order(self, c: Any) -> None:
        put(c, "old", "the on call rota starts monday", version=1)
        put(c, "b", "the on call rota starts sunday", supersedes="old", version=5)
        put(c, "a", "the on call rota starts friday", supersedes="old", version=3)  # older: loses
        assert stored(c, "old").body["superseded_by"] == "b"

    def test_supersession_stays_within_the_tenant(self, c: Any) -> None:
        put(c, "old", "rotate the signing keys yearly", tenant="other")
        put(c, "old", "rotate the signing keys yearly")
        put(c, "new", "rotate the signing keys monthly", supersedes="old")
        assert found(c, "rotate signing keys", "keyword", tenant="other") == ["old"]
        assert "superseded_by" not in stored(c, "old", tenant="other").body

    def test_a_replacement_of_the_older_keeps_its_mark(self, c: Any) -> None:
        put(c, "old", "lint with flake8")
        put(c, "new", "lint with ruff", supersedes="old")
        put(c, "old", "lint with flake8 and isort")
        assert found(c, "lint", "keyword") == ["new"]
