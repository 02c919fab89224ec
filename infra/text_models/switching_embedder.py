"""`SwitchingEmbedder`: the embedder that follows the model `quarry reindex` switched vectors to, so every
server process embeds queries and writes with it at once. On the embedded backend the model is read per
tenant from the data file (a tenant switched alone, else the file's model); on OpenSearch from the `_meta`
of the index behind the alias (infra/opensearch/index_lifecycle.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from core.models import Vector
from core.ports import Embedder
from infra.local.reindex import ACTIVE, active_model
from infra.local.sqlite.connect import open_sqlite

ActiveFolder = Callable[[str | None], str | None]  # tenant (None: the default) → model folder or None


class ActiveModel:
    """Reads the active model folder of a tenant in one data file (one tiny indexed read per call)."""

    def __init__(self, path: str | Path) -> None:
        self._conn = open_sqlite(path)
        self._lock = threading.Lock()
        with self._lock:
            active_model(self._conn)  # creates the tables when missing

    def __call__(self, tenant_id: str | None = None) -> str | None:
        with self._lock:
            row = self._conn.execute(ACTIVE, (tenant_id,)).fetchone()
        return None if row is None or row[0] is None else str(row[0])


class SwitchingEmbedder(Embedder):
    """An Embedder delegating to the configured model until a reindex names another folder (for the whole
    store, or for one tenant: `for_tenant`, which core services call (`core.ports.Embedder.for_tenant`))."""

    def __init__(self, default: Embedder, load: Callable[[str], Embedder], active: ActiveFolder) -> None:
        self._default = default
        self._load = load
        self._active = active
        self._loaded: dict[str, Embedder] = {}
        self._lock = threading.Lock()

    def current(self, tenant_id: str | None = None) -> Embedder:
        """The embedder of the active model (of `tenant_id`, else the default one), loaded once per folder."""
        folder = self._active(tenant_id)
        if folder is None:
            return self._default
        with self._lock:
            found = self._loaded.get(folder)
            if found is None:
                found = self._loaded[folder] = self._load(folder)
            return found

    def for_tenant(self, tenant_id: str) -> Embedder:
        """The concrete embedder of `tenant_id`'s model (core.ports.Embedder.for_tenant)."""
        return self.current(tenant_id)

    @property
    def dimension(self) -> int:
        return self.current().dimension

    @property
    def model_id(self) -> str:
        return self.current().model_id

    @property
    def vectors_id(self) -> str:
        """The active embedder's `vectors_id` (what an embedding cache files its vectors under)."""
        return self.current().vectors_id

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        """Passages, with the active model."""
        return list(self.current().embed(texts))

    def embed_query(self, texts: Sequence[str]) -> list[Vector]:
        """Queries, with the active model."""
        return list(self.current().embed_query(texts))
