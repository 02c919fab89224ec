"""QuarryVectorStore against a real `quarry serve`: langchain-tests' own vector store suite (sync and async)
on a tenant that brings its own vectors (the suite's fake embedding), and what the suite does not ask:
filters, scores, MMR, Quarry's own model when no embedding is given."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore
from langchain_tests.integration_tests import VectorStoreIntegrationTests
from quarry_client.langchain import QuarryVectorStore


class TestQuarryVectorStoreStandard(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self, server: str) -> Iterator[VectorStore]:
        store = QuarryVectorStore(self.get_embeddings(), base_url=server, api_key="k-vectors")
        store.delete()  # empty, whatever an earlier test left
        try:
            yield store
        finally:
            store.delete()


@pytest.fixture
def store(server: str) -> Iterator[QuarryVectorStore]:
    store = QuarryVectorStore(
        VectorStoreIntegrationTests.get_embeddings(), base_url=server, api_key="k-vectors", namespace="extra"
    )
    try:
        yield store
    finally:
        store.delete()


def test_text_and_metadata_round_trip_exactly(store: QuarryVectorStore) -> None:
    text = "  Line one\n\tline two: «unicode» & <tags>  "
    metadata = {"id": 7, "nested": {"a": [1, 2.5, None, True]}, "topic": "rates"}
    [key] = store.add_texts([text], [metadata])
    [found] = store.similarity_search(text, k=1)
    assert found == Document(id=key, page_content=text, metadata=metadata)
    assert store.get_by_ids([key]) == [found]


def test_from_texts_and_more_hits_than_a_search_page(server: str) -> None:
    texts = [f"note {n}" for n in range(105)]
    store = QuarryVectorStore.from_texts(texts, VectorStoreIntegrationTests.get_embeddings(), base_url=server,
                                         api_key="k-vectors", namespace="many")  # fmt: skip
    try:
        hits = store.similarity_search("note 7", k=105)
        assert hits[0].page_content == "note 7" and sorted(d.page_content for d in hits) == sorted(texts)
    finally:
        store.delete()


def test_filters_scores_and_namespaces(store: QuarryVectorStore, server: str) -> None:
    store.add_texts(["apples", "pears", "plums"], [{"topic": "a"}, {"topic": "b"}, {"topic": "a"}])
    scored = store.similarity_search_with_score("pears", k=3)
    assert scored[0][0].page_content == "pears" and scored[0][1] == pytest.approx(1.0)
    assert all(0.0 <= s <= 1.0 for _, s in scored)
    assert [s for _, s in scored] == sorted((s for _, s in scored), reverse=True)
    filtered = store.similarity_search("pears", k=3, filter={"topic": "a"})
    assert {d.page_content for d in filtered} == {"apples", "plums"}
    elsewhere = QuarryVectorStore(store.embedding, base_url=server, api_key="k-vectors", namespace="other")
    assert elsewhere.similarity_search("pears", k=3) == []


class WordCounts(Embeddings):
    """Five words counted, and a constant so no vector is zero: similar texts have similar vectors."""

    WORDS = ("rate", "limit", "clients", "signing", "keys")

    def embed_query(self, text: str) -> list[float]:
        return [float(text.split().count(w)) for w in self.WORDS] + [1.0]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]


def test_mmr_picks_the_best_then_the_most_different(server: str) -> None:
    store = QuarryVectorStore(WordCounts(), base_url=server, api_key="k-vectors", namespace="mmr")
    try:
        texts = ["rate limit", "rate limit", "rate limit clients", "signing keys"]
        store.add_texts(texts, ids=["a", "b", "c", "d"])
        assert [d.id for d in store.similarity_search("rate limit", k=4)][2:] == ["c", "d"]
        picked = store.max_marginal_relevance_search("rate limit", k=2, fetch_k=4, lambda_mult=0.3)
        # the exact duplicate (cosine 1 to the first pick) and the superset (0.87) lose to the least alike
        assert [d.page_content for d in picked] == ["rate limit", "signing keys"]
        assert (
            store.max_marginal_relevance_search_by_vector(WordCounts().embed_query("keys"), k=1)[0].id == "d"
        )
    finally:
        store.delete()


@pytest.mark.asyncio
async def test_quarry_embeds_when_no_embedding_is_given(server: str) -> None:
    store = QuarryVectorStore(base_url=server, api_key="k-admin", namespace="lc-model")
    try:
        ids = await store.aadd_texts(["The nightly backup runs at two", "Invoices are sent monthly"],
                                     [{"source": "ops"}, {"source": "billing"}])  # fmt: skip
        hits = await store.asimilarity_search_with_score("when does the backup run?", k=1)
        assert hits[0][0].id == ids[0] and hits[0][0].metadata == {"source": "ops"}
        assert store.strategy == "auto" and 0 < hits[0][1] <= 1
        diverse = await store.amax_marginal_relevance_search("backup", k=2, fetch_k=5)
        assert diverse[0].id == ids[0]  # without vectors: Quarry's score, and word overlap as similarity
        assert (await store.asimilarity_search("invoices", k=2, filter={"source": "billing"}))[0].id == ids[1]
    finally:
        await store.adelete()
