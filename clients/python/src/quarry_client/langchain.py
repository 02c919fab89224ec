"""LangChain retrievers (langchain-core's BaseRetriever; `pip install 'quarry-client[langchain]'`).

- `QuarryRetriever`: hybrid search hits as Documents: `id` is `type:id`, `page_content` the title and the
  plain-text snippet, `metadata` the entity's metadata plus `entity_type`, `entity_id`, `title`, `score`.
  `k` (constructor or `invoke(..., k=3)`) is the number of hits.
- `QuarryContextRetriever`: a token-budgeted context block (POST /context/assemble) as one Document per
  source, in block order: `id` the source item's id, `metadata` its `source`, `score`, `tokens`, `title`,
  `truncated`, and the `assembly_id` to send feedback with. `k` (constructor or `invoke(..., k=3)`) keeps
  the k best-scored sources, still in block order (default: every source the budget holds).
- `QuarryVectorStore` (quarry_client.langchain_vectorstore): Quarry as a LangChain vector store.

Unknown constructor arguments are an error (`QuarryRetriever(top_k=1)` raises), not silently ignored.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, SecretStr

from quarry_client._async import AsyncQuarry
from quarry_client._documents import Passage, best_passages, hit_passage, source_passages
from quarry_client._sync import Quarry
from quarry_client.langchain_vectorstore import QuarryVectorStore
from quarry_client.models import AssembleResponse

__all__ = ["QuarryContextRetriever", "QuarryRetriever", "QuarryVectorStore"]


def _document(passage: Passage) -> Document:
    return Document(id=passage.id, page_content=passage.text, metadata=passage.metadata)


class _Connected(BaseRetriever):
    """Where Quarry is: `base_url` and `api_key` (default QUARRY_URL, QUARRY_API_KEY), or ready clients."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    base_url: str | None = None
    api_key: SecretStr | None = None
    client: Quarry | None = Field(default=None, exclude=True)
    async_client: AsyncQuarry | None = Field(default=None, exclude=True)

    def _key(self) -> str | None:
        return self.api_key.get_secret_value() if self.api_key else None

    @contextmanager
    def _sync(self) -> Iterator[Quarry]:
        """The given client, else one for this call (closed after it: pass `client` to pool connections)."""
        if self.client is not None:
            yield self.client
            return
        with Quarry(self.base_url, self._key()) as client:
            yield client

    @asynccontextmanager
    async def _async(self) -> AsyncIterator[AsyncQuarry]:
        """The given async client, else one for this call (an event loop's connections die with it)."""
        if self.async_client is not None:
            yield self.async_client
            return
        async with AsyncQuarry(self.base_url, self._key()) as client:
            yield client


class QuarryRetriever(_Connected):
    """Quarry hybrid search as a LangChain retriever."""

    k: int = Field(default=4, ge=1, le=100, description="Hits to return")
    entities: list[str] | None = Field(default=None, description="Entity types to search (default all)")
    filters: dict[str, Any] | None = Field(default=None, description="Metadata filters, field → value(s)")
    strategy: str = Field(default="auto", description="auto, keyword, semantic or hybrid")

    def _options(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        options: dict[str, Any] = {"limit": int(kwargs.get("k", self.k)), "strategy": self.strategy}
        for name in ("entities", "filters"):
            value = kwargs.get(name, getattr(self, name))
            if value is not None:
                options[name] = value
        return options

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        with self._sync() as client:
            answer = client.search(query, **self._options(kwargs))
        return [_document(hit_passage(r)) for r in answer.results]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        async with self._async() as client:
            answer = await client.search(query, **self._options(kwargs))
        return [_document(hit_passage(r)) for r in answer.results]


class QuarryContextRetriever(_Connected):
    """Quarry context assembly as a LangChain retriever: the budgeted block, one Document per source."""

    caller: str = Field(description="The agent or app asking: budgets, weights and memory follow it")
    token_budget: int | None = Field(
        default=None, ge=1, description="Tokens for the block (default: learned)"
    )
    namespace: str | None = None
    sources: list[str] | None = None
    k: int | None = Field(default=None, ge=1, description="Sources to return, the best scored (default all)")

    def _options(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        options = {n: kwargs.get(n, getattr(self, n)) for n in ("token_budget", "namespace", "sources")}
        return {k: v for k, v in options.items() if v is not None}

    def _documents(self, answer: AssembleResponse, kwargs: dict[str, Any]) -> list[Document]:
        k = kwargs.get("k", self.k)
        return [_document(p) for p in best_passages(source_passages(answer), k)]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        with self._sync() as client:
            answer = client.assemble_context(query, self.caller, **self._options(kwargs))
        return self._documents(answer, kwargs)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        async with self._async() as client:
            answer = await client.assemble_context(query, self.caller, **self._options(kwargs))
        return self._documents(answer, kwargs)
