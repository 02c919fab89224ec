"""How a record from a user's file becomes a bulk item: the field mapping of `quarry ingest` and of
`POST /entities/ndjson` (`id_field=_id`, `map=title=title,text=abstract`): an entity field ← a source field,
the id from the id field, nothing else taken when a mapping is given."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def parse_field_map(text: str) -> dict[str, str]:
    """`title=title,text=abstract` → {entity field: source field}; ValueError names the bad pair."""
    mapping: dict[str, str] = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        target, sep, source = (s.strip() for s in pair.partition("="))
        if not sep or not target or not source:
            raise ValueError(f"{pair!r} is not FIELD=SOURCE_FIELD")
        mapping[target] = source
    return mapping


def mapped(obj: Mapping[str, Any], id_field: str, field_map: Mapping[str, str] | None) -> dict[str, Any]:
    """The entity fields of one record: its id from `id_field`, then the mapped fields (or all of them
    but `type` without a mapping). A mapped source field the record lacks is left out (then a required
    field is reported missing by the write)."""
    if field_map is None:
        fields = {k: v for k, v in obj.items() if k not in ("type", id_field)}
    else:
        fields = {target: obj[source] for target, source in field_map.items() if source in obj}
    if id_field in obj:
        value = obj[id_field]
        fields["id"] = str(value) if isinstance(value, (int, str)) and not isinstance(value, bool) else value
    return fields


def item_mapper(
    entity_type: str | None, id_field: str, field_map: Mapping[str, str] | None
) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """A record → a bulk item: `mapped`, typed `entity_type` (else the record's own `type`), as `quarry
    ingest --type T --id-field F --map …` and POST /entities/ndjson?type=T&id_field=F&map=… map them."""

    def item(obj: Mapping[str, Any]) -> dict[str, Any]:
        kind = entity_type if entity_type is not None else obj.get("type")
        return {**({"type": kind} if kind is not None else {}), **mapped(obj, id_field, field_map)}

    return item
