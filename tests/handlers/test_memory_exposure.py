"""A memory's bookkeeping stays inside: the keys the service stores beside a memory's metadata to filter
and check it (core/memory/metadata.py: `relevance_key`, `content_sha256`, `trust_rank`) appear in no search
hit, GET answer, context block or source, batch read, listing or MCP result. What a caller wrote
(`trust_level`, `pinned`, `relevance_score`, `supersedes`) and the documented counters
(`access_count`, `last_accessed_at`, `superseded_by`: docs/api.md, *Memories*) are shown."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.context.context_api import AssembleRequest, FeedbackRequest
from core.memory.integrity import CONTENT_HASH, TRUST_RANK
from core.memory.relevance import RELEVANCE_KEY
from tests.conftest import api_event, invoke

INTERNAL = (RELEVANCE_KEY, CONTENT_HASH, TRUST_RANK)
MEMORY = {"content": "rotate the signing keys every quarter", "trust_level": "user", "tags": ["ops"]}


def leaks(answer: Any) -> list[str]:
    """The internal keys named anywhere in `answer` (as keys or inside any text of it)."""
    text = json.dumps(answer)
    return [k for k in INTERNAL if k in text]


@pytest.fixture
def stored(local: Any) -> Any:
    """A memory written, superseded once, assembled and named in feedback (every counter set)."""
    put = api_event("put_entity", body=MEMORY, path="/entities/memory/m1")
    assert invoke(put)[0] in (200, 201)
    newer = {**MEMORY, "content": "rotate the signing keys every month", "supersedes": "m1"}
    assert invoke(api_event("put_entity", body=newer, path="/entities/memory/m2"))[0] in (200, 201)
    answer = local.context.assemble("acme", AssembleRequest(query="signing keys", caller="agent"), None)
    local.context.feedback(
        "acme", FeedbackRequest(assembly_id=answer.assembly_id, used_source_ids=["memory:m2"])
    )
    local.reinforcement.flush(local.clock.now() + 60)
    assert "access_count" in local.index.get("acme", [answer_key("m2")])[answer_key("m2")].metadata
    return local


def answer_key(eid: str) -> Any:
    from core.models import EntityKey

    return EntityKey("memory", eid)


def test_the_http_api_shows_no_bookkeeping(stored: Any) -> None:
    answers = {
        "search": invoke(api_event("search", body={"query": "signing keys", "include_superseded": True})),
        "get": invoke(api_event("get_entity", path="/entities/memory/m2")),
        "get superseded": invoke(api_event("get_entity", path="/entities/memory/m1")),
        "list": invoke(api_event("list_entities", query={"type": "memory"})),
        "assemble": invoke(
            api_event("context_assemble", body={"query": "signing keys", "caller": "agent", "log": False})
        ),
    }
    for name, (status, body) in answers.items():
        assert status == 200, (name, body)
        assert leaks(body) == [], (name, body)
    (status, shown) = answers["get"]
    metadata = json.dumps(shown)
    assert "trust_level" in metadata and "access_count" in metadata, shown  # what is public stays


def test_mcp_results_show_no_bookkeeping(stored: Any) -> None:
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client

    from handlers.http_api.auth import Principal
    from handlers.mcp.server import Gate, build_server

    server = build_server(lambda: stored, Gate({}, Principal("acme", frozenset({"read", "write"}))))

    async def work() -> None:
        async with Client(server, raise_exceptions=False) as client:
            calls = {
                "search": {"query": "signing keys", "include_superseded": True},
                "get_entity": {"entity_type": "memory", "entity_id": "m2"},
                "assemble_context": {"query": "signing keys", "caller": "agent"},
                "list_entities": {},
            }
            for name, arguments in calls.items():
                result = await client.call_tool(name, arguments)
                assert not result.is_error, (name, result.content)
                shown = [c.text for c in result.content if hasattr(c, "text")]
                assert leaks([result.structured_content, shown]) == [], (name, result)

    anyio.run(work)
