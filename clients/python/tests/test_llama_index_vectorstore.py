"""The LlamaIndex vector store against a real `quarry serve`: VectorStoreIndex.from_vector_store answering
with MetadataFilters, nodes coming back as they were added, delete by ref doc; bookkeeping metadata hidden
from LLMs; MetadataFilters mapped to Quarry's filters."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from llama_index.core import Document, MockEmbedding, StorageContext, VectorStoreIndex
from llama_index.core.schema import MetadataMode, TextNode
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)
from pydantic import ValidationError
from quarry_client.llama_index import QuarryRetriever, QuarryVectorStore, quarry_filters

NO_VECTORS = MockEmbedding(embed_dim=1)  # Quarry embeds: the index's own vectors are never sent


@pytest.fixture
def store(server: str) -> Iterator[QuarryVectorStore]:
    store = QuarryVectorStore(server, "k-admin", namespace="li-store")
    store.clear()
    try:
        yield store
    finally:
        store.clear()


def test_an_index_over_the_store_answers_with_filters_and_deletes_by_ref_doc(
    store: QuarryVectorStore,
) -> None:
    docs = [
        Document(
            id_="runbook", text="Restart the ingest worker when the queue stalls.", metadata={"topic": "ops"}
        ),
        Document(
            id_="pricing", text="The ingest plan costs ten dollars a month.", metadata={"topic": "sales"}
        ),
    ]
    context = StorageContext.from_defaults(vector_store=store)
    VectorStoreIndex.from_documents(docs, storage_context=context, embed_model=NO_VECTORS)
    index = VectorStoreIndex.from_vector_store(store, embed_model=NO_VECTORS)
    ops_only = MetadataFilters(filters=[MetadataFilter(key="topic", value="ops")])
    hits = index.as_retriever(similarity_top_k=5, filters=ops_only).retrieve("ingest")
    assert [h.node.ref_doc_id for h in hits] == ["runbook"]
    assert hits[0].node.get_content() == docs[0].text and hits[0].node.metadata == {"topic": "ops"}
    assert hits[0].score is not None and 0 < hits[0].score <= 1
    assert {h.node.ref_doc_id for h in index.as_retriever(similarity_top_k=5).retrieve("ingest")} == {
        "runbook", "pricing"}  # fmt: skip
    index.delete_ref_doc("runbook")
    assert [h.node.ref_doc_id for h in index.as_retriever(similarity_top_k=5).retrieve("ingest")] == [
        "pricing"
    ]


def test_nodes_added_and_read_back_by_id(store: QuarryVectorStore) -> None:
    node = TextNode(id_="n-1", text="  exact\ttext  ", metadata={"topic": "t", "n": [1, 2]})
    assert store.add([node]) == ["n-1"]
    [back] = store.get_nodes(["n-1", "n-missing"])
    assert (back.node_id, back.get_content(), back.metadata) == ("n-1", "  exact\ttext  ", node.metadata)
    store.delete_nodes(["n-1", "n-missing"])
    assert store.get_nodes(["n-1"]) == []


@pytest.mark.asyncio
async def test_caller_vectors_on_a_bring_your_own_vector_tenant(server: str) -> None:
    store = QuarryVectorStore(server, "k-vectors", namespace="li-byo", use_node_embeddings=True)
    assert store.is_embedding_query
    try:
        index = VectorStoreIndex.from_vector_store(store, embed_model=MockEmbedding(embed_dim=6))
        await index.ainsert_nodes([TextNode(id_="v-1", text="vectors from the caller")])
        hits = await index.as_retriever(similarity_top_k=1).aretrieve("anything")
        assert [h.node.node_id for h in hits] == ["v-1"] and hits[0].score == pytest.approx(1.0)
    finally:
        await store.adelete_nodes(["v-1"])
        store.clear()


def test_unknown_arguments_are_an_error() -> None:
    with pytest.raises(ValidationError, match="top_k"):
        QuarryVectorStore(top_k=1)
    with pytest.raises(TypeError, match="top_k"):
        QuarryRetriever(top_k=1)


def test_metadata_filters_map_to_quarry_filters() -> None:
    filters = MetadataFilters(
        filters=[
            MetadataFilter(key="topic", value="ops"),
            MetadataFilter(key="trust", value=0.5, operator=FilterOperator.GTE),
            MetadataFilter(key="trust", value=0.9, operator=FilterOperator.LT),
            MetadataFilters(
                filters=[MetadataFilter(key="source", value=["a", "b"], operator=FilterOperator.NIN)]
            ),
            MetadataFilter(key="owner", value=None, operator=FilterOperator.IS_EMPTY),
        ]
    )
    assert quarry_filters(filters) == {"topic": "ops", "trust": {"gte": 0.5, "lt": 0.9},
                                       "source": {"not": ["a", "b"]}, "owner": {"exists": False}}  # fmt: skip
    either = MetadataFilters(filters=[MetadataFilter(key="a", value=1), MetadataFilter(key="b", value=2)],
                             condition=FilterCondition.OR)  # fmt: skip
    with pytest.raises(ValueError, match="hold together"):
        quarry_filters(either)
    with pytest.raises(ValueError, match="text_match"):
        quarry_filters(
            MetadataFilters(filters=[MetadataFilter(key="a", value="x", operator=FilterOperator.TEXT_MATCH)])
        )


def test_retriever_filters_and_hidden_bookkeeping(server: str) -> None:
    everything = QuarryRetriever(server, "k-read", similarity_top_k=10, strategy="keyword").retrieve(
        "rate limit"
    )
    source = everything[0].node.metadata["source"]
    only = MetadataFilters(filters=[MetadataFilter(key="source", value=source)])
    hits = QuarryRetriever(server, "k-read", similarity_top_k=10, strategy="keyword", filters=only).retrieve(
        "rate limit"
    )
    assert hits and all(h.node.metadata["source"] == source for h in hits)
    shown = hits[0].node.get_content(metadata_mode=MetadataMode.LLM)
    for hidden in ("created_at", "updated_at", "entity_type", "entity_id", "source", "id:"):
        assert hidden not in shown
    assert (
        hits[0].node.metadata["title"] is not None and "title" not in hits[0].node.excluded_llm_metadata_keys
    )
