"""DynamoCache under moto (in-process) against the Cache contract, plus its TTL attribute."""

from __future__ import annotations

import uuid

import pytest

from infra.dynamodb.cache import DynamoCache
from infra.dynamodb.tables import TTL_ATTRIBUTE
from tests.adapters.cache_contract import NOW, CacheContract
from tests.adapters.moto_support import OneRequestAtATime, moto_dynamodb


@pytest.fixture(scope="module")
def dynamodb():
    """One moto backend per module (starting one costs ~0.5 s); each test gets its own table."""
    with pytest.MonkeyPatch.context() as patch, moto_dynamodb(patch) as client:
        yield client


@pytest.fixture
def table():
    return f"cache-{uuid.uuid4().hex[:12]}"


class TestDynamoCache(CacheContract):
    @pytest.fixture
    def cache(self, dynamodb, table):
        # Requests serialised as DynamoDB executes them; moto's backend is not thread-safe on its own.
        c = DynamoCache(table, client=OneRequestAtATime(dynamodb))
        assert c.ensure_tables() is True
        return c


def test_entries_carry_a_ttl_attribute_and_are_checked_on_read(dynamodb, table):
    cache = DynamoCache(table, client=dynamodb)
    cache.ensure_tables()
    cache.set("k", "v", 90.5, NOW)
    item = dynamodb.get_item(TableName=table, Key={"pk": {"S": "V#k"}, "sk": {"S": "-"}})["Item"]
    assert int(item[TTL_ATTRIBUTE]["N"]) == NOW + 91  # whole seconds, never earlier than the real expiry
    # the item is still stored (DynamoDB sweeps lazily), yet a read after expiry never returns it
    assert cache.get("k", NOW + 90.5) is None
    ttl = dynamodb.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
    assert (ttl["TimeToLiveStatus"], ttl["AttributeName"]) == ("ENABLED", TTL_ATTRIBUTE)
