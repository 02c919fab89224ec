"""The file behind SqliteIndex, the part every other part is given: its connections (one per thread, reads
through a memory map), its write-locked transactions, and the derived stores that follow its writes — the
memory-mapped vectors (vector_store.py) and the tantivy keyword index (keyword_index.py), which it opens
and hands to the parts that read them (index.build_sqlite_index)."""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import tempfile
import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from core.errors import ConfigurationError, UnavailableError
from infra.local.keywords.fts_tables import LEGACY, split_shared_table
from infra.local.sqlite.chunk_keys import ChunkKeys
from infra.local.sqlite.connect import immediate, open_sqlite
from infra.local.sqlite.errors import FAILURES, translate
from infra.local.sqlite.sql import CHANGE_LOG, KEYWORD_FLOOR, SCHEMA
from infra.local.vectors.vector_store import VectorStores

SQL_BATCH = 400  # stay well under SQLite's bound-parameter limit
# Searches read the database through a memory map of up to this many bytes instead of a read() per page
# into each connection's 2 MB page cache: worker processes share the OS's one copy of the pages, and a
# top-100 keyword search on SciFact took 12-15% less CPU (measured beside bench/peers.py). Writes still go through the WAL.
READ_MMAP_BYTES = 256 * 1024 * 1024


class SqliteStore:
    """The file and the stores that follow it (see module docstring). Thread-safe: one connection per
    thread."""

    def __init__(
        self, path: str | Path, ann_min_chunks: int, keyword_engine: Literal["fts5", "tantivy"]
    ) -> None:
        """Open (or create) the file and its derived stores; parameters as build_sqlite_index's."""
        self._path = str(path)
        if self._path != ":memory:":
            Path(self._path).parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        db_id = self._open_schema()
        if self._path == ":memory:":
            folder = Path(tempfile.mkdtemp(prefix="quarry-vectors-"))
            weakref.finalize(self, _remove_tree, folder)
        else:
            folder = Path(self._path + ".vectors")
        self._vectors = VectorStores(folder, db_id, ann_min_chunks)
        self._known_keys = ChunkKeys()
        self._keywords: Any = None  # keyword_index.KeywordIndex (imported only when chosen)
        keywords = folder / "tantivy" if self._path == ":memory:" else Path(self._path + ".tantivy")
        self._keyword_folder = keywords
        if keyword_engine == "tantivy":
            self._keywords = _keyword_index(keywords, db_id, self.conn)
        elif not keywords.exists():  # no keyword index follows this database: prune the log freely again
            with contextlib.suppress(sqlite3.OperationalError):
                self.conn().execute("DELETE FROM idx_meta WHERE key = ?", (KEYWORD_FLOOR,))

    @property
    def path(self) -> str:
        """The database file (":memory:" for a private one)."""
        return self._path

    @property
    def vectors(self) -> VectorStores:
        """The memory-mapped vector stores that follow the file's writes."""
        return self._vectors

    @property
    def known_keys(self) -> ChunkKeys:
        """The chunks' keys this process has read (chunk_keys.py)."""
        return self._known_keys

    @property
    def keywords(self) -> Any:
        """The tantivy index that follows the file's writes (keyword_index.KeywordIndex), None with FTS5."""
        return self._keywords

    @property
    def keyword_folder(self) -> Path:
        """Where the tantivy index lives (or would), whichever engine this process runs."""
        return self._keyword_folder

    def _open_schema(self) -> str:
        """Create the tables (or check an existing file's), and return the file's id."""
        try:
            self.conn().executescript(SCHEMA + CHANGE_LOG)
            legacy = self.conn().execute("SELECT sql FROM sqlite_master WHERE name = ?", (LEGACY,)).fetchone()
            if legacy is not None and "scope" not in legacy[0]:
                raise UnavailableError(
                    "sqlite", f"{self._path} was built by an older Quarry; delete it and re-ingest"
                )
            split_shared_table(self.conn())  # a file from before each tenant had a keyword table
            return str(self.conn().execute("SELECT value FROM idx_meta WHERE key = 'db_id'").fetchone()[0])
        except sqlite3.OperationalError as exc:
            raise translate(sqlite3.OperationalError(f"cannot open {self._path}: {exc}")) from exc

    def conn(self) -> sqlite3.Connection:
        """This thread's connection (opened on first use)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = open_sqlite(self._path)
            conn.execute(f"PRAGMA mmap_size = {READ_MMAP_BYTES}")
            self._local.conn = conn
        return conn

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        """A write-locked transaction (connect.immediate); the derived stores follow once committed."""
        try:
            with immediate(self.conn()) as conn:
                yield conn
        except FAILURES as exc:
            raise translate(exc) from exc
        self._follow_writes()

    def read(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """The rows of one query, SQLite's errors reported as core errors."""
        try:
            return self.conn().execute(sql, params).fetchall()
        except FAILURES as exc:
            raise translate(exc) from exc

    def settle(self) -> None:
        """Bring the keyword index (tantivy engine) up to every committed write now, instead of letting
        searches merge FTS5's ranking of the newest chunks meanwhile: an evaluation or a benchmark measures
        the engine itself. Nothing to do with FTS5, which is written in the same transaction."""
        if self._keywords is not None:
            self._keywords.settle(self.conn())

    def close(self) -> None:
        """Stop the background work this process runs on the file (the keyword follower, vector training)
        and close this thread's connection: nothing of it touches the data directory afterwards."""
        if self._keywords is not None:
            self._keywords.close()
        self._vectors.close()
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _follow_writes(self) -> None:
        """Bring this process's loaded vector stores up to the write just committed (so the next search
        finds them current), and the keyword index in the background. Best effort: the write is committed;
        a failure here is retried by the search."""
        if self._keywords is not None:
            self._keywords.follow_soon()
        tenants = self._vectors.loaded()[:SQL_BATCH]
        if not tenants:
            return
        with contextlib.suppress(sqlite3.Error, OSError, UnavailableError):
            marks = ",".join("?" * len(tenants))
            rows = self.read(
                f"SELECT tenant_id, gen FROM idx_generation WHERE tenant_id IN ({marks})", tenants
            )
            for tenant_id, gen in rows:
                self._vectors.tenant(tenant_id).snapshot(self.conn(), int(gen))


def _keyword_index(folder: Path, db_id: str, connect: Any) -> Any:
    try:
        from infra.local.keywords.keyword_index import KeywordIndex
    except ModuleNotFoundError as exc:
        raise ConfigurationError(
            "QUARRY_KEYWORD_ENGINE=tantivy needs the tantivy package (pip install 'quarry[local]')",
            {"QUARRY_KEYWORD_ENGINE": "tantivy is not installed"},
        ) from exc
    return KeywordIndex(folder, db_id, connect)


def _remove_tree(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
