"""`iter_search` over a tenant being written (a tenant of its own, `paging`): every entity present when
the iteration started comes exactly once, in the first ranking's order, as it was then — the first page
pins a snapshot (`keep_alive`) that writes, updates and deletes between pages do not change."""

from __future__ import annotations

from quarry_client import AsyncQuarry, Quarry

QUERY = "paging"
NOTES = 30


def _seed(client: Quarry, word: str = "paging", prefix: str = "p") -> None:
    items = [
        {
            "type": "memory",
            "id": f"{prefix}-{i:02d}",
            "content": f"{word} probe note {i}" + " probe" * (i % 5),
        }
        for i in range(NOTES)
    ]
    written = client.bulk_write(items).wait(timeout=120)
    assert written.indexed == NOTES and not written.errors, written


def test_iter_search_returns_every_entity_once_while_the_tenant_is_written(server: str) -> None:
    with Quarry(server, "k-paging") as client:
        _seed(client)
        before = [(r.entity_id, r.snippet) for r in client.iter_search(QUERY, limit=3, strategy="keyword")]
        assert len(before) == NOTES

        during: list[tuple[str, str]] = []
        for n, r in enumerate(client.iter_search(QUERY, limit=3, strategy="keyword")):
            during.append((r.entity_id, r.snippet))
            if n % 3 == 2:  # the last hit of a page: the next page is asked for after these writes
                page = n // 3
                client.put_entity("memory", f"new-{page}", {"content": "paging paging paging new"})
                client.put_entity("memory", f"p-{NOTES - 1 - page:02d}", {"content": "paging rewritten"})
                client.delete_entity("memory", f"p-{(page + 15) % NOTES:02d}")

        assert during == before


async def test_the_async_iteration_pins_its_first_page_too(server: str) -> None:
    with Quarry(server, "k-paging") as writer:
        _seed(writer, "asyncpaged", "a")
    async with AsyncQuarry(server, "k-paging") as client:
        query = "asyncpaged"
        first = [r.entity_id async for r in client.iter_search(query, limit=4, strategy="keyword")]
        assert len(first) == NOTES
        seen: list[str] = []
        async for r in client.iter_search(query, limit=4, strategy="keyword"):
            seen.append(r.entity_id)
            if len(seen) % 4 == 0:
                await client.put_entity(
                    "memory", f"an-{len(seen)}", {"content": "asyncpaged asyncpaged asyncpaged"}
                )
                await client.delete_entity("memory", f"a-{NOTES - len(seen):02d}")
        assert seen == first
