"""`DynamoCache`: the Cache port on a DynamoDB table with a TTL attribute.

    item      pk                     sk          attributes
    search    V#search:<tenant>      <sha256>    value (JSON string), expires_at (TTL, whole epoch
                                                 seconds), expires_exact
    value     V#<key>                -           the same (the settling marker, any other key)
    counter   C#<key>                -           count (number, no TTL)

A tenant's cached searches share one partition (core/search/cache_key.py `cache_partition`), so DELETE /tenant
finds every one of them with one strongly consistent Query and deletes them — none waits for its TTL.
DynamoDB's TTL sweeper deletes expired items lazily (typically within days), so `get` compares the exact
expiry with the injected `now` itself. Counters use `ADD` (atomic server-side) and are read strongly
consistent: they carry index generations, and a stale read would serve results cached before a write.
"""

from __future__ import annotations

import json
import math
from typing import Any

from core.search.cache_key import SINGLE_ITEM, cache_partition, generation_key, search_partition, settling_key
from infra.dynamodb.errors import dynamodb_errors
from infra.dynamodb.state_items import decode, encode
from infra.dynamodb.state_log import pages
from infra.dynamodb.tables import TTL_ATTRIBUTE, cache_table_spec, default_client, ensure_table


def value_key(key: str) -> dict[str, Any]:
    """The item key of a cached value."""
    partition, item = cache_partition(key)
    return encode({"pk": f"V#{partition}", "sk": item})


def counter_key(key: str) -> dict[str, Any]:
    """The item key of a counter."""
    return encode({"pk": f"C#{key}", "sk": SINGLE_ITEM})


class DynamoCache:
    """A TTL cache and atomic counters in one DynamoDB table."""

    def __init__(self, table_name: str, client: Any | None = None) -> None:
        self._table = table_name
        self._client = client if client is not None else default_client()

    def ensure_tables(self) -> bool:
        """Create the cache table when missing (local endpoints); True when it was created."""
        return ensure_table(self._client, cache_table_spec(self._table))

    def get(self, key: str, now: float) -> Any | None:
        """The live value under `key`, or None (expired entries are never returned)."""
        with dynamodb_errors():
            item = self._client.get_item(TableName=self._table, Key=value_key(key)).get("Item")
        values = decode(item) if item is not None else None
        if values is None or float(values["expires_exact"]) <= now:
            return None
        return json.loads(values["value"])

    def set(self, key: str, value: Any, ttl_seconds: float, now: float) -> None:
        """Store `value` until `now + ttl_seconds`, replacing any previous value."""
        expires = now + ttl_seconds
        attributes = {
            "value": json.dumps(value, separators=(",", ":")),
            "expires_exact": float(expires),
            TTL_ATTRIBUTE: math.ceil(expires),
        }
        item = {**value_key(key), **encode(attributes)}
        with dynamodb_errors():
            self._client.put_item(TableName=self._table, Item=item)

    def incr(self, key: str) -> int:
        """Atomically increment an integer counter (no TTL) and return the new value."""
        with dynamodb_errors():
            answer = self._client.update_item(
                TableName=self._table,
                Key=counter_key(key),
                UpdateExpression="ADD #c :one",
                ExpressionAttributeNames={"#c": "count"},
                ExpressionAttributeValues=encode({":one": 1}),
                ReturnValues="UPDATED_NEW",
            )
        return int(decode(answer["Attributes"])["count"])

    def counter(self, key: str) -> int:
        """The counter's value, 0 when absent."""
        with dynamodb_errors():
            item = self._client.get_item(
                TableName=self._table, Key=counter_key(key), ConsistentRead=True
            ).get("Item")
        return 0 if item is None else int(decode(item)["count"])

    def purge_tenant(self, tenant_id: str) -> int:
        """Delete the tenant's cached searches (one strongly consistent Query of their partition, batched
        deletes), its settling marker and its generation counter; how many items there were."""
        from boto3.dynamodb.table import BatchWriter

        query = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": encode({":pk": f"V#{search_partition(tenant_id)}"}),
            "ProjectionExpression": "pk, sk",
            "ConsistentRead": True,
        }
        with dynamodb_errors():
            keys = [{"pk": i["pk"], "sk": i["sk"]} for i in pages(self._client.query, query)]
            with BatchWriter(self._table, self._client) as batch:  # resends unprocessed items itself
                for key in keys:
                    batch.delete_item(Key=key)
        return len(keys) + self.drop_marks(tenant_id)

    def drop_marks(self, tenant_id: str) -> int:
        """Delete the tenant's settling mark and generation counter; how many existed."""
        marks = [value_key(settling_key(tenant_id)), counter_key(generation_key(tenant_id))]
        with dynamodb_errors():
            old = [
                self._client.delete_item(TableName=self._table, Key=k, ReturnValues="ALL_OLD") for k in marks
            ]
        return sum(1 for answer in old if answer.get("Attributes"))
