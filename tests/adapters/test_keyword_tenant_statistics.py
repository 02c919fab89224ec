"""Keyword ranking statistics are each tenant's own, on both local keyword engines (FTS5 and tantivy): what
one tenant writes never moves another's BM25 scores (document frequency, average length, document count),
never changes which words a prefix or a fuzzy query expands to, and so cannot be learnt by probing; a
tenant's scores are those of an index holding its documents alone, and an erased tenant's statistics go
with it."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from core.models import EntityKey, Filters, LexicalQuery, MatchMode
from infra.local.keywords.fts_tables import fts_table
from infra.local.sqlite.index import SqliteIndex, build_sqlite_index
from tests.adapters.search_index_contract import record

ENGINES = ["fts5", "tantivy"]
ATTACKER, VICTIM = "attacker", "victim"

Ranking = list[tuple[str, float]]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def ranked(index: SqliteIndex, tenant: str, query: LexicalQuery, k: int = 10) -> Ranking:
    return [(h.key.entity_id, h.score) for h in index.lexical(tenant, query, Filters(), k)]


def words(*terms: str) -> LexicalQuery:
    return LexicalQuery(tuple(terms))


def holds(index: SqliteIndex, tenant: str, texts: list[str], prefix: str = "v") -> list[EntityKey]:
    """Write one entity per text for `tenant`; their keys, to delete them again."""
    index.upsert_many([record(tenant, "memory", f"{prefix}{i}", t) for i, t in enumerate(texts)])
    return [EntityKey("memory", f"{prefix}{i}") for i in range(len(texts))]


def forget(index: SqliteIndex, tenant: str, keys: list[EntityKey]) -> None:
    for key in keys:
        index.delete(tenant, key, None)


def probe(
    index: SqliteIndex, look: Callable[[], Ranking], victim_texts: list[str], settle: bool = True
) -> tuple[Ranking, Ranking, Ranking]:
    """The attacker's view before the victim writes `victim_texts`, while it holds them, after it deletes
    them; `settle`: once the keyword index has committed each change (tantivy's background follower)."""

    def after(change: Callable[[], object]) -> Ranking:
        change()
        if settle:
            index.settle()
        return look()

    before = after(lambda: None)
    keys: list[EntityKey] = []
    during = after(lambda: keys.extend(holds(index, VICTIM, victim_texts)))
    return before, during, after(lambda: forget(index, VICTIM, keys))


def test_another_tenants_documents_do_not_move_a_tenants_score_for_a_rare_word(
    tmp_path: Path, engine: str
) -> None:
    """The score-shift probe: the victim writing 40 documents with the attacker's rare word."""
    index = build_sqlite_index(tmp_path / "i.db", keyword_engine=engine)
    holds(index, ATTACKER, ["the zorbleflux report", "a plain note", "another plain note"], "a")
    before, during, after = probe(
        index, lambda: ranked(index, ATTACKER, words("zorbleflux")), ["zorbleflux again"] * 40
    )
    assert before[0][0] == "a0" and before[0][1] > 0
    assert during == before
    assert after == before


def test_planted_documents_cannot_tell_whether_another_tenant_holds_a_word(
    tmp_path: Path, engine: str
) -> None:
    """The canary probe: a canary with the word asked about and a decoy with a word a little more frequent
    in the attacker's own documents. With shared statistics the canary ranked first exactly while no other
    tenant held the word."""
    index = build_sqlite_index(tmp_path / "i.db", keyword_engine=engine)
    holds(index, ATTACKER, ["quixotry", "plainword", "plainword filler", "unrelated"], "a")
    before, during, after = probe(
        index, lambda: ranked(index, ATTACKER, words("quixotry", "plainword"), k=1), ["quixotry"] * 30
    )
    assert [hit for hit, _ in before] == ["a0"]
    assert during == before
    assert after == before


def test_prefix_expansion_comes_from_the_tenants_own_words(tmp_path: Path, engine: str) -> None:
    """Another tenant's many frequent words under the same prefix neither crowd the tenant's own word out
    of the expansion nor change its score."""
    index = build_sqlite_index(tmp_path / "i.db", keyword_engine=engine)
    holds(index, ATTACKER, ["probzzz canary", "filler text", "more filler"], "a")
    prefix = LexicalQuery(("prob",), (), MatchMode.PREFIX)
    victim = [f"probe{i}x probe{i}x" for i in range(40) for _ in range(3)]
    before, during, after = probe(index, lambda: ranked(index, ATTACKER, prefix), victim)
    assert [hit for hit, _ in before] == ["a0"]
    assert during == before
    assert after == before


def test_fuzzy_fallback_expands_to_the_tenants_own_words_only(tmp_path: Path, engine: str) -> None:
    """The fuzzy vocabulary is the tenant's: closer and more frequent words of another tenant do not take
    the places of its own."""
    index = build_sqlite_index(tmp_path / "i.db", keyword_engine=engine)
    holds(index, ATTACKER, ["marmelade jar", "bread", "butter"], "a")
    fuzzy = LexicalQuery(("marmalade",), (), MatchMode.FUZZY)
    victim = [w for w in ["marmalade"] + [f"marmalad{c}" for c in "bcdfghijk"] for _ in range(3)]
    before, during, after = probe(index, lambda: ranked(index, ATTACKER, fuzzy), victim)
    assert [hit for hit, _ in before] == ["a0"]
    assert during == before
    assert after == before


ATTACKER_TEXTS = [
    "rare zorbleflux river bank",
    "the river bank and the bank of the river",
    "shared words shared words shared",
    "probzzz marmelade on bread",
    "a longer note about river crossings, bridges, ferries and a bank",
]
VICTIM_TEXTS = [
    "zorbleflux zorbleflux river",
    "bank bank bank shared words",
    "probe1 probe2 probe3 marmalade marmalades",
    "short",
    "river river river river river river river river",
]
QUERIES = [
    words("river"),
    words("river", "bank"),
    words("zorbleflux", "bank", "bank"),
    words("the"),
    LexicalQuery((), ("river bank",)),
    LexicalQuery(("prob", "riv"), (), MatchMode.PREFIX),
    LexicalQuery(("marmalade", "rivver"), (), MatchMode.FUZZY),
]


def rankings(index: SqliteIndex, tenant: str) -> list[Ranking]:
    return [ranked(index, tenant, q) for q in QUERIES]


def test_a_tenants_scores_are_those_of_an_index_of_its_own_documents(tmp_path: Path, engine: str) -> None:
    """Interleaved with another tenant's writes and deletes of the same words, a tenant's rankings and
    scores equal those of an index that never held anything else."""
    shared = build_sqlite_index(tmp_path / "shared.db", keyword_engine=engine)
    alone = build_sqlite_index(tmp_path / "alone.db", keyword_engine=engine)
    for i, text in enumerate(ATTACKER_TEXTS):
        holds(shared, VICTIM, VICTIM_TEXTS, f"v{i}-")
        shared.upsert(record(ATTACKER, "memory", f"a{i}", text))
        alone.upsert(record(ATTACKER, "memory", f"a{i}", text))
        if i % 2:
            forget(shared, VICTIM, [EntityKey("memory", f"v{i}-{j}") for j in range(3)])
    shared.settle()
    alone.settle()
    expected = rankings(alone, ATTACKER)
    assert all(expected)  # every query finds something
    assert rankings(shared, ATTACKER) == expected


def test_writes_still_committing_are_ranked_with_the_tenants_own_statistics(tmp_path: Path) -> None:
    """Read-your-writes on tantivy: while the index cannot commit, the chunks added since are ranked by FTS5
    beside the index's hits; another tenant's pending writes of the same word move none of those scores."""
    path = tmp_path / "i.db"
    index = build_sqlite_index(path, keyword_engine="tantivy")
    holds(index, ATTACKER, ["zorbleflux committed"] + [f"plain note {i}" for i in range(6)], "a")
    index.settle()
    fd = os.open(str(path) + ".tantivy.lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)  # the index's writer lock: no commit lands while it is held
    try:
        index.upsert(record(ATTACKER, "memory", "new", "zorbleflux pending"))
        before, during, after = probe(
            index, lambda: ranked(index, ATTACKER, words("zorbleflux")), ["zorbleflux"] * 40, settle=False
        )
    finally:
        os.close(fd)
    assert sorted(hit for hit, _ in before) == ["a0", "new"] and min(s for _, s in before) > 0.1
    assert during == before
    assert after == before


def test_an_erased_tenant_leaves_no_statistics_behind(tmp_path: Path, engine: str) -> None:
    """After DELETE /tenant the other tenants rank as if it never existed, its keyword table and index
    are gone, and if it writes again its statistics start from nothing."""
    path = tmp_path / "shared.db"
    shared = build_sqlite_index(path, keyword_engine=engine)
    alone = build_sqlite_index(tmp_path / "alone.db", keyword_engine=engine)
    for i, text in enumerate(ATTACKER_TEXTS):
        shared.upsert(record(ATTACKER, "memory", f"a{i}", text))
        alone.upsert(record(ATTACKER, "memory", f"a{i}", text))
    holds(shared, VICTIM, VICTIM_TEXTS * 3)
    assert shared.purge_tenant(VICTIM) == 3 * len(VICTIM_TEXTS)
    assert rankings(shared, ATTACKER) == rankings(alone, ATTACKER)
    tables = [r[0] for r in shared.store.conn().execute("SELECT name FROM sqlite_master")]
    fts_tables = [t for t in tables if t.startswith("idx_fts") and "_" not in t[len("idx_fts_") :]]
    assert len(fts_tables) == 1  # the attacker's keyword table alone
    if engine == "tantivy":
        tenants = [p for p in Path(str(path) + ".tantivy").iterdir() if p.is_dir()]
        assert len(tenants) == 1  # the attacker's index alone
    shared.upsert(record(VICTIM, "memory", "again", "river bank"))
    fresh = build_sqlite_index(tmp_path / "fresh.db", keyword_engine=engine)
    fresh.upsert(record(VICTIM, "memory", "again", "river bank"))
    assert ranked(shared, VICTIM, words("river")) == ranked(fresh, VICTIM, words("river"))


def test_a_file_from_before_keeps_every_tenants_rows_in_tables_of_their_own(
    tmp_path: Path, engine: str
) -> None:
    """A data file whose tenants shared one FTS5 table (the layout before) is split on first open: every
    tenant finds what it wrote, ranked with its own statistics, and the shared table is gone."""
    path = tmp_path / "old.db"
    index = build_sqlite_index(path, keyword_engine=engine)
    for i, (mine, theirs) in enumerate(zip(ATTACKER_TEXTS, VICTIM_TEXTS, strict=True)):
        index.upsert(record(ATTACKER, "memory", f"a{i}", mine))
        index.upsert(record(VICTIM, "memory", f"v{i}", theirs))
    index.settle()
    expected = {tenant: rankings(index, tenant) for tenant in (ATTACKER, VICTIM)}
    conn = index.store.conn()
    tables = [fts_table(ATTACKER), fts_table(VICTIM)]
    conn.executescript(  # the shared table and its vocabulary, as the schema had them
        "CREATE VIRTUAL TABLE idx_fts USING fts5 (scope, b3, b2, b1, "
        "tokenize = 'porter unicode61 remove_diacritics 2');"
        "CREATE VIRTUAL TABLE idx_vocab USING fts5vocab (idx_fts, 'row');"
    )
    for table in tables:
        conn.execute(f"INSERT INTO idx_fts (rowid, scope, b3, b2, b1) SELECT rowid, * FROM {table}")
        conn.execute(f"DROP TABLE {table}")
    del index, conn

    reopened = build_sqlite_index(path, keyword_engine=engine)
    names = {r[0] for r in reopened.store.conn().execute("SELECT name FROM sqlite_master")}
    assert "idx_fts" not in names and "idx_vocab" not in names
    assert set(tables) <= names
    for tenant, wanted in expected.items():
        assert rankings(reopened, tenant) == wanted
