"""SqliteStateStore against the StateStore contract, plus what only a file-backed SQLite store shows."""

from __future__ import annotations

import threading

import pytest

from infra.local.sqlite.state import SqliteStateStore
from tests.adapters.statestore_contract import StateStoreContract
from tests.adapters.statestore_data import T1, entry, update, with_feedback

THREADS = 8


@pytest.fixture
def store(tmp_path):
    s = SqliteStateStore(tmp_path / "quarry.db")
    yield s
    s.close()


class TestSqliteStateStore(StateStoreContract):
    """The shared contract on a WAL file."""


def test_state_survives_reopening_the_file(tmp_path):
    first = SqliteStateStore(tmp_path / "q.db")
    with_feedback(first, ["a-1"])
    first.close()
    again = SqliteStateStore(tmp_path / "q.db")
    assert again.get_assembly(T1, "a-1").used_ids == ("m-1",)
    again.close()


def test_concurrent_cycles_from_two_connections_apply_once(tmp_path):
    path = tmp_path / "q.db"
    stores = [SqliteStateStore(path) for _ in range(THREADS)]
    ids = with_feedback(stores[0], [f"a-{i}" for i in range(10)])
    results, barrier = [], threading.Barrier(THREADS)

    def cycle(s):
        barrier.wait()
        results.append(s.apply_learning(T1, update(ids)))

    threads = [threading.Thread(target=cycle, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False] * (THREADS - 1) + [True]
    assert len(stores[0].list_history(T1, None, 100)) == 1
    for s in stores:
        s.close()


def test_threads_sharing_one_store_log_every_assembly(tmp_path):
    store = SqliteStateStore(tmp_path / "q.db")

    def log_many(n):
        for i in range(25):
            store.log_assembly(entry(f"t{n}-{i}", f"2030-01-01T00:00:{i:02d}Z"))

    threads = [threading.Thread(target=log_many, args=(n,)) for n in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(store.list_assemblies(T1, None, None, 1000, None).entries) == THREADS * 25
    store.close()
