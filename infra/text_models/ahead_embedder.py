"""`AheadEmbedder`: the embedder services use, serving a request the query vector made for it ahead of time
in a batch (core/search/query_batch.py; docs/architecture.md#query-batching).

The vector is handed over for one request only: `serving(ahead)` installs it on the calling thread while
that request runs, and a search of that request's tenant, whose resolved model has the same `vectors_id`,
embedding that very text, takes it (once). Nothing else ever sees it: no other request, no other thread,
no other tenant, and no later request (there is no cache a timing probe could read). Outside `serving`,
and for every other call, it is the embedder it wraps, resolved per tenant as before.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from core.indexing.caller_vectors import brings_own_vectors
from core.models import Vector
from core.ports import Embedder
from core.search.query_batch import AheadVector


class _Scope:
    """What one request may take: its vector made ahead, and the tenant views it resolved."""

    def __init__(self, ahead: AheadVector) -> None:
        self.ahead: AheadVector | None = ahead
        self.views: dict[tuple[str, int], _AheadView] = {}

    def take(self, tenant_id: str, vectors_id: str, texts: Sequence[str]) -> Vector | None:
        """The vector made ahead when it is this tenant's, this model's and this one text's (then gone)."""
        ahead = self.ahead
        if ahead is None or len(texts) != 1:
            return None
        if (ahead.tenant_id, ahead.vectors_id, ahead.text) != (tenant_id, vectors_id, texts[0]):
            return None
        self.ahead = None
        return ahead.vector


class _AheadView(Embedder):
    """One tenant's resolved embedder during a request with a vector made ahead."""

    def __init__(self, inner: Embedder, tenant_id: str, scope: _Scope) -> None:
        self._inner = inner
        self._tenant = tenant_id
        self._scope = scope

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def vectors_id(self) -> str:
        return self._inner.vectors_id

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        """Passages: always the model's."""
        return self._inner.embed(texts)

    def embed_query(self, texts: Sequence[str]) -> list[Vector]:
        """The vector made ahead for this request when it matches, else the model's."""
        found = self._scope.take(self._tenant, self._inner.vectors_id, texts)
        return [found] if found is not None else self._inner.embed_query(texts)


class AheadEmbedder(Embedder):
    """`inner`, plus the vector made ahead for the request running on this thread (`serving`)."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self._local = threading.local()

    @contextmanager
    def serving(self, ahead: AheadVector | None) -> Iterator[None]:
        """While the block runs on this thread, a search may take `ahead` (None: nothing to take)."""
        if ahead is None:
            yield
            return
        self._local.scope = _Scope(ahead)
        try:
            yield
        finally:
            self._local.scope = None

    def for_tenant(self, tenant_id: str) -> Embedder:
        """The tenant's embedder (core.ports.Embedder.for_tenant); within `serving`, one view of it per
        model, the same object for every call of the request (a search compares them to see a reindex)."""
        resolved = self._inner.for_tenant(tenant_id)
        scope: _Scope | None = getattr(self._local, "scope", None)
        if scope is None or brings_own_vectors(resolved):
            return resolved
        key = (tenant_id, id(resolved))
        view = scope.views.get(key)
        if view is None or view._inner is not resolved:
            view = scope.views[key] = _AheadView(resolved, tenant_id, scope)
        return view

    def brings_own(self, tenant_id: str) -> bool:
        return self._inner.brings_own(tenant_id)

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def vectors_id(self) -> str:
        return self._inner.vectors_id

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        """Passages, with the wrapped embedder."""
        return self._inner.embed(texts)

    def embed_query(self, texts: Sequence[str]) -> list[Vector]:
        """Queries, with the wrapped embedder (no tenant named: nothing made ahead applies)."""
        return self._inner.embed_query(texts)
