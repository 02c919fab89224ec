"""`DynamoSearchSnapshots`: the SearchSnapshots port in the state table.

    item    pk                 sk                 attributes
    head    T#<tenant>#S       <id>#H             fingerprint, created_at, keep_alive, chunks, expires_exact,
                                                  expires_at (TTL)
    chunk   T#<tenant>#S       <id>#C#<nnnn>      data (binary: a slice of the compressed body), expires_at

A tenant's snapshots share one partition outside the state store's own (`T#<tenant>` and its `#H`, `#E`
suffixes), so an erase finds them with one strongly consistent Query. An item holds at most 400 KB
(DynamoDB's item size limit), so the body is split into chunks of CHUNK_BYTES; the chunks are written
before the head, so a reader that finds the head finds them all. A page read extends only the small
head (an UpdateItem is billed by the size of the item it changes); the chunks' TTL is the longest a snapshot
may live (core/search/paging.py MAX_SNAPSHOT_AGE_SECONDS). DynamoDB's TTL sweeper deletes expired items
lazily, so `get` compares the head's exact expiry with `now` itself.
"""

from __future__ import annotations

import math
from typing import Any

from core.search.paging import MAX_SNAPSHOT_AGE_SECONDS, SearchSnapshot
from infra.dynamodb import state_items as it
from infra.dynamodb.errors import dynamodb_errors
from infra.dynamodb.state_log import pages
from infra.dynamodb.state_purge import delete_keys
from infra.dynamodb.tables import TTL_ATTRIBUTE, default_client

# Bytes of body per chunk item: under DynamoDB's 400 KB item limit with room for the keys and attributes.
CHUNK_BYTES = 350_000
HEAD = "H"


def snapshots_pk(tenant_id: str) -> str:
    """The partition of the tenant's snapshots."""
    return f"{it.tenant_pk(tenant_id)}#S"


def _sk(snapshot_id: str, part: str) -> str:
    return f"{it.esc(snapshot_id)}#{part}"


class DynamoSearchSnapshots:
    """Search snapshots in the DynamoDB state table."""

    def __init__(self, table: str, client: Any | None = None) -> None:
        self._table, self._client = table, client or default_client()

    def _key(self, tenant_id: str, snapshot_id: str, part: str) -> it.Item:
        return it.encode({"pk": snapshots_pk(tenant_id), "sk": _sk(snapshot_id, part)})

    def put(self, snapshot: SearchSnapshot) -> None:
        """Store the body's chunks, then the head."""
        s = snapshot
        chunks = [s.body[i : i + CHUNK_BYTES] for i in range(0, len(s.body), CHUNK_BYTES)] or [b""]
        last = math.ceil(s.created_at + MAX_SNAPSHOT_AGE_SECONDS) + 1
        head = {
            "fingerprint": s.fingerprint,
            "created_at": s.created_at,
            "keep_alive": s.keep_alive,
            "chunks": len(chunks),
            "expires_exact": s.expires_at,
            TTL_ATTRIBUTE: math.ceil(s.expires_at),
        }
        with dynamodb_errors():
            for n, chunk in enumerate(chunks):
                item = self._key(s.tenant_id, s.snapshot_id, f"C#{n:04d}")
                item |= it.encode({"data": chunk, TTL_ATTRIBUTE: last})
                self._client.put_item(TableName=self._table, Item=item)
            item = self._key(s.tenant_id, s.snapshot_id, HEAD) | it.encode(head)
            self._client.put_item(TableName=self._table, Item=item)

    def get(self, tenant_id: str, snapshot_id: str, now: float) -> SearchSnapshot | None:
        """The tenant's live snapshot (one strongly consistent Query of its items), or None."""
        query = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": it.encode(
                {":pk": snapshots_pk(tenant_id), ":prefix": _sk(snapshot_id, "")}
            ),
            "ConsistentRead": True,
        }
        items = [it.decode(i) for i in pages(self._client.query, query)]
        head = next((i for i in items if i["sk"] == _sk(snapshot_id, HEAD)), None)
        if head is None or float(head["expires_exact"]) <= now:
            return None
        chunks = sorted((i["sk"], bytes(i["data"])) for i in items if i["sk"] != head["sk"])
        if len(chunks) != int(head["chunks"]):  # chunks swept by their TTL: the snapshot is gone
            return None
        return SearchSnapshot(
            tenant_id,
            snapshot_id,
            str(head["fingerprint"]),
            float(head["created_at"]),
            float(head["expires_exact"]),
            float(head["keep_alive"]),
            b"".join(c for _, c in chunks),
        )

    def extend(self, tenant_id: str, snapshot_id: str, expires_at: float, now: float) -> bool:
        """Move a live snapshot's expiry (a conditional update of its head); False when absent or lapsed."""
        with dynamodb_errors("ConditionalCheckFailedException") as lapsed:
            self._client.update_item(
                TableName=self._table,
                Key=self._key(tenant_id, snapshot_id, HEAD),
                UpdateExpression="SET expires_exact = :exact, #ttl = :ttl",
                ConditionExpression="expires_exact > :now",
                ExpressionAttributeNames={"#ttl": TTL_ATTRIBUTE},
                ExpressionAttributeValues=it.encode(
                    {":exact": expires_at, ":ttl": math.ceil(expires_at), ":now": now}
                ),
            )
        return not lapsed

    def purge_tenant(self, tenant_id: str) -> int:
        """Delete every item of the tenant's snapshots, one DeleteItem each (as the state store's purge:
        the API function's role has no BatchWriteItem on the state table); how many snapshots there were."""
        query = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": it.encode({":pk": snapshots_pk(tenant_id)}),
            "ProjectionExpression": "pk, sk",
            "ConsistentRead": True,
        }
        keys = [{"pk": i["pk"], "sk": i["sk"]} for i in pages(self._client.query, query)]
        delete_keys(self._client, self._table, keys)
        return sum(1 for k in keys if k["sk"]["S"].endswith(f"#{HEAD}"))
