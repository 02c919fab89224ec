"""A small program using quarry-client's public API: tests/test_typing.py checks it with `mypy --strict` (never
run by the tests; `python typed_program.py` runs it against QUARRY_URL)."""

from __future__ import annotations

import asyncio

from quarry_client import AsyncQuarry, NotFoundError, Quarry, QuarryError, RetryPolicy, models
from quarry_client.langchain import QuarryRetriever, QuarryVectorStore


def titles(client: Quarry, query: str) -> list[str]:
    page: models.SearchResponse = client.search(
        query, limit=5, strategy="hybrid", min_score=0.1, return_fields=["text"], facets=["topic"]
    )
    return [hit.title for hit in page.results]


def fetch(client: Quarry) -> int:
    try:
        found = client.batch_get_entities([("memory", "m-keys")])
    except NotFoundError as err:
        return err.status
    except QuarryError:
        return -1
    budget: models.BudgetOut = client.set_budget("agent", budget=900)
    return len(found.found) + budget.budget


async def first(query: str) -> str | None:
    async with AsyncQuarry(retry=RetryPolicy(total_seconds=5)) as client:
        page = await client.search(query, query_vector=[0.1, 0.2])
        return page.results[0].entity_id if page.results else None


def stores() -> int:
    docs = QuarryVectorStore(namespace="x").similarity_search("q", k=2, filter={"topic": "a"})
    hits = QuarryRetriever(k=2).invoke("q")
    return len(docs) + len(hits)


if __name__ == "__main__":
    with Quarry() as q:
        print(titles(q, "rate limit"), fetch(q), stores())
    print(asyncio.run(first("keys")))
