"""The tantivy keyword index's folder as plain files, usable without tantivy: the writer lock every process
takes before changing it, and the folder of one tenant's index (keyword_index.py). A tenant's erase
removes that folder whichever keyword engine the process runs: an index left behind would keep the
tenant's words, and its statistics, for whoever writes under that tenant id next."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from infra.local.keywords.fts_tables import tenant_digest

REMOVE_ATTEMPTS = 100  # a merge tantivy finishes in the background may write a file while the folder goes


@contextlib.contextmanager
def writer_lock(folder: Path) -> Iterator[None]:
    """One writer of the keyword index at a time, across threads and processes (an exclusive `flock` on
    `<folder>.lock`, released by the kernel if the process dies)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(str(folder) + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def tenant_folder(folder: Path, tenant_id: str) -> Path:
    """The folder of the tenant's index (named by a digest: no tenant id is written to the disk)."""
    return folder / tenant_digest(tenant_id)


def remove_folder(path: Path) -> None:
    """Delete an index's folder, files tantivy writes meanwhile included."""
    for _ in range(REMOVE_ATTEMPTS):
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            return
