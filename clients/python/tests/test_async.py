"""AsyncQuarry against a real `quarry serve`: the same routes as Quarry, awaited; iterators are async."""

from __future__ import annotations

import inspect

import pytest
from quarry_client import AsyncQuarry, BadRequestError, Quarry, models

from tests.conftest import ASYNC_MIN_CHUNKS


def test_the_async_client_has_every_method_of_the_sync_one() -> None:
    def public(cls: type) -> set[str]:
        return {n for n, f in inspect.getmembers(cls, inspect.isfunction) if not n.startswith("_")}

    assert public(AsyncQuarry) == public(Quarry) - {"close"} | {"close"}
    for name in public(Quarry) - {"close"}:
        method = getattr(AsyncQuarry, name)
        assert inspect.iscoroutinefunction(method) or inspect.isasyncgenfunction(method), name


@pytest.mark.asyncio
async def test_search_pages_entities_and_jobs_awaited(server: str) -> None:
    async with AsyncQuarry(server, "k-admin") as client:
        page = await client.search("cache volume", strategy="keyword")
        assert isinstance(page, models.SearchResponse) and {r.entity_id for r in page.results} >= {
            "m-cache",
            "m-host",
        }
        hits = [r.entity_id async for r in client.iter_search("rate limit", limit=1, strategy="keyword")]
        assert len(hits) == len(set(hits)) >= 3
        items = [
            {"type": "memory", "id": f"async-{i}", "content": f"async note {i}"}
            for i in range(ASYNC_MIN_CHUNKS + 2)
        ]
        written = await (await client.bulk_write(items)).wait(timeout=300, interval=0.2)
        assert written.done and written.indexed == ASYNC_MIN_CHUNKS + 2
        listed = [e.entity_id async for e in client.iter_entities("memory", page_size=5)]
        assert {f"async-{i}" for i in range(ASYNC_MIN_CHUNKS + 2)} <= set(listed)
        answer = await client.assemble_context("signing keys", "async-bot")
        assert answer.sources and "ninety days" in answer.context_block
        with pytest.raises(BadRequestError) as bad:
            await client.assemble_context("x", "async-bot", token_budget=0)
        assert "token_budget" in bad.value.fields
