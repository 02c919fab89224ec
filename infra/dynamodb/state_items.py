"""Keys and item (de)serialisation of `DynamoStateStore` (the layout is drawn in state.py's docstring).

Key components are escaped (`%` → `%25`, `#` → `%23`) so a caller, source or role containing `#` can
never collide with another key. Items use the low-level attribute-value format; numbers travel as
decimal strings, JSON payloads (sources, used ids, overlays, metrics) as strings.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from core.state import AssemblyLogEntry, CallerBudget, SourceWeight, WeightChange
from infra.state_codec import dump_ids, dump_json, dump_sources, load_ids, load_sources

Item = dict[str, dict[str, Any]]


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
    return {"pk": S(f"T#{esc(tenant_id)}#A#{esc(assembly_id)}"), "sk": S("A")}


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


def S(value: str) -> dict[str, str]:  # noqa: N802 — DynamoDB's own type letter
    """A string attribute value."""
    return {"S": value}


def N(value: float) -> dict[str, str]:  # noqa: N802 — DynamoDB's own type letter
    """A number attribute value."""
    return {"N": repr(value) if isinstance(value, float) else str(value)}


def s(item: Item, name: str) -> str | None:
    """A string attribute, None when absent."""
    return item[name]["S"] if name in item else None


def n(item: Item, name: str) -> float | None:
    """A number attribute as float, None when absent."""
    return float(item[name]["N"]) if name in item else None


def weight_item(tenant_id: str, w: SourceWeight) -> Item:
    """The item of one weight row."""
    return {
        "pk": S(tenant_pk(tenant_id)),
        "sk": S(f"W#{esc(w.caller)}#{esc(w.source)}"),
        "caller": S(w.caller),
        "source": S(w.source),
        "weight": N(float(w.weight)),
        "token_share": N(float(w.token_share)),
        "manual": {"BOOL": bool(w.manual)},
        "updated_at": S(w.updated_at),
    }


def weight_from(item: Item) -> SourceWeight:
    """The inverse of `weight_item`."""
    return SourceWeight(
        caller=item["caller"]["S"],
        source=item["source"]["S"],
        weight=float(item["weight"]["N"]),
        token_share=float(item["token_share"]["N"]),
        manual=bool(item["manual"]["BOOL"]),
        updated_at=item["updated_at"]["S"],
    )


def budget_item(tenant_id: str, b: CallerBudget) -> Item:
    """The item of one caller budget."""
    return {
        "pk": S(tenant_pk(tenant_id)),
        "sk": S(f"B#{esc(b.caller)}"),
        "caller": S(b.caller),
        "budget": N(int(b.budget)),
        "min_budget": N(int(b.min_budget)),
        "max_budget": N(int(b.max_budget)),
        "updated_at": S(b.updated_at),
    }


def budget_from(item: Item) -> CallerBudget:
    """The inverse of `budget_item`."""
    return CallerBudget(
        caller=item["caller"]["S"],
        budget=int(item["budget"]["N"]),
        min_budget=int(item["min_budget"]["N"]),
        max_budget=int(item["max_budget"]["N"]),
        updated_at=item["updated_at"]["S"],
    )


def history_item(tenant_id: str, c: WeightChange, unique: str) -> Item:
    """The item of one history row; `unique` keeps rows with the same timestamp apart."""
    item = {"pk": S(history_pk(tenant_id)), "sk": S(f"{esc(c.at)}#{unique}"), "at": S(c.at)}
    item |= {k: S(getattr(c, k)) for k in ("caller", "source", "reason")}
    item |= {k: N(float(getattr(c, k))) for k in ("old_weight", "new_weight", "old_share", "new_share")}
    return item


def change_from(item: Item) -> WeightChange:
    """The inverse of `history_item`."""
    return WeightChange(
        caller=item["caller"]["S"],
        source=item["source"]["S"],
        old_weight=float(item["old_weight"]["N"]),
        new_weight=float(item["new_weight"]["N"]),
        old_share=float(item["old_share"]["N"]),
        new_share=float(item["new_share"]["N"]),
        reason=item["reason"]["S"],
        at=item["at"]["S"],
    )


def json_item(pk: str, sk: str, body: Mapping[str, Any], **strings: str) -> Item:
    """An item holding a JSON body (overlays, eval metrics) plus a few string attributes."""
    return {"pk": S(pk), "sk": S(sk), "body": S(dump_json(dict(body)))} | {
        k: S(v) for k, v in strings.items()
    }


def json_body(item: Item) -> Any:
    """The JSON body of a `json_item`."""
    return json.loads(item["body"]["S"])


def assembly_item(e: AssemblyLogEntry, expires_at: int | None) -> Item:
    """The item of one logged assembly, with its log-index keys and (optionally) its TTL."""
    sort = log_sk(e.created_at, e.assembly_id)
    item: Item = assembly_key(e.tenant_id, e.assembly_id) | {
        "log_pk": S(log_pk(e.tenant_id)),
        "caller_pk": S(caller_log_pk(e.tenant_id, e.caller)),
        "log_sk": S(sort),
        "processed": {"BOOL": bool(e.processed)},
        "sources": S(dump_sources(e.sources)),
    }
    item |= {k: S(getattr(e, k)) for k in ("tenant_id", "assembly_id", "caller", "query_hash", "created_at")}
    item |= {k: N(getattr(e, k)) for k in ("budget", "total_tokens", "retrieval_ms", "total_ms")}
    optional = {"namespace": e.namespace, "request_id": e.request_id, "feedback_at": e.feedback_at}
    item |= {k: S(v) for k, v in optional.items() if v is not None}
    if e.used_ids is not None:
        item["used_ids"] = S(dump_ids(e.used_ids) or "[]")
        if not e.processed:
            item |= {"pending_pk": S(pending_pk(e.tenant_id, e.caller)), "pending_sk": S(sort)}
    if e.tokens_used is not None:
        item["tokens_used"] = N(int(e.tokens_used))
    if expires_at is not None:
        item["expires_at"] = N(int(expires_at))
    return item


def assembly_from(item: Item) -> AssemblyLogEntry:
    """The inverse of `assembly_item`."""
    tokens_used = n(item, "tokens_used")
    return AssemblyLogEntry(
        assembly_id=item["assembly_id"]["S"],
        tenant_id=item["tenant_id"]["S"],
        caller=item["caller"]["S"],
        namespace=s(item, "namespace"),
        request_id=s(item, "request_id"),
        query_hash=item["query_hash"]["S"],
        budget=int(item["budget"]["N"]),
        total_tokens=int(item["total_tokens"]["N"]),
        sources=load_sources(item["sources"]["S"]),
        retrieval_ms=float(item["retrieval_ms"]["N"]),
        total_ms=float(item["total_ms"]["N"]),
        created_at=item["created_at"]["S"],
        used_ids=load_ids(s(item, "used_ids")),
        tokens_used=None if tokens_used is None else int(tokens_used),
        feedback_at=s(item, "feedback_at"),
        processed=bool(item["processed"]["BOOL"]),
    )


def is_live(item: Item, now: float) -> bool:
    """False once the item's TTL has passed (DynamoDB deletes expired items lazily, up to days later)."""
    expires_at = n(item, "expires_at")
    return expires_at is None or expires_at > now
