"""`QuarryVectorStore`: Quarry as a LlamaIndex vector store (BasePydanticVectorStore, `stores_text`), for
`VectorStoreIndex.from_vector_store(QuarryVectorStore(...))`; and `quarry_filters`, LlamaIndex
`MetadataFilters` as Quarry search filters.

Each node is one Quarry entity (default type `document`; see quarry_client._store): its text verbatim in
`text`, and in `metadata` the node's metadata with LlamaIndex's own serialisation of the node (its id,
`ref_doc_id`, relationships: llama_index.core.vector_stores.utils.node_to_metadata_dict), so a query
returns the node as it was added. Metadata keys named like the type's filterable fields (`source`,
`owner`, `namespace`, `topic`, `trust` for a document) are written to those fields too, which is what
`MetadataFilters` can filter on.

- **Vectors.** By default Quarry embeds with its own model: node embeddings are not sent and queries are
  not embedded (`is_embedding_query` False), so the index's `embed_model` is never asked for a query
  vector (inserts through the index still compute node embeddings the store then ignores: give the index a
  `MockEmbedding`). With `use_node_embeddings=True` the nodes' vectors are written (`embedding`) and the
  query's sent as `query_vector`: for a tenant that brings its own vectors.
- **Query modes.** `default` runs the store's `strategy` (`auto`, or `semantic` with node embeddings),
  `hybrid` Quarry's hybrid fusion, `text_search` / `sparse` keyword search. The similarity is Quarry's
  score (0..1, higher is better; the cosine for `semantic`).
- **delete(ref_doc_id)** lists the store's entities to find the nodes of that document (Quarry filters
  only on declared fields, and `ref_doc_id` is none of them): its cost grows with the store's size.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from llama_index.core.bridge.pydantic import ConfigDict, PrivateAttr
from llama_index.core.schema import BaseNode, MetadataMode, TextNode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)
from llama_index.core.vector_stores.utils import metadata_dict_to_node, node_to_metadata_dict

from quarry_client import _store as st
from quarry_client._async import AsyncQuarry
from quarry_client._errors import NotFoundError
from quarry_client._operations import Strategy
from quarry_client._sync import Quarry

# Node metadata that is bookkeeping, not content: kept on the node, shown neither to embedders nor LLMs.
BOOKKEEPING = ["score", "assembly_id", "token_budget", "tokens", "truncated", "total_tokens", "sources",
               "id", "entity_type", "entity_id", "created_at", "updated_at", "source"]  # fmt: skip
_OPERATORS = {FilterOperator.GT: "gt", FilterOperator.GTE: "gte", FilterOperator.LT: "lt",
              FilterOperator.LTE: "lte", FilterOperator.IN: "in", FilterOperator.NE: "not",
              FilterOperator.NIN: "not"}  # fmt: skip
_MODES: dict[VectorStoreQueryMode, Strategy] = {
    VectorStoreQueryMode.HYBRID: "hybrid",
    VectorStoreQueryMode.TEXT_SEARCH: "keyword",
    VectorStoreQueryMode.SPARSE: "keyword",
}


def quarry_filters(filters: MetadataFilters | dict[str, Any] | None) -> dict[str, Any] | None:
    """MetadataFilters as Quarry search filters: `==` a value, `in` any of, `!=` / `nin` none of, `>`,
    `>=`, `<`, `<=` ranges, `is_empty` no value; conditions joined by AND (Quarry's filters all hold
    together), nested AND groups flattened. A dict is taken as Quarry filters already."""
    if filters is None or isinstance(filters, dict):
        return filters
    out: dict[str, Any] = {}
    for each in _flatten(filters):
        _merge(out, each.key, _condition(each))
    return out or None


def _flatten(filters: MetadataFilters) -> list[MetadataFilter]:
    if filters.condition not in (None, FilterCondition.AND) and len(filters.filters) > 1:
        raise ValueError(f"Quarry's filters all hold together: {filters.condition} is not supported")
    flat: list[MetadataFilter] = []
    for each in filters.filters:
        flat += _flatten(each) if isinstance(each, MetadataFilters) else [each]
    return flat


def _condition(each: MetadataFilter) -> Any:
    if each.operator == FilterOperator.EQ:
        return each.value
    if each.operator == FilterOperator.IS_EMPTY:
        return {"exists": False}
    if each.operator not in _OPERATORS:
        raise ValueError(f"Quarry filters have no {each.operator.value!r} operator (key {each.key!r})")
    return {_OPERATORS[each.operator]: each.value}


def _merge(out: dict[str, Any], key: str, condition: Any) -> None:
    """Two conditions on one key become one operator object (an equality as `in` of one value)."""
    if key not in out:
        out[key] = condition
        return
    left, right = (c if isinstance(c, dict) else {"in": [c]} for c in (out[key], condition))
    if set(left) & set(right):
        raise ValueError(f"two {sorted(set(left) & set(right))} conditions on {key!r}")
    out[key] = {**left, **right}


def plain_node(item_id: str, text: str, metadata: dict[str, Any]) -> TextNode:
    """A node of an entity written without LlamaIndex's serialisation, bookkeeping hidden."""
    return TextNode(id_=item_id, text=text, metadata=metadata,
                    excluded_embed_metadata_keys=BOOKKEEPING, excluded_llm_metadata_keys=BOOKKEEPING)  # fmt: skip


