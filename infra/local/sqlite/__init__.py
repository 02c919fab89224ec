"""The embedded SQLite adapters: `SqliteIndex` (index.py, built by `build_sqlite_index` from its parts:
store.py, writes.py, lexical.py, vector_search.py, catalog.py, sql.py), the state store (state.py,
state_schema.py), search snapshots (snapshots.py), tenant fences (fences.py), the connection and its
transactions (connect.py) and SQLite's errors as core errors (errors.py).

`build_sqlite_index` and `SqliteIndex` are importable from here; importing the package alone imports none
of its modules, so a caller that needs only a connection pays for no more."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from infra.local.sqlite.index import SqliteIndex, build_sqlite_index

__all__ = ["SqliteIndex", "build_sqlite_index"]


def __getattr__(name: str) -> Any:
    """`SqliteIndex` and `build_sqlite_index`, from index.py when first asked for."""
    if name in __all__:
        from infra.local.sqlite import index

        return getattr(index, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
