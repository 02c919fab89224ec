"""LlamaIndex retrievers (llama-index-core's BaseRetriever; `pip install 'quarry-client[llamaindex]'`).

- `QuarryRetriever`: search hits as `NodeWithScore`: the node's `id_` is `type:id`, its text the title and
  plain-text snippet, its metadata the entity's metadata plus `entity_type`, `entity_id` and `title`; the
  score is Quarry's fused score. `similarity_top_k` is the number of hits.
- `QuarryContextRetriever`: the token-budgeted context block (POST /context/assemble), one node per source
  in block order, scored by the source's assembly score; metadata carries `source`, `tokens`, `title`,
  `truncated` and the `assembly_id` to send feedback with.
- `QuarryVectorStore` (quarry_client.llama_index_vectorstore): Quarry as a LlamaIndex vector store.

Bookkeeping metadata (ids, types, timestamps, `source`, scores, assembly fields) stays on the nodes but is
shown neither to embedders nor to LLMs. `filters` take LlamaIndex `MetadataFilters` (or Quarry's own
filter object), mapped by `quarry_filters`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import MetadataFilters

from quarry_client._async import AsyncQuarry
from quarry_client._documents import Passage, hit_passage, source_passages
from quarry_client._sync import Quarry
from quarry_client.llama_index_vectorstore import QuarryVectorStore, plain_node, quarry_filters

__all__ = ["QuarryContextRetriever", "QuarryRetriever", "QuarryVectorStore", "quarry_filters"]


def _node(passage: Passage) -> NodeWithScore:
    metadata = {k: v for k, v in passage.metadata.items() if k != "score"}
    return NodeWithScore(node=plain_node(passage.id, passage.text, metadata), score=passage.score)


class _Connected(BaseRetriever):
    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        client: Quarry | None = None,
        async_client: AsyncQuarry | None = None,
        **kwargs: Any,
    ) -> None:
        self._client = client
        self._async_client = async_client
        self._where = (base_url, api_key)
        super().__init__(**kwargs)

    @contextmanager
    def _sync(self) -> Iterator[Quarry]:
        """The given client, else one for this call (closed after it: pass `client` to pool connections)."""
        if self._client is not None:
            yield self._client
            return
        with Quarry(*self._where) as client:
            yield client

    @asynccontextmanager
    async def _async(self) -> AsyncIterator[AsyncQuarry]:
        """The given async client, else one for this call (an event loop's connections die with it)."""
        if self._async_client is not None:
            yield self._async_client
            return
        async with AsyncQuarry(*self._where) as client:
            yield client


class QuarryRetriever(_Connected):
    """Quarry hybrid search as a LlamaIndex retriever."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        similarity_top_k: int = 4,
        entities: list[str] | None = None,
        filters: MetadataFilters | dict[str, Any] | None = None,
        strategy: str = "auto",
        **kwargs: Any,
    ) -> None:
        self.similarity_top_k = similarity_top_k
        self._options: dict[str, Any] = {"strategy": strategy}
        pairs = (("entities", entities), ("filters", quarry_filters(filters)))
        self._options |= {k: v for k, v in pairs if v is not None}
        super().__init__(base_url, api_key, **kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        with self._sync() as client:
            answer = client.search(query_bundle.query_str, limit=self.similarity_top_k, **self._options)
        return [_node(hit_passage(r)) for r in answer.results]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        async with self._async() as client:
            answer = await client.search(query_bundle.query_str, limit=self.similarity_top_k, **self._options)
        return [_node(hit_passage(r)) for r in answer.results]


class QuarryContextRetriever(_Connected):
    """Quarry context assembly as a LlamaIndex retriever: the budgeted block, one node per source."""

    def __init__(
        self,
        caller: str,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        token_budget: int | None = None,
        namespace: str | None = None,
        **kwargs: Any,
    ) -> None:
        self.caller = caller
        self._options = {k: v for k, v in (("token_budget", token_budget), ("namespace", namespace)) if v}
        super().__init__(base_url, api_key, **kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        with self._sync() as client:
            answer = client.assemble_context(query_bundle.query_str, self.caller, **self._options)
        return [_node(p) for p in source_passages(answer)]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        async with self._async() as client:
            answer = await client.assemble_context(query_bundle.query_str, self.caller, **self._options)
        return [_node(p) for p in source_passages(answer)]
