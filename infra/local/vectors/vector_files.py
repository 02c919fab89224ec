"""The files behind one tenant's vector store: column files per epoch, `meta.json`, and the lock.

Every column is a flat file of `capacity` rows (`e<epoch>.<column>`), memory-mapped; files only grow within
an epoch, and compaction writes the next epoch. `meta.json` says which epoch, how many rows exist and what
they reflect; it is replaced atomically, after the rows it announces are written.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from infra.local.vectors.exact_knn import CODED

FORMAT = 2  # bump when the files' columns change: older files are rebuilt, never misread
COLUMN_TYPES: dict[str, Any] = {"ids": np.int64, "entity": np.int64, "live": np.uint8} | {
    c: np.int32 for c in CODED
}
MIN_CAPACITY = 1024


@dataclass
class Meta:
    db_id: str
    format: int = FORMAT
    epoch: int = 0
    dim: int = 0
    count: int = 0
    capacity: int = 0
    seq: int = 0  # last idx_changes.seq applied
    pruned: int = 0  # last seq pruned from the log
    gen: int = 0  # the tenant's index generation the files reflect
    dead: int = 0
    codes: dict[str, list[str | None]] = field(default_factory=lambda: {c: [None] for c in CODED})
    ivf: dict[str, Any] | None = None  # {"name", "epoch", "rows"}: the approximate index over these files


class ColumnFiles:
    """One tenant's folder: maps, meta and the cross-process lock (this process's view of them)."""

    def __init__(self, folder: Path, db_id: str) -> None:
        self.folder = folder
        self._meta_path = str(folder / "meta.json")  # stat'ed by every search (meta_changed): built once
        self._db_id = db_id
        self.mtime = 0  # meta.json's mtime when this process last read or wrote it
        self._maps: dict[str, np.memmap] = {}
        self._mapped: tuple[int, int, int] = (-1, -1, -1)  # (epoch, capacity, dim) of self._maps
        folder.mkdir(parents=True, exist_ok=True)

    @contextlib.contextmanager
    def lock(self, name: str = "lock", wait: bool = True) -> Iterator[bool]:
        """An exclusive flock on `name` in the folder; yields False when not waiting and it is taken."""
        fd = os.open(self.folder / name, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            yield True
        finally:
            os.close(fd)  # closing releases the lock

    def meta_changed(self) -> bool:
        """Another process (or the trainer) replaced meta.json since this process read it."""
        try:
            return os.stat(self._meta_path).st_mtime_ns != self.mtime
        except OSError:
            return False

    def read_meta(self) -> Meta | None:
        """The published state, or None when missing, unreadable, of an older format or another database."""
        try:
            self.mtime = os.stat(self.folder / "meta.json").st_mtime_ns
            raw = json.loads((self.folder / "meta.json").read_text())
            if raw.get("format") != FORMAT:
                return None
            meta = Meta(**raw)
        except (OSError, ValueError, TypeError):
            return None
        return meta if meta.db_id == self._db_id else None

    def write_meta(self, meta: Meta) -> None:
        tmp = self.folder / f"meta.{os.getpid()}.{threading.get_ident()}.tmp"
        tmp.write_text(json.dumps(asdict(meta)))
        os.replace(tmp, self.folder / "meta.json")
        self.mtime = os.stat(self.folder / "meta.json").st_mtime_ns

    def _file(self, epoch: int, column: str) -> Path:
        return self.folder / f"e{epoch}.{column}"

    def map(self, meta: Meta) -> dict[str, np.memmap]:
        """Memory maps of the current epoch's files (re-mapped when they grew or were compacted)."""
        if self._mapped == (meta.epoch, meta.capacity, meta.dim):
            return self._maps
        maps: dict[str, np.memmap] = {}
        if meta.capacity > 0:
            columns: dict[str, tuple[Any, tuple[int, ...]]] = {
                "vectors": (np.float32, (meta.capacity, meta.dim))
            }
            columns |= {c: (t, (meta.capacity,)) for c, t in COLUMN_TYPES.items()}
            for column, (dtype, shape) in columns.items():
                maps[column] = np.memmap(self._file(meta.epoch, column), dtype=dtype, mode="r+", shape=shape)
        self._maps, self._mapped = maps, (meta.epoch, meta.capacity, meta.dim)
        return maps

    def allocate(self, meta: Meta, capacity: int) -> None:
        """Grow (or create) the epoch's files to `capacity` rows; existing rows stay where they are."""
        sizes = {"vectors": 4 * meta.dim} | {c: np.dtype(t).itemsize for c, t in COLUMN_TYPES.items()}
        for column, row_bytes in sizes.items():
            with open(self._file(meta.epoch, column), "ab") as fh:
                fh.truncate(capacity * row_bytes)
        meta.capacity = capacity

    def next_epoch(self) -> int:
        epochs = [int(p.name[1:].split(".")[0]) for p in self.folder.glob("e*.*") if p.name[1:2].isdigit()]
        return max(epochs, default=-1) + 1

    def remove_other_epochs(self, epoch: int) -> None:
        """Unlink older files (processes that still map them keep their pages until they re-map)."""
        for path in self.folder.glob("e*.*"):
            if not path.name.startswith(f"e{epoch}."):
                path.unlink(missing_ok=True)
