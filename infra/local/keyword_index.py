"""The keyword index that follows writes (QUARRY_KEYWORD_ENGINE=tantivy): a tantivy index beside the SQLite
file (`<database>.tantivy/`), one document per chunk, BM25 with block-max WAND instead of FTS5's scoring
of every matching row.

SQLite stays the source of truth, as for the vector store (vector_store.py): triggers log every chunk
insert and delete and every change of an entity's filterable fields in `idx_changes`; the index records the
log position it reflects and the highest chunk id assigned by then (`state.json`, written after tantivy's
commit), and re-reads only the chunks named in the log since then (a changed chunk's document is deleted by
its id and added again from its current row, so replaying is harmless): in a background thread after each
write, and before a search, unless every pending change is a chunk added or deleted — then the search
merges FTS5's ranking of the newer chunks instead of waiting for tantivy's commit (`search`). It is
rebuilt from SQLite when missing, unreadable, of another database or format, or when the log may have been
pruned past it.

The log is pruned by the vector store; the position this index registered in `idx_meta` (`keyword_seq`)
bounds that pruning, so the entries it still needs stay (also while the fts5 engine runs, as long as this
folder exists: delete it when leaving tantivy for good). One writer across processes: an
exclusive `flock` around every change; readers reload after a commit (theirs or another process's).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import tantivy
from tantivy import Query

from core.models import Filters, LexicalQuery
from infra.local.fts import scope_tokens
from infra.local.sqlite_connect import BUSY_TIMEOUT_MS
from infra.local.sqlite_sql import KEYWORD_FLOOR
from infra.local.tantivy_query import (
    ANALYZER,
    STOP,
    STOP_ANALYZER,
    TEXT,
    QueryBuilder,
    analyzer,
    metadata_tokens,
    schema,
    stop_analyzer,
    tier_texts,
)

FORMAT = 4  # bump when the documents' fields change: older indexes are rebuilt, never misread
WRITER_HEAP = 64_000_000
ROWS = 2000
FOLLOW_IDLE_S = 2.0  # the background follower waits this long for more writes before it ends
# The follower lets writes gather this long before it commits them: a bulk ingest (a batch every ~0.2 s)
# makes one segment per interval, not one per batch. Searches meanwhile merge FTS5's ranking of the pending
# chunks (`search`), so nothing waits for it.
FOLLOW_COALESCE_S = 1.0
_ROW_SELECT = (
    "SELECT c.id, c.tenant_id, c.entity_type, e.source, e.owner, e.namespace, e.metadata, f.b3, f.b2, f.b1 "
    "FROM idx_chunks c JOIN idx_entities e ON e.tenant_id = c.tenant_id AND e.entity_type = c.entity_type "
    "AND e.entity_id = c.entity_id JOIN idx_fts f ON f.rowid = c.id WHERE e.deleted = 0"
)


class KeywordIndex:
    """One database's tantivy index (see module docstring). Thread-safe."""

    def __init__(self, folder: Path, db_id: str, connect: Callable[[], sqlite3.Connection]) -> None:
        """`connect`: this thread's connection to the database (the background follower uses its own)."""
        self._folder = folder
        self._connect = connect
        self._db_id = db_id
        self._schema = schema()
        self._analyzer = analyzer()
        self._queries = QueryBuilder(self._schema, self._analyzer)
        self._lock = threading.Lock()
        self._index: tantivy.Index | None = None
        self._seq = -1  # log position the open index reflects (-1: not open)
        self._top = 0  # the highest chunk id SQLite had assigned at that position
        self._view: tuple[tantivy.Index, int, int] | None = None  # (index, seq, top), replaced as one
        self._mtime = 0  # state.json's mtime when this process last read or wrote it
        self._wake = threading.Event()
        self._follower: threading.Thread | None = None
        self._follower_lock = threading.Lock()

    # -- files ------------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _writer_lock(self) -> Iterator[None]:
        self._folder.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(str(self._folder) + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _state(self) -> dict[str, Any] | None:
        try:
            self._mtime = os.stat(self._folder / "state.json").st_mtime_ns
            state = json.loads((self._folder / "state.json").read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(state, dict) or state.get("db_id") != self._db_id or state.get("format") != FORMAT:
            return None
        if not isinstance(state.get("seq"), int) or not isinstance(state.get("top"), int):
            return None
        return state

    def _write_state(self, seq: int, top: int) -> None:
        tmp = self._folder / f"state.{os.getpid()}.{threading.get_ident()}.tmp"
        tmp.write_text(json.dumps({"db_id": self._db_id, "format": FORMAT, "seq": seq, "top": top}))
        os.replace(tmp, self._folder / "state.json")
        self._mtime = os.stat(self._folder / "state.json").st_mtime_ns

    def _open(self) -> tantivy.Index:
        index = tantivy.Index(self._schema, path=str(self._folder), reuse=True)
        index.register_tokenizer(ANALYZER, self._analyzer)
        index.register_tokenizer(STOP_ANALYZER, stop_analyzer())
        return index

    def _state_changed(self) -> bool:
        try:
            return os.stat(self._folder / "state.json").st_mtime_ns != self._mtime
        except OSError:
            return True

    # -- following the log ------------------------------------------------------------------------------

    def follow_soon(self) -> None:
        """Catch up in the background, soon: a write is acknowledged once SQLite commits, without waiting
        for tantivy's commit (tens of ms of fsyncs); a search that comes first need not wait (`search`)."""
        self._wake.set()
        with self._follower_lock:
            if self._follower is None or not self._follower.is_alive():
                self._follower = threading.Thread(target=self._follow, daemon=True, name="quarry-keywords")
                self._follower.start()

    def _follow(self) -> None:
        while True:
            with self._follower_lock:
                if not self._wake.is_set():
                    self._follower = None
                    return
                self._wake.clear()
            time.sleep(FOLLOW_COALESCE_S)  # let the writes of a burst gather into one commit
            # Best effort: the writes are committed in SQLite, and the next search catches up itself. The
            # follower also waits for tantivy's segment merges after its commit: without that, a bulk ingest
            # left merge threads of every dropped writer running (45 at once, 1.2 GB of unmerged segments at
            # 300k chunks), and ingest fell from 5,000 to under 1,000 chunks/s.
            with contextlib.suppress(sqlite3.Error, OSError, ValueError):
                self.catch_up(self._connect(), settle_merges=True)
            self._wake.wait(FOLLOW_IDLE_S)

    def catch_up(self, conn: sqlite3.Connection, settle_merges: bool = False) -> tantivy.Index:
        """The index, reflecting at least every change committed in SQLite before this call
        (`settle_merges`: also wait for the segment merges its commit starts — the background follower)."""
        last = _last_seq(conn)
        index = self._index
        if index is not None and self._seq >= last and not self._state_changed():
            return index
        with self._lock:
            state = self._state()
            if self._index is not None and state is not None and state["seq"] >= last:
                if state["seq"] != self._seq:
                    self._index.reload()
                    self._seq, self._top = int(state["seq"]), int(state["top"])
                    self._view = (self._index, self._seq, self._top)
                return self._index
            with self._writer_lock():
                return self._apply(conn, settle_merges)

    def _apply(self, conn: sqlite3.Connection, settle_merges: bool = False) -> tantivy.Index:
        """Under the writer lock: apply the log since the recorded position, or rebuild."""
        state = self._state()
        own = not conn.in_transaction
        floor = _floor(conn)
        rebuild = state is None or floor is None or floor > state["seq"]
        if rebuild:
            _register(conn, 0, strict=True)  # hold pruning back while the index is built
            with contextlib.suppress(FileNotFoundError):
                (self._folder / "state.json").unlink()
            self._index, self._view = None, None
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder.mkdir(parents=True, exist_ok=True)
        try:
            index = self._index if self._index is not None else self._open()
        except ValueError:  # unreadable files: start again
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder.mkdir(parents=True, exist_ok=True)
            index, rebuild = self._open(), True
        if own:
            conn.execute("BEGIN")  # one read snapshot: the log position and the rows it names
        try:
            last = _last_seq(conn)
            top = _top_chunk(conn)
            if state is not None and not rebuild and state["seq"] >= last:
                seq, top = int(state["seq"]), int(state["top"])
            else:
                if rebuild or state is None:
                    add = lambda w: self._add(w, conn.execute(_ROW_SELECT + " ORDER BY c.id"))  # noqa: E731
                    _write(index, add, settle_merges=True)  # a rebuild: one big commit, merged once
                else:
                    since = int(state["seq"])
                    _write(index, lambda w: self._replay(w, conn, since, last), settle_merges)
                seq = last
        finally:
            if own:
                conn.execute("COMMIT")
        if state is None or rebuild or seq != state["seq"]:
            self._write_state(seq, top)
        _register(conn, seq)
        index.reload()
        self._index, self._seq, self._top = index, seq, top
        self._view = (index, seq, top)
        return index

    def _replay(self, writer: tantivy.IndexWriter, conn: sqlite3.Connection, since: int, last: int) -> None:
        changed = sorted(
            {
                int(r[0])
                for r in conn.execute(
                    "SELECT chunk_id FROM idx_changes WHERE seq > ? AND seq <= ?", (since, last)
                )
            }
        )
        for i in range(0, len(changed), 400):
            batch = changed[i : i + 400]
            writer.delete_documents_by_query(Query.term_set_query(self._schema, "chunk", batch))
            marks = ",".join("?" * len(batch))
            self._add(writer, conn.execute(f"{_ROW_SELECT} AND c.id IN ({marks})", batch))

    def _add(self, writer: tantivy.IndexWriter, cursor: sqlite3.Cursor) -> None:
        while rows := cursor.fetchmany(ROWS):
            for chunk_id, tenant, etype, source, owner, namespace, metadata, *tiers in rows:
                doc = tantivy.Document()
                doc.add_unsigned("chunk", int(chunk_id))
                scope = scope_tokens(tenant, etype, source, owner, namespace)
                scope += metadata_tokens(json.loads(metadata or "{}"))
                for token in scope:
                    doc.add_text("scope", token)
                text, stop_text = tier_texts(tiers)
                if text:
                    doc.add_text(TEXT, text)
                    doc.add_text(STOP, stop_text)
                writer.add_document(doc)

    def purge(self) -> None:
        """Erase what SQLite no longer holds (a purged tenant): rebuild from SQLite. Deleting documents
        would only mark them, their terms and text staying in the segments until a merge; like the VACUUM
        after a purge, the cost grows with the whole index, an admin operation's price for no bytes left."""
        with self._lock, self._writer_lock():
            with contextlib.suppress(FileNotFoundError):
                (self._folder / "state.json").unlink()
            self._apply(self._connect())

    # -- searching --------------------------------------------------------------------------------------

    def search(
        self,
        conn: sqlite3.Connection,
        tenant_id: str,
        query: LexicalQuery,
        filters: Filters,
        expansions: Mapping[str, Sequence[str]] | None,
        limit: int,
        newer: Callable[[int, int], list[tuple[int, float]]] | None = None,
    ) -> list[tuple[int, float]] | None:
        """(chunk id, BM25 score) best first, at most `limit` (more when some may be stale), within the
        tenant and the filters; None when the query asks only for stop words, which this index leaves
        out (a phrase of them) or a phrase too long for it (QueryBuilder.needs_fts5): the caller ranks it with FTS5.

        Right after a write the index is usually still committing it (in the background). Rather than
        wait, when every pending change is a chunk added or deleted (none moved: no placement or metadata
        change of a chunk the index holds), the answer is the index's as of its last commit — over-fetched
        by the chunks deleted since, whose rows no longer resolve — merged with `newer(top_chunk, limit)`:
        the chunks added since, ranked by FTS5 (the same BM25 over the same weighted tiers). Otherwise,
        or without `newer`, the index catches up first.
        """
        if self._queries.needs_fts5(query):
            return None
        extra = self._pending(conn) if newer is not None else None
        if extra is None:
            index, top = self.catch_up(conn), None
        else:
            index, top = extra[0], extra[1]
            self.follow_soon()
        searcher = index.searcher()
        text = self._queries.text_query(query, expansions, searcher)
        if text is None:
            return []
        stale = 0 if extra is None else extra[2]
        hits = searcher.search(
            self._queries.scoped(text, tenant_id, filters), limit + stale, count=False
        ).hits
        ids = searcher.fast_field_values("chunk", [address for _, address in hits])
        ranked = [(int(i), float(score)) for (score, _), i in zip(hits, ids, strict=True) if i is not None]
        if top is not None and newer is not None:
            best: dict[int, float] = {}
            for chunk_id, score in sorted(ranked + newer(top, limit), key=lambda hit: -hit[1]):
                best.setdefault(chunk_id, score)  # a chunk the index committed meanwhile: once
            ranked = list(best.items())[: limit + stale]
        return ranked

    def _pending(self, conn: sqlite3.Connection) -> tuple[tantivy.Index, int, int] | None:
        """(index, top chunk, chunks deleted since) when the open index is behind by additions and
        deletions only; None when it is current (nothing to merge) or must catch up first."""
        if self._view is None:
            return None
        index, seq, top = self._view
        own = not conn.in_transaction
        if own:
            conn.execute("BEGIN")
        try:
            floor = _floor(conn)
            if _last_seq(conn) <= seq or floor is None or floor > seq:
                return None
            moved, gone = conn.execute(
                "SELECT count(c.id), count(DISTINCT ch.chunk_id) FROM idx_changes ch "
                "LEFT JOIN idx_chunks c ON c.id = ch.chunk_id WHERE ch.seq > ? AND ch.chunk_id <= ?",
                (seq, top),
            ).fetchone()
        finally:
            if own:
                conn.execute("COMMIT")
        return None if moved else (index, top, int(gone))


def _last_seq(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT max(seq) FROM idx_changes").fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def _top_chunk(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'idx_chunks'").fetchone()
    return int(row[0]) if row else 0


def _floor(conn: sqlite3.Connection) -> int | None:
    row = conn.execute("SELECT value FROM idx_meta WHERE key = ?", (KEYWORD_FLOOR,)).fetchone()
    return None if row is None else int(row[0])


def _register(conn: sqlite3.Connection, seq: int, strict: bool = False) -> None:
    """Record the log position this index needs kept. Best effort after a catch-up (an older floor only
    prunes less); `strict` before a rebuild, which must not race a prune."""
    if not strict:
        conn.execute("PRAGMA busy_timeout = 0")  # never wait for a writer here: the next catch-up registers
    try:
        conn.execute("INSERT OR REPLACE INTO idx_meta (key, value) VALUES (?, ?)", (KEYWORD_FLOOR, str(seq)))
    except sqlite3.OperationalError:
        if strict:
            raise
    finally:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")


def _write(
    index: tantivy.Index, change: Callable[[tantivy.IndexWriter], object], settle_merges: bool = False
) -> None:
    """Run `change` with a writer, committed on success, rolled back on failure, and dropped either way
    (which releases tantivy's own directory lock, so the next catch-up, here or elsewhere, can write);
    `settle_merges`: wait for the merges the commit started before dropping the writer."""
    writer = index.writer(heap_size=WRITER_HEAP, num_threads=1)
    try:
        change(writer)
        writer.commit()
        if settle_merges:
            writer.wait_merging_threads()  # consumes the writer (and its lock) once the merges are done
    except BaseException:
        writer.rollback()
        raise
    finally:
        del writer
