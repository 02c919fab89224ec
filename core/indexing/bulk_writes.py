"""The item-by-item half of a bulk write (docs/api.md, POST /entities): which items repeat an earlier one,
which validate, which are newer than what is stored; every other item becomes an error naming its
position, and none of them blocks the rest. IndexingService.bulk embeds and writes what is left."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.errors import QuarryError, RepeatedItemError, UnavailableError
from core.indexing.drafts import Draft
from core.indexing.entity_types import EntityType, EntityTypeRegistry
from core.indexing.versioning import check_scheme, unchanged, write_version
from core.models import EntityKey, StoredEntity, Vector, WriteOutcome

# (position, type, key, body, the caller's vector) of a bulk item
Valid = tuple[int, EntityType, EntityKey, dict[str, Any], Vector | None]
# an item validated: (type, key, body, the caller's vector)
Drafted = tuple[EntityType, EntityKey, dict[str, Any], Vector | None]


@dataclass(slots=True)
class BulkReport:
    """Counts and per-item errors of a bulk write (`index` is the item's position in the request)."""

    indexed: int = 0
    skipped_stale: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
    unindexed_fields: set[str] = field(default_factory=set)  # of the items written (EntityType.unindexed)


def bulk_error(position: int, entity_id: Any, exc: QuarryError) -> dict[str, Any]:
    """One bulk item's error: its position, id, message and the bad fields under `items.<position>`."""
    fields = getattr(exc, "fields", {})
    return {
        "index": position,
        "entity_id": entity_id if isinstance(entity_id, str) else None,
        "error": exc.message,
        "code": exc.code,
        "fields": {f"items.{position}.{k}".rstrip("."): v for k, v in fields.items()},
    }


def item_key(registry: EntityTypeRegistry, item: Any) -> tuple[str, str] | None:
    """(type, id) of a bulk item, the type as the registry names it; None when it names no entity."""
    if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
        return None
    kind = item.get("type")
    try:
        return registry.get(str(kind)).name, item["id"]
    except QuarryError:
        return (str(kind), item["id"])


def repeated_items(registry: EntityTypeRegistry, items: Sequence[Any]) -> dict[int, int]:
    """{position: the earlier position} of every item naming an entity an earlier item names."""
    first: dict[tuple[str, str], int] = {}
    found: dict[int, int] = {}
    for position, item in enumerate(items):
        key = item_key(registry, item)
        if key in first:
            found[position] = first[key]
        elif key is not None:
            first[key] = position
    return found


def valid_items(
    items: Sequence[Any], report: BulkReport, repeated: Mapping[int, int], draft: Callable[[Any], Drafted]
) -> list[Valid]:
    """The items that validate and name an entity no earlier item names; each other one becomes an
    error naming its position (a backend outage fails the whole request)."""
    valid: list[Valid] = []
    for position, item in enumerate(items):
        try:
            drafted = draft(item)
            if position in repeated:
                raise RepeatedItemError(str(drafted[1]), repeated[position])
            valid.append((position, *drafted))
        except UnavailableError:
            raise
        except QuarryError as exc:
            entity_id = item.get("id") if isinstance(item, Mapping) else None
            report.errors.append(bulk_error(position, entity_id, exc))
    return valid


def newer_drafts(
    stored: Mapping[EntityKey, StoredEntity],
    valid: Sequence[Valid],
    report: BulkReport,
    now: float,
    skew: float,
) -> list[tuple[int, Draft]]:
    """(position, draft) of the items newer than stored; stale, duplicate and mixed-version items are
    reported."""
    drafts: list[tuple[int, Draft]] = []
    for position, etype, key, body, vector in valid:
        prior = stored.get(key)
        try:
            version = write_version(body, now, skew)
            if prior is not None:
                check_scheme(key, prior.version, version)
            draft = Draft(etype, key, body, version, prior, vector)
            early = unchanged(prior, version, body, draft.mark)
        except QuarryError as exc:
            report.errors.append(bulk_error(position, key.entity_id, exc))
            continue
        if early is WriteOutcome.STALE:
            report.skipped_stale += 1
        elif early is WriteOutcome.DUPLICATE:
            report.indexed += 1  # a re-delivery: already indexed, harmless
        else:
            drafts.append((position, draft))
    return drafts
