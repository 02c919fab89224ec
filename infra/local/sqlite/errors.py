"""The one place where SQLite's errors become core errors, for every local adapter (the index, the state
store, the caches, the job queue, fences and snapshots).

An operational error — a write lock held past the busy timeout, a full disk, an unreadable file — is the
server's trouble: UnavailableError, answered 503 with Retry-After, SQLite's text logged and never shown to
the caller. A broken constraint (a key already taken) is a ConflictError. The files beside the database (the
memory-mapped vectors, the tantivy index) are reported under their own backend names."""

from __future__ import annotations

import sqlite3

from core.errors import ConflictError, QuarryError, UnavailableError

BACKEND = "sqlite"
# What `translate` turns into core errors; any other sqlite3.Error is a bug in the SQL and propagates as is.
# Every adapter catches these where it runs SQL and calls `translate` only when one is raised:
# `except FAILURES as exc: raise translate(exc) from exc`, so a query that succeeds never enters this module.
FAILURES = (sqlite3.OperationalError, sqlite3.IntegrityError)


def translate(exc: sqlite3.Error) -> QuarryError:
    """The core error for a SQLite failure."""
    if isinstance(exc, sqlite3.IntegrityError):
        return ConflictError(f"the write conflicts with stored state: {exc}")
    return UnavailableError(BACKEND, str(exc))


FILE_FAILURES = (*FAILURES, OSError)  # and the files beside the database failing (`translate_files`)


def translate_files(backend: str, what: str, exc: Exception) -> QuarryError:
    """The core error for a failure of SQLite or of the files beside the database (`backend`: "vectors",
    "keywords") — disk full, permissions, a corrupt file: that backend unavailable."""
    if isinstance(exc, OSError):
        return UnavailableError(backend, f"{what} unusable: {exc}")
    assert isinstance(exc, sqlite3.Error)
    return translate(exc)
