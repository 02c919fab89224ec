"""The LangChain retrievers against a real `quarry serve`: langchain-tests' own retriever integration suite,
and the mapping LangChain users expect (Document.id, page_content as text, metadata with the score)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_tests.integration_tests import RetrieversIntegrationTests
from pydantic import ValidationError
from quarry_client.langchain import QuarryContextRetriever, QuarryRetriever


class TestQuarryRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[QuarryRetriever]:
        return QuarryRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"strategy": "keyword"}  # QUARRY_URL and QUARRY_API_KEY come from the environment (conftest)

    @property
    def retriever_query_example(self) -> str:
        return "rate limit clients"


class TestQuarryContextRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[QuarryContextRetriever]:
        return QuarryContextRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"caller": "lc-standard", "token_budget": 2000}

    @property
    def retriever_query_example(self) -> str:
        return "rate limit clients cache volume"


@pytest.mark.parametrize("retriever", [QuarryRetriever, QuarryContextRetriever])
def test_unknown_constructor_arguments_are_an_error(retriever: type[Any]) -> None:
    with pytest.raises(ValidationError, match="top_k"):
        retriever(caller="x", top_k=1) if retriever is QuarryContextRetriever else retriever(top_k=1)


def test_hits_map_to_documents_with_ids_text_and_scores() -> None:
    docs = QuarryRetriever(k=3).invoke("signing keys")
    top = docs[0]
    assert isinstance(top, Document) and top.id == "memory:m-keys"
    assert "ninety days" in top.page_content and "<mark>" not in top.page_content
    assert top.metadata["entity_type"] == "memory" and top.metadata["entity_id"] == "m-keys"
    assert top.metadata["score"] >= docs[-1].metadata["score"]


def test_filters_and_types_narrow_the_hits() -> None:
    docs = QuarryRetriever(k=10, entities=["task"], strategy="keyword").invoke("rate limit")
    assert docs and {d.metadata["entity_type"] for d in docs} == {"task"}


@pytest.mark.asyncio
async def test_the_context_retriever_returns_the_budgeted_block_source_by_source() -> None:
    retriever = QuarryContextRetriever(caller="lc-agent", token_budget=300)
    docs = await retriever.ainvoke("what happens when the cache volume is full?")
    assert docs and all(d.metadata["assembly_id"] == docs[0].metadata["assembly_id"] for d in docs)
    assert sum(d.metadata["tokens"] for d in docs) <= 300
    assert any("cache volume" in d.page_content for d in docs)
    assert [d.id for d in docs] == [d.metadata["id"] for d in docs]
    assert all(d.page_content.startswith("[") for d in docs)  # each its own section of the block
