"""The assembly log part of `DynamoStateStore`: append, feedback, keyset pages, learning selection.

Every read drops rows whose `expires_at` has passed (retention), because DynamoDB's TTL sweeper deletes
expired items lazily; writes to such rows are refused by their condition expressions.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from core.errors import ConflictError
from core.state import AssemblyLogEntry, LogPage
from core.state_codec import decode_log_cursor, dump_ids, encode_log_cursor
from infra.dynamodb import state_items as it
from infra.dynamodb.errors import dynamodb_errors
from infra.dynamodb.tables import LOG_BY_CALLER_INDEX, LOG_INDEX, PENDING_INDEX

SECONDS_PER_DAY = 86_400
# Items read per Query when a namespace filter may drop most of them: DynamoDB's Limit counts items read
# before the filter, so a larger page saves round trips (a judgement call; each page is still ≤ 1 MB).
FILTERED_PAGE_ITEMS = 100
LIVE = "attribute_exists(pk) AND (attribute_not_exists(expires_at) OR expires_at > :now)"


def pages(call: Callable[..., dict[str, Any]], params: dict[str, Any]) -> Iterator[it.Item]:
    """Every item of a Query or Scan, following LastEvaluatedKey across 1 MB pages (lazily)."""
    params = dict(params)
    while True:
        with dynamodb_errors():
            page = call(**params)
        yield from page.get("Items", [])
        if "LastEvaluatedKey" not in page:
            return
        params["ExclusiveStartKey"] = page["LastEvaluatedKey"]


class AssemblyLog:
    """Assembly rows of the state table and their three log indexes."""

    def __init__(
        self, client: Any, table: str, retention_days: float | None, clock: Callable[[], float]
    ) -> None:
        self._client = client
        self._table = table
        self._retention = None if retention_days is None else retention_days * SECONDS_PER_DAY
        self._clock = clock

    def append(self, entry: AssemblyLogEntry) -> None:
        """Write a new row (ConflictError when the id is already logged for the tenant)."""
        expires_at = None if self._retention is None else math.ceil(self._clock() + self._retention)
        item = it.assembly_item(entry, expires_at)
        item |= it.encode({"pending_key": it.pending_pk(entry.tenant_id, entry.caller)})
        with dynamodb_errors("ConditionalCheckFailedException") as exists:
            self._client.put_item(
                TableName=self._table, Item=item, ConditionExpression="attribute_not_exists(pk)"
            )
        if exists:
            raise ConflictError(f"assembly '{entry.assembly_id}' is already logged") from exists.error

    def get(self, tenant_id: str, assembly_id: str) -> AssemblyLogEntry | None:
        """The live row, or None."""
        with dynamodb_errors():
            answer = self._client.get_item(
                TableName=self._table, Key=it.assembly_key(tenant_id, assembly_id), ConsistentRead=True
            )
        item = answer.get("Item")
        return it.assembly_from(item) if item and it.is_live(item, self._clock()) else None

    def record_feedback(
        self, tenant_id: str, assembly_id: str, used_ids: Sequence[str], tokens_used: int | None, at: str
    ) -> bool:
        """Attach feedback to a live row; an unprocessed row joins the `pending` index."""
        values: dict[str, Any] = {":u": dump_ids(used_ids) or "[]", ":at": at, ":now": self._clock()}
        update = "SET used_ids = :u, feedback_at = :at"
        if tokens_used is None:
            tail = " REMOVE tokens_used"
        else:
            update += ", tokens_used = :t"
            values[":t"] = int(tokens_used)
            tail = ""
        pending = ", pending_pk = pending_key, pending_sk = log_sk"
        unprocessed = {":f": False}
        if self._update(
            tenant_id, assembly_id, update + pending + tail, f"{LIVE} AND #p = :f", values | unprocessed
        ):
            return True
        # Already processed: keep the feedback, but never queue the row for learning again.
        return self._update(tenant_id, assembly_id, update + tail, LIVE, values)

    def _update(
        self, tenant_id: str, assembly_id: str, update: str, condition: str, values: dict[str, Any]
    ) -> bool:
        """One conditional UpdateItem; False when the condition does not hold."""
        with dynamodb_errors("ConditionalCheckFailedException") as refused:
            self._client.update_item(
                TableName=self._table,
                Key=it.assembly_key(tenant_id, assembly_id),
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeValues=it.encode(values),
                **({"ExpressionAttributeNames": {"#p": "processed"}} if "#p" in condition else {}),
            )
        return not refused

    def page(
        self, tenant_id: str, caller: str | None, namespace: str | None, limit: int, cursor: str | None
    ) -> LogPage:
        """Newest-first page of live rows after `cursor` (a keyset position on `log_sk`)."""
        if caller is None:
            index, hash_value = LOG_INDEX, it.log_pk(tenant_id)
        else:
            index, hash_value = LOG_BY_CALLER_INDEX, it.caller_log_pk(tenant_id, caller)
        key = "#h = :h"
        values: dict[str, Any] = {":h": hash_value}
        if cursor is not None:
            key += " AND log_sk < :c"
            values[":c"] = it.log_sk(*decode_log_cursor(cursor))
        params: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": index,
            "KeyConditionExpression": key,
            "ExpressionAttributeNames": {"#h": "log_pk" if caller is None else "caller_pk"},
            "ScanIndexForward": False,
            "Limit": max(limit, 0) + 1,
        }
        if namespace is not None:
            params["FilterExpression"] = "#ns = :ns"
            params["ExpressionAttributeNames"]["#ns"] = "namespace"
            values[":ns"] = namespace
            params["Limit"] = max(params["Limit"], FILTERED_PAGE_ITEMS)
        params["ExpressionAttributeValues"] = it.encode(values)
        rows = self._live(pages(self._client.query, params), max(limit, 0) + 1) if limit > 0 else []
        if len(rows) <= limit:
            return LogPage(entries=tuple(rows), next_cursor=None)
        last = rows[limit - 1]
        return LogPage(
            entries=tuple(rows[:limit]), next_cursor=encode_log_cursor(last.created_at, last.assembly_id)
        )

    def _live(self, items: Iterator[it.Item], limit: int) -> list[AssemblyLogEntry]:
        """Up to `limit` unexpired rows of `items`, reading no further than needed."""
        now, rows = self._clock(), []
        for item in items:
            if it.is_live(item, now):
                rows.append(it.assembly_from(item))
                if len(rows) >= limit:
                    break
        return rows

    def unprocessed(
        self, tenant_id: str, caller: str, limit: int, settled_before: str
    ) -> list[AssemblyLogEntry]:
        """Oldest-first live rows of the `pending` index for this caller: with feedback, or logged before
        `settled_before` (`pending_sk` starts with the creation time)."""
        if limit <= 0:
            return []
        params = {
            "TableName": self._table,
            "IndexName": PENDING_INDEX,
            "KeyConditionExpression": "pending_pk = :p",
            "Limit": max(limit, FILTERED_PAGE_ITEMS),  # counted before the filter
        }
        params |= _ready(settled_before, {":p": it.pending_pk(tenant_id, caller)})
        return self._live(pages(self._client.query, params), limit)

    def pending_callers(self, min_rows: int, settled_before: str) -> list[tuple[str, str]]:
        """Count live rows ready for learning per (tenant, caller) over the sparse `pending` index."""
        params = {
            "TableName": self._table,
            "IndexName": PENDING_INDEX,
            "ProjectionExpression": "pending_pk, expires_at",
        }
        params |= _ready(settled_before, {})
        now = self._clock()
        counts = Counter(
            it.decode(i)["pending_pk"] for i in pages(self._client.scan, params) if it.is_live(i, now)
        )
        return sorted(it.parse_pending_pk(pk) for pk, count in counts.items() if count >= min_rows)

    def mark_processed_action(self, tenant_id: str, assembly_id: str) -> dict[str, Any]:
        """The transaction action that marks a row processed, only if it still is unprocessed."""
        return {
            "Update": {
                "TableName": self._table,
                "Key": it.assembly_key(tenant_id, assembly_id),
                "UpdateExpression": "SET #p = :t REMOVE pending_pk, pending_sk",
                "ConditionExpression": "#p = :f",
                "ExpressionAttributeNames": {"#p": "processed"},
                "ExpressionAttributeValues": it.encode({":t": True, ":f": False}),
            }
        }


def _ready(settled_before: str, values: dict[str, Any]) -> dict[str, Any]:
    """The filter of pending rows ready for learning: with feedback, or settled (logged before
    `settled_before`; `pending_sk` starts with the creation time, so a row logged at it sorts after)."""
    condition = "attribute_exists(used_ids)"
    if settled_before:
        condition += " OR pending_sk < :settled"
        values = values | {":settled": settled_before}
    return {"FilterExpression": condition} | (
        {"ExpressionAttributeValues": it.encode(values)} if values else {}
    )
