"""A SQLite file held write-locked by another connection, for the tests of what a locked database answers
(tests/adapters/test_sqlite_error_translation.py, tests/handlers/test_locked_database.py)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def write_locked(path: Path) -> Iterator[None]:
    """Another connection holding the file's write lock."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()
