"""What only the embedded backend promises (the shared contract: test_search_index_contract.py)."""

from __future__ import annotations

import threading
from pathlib import Path

from core.models import Filters, LexicalQuery
from infra.local.sqlite.index import build_sqlite_index
from infra.local.sqlite.store import READ_MMAP_BYTES
from tests.adapters.search_index_contract import record, unit


def test_a_second_process_sees_writes_and_refreshes_its_vector_cache(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    reader, writer = build_sqlite_index(path), build_sqlite_index(path)
    writer.upsert(record("t", "memory", "a", "first", vec=unit(1, 0)))
    assert [c.key.entity_id for c in reader.vector("t", unit(1, 0), Filters(), 5)] == ["a"]
    writer.upsert(record("t", "memory", "b", "second", vec=unit(0, 1)))
    assert [c.key.entity_id for c in reader.vector("t", unit(0, 1), Filters(), 5)][0] == "b"


def test_concurrent_writers_and_readers_do_not_fail(tmp_path: Path) -> None:
    index = build_sqlite_index(tmp_path / "busy.db")
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for i in range(20):
                index.upsert(record("t", "memory", f"{n}-{i}", f"note number {i}", version=1))
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    def read() -> None:
        try:
            for _ in range(20):
                index.lexical("t", LexicalQuery(("note",)), Filters(), 5)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(3)] + [threading.Thread(target=read)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert len(index.lexical("t", LexicalQuery(("note",)), Filters(), 100)) == 60


def test_query_text_cannot_inject_fts_syntax(tmp_path: Path) -> None:
    index = build_sqlite_index(tmp_path / "i.db")
    index.upsert(record("t", "memory", "a", 'quote " and star * and NEAR(x y)'))
    for term in ['"', "*", "NEAR(", "a OR b", "-x", "col:val"]:
        index.lexical("t", LexicalQuery((term,)), Filters(), 5)  # must not raise


def test_search_connections_read_through_a_memory_map(tmp_path: Path) -> None:
    # pages shared by every worker process through the OS instead of copied into each connection's cache
    index = build_sqlite_index(tmp_path / "quarry.db")
    assert index.store.conn().execute("PRAGMA mmap_size").fetchone()[0] == READ_MMAP_BYTES


def test_reading_a_few_chunk_vectors_does_not_scan_the_tenant(tmp_path: Path) -> None:
    # Vector feedback reads the top results' stored vectors on every hybrid search: the read must look
    # them up, not walk every chunk of the tenant (it did: ~80 ms for 2 chunks of a 10k-entity tenant).
    from core.models import EntityKey

    index = build_sqlite_index(tmp_path / "i.db")
    index.upsert_many([record("t", "memory", f"m{i}", f"note {i}", vec=unit(1, i)) for i in range(400)])
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    conn = index.store.conn()
    conn.set_progress_handler(count, 1)
    got = index.chunk_vectors("t", [(EntityKey("memory", "m7"), 0), (EntityKey("memory", "m300"), 0)])
    conn.set_progress_handler(None, 1)
    assert set(got) == {(EntityKey("memory", "m7"), 0), (EntityKey("memory", "m300"), 0)}
    assert steps < 400, f"{steps} VM steps for 2 chunks of a 400-entity tenant: a scan"


def test_a_vector_list_for_its_ranking_only_keeps_keys_chunks_and_scores_without_display_values(
    tmp_path: Path,
) -> None:
    from core.models import CandidateQuery

    index = build_sqlite_index(tmp_path / "q.db")
    for i, vec in enumerate([unit(1, 0), unit(1, 1), unit(0, 1)]):
        index.upsert(record("t", "memory", f"m{i}", f"text number {i}", vec=vec))
    full = index.vector("t", unit(1, 0.2), Filters(), 3)
    (lists,) = index.retrieve_many(
        "t", [CandidateQuery(None, unit(1, 0.2), Filters(), 3, vector_ranking_only=True)]
    )
    assert [(c.key, c.chunk_no, c.score) for c in lists.vector] == [
        (c.key, c.chunk_no, c.score) for c in full
    ]
    assert all(c.text == "" and c.title == "" and c.metadata == {} for c in lists.vector)
    assert all(c.text for c in full)
