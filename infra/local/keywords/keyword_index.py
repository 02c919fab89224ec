"""The keyword index that follows writes (QUARRY_KEYWORD_ENGINE=tantivy): beside the SQLite file
(`<database>.tantivy/`), one tantivy index per tenant (keyword_tenant.py), one document per chunk, BM25
with block-max WAND instead of FTS5's scoring of every matching row.

An index per tenant because BM25's statistics — the number of documents, their average length, each
term's document frequency — are an index's, whatever the query filters. In one index shared by every
tenant (as before), another tenant's documents moved a tenant's scores by orders of magnitude and let a
few planted documents tell whether any other tenant held a word, and a prefix expanded to the words most
frequent across all tenants. tantivy's Python binding offers no way to score with statistics of one's own
(tantivy's `Bm25StatisticsProvider` is not exposed) nor the postings to score them oneself; an index of
the tenant's documents alone makes every statistic, every prefix expansion and the idf boost
(tantivy_query.fts5_idf_boost) the tenant's, exactly, and erasing a tenant is deleting its folder. A
single-tenant index is the same index as before less one filter clause (the tenant's), so the benchmarks,
one tenant each, rank and run as before.

SQLite stays the source of truth, as for the vector store (vector_store.py): triggers log every chunk
insert and delete and every change of an entity's filterable fields in `idx_changes` (with the tenant);
each tenant's index records the log position it reflects and the highest chunk id assigned by then (its
`state.json`) and re-reads only its chunks named in the log since then: in a background thread after each
write (every tenant with changes), and before a search (that tenant), unless every pending change of the
tenant is a chunk added or deleted — then the search merges FTS5's ranking of the newer chunks (the
tenant's own FTS5 table: the same statistics) instead of waiting for tantivy's commit (`search`). A
tenant's index is built from SQLite when missing, unreadable, of another database or format.

The log is pruned by the vector store, never past the position this index registered in `idx_meta`
(`keyword_seq`): the folder's own `state.json` holds it, a position up to which every tenant's index
reflects its changes (the follower moves it once it has caught every tenant up). When that position is
missing, of another database or format, or the log may have been pruned past it (the fts5 engine ran
without this folder in sight), every tenant's index is removed and each is rebuilt when next needed. The
fts5 engine keeps the registered position while this folder exists (delete it when leaving tantivy for
good). One writer across processes: an exclusive `flock` around every change; readers reload after a
commit (theirs or another process's).

Size: longer than ~300 lines because following the log (the folder's position, the background
follower, catch-up before a search) is one protocol; a tenant's own index is keyword_tenant.py, queries
tantivy_query.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from core.models import Filters, LexicalQuery
from infra.local.keywords.keyword_files import tenant_folder, writer_lock
from infra.local.keywords.keyword_tenant import FORMAT, TenantKeywordIndex, View
from infra.local.keywords.tantivy_query import QueryBuilder, analyzer, schema
from infra.local.sqlite.connect import BUSY_TIMEOUT_MS
from infra.local.sqlite.sql import KEYWORD_FLOOR

FOLLOW_IDLE_S = 2.0  # the background follower waits this long for more writes before it ends
# The follower lets writes gather this long before it commits them: a bulk ingest (a batch every ~0.2 s)
# makes one segment per interval, not one per batch. Searches meanwhile merge FTS5's ranking of the pending
# chunks (`search`), so nothing waits for it.
FOLLOW_COALESCE_S = 1.0
# Tenant indexes a process keeps open: each open tantivy index holds a thread of its own (measured with
# tantivy 0.27, whatever the reload policy), which ends when the index is closed.
OPEN_TENANTS = 64

Ranked = list[tuple[int, float]]


class KeywordIndex:
    """One database's tantivy indexes, one per tenant (see module docstring). Thread-safe."""

    def __init__(self, folder: Path, db_id: str, connect: Callable[[], sqlite3.Connection]) -> None:
        """`connect`: this thread's connection to the database (the background follower uses its own)."""
        self._folder = folder
        self._connect = connect
        self._db_id = db_id
        self._schema = schema()
        self._queries = QueryBuilder(self._schema, analyzer())
        self._lock = threading.Lock()  # one catch-up at a time in this process
        self._tenants: dict[str, TenantKeywordIndex] = {}
        self._tenants_lock = threading.Lock()
        self._wake = threading.Event()
        self._follower: threading.Thread | None = None
        self._follower_lock = threading.Lock()
        self._closed = False

    def _tenant(self, tenant_id: str) -> TenantKeywordIndex:
        """The tenant's index, the most recently used of this process's open ones (the least recently
        used past OPEN_TENANTS is closed: it reopens from its files when next needed)."""
        with self._tenants_lock:
            found = self._tenants.pop(tenant_id, None)
            if found is None:
                found = TenantKeywordIndex(
                    tenant_folder(self._folder, tenant_id), tenant_id, self._db_id, self._schema
                )
            self._tenants[tenant_id] = found
            if len(self._tenants) > OPEN_TENANTS:
                self._tenants.pop(next(iter(self._tenants))).forget()
            return found

    # -- the folder ---------------------------------------------------------------------------------------

    def _followed(self) -> int | None:
        """The log position every tenant's index reflects, from the folder's `state.json`."""
        try:
            state = json.loads((self._folder / "state.json").read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(state, dict) or state.get("db_id") != self._db_id or state.get("format") != FORMAT:
            return None
        return state["seq"] if isinstance(state.get("seq"), int) else None

    def _write_followed(self, seq: int) -> None:
        tmp = self._folder / f"state.{os.getpid()}.{threading.get_ident()}.tmp"
        tmp.write_text(json.dumps({"db_id": self._db_id, "format": FORMAT, "seq": seq}))
        os.replace(tmp, self._folder / "state.json")

    def _valid_followed(self, conn: sqlite3.Connection) -> int | None:
        """The followed position, unless the folder is not this database's current one or the log may
        have been pruned past it (no position registered: the fts5 engine ran without this folder)."""
        followed, floor = self._followed(), _floor(conn)
        return followed if followed is not None and floor is not None and floor <= followed else None

    def _check_folder(self, conn: sqlite3.Connection) -> int:
        """Under the writer lock, outside a transaction: the followed position, after removing every
        tenant's index if the folder is not this database's current one or the log may have been pruned
        past it (the tenants are then rebuilt from SQLite, each when next needed)."""
        followed = self._valid_followed(conn)
        if followed is not None:
            return followed
        with self._tenants_lock:
            tenants = list(self._tenants.values())
        for tenant in tenants:
            tenant.forget()
        shutil.rmtree(self._folder, ignore_errors=True)
        self._folder.mkdir(parents=True, exist_ok=True)
        # From the log's start: the follower's next pass builds every tenant the log still names (the
        # others are built when next searched), and the log is kept until it has.
        self._write_followed(0)
        _register(conn, 0, strict=True)
        return 0

    # -- following the log ------------------------------------------------------------------------------

    def follow_soon(self) -> None:
        """Catch up in the background, soon: a write is acknowledged once SQLite commits, without waiting
        for tantivy's commit (tens of ms of fsyncs); a search that comes first need not wait (`search`)."""
        self._wake.set()
        with self._follower_lock:
            if self._closed:
                return  # closed: the next search (here or elsewhere) catches up itself
            if self._follower is None or not self._follower.is_alive():
                self._follower = threading.Thread(target=self._follow, daemon=True, name="quarry-keywords")
                self._follower.start()

    def close(self) -> None:
        """Stop following: the background follower ends its pass and leaves; returns once it has (a tool
        closing its container before it removes the data directory: a later pass would open the file)."""
        with self._follower_lock:
            self._closed = True
            follower = self._follower
        self._wake.set()  # out of its idle wait
        if follower is not None:
            follower.join()

    def _follow(self) -> None:
        while True:
            with self._follower_lock:
                if self._closed or not self._wake.is_set():
                    self._follower = None
                    return
                self._wake.clear()
            time.sleep(FOLLOW_COALESCE_S)  # let the writes of a burst gather into one commit
            # Best effort: the writes are committed in SQLite, and the next search catches up itself. The
            # follower also waits for tantivy's segment merges after its commit: without that, a bulk ingest
            # left merge threads of every dropped writer running (45 at once, 1.2 GB of unmerged segments at
            # 300k chunks), and ingest fell from 5,000 to under 1,000 chunks/s.
            with contextlib.suppress(sqlite3.Error, OSError, ValueError):
                self.follow(self._connect(), settle_merges=True)
            self._wake.wait(FOLLOW_IDLE_S)

    def follow(self, conn: sqlite3.Connection, settle_merges: bool = False) -> None:
        """Bring every tenant with changes since the followed position up to every change committed
        before this call, then move the position (`settle_merges`: also wait for the segment merges each
        commit starts — the background follower)."""
        with self._lock, writer_lock(self._folder):
            followed = self._check_folder(conn)
            with _snapshot(conn):
                last, top = _last_seq(conn), _top_chunk(conn)
                tenants = [
                    r[0]
                    for r in conn.execute(
                        "SELECT DISTINCT tenant_id FROM idx_changes WHERE seq > ? AND seq <= ?",
                        (followed, last),
                    )
                ]
                for tenant_id in sorted(tenants):
                    self._tenant(tenant_id).apply(conn, last, top, settle_merges)
            if last > followed:
                self._write_followed(last)
                _register(conn, last)

    def settle(self, conn: sqlite3.Connection) -> None:
        """Every tenant's index current and merged (an evaluation or a benchmark measures the engine)."""
        self.follow(conn, settle_merges=True)
        for (tenant_id,) in conn.execute("SELECT DISTINCT tenant_id FROM idx_chunks").fetchall():
            self.catch_up(conn, tenant_id, settle_merges=True)

    def catch_up(self, conn: sqlite3.Connection, tenant_id: str, settle_merges: bool = False) -> View | None:
        """The tenant's index, reflecting at least every change of the tenant committed in SQLite before
        this call; None when the tenant has no keyword table (nothing written, or erased)."""
        tenant = self._tenant(tenant_id)
        last = _tenant_seq(conn, tenant_id)
        view = tenant.refresh()
        if view is not None and view[1] >= last:
            return view
        if view is None and tenant.tableless(conn):
            return None  # nothing written (or erased): nothing to catch up on, so no writer lock to wait for
        with self._lock:
            view = tenant.refresh()
            if view is None and self._valid_followed(conn) is not None:  # not open in this process yet
                view = tenant.open_current(last)
            if view is not None and view[1] >= last:
                return view
            with writer_lock(self._folder):
                self._check_folder(conn)
                with _snapshot(conn):
                    return tenant.apply(conn, _last_seq(conn), _top_chunk(conn), settle_merges)

    def forget(self, tenant_id: str) -> None:
        """Let go of the tenant's index, whose folder an erase removes (SqliteCatalog.purge_tenant)."""
        with self._tenants_lock:
            tenant = self._tenants.pop(tenant_id, None)
        if tenant is not None:
            tenant.forget()

    # -- searching --------------------------------------------------------------------------------------

    def search(
        self,
        conn: sqlite3.Connection,
        tenant_id: str,
        query: LexicalQuery,
        filters: Filters,
        expansions: Mapping[str, Sequence[str]] | None,
        limit: int,
        newer: Callable[[int, int], Ranked] | None = None,
    ) -> tuple[Ranked, bool] | None:
        """(chunk id, BM25 score) best first, at most `limit` (more when some may be stale), of the tenant's
        index within the filters, and whether each was live when ranked (false when chunks were deleted since
        the index's last commit: its ids must then be checked against the rows); None when the query asks
        only for stop words, which this index leaves out (a phrase of them) or a phrase too long for it
        (QueryBuilder.needs_fts5): the caller ranks it with FTS5.

        Right after a write the index is usually still committing it (in the background). Rather than
        wait, when every pending change of the tenant is a chunk added or deleted (none moved: no placement
        or metadata change of a chunk the index holds), the answer is the index's as of its last commit —
        over-fetched by the chunks deleted since, whose rows no longer resolve — merged with
        `newer(top_chunk, limit)`: the chunks added since, ranked by FTS5 over the tenant's own table (the
        same BM25 over the same weighted tiers, with the tenant's statistics). Otherwise, or without
        `newer`, the index catches up first.
        """
        if self._queries.needs_fts5(query):
            return None
        pending = self._pending(conn, tenant_id) if newer is not None else None
        if pending is None:
            view, stale = self.catch_up(conn, tenant_id), 0
            if view is None:
                return [], True
        else:
            view, stale = pending
            self.follow_soon()
        index, _, top = view
        searcher = index.searcher()
        text = self._queries.text_query(query, expansions, searcher)
        if text is None:
            return [], True
        hits = searcher.search(self._queries.scoped(text, filters), limit + stale, count=False).hits
        ids = searcher.fast_field_values("chunk", [address for _, address in hits])
        ranked = [(int(i), float(score)) for (score, _), i in zip(hits, ids, strict=True) if i is not None]
        if pending is not None and newer is not None:
            best: dict[int, float] = {}
            for chunk_id, score in sorted(ranked + newer(top, limit), key=lambda hit: -hit[1]):
                best.setdefault(chunk_id, score)  # a chunk the index committed meanwhile: once
            ranked = list(best.items())[: limit + stale]
        return ranked, stale == 0

    def _pending(self, conn: sqlite3.Connection, tenant_id: str) -> tuple[View, int] | None:
        """(the tenant's open index, chunks of the tenant deleted since) when that index is behind by
        additions and deletions only; None when it is current (nothing to merge) or must catch up first."""
        view = self._tenant(tenant_id).refresh()  # as of the latest commit: the log since then is all there
        if view is None:
            return None
        _, seq, top = view
        with _snapshot(conn):
            if _floor(conn) is None or _tenant_seq(conn, tenant_id) <= seq:
                return None
            moved, gone = conn.execute(
                "SELECT count(c.id), count(DISTINCT ch.chunk_id) FROM idx_changes ch "
                "LEFT JOIN idx_chunks c ON c.id = ch.chunk_id "
                "WHERE ch.tenant_id = ? AND ch.seq > ? AND ch.chunk_id <= ?",
                (tenant_id, seq, top),
            ).fetchone()
        return None if moved else (view, int(gone))


@contextlib.contextmanager
def _snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """One read snapshot of SQLite (the caller's own transaction, when it is in one)."""
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN")
    try:
        yield
    finally:
        if own:
            conn.execute("COMMIT")


def _last_seq(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT max(seq) FROM idx_changes").fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def _tenant_seq(conn: sqlite3.Connection, tenant_id: str) -> int:
    """The log position of the tenant's latest change still logged (0: none)."""
    row = conn.execute("SELECT max(seq) FROM idx_changes WHERE tenant_id = ?", (tenant_id,)).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def _top_chunk(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'idx_chunks'").fetchone()
    return int(row[0]) if row else 0


def _floor(conn: sqlite3.Connection) -> int | None:
    row = conn.execute("SELECT value FROM idx_meta WHERE key = ?", (KEYWORD_FLOOR,)).fetchone()
    return None if row is None else int(row[0])


def _register(conn: sqlite3.Connection, seq: int, strict: bool = False) -> None:
    """Record the log position this index needs kept. Best effort after a catch-up (an older floor only
    prunes less); `strict` when the folder starts again, which must not race a prune."""
    if not strict:
        conn.execute("PRAGMA busy_timeout = 0")  # never wait for a writer here: the next catch-up registers
    try:
        conn.execute("INSERT OR REPLACE INTO idx_meta (key, value) VALUES (?, ?)", (KEYWORD_FLOOR, str(seq)))
    except sqlite3.OperationalError:
        if strict:
            raise
    finally:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
