"""The embedded vector store follows writes: updated entities are found by their new text and vector,
deleted ones never, readers running during writes see no ghosts, worker processes share one copy, and
every acknowledged write survives kill -9."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from core.models import EntityKey, Filters, LexicalQuery
from infra.local.sqlite.index import SqliteIndex, build_sqlite_index
from infra.local.vectors import vector_store
from tests.adapters.search_index_contract import DIM, record, unit

ROOT = Path(__file__).resolve().parents[2]


def rand_unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def vec_hits(index: SqliteIndex, query: np.ndarray, k: int = 10, filters: Filters | None = None) -> list[str]:
    return [c.key.entity_id for c in index.vector("t", query, filters or Filters(), k)]


def meta(path: Path) -> dict:
    [folder] = (Path(str(path) + ".vectors")).iterdir()
    return json.loads((folder / "meta.json").read_text())


def test_an_updated_entity_is_found_by_its_new_text_and_vector_and_a_deleted_one_never(
    tmp_path: Path,
) -> None:
    index = build_sqlite_index(tmp_path / "i.db")
    index.upsert(record("t", "memory", "a", "apples orchard", vec=unit(1, 0)))
    index.upsert(record("t", "memory", "b", "bananas plantation", vec=unit(0, 1)))
    assert vec_hits(index, unit(1, 0))[0] == "a"

    index.upsert(record("t", "memory", "a", "cherries harvest", version=2, vec=unit(0, 0, 1)))
    hit = index.vector("t", unit(0, 0, 1), Filters(), 1)[0]
    assert (hit.key.entity_id, hit.text) == ("a", "cherries harvest")
    assert all(c.text != "apples orchard" for c in index.vector("t", unit(1, 0), Filters(), 10))
    assert [c.key.entity_id for c in index.lexical("t", LexicalQuery(("cherries",)), Filters(), 5)] == ["a"]
    assert index.lexical("t", LexicalQuery(("apples",)), Filters(), 5) == []

    index.delete("t", EntityKey("memory", "b"), None)
    assert "b" not in vec_hits(index, unit(0, 1))
    assert index.lexical("t", LexicalQuery(("bananas",)), Filters(), 5) == []


def test_a_write_extends_the_store_instead_of_rebuilding_it(tmp_path: Path) -> None:
    path = tmp_path / "i.db"
    index = build_sqlite_index(path)
    rng = np.random.default_rng(1)
    index.upsert_many([record("t", "memory", f"e{i}", f"note {i}", vec=rand_unit(rng)) for i in range(50)])
    vec_hits(index, unit(1, 0))
    before = meta(path)
    index.upsert(record("t", "memory", "new", "fresh note", vec=unit(0, 0, 0, 1)))
    after = meta(path)
    assert after["epoch"] == before["epoch"] and after["count"] == before["count"] + 1
    assert after["gen"] > before["gen"]
    assert vec_hits(index, unit(0, 0, 0, 1))[0] == "new"


def test_a_selective_filter_still_returns_k_results(tmp_path: Path) -> None:
    index = build_sqlite_index(tmp_path / "i.db")
    rng = np.random.default_rng(2)
    records = [
        record(
            "t",
            "task" if i % 100 == 0 else "memory",
            f"e{i}",
            f"note {i}",
            vec=rand_unit(rng),
            owner=f"o{i % 7}",
        )
        for i in range(2000)
    ]
    index.upsert_many(records)
    tasks = vec_hits(index, rand_unit(rng), k=10, filters=Filters(entity_types=("task",)))
    assert len(tasks) == 10 and all(int(e[1:]) % 100 == 0 for e in tasks)
    mine = index.vector("t", rand_unit(rng), Filters(owner="o3"), 20)
    assert len(mine) == 20 and {c.owner for c in mine} == {"o3"}
    others = index.vector("t", rand_unit(rng), Filters(exclude_owner="o3"), 50)
    assert len(others) == 50 and "o3" not in {c.owner for c in others}
    assert index.vector("t", rand_unit(rng), Filters(sources=("nowhere",)), 10) == []


def test_results_stay_right_after_tombstones_are_compacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_store, "COMPACT_MIN_DEAD", 10)
    path = tmp_path / "i.db"
    index = build_sqlite_index(path)
    rng = np.random.default_rng(3)
    vectors = {f"e{i}": rand_unit(rng) for i in range(60)}
    index.upsert_many([record("t", "memory", e, f"note {e}", vec=v) for e, v in vectors.items()])
    vec_hits(index, unit(1, 0))
    epoch = meta(path)["epoch"]
    for i in range(40):
        index.delete("t", EntityKey("memory", f"e{i}"), None)
    assert meta(path)["epoch"] > epoch and meta(path)["dead"] < 10
    for e, v in vectors.items():
        top = vec_hits(index, v, k=1)[0]
        assert top == e if int(e[1:]) >= 40 else int(top[1:]) >= 40


def _check_hits(hits: list, floor: int, seen: int, errors: list[str]) -> int:
    """Record what a reader must never see; return the newest version of x seen so far."""
    if any(c.key.entity_id == "gone" for c in hits):
        errors.append("deleted entity served")
    x = [c for c in hits if c.key.entity_id == "x"]
    if floor and not x:
        errors.append(f"x missing after version {floor}")
    for c in x:
        version = int(c.text.split()[1])
        if version < max(floor, seen):
            errors.append(f"old version {version} served after {max(floor, seen)}")
        seen = max(seen, version)
    return seen


def test_readers_during_writes_never_see_a_deleted_entity_or_an_older_version(tmp_path: Path) -> None:
    index = build_sqlite_index(tmp_path / "i.db")
    rng = np.random.default_rng(4)
    index.upsert_many(
        [record("t", "memory", f"bg{i}", f"background {i}", vec=rand_unit(rng)) for i in range(200)]
    )
    index.upsert(record("t", "memory", "gone", "to be deleted", vec=unit(1, 0)))
    index.delete("t", EntityKey("memory", "gone"), None)
    target = unit(0, 1)
    stop = threading.Event()
    acked = [0]
    errors: list[str] = []

    def write() -> None:
        for v in range(1, 120):
            index.upsert(record("t", "memory", "x", f"version {v}", version=v, vec=target))
            acked[0] = v
            if v % 10 == 0:
                index.upsert(record("t", "memory", f"new{v}", f"new {v}", vec=rand_unit(rng)))
        stop.set()

    def read() -> None:
        seen = 0
        while not stop.is_set():
            floor = acked[0]
            seen = _check_hits(index.vector("t", target, Filters(), 5), floor, seen, errors)

    threads = [threading.Thread(target=write)] + [threading.Thread(target=read) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    assert index.vector("t", target, Filters(), 1)[0].text == "version 119"


WRITER = """
import sys, numpy as np
from infra.local.sqlite.index import SqliteIndex, build_sqlite_index
from tests.adapters.search_index_contract import record, DIM
from core.models import Filters
index = build_sqlite_index(sys.argv[1])
index.vector("t", np.ones(DIM, np.float32), Filters(), 1)  # load the store: each write then updates the files
rng = np.random.default_rng(int(sys.argv[2]))
for i in range(int(sys.argv[3])):
    v = rng.standard_normal(DIM).astype(np.float32)
    v /= np.linalg.norm(v)
    index.upsert(record("t", "memory", f"w{i}", f"written number {i}", vec=v))
    if i % 3 == 2:
        index.delete("t", record("t", "memory", f"w{i - 1}", "").key, None)
    print(i, flush=True)
