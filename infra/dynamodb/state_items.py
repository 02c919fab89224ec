"""Keys and item (de)serialisation of `DynamoStateStore` (the layout is drawn in state.py's docstring).

Key components are escaped (`%` → `%25`, `#` → `%23`) so a caller, source or role containing `#` can
never collide with another key. Items are built from plain values by boto3's TypeSerializer (and read
back by its TypeDeserializer) for the low-level client; JSON payloads (sources, used ids, overlays,
metrics) travel as strings.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from core.state import AssemblyLogEntry, CallerBudget, SourceWeight, WeightChange
from core.state_codec import dump_ids, dump_json, dump_sources, load_ids, load_sources

Item = dict[str, dict[str, Any]]
# boto3's own (de)serialisers of DynamoDB attribute values: stateless, shared by every item built here.
_SERIALIZER, _DESERIALIZER = TypeSerializer(), TypeDeserializer()


def esc(part: str) -> str:
    """A key component with the separator escaped."""
    return part.replace("%", "%25").replace("#", "%23")


def unesc(part: str) -> str:
    """The inverse of `esc`."""
    return part.replace("%23", "#").replace("%25", "%")


def tenant_pk(tenant_id: str) -> str:
    """Partition of the tenant's small configuration items (weights, budgets, callers, overlays)."""
    return f"T#{esc(tenant_id)}"


def history_pk(tenant_id: str) -> str:
    """Partition of the tenant's weight history."""
    return f"T#{esc(tenant_id)}#H"


def eval_pk(tenant_id: str) -> str:
    """Partition of the tenant's evaluation records."""
    return f"T#{esc(tenant_id)}#E"


def assembly_key(tenant_id: str, assembly_id: str) -> Item:
    """Primary key of one logged assembly (its own partition, so log writes spread out)."""
    return encode({"pk": f"T#{esc(tenant_id)}#A#{esc(assembly_id)}", "sk": "A"})


def log_pk(tenant_id: str) -> str:
    """`log` index partition: the tenant's whole log."""
    return f"T#{esc(tenant_id)}#LOG"


def caller_log_pk(tenant_id: str, caller: str) -> str:
    """`log_by_caller` index partition."""
    return f"T#{esc(tenant_id)}#LOG#{esc(caller)}"


def pending_pk(tenant_id: str, caller: str) -> str:
    """`pending` index partition: rows with feedback awaiting learning."""
    return f"P#{esc(tenant_id)}#{esc(caller)}"


def parse_pending_pk(value: str) -> tuple[str, str]:
    """(tenant, caller) of a `pending_pk`."""
    _, tenant, caller = value.split("#")
    return unesc(tenant), unesc(caller)


def log_sk(created_at: str, assembly_id: str) -> str:
    """Sort key of the log indexes: creation time, then id, so equal times still order totally."""
    return f"{esc(created_at)}#{esc(assembly_id)}"


def _plain(value: Any) -> Any:
    """A value TypeSerializer accepts: floats as Decimal (DynamoDB numbers are exact decimals)."""
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def encode(values: Mapping[str, Any]) -> Item:
    """Attribute values (or an item) from plain Python values, through boto3's TypeSerializer; None is
    left out (DynamoDB items omit absent attributes)."""
    return {k: _SERIALIZER.serialize(_plain(v)) for k, v in values.items() if v is not None}


def decode(item: Mapping[str, Any]) -> dict[str, Any]:
    """Plain values of an item, through boto3's TypeDeserializer (numbers come back as Decimal)."""
    return {k: _DESERIALIZER.deserialize(v) for k, v in item.items()}


def weight_item(tenant_id: str, w: SourceWeight) -> Item:
    """The item of one weight row."""
    return encode(
        {
            "pk": tenant_pk(tenant_id),
            "sk": f"W#{esc(w.caller)}#{esc(w.source)}",
            "caller": w.caller,
            "source": w.source,
            "weight": float(w.weight),
            "token_share": float(w.token_share),
            "manual": bool(w.manual),
            "updated_at": w.updated_at,
        }
    )


def weight_from(item: Item) -> SourceWeight:
    """The inverse of `weight_item`."""
    v = decode(item)
    return SourceWeight(
        caller=v["caller"],
        source=v["source"],
        weight=float(v["weight"]),
        token_share=float(v["token_share"]),
        manual=bool(v["manual"]),
        updated_at=v["updated_at"],
    )


