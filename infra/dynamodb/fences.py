"""`DynamoTenantFences`: the TenantFences port in the state table, one item per erased tenant (pk
`F#<core.state.fence_mark>`: a SHA-256 of the id, never the id itself; outside every `T#<tenant>`
partition, so an erase's purge leaves it), read strongly consistent. Beside it, what purges removed since
the fence (pk `R#<mark>`): every purge adds its counts with one UpdateItem ADD, so purges in several
functions at once all count, and the erase's receipt reads the sum."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.state import TenantFence, fence_mark
from infra.dynamodb import state_items as it
from infra.dynamodb.errors import dynamodb_errors
from infra.dynamodb.tables import default_client

FENCE_SK = "F"
REMOVED_SK = "R"


def fence_key(tenant_id: str) -> it.Item:
    """The key of the tenant's fence item."""
    return it.encode({"pk": f"F#{fence_mark(tenant_id)}", "sk": FENCE_SK})


def removed_key(tenant_id: str) -> it.Item:
    """The key of the item counting what purges removed since the tenant's fence."""
    return it.encode({"pk": f"R#{fence_mark(tenant_id)}", "sk": REMOVED_SK})


class DynamoTenantFences:
    """Erased tenants' fences in the DynamoDB state table."""

    def __init__(self, table: str, client: Any | None = None) -> None:
        self._table, self._client = table, client or default_client()

    def fence(self, tenant_id: str, at: float) -> None:
        """Mark the tenant erased at `at`, closed (again, if it was reopened); its count of what purges
        removed starts again first, so no purge the fence causes is left out."""
        with dynamodb_errors():
            self._client.put_item(TableName=self._table, Item=removed_key(tenant_id))
            self._client.put_item(
                TableName=self._table, Item={**fence_key(tenant_id), **it.encode({"erased_at": at})}
            )

    def fence_of(self, tenant_id: str) -> TenantFence | None:
        """The tenant's fence, or None."""
        with dynamodb_errors():
            item = self._client.get_item(
                TableName=self._table, Key=fence_key(tenant_id), ConsistentRead=True
            ).get("Item")
        if item is None:
            return None
        values = it.decode(item)
        reopened = values.get("reopened_at")
        return TenantFence(float(values["erased_at"]), None if reopened is None else float(reopened))

    def reopen(self, tenant_id: str, at: float) -> None:
        """Serve the tenant again from `at`."""
        with dynamodb_errors():
            self._client.update_item(
                TableName=self._table,
                Key=fence_key(tenant_id),
                UpdateExpression="SET reopened_at = :at",
                ExpressionAttributeValues=it.encode({":at": at}),
            )

    def count_removed(self, tenant_id: str, removed: Mapping[str, int]) -> None:
        """Add one purge's counts to the tenant's count since its fence."""
        names = {f"#n{i}": name for i, name in enumerate(removed)}
        values = {f":v{i}": int(n) for i, n in enumerate(removed.values())}
        with dynamodb_errors():
            self._client.update_item(
                TableName=self._table,
                Key=removed_key(tenant_id),
                UpdateExpression="ADD " + ", ".join(f"#n{i} :v{i}" for i in range(len(names))),
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=it.encode(values),
            )

    def removed_since_fence(self, tenant_id: str) -> dict[str, int]:
        """What every purge since the fence removed, by what."""
        with dynamodb_errors():
            item = self._client.get_item(
                TableName=self._table, Key=removed_key(tenant_id), ConsistentRead=True
            ).get("Item")
        values = it.decode(item) if item else {}
        return {k: int(v) for k, v in values.items() if k not in ("pk", "sk")}
