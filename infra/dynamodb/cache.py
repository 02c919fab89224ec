"""`DynamoCache`: the Cache port on a DynamoDB table with a TTL attribute.

    item      pk          attributes
    value     V#<key>     value (JSON string), expires_at (TTL, whole epoch seconds), expires_exact
    counter   C#<key>     count (number, no TTL)

DynamoDB's TTL sweeper deletes expired items lazily (typically within days), so `get` compares the exact
expiry with the injected `now` itself. Counters use `ADD` (atomic server-side) and are read strongly
consistent: they carry index generations, and a stale read would serve results cached before a write.
"""

from __future__ import annotations

import json
import math
from typing import Any

from core.cache_key import generation_key
from infra.dynamodb.errors import dynamodb_errors
from infra.dynamodb.state_items import decode, encode
from infra.dynamodb.tables import TTL_ATTRIBUTE, cache_table_spec, default_client, ensure_table


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
            item = self._client.get_item(TableName=self._table, Key=encode({"pk": f"V#{key}"})).get("Item")
        values = decode(item) if item is not None else None
        if values is None or float(values["expires_exact"]) <= now:
            return None
        return json.loads(values["value"])

    def set(self, key: str, value: Any, ttl_seconds: float, now: float) -> None:
        """Store `value` until `now + ttl_seconds`, replacing any previous value."""
        expires = now + ttl_seconds
        item = encode(
            {
                "pk": f"V#{key}",
                "value": json.dumps(value, separators=(",", ":")),
                "expires_exact": float(expires),
                TTL_ATTRIBUTE: math.ceil(expires),
            }
        )
        with dynamodb_errors():
            self._client.put_item(TableName=self._table, Item=item)

    def incr(self, key: str) -> int:
        """Atomically increment an integer counter (no TTL) and return the new value."""
        with dynamodb_errors():
            answer = self._client.update_item(
                TableName=self._table,
                Key=encode({"pk": f"C#{key}"}),
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
                TableName=self._table, Key=encode({"pk": f"C#{key}"}), ConsistentRead=True
            ).get("Item")
        return 0 if item is None else int(decode(item)["count"])

    def purge_tenant(self, tenant_id: str) -> int:
        """Make the tenant's cached searches unreachable by bumping its generation; 0 items deleted.

        A hash-keyed table cannot list one tenant's items without a Scan, which no function may run on a
        whole table (template.yaml); the entries expire by their TTL (5 minutes, then DynamoDB's sweeper).
        The counter stays: dropping it would let a later generation meet a still-live entry again.
        """
        self.incr(generation_key(tenant_id))
        return 0