def _node(item: st.Stored) -> BaseNode:
    try:
        return metadata_dict_to_node(item.metadata, text=item.text)
    except ValueError:  # no `_node_content`: not written by a LlamaIndex store
        return plain_node(item.id, item.text, item.metadata)


class QuarryVectorStore(BasePydanticVectorStore):
    """Quarry hybrid search as a LlamaIndex vector store (see the module docstring for the mapping)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")  # a misspelt option is an error

    stores_text: bool = True
    flat_metadata: bool = False
    base_url: str | None = None
    entity_type: str = "document"
    text_field: str = "text"
    metadata_field: str = "metadata"
    filter_fields: tuple[str, ...] = st.DOCUMENT_FILTER_FIELDS
    namespace: str | None = None
    use_node_embeddings: bool = False
    strategy: Strategy | None = None

    _api_key: str | None = PrivateAttr(default=None)
    _client: Quarry | None = PrivateAttr(default=None)
    _async_client: AsyncQuarry | None = PrivateAttr(default=None)

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        client: Quarry | None = None,
        async_client: AsyncQuarry | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(base_url=base_url, **kwargs)
        self.is_embedding_query = self.use_node_embeddings
        self._api_key, self._client, self._async_client = api_key, client, async_client

    @classmethod
    def class_name(cls) -> str:
        return "QuarryVectorStore"

    @property
    def client(self) -> Quarry | None:
        return self._client

    @property
    def layout(self) -> st.Layout:
        return st.Layout(
            self.entity_type, self.text_field, self.metadata_field, self.filter_fields, self.namespace
        )

    def _sync(self) -> Quarry:
        return self._client or Quarry(self.base_url, self._api_key)

    def _async(self) -> AsyncQuarry:
        return self._async_client or AsyncQuarry(self.base_url, self._api_key)

    def _done(self, client: Quarry) -> None:
        if client is not self._client:
            client.close()

    async def _adone(self, client: AsyncQuarry) -> None:
        if client is not self._async_client:
            await client.close()

    # -- writes ---------------------------------------------------------------------------------------

    def _items(self, nodes: Sequence[BaseNode]) -> list[dict[str, Any]]:
        return [st.item(self.layout, n.node_id, n.get_content(metadata_mode=MetadataMode.NONE),
                        node_to_metadata_dict(n, remove_text=True, flat_metadata=self.flat_metadata),
                        n.embedding if self.use_node_embeddings else None) for n in nodes]  # fmt: skip

    def add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        client = self._sync()
        try:
            for batch in st.batches(self._items(nodes), st.WRITE_BATCH):
                st.check_write(client.bulk_write(batch).wait())
        finally:
            self._done(client)
        return [n.node_id for n in nodes]

    async def async_add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        client = self._async()
        try:
            for batch in st.batches(self._items(nodes), st.WRITE_BATCH):
                st.check_write(await (await client.bulk_write(batch)).wait())
        finally:
            await self._adone(client)
        return [n.node_id for n in nodes]

    def _owned(self, fields: dict[str, Any], ref_doc_id: str | None) -> bool:
        metadata = fields.get(self.metadata_field)
        return ref_doc_id is None or (isinstance(metadata, dict) and metadata.get("ref_doc_id") == ref_doc_id)

    def _remove(self, client: Quarry, ids: Sequence[str]) -> None:
        for key in ids:
            with contextlib.suppress(NotFoundError):
                client.delete_entity(self.entity_type, key)

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Delete the nodes of a source document (found by listing the store's entities)."""
        client = self._sync()
        try:
            ids = [e.entity_id for e in client.iter_entities(self.entity_type, page_size=st.LIST_PAGE_MAX)
                   if st.in_scope(self.layout, e) and self._owned(e.fields, ref_doc_id)]  # fmt: skip
            self._remove(client, ids)
        finally:
            self._done(client)

    async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        client = self._async()
        try:
            ids = [e.entity_id async for e in client.iter_entities(self.entity_type, page_size=st.LIST_PAGE_MAX)
                   if st.in_scope(self.layout, e) and self._owned(e.fields, ref_doc_id)]  # fmt: skip
            for key in ids:
                with contextlib.suppress(NotFoundError):
                    await client.delete_entity(self.entity_type, key)
        finally:
            await self._adone(client)

    def delete_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None, **kwargs: Any
    ) -> None:
        """Delete these nodes (unknown ids skipped); no ids: every node of the store. Filters: not supported."""
        if filters is not None:
            raise NotImplementedError("Quarry deletes by id; query with the filters, then delete the ids")
        if node_ids is None:
            self.clear()
            return
        client = self._sync()
        try:
            self._remove(client, node_ids)
        finally:
            self._done(client)

    def clear(self) -> None:
        """Delete every node of the store (its type, in its namespace when it has one)."""
        client = self._sync()
        try:
            ids = [e.entity_id for e in client.iter_entities(self.entity_type, page_size=st.LIST_PAGE_MAX)
                   if st.in_scope(self.layout, e)]  # fmt: skip
            self._remove(client, ids)
        finally:
            self._done(client)

    # -- reads ----------------------------------------------------------------------------------------

    def get_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        """The stored nodes of these ids, in the order asked (unknown ones left out)."""
        if node_ids is None or filters is not None:
            raise NotImplementedError("Quarry gets nodes by id (node_ids), without filters")
        client, found = self._sync(), []
        try:
            for batch in st.batches(node_ids, st.BATCH_GET_MAX):
                answer = client.batch_get_entities([(self.entity_type, key) for key in batch])
                found += [
                    _node(st.entity(self.layout, e)) for e in answer.found if st.in_scope(self.layout, e)
                ]
        finally:
            self._done(client)
        return found

    def _options(self, query: VectorStoreQuery) -> tuple[str, Any]:
        vector = query.query_embedding if self.use_node_embeddings else None
        strategy = _MODES.get(query.mode) or self.strategy or ("semantic" if vector is not None else "auto")
        options = st.search_options(
            self.layout, query.similarity_top_k, quarry_filters(query.filters), vector, strategy
        )
        return query.query_str or "", options

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        text, options = self._options(query)
        client, hits = self._sync(), []
        try:
            for result in client.iter_search(text, **options):  # pages of 100 up to similarity_top_k
                hits.append(st.hit(self.layout, result))
                if len(hits) >= query.similarity_top_k:
                    break
        finally:
            self._done(client)
        return _result(hits)

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        text, options = self._options(query)
        client, hits = self._async(), []
        try:
            async for result in client.iter_search(text, **options):
                hits.append(st.hit(self.layout, result))
                if len(hits) >= query.similarity_top_k:
                    break
        finally:
            await self._adone(client)
        return _result(hits)


def _result(hits: list[st.Stored]) -> VectorStoreQueryResult:
    return VectorStoreQueryResult(nodes=[_node(h) for h in hits], similarities=[h.score for h in hits],
                                  ids=[h.id for h in hits])  # fmt: skip
