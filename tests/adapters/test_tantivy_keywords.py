"""The tantivy keyword engine (QUARRY_KEYWORD_ENGINE=tantivy) follows SQLite: a write is found by the next
search, a deleted or replaced text never, other processes' writes are seen, kill -9 loses no acknowledged
write, a missing or corrupt index is rebuilt, and filters and tenants are applied inside the query."""

from __future__ import annotations

import contextlib
import fcntl
import gc
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from core.models import CandidateQuery, EntityKey, Filters, LexicalQuery, MatchMode, Placement
from infra.local.sqlite.index import SqliteIndex, build_sqlite_index
from tests.adapters.search_index_contract import lex, record, unit
from tests.conftest import FakeEmbedder, make_container

ROOT = Path(__file__).resolve().parents[2]


def tantivy_index(path: Path) -> SqliteIndex:
    return build_sqlite_index(path, keyword_engine="tantivy")


def folder(path: Path) -> Path:
    return Path(str(path) + ".tantivy")


def tenant_folder(path: Path, tenant: str) -> Path:
    from infra.local.keywords.fts_tables import tenant_digest

    return folder(path) / tenant_digest(tenant)


def test_a_write_is_found_by_the_next_search(tmp_path: Path) -> None:
    index = tantivy_index(tmp_path / "i.db")
    for i in range(5):
        index.upsert(record("t", "memory", f"m{i}", f"note number {i} about walrus{i}"))
        assert lex(index, "t", f"walrus{i}") == [f"m{i}"]


def test_a_deleted_entity_is_never_served(tmp_path: Path) -> None:
    index = tantivy_index(tmp_path / "i.db")
    index.upsert(record("t", "memory", "a", "penguins march"))
    index.upsert(record("t", "memory", "b", "penguins swim"))
    assert sorted(lex(index, "t", "penguins")) == ["a", "b"]
    index.delete("t", EntityKey("memory", "a"), None)
    assert lex(index, "t", "penguins") == ["b"]
    assert lex(index, "t", "march") == []


def test_an_update_that_changes_the_text_is_found_by_the_new_words_only(tmp_path: Path) -> None:
    index = tantivy_index(tmp_path / "i.db")
    index.upsert(record("t", "memory", "a", "old harbour lighthouse", version=1))
    assert lex(index, "t", "lighthouse") == ["a"]
    index.upsert(record("t", "memory", "a", "new mountain cabin", version=2))
    assert lex(index, "t", "lighthouse") == []
    assert lex(index, "t", "harbour") == []
    assert lex(index, "t", "cabin") == ["a"]


