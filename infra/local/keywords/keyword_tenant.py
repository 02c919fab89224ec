"""One tenant's tantivy index (`<database>.tantivy/<tenant digest>/`): its documents, the log position it
reflects (`state.json`), and catching up from SQLite. The collection of tenants, the locks, the
background follower and searching are keyword_index.py's."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tantivy
from tantivy import Query

from infra.local.keywords.fts import scope_tokens
from infra.local.keywords.fts_tables import fts_table, is_missing_table
from infra.local.keywords.keyword_files import remove_folder
from infra.local.keywords.tantivy_query import (
    ANALYZER,
    STOP,
    STOP_ANALYZER,
    TEXT,
    analyzer,
    metadata_tokens,
    stop_analyzer,
    tier_texts,
)

FORMAT = 5  # bump when the documents' fields or the folders' layout change: older indexes are rebuilt
WRITER_HEAP = 64_000_000
ROWS = 2000
REPLAY_BATCH = 400  # chunk ids per delete and re-read: well under SQLite's bound-parameter limit
_ROW_SELECT = (
    "SELECT c.id, c.tenant_id, c.entity_type, e.source, e.owner, e.namespace, e.metadata, f.b3, f.b2, f.b1 "
    "FROM idx_chunks c JOIN idx_entities e ON e.tenant_id = c.tenant_id AND e.entity_type = c.entity_type "
    "AND e.entity_id = c.entity_id JOIN {table} f ON f.rowid = c.id WHERE c.tenant_id = ? AND e.deleted = 0"
)

View = tuple[tantivy.Index, int, int]  # (index, log position it reflects, highest chunk id by then)


class TenantKeywordIndex:
    """One tenant's index. Changes only under keyword_index.py's locks; `refresh` from any thread."""

    def __init__(self, folder: Path, tenant_id: str, db_id: str, fields: tantivy.Schema) -> None:
        self.folder = folder
        self.tenant_id = tenant_id
        self._db_id = db_id
        self._schema = fields
        self._index: tantivy.Index | None = None
        self._view: View | None = None  # replaced as one
        self._mtime = 0  # state.json's mtime when this process last read or wrote it
        self._lock = threading.Lock()
        self._select = _ROW_SELECT.format(table=fts_table(tenant_id))

    # -- files ------------------------------------------------------------------------------------------

    def _state(self) -> dict[str, Any] | None:
        try:
            self._mtime = os.stat(self.folder / "state.json").st_mtime_ns
            state = json.loads((self.folder / "state.json").read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(state, dict) or state.get("db_id") != self._db_id or state.get("format") != FORMAT:
            return None
        if not isinstance(state.get("seq"), int) or not isinstance(state.get("top"), int):
            return None
        return state

    def _write_state(self, seq: int, top: int) -> None:
        tmp = self.folder / f"state.{os.getpid()}.{threading.get_ident()}.tmp"
        tmp.write_text(json.dumps({"db_id": self._db_id, "format": FORMAT, "seq": seq, "top": top}))
        os.replace(tmp, self.folder / "state.json")
        self._mtime = os.stat(self.folder / "state.json").st_mtime_ns

    def _open(self) -> tantivy.Index:
        index = tantivy.Index(self._schema, path=str(self.folder), reuse=True)
        index.register_tokenizer(ANALYZER, analyzer())
        index.register_tokenizer(STOP_ANALYZER, stop_analyzer())
        return index

    def _fresh(self) -> tantivy.Index:
        self.forget()
        remove_folder(self.folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        return self._open()

    def forget(self) -> None:
        """Let go of the open index (its files are being removed)."""
        with self._lock:
            self._index, self._view = None, None

    def _publish(self, index: tantivy.Index, seq: int, top: int) -> View:
        index.reload()
        with self._lock:
            self._index, self._view = index, (index, seq, top)
        return self._view

    # -- reading ----------------------------------------------------------------------------------------

    def refresh(self) -> View | None:
        """The open index as of the latest commit of any process (reloaded when `state.json` changed), or
        None when this process has none open or the files are gone."""
        view = self._view
        try:
            changed = os.stat(self.folder / "state.json").st_mtime_ns != self._mtime
        except OSError:
            return None
        if view is None or not changed:
            return view
        state = self._state()
        if state is None:  # removed, or rewritten by another database's index: start again
            self.forget()
            return None
        if state["seq"] == view[1]:
            return view
        return self._publish(view[0], int(state["seq"]), int(state["top"]))

    def open_current(self, last: int) -> View | None:
        """The index as its files have it when they reflect log position `last` (reading needs no writer
        lock), else None."""
        state = self._state()
        if state is None or state["seq"] < last:
            return None
        try:
            index = self._index if self._index is not None else self._open()
            return self._publish(index, int(state["seq"]), int(state["top"]))
        except (OSError, ValueError):  # being rebuilt by another process: the caller waits for the lock
            return None

    def tableless(self, conn: sqlite3.Connection) -> bool:
        """Whether the tenant has no keyword table in SQLite: it never wrote a chunk, or was erased."""
        return is_missing_table(conn, fts_table(self.tenant_id))

    # -- catching up: under the writer lock, inside the caller's read snapshot of SQLite ---------------------

    def apply(self, conn: sqlite3.Connection, last: int, top: int, settle_merges: bool) -> View | None:
        """Bring the index up to log position `last` (`top`: the highest chunk id SQLite had assigned by
        then): replay the tenant's log entries since the recorded position, or build from SQLite when the
        files are missing, unreadable, of another database or format. None when the tenant has no keyword
        table (it never wrote a chunk, or was erased): nothing is created for it."""
        state = self._state()
        index = None
        if state is not None:
            try:
                index = self._index if self._index is not None else self._open()
            except ValueError:  # unreadable files: build again
                state = None
        if state is not None and index is not None:
            if state["seq"] < last:
                since = int(state["seq"])
                _write(index, lambda w: self._replay(w, conn, since, last), settle_merges)
            else:  # another process caught up meanwhile
                last, top = int(state["seq"]), int(state["top"])
        else:
            if self.tableless(conn):
                self.forget()
                remove_folder(self.folder)  # whatever a crash left there
                return None
            index = self._fresh()
            rows = conn.execute(self._select + " ORDER BY c.id", (self.tenant_id,))
            _write(index, lambda w: self._add(w, rows), settle_merges=True)  # one big commit, merged once
        if state is None or last != state["seq"]:
            self._write_state(last, top)
        return self._publish(index, last, top)

    def _replay(self, writer: tantivy.IndexWriter, conn: sqlite3.Connection, since: int, last: int) -> None:
        """Delete every chunk the log names since `since` and add back those that still exist (a changed
        chunk's document is replaced, so replaying twice is harmless)."""
        changed = sorted(
            {
                int(r[0])
                for r in conn.execute(
                    "SELECT chunk_id FROM idx_changes WHERE tenant_id = ? AND seq > ? AND seq <= ?",
                    (self.tenant_id, since, last),
                )
            }
        )
        for i in range(0, len(changed), REPLAY_BATCH):
            batch = changed[i : i + REPLAY_BATCH]
            writer.delete_documents_by_query(Query.term_set_query(self._schema, "chunk", batch))
            marks = ",".join("?" * len(batch))
            self._add(writer, conn.execute(f"{self._select} AND c.id IN ({marks})", [self.tenant_id, *batch]))

    @staticmethod
    def _add(writer: tantivy.IndexWriter, cursor: sqlite3.Cursor) -> None:
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
