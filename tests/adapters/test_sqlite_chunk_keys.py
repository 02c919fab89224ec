"""The chunk keys a SqliteIndex process remembers (infra/local/sqlite/chunk_keys.py): rankings without display
values list the same entities as reading every key would, never another tenant's, never a chunk deleted
before the ranking, and the memory they take is bounded."""

from __future__ import annotations

from pathlib import Path

from core.models import CandidateQuery, EntityKey, Filters, LexicalQuery
from infra.local.sqlite.chunk_keys import ChunkKeys
from infra.local.sqlite.index import SqliteIndex, build_sqlite_index
from infra.local.sqlite.sql import chunk_keys
from tests.adapters.search_index_contract import record, unit


def chunk_ids(index: SqliteIndex, tenant: str) -> list[int]:
    rows = index.store.conn().execute("SELECT id FROM idx_chunks WHERE tenant_id = ? ORDER BY id", [tenant])
    return [r[0] for r in rows]


def ranked(index: SqliteIndex, tenant: str, terms: tuple[str, ...] = (), vector: bool = False) -> list[str]:
    query = CandidateQuery(
        LexicalQuery(terms) if terms else None, unit(1, 1) if vector else None, Filters(), 10, display=False
    )
    lists = index.retrieve_many(tenant, [query])[0]
    return sorted(c.key.entity_id for c in (lists.vector if vector else lists.lexical))


def test_remembered_keys_are_the_keys_read(tmp_path: Path) -> None:
    index = build_sqlite_index(tmp_path / "i.db")
    index.upsert_many(
        [record("t", "task", f"e{i}", f"heron {i}", chunks=["a heron", "b heron"]) for i in range(6)]
    )
    ids = chunk_ids(index, "t")
    keys = ChunkKeys()
    conn = index.store.conn()
    first = keys.read(conn, "t", ids, live=True)
    assert first == chunk_keys(conn, "t", ids)
    assert len(first) == 12 and first[ids[1]] == (EntityKey("task", "e0"), 1)
    conn.execute("DELETE FROM idx_chunks WHERE tenant_id = 't'")  # a remembered key is not read again
    assert keys.read(conn, "t", ids, live=True) == first


def test_an_id_remembered_for_one_tenant_is_never_answered_for_another(tmp_path: Path) -> None:
    index = build_sqlite_index(tmp_path / "i.db")
    index.upsert(record("a", "memory", "secret", "otter holt"))
    index.upsert(record("b", "memory", "mine", "otter slide"))
    keys = ChunkKeys()
    conn = index.store.conn()
    theirs = chunk_ids(index, "a")
    assert keys.read(conn, "a", theirs, live=True) == {theirs[0]: (EntityKey("memory", "secret"), 0)}
    assert keys.read(conn, "b", theirs, live=True) == {}
    assert keys.read(conn, "b", theirs, live=False) == {}


def test_ids_not_ranked_live_are_read_so_a_deleted_chunk_is_left_out(tmp_path: Path) -> None:
    index = build_sqlite_index(tmp_path / "i.db")
    index.upsert(record("t", "memory", "gone", "kestrel"))
    index.upsert(record("t", "memory", "kept", "kestrel hover"))
    keys = ChunkKeys()
    conn = index.store.conn()
    ids = chunk_ids(index, "t")
    assert len(keys.read(conn, "t", ids, live=True)) == 2
    index.delete("t", EntityKey("memory", "gone"), None)
    assert [key.entity_id for key, _ in keys.read(conn, "t", ids, live=False).values()] == ["kept"]


def test_the_keys_kept_are_bounded_and_answers_stay_whole(tmp_path: Path) -> None:
    index = build_sqlite_index(tmp_path / "i.db")
    index.upsert_many([record("t", "memory", f"m{i:02}", f"wren {i}") for i in range(40)])
    ids = chunk_ids(index, "t")
    keys = ChunkKeys(capacity=16)
    conn = index.store.conn()
    for start in range(0, 40, 10):
        assert len(keys.read(conn, "t", ids[start : start + 10], live=True)) == 10
        assert len(keys) <= 16
    assert keys.read(conn, "t", ids, live=True) == chunk_keys(conn, "t", ids)
    assert len(keys) <= 40


def test_rankings_list_the_same_entities_on_a_second_search_and_after_writes(tmp_path: Path) -> None:
    index = build_sqlite_index(tmp_path / "i.db")
    index.upsert_many([record("t", "memory", f"m{i}", f"puffin {i}", vec=unit(1, i)) for i in range(5)])
    index.upsert(record("u", "memory", "theirs", "puffin burrow", vec=unit(1, 1)))
    for _ in range(2):  # the second search answers from the remembered keys
        assert ranked(index, "t", ("puffin",)) == ["m0", "m1", "m2", "m3", "m4"]
        assert ranked(index, "t", vector=True) == ["m0", "m1", "m2", "m3", "m4"]
    index.delete("t", EntityKey("memory", "m2"), None)
    index.upsert(record("t", "memory", "m3", "a gannet now", version=2, vec=unit(0, 1)))
    assert ranked(index, "t", ("puffin",)) == ["m0", "m1", "m4"]
    assert ranked(index, "t", vector=True) == ["m0", "m1", "m3", "m4"]
    assert ranked(index, "u", ("puffin",)) == ["theirs"]