"""


def _writer(path: Path, seed: int, n: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(seed), str(n)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )


def _expected(seed: int, acked: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    live: dict[str, np.ndarray] = {}
    for i in range(acked + 1):
        v = rng.standard_normal(DIM).astype(np.float32)
        live[f"w{i}"] = v / np.linalg.norm(v)
        if i % 3 == 2:
            live.pop(f"w{i - 1}")
    return live


def test_another_process_writes_and_this_one_searches_the_same_files(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    reader = build_sqlite_index(path)
    reader.upsert(record("t", "memory", "seed", "seed", vec=unit(1, 0)))
    assert vec_hits(reader, unit(1, 0)) == ["seed"]  # the store now exists and is mapped here
    with _writer(path, seed=7, n=30) as proc:
        assert proc.wait(timeout=120) == 0
    live = _expected(7, 29)
    for eid, v in live.items():
        assert vec_hits(reader, v, k=1) == [eid]
    assert not {"w1", "w4"} & set(vec_hits(reader, unit(1, 0), k=50))
    folders = list(Path(str(path) + ".vectors").iterdir())
    assert len(folders) == 1 and len(list(folders[0].glob("*.vectors"))) == 1  # one shared copy


def test_kill_9_mid_write_loses_no_acknowledged_write(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    # the store exists, so writers update it too
    build_sqlite_index(path).vector("t", unit(1, 0), Filters(), 1)
    acked = -1
    with _writer(path, seed=11, n=100_000) as proc:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        while acked < 40 and time.monotonic() < deadline:
            acked = int(proc.stdout.readline())
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert acked >= 40
    index = build_sqlite_index(path)
    live = _expected(11, acked)
    if (acked + 1) % 3 == 2:  # the unacknowledged next step may already have deleted the last one
        live.pop(f"w{acked}")
    deleted = [f"w{i}" for i in range(1, acked, 3)]
    assert not set(vec_hits(index, unit(1, 0), k=200)) & set(deleted)
    found = index.get("t", [EntityKey("memory", e) for e in live])
    assert all(not found[EntityKey("memory", e)].deleted for e in live)
    for eid, v in live.items():
        assert vec_hits(index, v, k=1) == [eid]
        hits = index.lexical("t", LexicalQuery(("written",), phrases=(f"number {eid[1:]}",)), Filters(), 3)
        assert [c.key.entity_id for c in hits] == [eid]


def test_a_large_tenant_gets_an_approximate_index_that_follows_writes(tmp_path: Path) -> None:
    path = tmp_path / "big.db"
    index = build_sqlite_index(path, ann_min_chunks=1000, ann_probe=8)
    rng = np.random.default_rng(12)
    centres = rng.standard_normal((40, DIM)).astype(np.float32)
    vectors = centres[rng.integers(0, 40, 3000)] + 0.3 * rng.standard_normal((3000, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index.upsert_many([record("t", "memory", f"e{i}", f"note {i}", vec=v) for i, v in enumerate(vectors)])
    vec_hits(index, vectors[0])  # the first search starts training in the background
    deadline = time.monotonic() + 120
    while not meta(path).get("ivf") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert meta(path)["ivf"]["rows"] == 3000

    index.delete("t", EntityKey("memory", "e5"), None)
    index.upsert(record("t", "memory", "fresh", "fresh note", vec=vectors[7]))  # after training: the tail
    snap = index.vector_search.tenant_vectors("t")
    assert snap.ivf is not None and snap.ivf.candidates(vectors[5], 8, snap.count).size < snap.count / 2
    top = vec_hits(index, vectors[5], k=20)
    assert "e5" not in top
    assert set(vec_hits(index, vectors[7], k=2)) == {"e7", "fresh"}
    overlap = [
        len(
            set(vec_hits(index, q, k=50))
            & set(c.key.entity_id for c in index.vector("t", q, Filters(), 50, exact=True))
        )
        / 50
        for q in vectors[100:120]
    ]
    assert np.mean(overlap) >= 0.9


def test_a_moved_entity_is_filtered_by_its_new_owner_at_once(tmp_path: Path) -> None:
    from core.models import Placement

    index = build_sqlite_index(tmp_path / "i.db")
    index.upsert(record("t", "memory", "a", "moving note", vec=unit(1, 0), owner="alice"))
    index.upsert(record("t", "memory", "b", "staying note", vec=unit(0, 1), owner="alice"))
    assert vec_hits(index, unit(1, 0), filters=Filters(owner="alice")) == ["a", "b"]
    index.update_metadata(
        "t", EntityKey("memory", "a"), 2, {}, {}, "2026-11-02T00:00:00Z", Placement("memory", owner="bob")
    )
    assert vec_hits(index, unit(1, 0), filters=Filters(owner="alice")) == ["b"]
    assert vec_hits(index, unit(1, 0), filters=Filters(owner="bob")) == ["a"]
    assert vec_hits(index, unit(1, 0), filters=Filters(owners=("bob", "carol"))) == ["a"]


def test_unusable_vector_files_are_a_503_not_a_crash(tmp_path: Path) -> None:
    from core.errors import UnavailableError

    path = tmp_path / "i.db"
    index = build_sqlite_index(path)
    index.upsert(record("t", "memory", "a", "note", vec=unit(1, 0)))
    Path(str(path) + ".vectors").write_text("not a folder")  # where the tenant's folder must go
    with pytest.raises(UnavailableError):
        build_sqlite_index(path).vector("t", unit(1, 0), Filters(), 5)
