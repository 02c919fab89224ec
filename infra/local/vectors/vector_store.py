"""The vector store that follows writes: per tenant, memory-mapped column files beside the SQLite file.

SQLite stays the source of truth. Triggers (sqlite/sql.py) append every chunk insert, chunk delete and
change of an entity's filterable fields to `idx_changes`; a store records the change sequence and the
index generation it reflects (`meta.json`) and catches up by re-reading only the chunks named in the log
since then: a new chunk is appended, a dropped or replaced one is tombstoned, a moved one gets new codes.
Nothing on the search path re-reads the tenant's vectors; a full build happens only when the files are
missing or belong to another database (first start, a deleted data dir), and compaction copies live rows
once tombstones pass a share of the rows.

The files are shared: every SqliteIndex over the same database (threads, the server's worker processes)
maps the same pages, so memory does not multiply with workers. Changes are made under an exclusive
`flock`; rows are appended past the published count before `meta.json` is atomically replaced, so a
reader (or a process killed mid-update) never sees a half-written row as live.

Size: longer than ~300 lines because the file format and its catch-up protocol (append, tombstone,
compact, publish `meta.json`, train the IVF index in the background) are one invariant, kept in one place;
the column files themselves are vector_files.py, the IVF index ivf.py.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from infra.local.sqlite.connect import BUSY_TIMEOUT_MS
from infra.local.sqlite.sql import KEYWORD_FLOOR
from infra.local.vectors import ivf
from infra.local.vectors.exact_knn import CODED, VectorSnapshot
from infra.local.vectors.vector_files import COLUMN_TYPES, MIN_CAPACITY, ColumnFiles, Meta

COMPACT_SHARE = 0.25  # compact when tombstones pass this share of the rows…
COMPACT_MIN_DEAD = 1024  # …and are at least this many
PRUNE_EVERY = 20_000  # log entries applied between prunes of the tenant's applied change log
FETCH_ROWS = 4096
ANN_RETRAIN_SHARE = 0.5  # retrain the approximate index once the rows appended since pass this share

_ROW_SELECT = (
    "SELECT c.id, e.rowid, c.entity_type, e.source, e.owner, e.namespace, c.embedding FROM idx_chunks c "
    "JOIN idx_entities e ON e.tenant_id = c.tenant_id AND e.entity_type = c.entity_type "
    "AND e.entity_id = c.entity_id WHERE c.tenant_id = ? AND e.deleted = 0 AND c.embedding IS NOT NULL"
)


class TenantStore:
    """One tenant's columns: vectors (capacity × dim float32), ids, live flags and filter codes."""

    def __init__(self, folder: Path, tenant_id: str, db_id: str, ann_min_chunks: int = 0) -> None:
        self._folder = folder
        self._files = ColumnFiles(folder, db_id)
        self._ann_min = ann_min_chunks
        self._ivf: ivf.Ivf | None = None
        self._training: threading.Thread | None = None
        self._ivf_name = ""
        self._tenant = tenant_id
        self._db_id = db_id
        self._lock = threading.Lock()
        self._snapshot: VectorSnapshot | None = None
        self._code_index: dict[str, dict[str | None, int]] = {}

    # -- public -----------------------------------------------------------------------------------------

    def snapshot(self, conn: sqlite3.Connection, generation: int) -> VectorSnapshot:
        """Rows reflecting at least `generation` (caught up from the change log if behind)."""
        snap = self._snapshot
        if snap is not None and snap.generation >= generation and not self._files.meta_changed():
            return snap
        with self._lock:
            snap = self._snapshot
            if snap is not None and snap.generation >= generation and not self._files.meta_changed():
                return snap
            meta = self._files.read_meta()
            if meta is None or meta.gen < generation:
                with self._files.lock():
                    meta = self._files.read_meta()
                    if meta is None or meta.gen < generation:
                        meta = self._catch_up(conn, meta)
            try:
                self._snapshot = self._publish(meta)
            except FileNotFoundError:  # compacted or rebuilt by another process meanwhile: read again
                meta = self._files.read_meta()
                if meta is None:
                    raise
                self._snapshot = self._publish(meta)
            self._maybe_train(meta)
            return self._snapshot

    def rebuild(self, conn: sqlite3.Connection) -> VectorSnapshot:
        """Build from SQLite now, whatever the files say: the stored vectors changed dimension (another
        model swapped in by `quarry reindex`), which the change log does not record."""
        with self._lock:
            with self._files.lock():
                meta = self._catch_up(conn, None)
            self._snapshot = self._publish(meta)
            return self._snapshot

    def _publish(self, meta: Meta) -> VectorSnapshot:
        maps = self._files.map(meta)
        n = meta.count
        lookup = {c: {v: i for i, v in enumerate(meta.codes[c])} for c in CODED}
        if not maps:
            empty = np.zeros(0, np.int64)
            return VectorSnapshot(
                meta.gen,
                np.zeros((0, 0), np.float32),
                empty,
                empty,
                np.zeros(0, np.uint8),
                {c: np.zeros(0, np.int32) for c in CODED},
                lookup,
                0,
            )
        plain = {c: m[:n].view(np.ndarray) for c, m in maps.items()}  # np.memmap indexing is slow
        return VectorSnapshot(
            ivf=self._load_ivf(meta),
            generation=meta.gen,
            matrix=plain["vectors"],
            ids=plain["ids"],
            entity=plain["entity"],
            # A copy (one byte a row): tombstones are set in place by the next catch-up, and a search on
            # this snapshot must not lose a replaced chunk before it can see the replacement row.
            live=np.array(maps["live"][:n]),
            codes={c: plain[c] for c in CODED},
            lookup=lookup,
            dead=meta.dead,
        )

    # -- catching up ------------------------------------------------------------------------------------

    def _catch_up(self, conn: sqlite3.Connection, meta: Meta | None) -> Meta:
        """Apply the change log since `meta` (or build from scratch) in one read snapshot of SQLite."""
        self._code_index = {}
        own = not conn.in_transaction  # inside the caller's transaction, read in its snapshot
        if own:
            conn.execute("BEGIN")
        try:
            gen_row = conn.execute(
                "SELECT gen FROM idx_generation WHERE tenant_id = ?", (self._tenant,)
            ).fetchone()
            generation = int(gen_row[0]) if gen_row else 0
            found = conn.execute(
                "SELECT max(seq) FROM idx_changes WHERE tenant_id = ?", (self._tenant,)
            ).fetchone()[0]
            last = int(found) if found is not None else (0 if meta is None else meta.seq)
            applied = None if meta is None or last < meta.seq else self._apply(conn, meta, last)
            # None: no usable files, or a chunk id out of order (a database from before AUTOINCREMENT ids)
            meta = applied if applied is not None else self._build(conn, generation, last)
            meta.gen = generation
        finally:
            if own:
                conn.execute("COMMIT")
        if meta.dead >= COMPACT_MIN_DEAD and meta.dead > COMPACT_SHARE * meta.count:
            meta = self._compact(meta)
        self._files.write_meta(meta)
        self._files.remove_other_epochs(meta.epoch)
        if meta.seq - meta.pruned >= PRUNE_EVERY:
            self._prune(conn, meta)
        return meta

    def _code(self, meta: Meta, column: str, value: str | None) -> int:
        index = self._code_index.setdefault(column, {v: i for i, v in enumerate(meta.codes[column])})
        code = index.get(value)
        if code is None:
            code = index[value] = len(meta.codes[column])
            meta.codes[column].append(value)
        return code

    def _put(self, meta: Meta, row: int, values: tuple[Any, ...], vector: npt.NDArray[np.float32]) -> None:
        maps = self._files.map(meta)
        chunk_id, entity, etype, source, owner, namespace = values
        maps["vectors"][row] = vector
        maps["ids"][row] = chunk_id
        maps["entity"][row] = entity
        for column, value in zip(CODED, (etype, source, owner, namespace), strict=True):
            maps[column][row] = self._code(meta, column, value)
        maps["live"][row] = 1

    def _append(self, meta: Meta, values: tuple[Any, ...], blob: bytes) -> None:
        vector = np.frombuffer(blob, dtype=np.float32)
        if meta.dim == 0:
            meta.dim = vector.shape[0]
        if vector.shape[0] != meta.dim:
            return  # a vector of another model's dimension cannot be ranked with these
        if meta.count >= meta.capacity:
            self._files.allocate(meta, max(MIN_CAPACITY, 2 * meta.capacity))
        self._put(meta, meta.count, values, vector)
        meta.count += 1

    def _build(self, conn: sqlite3.Connection, generation: int, last: int) -> Meta:
        epoch = self._files.next_epoch()
        meta = Meta(db_id=self._db_id, epoch=epoch, seq=last, pruned=last, gen=generation)
        cur = conn.execute(_ROW_SELECT + " ORDER BY c.id", (self._tenant,))
        while rows := cur.fetchmany(FETCH_ROWS):
            for r in rows:
                self._append(meta, tuple(r[:6]), r[6])
        return meta

    def _apply(self, conn: sqlite3.Connection, meta: Meta, last: int) -> Meta | None:
        changed = sorted(
            {
                int(r[0])
                for r in conn.execute(
                    "SELECT chunk_id FROM idx_changes WHERE tenant_id = ? AND seq > ? AND seq <= ?",
                    (self._tenant, meta.seq, last),
                )
            }
        )
        maps = self._files.map(meta)
        for i in range(0, len(changed), 400):
            batch = changed[i : i + 400]
            marks = ",".join("?" * len(batch))
            current = {
                int(r[0]): r
                for r in conn.execute(f"{_ROW_SELECT} AND c.id IN ({marks})", (self._tenant, *batch))
            }
            for chunk_id in batch:
                ids = maps["ids"][: meta.count] if maps else np.zeros(0, np.int64)
                pos = int(np.searchsorted(ids, chunk_id))
                found = pos < meta.count and int(ids[pos]) == chunk_id
                row = current.get(chunk_id)
                if found:
                    if row is not None:
                        if maps["live"][pos] == 0:
                            meta.dead -= 1
                        self._put(meta, pos, tuple(row[:6]), np.frombuffer(row[6], np.float32))
                    elif maps["live"][pos]:
                        maps["live"][pos] = 0
                        meta.dead += 1
                elif row is not None:
                    if pos < meta.count:
                        return None
                    self._append(meta, tuple(row[:6]), row[6])
                    maps = self._files.map(meta)
        meta.seq = last
        return meta

    def _compact(self, meta: Meta) -> Meta:
        """Copy live rows into the next epoch's files (from the maps, not from SQLite)."""
        old = self._files.map(meta)
        keep = np.flatnonzero(old["live"][: meta.count])
        new = Meta(
            **{
                **asdict(meta),
                "epoch": self._files.next_epoch(),
                "count": 0,
                "capacity": 0,
                "dead": 0,
                "ivf": None,
            }
        )
        self._files.allocate(new, max(MIN_CAPACITY, int(keep.size * 1.25)))
        maps = self._files.map(new)
        for b in range(0, keep.size, 65536):
            rows = keep[b : b + 65536]
            end = new.count + rows.size
            maps["vectors"][new.count : end] = old["vectors"][rows]
            for column in COLUMN_TYPES:
                maps[column][new.count : end] = old[column][rows]
            new.count = end
        return new

    # -- the approximate index ---------------------------------------------------------------------------

    def _load_ivf(self, meta: Meta) -> ivf.Ivf | None:
        spec = meta.ivf
        if not spec or spec["epoch"] != meta.epoch or not 0 < self._ann_min <= meta.count - meta.dead:
            return None
        if self._ivf is None or self._ivf.rows != spec["rows"] or self._ivf_name != spec["name"]:
            self._ivf = ivf.load(self._folder, spec["name"], spec["rows"], meta.dim)
            self._ivf_name = spec["name"]
        return self._ivf

    def wait_for_training(self) -> None:
        """Return once no background training of this store runs."""
        training = self._training
        if training is not None:
            training.join()

    def _maybe_train(self, meta: Meta) -> None:
        """Start training in the background when the tenant is large and the index missing or outgrown."""
        if self._ann_min <= 0 or meta.count - meta.dead < self._ann_min:
            return
        spec = meta.ivf if meta.ivf and meta.ivf["epoch"] == meta.epoch else None
        if spec is not None and meta.count - spec["rows"] <= ANN_RETRAIN_SHARE * spec["rows"]:
            return
        if self._training is not None and self._training.is_alive():
            return
        snap = self._snapshot
        assert snap is not None
        self._training = threading.Thread(target=self._train, args=(meta.epoch, snap), daemon=True)
        self._training.start()

    def _train(self, epoch: int, snap: VectorSnapshot) -> None:
        """Train on the rows as published (rows never move within an epoch), then attach under the lock."""
        with self._files.lock("train.lock", wait=False) as mine:
            if not mine:
                return  # another process is training
            centroids = ivf.train(snap.matrix, snap.live)
            order, offsets = ivf.assign(snap.matrix, centroids)
            name = f"ivf{epoch}-{snap.count}"
            ivf.save(self._folder, name, centroids, order, offsets)
            with self._files.lock():
                meta = self._files.read_meta()
                if meta is None or meta.epoch != epoch:
                    return  # compacted meanwhile: the next snapshot trains again
                meta.ivf = {"name": name, "epoch": epoch, "rows": snap.count}
                self._files.write_meta(meta)
                self._files.mtime = 0  # this process's next search publishes the index too
                for path in self._folder.glob("ivf*.*"):
                    if not path.name.startswith(name + "."):
                        path.unlink(missing_ok=True)

    def _prune(self, conn: sqlite3.Connection, meta: Meta) -> None:
        if conn.in_transaction:
            return
        conn.execute("PRAGMA busy_timeout = 0")  # never wait for a writer here: the next catch-up prunes
        try:
            # Never past the position the keyword index still needs (keyword_index.py registers it).
            conn.execute(
                "DELETE FROM idx_changes WHERE tenant_id = ? AND seq <= min(?, coalesce("
                "(SELECT CAST(value AS INTEGER) FROM idx_meta WHERE key = ?), ?))",
                (self._tenant, meta.seq, KEYWORD_FLOOR, meta.seq),
            )
        except sqlite3.OperationalError:
            return
        finally:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        meta.pruned = meta.seq
        self._files.write_meta(meta)


