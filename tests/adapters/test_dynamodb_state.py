"""DynamoStateStore under moto (in-process) against the StateStore contract, plus what only DynamoDB
needs: 1 MB query pages, TTL retention with a read-side check, concurrent learning cycles, table creation
and error translation."""

from __future__ import annotations

import threading
import uuid
from dataclasses import replace

import pytest

from core.errors import ConflictError, UnavailableError
from infra.dynamodb.state import MAX_TRANSACTION_ITEMS, DynamoStateStore
from infra.dynamodb.tables import TTL_ATTRIBUTE
from tests.adapters.moto_support import OneRequestAtATime, moto_dynamodb
from tests.adapters.statestore_contract import StateStoreContract
from tests.adapters.statestore_data import T1, at, entry, update, with_feedback

NOW = 1_900_000_000.0
RETENTION_DAYS = 30
DAY = 86_400
BIG_ROW_BYTES = 90_000


class FakeClock:
    """A settable wall clock."""

    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def dynamodb():
    """One moto backend per module (starting one costs ~0.5 s); each test gets its own table."""
    with pytest.MonkeyPatch.context() as patch, moto_dynamodb(patch) as client:
        yield client


@pytest.fixture
def table():
    return f"state-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def store(dynamodb, clock, table):
    s = DynamoStateStore(table, client=dynamodb, log_retention_days=RETENTION_DAYS, clock=clock)
    assert s.ensure_tables() is True
    return s


class TestDynamoStateStore(StateStoreContract):
    """The shared contract on one DynamoDB table."""


def test_ensure_tables_creates_once_with_ttl_enabled(store, dynamodb, table):
    assert store.ensure_tables() is False
    ttl = dynamodb.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
    assert (ttl["TimeToLiveStatus"], ttl["AttributeName"]) == ("ENABLED", TTL_ATTRIBUTE)


def test_log_pages_stay_correct_past_one_megabyte_of_items(store, dynamodb, table):
    # 24 rows of ~90 KB: one Query page (≤ 1 MB) holds at most 11, so a 20-row log page spans several.
    for i in range(24):
        store.log_assembly(replace(entry(f"big-{i:02d}", at(i)), query_hash="q" * BIG_ROW_BYTES))
    first = store.list_assemblies(T1, None, None, 20, None)
    rest = store.list_assemblies(T1, None, None, 20, first.next_cursor)

    assert len(first.entries) == 20 and rest.next_cursor is None
    assert [e.assembly_id for e in first.entries + rest.entries] == [
        f"big-{i:02d}" for i in reversed(range(24))
    ]
    raw = dynamodb.query(
        TableName=table,
        IndexName="log",
        KeyConditionExpression="log_pk = :p",
        ExpressionAttributeValues={":p": {"S": f"T#{T1}#LOG"}},
    )
    assert "LastEvaluatedKey" in raw and len(raw["Items"]) < 20  # one raw page really stops short


def test_logged_rows_carry_a_ttl_and_vanish_from_reads_once_expired(store, dynamodb, clock, table):
    with_feedback(store, ["a-1"])
    raw = dynamodb.get_item(TableName=table, Key={"pk": {"S": f"T#{T1}#A#a-1"}, "sk": {"S": "A"}})["Item"]
    assert int(raw[TTL_ATTRIBUTE]["N"]) == NOW + RETENTION_DAYS * DAY

    clock.now = NOW + RETENTION_DAYS * DAY + 1  # expired, but DynamoDB has not swept it yet
    assert store.get_assembly(T1, "a-1") is None
    assert store.list_assemblies(T1, None, None, 10, None).entries == ()
    assert store.unprocessed_assemblies(T1, "agent", 10) == []
    assert store.pending_callers(1) == []
    assert store.record_feedback(T1, "a-1", ["m-1"], 1, at(9)) is False


def test_without_retention_rows_never_expire(dynamodb, clock, table):
    store = DynamoStateStore(table, client=dynamodb, clock=clock)
    store.ensure_tables()
    store.log_assembly(entry("a-1", at(1)))
    clock.now = NOW + 3650 * DAY
    assert store.get_assembly(T1, "a-1") is not None


def test_two_concurrent_learning_cycles_apply_exactly_once(dynamodb, clock, table):
    store = DynamoStateStore(table, client=OneRequestAtATime(dynamodb), clock=clock)
    store.ensure_tables()
    with_feedback(store, [f"a-{i}" for i in range(10)])
    results, barrier = [], threading.Barrier(2)

    def cycle(weight):
        ids = [e.assembly_id for e in store.unprocessed_assemblies(T1, "agent", 50)]
        barrier.wait()  # both cycles have selected the same rows before either applies
        results.append(store.apply_learning(T1, update(ids, weight=weight)))

    threads = [threading.Thread(target=cycle, args=(w,)) for w in (1.3, 0.3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False, True]
    assert len(store.list_history(T1, None, 100)) == 1
    assert [w.weight for w in store.list_weights(T1)] in ([1.3], [0.3])
    assert store.pending_callers(1) == []


def test_feedback_on_a_processed_row_does_not_queue_it_again(store):
    ids = with_feedback(store, ["a-1"])
    assert store.apply_learning(T1, update(ids))
    assert store.record_feedback(T1, "a-1", ["v-9"], 10, at(700))
    assert store.get_assembly(T1, "a-1").used_ids == ("v-9",)
    assert store.unprocessed_assemblies(T1, "agent", 10) == []


def test_a_missing_table_is_unavailable_not_a_crash(dynamodb):
    store = DynamoStateStore("no-such-table", client=dynamodb)
    with pytest.raises(UnavailableError) as err:
        store.list_weights(T1)
    assert err.value.backend == "dynamodb"


def test_an_update_beyond_one_transaction_is_refused_whole(store):
    ids = [f"a-{i:03d}" for i in range(MAX_TRANSACTION_ITEMS)]
    for i, assembly_id in enumerate(ids):
        store.log_assembly(entry(assembly_id, at(i)))
    with pytest.raises(ConflictError):
        store.apply_learning(T1, update(ids))
    assert store.list_weights(T1) == [] and store.list_history(T1, None, 10) == []
    assert not any(e.processed for e in store.list_assemblies(T1, None, None, 1000, None).entries)
