"""An Embedder that remembers: vectors cached on disk by the embedder's `vectors_id` (model, runtime,
pooling, query prefix) and sha256 of the text.

Evaluation re-ingests whole corpora into fresh indexes; at ~30 passages/s on two CPU cores the SciFact
corpus costs minutes to embed, and a second run should cost nothing. The cache is one SQLite file: each
batch of new vectors is committed in its own transaction, so an interrupted run keeps every finished batch
and never leaves a half-written vector behind. Vectors are float32 blobs (1.5 KiB each at 384 dimensions).
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from core.errors import UnavailableError
from core.models import Vector
from core.ports import Embedder

CACHE_FILE = "embeddings.sqlite"
DEFAULT_BATCH_SIZE = 64  # sentence-transformers' own default is 32; 64 halves Python overhead on CPU
LOOKUP_CHUNK = 500  # stays far below SQLite's default limit of 32,766 bound parameters
QUERY_KEY_TAG = "\x00query\x00"  # query vectors are keyed apart from the same text as a passage
BUSY_TIMEOUT_SECONDS = 30.0  # another process (a parallel eval) may hold the write lock briefly

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    model TEXT NOT NULL,
    key TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, key)
) WITHOUT ROWID
"""


def text_key(text: str) -> str:
    """The cache key of a text: hex sha256 of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _batches(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class CachingEmbedder(Embedder):
    """Embedder port wrapper: cached vectors are read from disk, only new texts reach `inner`."""

    def __init__(
        self,
        inner: Embedder,
        cache_dir: str | Path,
        batch_size: int = DEFAULT_BATCH_SIZE,
        progress: bool = True,
    ) -> None:
        self._inner = inner
        self._path = Path(cache_dir) / CACHE_FILE
        self._batch_size = batch_size
        self._progress = progress
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self.misses = 0  # texts embedded by `inner` since construction (for reports and tests)

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def _vectors_id(self) -> str:
        """The key vectors are filed under: the inner embedder's `vectors_id` (model, runtime, pooling,
        query prefix: numpy and onnx runs of one model differ in the last bits), else its model id."""
        return self._inner.vectors_id

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self._path, timeout=BUSY_TIMEOUT_SECONDS, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(_SCHEMA)
            self._conn = conn
        return self._conn

    def _lookup(self, keys: Sequence[str]) -> dict[str, Vector]:
        found: dict[str, Vector] = {}
        conn = self._connection()
        for chunk in _batches(keys, LOOKUP_CHUNK):
            marks = ",".join("?" * len(chunk))
            rows = conn.execute(
                f"SELECT key, vector FROM vectors WHERE model = ? AND key IN ({marks})",
                (self._vectors_id, *chunk),
            )
            for key, blob in rows:
                found[key] = np.frombuffer(blob, dtype=np.float32).copy()
        return found

    def _store(self, keys: Sequence[str], vectors: Sequence[Vector]) -> None:
        rows = [
            (self._vectors_id, key, np.asarray(v, dtype=np.float32).tobytes())
            for key, v in zip(keys, vectors, strict=True)
        ]
        with self._connection() as conn:  # one transaction per batch: all of it or none of it
            conn.executemany("INSERT OR REPLACE INTO vectors (model, key, vector) VALUES (?, ?, ?)", rows)

    def _embed_missing(self, texts: dict[str, str], query: bool) -> dict[str, Vector]:
        from tqdm import tqdm

        keys = list(texts)
        made: dict[str, Vector] = {}
        quiet = not self._progress or len(keys) < self._batch_size  # no bar for a query or two
        with tqdm(total=len(keys), desc="embedding", unit="text", disable=quiet) as bar:
            for batch in _batches(keys, self._batch_size):
                chunk = [texts[k] for k in batch]
                vectors = self._inner.embed_query(chunk) if query else self._inner.embed(chunk)
                self._store(batch, vectors)
                made.update(zip(batch, (np.asarray(v, dtype=np.float32) for v in vectors), strict=True))
                self.misses += len(batch)
                bar.update(len(batch))
        return made

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        """One vector per text, from the cache where present; new texts are embedded in batches."""
        return self._embed(texts, query=False)

    def embed_query(self, texts: Sequence[str]) -> list[Vector]:
        """Query vectors, cached apart from passages (a query prefix changes the vector)."""
        return self._embed(texts, query=True)

    def _embed(self, texts: Sequence[str], query: bool) -> list[Vector]:
        keys = [text_key(QUERY_KEY_TAG + t if query else t) for t in texts]
        try:
            with self._lock:
                known = self._lookup(list(dict.fromkeys(keys)))
                missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in known}
                if missing:
                    known.update(self._embed_missing(missing, query))
        except sqlite3.Error as exc:
            raise UnavailableError("embedding cache", f"{self._path}: {exc}") from exc
        return [known[k] for k in keys]

    def close(self) -> None:
        """Close the cache file (it reopens on the next call)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