class VectorStores:
    """The tenants' stores of one database, in `<database file>.vectors/`."""

    def __init__(self, folder: Path, db_id: str, ann_min_chunks: int = 0) -> None:
        self._folder = folder
        self._db_id = db_id
        self._ann_min = ann_min_chunks
        self._stores: dict[str, TenantStore] = {}
        self._lock = threading.Lock()

    @staticmethod
    def store_name(tenant_id: str) -> str:
        """The folder name of a tenant's store."""
        return hashlib.sha256(tenant_id.encode("utf-8")).hexdigest()[:24]

    def tenant(self, tenant_id: str) -> TenantStore:
        with self._lock:
            store = self._stores.get(tenant_id)
            if store is None:
                store = TenantStore(
                    self._folder / self.store_name(tenant_id), tenant_id, self._db_id, self._ann_min
                )
                self._stores[tenant_id] = store
            return store

    def current(
        self, conn: sqlite3.Connection, tenant_id: str, dimension: int | None = None
    ) -> VectorSnapshot:
        """The tenant's rows as of its latest committed generation (read on `conn`), caught up to it if
        behind. With the query's `dimension`: rebuilt from SQLite when the rows have another (a reindex
        swapped the stored vectors for another model's, a change the log does not carry: a stale store
        must never answer with nothing)."""
        row = conn.execute("SELECT gen FROM idx_generation WHERE tenant_id = ?", (tenant_id,)).fetchone()
        store = self.tenant(tenant_id)
        snap = store.snapshot(conn, int(row[0]) if row else 0)
        rows, dim = snap.matrix.shape
        if dimension is not None and rows and dim != dimension:
            return store.rebuild(conn)
        return snap

    def loaded(self) -> list[str]:
        with self._lock:
            return list(self._stores)

    def close(self) -> None:
        """Wait for every tenant's background training to end (it writes index files)."""
        with self._lock:
            stores = list(self._stores.values())
        for store in stores:
            store.wait_for_training()

    def drop(self, tenant_id: str) -> None:
        """Forget a tenant and delete its files (DELETE /tenant); processes still mapping them keep their
        pages, whose rows no longer join any chunk, until they let go."""
        with self._lock:
            self._stores.pop(tenant_id, None)
        shutil.rmtree(self._folder / self.store_name(tenant_id), ignore_errors=True)
