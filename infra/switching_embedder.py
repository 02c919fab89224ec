"""`SwitchingEmbedder`: the local embedder that follows the data file's active model, so every server
process embeds queries and writes with the model `quarry reindex` switched the vectors to, at once."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from core.models import Vector
from core.ports import Embedder
from infra.local.reindex import active_model
from infra.local.sqlite_connect import open_sqlite


class ActiveModel:
    """Reads the active model folder of one data file (one tiny indexed read per call)."""

    def __init__(self, path: str | Path) -> None:
        self._conn = open_sqlite(path)
        self._lock = threading.Lock()
        with self._lock:
            active_model(self._conn)  # creates the table when missing

    def __call__(self) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT model_dir FROM idx_embedding_model WHERE id = 1").fetchone()
        return None if row is None else str(row[0])


class SwitchingEmbedder:
    """An Embedder delegating to the configured model until a reindex names another folder."""

    def __init__(
        self, default: Embedder, load: Callable[[str], Embedder], active: Callable[[], str | None]
    ) -> None:
        self._default = default
        self._load = load
        self._active = active
        self._loaded: dict[str, Embedder] = {}
        self._lock = threading.Lock()

    def current(self) -> Embedder:
        """The embedder of the active model (loaded once per folder)."""
        folder = self._active()
        if folder is None:
            return self._default
        with self._lock:
            found = self._loaded.get(folder)
            if found is None:
                found = self._loaded[folder] = self._load(folder)
            return found

    @property
    def dimension(self) -> int:
        return self.current().dimension

    @property
    def model_id(self) -> str:
        return self.current().model_id

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        """Passages, with the active model."""
        return list(self.current().embed(texts))

    def embed_query(self, texts: Sequence[str]) -> list[Vector]:
        """Queries, with the active model."""
        return list(self.current().embed_query(texts))
