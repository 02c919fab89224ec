"""`QuarryVectorStore`: Quarry as a LangChain vector store (langchain-core's VectorStore), sync and async.

Each Document is one Quarry entity (default type `document`; see quarry_client._store for the fields):
`page_content` verbatim in `text`, `metadata` as given in `metadata`, `Document.id` the entity id (a uuid4
when none is given). Searches come back with the same text, metadata and id.

- **Ranking.** Without `embedding`, Quarry embeds with its own model and `similarity_search` is its search
  with `strategy` (default `auto`: hybrid keyword + vector fusion). With `embedding`, writes carry the
  caller's vectors and queries a `query_vector` (a tenant declared in QUARRY_BYO_VECTOR_TENANTS, or vectors
  in the deployment model's space), and `strategy` defaults to `semantic`: pure cosine ranking.
- **Scores** (`similarity_search_with_score`, `similarity_search_with_relevance_scores`) are Quarry's: in
  0..1, higher is better. With `semantic` it is the cosine, negatives shown as 0; with `hybrid` the convex
  fusion of the normalised keyword and vector scores (docs/api.md, POST /search).
- **Filters** (`filter=`) are Quarry search filters (field → value, list, or operators such as
  `{"gte": 0.5}`) on the type's filterable fields; metadata keys named like them are written to them.
- **MMR.** Quarry keeps vectors server-side and never returns them, so `max_marginal_relevance_search`
  fetches `fetch_k` candidates by the store's search and picks among them on the client: with `embedding`,
  the candidates' texts are embedded again (one `embed_documents` call) and MMR is exact; without it,
  relevance is Quarry's score and similarity between candidates is the overlap of their words (an
  approximation, documented in docs/clients.md).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager, suppress
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore

from quarry_client import _store as st
from quarry_client._async import AsyncQuarry
from quarry_client._errors import NotFoundError
from quarry_client._operations import Strategy
from quarry_client._sync import Quarry

DEFAULT_K, DEFAULT_FETCH_K, DEFAULT_LAMBDA = 4, 20, 0.5  # langchain-core's VectorStore defaults


def _document(item: st.Stored) -> Document:
    return Document(id=item.id, page_content=item.text, metadata=item.metadata)


class QuarryVectorStore(VectorStore):
    """Quarry hybrid search as a LangChain vector store (see the module docstring for the mapping)."""

    def __init__(
        self,
        embedding: Embeddings | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: Quarry | None = None,
        async_client: AsyncQuarry | None = None,
        entity_type: str = "document",
        text_field: str = "text",
        metadata_field: str = "metadata",
        filter_fields: Sequence[str] = st.DOCUMENT_FILTER_FIELDS,
        namespace: str | None = None,
        strategy: Strategy | None = None,
    ) -> None:
        self.embedding = embedding
        self.layout = st.Layout(entity_type, text_field, metadata_field, tuple(filter_fields), namespace)
        self.strategy: Strategy = strategy or ("semantic" if embedding is not None else "auto")
        self._client, self._async_client = client, async_client
        self._where = (base_url, api_key)

    @property
    def embeddings(self) -> Embeddings | None:
        return self.embedding

    @contextmanager
    def _sync(self) -> Iterator[Quarry]:
        if self._client is not None:
            yield self._client
            return
        with Quarry(*self._where) as client:
            yield client

    @asynccontextmanager
    async def _async(self) -> AsyncIterator[AsyncQuarry]:
        if self._async_client is not None:
            yield self._async_client
            return
        async with AsyncQuarry(*self._where) as client:
            yield client

    # -- writes ---------------------------------------------------------------------------------------

    def _items(
        self, texts: list[str], metadatas: list[dict[str, Any]] | None, ids: list[str], vectors: Any
    ) -> list[dict[str, Any]]:
        metas = metadatas or [{} for _ in texts]
        return [st.item(self.layout, i, t, md, v)
                for i, t, md, v in zip(ids, texts, metas, vectors or [None] * len(texts), strict=True)]  # fmt: skip

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str | None] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        texts = list(texts)
        keys = st.new_ids(ids, len(texts))
        vectors = self.embedding.embed_documents(texts) if self.embedding and texts else None
        with self._sync() as client:
            for batch in st.batches(self._items(texts, metadatas, keys, vectors), st.WRITE_BATCH):
                st.check_write(client.bulk_write(batch).wait())
        return keys

    async def aadd_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str | None] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        texts = list(texts)
        keys = st.new_ids(ids, len(texts))
        vectors = await self.embedding.aembed_documents(texts) if self.embedding and texts else None
        async with self._async() as client:
            for batch in st.batches(self._items(texts, metadatas, keys, vectors), st.WRITE_BATCH):
                st.check_write(await (await client.bulk_write(batch)).wait())
        return keys

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Delete these ids (unknown ones are skipped); no ids: every item of the store — every entity of its
        type in its namespace, or in the whole tenant when the store has no namespace."""
        with self._sync() as client:
            if ids is None:
                ids = [e.entity_id for e in client.iter_entities(self.layout.entity_type, page_size=st.LIST_PAGE_MAX)
                       if st.in_scope(self.layout, e)]  # fmt: skip
            for key in ids:
                with suppress(NotFoundError):
                    client.delete_entity(self.layout.entity_type, key)
        return True

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        async with self._async() as client:
            if ids is None:
                ids = [e.entity_id async for e in client.iter_entities(self.layout.entity_type, page_size=st.LIST_PAGE_MAX)
                       if st.in_scope(self.layout, e)]  # fmt: skip
            for key in ids:
                with suppress(NotFoundError):
                    await client.delete_entity(self.layout.entity_type, key)
        return True

    # -- reads ----------------------------------------------------------------------------------------

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The stored Documents of these ids, in the order asked; unknown ids are left out."""
        found: list[Document] = []
        with self._sync() as client:
            for batch in st.batches(list(ids), st.BATCH_GET_MAX):
                answer = client.batch_get_entities([(self.layout.entity_type, key) for key in batch])
                found += [
                    _document(st.entity(self.layout, e)) for e in answer.found if st.in_scope(self.layout, e)
                ]
        return found

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        found: list[Document] = []
        async with self._async() as client:
            for batch in st.batches(list(ids), st.BATCH_GET_MAX):
                answer = await client.batch_get_entities([(self.layout.entity_type, key) for key in batch])
                found += [
                    _document(st.entity(self.layout, e)) for e in answer.found if st.in_scope(self.layout, e)
                ]
        return found

    def _search(
        self, query: str, k: int, filter: dict[str, Any] | None, vector: Sequence[float] | None
    ) -> list[st.Stored]:
        options = st.search_options(self.layout, k, filter, vector, self.strategy)
        hits: list[st.Stored] = []
        with self._sync() as client:
            for result in client.iter_search(query, **options):
                hits.append(st.hit(self.layout, result))
                if len(hits) >= k:
                    break
        return hits

    async def _asearch(
        self, query: str, k: int, filter: dict[str, Any] | None, vector: Sequence[float] | None
    ) -> list[st.Stored]:
        options = st.search_options(self.layout, k, filter, vector, self.strategy)
        hits: list[st.Stored] = []
        async with self._async() as client:
            async for result in client.iter_search(query, **options):
                hits.append(st.hit(self.layout, result))
                if len(hits) >= k:
                    break
        return hits

    def similarity_search_with_score(
        self, query: str, k: int = DEFAULT_K, filter: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        vector = self.embedding.embed_query(query) if self.embedding else None
        return [(_document(h), h.score) for h in self._search(query, k, filter, vector)]

    async def asimilarity_search_with_score(
        self, query: str, k: int = DEFAULT_K, filter: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        vector = await self.embedding.aembed_query(query) if self.embedding else None
        return [(_document(h), h.score) for h in await self._asearch(query, k, filter, vector)]

    def similarity_search(
        self, query: str, k: int = DEFAULT_K, filter: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[Document]:
        return [d for d, _ in self.similarity_search_with_score(query, k, filter)]

    async def asimilarity_search(
        self, query: str, k: int = DEFAULT_K, filter: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[Document]:
        return [d for d, _ in await self.asimilarity_search_with_score(query, k, filter)]

    def similarity_search_by_vector(
        self, embedding: list[float], k: int = DEFAULT_K, filter: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[Document]:
        return [_document(h) for h in self._search("", k, filter, embedding)]

    async def asimilarity_search_by_vector(
        self, embedding: list[float], k: int = DEFAULT_K, filter: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[Document]:
        return [_document(h) for h in await self._asearch("", k, filter, embedding)]

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        return _same  # Quarry's scores are already relevances in 0..1

    # -- maximal marginal relevance -------------------------------------------------------------------

    def max_marginal_relevance_search(
        self,
        query: str,
        k: int = DEFAULT_K,
        fetch_k: int = DEFAULT_FETCH_K,
        lambda_mult: float = DEFAULT_LAMBDA,
        filter: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        vector = self.embedding.embed_query(query) if self.embedding else None
        hits = self._search(query, max(k, fetch_k), filter, vector)
        candidates = (
            self.embedding.embed_documents([h.text for h in hits]) if self.embedding and hits else None
        )
        return [_document(h) for h in st.pick(hits, vector, candidates, k, lambda_mult)]

    async def amax_marginal_relevance_search(
        self,
        query: str,
        k: int = DEFAULT_K,
        fetch_k: int = DEFAULT_FETCH_K,
        lambda_mult: float = DEFAULT_LAMBDA,
        filter: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        vector = await self.embedding.aembed_query(query) if self.embedding else None
        hits = await self._asearch(query, max(k, fetch_k), filter, vector)
        embed = self.embedding
        candidates = await embed.aembed_documents([h.text for h in hits]) if embed and hits else None
        return [_document(h) for h in st.pick(hits, vector, candidates, k, lambda_mult)]

    def max_marginal_relevance_search_by_vector(
        self,
        embedding: list[float],
        k: int = DEFAULT_K,
        fetch_k: int = DEFAULT_FETCH_K,
        lambda_mult: float = DEFAULT_LAMBDA,
        filter: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        if self.embedding is None:
            raise ValueError("MMR by vector needs the store's `embedding` to embed the candidates again")
        hits = self._search("", max(k, fetch_k), filter, embedding)
        candidates = self.embedding.embed_documents([h.text for h in hits]) if hits else None
        return [_document(h) for h in st.pick(hits, embedding, candidates, k, lambda_mult)]

    # -- construction ---------------------------------------------------------------------------------

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings | None = None,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> QuarryVectorStore:
        """A store (constructor arguments in `kwargs`) with these texts added."""
        store = cls(embedding, **kwargs)
        store.add_texts(texts, metadatas, ids=list(ids) if ids else None)
        return store

    @classmethod
    async def afrom_texts(
        cls,
        texts: list[str],
        embedding: Embeddings | None = None,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> QuarryVectorStore:
        store = cls(embedding, **kwargs)
        await store.aadd_texts(texts, metadatas, ids=list(ids) if ids else None)
        return store


def _same(score: float) -> float:
    return score
