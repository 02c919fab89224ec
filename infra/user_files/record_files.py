"""Records from the files users have: JSONL (one object a line), a JSON array of objects, or CSV with a
header row; each with where it came from (`line 3`, `item 3`, `row 3`) so a bad one is reported there.

And the field mapping of `quarry ingest` (`--id-field _id --map title=title,text=abstract`): an entity
field ← a source field, the id from the id field, nothing else taken when a mapping is given.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

Record = tuple[str, dict[str, Any] | str]  # (where, the object, or why this record is not one)


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


def file_format(path: Path) -> str:
    """`csv` by extension, `json` when the first non-blank character opens an array, else `jsonl`."""
    if path.suffix.lower() == ".csv":
        return "csv"
    with path.open(encoding="utf-8") as handle:
        while chunk := handle.read(4096):
            stripped = chunk.lstrip()
            if stripped:
                return "json" if stripped.startswith("[") else "jsonl"
    return "jsonl"


def read_records(path: Path) -> Iterator[Record]:
    """Every record of the file, in order (OSError when it cannot be opened)."""
    kind = file_format(path)
    if kind == "csv":
        with path.open(encoding="utf-8", newline="") as handle:
            for number, row in enumerate(csv.DictReader(handle), 2):  # row 1 is the header
                yield f"row {number}", {k: v for k, v in row.items() if k is not None}
        return
    if kind == "json":
        try:
            items = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            yield "file", f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
            return
        for number, item in enumerate(items if isinstance(items, list) else [items], 1):
            yield f"item {number}", item if isinstance(item, dict) else "not a JSON object"
        return
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                yield f"line {number}", _object(line)


def _object(line: str) -> dict[str, Any] | str:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        return f"not valid JSON ({exc.msg} at column {exc.colno})"
    return obj if isinstance(obj, dict) else "not a JSON object (each line must be one entity object)"
