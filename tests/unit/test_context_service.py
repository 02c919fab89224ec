"""The context use cases (core/context/context_service.py, context_retrieval.py, context_learning.py) through the
composition root with every port a fake (tests/fakes): assemble → feedback → learn, asserting on the
answer and on what the fake state store holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.context.context_api import AssembleRequest, AssembleResponse, FeedbackRequest
from core.context.learning import EVAL_BATCH_SIZE, FEEDBACK_WINDOW_SECONDS
from core.errors import ConflictError, NotFoundError, UnavailableError
from core.models import Filters, LexicalQuery, Vector
from core.tokens import estimate_tokens
from tests.fakes import FakeSearchIndex, FakeStateStore, RaisingEmbedder, fake_container

TENANT, CALLER = "acme", "agent-1"
WORDS = "the harbour crane moves containers from ships to the yard every morning before the tide turns"


@pytest.fixture
def c(tmp_path: Path) -> Any:
    return fake_container(tmp_path)


def write(c: Any, *items: dict[str, Any], tenant: str = TENANT) -> None:
    report = c.indexing.bulk(tenant, list(items), c.clock.now())
    assert not report.errors, report.errors


def memories(n: int, prefix: str = "m") -> list[dict[str, Any]]:
    """`n` memories about the harbour crane, each about 25 tokens."""
    return [{"type": "memory", "id": f"{prefix}-{i:02d}", "content": f"{WORDS} (note {i})"} for i in range(n)]


def documents(n: int) -> list[dict[str, Any]]:
    """`n` vault documents about the harbour crane (the `vault_index` source)."""
    return [
        {"type": "document", "id": f"d-{i:02d}", "title": f"crane manual {i}", "text": WORDS}
        for i in range(n)
    ]


def assemble(c: Any, query: str = "harbour crane", tenant: str = TENANT, **request: Any) -> AssembleResponse:
    fields = {"caller": CALLER, **request}
    return c.context.assemble(tenant, AssembleRequest(query=query, **fields), "req-1")


def state(c: Any) -> FakeStateStore:
    store: FakeStateStore = c.state
    return store


# assembly


def test_the_block_stays_within_the_budget_and_is_logged_as_answered(c: Any) -> None:
    write(c, *memories(40))
    answer = assemble(c, token_budget=300)
    assert 0 < answer.total_tokens <= 300 and answer.token_budget == 300
    assert estimate_tokens(answer.context_block) <= 300
    assert answer.warnings == [] and answer.assembly_id == "a-1"  # the container's id source
    logged = state(c).get_assembly(TENANT, "a-1")
    assert logged is not None and logged.caller == CALLER and logged.budget == 300
    assert [s.id for s in logged.sources] == [s.id for s in answer.sources]
    assert logged.total_tokens == answer.total_tokens


def test_explicit_links_come_first_and_a_missing_one_is_a_warning(c: Any) -> None:
    write(c, *memories(10), {"type": "memory", "id": "m-pinned", "content": "the on-call rota for March"})
    answer = assemble(c, explicit_links=["memory:m-pinned", "memory:m-gone"], token_budget=400)
    assert answer.sources[0].id == "memory:m-pinned" and answer.sources[0].source == "explicit_link"
    assert answer.context_block.index("on-call rota") < answer.context_block.index("harbour crane")
    assert answer.warnings == ["explicit link 'memory:m-gone' not found"]
    assert [s.id for s in answer.sources].count("memory:m-pinned") == 1  # not packed a second time


def test_a_caller_sees_its_own_memory_and_not_another_tenants(c: Any) -> None:
    write(c, {"type": "memory", "id": "mine", "content": WORDS, "source": "agent_memory", "owner": CALLER})
    write(c, {"type": "memory", "id": "theirs", "content": WORDS}, tenant="globex")
    answer = assemble(c)
    assert [(s.id, s.source) for s in answer.sources] == [("memory:mine", "agent_memory_own")]


def test_a_link_to_another_tenants_entity_is_not_found(c: Any) -> None:
    write(c, *memories(3))
    write(c, {"type": "memory", "id": "m-secret", "content": "globex merger terms"}, tenant="globex")
    answer = assemble(c, explicit_links=["memory:m-secret"])
    assert answer.warnings == ["explicit link 'memory:m-secret' not found"]
    assert "merger" not in answer.context_block


# failures


def test_an_embedder_outage_assembles_from_keywords_and_says_so(c: Any) -> None:
    write(c, *memories(3))
    c.override(embedder=RaisingEmbedder())
    answer = assemble(c)
    assert answer.sources and answer.warnings[0].startswith("semantic retrieval skipped, keyword only")
    assert state(c).get_assembly(TENANT, answer.assembly_id or "") is not None


class DownIndex(FakeSearchIndex):
    """An index whose retrievals fail (its writes and reads by key still work)."""

    def retrieve(
        self, tenant_id: str, query: LexicalQuery | None, embedding: Vector | None, filters: Filters, k: int
    ) -> Any:
        raise UnavailableError("index", "cluster unreachable")


def test_when_every_source_fails_the_assembly_fails_and_nothing_is_logged(tmp_path: Path) -> None:
    c = fake_container(tmp_path, index=DownIndex())
    write(c, *memories(3))
    with pytest.raises(UnavailableError, match="source 'memory' skipped"):
        assemble(c)
    assert state(c).assemblies == {}


# feedback and learning


def test_feedback_is_recorded_and_only_for_what_the_assembly_returned(c: Any) -> None:
    write(c, *memories(3))
    answer = assemble(c)
    returned = answer.sources[0].id
    got = c.context.feedback(
        TENANT, FeedbackRequest(assembly_id="a-1", used_source_ids=[returned, "memory:never-shown"])
    )
    assert got.recorded_ids == [returned] and got.ignored_ids == ["memory:never-shown"]
    assert state(c).get_assembly(TENANT, "a-1").used_ids == (returned,)  # type: ignore[union-attr]


@pytest.mark.parametrize(("tenant", "caller"), [(TENANT, "agent-2"), ("globex", CALLER), ("globex", None)])
def test_another_callers_or_tenants_assembly_is_not_found(c: Any, tenant: str, caller: str | None) -> None:
    write(c, *memories(3))
    assemble(c)
    request = FeedbackRequest(assembly_id="a-1", used_source_ids=["memory:m-00"])
    with pytest.raises(NotFoundError):
        c.context.feedback(tenant, request, caller)
    assert state(c).get_assembly(TENANT, "a-1").used_ids is None  # type: ignore[union-attr]


def test_a_caller_that_uses_memory_and_never_the_vault_learns_to_weigh_memory_up(c: Any) -> None:
    # Given assemblies that each return memories and vault documents, and feedback using the memories only
    write(c, *memories(6), *documents(6))
    for _ in range(EVAL_BATCH_SIZE):
        answer = assemble(c, token_budget=400)
        used = [s.id for s in answer.sources if s.source == "memory"]
        assert used and any(s.source == "vault_index" for s in answer.sources)
        c.context.feedback(
            TENANT, FeedbackRequest(assembly_id=answer.assembly_id or "", used_source_ids=used)
        )
    # When the learning cycle runs
    report = c.learning.run(TENANT)
    # Then memory's weight rises above the neutral 1.0 and the vault's falls below it, each with history
    assert report.assemblies == EVAL_BATCH_SIZE
    weights = {w.source: w.weight for w in state(c).get_weights(TENANT, CALLER)}
    assert weights["memory"] > 1.0 > weights["vault_index"]
    assert {h.source for _, h in state(c).history} >= {"memory", "vault_index"}
    assert all(e.processed for e in state(c).assemblies.values())
    # and feedback can no longer change what was learned from
    with pytest.raises(ConflictError):
        c.context.feedback(TENANT, FeedbackRequest(assembly_id="a-1", used_source_ids=[]))


def test_unreported_assemblies_wait_an_hour_then_shrink_the_next_budget(c: Any) -> None:
    write(c, *memories(40))
    for _ in range(EVAL_BATCH_SIZE):
        assemble(c)
    assert c.learning.run(TENANT).assemblies == 0  # the caller may still report
    c.clock.advance(FEEDBACK_WINDOW_SECONDS + 1)
    report = c.learning.run(TENANT)
    assert report.assemblies == EVAL_BATCH_SIZE and state(c).get_weights(TENANT, CALLER) == []
    ((adjustment),) = report.budget_adjustments
    assert adjustment.new_budget < adjustment.old_budget
    assert state(c).get_budget(TENANT, CALLER).budget == adjustment.new_budget  # type: ignore[union-attr]
    assert assemble(c).token_budget == adjustment.new_budget  # the next assembly packs the learned budget
