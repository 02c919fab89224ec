"""DynamoStateStore under moto (in-process) against the StateStore contract, plus what only DynamoDB
needs: 1 MB query pages, TTL retention with a read-side check, concurrent learning cycles, table creation
and error translation."""

from __future__ import annotations

import threading

import boto3
import pytest
from moto import mock_aws

from core.errors import UnavailableError
from infra.dynamodb.state import DynamoStateStore
from infra.dynamodb.tables import TTL_ATTRIBUTE
from tests.adapters.statestore_contract import T1, StateStoreContract, at, entry, update, with_feedback

TABLE = "quarry-state-test"
NOW = 1_900_000_000.0
RETENTION_DAYS = 30
DAY = 86_400


class FakeClock:
    """A settable wall clock."""

    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def dynamodb(monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL_DYNAMODB", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        yield boto3.client("dynamodb", region_name="us-east-1")


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def store(dynamodb, clock):
    s = DynamoStateStore(TABLE, client=dynamodb, log_retention_days=RETENTION_DAYS, clock=clock)
    assert s.ensure_tables() is True
    return s


class TestDynamoStateStore(StateStoreContract):
    """The shared contract on one DynamoDB table."""


def test_ensure_tables_creates_once_with_ttl_enabled(store, dynamodb):
    assert store.ensure_tables() is False
    ttl = dynamodb.describe_time_to_live(TableName=TABLE)["TimeToLiveDescription"]
    assert (ttl["TimeToLiveStatus"], ttl["AttributeName"]) == ("ENABLED", TTL_ATTRIBUTE)


def test_log_pages_stay_correct_past_one_megabyte_of_items(store, dynamodb):
    # 24 rows of ~90 KB: every Query page holds at most ~11 of them, so one log page needs several.
    big = entry("x", at(0)).sources * 1
    for i in range(24):
        e = entry(f"big-{i:02d}", at(i))
        store.log_assembly(type(e)(**{**_fields(e), "sources": big * 1, "query_hash": "q" * 90_000}))
    seen, cursor = [], None
    first = store.list_assemblies(T1, None, None, 20, None)
    assert len(first.entries) == 20
    seen += [e.assembly_id for e in first.entries]
    cursor = first.next_cursor
    rest = store.list_assemblies(T1, None, None, 20, cursor)
    seen += [e.assembly_id for e in rest.entries]
    assert rest.next_cursor is None
    assert seen == [f"big-{i:02d}" for i in reversed(range(24))]
    raw = dynamodb.query(
        TableName=TABLE,
        IndexName="log",
        KeyConditionExpression="log_pk = :p",
        ExpressionAttributeValues={":p": {"S": f"T#{T1}#LOG"}},
    )
    assert "LastEvaluatedKey" in raw and len(raw["Items"]) < 20  # the store really crossed 1 MB pages


def _fields(e):
    return {f: getattr(e, f) for f in e.__slots__}


def test_logged_rows_carry_a_ttl_and_vanish_from_reads_once_expired(store, dynamodb, clock):
    with_feedback(store, ["a-1"])
    raw = dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": f"T#{T1}#A#a-1"}, "sk": {"S": "A"}})["Item"]
    assert int(raw[TTL_ATTRIBUTE]["N"]) == NOW + RETENTION_DAYS * DAY

    clock.now = NOW + RETENTION_DAYS * DAY + 1  # expired, but DynamoDB has not swept it yet
    assert store.get_assembly(T1, "a-1") is None
    assert store.list_assemblies(T1, None, None, 10, None).entries == ()
    assert store.unprocessed_assemblies(T1, "agent", 10) == []
    assert store.pending_callers(1) == []
    assert store.record_feedback(T1, "a-1", ["m-1"], 1, at(9)) is False


def test_without_retention_rows_never_expire(dynamodb, clock):
    store = DynamoStateStore(TABLE, client=dynamodb, clock=clock)
    store.ensure_tables()
    store.log_assembly(entry("a-1", at(1)))
    clock.now = NOW + 3650 * DAY
    assert store.get_assembly(T1, "a-1") is not None


class OneRequestAtATime:
    """The moto client with each request made atomic, as DynamoDB itself is.

    moto's in-process backend is not thread-safe (two threads inside one TransactWriteItems corrupt its
    dicts); real DynamoDB executes each request atomically, so requests are serialised here — the two
    cycles still interleave freely between requests, which is where the race lives.
    """

    def __init__(self, client) -> None:
        self._client, self._lock = client, threading.Lock()

    def __getattr__(self, name):
        method = getattr(self._client, name)

        def call(*args, **kwargs):
            with self._lock:
                return method(*args, **kwargs)

        return call


def test_two_concurrent_learning_cycles_apply_exactly_once(dynamodb, clock):
    store = DynamoStateStore(TABLE, client=OneRequestAtATime(dynamodb), clock=clock)
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
    winner = 1.3 if results[0] else 0.3  # threads append in completion order; the weight tells who won
    assert [w.weight for w in store.list_weights(T1)] in ([1.3], [0.3])
    assert store.pending_callers(1) == []
    del winner


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
