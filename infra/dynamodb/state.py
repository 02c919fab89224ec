"""`DynamoStateStore`: the StateStore port on one DynamoDB table (single-table design, keyed by tenant).

    item        pk                          sk                        notes
    weight      T#<tenant>                  W#<caller>#<source>       caller, source, weight, token_share, manual
    budget      T#<tenant>                  B#<caller>                budget, min_budget, max_budget
    caller      T#<tenant>                  C#<caller>                registry behind list_callers
    overlay     T#<tenant>                  O#<role_id>               body (JSON)
    history     T#<tenant>#H                <at>#<unique>             one WeightChange
    eval        T#<tenant>#E                <at>#<unique>             name, body (JSON metrics)
    assembly    T#<tenant>#A#<assembly_id>  A                         one AssemblyLogEntry, expires_at (TTL)
    snapshot    T#<tenant>#S                <id>#H, <id>#C#<n>        search snapshots (not this store's:
                                                                      infra/dynamodb/search_snapshots.py)

    GSI (all projections ALL)  hash                         range
    log                        log_pk = T#<tenant>#LOG      log_sk = <created_at>#<assembly_id>
    log_by_caller              caller_pk = …#LOG#<caller>   log_sk
    pending (sparse)           pending_pk = P#<t>#<caller>  pending_sk = log_sk   rows not yet processed
                                                                                  (learning takes those with
                                                                                  feedback or settled)

Key components are escaped (state_items.esc). Each assembly has its own partition, so logging spreads
across partitions; the `log` index partition takes every log write of a tenant (DynamoDB's per-partition
limit, 1,000 write units/s, bounds one tenant's log rate before GSI back-pressure). Log pages are keyset
ranges on `log_sk` ("< cursor", so rows logged meanwhile never shift a page), looping over DynamoDB's
1 MB pages via LastEvaluatedKey. Assemblies carry `expires_at` (log retention) and reads drop expired
rows, since DynamoDB deletes them lazily. `apply_learning` is one TransactWriteItems whose conditions
require every processed row to be unprocessed, so two concurrent cycles never both apply; a transaction
holds at most 100 writes, so one update is bounded (core.state.MAX_LEARNING_ROWS keeps within it).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from core.errors import ConflictError
from core.state import (
    AssemblyLogEntry,
    CallerBudget,
    EvalRecord,
    LearningUpdate,
    LogPage,
    SourceWeight,
    WeightChange,
)
from infra.dynamodb import state_items as it
from infra.dynamodb.errors import dynamodb_errors
from infra.dynamodb.state_log import AssemblyLog, pages
from infra.dynamodb.state_purge import delete_keys, tenant_keys
from infra.dynamodb.tables import default_client, ensure_table, state_table_spec

# DynamoDB's TransactWriteItems limit (AWS DynamoDB developer guide, "Transactions": 100 actions).
MAX_TRANSACTION_ITEMS = 100


OVERLAY_REGISTRY_PK = "OVERLAYS"  # one partition listing (tenant, role) pairs; tiny and read nightly


class DynamoStateStore:
    """Weights, budgets, history, the assembly log, overlays and eval records in one DynamoDB table."""

    def __init__(
        self,
        table_name: str,
        client: Any | None = None,
        log_retention_days: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._table = table_name
        self._client = client if client is not None else default_client()
        self._clock = clock
        self._log = AssemblyLog(self._client, table_name, log_retention_days, clock)
        self._known_callers: set[tuple[str, str]] = set()

    def ensure_tables(self) -> bool:
        """Create the state table when missing (local endpoints); True when it was created."""
        return ensure_table(self._client, state_table_spec(self._table))

    def _query(self, **params: Any) -> Iterator[it.Item]:
        """Every item of a Query, across 1 MB pages."""
        return pages(self._client.query, {"TableName": self._table, **params})

    def _prefixed(self, pk: str, prefix: str) -> Iterator[it.Item]:
        return self._query(
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues=it.encode({":pk": pk, ":prefix": prefix}),
        )

    def _newest(self, pk: str, attribute: str, value: str | None, limit: int) -> list[it.Item]:
        """Up to `limit` items of a time-ordered partition, newest first, optionally where attribute = value."""
        params: dict[str, Any] = {
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": it.encode({":pk": pk}),
            "ScanIndexForward": False,
        }
        if value is not None:
            params["FilterExpression"] = "#a = :v"
            params["ExpressionAttributeNames"] = {"#a": attribute}
            params["ExpressionAttributeValues"] |= it.encode({":v": value})
        else:
            params["Limit"] = max(limit, 1)
        items: list[it.Item] = []
        if limit <= 0:
            return items
        for item in self._query(**params):
            items.append(item)
            if len(items) >= limit:
                break
        return items

    def _put(self, item: it.Item) -> None:
        with dynamodb_errors():
            self._client.put_item(TableName=self._table, Item=item)

    # weights, budgets, history

    def list_weights(self, tenant_id: str) -> list[SourceWeight]:
        """Every weight row of the tenant, by caller then source."""
        rows = [it.weight_from(i) for i in self._prefixed(it.tenant_pk(tenant_id), "W#")]
        return sorted(rows, key=lambda w: (w.caller, w.source))

    def get_weights(self, tenant_id: str, caller: str) -> list[SourceWeight]:
        """Rows for exactly this caller (the `*` fallback is resolved in core)."""
        items = self._prefixed(it.tenant_pk(tenant_id), f"W#{it.esc(caller)}#")
        return sorted((it.weight_from(i) for i in items), key=lambda w: w.source)

    def put_weight(self, tenant_id: str, weight: SourceWeight, change: WeightChange | None) -> None:
        """Upsert one row and, when given, append its history row (in one transaction)."""
        items = [it.weight_item(tenant_id, weight)]
        if change is None:
            self._put(items[0])
            return
        items.append(it.history_item(tenant_id, change, uuid.uuid4().hex))
        with dynamodb_errors():
            self._client.transact_write_items(
                TransactItems=[{"Put": {"TableName": self._table, "Item": i}} for i in items]
            )

    def list_budgets(self, tenant_id: str) -> list[CallerBudget]:
        """Every caller budget of the tenant, by caller."""
        rows = [it.budget_from(i) for i in self._prefixed(it.tenant_pk(tenant_id), "B#")]
        return sorted(rows, key=lambda b: b.caller)

    def get_budget(self, tenant_id: str, caller: str) -> CallerBudget | None:
        """The budget configured for exactly this caller, or None."""
        item = self._get(it.tenant_pk(tenant_id), f"B#{it.esc(caller)}")
        return None if item is None else it.budget_from(item)

    def put_budget(self, tenant_id: str, budget: CallerBudget) -> None:
        """Upsert a caller budget."""
        self._put(it.budget_item(tenant_id, budget))

    def list_history(self, tenant_id: str, caller: str | None, limit: int) -> list[WeightChange]:
        """Weight changes, newest first, optionally for one caller."""
        items = self._newest(it.history_pk(tenant_id), "caller", caller, limit)
        return [it.change_from(i) for i in items]

    def _get(self, pk: str, sk: str) -> it.Item | None:
        with dynamodb_errors():
            answer = self._client.get_item(
                TableName=self._table, Key=it.encode({"pk": pk, "sk": sk}), ConsistentRead=True
            )
        item: it.Item | None = answer.get("Item")
        return item

    # assembly log

    def log_assembly(self, entry: AssemblyLogEntry) -> None:
        """Register the caller, then append the assembly (ConflictError when the id is taken)."""
        known = (entry.tenant_id, entry.caller)
        if known not in self._known_callers:
            registry = {"pk": it.tenant_pk(entry.tenant_id), "sk": f"C#{it.esc(entry.caller)}"}
            self._put(it.encode(registry | {"caller": entry.caller}))
            self._known_callers.add(known)
        self._log.append(entry)

    def get_assembly(self, tenant_id: str, assembly_id: str) -> AssemblyLogEntry | None:
        """The tenant's live assembly with this id, or None."""
        return self._log.get(tenant_id, assembly_id)

    def record_feedback(
        self, tenant_id: str, assembly_id: str, used_ids: Sequence[str], tokens_used: int | None, at: str
    ) -> bool:
        """Attach feedback; False when the assembly does not exist (or has expired) for this tenant."""
        return self._log.record_feedback(tenant_id, assembly_id, used_ids, tokens_used, at)

    def list_assemblies(
        self, tenant_id: str, caller: str | None, namespace: str | None, limit: int, cursor: str | None
    ) -> LogPage:
        """Newest first; the cursor is a keyset position, so rows inserted meanwhile never shift pages."""
        return self._log.page(tenant_id, caller, namespace, limit, cursor)

    def list_callers(self, tenant_id: str) -> list[str]:
        """Distinct callers that ever logged an assembly for the tenant, sorted."""
        return sorted(it.decode(i)["caller"] for i in self._prefixed(it.tenant_pk(tenant_id), "C#"))

    def pending_callers(self, min_rows: int, settled_before: str = "") -> list[tuple[str, str]]:
        """(tenant, caller) pairs with at least `min_rows` unprocessed assemblies ready for learning: with
        feedback, or logged before `settled_before` ("": feedback only)."""
        return self._log.pending_callers(min_rows, settled_before)

    def unprocessed_assemblies(
        self, tenant_id: str, caller: str, limit: int, settled_before: str = ""
    ) -> list[AssemblyLogEntry]:
        """Oldest first: assemblies no learning cycle has processed yet, with feedback or logged before
        `settled_before` ("": feedback only)."""
        return self._log.unprocessed(tenant_id, caller, limit, settled_before)

    def apply_learning(self, tenant_id: str, update: LearningUpdate) -> bool:
        """Write weights, history and budget and mark rows processed in one transaction.

        Returns False (and writes nothing) when any of `processed_ids` is already processed, unknown, or
        being processed by a concurrent cycle. ConflictError when the update exceeds one transaction.
        """
        actions = [
            {"Put": {"TableName": self._table, "Item": it.weight_item(tenant_id, w)}} for w in update.weights
        ]
        actions += [
            {"Put": {"TableName": self._table, "Item": it.history_item(tenant_id, c, uuid.uuid4().hex)}}
            for c in update.history
        ]
        if update.budget is not None:
            actions.append(
                {"Put": {"TableName": self._table, "Item": it.budget_item(tenant_id, update.budget)}}
            )
        actions += [
            self._log.mark_processed_action(tenant_id, i) for i in dict.fromkeys(update.processed_ids)
        ]
        if len(actions) > MAX_TRANSACTION_ITEMS:
            raise ConflictError(
                f"learning update needs {len(actions)} writes; one DynamoDB transaction holds at most "
                f"{MAX_TRANSACTION_ITEMS} (apply fewer rows per update)"
            )
        if not actions:
            return True
        # cancelled by a row already processed (a failed condition) or by a concurrent cycle's transaction
        with dynamodb_errors("ConditionalCheckFailed", "TransactionConflict") as lost:
            self._client.transact_write_items(TransactItems=actions)
        return not lost

    # overlays and evals

    def put_overlay(self, tenant_id: str, role_id: str, overlay: Mapping[str, Any]) -> None:
        """Create or replace a role overlay."""
        self._put(it.json_item(it.tenant_pk(tenant_id), f"O#{it.esc(role_id)}", overlay, role_id=role_id))
        # A registry partition lists every tenant's overlays for the nightly run without a Scan.
        registry = {
            "pk": OVERLAY_REGISTRY_PK,
            "sk": f"{it.esc(tenant_id)}#{it.esc(role_id)}",
            "tenant": tenant_id,
            "role_id": role_id,
        }
        self._put(it.encode(registry))

    def get_overlay(self, tenant_id: str, role_id: str) -> Mapping[str, Any] | None:
        """The tenant's overlay for the role, or None."""
        item = self._get(it.tenant_pk(tenant_id), f"O#{it.esc(role_id)}")
        return None if item is None else it.json_body(item)

    def delete_overlay(self, tenant_id: str, role_id: str) -> bool:
        """Remove the overlay; False when the tenant had none for the role."""
        key = it.encode({"pk": it.tenant_pk(tenant_id), "sk": f"O#{it.esc(role_id)}"})
        registry = it.encode({"pk": OVERLAY_REGISTRY_PK, "sk": f"{it.esc(tenant_id)}#{it.esc(role_id)}"})
        with dynamodb_errors():
            answer = self._client.delete_item(TableName=self._table, Key=key, ReturnValues="ALL_OLD")
            self._client.delete_item(TableName=self._table, Key=registry)
        return "Attributes" in answer

    def list_overlays(self, tenant_id: str) -> list[str]:
        """The tenant's overlay role ids, sorted."""
        items = self._prefixed(it.tenant_pk(tenant_id), "O#")
        return sorted(it.decode(i)["role_id"] for i in items if "role_id" in i)

    def overlay_owners(self) -> list[tuple[str, str]]:
        """Every (tenant, role_id) with a stored overlay, sorted."""
        items = self._query(
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues=it.encode({":pk": OVERLAY_REGISTRY_PK}),
        )
        return sorted((v["tenant"], v["role_id"]) for v in map(it.decode, items))

    def put_eval(self, tenant_id: str, record: EvalRecord) -> None:
        """Append one evaluation record."""
        sk = f"{it.esc(record.at)}#{uuid.uuid4().hex}"
        self._put(it.json_item(it.eval_pk(tenant_id), sk, record.metrics, name=record.name, at=record.at))

    def list_evals(self, tenant_id: str, name: str | None, limit: int) -> list[EvalRecord]:
        """Evaluation records, newest first, optionally for one golden set."""
        items = self._newest(it.eval_pk(tenant_id), "name", name, limit)
        return [
            EvalRecord(name=v["name"], at=v["at"], metrics=json.loads(v["body"]))
            for v in map(it.decode, items)
        ]

    def purge_tenant(self, tenant_id: str) -> int:
        """Erase every item of the tenant (configuration, history, evals, assemblies, registry rows)."""
        keys = tenant_keys(self._query, tenant_id, OVERLAY_REGISTRY_PK)
        self._known_callers = {pair for pair in self._known_callers if pair[0] != tenant_id}
        return delete_keys(self._client, self._table, keys)