def budget_item(tenant_id: str, b: CallerBudget) -> Item:
    """The item of one caller budget."""
    values: dict[str, Any] = {"pk": tenant_pk(tenant_id), "sk": f"B#{esc(b.caller)}", "caller": b.caller}
    values |= {k: int(getattr(b, k)) for k in ("budget", "min_budget", "max_budget")}
    return encode(values | {"updated_at": b.updated_at})


def budget_from(item: Item) -> CallerBudget:
    """The inverse of `budget_item`."""
    v = decode(item)
    return CallerBudget(
        caller=v["caller"],
        budget=int(v["budget"]),
        min_budget=int(v["min_budget"]),
        max_budget=int(v["max_budget"]),
        updated_at=v["updated_at"],
    )


def history_item(tenant_id: str, c: WeightChange, unique: str) -> Item:
    """The item of one history row; `unique` keeps rows with the same timestamp apart."""
    values: dict[str, Any] = {"pk": history_pk(tenant_id), "sk": f"{esc(c.at)}#{unique}", "at": c.at}
    values |= {k: getattr(c, k) for k in ("caller", "source", "reason")}
    values |= {k: float(getattr(c, k)) for k in ("old_weight", "new_weight", "old_share", "new_share")}
    return encode(values)


def change_from(item: Item) -> WeightChange:
    """The inverse of `history_item`."""
    v = decode(item)
    return WeightChange(
        caller=v["caller"],
        source=v["source"],
        old_weight=float(v["old_weight"]),
        new_weight=float(v["new_weight"]),
        old_share=float(v["old_share"]),
        new_share=float(v["new_share"]),
        reason=v["reason"],
        at=v["at"],
    )


def json_item(pk: str, sk: str, body: Mapping[str, Any], **strings: str) -> Item:
    """An item holding a JSON body (overlays, eval metrics) plus a few string attributes."""
    return encode({"pk": pk, "sk": sk, "body": dump_json(dict(body)), **strings})


def json_body(item: Item) -> Any:
    """The JSON body of a `json_item`."""
    return json.loads(decode(item)["body"])


def assembly_item(e: AssemblyLogEntry, expires_at: int | None) -> Item:
    """The item of one logged assembly, with its log-index keys and (optionally) its TTL."""
    sort = log_sk(e.created_at, e.assembly_id)
    values: dict[str, Any] = {
        "log_pk": log_pk(e.tenant_id),
        "caller_pk": caller_log_pk(e.tenant_id, e.caller),
        "log_sk": sort,
        "processed": bool(e.processed),
        "sources": dump_sources(e.sources),
    }
    values |= {k: getattr(e, k) for k in ("tenant_id", "assembly_id", "caller", "query_hash", "created_at")}
    values |= {k: getattr(e, k) for k in ("budget", "total_tokens", "retrieval_ms", "total_ms")}
    values |= {"namespace": e.namespace, "request_id": e.request_id, "feedback_at": e.feedback_at}
    if e.used_ids is not None:
        values["used_ids"] = dump_ids(e.used_ids) or "[]"
    if not e.processed:  # every unprocessed row waits in `pending`: with feedback, or until it settles
        values |= {"pending_pk": pending_pk(e.tenant_id, e.caller), "pending_sk": sort}
    values["tokens_used"] = None if e.tokens_used is None else int(e.tokens_used)
    values["expires_at"] = None if expires_at is None else int(expires_at)
    return assembly_key(e.tenant_id, e.assembly_id) | encode(values)


def assembly_from(item: Item) -> AssemblyLogEntry:
    """The inverse of `assembly_item`."""
    v = decode(item)
    return AssemblyLogEntry(
        assembly_id=v["assembly_id"],
        tenant_id=v["tenant_id"],
        caller=v["caller"],
        namespace=v.get("namespace"),
        request_id=v.get("request_id"),
        query_hash=v["query_hash"],
        budget=int(v["budget"]),
        total_tokens=int(v["total_tokens"]),
        sources=load_sources(v["sources"]),
        retrieval_ms=float(v["retrieval_ms"]),
        total_ms=float(v["total_ms"]),
        created_at=v["created_at"],
        used_ids=load_ids(v.get("used_ids")),
        tokens_used=None if v.get("tokens_used") is None else int(v["tokens_used"]),
        feedback_at=v.get("feedback_at"),
        processed=bool(v["processed"]),
    )


def is_live(item: Item, now: float) -> bool:
    """False once the item's TTL has passed (DynamoDB deletes expired items lazily, up to days later)."""
    expires_at = decode({"e": item["expires_at"]})["e"] if "expires_at" in item else None
    return expires_at is None or float(expires_at) > now