def test_a_search_right_after_a_write_does_not_wait_for_the_index_commit(tmp_path: Path) -> None:
    """While the keyword index cannot commit (another writer holds its lock), writes made since are
    answered at once: added chunks ranked by FTS5 beside the index's hits, deleted ones never served."""
    path = tmp_path / "i.db"
    index = tantivy_index(path)
    index.upsert(record("t", "memory", "a", "old walrus"))
    index.upsert(record("t", "memory", "c", "walrus colony walrus"))
    assert sorted(lex(index, "t", "walrus")) == ["a", "c"]
    fd = os.open(str(folder(path)) + ".lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)  # the index's writer lock: no commit can land now
    try:
        found: list[list[str]] = []

        def search() -> None:
            index.upsert(record("t", "memory", "b", "new walrus"))
            index.delete("t", EntityKey("memory", "a"), None)
            found.append(lex(index, "t", "walrus"))
            found.append(lex(index, "t", "new"))
            ranked = index.retrieve_many(
                "t", [CandidateQuery(LexicalQuery(("walrus",)), None, Filters(), 10, display=False)]
            )
            found.append([c.key.entity_id for c in ranked[0].lexical])

        worker = threading.Thread(target=search)
        worker.start()
        worker.join(timeout=30)
        assert not worker.is_alive(), "a search waited for the keyword index's commit"
        assert sorted(found[0]) == ["b", "c"]
        assert found[1] == ["b"]
        assert sorted(found[2]) == ["b", "c"], "a ranking without display values listed a deleted chunk"
    finally:
        os.close(fd)
    assert sorted(lex(index, "t", "walrus")) == ["b", "c"]
    index.settle()  # the commit lands once the lock is free: the same answers from the index alone
    assert sorted(lex(index, "t", "walrus")) == ["b", "c"]
    assert lex(index, "t", "new") == ["b"]


def while_a_writer_holds_the_lock(path: Path, search: Callable[[], list[str]]) -> list[str]:
    """What `search` answers, in a thread, while the keyword index's writer lock is held (a writer busy with
    another tenant's changes); fails when it waits for the lock instead."""
    fd = os.open(str(folder(path)) + ".lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    found: list[list[str]] = []
    worker = threading.Thread(target=lambda: found.append(search()))
    try:
        worker.start()
        worker.join(timeout=30)
        assert not worker.is_alive(), "the search waited for the writer lock"
    finally:
        os.close(fd)
        worker.join()
    return found[0]


def test_a_process_opening_a_current_index_does_not_wait_for_the_writer(tmp_path: Path) -> None:
    """A tenant's index that reflects every change of the tenant is opened without the writer lock: a new
    worker (or a tenant reopened past OPEN_TENANTS) answers while another tenant's writes are committed."""
    path = tmp_path / "i.db"
    first = tantivy_index(path)
    first.upsert(record("t", "memory", "a", "quiet walrus"))
    first.settle()
    assert while_a_writer_holds_the_lock(path, lambda: lex(tantivy_index(path), "t", "walrus")) == ["a"]


def test_a_tenant_that_never_wrote_searches_without_waiting_for_the_writer(tmp_path: Path) -> None:
    """A tenant with no keyword table has nothing to catch up on: its search answers nothing at once, even
    while another tenant's writes hold the writer lock, and finds its own first write afterwards."""
    path = tmp_path / "i.db"
    index = tantivy_index(path)
    index.upsert(record("t", "memory", "a", "quiet walrus"))
    index.settle()
    assert while_a_writer_holds_the_lock(path, lambda: lex(index, "empty", "walrus")) == []
    assert while_a_writer_holds_the_lock(path, lambda: lex(index, "empty", "walrus")) == []  # again
    index.upsert(record("empty", "memory", "b", "walrus at last"))
    assert lex(index, "empty", "walrus") == ["b"]
    assert lex(index, "t", "walrus") == ["a"]


def test_two_indexes_over_one_data_dir_see_each_others_writes(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    one, two = tantivy_index(path), tantivy_index(path)
    one.upsert(record("t", "memory", "a", "quokka island"))
    assert lex(two, "t", "quokka") == ["a"]
    two.upsert(record("t", "memory", "a", "wombat burrow", version=2))
    assert lex(one, "t", "quokka") == []
    assert lex(one, "t", "wombat") == ["a"]
    one.delete("t", EntityKey("memory", "a"), None)
    assert lex(two, "t", "wombat") == []


def test_tenant_a_never_sees_tenant_b(tmp_path: Path) -> None:
    index = tantivy_index(tmp_path / "i.db")
    index.upsert(record("b", "memory", "secret", "zebra plans"))
    index.upsert(record("a", "memory", "mine", "giraffe plans"))
    assert lex(index, "a", "zebra") == []
    assert lex(index, "a", "plans") == ["mine"]
    assert lex(index, "b", "plans") == ["secret"]


def test_a_selective_filter_still_returns_k(tmp_path: Path) -> None:
    """Filters are clauses of the query: 40 better-scoring memories do not crowd out 5 tasks."""
    index = tantivy_index(tmp_path / "i.db")
    index.upsert_many([record("t", "memory", f"m{i}", "otter otter otter") for i in range(40)])
    index.upsert_many(
        [record("t", "task", f"t{i}", f"otter and {i} other long words here") for i in range(5)]
    )
    found = lex(index, "t", "otter", filters=Filters(entity_types=("task",)), k=5)
    assert sorted(found) == [f"t{i}" for i in range(5)]


def test_metadata_filters_follow_metadata_updates(tmp_path: Path) -> None:
    index = tantivy_index(tmp_path / "i.db")
    index.upsert(record("t", "memory", "a", "heron pond", metadata={"topic": "birds", "tags": ["x", 1]}))
    index.upsert(record("t", "memory", "b", "heron lake", metadata={"topic": "lakes"}))
    birds = Filters(metadata={"topic": ("birds",)})
    assert lex(index, "t", "heron", filters=birds) == ["a"]
    assert lex(index, "t", "heron", filters=Filters(metadata={"tags": (1,)})) == ["a"]
    assert lex(index, "t", "heron", filters=Filters(metadata={"tags": (True,)})) == ["a"]  # as SQLite: 1
    assert lex(index, "t", "heron", filters=Filters(metadata={"tags": ("1",)})) == []
    index.update_metadata("t", EntityKey("memory", "b"), 2, {}, {"topic": "birds"}, "2026-11-02T00:00:00Z")
    assert sorted(lex(index, "t", "heron", filters=birds)) == ["a", "b"]
    index.update_metadata(
        "t", EntityKey("memory", "a"), 2, {}, {}, "2026-11-02T00:00:00Z", Placement("web", "ann", None)
    )
    assert lex(index, "t", "heron", filters=birds) == ["b"]
    assert lex(index, "t", "heron", filters=Filters(sources=("web",), owner="ann")) == ["a"]
    assert lex(index, "t", "heron", filters=Filters(exclude_owner="ann")) == ["b"]


def test_user_text_is_never_tantivy_query_syntax(tmp_path: Path) -> None:
    index = tantivy_index(tmp_path / "i.db")
    index.upsert(record("t", "memory", "a", "the title plain words"))
    for text in ('title:plain OR "', "plain AND -words", "*:*", "plain^100", "chunk:1", "scope:[a TO z]"):
        query = LexicalQuery(tuple(text.split()), (text,))
        index.lexical("t", query, Filters(), 10)  # no error, whatever matches
    assert lex(index, "t", "*:*") == []
    assert lex(index, "t", "title:plain") == ["a"]  # a phrase of the two words, not a field restriction
    assert lex(index, "t", "plain:title") == []


def test_phrases_prefixes_and_fuzzy(tmp_path: Path) -> None:
    index = tantivy_index(tmp_path / "i.db")
    index.upsert(record("t", "memory", "a", "alpha beta gamma"))
    index.upsert(record("t", "memory", "b", "beta alpha delta"))

    def phrase(p: str) -> list[str]:
        return [c.key.entity_id for c in index.lexical("t", LexicalQuery((), (p,)), Filters(), 10)]

    assert phrase("alpha beta") == ["a"]
    assert phrase("gamma alpha") == []  # the tiers are repeated in one field: no phrase across copies
    prefix = LexicalQuery(("gam",), (), MatchMode.PREFIX)
    assert [c.key.entity_id for c in index.lexical("t", prefix, Filters(), 10)] == ["a"]
    fuzzy = LexicalQuery(("deltta",), (), MatchMode.FUZZY)
    assert [c.key.entity_id for c in index.lexical("t", fuzzy, Filters(), 10)] == ["b"]


def test_stop_words_are_gaps_in_phrases_and_a_query_of_stop_words_only_is_still_answered(
    tmp_path: Path,
) -> None:
    """The index leaves Lucene's English stop words out of its text (better ranking, shorter lists); a
    phrase keeps their places, words that are all stop words are ranked on the stop words' own field, and a
    phrase of stop words only by FTS5, which keeps every word."""
    index = tantivy_index(tmp_path / "i.db")
    index.upsert(record("t", "memory", "a", "the cat in the hat"))
    index.upsert(record("t", "memory", "b", "a hat for the cat"))
    index.upsert(record("t", "memory", "c", "to be or not to be"))
    index.upsert(record("t", "memory", "d", "theory of everything"))
    index.settle()

    def phrase(p: str) -> list[str]:
        return [c.key.entity_id for c in index.lexical("t", LexicalQuery((), (p,)), Filters(), 10)]

    assert phrase("cat in the hat") == ["a"]
    assert phrase("hat cat") == []
    assert phrase("not to be") == ["c"]
    assert lex(index, "t", "to be or not to be") == ["c"]
    assert sorted(lex(index, "t", "the")) == ["a", "b"]
    assert lex(index, "t", "of") == ["d"]
    assert sorted(lex(index, "t", "the hat")) == ["a", "b"]  # "the" adds nothing, "hat" decides
    prefix = LexicalQuery(("the",), (), MatchMode.PREFIX)
    assert [c.key.entity_id for c in index.lexical("t", prefix, Filters(), 10)] == ["d"]
    words = " ".join(f"w{i}" for i in range(80))  # longer than the gap between copies: FTS5 answers
    index.upsert(record("t", "memory", "e", words))
    assert phrase(words) == ["e"]
    assert phrase(" ".join(f"w{i}" for i in range(40, 80)) + " w0") == []  # end of one copy + next start


def test_the_idf_is_fts5s_so_both_engines_share_a_scale() -> None:
    from infra.local.keywords.tantivy_query import fts5_idf_boost

    rare = fts5_idf_boost(1000, 1)
    assert 0.9 < rare < 1.0  # ln(odds) / ln(1 + odds): nearly 1 for a rare word
    assert fts5_idf_boost(1000, 600) == pytest.approx(1e-6 / math.log1p(400.5 / 600.5))
    assert fts5_idf_boost(10, 25) > 0  # deleted documents not merged away yet still count in df
    assert fts5_idf_boost(0, 0) == 1.0


@pytest.mark.parametrize("damage", ["missing", "corrupt", "other database", "older format"])
def test_a_missing_or_corrupt_index_is_rebuilt(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "i.db"
    index = tantivy_index(path)
    index.upsert_many([record("t", "memory", f"m{i}", f"kiwi number{i}") for i in range(20)])
    assert len(lex(index, "t", "kiwi", k=50)) == 20
    del index
    if damage == "missing":
        while folder(path).exists():  # tantivy may still be removing merged files in the background
            shutil.rmtree(folder(path), ignore_errors=True)
    elif damage == "corrupt":
        (tenant_folder(path, "t") / "meta.json").write_text("{not json")
    elif damage == "other database":
        (folder(path) / "state.json").write_text('{"db_id": "another", "format": 1, "seq": 999}')
    else:  # an index an earlier release wrote: another schema, its state naming the same database
        import json

        import tantivy

        from infra.local.keywords.keyword_index import FORMAT

        state = json.loads((folder(path) / "state.json").read_text())
        while folder(path).exists():
            shutil.rmtree(folder(path), ignore_errors=True)
        folder(path).mkdir()
        old = tantivy.SchemaBuilder()
        old.add_text_field("text", tokenizer_name="en_stem", index_option="position")
        writer = tantivy.Index(old.build(), path=str(folder(path))).writer(15_000_000, 1)
        writer.add_document(tantivy.Document(text="kiwi from the old schema"))
        writer.commit()
        writer.wait_merging_threads()
        (folder(path) / "state.json").write_text(json.dumps({**state, "format": FORMAT - 1}))
    reopened = tantivy_index(path)
    assert len(lex(reopened, "t", "kiwi", k=50)) == 20
    assert lex(reopened, "t", "number7") == ["m7"]


def test_the_fts5_engine_holds_log_pruning_back_while_a_keyword_index_exists(tmp_path: Path) -> None:
    path = tmp_path / "i.db"
    first = tantivy_index(path)
    first.upsert(record("t", "memory", "a", "first lynx"))
    assert lex(first, "t", "lynx") == ["a"]
    fts = build_sqlite_index(path, keyword_engine="fts5")  # e.g. run with QUARRY_KEYWORD_ENGINE=fts5
    fts.upsert(record("t", "memory", "b", "second lynx"))
    fts.delete("t", EntityKey("memory", "a"), None)
    floor = fts.store.conn().execute("SELECT value FROM idx_meta WHERE key = 'keyword_seq'").fetchone()
    assert floor is not None  # the vector store's pruning stops there
    assert lex(tantivy_index(path), "t", "lynx") == ["b"]


def test_a_keyword_index_behind_a_pruned_log_is_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "i.db"
    first = tantivy_index(path)
    first.upsert(record("t", "memory", "a", "first lynx"))
    assert lex(first, "t", "lynx") == ["a"]
    shutil.move(folder(path), tmp_path / "kept")  # the fts5 engine runs with no keyword index in sight
    fts = build_sqlite_index(path, keyword_engine="fts5")
    fts.upsert(record("t", "memory", "b", "second lynx"))
    fts.delete("t", EntityKey("memory", "a"), None)
    fts.store.conn().execute("DELETE FROM idx_changes")  # as the vector store's pruning may now do
    shutil.move(tmp_path / "kept", folder(path))  # an old keyword index comes back
    assert lex(tantivy_index(path), "t", "lynx") == ["b"]


def test_purging_a_tenant_removes_its_keyword_index(tmp_path: Path) -> None:
    path = tmp_path / "i.db"
    index = tantivy_index(path)
    index.upsert(record("gone", "memory", "a", "bison herd"))
    index.upsert(record("kept", "memory", "b", "bison calf"))
    assert lex(index, "gone", "herd") == ["a"]
    assert tenant_folder(path, "gone").is_dir()
    index.purge_tenant("gone")
    assert lex(index, "gone", "bison") == []
    assert not tenant_folder(path, "gone").exists()  # its files, not merely its documents marked deleted
    assert lex(index, "kept", "bison") == ["b"]
    index.upsert(record("gone", "memory", "c", "new bison"))
    assert lex(index, "gone", "bison") == ["c"]


WRITER = """
import sys
from infra.local.sqlite.index import SqliteIndex, build_sqlite_index
from tests.adapters.search_index_contract import record
from core.models import EntityKey
index = build_sqlite_index(sys.argv[1], keyword_engine="tantivy")
for i in range(int(sys.argv[2])):
    index.upsert(record("t", "memory", f"w{i}", f"written tapir{i}"))
    if i % 3 == 2:
        index.delete("t", EntityKey("memory", f"w{i - 1}"), None)
    print(i, flush=True)
"""


def test_kill_9_mid_write_loses_no_acknowledged_write(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    tantivy_index(path).upsert(record("t", "memory", "seed", "seed"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    acked = -1
    with subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), "100000"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    ) as proc:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        while acked < 60 and time.monotonic() < deadline:
            acked = int(proc.stdout.readline())
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert acked >= 60
    index = tantivy_index(path)
    deleted = {i - 1 for i in range(acked + 1) if i % 3 == 2}
    for i in range(acked + 1):
        assert lex(index, "t", f"tapir{i}") == ([] if i in deleted else [f"w{i}"]), i
    assert lex(index, "t", "seed") == ["seed"]
    assert unit(1, 0).shape  # the vectors are not this test's concern


def test_the_setting_chooses_the_engine_and_a_wrong_value_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.errors import ConfigurationError
    from infra.config.settings import load_settings
    from infra.wiring.root import Container

    monkeypatch.delenv("QUARRY_KEYWORD_ENGINE", raising=False)
    index = Container(load_settings(data_dir=tmp_path / "default")).index
    index.upsert(record("t", "memory", "a", "the setting works"))
    assert lex(index, "t", "setting") == ["a"]
    assert Path(index.store.path + ".tantivy").is_dir()  # tantivy is the default
    monkeypatch.setenv("QUARRY_KEYWORD_ENGINE", "fts5")
    index = Container(load_settings(data_dir=tmp_path / "fts5")).index
    index.upsert(record("t", "memory", "a", "the setting works"))
    assert lex(index, "t", "setting") == ["a"]
    assert not Path(index.store.path + ".tantivy").exists()
    monkeypatch.setenv("QUARRY_KEYWORD_ENGINE", "lucene")
    with pytest.raises(ConfigurationError) as raised:
        load_settings(data_dir=tmp_path)
    assert "QUARRY_KEYWORD_ENGINE" in raised.value.variables


def tantivy_threads() -> int:
    names = []
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a thread that ended meanwhile
            names.append((task / "comm").read_text())
    return sum(name.startswith("thread-tantivy") for name in names)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads through /proc")
def test_a_process_keeps_a_bounded_number_of_tenant_indexes_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each open tantivy index holds a thread: past OPEN_TENANTS the least recently used tenant's index is
    closed, and reopened from its files when that tenant searches again."""
    from infra.local.keywords import keyword_index

    monkeypatch.setattr(keyword_index, "OPEN_TENANTS", 3)
    index = tantivy_index(tmp_path / "i.db")
    before = tantivy_threads()
    for i in range(12):
        index.upsert(record(f"t{i}", "memory", f"m{i}", f"gnu number{i}"))
    index.settle()
    for i in range(12):
        assert lex(index, f"t{i}", "gnu") == [f"m{i}"]
    deadline = time.monotonic() + 30
    while tantivy_threads() > before + 3 and time.monotonic() < deadline:
        # A closed index ends its thread once its last reference goes; one held in a reference cycle (an
        # earlier test's traceback, say) goes only when the collector runs, which the full suite may not do.
        gc.collect()
        time.sleep(0.05)
    assert tantivy_threads() <= before + 3
    assert lex(index, "t0", "number0") == ["m0"]  # reopened


def test_an_erase_on_the_fts5_engine_removes_the_tenants_tantivy_index_too(tmp_path: Path) -> None:
    """A process on the fts5 engine erasing a tenant (`quarry` commands, a switch back) removes its tantivy
    index as well: left there, its words and statistics would greet the next writer of that tenant id."""
    path = tmp_path / "i.db"
    index = tantivy_index(path)
    index.upsert_many([record("gone", "memory", f"a{i}", "okapi secret") for i in range(5)])
    index.upsert(record("kept", "memory", "b", "okapi"))
    index.settle()
    build_sqlite_index(path, keyword_engine="fts5").purge_tenant("gone")
    assert not tenant_folder(path, "gone").exists()
    reopened = tantivy_index(path)
    assert lex(reopened, "gone", "okapi") == [] and lex(reopened, "kept", "okapi") == ["b"]
    reopened.upsert(record("gone", "memory", "c", "okapi again"))
    fresh = tantivy_index(tmp_path / "fresh.db")
    fresh.upsert(record("gone", "memory", "c", "okapi again"))
    query = LexicalQuery(("okapi",))
    assert [h.score for h in reopened.lexical("gone", query, Filters(), 10)] == [
        h.score for h in fresh.lexical("gone", query, Filters(), 10)
    ]


def test_a_closed_local_container_leaves_nothing_running_that_could_write_its_directory(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    """A tool that ingests in-process and then removes the data directory (a benchmark, the evaluation
    harness) closes its container first: no keyword follower is left to open the file again."""
    import shutil
    import threading

    data = tmp_path / "data"
    container = make_container(data, fake_embedder)
    items = [{"type": "memory", "id": f"m-{i}", "content": f"harbor note {i}"} for i in range(20)]
    others = set(threading.enumerate())  # other tests' containers may still be following their files

    def followers() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name == "quarry-keywords" and t not in others]

    container.indexing.bulk("t", items, 1.0)
    assert followers()  # following in the background
    container.close()
    assert followers() == []
    shutil.rmtree(data)
    assert not data.exists()
