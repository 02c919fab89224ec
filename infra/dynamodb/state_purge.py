"""Erasing a tenant from the DynamoDB state table: every partition the tenant owns, its assemblies (found
through the `log` index) and its rows in the overlay registry partition."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from infra.dynamodb import state_items as it
from infra.dynamodb.errors import dynamodb_errors
from infra.dynamodb.tables import LOG_INDEX

Query = Callable[..., Iterator[it.Item]]


def tenant_keys(query: Query, tenant_id: str, registry_pk: str) -> list[dict[str, Any]]:
    """The (pk, sk) of every state item of the tenant."""
    keys: list[dict[str, Any]] = []
    for pk in (it.tenant_pk(tenant_id), it.history_pk(tenant_id), it.eval_pk(tenant_id)):
        items = query(KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": {"S": pk}})
        keys.extend({"pk": i["pk"], "sk": i["sk"]} for i in items)
    logged = query(
        IndexName=LOG_INDEX,
        KeyConditionExpression="log_pk = :pk",
        ExpressionAttributeValues={":pk": {"S": it.log_pk(tenant_id)}},
    )
    keys.extend({"pk": i["pk"], "sk": i["sk"]} for i in logged)
    registered = query(
        KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
        ExpressionAttributeValues={":pk": {"S": registry_pk}, ":prefix": {"S": f"{it.esc(tenant_id)}#"}},
    )
    keys.extend(
        {"pk": i["pk"], "sk": i["sk"]} for i in registered if i.get("tenant", {}).get("S") == tenant_id
    )
    return keys


def delete_keys(client: Any, table: str, keys: list[dict[str, Any]]) -> int:
    """Delete the items one by one (an admin operation; DeleteItem is idempotent, so a retry is safe)."""
    with dynamodb_errors():
        for key in keys:
            client.delete_item(TableName=table, Key=key)
    return len(keys)
